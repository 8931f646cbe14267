"""Golden comparison of fusion remarks: what every boundary's reason is, before and after a change.

``record`` compiles the default model set (CI shapes, inference and training
steps) and the rule programs of ``test/inductor/fusion_rule_programs.py`` on the
CPU under ``fusion_report.capture()`` and writes, per case and graph, every
boundary as ``(producer, consumer, relation, reason)``, every lowering remark
as ``(buffer, reason)``, the kernels as op lists and the lines of the
``fusion`` log's summary; once, the report's JSON schema; and with ``--pages``,
each model case's page (``fusion_viewer.page.save_html``) as the DOM Chromium builds
at 1400 px.  Measured numbers (times, sizes, ratios) and temporary paths are
masked in the text and the DOM, so that two records of one tree are equal.
``compare`` diffs two such files and lists every difference one by one, so that
a restructuring of the instrumentation can show that nothing was lost::

    # on the revision before the change (a clone, so that edits do not leak in)
    python tools/fork.py run -- python benchmarks/fusion/golden_boundaries.py \\
        record --out /tmp/before.json
    # on the revision after it
    python tools/fork.py run -- python benchmarks/fusion/golden_boundaries.py \\
        record --out /tmp/after.json
    python benchmarks/fusion/golden_boundaries.py compare /tmp/before.json \\
        /tmp/after.json --explain benchmarks/results/remarks/golden_explained.json

``--explain`` names a JSON file ``{difference key: why the new reason is the
right one}``; ``compare`` exits 1 while any difference is unexplained.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Iterable


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "test" / "inductor"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


# A measured value: a decimal, or a whole number with a unit of time, size or
# ratio; a temporary path.  Masked so that the records of one tree agree.
_MEASURED = re.compile(
    r"\d+(?:\.\d+)?(?:e[-+]?\d+)?\s*(?:ns|us|µs|ms|s|%|x|[KMGT]B/s)(?!\w)"
    r"|\d+\.\d+(?:e[-+]?\d+)?"
)
_TEMP_PATH = re.compile(r"/tmp/[^\s\"'<>]*")
# Where the tree is, and what its sources are, differ between the two trees
# compared: the directories above the repository's top-level folders (or
# site-packages), the page's per-file anchors (a hash of the path), line
# numbers (a program moved in its file) and the fork's revision.
_CHECKOUT = re.compile(r"(?:/[\w.+-]+)+/(?=(?:torch|test|benchmarks)/)")
_SOURCE_ANCHOR = re.compile(r"\bsrc-[0-9a-f]{6,}\b")
_LINE_NUMBER = re.compile(r"(\.py:|-L|\bline )\d+")
_REVISION = re.compile(r"fusion-fork [0-9a-f]+(?:-dirty)?(?: \(sources [0-9a-f]+\))?")
# a value of a list in the flattened schema: its index does not matter
_LIST_INDEX = re.compile(r"\[\d+\] = ")


# a whole absolute path (a source file's, in a title): which checkout or
# virtualenv it lies in is not the fork's output
_ABSOLUTE_PATH = re.compile(
    r"(?:<tree>|/tmp/#|(?:/[\w.+#-]+){2,})(?:/[\w.+#-]+)*(?::[#\d]+)?\]?"
)  # (with a closing bracket after it: records of before 4c40a97 masked it so)


def masked(text: str) -> str:
    text = _CHECKOUT.sub("<tree>/", text)
    text = _TEMP_PATH.sub("/tmp/#", _MEASURED.sub("#", text))
    text = _SOURCE_ANCHOR.sub("src-#", text)
    text = _LINE_NUMBER.sub(r"\1#", text)
    text = _REVISION.sub("fusion-fork #", text)
    return _ABSOLUTE_PATH.sub("<path>", text)


def _summary_lines(graph: dict[str, Any]) -> list[str]:
    from torch._inductor import fusion_report

    return [masked(line) for line in fusion_report.render_graph(graph).splitlines()]


def _graph_record(graph: dict[str, Any]) -> dict[str, Any]:
    kernels = sorted(
        f"{' '.join(sorted(k['ops']))} [{k['kind']}, {k['generated_kernels']} "
        f"generated, in {k.get('function') or '-'}]"
        for k in graph["kernels"]
    )
    boundaries = sorted(
        f"{b['producer']} {'->' if b['relation'] == 'dependency' else '||'} "
        f"{b['consumer']}: {b['reason']}"
        for b in graph["boundaries"]
    )
    realized = sorted(
        f"{r['buffers'][0]}: {r['reason']}"
        for r in graph["remarks"]
        if r["stage"] == "lowering" and r["kind"] == "analysis" and r["buffers"]
    )
    return {
        "kernels": kernels,
        "boundaries": boundaries,
        "realized": realized,
        "summary": _summary_lines(graph),
        # a memory crossing's kind beside its boundary's label (records of
        # before the buffer-level boundaries have none)
        "crossings": sorted(
            f"{crossing_kind(b, graph)}: {b['producer']} -> {b['consumer']}: "
            f"{b['reason']}"
            for b in graph["boundaries"]
            if b["relation"] == "dependency" and "buffer" in b
        ),
    }


# The kinds of memory crossing, in the order a boundary is classified.
CROSSING_KINDS = {
    "layout_copy": "a layout copy into the library call it was made for",
    "into_library": "a generated kernel's buffer into a library call",
    "out_of_library": "a library call's output into another kernel",
    "recomputing": "between kernels that both compute an op (one recomputes it)",
    "cat_slices": "slices written in place, read as one buffer (a cat)",
    "generated": "between two generated kernels computing different ops",
}


def crossing_kind(boundary: dict[str, Any], graph: dict[str, Any]) -> str:
    """Which of :data:`CROSSING_KINDS` a dependency boundary is."""
    kernels = {k["name"]: k for k in graph["kernels"]}
    producer, consumer = (kernels.get(n, {}) for n in boundary["kernels"])
    library = ("extern", "fallback")
    if producer.get("copy_for") and consumer.get("kind") in library:
        return "layout_copy"
    if consumer.get("kind") in library:
        return "into_library"
    if producer.get("kind") in library:
        return "out_of_library"
    if boundary["reason"] == "no_common_buffer":
        return "cat_slices"
    ops = {op["name"]: op for op in graph["ops"]}
    shared = {
        n
        for n in set(producer.get("ops", ())) & set(consumer.get("ops", ()))
        if ops.get(n, {}).get("computes")
    }
    return "recomputing" if shared else "generated"


CHROMIUM = next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))),
    None,
)


def page_dom(capture: Any) -> list[str]:
    """The DOM Chromium builds from the capture's page at 1400 px, one element
    per line, masked."""
    if CHROMIUM is None:
        raise SystemExit("error: --pages needs Chromium (make system-deps installs it)")
    import fusion_viewer.page

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "page.html")
        fusion_viewer.page.save_html(capture, path)
        dom = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--window-size=1400,1000",
                "--dump-dom",
                f"file://{path}",
            ],
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout.decode()
    return [masked(line) for line in re.sub(r">\s*<", ">\n<", dom).splitlines()]


def schema_lines() -> list[str]:
    """The report's JSON schema, one ``path = value`` line per leaf."""
    from torch._inductor import fusion_report

    schema = json.loads(Path(fusion_report.SCHEMA_PATH).read_text())
    lines: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key in sorted(node):
                walk(node[key], f"{path}/{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")
        else:
            lines.append(f"{path} = {json.dumps(node)}")

    walk(schema, "")
    return lines


def _capture(
    fn: Any, args: tuple[Any, ...], train: bool, pages: dict[str, Any] | None, case: str
) -> dict[str, Any]:
    import torch
    from torch._inductor import fusion_report

    torch._dynamo.reset()
    with fusion_report.capture() as rep:
        out = torch.compile(fn)(*args)
        if train:
            from models import loss_of

            loss_of(out).backward()
    if pages is not None:
        pages[case] = page_dom(rep)
    return {g["compile_id"]: _graph_record(g) for g in rep.to_json()["graphs"]}


def record_models(
    steps: list[str], only: list[str] | None = None, pages: dict[str, Any] | None = None
) -> dict[str, Any]:
    import torch
    from harness import build_model
    from models import compile_config, MODELS

    out: dict[str, Any] = {}
    for name in only or MODELS:
        for step in steps:
            train = step == "training"
            model, inputs = build_model(name, "cpu", "ci", train)
            start = time.perf_counter()
            with compile_config(name), torch.set_grad_enabled(train):
                case = f"{name}-{step}"
                out[case] = _capture(model, inputs, train, pages, case)
            print(f"{name}-{step}: {time.perf_counter() - start:.1f} s", flush=True)
    return out


def record_programs() -> dict[str, Any]:
    """Every CPU rule program of ``fusion_rule_programs.RULES``, under its
    firing patch and (where it has one) its counterfactual patch."""
    try:
        from fusion_rule_programs import RULES
    except ImportError:
        return {}
    out: dict[str, Any] = {}
    for i, rule in enumerate(RULES):
        if not rule.cpu or rule.fn is None:
            continue
        arms = {"fires": rule.patch}
        if rule.counterfactual is not None:
            arms["counterfactual"] = rule.counterfactual
        for arm, patch in arms.items():
            key = f"rule{i}:{rule.code}:{arm}"
            try:
                out[key] = _record_rule(rule, patch)
            except Exception as e:  # a failing program is a difference too
                out[key] = {
                    "error": {
                        "kernels": [],
                        "boundaries": [],
                        "realized": [f"{type(e).__name__}"],
                    }
                }
    return out


def _record_rule(rule: Any, patch: dict[str, Any]) -> dict[str, Any]:
    import contextlib

    import torch
    from torch._inductor import fusion_report

    with contextlib.ExitStack() as stack:
        if rule.setup is not None:
            stack.enter_context(rule.setup())
        stack.enter_context(torch._inductor.config.patch(patch))
        torch._dynamo.reset()
        with fusion_report.capture() as rep:
            torch.compile(rule.fn, **rule.compile_kwargs)(*rule.inputs())
    return {g["compile_id"]: _graph_record(g) for g in rep.to_json()["graphs"]}


def record(args: argparse.Namespace) -> int:
    import torch

    data: dict[str, Any] = {
        "torch": torch.__version__,
        "fork": str(getattr(torch.version, "fork", "")),
        "schema": schema_lines(),
        "cases": {},
        "pages": {},
    }
    if not args.programs_only:
        only = args.models.split(",") if args.models else None
        pages = data["pages"] if args.pages else None
        data["cases"].update(record_models(args.steps.split(","), only, pages))
    if not args.no_programs:
        data["cases"].update(record_programs())
    Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {len(data['cases'])} cases")
    return 0


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """One line per item present on one side only, keyed by case, graph and field."""
    out: list[str] = []
    cases = sorted(set(before["cases"]) | set(after["cases"]))
    for case in cases:
        b, a = before["cases"].get(case), after["cases"].get(case)
        if b is None or a is None:
            out.append(f"{case}: only {'after' if b is None else 'before'}")
            continue
        for graph in sorted(set(b) | set(a)):
            gb, ga = b.get(graph), a.get(graph)
            if gb is None or ga is None:
                out.append(
                    f"{case} {graph}: only {'after' if gb is None else 'before'}"
                )
                continue
            for field in ("kernels", "boundaries", "realized"):
                out.extend(_lines(f"{case} {graph} {field}", gb[field], ga[field]))
            if "summary" in gb and "summary" in ga:  # records before it had none
                out.extend(
                    _lines(
                        f"{case} {graph} summary",
                        map(masked, gb["summary"]),
                        map(masked, ga["summary"]),
                    )
                )
    # masked again: a record made before a masking rule compares as if after
    for case in sorted(set(before.get("pages", {})) & set(after.get("pages", {}))):
        out.extend(
            _lines(
                f"{case} page",
                map(masked, before["pages"][case]),
                map(masked, after["pages"][case]),
            )
        )
    if before.get("schema") is not None and after.get("schema") is not None:
        out.extend(
            _lines(
                "schema",
                (_LIST_INDEX.sub("[] = ", x) for x in before["schema"]),
                (_LIST_INDEX.sub("[] = ", x) for x in after["schema"]),
            )
        )
    return out


def _lines(key: str, old: Iterable[str], new: Iterable[str]) -> list[str]:
    """Items on one side only, each once (a multiset difference)."""
    from collections import Counter

    before, after = Counter(old), Counter(new)
    return [f"{key} - {x}" for x in sorted((before - after).elements())] + [
        f"{key} + {x}" for x in sorted((after - before).elements())
    ]


def _load(paths: str) -> dict[str, Any]:
    """One golden file, or several (comma-separated) merged case by case."""
    merged: dict[str, Any] = {"cases": {}}
    for path in paths.split(","):
        data = json.loads(Path(path).read_text())
        merged["cases"].update(data["cases"])
        merged.setdefault("pages", {}).update(data.get("pages", {}))
        merged.setdefault("torch", data.get("torch"))
        if data.get("schema") is not None:
            merged["schema"] = data["schema"]
    return merged


def compare(args: argparse.Namespace) -> int:
    before = _load(args.before)
    after = _load(args.after)
    explained: dict[str, str] = {}
    if args.explain:
        explained = json.loads(Path(args.explain).read_text())
    diffs = differences(before, after)
    unexplained = [d for d in diffs if not any(d.startswith(k) for k in explained)]
    n_bound = sum(
        len(g["boundaries"]) for c in before["cases"].values() for g in c.values()
    )
    n_real = sum(
        len(g["realized"]) for c in before["cases"].values() for g in c.values()
    )
    print(
        f"{len(before['cases'])} cases, {n_bound} boundaries and {n_real} "
        f"realized buffers before; {len(diffs)} differences, "
        f"{len(diffs) - len(unexplained)} explained"
    )
    for d in diffs:
        why = next((v for k, v in explained.items() if d.startswith(k)), None)
        print(f"  {d}" + (f"\n      because: {why}" if why else "  [UNEXPLAINED]"))
    return 1 if unexplained else 0


def _by_rule(data: dict[str, Any]) -> dict[str, Any]:
    """The record with each rule program's case named by its code and arm,
    not its index in ``RULES`` (a rule added before it shifts the index)."""
    seen: dict[str, int] = {}
    cases = {}
    for case, graphs in data["cases"].items():
        key = re.sub(r"^rule\d+:", "rule:", case)
        if key != case:
            seen[key] = seen.get(key, 0) + 1
            key += "" if seen[key] == 1 else f"#{seen[key]}"
        cases[key] = graphs
    return dict(data, cases=cases)


def reasons(args: argparse.Namespace) -> int:
    """Boundaries by reason before and after, and the boundaries only the
    after file has (by label, a multiset over every case) by kind of
    crossing, as Markdown."""
    from collections import Counter

    before, after = (_by_rule(_load(path)) for path in (args.before, args.after))

    def labels(data: dict[str, Any]) -> Counter[str]:
        return Counter(
            f"{case} {graph}: {b}"
            for case, graphs in data["cases"].items()
            for graph, record in graphs.items()
            for b in record["boundaries"]
        )

    def by_reason(data: dict[str, Any], arrow: str) -> Counter[str]:
        return Counter(
            b.rsplit(": ", 1)[1]
            for graphs in data["cases"].values()
            for record in graphs.values()
            for b in record["boundaries"]
            if f" {arrow} " in b
        )

    kind_of: dict[str, list[str]] = {}
    for case, graphs in after["cases"].items():
        for graph, record in graphs.items():
            for crossing in record.get("crossings", ()):
                kind, _, label = crossing.partition(": ")
                kind_of.setdefault(f"{case} {graph}: {label}", []).append(kind)
    lb, la = labels(before), labels(after)
    new, gone = la - lb, lb - la
    new_kinds: Counter[str] = Counter()
    for label, n in new.items():
        kinds = kind_of.get(label, ["shared_input"])
        for i in range(n):
            new_kinds[kinds[min(i, len(kinds) - 1)]] += 1
    lines = [
        f"{len(after['cases'])} cases; boundaries before {sum(lb.values())}, "
        f"after {sum(la.values())}; {sum(new.values())} only after, "
        f"{sum(gone.values())} only before (by label: producer, consumer, reason)",
        "",
        "| reason | dependency before | after | shared input before | after |",
        "|---|---|---|---|---|",
    ]
    dep_b, dep_a = by_reason(before, "->"), by_reason(after, "->")
    sh_b, sh_a = by_reason(before, "||"), by_reason(after, "||")
    for reason in sorted(set(dep_b) | set(dep_a) | set(sh_b) | set(sh_a)):
        lines.append(
            f"| `{reason}` | {dep_b[reason]} | {dep_a[reason]} | "
            f"{sh_b[reason]} | {sh_a[reason]} |"
        )
    lines += ["", "| boundaries only after, by kind of crossing | count |", "|---|---|"]
    for kind, n in new_kinds.most_common():
        lines.append(f"| {CROSSING_KINDS.get(kind, kind)} (`{kind}`) | {n} |")
    # labels (one case's, one graph's op pair) present on both sides whose
    # set of reasons differs: (before, after) -> how many
    changed: Counter[tuple[str, str]] = Counter()
    for case, graphs in after["cases"].items():
        for graph, record in graphs.items():
            old = before["cases"].get(case, {}).get(graph)
            if old is None:
                continue
            sets: list[dict[str, set[str]]] = [{}, {}]
            for side, rec in zip(sets, (old, record)):
                for b in rec["boundaries"]:
                    pair, _, reason = b.rpartition(": ")
                    side.setdefault(pair, set()).add(reason)
            for pair in set(sets[0]) & set(sets[1]):
                if sets[0][pair] != sets[1][pair]:
                    changed[
                        (
                            ", ".join(sorted(sets[0][pair])),
                            ", ".join(sorted(sets[1][pair])),
                        )
                    ] += 1
    lines += [
        "",
        f"| labels on both sides whose reasons differ ({sum(changed.values())}): "
        "before | after | count |",
        "|---|---|---|",
    ]
    for (was, now), n in changed.most_common():
        lines.append(f"| {was} | {now} | {n} |")
    gone_reasons = Counter(label.rsplit(": ", 1)[1] for label in gone.elements())
    lines += ["", "| boundaries only before, by reason | count |", "|---|---|"]
    for reason, n in gone_reasons.most_common():
        lines.append(f"| `{reason}` | {n} |")
    print("\n".join(lines))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="compile every case and write the golden file")
    rec.add_argument("--out", required=True)
    rec.add_argument("--steps", default="inference,training")
    rec.add_argument("--programs-only", action="store_true")
    rec.add_argument("--no-programs", action="store_true")
    rec.add_argument("--models", help="comma-separated subset of the model set")
    rec.add_argument(
        "--pages",
        action="store_true",
        help="also each model case's page DOM (Chromium)",
    )
    cmp = sub.add_parser("compare", help="list the differences between two files")
    cmp.add_argument("before")
    cmp.add_argument("after")
    cmp.add_argument("--explain", help="JSON {difference prefix: why}")
    by = sub.add_parser(
        "reasons", help="boundaries by reason, and the new ones by kind (Markdown)"
    )
    by.add_argument("before")
    by.add_argument("after")
    args = parser.parse_args()
    return {"record": record, "compare": compare, "reasons": reasons}[args.command](
        args
    )


if __name__ == "__main__":
    sys.exit(main())
