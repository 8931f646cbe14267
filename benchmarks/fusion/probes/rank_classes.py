"""Which classes of unfused boundaries should a new fusion pass target?

The classes ranked by what fusing them could save at most.

From a study (``study.py``'s ``study.json``, and its ``captures/`` where
present), the boundaries that are not legality refusals (categories
``heuristic``, ``not_considered`` and ``backend``) grouped by reason, then by
pattern (relation, producer op, consumer op):

* boundaries and the bytes they move (a crossing counted once per buffer and
  consuming kernel, as the study counts it);
* an upper bound of what removing every crossing of the class could save per
  step: one write and one read of each crossing at the device's copy
  bandwidth, as a share of the compiled step time (``--bandwidth-gbs``,
  default 2,966 GB/s, the H100's device-to-device copy measured by
  ``bandwidth.py``);
* the launches such fusions would remove at most: one per boundary between
  two generated kernels (a library kernel launches anyway).

    python benchmarks/fusion/probes/rank_classes.py DIR [DIR ...] --md ranking.md
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any


CANDIDATES = ("heuristic", "not_considered", "backend")


def _target(op: dict[str, Any] | None) -> str:
    """``aten.add.Tensor`` -> ``add``."""
    if not op:
        return "?"
    parts = str(op.get("target", "?")).split(".")
    return parts[1] if len(parts) >= 3 else parts[-1]


def rank(directories: list[Path], bandwidth_gbs: float) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    captures: dict[str, Path] = {}
    for d in directories:
        for r in json.loads((d / "study.json").read_text())["rows"]:
            if r.get("status") == "ok":
                rows[r["case"]] = r
        captures.update({p.stem: p for p in (d / "captures").glob("*.json")})

    by_reason: dict[str, dict[str, Any]] = {}
    for case, r in rows.items():
        step_s = r["compiled_ms"] / 1e3
        for reason, entry in r["by_reason"].items():
            if entry["category"] not in CANDIDATES:
                continue
            e = by_reason.setdefault(
                reason,
                {
                    "reason": reason,
                    "category": entry["category"],
                    "boundaries": 0,
                    "bytes": 0,
                    "cases": 0,
                    "best_case": None,
                    "best_share": 0.0,
                },
            )
            e["boundaries"] += entry["count"]
            e["bytes"] += entry["bytes"]
            e["cases"] += 1
            share = 2 * entry["bytes"] / (bandwidth_gbs * 1e9) / step_s
            if share > e["best_share"]:
                e["best_share"], e["best_case"] = share, case

    patterns: collections.Counter[tuple[str, ...]] = collections.Counter()
    pattern_bytes: collections.Counter[tuple[str, ...]] = collections.Counter()
    launches: collections.Counter[tuple[str, ...]] = collections.Counter()
    pattern_cases: dict[tuple[str, ...], set[str]] = collections.defaultdict(set)
    for case in sorted(set(rows) & set(captures)):
        data = json.loads(captures[case].read_text())
        for graph in data["graphs"]:
            ops = {op["name"]: op for op in graph["ops"]}
            kinds = {k["name"]: k["kind"] for k in graph["kernels"]}
            seen: set[tuple[str, str]] = set()
            for b in graph["boundaries"]:
                # Price each crossing once, at its first boundary, as the
                # study does (study.summarize), whatever that boundary's class.
                nbytes = 0
                buffer = b["args"].get("buffer")
                if b["relation"] == "dependency" and buffer is not None:
                    crossing = (buffer, b["kernels"][-1])
                    if crossing not in seen:
                        seen.add(crossing)
                        nbytes = int(b["args"].get("bytes") or 0)
                if b["category"] not in CANDIDATES:
                    continue
                key = (
                    b["reason"],
                    b["relation"],
                    _target(ops.get(b["producer"])),
                    _target(ops.get(b["consumer"])),
                )
                patterns[key] += 1
                pattern_cases[key].add(case)
                pattern_bytes[key] += nbytes
                pair = b["kernels"][0], b["kernels"][-1]
                if all(kinds.get(k) not in ("extern", "fallback") for k in pair):
                    launches[key] += 1
    return {
        "bandwidth_gbs": bandwidth_gbs,
        "cases": len(rows),
        "cases_with_captures": len(set(rows) & set(captures)),
        "by_reason": sorted(by_reason.values(), key=lambda e: -e["bytes"]),
        "patterns": [
            {
                "reason": k[0],
                "relation": k[1],
                "producer": k[2],
                "consumer": k[3],
                "boundaries": n,
                "bytes": pattern_bytes[k],
                "launches_at_most": launches[k],
                "cases": len(pattern_cases[k]),
            }
            for k, n in sorted(
                patterns.items(), key=lambda kv: (-pattern_bytes[kv[0]], -kv[1])
            )
        ],
    }


def markdown(result: dict[str, Any], top: int = 25) -> str:
    lines = [
        f"{result['cases']} cases; patterns from the {result['cases_with_captures']} "
        f"with captures; bound at {result['bandwidth_gbs']:.0f} GB/s.",
        "",
        "| reason | category | boundaries | MB | cases | largest bound on the step (case) |",
        "|---|---|---|---|---|---|",
    ]
    for e in result["by_reason"]:
        lines.append(
            f"| {e['reason']} | {e['category']} | {e['boundaries']} "
            f"| {e['bytes'] / 1e6:.1f} | {e['cases']} "
            f"| {e['best_share']:.1%} ({e['best_case']}) |"
        )
    lines += [
        "",
        "| reason | relation | producer -> consumer | boundaries | MB | launches at most | cases |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in result["patterns"][:top]:
        lines.append(
            f"| {p['reason']} | {p['relation']} | {p['producer']} -> {p['consumer']} "
            f"| {p['boundaries']} | {p['bytes'] / 1e6:.1f} | {p['launches_at_most']} "
            f"| {p['cases']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="+", type=Path)
    parser.add_argument("--bandwidth-gbs", type=float, default=2966.0)
    parser.add_argument("--md", type=Path, help="write the Markdown here")
    parser.add_argument("--json", type=Path, help="write the ranking here")
    args = parser.parse_args(argv)
    missing = [d for d in args.studies if not (d / "study.json").is_file()]
    if missing:
        raise SystemExit(f"no study.json in {', '.join(map(str, missing))}")
    result = rank(args.studies, args.bandwidth_gbs)
    text = markdown(result)
    if args.md:
        args.md.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
