"""Do the fusion report's predicted gains predict?  (issue 17, items 1-4, 6, 7)

Per case (model, inference or training step, ``default`` mode), in a process
of its own:

1. compile under ``fusion_report.capture()``: every boundary carries its
   bytes and launches (``fusion_remarks.costs``; the compile times no
   device); here it is priced at a cost model measured at full size
   (``fusion_viewer.costs.measure_cost_model``);
2. **hotness**: the profiler's kernel times of the compiled step, as a whole
   step replayed from a CUDA graph and launched from the stream, joined to
   the report's kernels by generated function name (``costs.annotate``);
3. **measured gain**: ``fusion_check.check_fusible`` forces the top ``--top``
   predicted heuristic boundaries one at a time, checks the result against
   eager and times stock against forced with :class:`GraphKernelTimer`: both
   steps captured as CUDA graphs, their GPU kernel time read by the profiler
   in interleaved rounds; the gain is stock minus forced, with the rounds'
   noise;
4. the **verdict** of the whole model (``verdict.py``): eager against
   compiled, in one line with numbers.

The parent runs the cases side by side (``--jobs``; timings one at a time
under ``--gpu-lock``), then computes the **calibration**: Spearman's rank
correlation between predicted and measured gain over every forced, correct
and timed boundary, and writes ``NAME.json`` (field ``spearman``), ``NAME.md``
and the scatter plot ``NAME.png`` (``predictions_report.py``).  ``--plot
NAME.json`` writes the last two again from a results file.  On the CPU
(tests) the timer is the check's default and there are no CUDA graphs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable


HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from predictions_report import fmt_us, write_outputs  # noqa: E402


# ---------------------------------------------------------------------------
# Timing stock against forced


class GraphKernelTimer:
    """``fusion_check``'s :class:`StepTimer` for a GPU: each step captured as
    one CUDA graph, the stock and the forced graph replayed in interleaved
    rounds under one profiler session, GPU kernel time per step compared."""

    def __init__(self, lock: str | None, rounds: int = 7, per_round: int = 10):
        self.lock = lock
        self.rounds = rounds
        self.per_round = per_round

    def prepare(self, step: Callable[[], Any]) -> dict[str, Any]:
        from harness import capture_step

        replay, _, why = capture_step(step)
        return {"run": replay or step, "cuda_graph": replay is not None, "why": why}

    def compare(self, stock: dict[str, Any], forced: dict[str, Any]) -> dict[str, Any]:
        from harness import kernel_time_rounds

        arms = {"stock": stock["run"], "forced": forced["run"]}
        prof = kernel_time_rounds(
            arms,
            rounds=self.rounds,
            per_round=self.per_round,
            lock=self.lock,
            top=10**4,
        )
        s, f = prof["stock"]["gpu_s"], prof["forced"]["gpu_s"]
        # Rounds are interleaved: the gain is the median of the per-round
        # differences, its noise their interquartile range (a round disturbed
        # by a process compiling beside this one moves one difference).
        diffs = sorted(a - b for a, b in zip(s["rounds"], f["rounds"]))
        gain = statistics.median(diffs)
        quartiles = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else [0, 0, 0]
        noise = quartiles[2] - quartiles[0]
        local, changed = _changed_kernels(
            prof["stock"]["kernels"], prof["forced"]["kernels"]
        )
        return {
            "stock_ms": s["median"] * 1e3,
            "forced_ms": f["median"] * 1e3,
            "faster": None if abs(gain) <= noise else gain > 0,
            "measure": "gpu kernel time"
            + (
                " of CUDA graph replays"
                if stock["cuda_graph"] and forced["cuda_graph"]
                else " (not captured: " + str(forced["why"] or stock["why"]) + ")"
            ),
            "gain_s": gain,
            "noise_s": noise,
            "local_gain_s": local,
            "stock_rounds_s": s["rounds"],
            "forced_rounds_s": f["rounds"],
            "launches": {
                "stock": prof["stock"]["launches"],
                "forced": prof["forced"]["launches"],
            },
            "changed_kernels": changed,
        }


def _stem(name: str) -> str:
    """A generated kernel's name without its number (``triton_poi_fused_add_7``
    -> ``triton_poi_fused_add``): a forced compile renumbers the kernels after
    the one it changed."""
    head, _, tail = name.rpartition("_")
    return head if tail.isdigit() and head.startswith("triton_") else name


def _changed_kernels(
    stock: list[dict[str, Any]], forced: list[dict[str, Any]], limit: int = 6
) -> tuple[float, list[dict[str, Any]]]:
    """The gain on the kernels the forced fusion changed, and those kernels.

    Kernels are compared by name stem (:func:`_stem`) with their launches per
    step: a stem with as many launches in both compiles is the same code, and
    its time difference is noise left out; the stems whose launches differ
    (the two kernels fused, the fused kernel, a kernel fused differently in
    consequence) make the local gain: their time in the stock step minus
    their time in the forced one."""

    def by_stem(kernels: list[dict[str, Any]]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for k in kernels:
            entry = out.setdefault(_stem(k["name"]), [0.0, 0.0])
            entry[0] += k["s"]
            entry[1] += k["launches"]
        return out

    a, b = by_stem(stock), by_stem(forced)
    rows = [
        {
            "name": n,
            "stock_s": a.get(n, [0.0, 0.0])[0],
            "forced_s": b.get(n, [0.0, 0.0])[0],
            "launches": [a.get(n, [0.0, 0.0])[1], b.get(n, [0.0, 0.0])[1]],
        }
        for n in set(a) | set(b)
        if abs(a.get(n, [0.0, 0.0])[1] - b.get(n, [0.0, 0.0])[1]) > 1e-9
    ]
    local = sum(r["stock_s"] - r["forced_s"] for r in rows)
    rows.sort(key=lambda r: -abs(r["stock_s"] - r["forced_s"]))
    return local, rows[:limit]


# ---------------------------------------------------------------------------
# Calibration


def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson's on the ranks); None for fewer
    than three pairs or a constant side."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return cov / math.sqrt(vx * vy)


def calibration_points(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One point per checked boundary that was forced, correct and timed."""
    points = []
    for case in cases:
        for check in case.get("checks", []):
            timing = check.get("timing") or {}
            if not (check.get("forced") and check.get("correct")):
                continue
            if timing.get("gain_s") is None or check.get("predicted_s") is None:
                continue
            points.append(
                {
                    "case": case["case"],
                    "boundary": f"{check['producer']} -> {check['consumer']}",
                    "graph": check.get("graph"),
                    "reason": check["reason"],
                    "predicted_s": check["predicted_s"],
                    "measured_s": timing["gain_s"],
                    "noise_s": timing.get("noise_s") or 0.0,
                    "local_s": timing.get("local_gain_s"),
                    "bytes_saved": check.get("bytes_saved"),
                    "launches_saved": check.get("launches_saved"),
                    "set": _set_of(case),
                }
            )
    return points


def _set_of(case: dict[str, Any]) -> str:
    """``calibration`` for a case of the calibration sweep, else ``model set``."""
    return "calibration" if case.get("family") == "calibration" else "model set"


def spearman_by_set(points: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Spearman's rho over the points of each set (model set, calibration)."""
    out = {}
    for name in sorted({p["set"] for p in points}):
        mine = [p for p in points if p["set"] == name]
        out[name] = {
            "n": len(mine),
            "spearman": spearman(
                [p["predicted_s"] for p in mine], [p["measured_s"] for p in mine]
            ),
        }
    return out


def why_apart(point: dict[str, Any], check: dict[str, Any]) -> str:
    """Why a measured gain is not what was predicted, from what was measured."""
    timing = check.get("timing") or {}
    measured, predicted = point["measured_s"], point["predicted_s"]
    noise = point["noise_s"]
    if abs(measured) <= noise:
        return (
            f"inside the noise: {measured * 1e6:+.1f} us against "
            f"{noise * 1e6:.1f} us between rounds"
        )
    launches = timing.get("launches") or {}
    changed = timing.get("changed_kernels") or []
    slower = [c for c in changed if c["forced_s"] > c["stock_s"] and c["forced_s"] > 0]
    if measured < 0 and slower:
        c = slower[0]
        return (
            f"the forced compile is slower: {c['name']} takes "
            f"{c['forced_s'] * 1e6:.1f} us against {c['stock_s'] * 1e6:.1f} us"
        )
    if measured > 2 * predicted:
        return (
            f"more than the bytes predict ({measured * 1e6:.1f} against "
            f"{predicted * 1e6:.1f} us): launches "
            f"{launches.get('stock', 0):.0f} -> {launches.get('forced', 0):.0f}; "
            "forcing one pair changed other fusions too"
        )
    if measured < predicted / 2:
        return (
            f"less than predicted ({measured * 1e6:.1f} against "
            f"{predicted * 1e6:.1f} us): the fused kernel does not run at copy "
            "bandwidth, or the saved bytes were served from L2"
        )
    return "within 2x of the prediction"


# ---------------------------------------------------------------------------
# One case, in a child process


def run_case(
    name: str,
    step: str,
    device: str,
    shapes: str,
    top: int,
    lock: str | None,
    cost_model: dict[str, Any] | None = None,
) -> dict[str, Any]:
    import torch
    from harness import (
        build_model,
        capture_step,
        exclusive_device,
        kernel_time_rounds,
        model_step,
    )
    from models import compile_config, spec_of
    from verdict import measure_verdict

    from torch._inductor import fusion_report
    from fusion_viewer import check as fusion_check, costs

    train = step == "training"
    model, inputs = build_model(name, device, shapes, train)
    row: dict[str, Any] = {
        "case": f"{name}-{step}",
        "model": name,
        "step": step,
        "family": spec_of(name).family,
    }
    with compile_config(name):
        eager_step = model_step(model, model, inputs, train)
        eager_step()
        torch._dynamo.reset()
        compiled = torch.compile(model)
        compiled_step = model_step(compiled, model, inputs, train)
        with fusion_report.capture() as rep:
            compiled_step()
        data = rep.to_json()
        if cost_model is not None:
            model_cost = costs.CostModel(**cost_model)
        else:
            with exclusive_device(lock):
                model_cost = run_cost_model(device)
        row["cost_model"] = model_cost.to_json()
        row["compile_time_cost_model"] = (data["graphs"] or [{}])[0].get("cost_model")

        # Hotness: kernel times of the compiled step, as a CUDA graph and not.
        steps: dict[str, Callable[[], Any]] = {"eager": eager_step}
        steps["stream"] = compiled_step
        kernel_seconds: dict[str, float] | None = None
        if device == "cuda":
            replay, _, why = capture_step(compiled_step)
            row["cuda_graph"] = why or "captured"
            if replay is not None:
                steps["cuda_graph"] = replay
            prof = kernel_time_rounds(steps, rounds=3, per_round=5, lock=lock, top=400)
            hot = prof.get("cuda_graph") or prof["stream"]
            kernel_seconds = {k["name"]: k["s"] for k in hot["kernels"]}
            row["profile"] = {
                arm: {
                    "gpu_s": p["gpu_s"]["median"],
                    "spread": p["gpu_s"]["spread"],
                    "launches": p["launches"],
                }
                for arm, p in prof.items()
            }
            row["hotness_source"] = (
                "cuda_graph" if "cuda_graph" in prof else "stream (not captured)"
            )
            del replay
        costs.annotate(data, model_cost, kernel_seconds)
        row["hotness"] = hotness_summary(data, kernel_seconds)

        def recompile(config: dict[str, Any]) -> Callable[[], Any]:
            # Options make a backend of their own: Dynamo does not hand this
            # compile the stock one's cache entry.
            alt = model_step(torch.compile(model, options=config), model, inputs, train)
            alt()
            return alt

        row["verdict"] = measure_verdict(
            name,
            step,
            device,
            eager_step,
            compiled_step,
            data,
            lock,
            recompile=recompile,
        )

        timer = GraphKernelTimer(lock) if device == "cuda" else None
        checks = fusion_check.check_fusible(
            model,
            inputs,
            data,
            max_boundaries=2 * top,
            enough_forced=top,
            training=train,
            timer=timer,
            stock=compiled,
        )
    row["checks"] = [_with_prediction(c, data) for c in checks]
    row["boundaries"] = ranked_boundaries(data)
    row["heuristic_boundaries"] = sum(
        b["category"] == "heuristic" for g in data["graphs"] for b in g["boundaries"]
    )
    return row


def run_cost_model(device: str) -> Any:
    """The cost model every case of a run is priced at, measured once before
    the cases start: measured beside compiling cases, the copy bandwidth
    varied 750-2900 GB/s and the launch 1-10 us between cases of one H100 run.
    On a GPU, the launch is the GPU's own cost of one more kernel in a CUDA
    graph (the gains are measured as GPU time of CUDA graph replays)."""
    from fusion_viewer import costs

    return costs.measure_cost_model(device, in_cuda_graph=device == "cuda", repeats=9)


def _with_prediction(check: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """A check with the predicted gain of its boundary."""
    for graph in data["graphs"]:
        if graph["compile_id"] != check["graph"]:
            continue
        for b in graph["boundaries"]:
            if (b["producer"], b["consumer"]) == (check["producer"], check["consumer"]):
                p = b.get("predicted") or {}
                return {
                    **check,
                    "predicted_s": p.get("gain_s"),
                    "bytes_saved": p.get("bytes_saved"),
                    "launches_saved": p.get("launches_saved"),
                    "hotness_s": b.get("hotness_s"),
                }
    return dict(check, predicted_s=None)


def hotness_summary(
    data: dict[str, Any], kernel_seconds: dict[str, float] | None
) -> dict[str, Any]:
    """How much of the measured kernel time the report's kernels account for
    (joined by generated function name), and the hottest kernels."""
    if not kernel_seconds:
        return {"joined_s": None}
    functions: dict[str, list[str]] = {}
    for graph in data["graphs"]:
        for k in graph["kernels"]:
            fn = k.get("function")
            if fn:
                functions.setdefault(fn, [])
                if graph["compile_id"] not in functions[fn]:
                    functions[fn].append(graph["compile_id"])
    joined = sum(s for n, s in kernel_seconds.items() if n in functions)
    total = sum(kernel_seconds.values())
    top = sorted(kernel_seconds.items(), key=lambda kv: -kv[1])[:8]
    return {
        "total_s": total,
        "joined_s": joined,
        "joined_share": joined / total if total else None,
        # a generated name in several graphs (forward and backward alike):
        # its time is the sum over them
        "names_in_several_graphs": sorted(
            n for n, g in functions.items() if len(g) > 1
        ),
        "top": [{"name": n, "s": s, "in_report": n in functions} for n, s in top],
    }


def ranked_boundaries(data: dict[str, Any], limit: int = 10) -> list[dict[str, Any]]:
    """The boundaries with the largest predicted gain."""
    rows = [
        {
            "graph": g["compile_id"],
            "boundary": f"{b['producer']} -> {b['consumer']}",
            "reason": b["reason"],
            "category": b["category"],
            "predicted_s": (b.get("predicted") or {}).get("gain_s"),
            "bytes_saved": (b.get("predicted") or {}).get("bytes_saved"),
            "hotness_s": b.get("hotness_s"),
        }
        for g in data["graphs"]
        for b in g["boundaries"]
    ]
    rows.sort(key=lambda r: -(r["predicted_s"] or 0.0))
    return rows[:limit]


# ---------------------------------------------------------------------------
# The parent: cases side by side, the calibration, the outputs


def summarize(cases: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    points = calibration_points(cases)
    rho = spearman(
        [p["predicted_s"] for p in points], [p["measured_s"] for p in points]
    )
    resolved = [p for p in points if abs(p["measured_s"]) > p["noise_s"]]
    rho_resolved = spearman(
        [p["predicted_s"] for p in resolved], [p["measured_s"] for p in resolved]
    )
    # forward and backward graphs of a training step may share op names
    checks = {
        (c["case"], c2.get("graph"), c2["producer"], c2["consumer"]): c2
        for c in cases
        for c2 in c.get("checks", [])
    }
    for p in points:
        producer, consumer = p["boundary"].split(" -> ")
        p["why"] = why_apart(p, checks[(p["case"], p.get("graph"), producer, consumer)])
    local = [p for p in points if p.get("local_s") is not None]
    rho_local = spearman(
        [p["predicted_s"] for p in local], [p["local_s"] for p in local]
    )
    return {
        **meta,
        "spearman": rho,
        "spearman_local": rho_local,
        "spearman_outside_noise": rho_resolved,
        "spearman_by_set": spearman_by_set(points),
        "points": points,
        "cases": cases,
    }


def replot(paths: list[Path], out: Path) -> int:
    """The outputs again from results files, merged (the cases of several
    device runs of one fork revision)."""
    runs = [json.loads(p.read_text()) for p in paths]
    derived = ("cases", "points", "failures")
    meta = {
        k: v
        for k, v in runs[0].items()
        if k not in derived and not k.startswith("spearman")
    }
    meta["command"] = [r.get("command") for r in runs]
    meta["failures"] = [f for r in runs for f in r.get("failures", [])]
    cases = [c for r in runs for c in r["cases"]]
    write_outputs(summarize(cases, meta), out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--shapes", choices=("ci", "full"), default="full")
    parser.add_argument(
        "--models",
        default="all",
        help="comma-separated names; all: the default set; calibration: the size sweep",
    )
    parser.add_argument(
        "--inference", default="all", help="of --models, those run as inference"
    )
    parser.add_argument(
        "--train", default="all", help="of --models, those run as a training step"
    )
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--gpu-lock")
    parser.add_argument("--json", help="write NAME.json, NAME.md, NAME.png")
    parser.add_argument(
        "--plot",
        nargs="+",
        help="only write the outputs again from these results (several: merged "
        "into --json)",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--cost-model", help=argparse.SUPPRESS)  # JSON, to a child
    args = parser.parse_args(argv)
    if args.plot:
        return replot([Path(p) for p in args.plot], Path(args.json or args.plot[0]))
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.child:
        row = run_case(
            *args.child,
            device,
            args.shapes,
            args.top,
            args.gpu_lock,
            json.loads(args.cost_model) if args.cost_model else None,
        )
        print("ROW " + json.dumps(row, default=str))
        return 0
    if args.json:
        out = Path(args.json)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.with_suffix(".probe").write_text("")
            out.with_suffix(".probe").unlink()
        except OSError as e:
            raise SystemExit(f"--json {out}: cannot write there: {e}") from None
    if args.jobs > 1 and not args.gpu_lock:
        raise SystemExit("--jobs N needs --gpu-lock FILE: timings must not overlap")
    from harness import child_env, provenance
    from models import CALIBRATION, MODELS

    # "calibration" names the calibration set (models.CALIBRATION)
    names = []
    for name in args.models.split(","):
        if name == "all":
            names += MODELS
        elif name == "calibration":
            names += CALIBRATION
        else:
            names.append(name)
    unknown = [n for n in names if n not in MODELS and n not in CALIBRATION]
    if unknown:
        raise SystemExit(
            f"unknown models {unknown}: choose from {', '.join(MODELS)}, "
            f"calibration or {', '.join(CALIBRATION)}"
        )

    def chosen(spec: str) -> set[str]:
        return set(names) if spec == "all" else set(spec.split(",")) - {"none", ""}

    infer, train = chosen(args.inference), chosen(args.train)
    cases = [(n, "inference") for n in names if n in infer] + [
        (n, "training") for n in names if n in train
    ]
    model_cost = run_cost_model(device)
    env = child_env(
        # the compiles price their boundaries at the same model
        TORCHINDUCTOR_FUSION_COST_MODEL=f"{model_cost.bandwidth_bytes_per_s / 1e9:.6g},"
        f"{model_cost.launch_s * 1e6:.6g}",
    )

    def child(case: tuple[str, str]) -> tuple[tuple[str, str], Any]:
        cmd = [sys.executable, __file__, "--device", device, "--shapes", args.shapes]
        cmd += ["--top", str(args.top), "--child", *case]
        cmd += ["--cost-model", json.dumps(model_cost.to_json())]
        if args.gpu_lock:
            cmd += ["--gpu-lock", args.gpu_lock]
        print(f"{case[0]} {case[1]} ...", file=sys.stderr, flush=True)
        return case, subprocess.run(cmd, env=env, capture_output=True, text=True)

    meta = {
        **provenance(device),
        "shapes": args.shapes,
        "top": args.top,
        "cost_model": model_cost.to_json(),
        "command": "python benchmarks/fusion/predictions.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    failures: list[dict[str, str]] = []
    result: dict[str, Any] = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for case, proc in pool.map(child, cases):
            found = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW ")]
            if proc.returncode != 0 or not found:
                failures.append({"case": "-".join(case), "stderr": proc.stderr[-3000:]})
                print(proc.stderr[-3000:], file=sys.stderr)
            else:
                rows[case] = json.loads(found[-1][4:])
            result = summarize(
                [rows[c] for c in cases if c in rows], {**meta, "failures": failures}
            )
            if args.json:  # after every case: a cut-short run keeps its cases
                write_outputs(result, Path(args.json))
    for p in result.get("points", []):
        print(
            f"{p['case']:28} {p['boundary'][:40]:40} predicted {fmt_us(p['predicted_s']):>8} "
            f"measured {fmt_us(p['measured_s']):>8} +- {fmt_us(p['noise_s'])}"
        )
    print(f"spearman {result.get('spearman')} over {len(result.get('points', []))}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
