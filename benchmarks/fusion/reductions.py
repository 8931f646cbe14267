"""Softmax-class reductions against copy bandwidth: the one-pass pass and the rest.

A softmax, log-softmax, cross-entropy, layer norm or RMS norm has to read its
input once and write its output once; a copy of the input moves the same
bytes and is the ceiling.  This sweeps row lengths (powers of two from 512
to 262144 and the vocabulary widths 50257 (GPT-2), 128256 (Llama 3), 151936
(Qwen 2) and 256000 (Gemma)), row counts, dtypes,
forward and forward+backward, and times each arm:

* ``eager``; ``default`` (Inductor as shipped); ``two_pass``
  (``online_softmax=False``); ``max_autotune`` (``max-autotune-no-cudagraphs``);
  ``fx_fusion`` (the FX fusion arm); ``one_pass``
  (``config.one_pass_reductions``, torch/_inductor/one_pass_reductions.py);
  ``one_pass_two_pass`` (the pass over upstream's two-pass form);
  ``one_pass_unaligned`` (the pass without its aligned steps);
  ``one_pass_split`` (the pass with split rows: fewer rows than half the
  multiprocessors split over several blocks each in one kernel,
  ``one_pass_reductions_split_rows``);
  ``default_vector_accumulators`` (2.15.0's default without its
  ``triton.scalar_accumulators``); ``one_pass_vector_accumulators`` (the
  pass, likewise without them); ``one_pass_sums_on_chip`` (the pass with
  kernels that only sum on chip too, ``one_pass_reductions_sums_on_chip``:
  the counterfactual of ``one_pass_sums_at_copy_speed``);
  ``one_pass_wide_rows_on_chip`` (the pass with rows of 4-byte elements of
  up to 32768 on chip too, ``one_pass_reductions_wide_rows_on_chip``: the
  counterfactual of ``one_pass_row_at_copy_speed``); ``cooperative``
  (upstream's cooperative
  reductions forced, ``triton.force_cooperative_reductions``: several
  blocks a row, combined through a workspace, the form split rows take with
  upstream's configurations; with more rows than blocks resident at once the
  launch fails, so only with few rows, ``--row-counts``).

Per case and arm: the median time (``triton.testing.do_bench`` on a GPU,
or ``do_bench_cudagraph`` with ``--cuda-graph``, which forward+backward steps
need: their host time varies more than their kernels; ``perf_counter`` on
the CPU; with ``--rounds`` the arms interleaved round by round, each
captured in a CUDA graph first, and the median of the rounds), the least
bytes the op needs (each input read once, each output written once;
forward+backward adds the backward's reads and its gradient), their
bandwidth as a fraction of a device copy of the input timed alike (the
faster of a clone and an elementwise copy, :func:`copy_ways`), the
largest difference to a float32 eager reference, the seconds of the first
call (the compile), a hash of the generated code (``same_code_as_default``:
an arm whose code is default's differs from it only by noise), and for
``one_pass`` the reason code of each of its remarks.

    python benchmarks/fusion/reductions.py --device cuda --ops softmax \\
        --dtypes bfloat16 --json benchmarks/results/one_pass/reductions_h100.json --plot
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ROW_LENGTHS = (
    512,
    1024,
    2048,
    4096,
    8192,
    16384,
    32768,
    50257,
    65536,
    128256,
    131072,
    151936,
    256000,
    262144,
)
ARMS = (
    "eager",
    "default",
    "two_pass",
    "max_autotune",
    "fx_fusion",
    "one_pass",
    "one_pass_two_pass",
    "one_pass_unaligned",
    "one_pass_split",
    "default_vector_accumulators",
    "one_pass_vector_accumulators",
    "one_pass_sums_on_chip",
    "one_pass_wide_rows_on_chip",
    "cooperative",
)
OPS = ("softmax", "log_softmax", "cross_entropy", "layer_norm", "rms_norm")

# Inductor config and compile arguments of each compiled arm.
ARM_CONFIG: dict[str, dict[str, Any]] = {
    "default": {},
    "two_pass": {"online_softmax": False},
    "max_autotune": {},
    "fx_fusion": {},
    "one_pass": {"one_pass_reductions": True},
    # the pass over upstream's two-pass form (no online softmax rewrite)
    "one_pass_two_pass": {"one_pass_reductions": True, "online_softmax": False},
    # the pass without its aligned steps (one_pass_reduction_aligned_loops)
    "one_pass_unaligned": {
        "one_pass_reductions": True,
        "one_pass_reductions_aligned_loads": False,
    },
    # the pass with split rows (one_pass_reduction_split_rows)
    "one_pass_split": {
        "one_pass_reductions": True,
        "one_pass_reductions_split_rows": True,
    },
    # 2.15.0's default without its scalar accumulators (2.15.0 only)
    "default_vector_accumulators": {"triton.scalar_accumulators": False},
    # the pass's loops with per-element accumulators again (2.15.0 only)
    "one_pass_vector_accumulators": {
        "one_pass_reductions": True,
        "triton.scalar_accumulators": False,
    },
    # the pass with kernels of sums on chip too (before
    # one_pass_sums_at_copy_speed kept upstream's loop for them)
    "one_pass_sums_on_chip": {
        "one_pass_reductions": True,
        "one_pass_reductions_sums_on_chip": True,
    },
    # the pass with rows of 4-byte elements of up to 32768 on chip too (the
    # counterfactual of one_pass_row_at_copy_speed)
    "one_pass_wide_rows_on_chip": {
        "one_pass_reductions": True,
        "one_pass_reductions_wide_rows_on_chip": True,
    },
    # upstream's cooperative reductions, forced (split rows' form)
    "cooperative": {"triton.force_cooperative_reductions": True},
}
ARM_COMPILE: dict[str, dict[str, Any]] = {
    "max_autotune": {"mode": "max-autotune-no-cudagraphs"},
    "fx_fusion": {"backend": "fx_fusion"},
}


def op_fn(op: str) -> Callable[..., Any]:
    import torch
    import torch.nn.functional as F

    return {
        "softmax": lambda x: torch.softmax(x, -1),
        "log_softmax": lambda x: torch.log_softmax(x, -1),
        "cross_entropy": lambda x, t: F.cross_entropy(x, t),
        "layer_norm": lambda x: F.layer_norm(x, (x.shape[-1],)),
        "rms_norm": lambda x: F.rms_norm(x, (x.shape[-1],)),
    }[op]


def least_bytes(op: str, rows: int, row: int, itemsize: int, backward: bool) -> int:
    """Bytes a perfect kernel moves: the row data read once and written once
    (cross-entropy writes a scalar and reads its targets); with backward,
    the backward's reads (the saved input or output and the incoming
    gradient; cross-entropy's is a scalar) and the input's gradient."""
    n = rows * row * itemsize
    if op == "cross_entropy":
        forward = n + rows * 8
        return forward + (n + rows * 8 + n if backward else 0)
    forward = 2 * n
    return forward + (3 * n if backward else 0)


def copy_ways(x: Any) -> dict[str, Callable[[], Any]]:
    """The ways the baseline moves the input's bytes, the fastest of which
    is the case's copy (``copy_s``): ``clone``, a device-to-device memcpy of
    a fresh tensor, and ``elementwise``, a kernel that reads each element
    and writes it into a tensor allocated once.  Replayed from a CUDA graph,
    the memcpy ran at 2.7 TB/s on the H200 for some byte counts (every
    float32 input of 2^27 elements but 524 x 256000; 16-bit inputs at rows of
    50257, 128256 and 151936), where the elementwise kernel ran at 4.2 for
    every one: 1.57x apart for the same bytes
    (``probes/copy_baseline.py``,
    benchmarks/results/one_pass/copy_baseline_h200.md).  Before 2026-11-29
    the baseline was the clone alone."""
    import torch

    x = x.detach()
    out = torch.empty_like(x)
    return {
        "clone": lambda: x.clone(),
        "elementwise": lambda: torch.mul(x, 1, out=out),
    }


def rows_for(row: int, total_elements: int) -> int:
    return max(1, total_elements // row)


def make_inputs(op: str, rows: int, row: int, dtype: Any, device: str) -> list[Any]:
    import torch

    x = torch.randn(rows, row, device=device, dtype=dtype) * 4
    if op == "cross_entropy":
        return [x, torch.randint(0, row, (rows,), device=device)]
    return [x]


def step_of(fn: Callable[..., Any], inputs: list[Any], backward: bool) -> Any:
    import torch

    if not backward:
        return lambda: fn(*inputs)
    x = inputs[0]
    grad = None

    def step() -> Any:
        nonlocal grad
        out = fn(x.requires_grad_(True), *inputs[1:])
        if grad is None:
            # The same incoming gradient for every arm and the reference.
            seeded = torch.Generator(device=out.device).manual_seed(1)
            grad = torch.randn(
                out.shape, generator=seeded, device=out.device, dtype=torch.float32
            ).to(out.dtype)
        return torch.autograd.grad(out, x, grad)[0]

    return step


def softmax_baselines(
    shape: tuple[int, ...], dtype: str = "bfloat16"
) -> tuple[Any, Any, float, float, str]:
    """The baselines of the hand-written probes (``probes/reductions_hand_loops.py``,
    ``probes/reductions_split_rows.py``): an input of ``shape`` and ``dtype`` on CUDA, its
    float32 softmax, and the us of a copy and of Inductor's softmax (static
    shapes, a fresh compile) as CUDA graph replays, with the generated code."""
    import torch
    from harness import median_call_s
    from torch._inductor import config
    from torch._inductor.utils import run_and_get_code

    x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype)) * 4
    ref = torch.softmax(x.float(), -1)
    copy_us = median_call_s("cuda", x.clone, cuda_graph=True) * 1e6
    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False):
        compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
        _, (code,) = run_and_get_code(compiled, x)
        default_us = median_call_s("cuda", lambda: compiled(x), cuda_graph=True) * 1e6
    return x, ref, copy_us, default_us, code


def code_sha(codes: list[str]) -> str:
    """A hash of a compile's generated code, less the numbering of its
    graphs (``# AOT ID``): arms of the same code differ only by noise."""
    text = "\n".join(codes)
    return hashlib.sha1(re.sub(r"(?m)^# AOT ID: .*$", "", text).encode()).hexdigest()


def code_file_name(
    op: str, rows: int, row: int, dtype_name: str, backward: bool, arm: str
) -> str:
    """The file an arm's generated code is kept in under ``--code-dir``."""
    pass_ = "forward_backward" if backward else "forward"
    return f"{op}_{rows}x{row}_{dtype_name}_{pass_}_{arm}.py"


def run_case(
    device: str,
    op: str,
    row: int,
    rows: int,
    dtype_name: str,
    backward: bool,
    arms: list[str],
    cuda_graph: bool = False,
    gpu_lock: str | None = None,
    rounds: int = 0,
    code_dir: str | None = None,
) -> dict[str, Any]:
    """One case, every arm.  With ``rounds`` (a GPU and ``cuda_graph``
    only), each arm's step is captured in a CUDA graph as it compiles and the
    arms are timed interleaved (:func:`time_interleaved`) after all of them
    compiled, instead of one after another as each compiles.  With
    ``code_dir``, each compiled arm's generated code is written there
    (:func:`code_file_name`): the kernels a case's times belong to."""
    import torch

    if rounds and not (device == "cuda" and cuda_graph):
        raise ValueError(
            "interleaved rounds time CUDA graph replays: they need a GPU and cuda_graph"
        )
    from harness import exclusive_device, median_call_s, shared_device
    from torch._inductor import fusion_report
    from torch._inductor.utils import run_and_get_code

    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    inputs = make_inputs(op, rows, row, dtype, device)
    fn = op_fn(op)
    reference_inputs = [inputs[0].float(), *inputs[1:]]
    expected = step_of(fn, reference_inputs, backward)()
    x = inputs[0]
    with exclusive_device(gpu_lock):
        copy_ways_s = {
            way: median_call_s(device, call, cuda_graph)
            for way, call in copy_ways(x).items()
        }
    copy_s = min(copy_ways_s.values())
    copy_bw = 2 * x.numel() * x.element_size() / copy_s
    nbytes = least_bytes(op, rows, row, x.element_size(), backward)
    case: dict[str, Any] = {
        "op": op,
        "row": row,
        "rows": rows,
        "dtype": dtype_name,
        "pass": "forward+backward" if backward else "forward",
        "bytes": nbytes,
        "copy_s": copy_s,
        "copy_ways_s": copy_ways_s,
        "timer": "cuda_graph" if cuda_graph else "stream",
        "arms": {},
    }
    if rounds:
        case["rounds"] = rounds
    steps: dict[str, tuple[Callable[[], Any], int]] = {}
    kept: list[Callable[[], Any]] = []
    for arm in arms:
        entry: dict[str, Any] = {}
        try:
            torch._dynamo.reset()
            patch = {"fx_graph_cache": False, **ARM_CONFIG.get(arm, {})}
            with torch._inductor.config.patch(patch):
                compiled = (
                    fn
                    if arm == "eager"
                    else torch.compile(fn, **ARM_COMPILE.get(arm, {}))
                )
                step = step_of(compiled, inputs, backward)
                start = time.perf_counter()
                with shared_device(gpu_lock), fusion_report.capture() as rep:
                    out, codes = run_and_get_code(step)
                entry["first_call_s"] = time.perf_counter() - start
                if codes:
                    entry["code_sha"] = code_sha(codes)
                    if code_dir:
                        path = Path(code_dir) / code_file_name(
                            op, rows, row, dtype_name, backward, arm
                        )
                        path.write_text("\n".join(codes))
                if rounds:
                    # captured now: the next arm's Dynamo reset would make
                    # this step compile again, under the config of the moment
                    # (its steps run on the GPU: no other process times then)
                    with shared_device(gpu_lock):
                        steps[arm] = timed_step(step)
                    # the compiled step outlives the graph launching its kernels
                    kept.append(step)
                else:
                    with exclusive_device(gpu_lock):
                        entry["s"] = median_call_s(device, step, cuda_graph)
            entry["max_abs_diff"] = float((out.float() - expected.float()).abs().max())
            if arm.startswith("one_pass"):
                entry["remarks"] = sorted(
                    {
                        r["reason"]
                        for g in rep.to_json()["graphs"]
                        for r in g["remarks"]
                        if r["stage"] == "one_pass_reduction"
                    }
                )
        except Exception as e:  # one failing arm must not lose the sweep
            entry["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        case["arms"][arm] = entry
    if steps:
        time_interleaved(case, steps, expected, device, rounds, gpu_lock)
    for entry in case["arms"].values():
        if "s" in entry:
            entry["fraction_of_copy"] = (nbytes / entry["s"]) / copy_bw
    default_code = case["arms"].get("default", {}).get("code_sha")
    for entry in case["arms"].values():
        if default_code and "code_sha" in entry:
            entry["same_code_as_default"] = entry["code_sha"] == default_code
    return case


# Steps captured in one CUDA graph for interleaved timing: a replay long
# enough (0.2-2 ms steps) that the graph's launch is a small part of it.
GRAPH_STEPS = 10


def timed_step(step: Callable[[], Any]) -> tuple[Callable[[], Any], int]:
    """What the rounds of :func:`time_interleaved` call for ``step`` and how
    many steps one call runs: the replay of :data:`GRAPH_STEPS` steps
    captured in one CUDA graph (``harness.capture_step``)."""
    from harness import capture_step

    replay, _, why = capture_step(lambda: [step() for _ in range(GRAPH_STEPS)][-1])
    if replay is None:
        raise RuntimeError(f"CUDA graph capture: {why}")
    return replay, GRAPH_STEPS


def time_interleaved(
    case: dict[str, Any],
    steps: dict[str, tuple[Callable[[], Any], int]],
    expected: Any,
    device: str,
    rounds: int,
    gpu_lock: str | None,
) -> None:
    """Time every compiled arm of ``case`` in ``rounds`` interleaved rounds
    (``harness.interleaved_rounds``: each round takes every arm in turn,
    starting one arm later than the last), for differences of a few percent
    that arms timed one after another, minutes apart, do not show.

    ``steps``: per arm, a call and the steps it runs (:func:`timed_step`),
    made as the arm compiled, so that nothing compiles between rounds
    (``graphs_compiled_in_rounds`` counts what did).  Per arm: ``s`` (the
    median of the rounds), ``round_s`` and ``spread`` ((max - min) / median
    of the rounds); the timed call's output is compared with the reference
    again after the rounds (``max_abs_diff_after_rounds``).
    """
    from harness import interleaved_rounds, spread_summary, step_timer
    from torch._dynamo.utils import counters

    graphs_before = counters["stats"]["unique_graphs"]
    measured = interleaved_rounds(
        {arm: call for arm, (call, _) in steps.items()},
        step_timer(device),
        rounds=rounds,
        per_round=3,
        lock=gpu_lock,
    )
    # 0 unless an arm compiled again in the rounds (it would be timed wrong)
    case["graphs_compiled_in_rounds"] = (
        counters["stats"]["unique_graphs"] - graphs_before
    )
    for arm, round_s in measured.items():
        call, per_call = steps[arm]
        summary = spread_summary([s / per_call for s in round_s])
        entry = case["arms"][arm]
        entry["s"] = summary["median"]
        entry["round_s"] = summary["rounds"]
        entry["spread"] = summary["spread"]
        out = call()
        entry["max_abs_diff_after_rounds"] = float(
            (out.float() - expected.float()).abs().max()
        )


def sweep(args: argparse.Namespace) -> dict[str, Any]:
    from harness import provenance

    cases = []
    deadline = time.monotonic() + args.deadline_s if args.deadline_s else None
    for op in args.ops:
        for dtype_name in args.dtypes:
            for backward in args.backward:
                for row in args.rows:
                    for rows in args.row_counts or [rows_for(row, args.total)]:
                        if deadline is not None and time.monotonic() > deadline:
                            return {"cases": cases, "stopped": "deadline"}
                        case = run_case(
                            args.device,
                            op,
                            row,
                            rows,
                            dtype_name,
                            backward,
                            args.arms,
                            args.cuda_graph,
                            args.gpu_lock,
                            args.rounds,
                            args.code_dir,
                        )
                        print(summary_line(case), flush=True)
                        cases.append(case)
                        if args.json:
                            write(args, cases)
    result = {"provenance": provenance(args.device), "cases": cases}
    return result


def summary_line(case: dict[str, Any]) -> str:
    parts = [
        f"{case['op']} {case['rows']}x{case['row']} {case['dtype']} {case['pass']}:"
        f" copy {case['copy_s'] * 1e6:.0f} us"
    ]
    for arm, e in case["arms"].items():
        if "s" in e:
            spread = (
                f", spread {e['spread']:.1%}" if e.get("spread") is not None else ""
            )
            parts.append(
                f"{arm} {e['s'] * 1e6:.0f} us ({e['fraction_of_copy']:.0%}{spread})"
            )
        else:
            parts.append(f"{arm} error")
    return ", ".join(parts)


def markdown(result: dict[str, Any]) -> str:
    cases = result["cases"]
    arms = [a for a in ARMS if any(a in c["arms"] for c in cases)]
    lines = [
        "# Softmax-class reductions: time and fraction of copy bandwidth",
        "",
        "Time in us (fraction of a device copy's bandwidth at the least bytes "
        "the op needs). `one_pass` lists its remark codes; (default's code): "
        "it generated the same code as default.",
        "",
        "| op | rows x row | dtype | pass | copy us | "
        + " | ".join(arms)
        + " | one_pass remarks |",
        "|---|---|---|---|---|" + "---|" * len(arms) + "---|",
    ]
    for c in cases:
        cells = []
        for arm in arms:
            e = c["arms"].get(arm, {})
            if "s" in e:
                cells.append(f"{e['s'] * 1e6:.0f} ({e['fraction_of_copy']:.0%})")
            else:
                cells.append("error" if "error" in e else "")
        one_pass = c["arms"].get("one_pass", {})
        remarks = ", ".join(one_pass.get("remarks", []))
        if one_pass.get("same_code_as_default"):
            remarks += " (default's code)"

        lines.append(
            f"| {c['op']} | {c['rows']}x{c['row']} | {c['dtype']} | {c['pass']} | "
            f"{c['copy_s'] * 1e6:.0f} | " + " | ".join(cells) + f" | {remarks} |"
        )
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    """Fraction of copy bandwidth against row length, one line per arm and
    panel per (op, dtype, pass)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for c in result["cases"]:
        panels.setdefault((c["op"], c["dtype"], c["pass"]), []).append(c)
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(7, 3.2 * len(panels)), squeeze=False
    )
    for ax, (key, cases) in zip(axes[:, 0], sorted(panels.items())):
        for arm in ARMS:
            points = sorted(
                (c["row"], c["arms"][arm]["fraction_of_copy"])
                for c in cases
                if "s" in c["arms"].get(arm, {})
            )
            if points:
                ax.plot(*zip(*points), marker="o", label=arm)
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.2)
        ax.axhline(0.9, color="grey", linestyle=":")
        ax.set_title(" ".join(key))
        ax.set_xlabel("row length")
        ax.set_ylabel("fraction of copy")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def write(args: argparse.Namespace, cases: list[dict[str, Any]]) -> None:
    Path(args.json).write_text(json.dumps({"cases": cases}, indent=1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--ops", type=lambda s: s.split(","), default=list(OPS))
    p.add_argument("--dtypes", type=lambda s: s.split(","), default=["bfloat16"])
    p.add_argument(
        "--rows",
        type=lambda s: [int(v) for v in s.split(",")],
        default=list(ROW_LENGTHS),
        help="row lengths",
    )
    p.add_argument(
        "--row-counts",
        type=lambda s: [int(v) for v in s.split(",")],
        default=None,
        help="row counts (default: --total elements / row length)",
    )
    p.add_argument("--total", type=int, default=1 << 27, help="elements per case")
    p.add_argument(
        "--pass",
        dest="backward",
        type=lambda s: [v == "backward" for v in s.split(",")],
        default=[False],
        help="forward, backward (forward+backward) or both, comma-separated",
    )
    p.add_argument(
        "--arms",
        type=lambda s: s.split(","),
        # the *_vector_accumulators arms only where asked (2.14.1 has no
        # option), cooperative too (it may hang where its blocks cannot all be
        # resident), and the rules' counterfactuals (sums and rows of
        # 4-byte elements on chip)
        default=[
            a
            for a in ARMS
            if not a.endswith("_vector_accumulators")
            and a
            not in (
                "cooperative",
                "one_pass_sums_on_chip",
                "one_pass_wide_rows_on_chip",
            )
        ],
    )
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="time replays of a CUDA graph (do_bench_cudagraph), not stream launches",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=0,
        help="with --cuda-graph on a GPU: capture each arm of a case in a CUDA "
        "graph as it compiles, then time the arms interleaved in this many "
        "rounds; 0: one after another as each compiles",
    )
    p.add_argument("--deadline-s", type=float, default=0.0)
    p.add_argument(
        "--gpu-lock",
        help="a lock file shared by processes timing on one GPU: sweeps side "
        "by side compile in parallel and time one at a time",
    )
    p.add_argument("--json")
    p.add_argument("--plot", action="store_true")
    p.add_argument(
        "--code-dir",
        help="write each compiled arm's generated code into this folder "
        "(made if missing), a file a case and arm",
    )
    p.add_argument(
        "--merge",
        nargs="+",
        metavar="RESULT_JSON",
        help="no sweep: merge these results (a later file's case replaces an "
        "earlier one of the same op, shape, dtype and pass) into --json",
    )
    args = p.parse_args(argv)
    if args.merge:
        if not args.json:
            p.error("--merge writes --json (and its .md, .png with --plot)")
        result = merge([json.loads(Path(f).read_text()) for f in args.merge])
        write_result(args, result)
        return 0
    if args.rounds and not (args.device == "cuda" and args.cuda_graph):
        p.error(
            "--rounds times CUDA graph replays: use it with --device cuda --cuda-graph"
        )
    bad = [a for a in args.arms if a not in ARMS] + [
        o for o in args.ops if o not in OPS
    ]
    if bad:
        p.error(f"unknown arm or op: {', '.join(bad)} (arms: {ARMS}; ops: {OPS})")
    if args.code_dir:
        Path(args.code_dir).mkdir(parents=True, exist_ok=True)
    result = sweep(args)
    write_result(args, result)
    return 0


def write_result(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json:
        out = Path(args.json)
        out.write_text(json.dumps(result, indent=1))
        out.with_suffix(".md").write_text(markdown(result))
        if args.plot:
            plot(result, out.with_suffix(".png"))
    print(markdown(result))


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One result of several sweeps: a case of a later result replaces the
    earlier one of the same op, shape, dtype and pass (a re-measurement);
    cases stay in the order of their first appearance."""
    cases: dict[tuple[Any, ...], dict[str, Any]] = {}
    for result in results:
        for case in result["cases"]:
            key = (case["op"], case["rows"], case["row"], case["dtype"], case["pass"])
            cases[key] = case
    return {"cases": list(cases.values())}


if __name__ == "__main__":
    raise SystemExit(main())
