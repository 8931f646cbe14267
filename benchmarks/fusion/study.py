"""The fusion study: which ops does Inductor not fuse in real models, and why?

Compiles every model of the default set (``models.py``, built from configs,
nothing downloaded) under ``fusion_report.capture()`` and reports, per model,
compile mode and step (inference, or a training step = forward + backward):

* aten ops, kernels (generated / extern), graphs and Dynamo graph breaks;
* kernel boundaries by reason and category (graph breaks count as boundaries of
  reason ``graph_break``, stage ``dynamo``), the heuristic ones, and those the
  opt-in fusible check (``--check-fusible N``) forced: correct and faster or not;
* the bytes the boundaries move: each distinct (buffer, consumer kernel)
  crossing of a dependency boundary is one read of the buffer by another
  kernel, priced at the buffer's size;
* eager vs compiled step time (median; CUDA events around each step on a GPU,
  ``perf_counter`` on the CPU) and, on a GPU, kernel launches per step from
  ``torch.profiler``;

and, suite-wide, the top reasons by count and by bytes, overall and per model
family.  Each case runs in a child process, so a model that fails to compile
(or hangs past ``--case-timeout``) is reported as failed with its error and
the study goes on.

Outputs under ``--out`` (default ``reports/``): ``index.html`` (suite tables,
one linked page per case), ``cases/<case>.html`` (the fusion report page:
graph pictures, annotated source, boundary tables), ``captures/<case>.json``
(the raw capture, schema of ``torch._inductor.fusion_report``), ``study.json``
(rows and suite tables) and ``summary.md``.

    python benchmarks/fusion/study.py                       # default set, CI shapes
    python benchmarks/fusion/study.py --device cuda --shapes full \\
        --steps inference,training --modes default,max-autotune-no-cudagraphs
    python benchmarks/fusion/study.py --shard 1/2 --out r1  # on one machine
    python benchmarks/fusion/study.py --shard 2/2 --out r2  # on another
    python benchmarks/fusion/study.py merge r1 r2 --out reports

A merge of all shards gives the same study as one unsharded run (timings are
measurements: they differ between any two runs).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from fusion_viewer.study import fmt_mb, summary_markdown, top_reasons, write_pages


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

STUDY_VERSION = 1
STEPS = ("inference", "training")
# Deterministic fields of a row: what a merge must reproduce exactly.
MEASURED = (
    "eager_ms",
    "compiled_ms",
    "speedup",
    "compile_s",
    "launches_eager",
    "launches_compiled",
    "fusible_checks",
    "max_abs_diff",
)


@dataclasses.dataclass(frozen=True)
class Case:
    model: str
    step: str
    mode: str

    @property
    def id(self) -> str:
        return f"{self.model}-{self.step}-{self.mode}"


def plan(models: list[str], steps: list[str], modes: list[str]) -> list[Case]:
    """Every case of the study, in its canonical order."""
    return [Case(m, s, mode) for mode in modes for s in steps for m in models]


def shard(cases: list[Case], spec: str | None) -> list[Case]:
    """The cases of shard ``i/n`` (1-based): every n-th case from the i-th."""
    if not spec:
        return cases
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise SystemExit(f"--shard {spec!r}: expected i/n, e.g. 1/2") from None
    if not 1 <= i <= n:
        raise SystemExit(f"--shard {spec!r}: need 1 <= i <= n")
    return cases[i - 1 :: n]


# ---------------------------------------------------------------------------
# One case, in a child process


def run_case(
    case: Case,
    device: str,
    shapes: str,
    repeats: int,
    check_fusible: int,
    autotune_convs: bool,
    out: Path,
    gpu_lock: str | None = None,
) -> dict[str, Any]:
    """Compile, capture, time and check one case; the row of the study."""
    import torch
    from harness import (
        build_model,
        compile_kwargs,
        exclusive_device,
        first_call,
        launches_per_step,
        matches,
        median_step_s,
        model_step,
    )
    from fusion_viewer import costs as viewer_costs
    from models import compile_config, MODELS

    from torch._inductor import fusion_report

    spec = MODELS[case.model]
    row: dict[str, Any] = {"case": case.id, **dataclasses.asdict(case)}
    row["family"] = spec.family
    train = case.step == "training"
    model, inputs = build_model(case.model, device, shapes, train)
    # The input shapes, for the index's note on timings (what "ci" shapes are).
    row["inputs"] = [list(t.shape) for t in inputs if isinstance(t, torch.Tensor)]
    eager_step = model_step(model, model, inputs, train)
    expected = eager_step()
    torch._dynamo.reset()
    compiled = torch.compile(model, **compile_kwargs(case.mode, autotune_convs))
    compiled_step = model_step(compiled, model, inputs, train)
    with fusion_report.capture() as rep, compile_config(case.model):
        actual, compile_s = first_call(compiled_step, device)
        row["compile_s"] = round(compile_s, 2)
    data = rep.to_json()
    with exclusive_device(gpu_lock):
        # The compile timed no device ("measure", the default): measured here,
        # once per process, and the capture priced from it.
        viewer_costs.price_measured(data)
    row.update(summarize(data))
    same, diff = matches(
        actual.detach() if isinstance(actual, torch.Tensor) else actual, expected
    )
    row["matches_eager"] = same
    row["max_abs_diff"] = diff

    with compile_config(case.model), exclusive_device(gpu_lock):
        eager_s = median_step_s(eager_step, device, repeats)
        compiled_s = median_step_s(compiled_step, device, repeats)
        row["launches_eager"] = launches_per_step(eager_step, device)
        row["launches_compiled"] = launches_per_step(compiled_step, device)
    row["eager_ms"] = eager_s * 1e3
    row["compiled_ms"] = compiled_s * 1e3
    row["speedup"] = eager_s / compiled_s
    if check_fusible:
        # Last: the check recompiles (torch._dynamo.reset()) the model.
        with compile_config(case.model), exclusive_device(gpu_lock):
            row["fusible_checks"] = _check_fusible(
                data, model, inputs, case, check_fusible, autotune_convs
            )
        row.update(summarize(data))  # the check filled `fusible`
    row["status"] = "ok"
    (out / "captures").mkdir(parents=True, exist_ok=True)
    (out / "captures" / f"{case.id}.json").write_text(json.dumps(data) + "\n")
    return row


def _check_fusible(
    data: dict[str, Any],
    model: Any,
    inputs: tuple[Any, ...],
    case: Case,
    limit: int,
    autotune_convs: bool,
) -> dict[str, Any]:
    """Force up to ``limit`` heuristic boundaries (the costliest first)."""
    from harness import compile_kwargs

    from fusion_viewer import check as fusion_check

    checked = fusion_check.check_fusible(
        model,
        inputs,
        data,
        max_boundaries=limit,
        compile_kwargs=compile_kwargs(case.mode, autotune_convs),
        training=case.step == "training",
    )
    return {"checked": checked}


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    """The deterministic per-case numbers of a capture (see the module doc)."""
    graphs = data["graphs"]
    breaks = data.get("graph_breaks", [])
    by_reason: dict[str, dict[str, Any]] = {}
    by_category: collections.Counter[str] = collections.Counter()

    def count(reason: str, category: str, nbytes: int = 0) -> None:
        entry = by_reason.setdefault(
            reason, {"category": category, "count": 0, "bytes": 0}
        )
        entry["count"] += 1
        entry["bytes"] += nbytes
        by_category[category] += 1

    crossings: set[tuple[str, str, str]] = set()
    fusible = {"true": 0, "false": 0, "unknown": 0}
    heuristic = 0
    for graph in graphs:
        for b in graph["boundaries"]:
            nbytes = 0
            buffer = b["args"].get("buffer")
            if b["relation"] == "dependency" and buffer is not None:
                key = (graph["compile_id"], buffer, b["kernels"][-1])
                if key not in crossings:
                    crossings.add(key)
                    nbytes = int(b["args"].get("bytes") or 0)
            count(b["reason"], b["category"], nbytes)
            heuristic += b["category"] == "heuristic"
            state = b.get("fusible")
            fusible["unknown" if state is None else str(bool(state)).lower()] += 1
    for brk in breaks:
        count(brk.get("reason", "graph_break"), brk.get("category", "legality"))
    computing = [op for g in graphs for op in g["ops"] if op["computes"]]
    from fusion_viewer.common import kernel_groups
    from torch._inductor.fusion_remarks.analysis import coverage_violations

    # kernels as the output code has them: one per generated function (a C++
    # function holding several loop nests counts once) and one per extern call
    kernels = [grp["records"][0] for g in graphs for grp in kernel_groups(g)]
    unfused = sum(_unfused_ops(g) for g in graphs)
    extern = sum(k["kind"] in ("extern", "fallback") for k in kernels)

    return {
        "graphs": len(graphs),
        "graph_breaks": len(breaks),
        "ops": len(computing),
        "unfused_ops": unfused,
        "kernels": len(kernels),
        "kernels_generated": len(kernels) - extern,
        "kernels_extern": extern,
        "boundaries": sum(e["count"] for e in by_reason.values()),
        "heuristic_boundaries": heuristic,
        "fusible": fusible,
        "boundary_bytes": sum(e["bytes"] for e in by_reason.values()),
        "by_reason": dict(sorted(by_reason.items())),
        "by_category": dict(sorted(by_category.items())),
        "violations": sum(len(coverage_violations(g)) for g in graphs),
    }


def _unfused_ops(graph: dict[str, Any]) -> int:
    """Computing ops that share no kernel with another computing op."""
    computing = {op["name"] for op in graph["ops"] if op["computes"]}
    size = {
        k["name"]: sum(name in computing for name in k["ops"]) for k in graph["kernels"]
    }
    return sum(
        1
        for op in graph["ops"]
        if op["computes"]
        and op["kernels"]
        and all(size.get(k, 0) <= 1 for k in op["kernels"])
    )


def _child(spec: dict[str, Any]) -> int:
    """Run one case; print its row as the last line, ``ROW {json}``."""
    case = Case(**spec["case"])
    try:
        row = run_case(
            case,
            spec["device"],
            spec["shapes"],
            spec["repeats"],
            spec["check_fusible"],
            spec["autotune_convs"],
            Path(spec["out"]),
            spec.get("gpu_lock"),
        )
    except Exception as e:
        row = {
            "case": case.id,
            **dataclasses.asdict(case),
            "status": "failed",
            "error": f"{type(e).__name__}: {e}"[:2000],
            "traceback": traceback.format_exc()[-4000:],
        }
    print("ROW " + json.dumps(row, default=str), flush=True)
    return 0


# ---------------------------------------------------------------------------
# The parent: cases in child processes, progress, outputs


class Progress:
    """A one-line progress bar on a terminal, one line per case elsewhere."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()

    def update(self, done: int, label: str) -> None:
        width = 24
        filled = width * done // max(1, self.total)
        elapsed = time.monotonic() - self.start
        line = (
            f"[{'#' * filled}{'-' * (width - filled)}] {done}/{self.total} "
            f"{elapsed:6.0f}s {label}"
        )
        if self.tty:
            sys.stderr.write("\r\033[K" + line)
            if done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def run_study(args: argparse.Namespace, cases: list[Case], out: Path) -> list[dict]:
    from harness import child_env
    from models import MODELS

    env = child_env()
    rows = []
    progress = Progress(len(cases))
    for done, case in enumerate(cases):
        progress.update(done, f"{case.id} ...")
        spec = {
            "case": dataclasses.asdict(case),
            "device": args.device,
            "shapes": args.shapes,
            "repeats": args.repeats,
            "check_fusible": args.check_fusible,
            "autotune_convs": args.autotune_convs,
            "out": str(out),
            "gpu_lock": args.gpu_lock,
        }
        cmd = [sys.executable, str(Path(__file__)), "--child", json.dumps(spec)]
        if args.extra_models:
            cmd[2:2] = ["--extra-models", args.extra_models]
        try:
            proc = subprocess.run(
                cmd,
                env=env,
                capture_output=True,
                text=True,
                timeout=args.case_timeout,
            )
            found = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW ")]
            if found:
                row = json.loads(found[-1][4:])
            else:
                row = _failed(case, f"exit {proc.returncode}: {proc.stderr[-2000:]}")
        except subprocess.TimeoutExpired:
            row = _failed(case, f"timed out after {args.case_timeout} s")
        row.setdefault("family", MODELS[case.model].family)
        rows.append(row)
        if args.verbose or row["status"] != "ok":
            print(json.dumps(row, default=str)[:3000], file=sys.stderr, flush=True)
        write_outputs(out, _settings(args), rows, pages=False)  # keep partial results
    progress.update(len(cases), "done")
    return rows


def _failed(case: Case, error: str) -> dict[str, Any]:
    return {
        "case": case.id,
        **dataclasses.asdict(case),
        "status": "failed",
        "error": error,
    }


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    return {
        "study_version": STUDY_VERSION,
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        # What a step ran on, for the index's note on timings.
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "fork": str(getattr(torch.version, "fork", "")),
        "shapes": args.shapes,
        "models": args.models,
        "steps": args.steps,
        "modes": args.modes,
        "repeats": args.repeats,
        "check_fusible": args.check_fusible,
        "shard": args.shard,
        "timing": "CUDA events per step, median"
        if args.device == "cuda"
        else "perf_counter per step, median",
        "command": " ".join(sys.argv),
    }


# ---------------------------------------------------------------------------
# Suite tables and renderings


def suite_tables(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Top reasons by count and by bytes, suite-wide and per model family."""
    ok = [r for r in rows if r.get("status") == "ok"]

    def table(selected: list[dict[str, Any]]) -> list[dict[str, Any]]:
        merged: dict[str, dict[str, Any]] = {}
        for r in selected:
            for reason, e in r["by_reason"].items():
                m = merged.setdefault(
                    reason,
                    {
                        "reason": reason,
                        "category": e["category"],
                        "count": 0,
                        "bytes": 0,
                        "cases": 0,
                    },
                )
                m["count"] += e["count"]
                m["bytes"] += e["bytes"]
                m["cases"] += 1
        return sorted(merged.values(), key=lambda m: (-m["count"], m["reason"]))

    families = sorted({r["family"] for r in ok})
    overall = table(ok)
    return {
        "cases": len(rows),
        "failed": [r["case"] for r in rows if r.get("status") != "ok"],
        "by_count": overall,
        "by_bytes": sorted(overall, key=lambda m: (-m["bytes"], m["reason"])),
        "by_family": {f: table([r for r in ok if r["family"] == f]) for f in families},
        "unexplained": sum(r["violations"] for r in ok),
    }


def write_outputs(
    out: Path, settings: dict[str, Any], rows: list[dict], pages: bool = True
) -> dict[str, Any]:
    """study.json, summary.md, and the fusion viewer's index.html and
    (``pages``) one page per case (``python -m fusion_viewer study``)."""
    out.mkdir(parents=True, exist_ok=True)
    suite = suite_tables(rows)
    study = {"settings": settings, "rows": rows, "suite": suite}
    (out / "study.json").write_text(json.dumps(study, indent=1, default=str) + "\n")
    (out / "summary.md").write_text(summary_markdown(settings, rows, suite))
    write_pages(out, settings, rows, suite, case_pages=pages)
    return study


def merge(directories: list[Path], out: Path, pages: bool = True) -> dict[str, Any]:
    """Combine shard outputs into the study one unsharded run would write."""
    studies = [json.loads((d / "study.json").read_text()) for d in directories]
    first = studies[0]["settings"]
    for d, s in zip(directories, studies):
        for key in ("device", "shapes", "models", "steps", "modes", "study_version"):
            if s["settings"][key] != first[key]:
                raise SystemExit(
                    f"cannot merge {d}: its {key} is {s['settings'][key]!r}, "
                    f"not {first[key]!r} as in {directories[0]}"
                )
    order = {
        c.id: i
        for i, c in enumerate(
            plan(
                first["models"].split(","),
                first["steps"].split(","),
                first["modes"].split(","),
            )
        )
    }
    rows = sorted(
        (r for s in studies for r in s["rows"]), key=lambda r: order.get(r["case"], 0)
    )
    seen = [r["case"] for r in rows]
    duplicated = sorted({c for c in seen if seen.count(c) > 1})
    if duplicated:
        raise SystemExit(f"cannot merge: cases in several shards: {duplicated}")
    missing = [c for c in order if c not in seen]
    if missing:
        print(f"merge: cases missing from every shard: {missing}", file=sys.stderr)
    (out / "captures").mkdir(parents=True, exist_ok=True)
    for d in directories:
        for capture in (d / "captures").glob("*.json"):
            target = out / "captures" / capture.name
            if capture.resolve() != target.resolve():
                shutil.copyfile(capture, target)
    for r in rows:
        # Re-derive the per-case numbers from the captures, so a merge reports
        # what this version of summarize() counts; measurements are kept.
        capture = out / "captures" / f"{r['case']}.json"
        if r.get("status") == "ok" and capture.exists():
            r.update(summarize(json.loads(capture.read_text())))
    settings = dict(first, command=" ".join(sys.argv), shard=None)
    return write_outputs(out, settings, rows, pages=pages)


def structural(study: dict[str, Any]) -> dict[str, Any]:
    """A study without its measurements: what every run of it must reproduce."""
    return {
        "rows": [
            {k: v for k, v in r.items() if k not in MEASURED} for r in study["rows"]
        ],
        "suite": study["suite"],
    }


def _load_extra_models(path: str) -> None:
    """Add the ``MODELS`` of a user's Python file to the model set."""
    import importlib.util

    from models import MODELS

    spec = importlib.util.spec_from_file_location("study_extra_models", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--extra-models {path!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    extra = getattr(module, "MODELS", None)
    if not isinstance(extra, dict):
        raise SystemExit(f"--extra-models {path!r}: defines no MODELS dict")
    MODELS.update(extra)


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ("case", "ops", "kernels", "bounds", "heur", "MB", "speed-up", "top reason")
    print(
        f"{head[0]:42} {head[1]:>5} {head[2]:>7} {head[3]:>6} {head[4]:>5} "
        f"{head[5]:>8} {head[6]:>8}  {head[7]}"
    )
    for r in rows:
        if r.get("status") != "ok":
            print(f"{r['case']:42} FAILED: {r['error'][:80]}")
            continue
        speedup = "-" if r.get("speedup") is None else f"{r['speedup']:.2f}x"
        print(
            f"{r['case']:42} {r['ops']:5d} {r['kernels']:7d} {r['boundaries']:6d} "
            f"{r['heuristic_boundaries']:5d} {fmt_mb(r['boundary_bytes']):>8} "
            f"{speedup:>8}  {top_reasons(r, 1)}"
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "merge":
        parser = argparse.ArgumentParser(prog="study.py merge")
        parser.add_argument("shards", nargs="+", type=Path)
        parser.add_argument("--out", type=Path, default=Path("reports"))
        parser.add_argument("--strict", action="store_true")
        parser.add_argument("--no-pages", action="store_true")
        args = parser.parse_args(argv[1:])
        study = merge(args.shards, args.out, pages=not args.no_pages)
        print_table(study["rows"])
        print(f"\nwrote {args.out}/index.html, summary.md, study.json")
        return 1 if args.strict and study["suite"]["failed"] else 0

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--shapes", choices=("ci", "full"), default="ci")
    parser.add_argument("--models", default="all", help="comma-separated, or all")
    parser.add_argument("--steps", default="inference", help="inference,training")
    parser.add_argument(
        "--modes", "--mode", default="default", help="torch.compile modes, or default"
    )
    parser.add_argument("--shard", help="i/n: run every n-th case from the i-th")
    parser.add_argument("--out", type=Path, default=Path("reports"))
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed steps (GPU 50, CPU 5)"
    )
    parser.add_argument(
        "--check-fusible",
        type=int,
        default=0,
        metavar="N",
        help="force up to N heuristic boundaries per case (see fusion_viewer.check)",
    )
    parser.add_argument(
        "--autotune-convs",
        action="store_true",
        help="under max-autotune also autotune convolutions (minutes per CNN)",
    )
    parser.add_argument("--case-timeout", type=float, default=1800.0)
    parser.add_argument("--extra-models", help="a Python file defining MODELS")
    parser.add_argument(
        "--gpu-lock",
        help="a lock file shared by shards run side by side: timings are taken "
        "one shard at a time",
    )
    parser.add_argument(
        "--cases",
        help="comma-separated case ids: rerun only these cases of the study",
    )
    parser.add_argument(
        "--no-pages",
        action="store_true",
        help="skip the per-case HTML pages (merge renders them)",
    )
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 if any case failed"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.extra_models:
        _load_extra_models(args.extra_models)
    if args.child:
        return _child(json.loads(args.child))

    import torch
    from models import MODELS

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here")
    if args.repeats is None:
        args.repeats = 50 if args.device == "cuda" else 5
    if args.models == "all":
        args.models = ",".join(MODELS)
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise SystemExit(f"unknown models {unknown}: choose from {', '.join(MODELS)}")
    steps = args.steps.split(",")
    if any(s not in STEPS for s in steps):
        raise SystemExit(f"--steps {args.steps!r}: choose from {', '.join(STEPS)}")
    modes = args.modes.split(",")
    known_modes = {"default", *torch._inductor.list_mode_options()}
    if any(m not in known_modes for m in modes):
        raise SystemExit(
            f"--modes {args.modes!r}: choose from {', '.join(sorted(known_modes))}"
        )
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        probe = args.out / ".writable"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise SystemExit(f"--out {args.out}: cannot write there ({e})") from None

    cases = shard(plan(models, steps, modes), args.shard)
    if args.cases:
        # A rerun of some cases of a study: the settings stay the study's, so
        # the output merges with the other shards.
        wanted = args.cases.split(",")
        unknown_cases = sorted(set(wanted) - {c.id for c in cases})
        if unknown_cases:
            raise SystemExit(
                f"--cases {unknown_cases}: not cases of this study (and shard)"
            )
        cases = [c for c in cases if c.id in wanted]
    rows = run_study(args, cases, args.out)
    study = write_outputs(args.out, _settings(args), rows, pages=not args.no_pages)
    print()
    print_table(rows)
    print(f"\nwrote {args.out}/index.html, summary.md, study.json")
    return 1 if args.strict and study["suite"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
