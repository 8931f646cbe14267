"""How much of torch.compile's speed-up is fusion? The ablation over the model set.

Arms (``--arms``), each a ``torch.compile`` under Inductor config switches
(``torch/_inductor/fusion_ablation.py``), against eager:

=============  ===========================================================
eager          no compile
no_opt         ``fusion_only`` + ``no_fusion``: compiled, nothing optimized
no_fusion      every optimization but fusion (``no_fusion``)
fusion_only    fusion and nothing else (``fusion_only``)
default        Inductor as shipped
fx_fusion      the FX fusion arm (``backend="fx_fusion"``): fusion by an
               independent torch.fx pass with its own code generation,
               everything else as eager aten ops
=============  ===========================================================

Upstream's optional fusion switches, each on top of ``default``, are arms too
(named in ``--arms``, not run by default): ``combo_kernels``,
``benchmark_combo_kernel`` (combo kernels kept only where benchmarked
faster), ``aggressive_fusion``, ``benchmark_fusion``, ``max_autotune_gemm``
(GEMM templates with epilogue fusion; convolutions stay on ATen) and
``no_mix_order_reduction`` (the one fusion switch on by default, turned off).

Per model, mode (inference; training step = forward + backward for the
models in ``--train``) and arm: the median step time (CUDA events on a GPU,
``perf_counter`` on the CPU; warm-up excluded; ``--repeats`` steps, at least
50 on the GPU), the kernels launched per step (``torch.profiler``, GPU only),
the compile time (the first call, FX graph and AOTAutograd caches off so every
arm lowers and schedules; the kernel code cache is shared), the peak memory of
the timed steps (GPU), and whether the result equals eager.  One process per
model; arms in a fixed order.

    python benchmarks/fusion/ablation.py --device cuda --shapes full \\
        --train resnet18,bert --json benchmarks/results/ablation_h100.json
    python benchmarks/fusion/ablation.py --plot benchmarks/results/ablation_h100.json

The second form writes the Markdown table and the speed-up plot (PNG,
matplotlib) next to the JSON.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ARMS: dict[str, dict[str, bool] | None] = {
    "eager": None,
    "no_opt": {"fusion_only": True, "no_fusion": True},
    "no_fusion": {"no_fusion": True},
    "fusion_only": {"fusion_only": True},
    "default": {},
    "fx_fusion": {},
    # Upstream's optional fusion switches, competitors of a new fusion pass.
    "combo_kernels": {"combo_kernels": True},
    "benchmark_combo_kernel": {"combo_kernels": True, "benchmark_combo_kernel": True},
    "aggressive_fusion": {"aggressive_fusion": True},
    "benchmark_fusion": {"benchmark_fusion": True},
    "max_autotune_gemm": {"max_autotune_gemm": True},
    "no_mix_order_reduction": {"triton.mix_order_reduction": False},
    # The new pass (torch/_inductor/launch_bound_combo.py); ``launch_bound_combo:N``
    # sets its limit to N MiB (see arm_switches).
    "launch_bound_combo": {"launch_bound_combo_kernels": True},
}
# What a plain run measures: the ablation itself.
ABLATION_ARMS = ("eager", "no_opt", "no_fusion", "fusion_only", "default", "fx_fusion")
# Arms compiled by another backend than Inductor.
BACKENDS = {"fx_fusion": "fx_fusion"}


def arm_switches(arm: str) -> dict[str, Any] | None:
    """The config of an arm; ``launch_bound_combo:N`` is the pass with an N MiB limit."""
    base, _, mib = arm.partition(":")
    if base not in ARMS or (mib and base != "launch_bound_combo"):
        raise KeyError(arm)
    switches = ARMS[base]
    if mib:
        switches = {**switches, "launch_bound_combo_max_bytes": int(float(mib) * 2**20)}
    return switches


def known_arm(arm: str) -> bool:
    try:
        arm_switches(arm)
    except (KeyError, ValueError):
        return False
    return True


def run_model(
    name: str,
    device: str,
    shapes: str,
    train: bool,
    repeats: int,
    arms,
    gpu_lock: str | None = None,
):
    """All arms of one model and mode, in this process; timings under
    ``gpu_lock`` when given (see ``measure.exclusive_device``)."""
    import torch
    from measure import exclusive_device, kernel_profile, matches, step_timer
    from models import build, compile_config, for_training, loss_of

    time_steps = step_timer(device)
    rows = []
    model, inputs = build(name, device, shapes)
    if train:
        inputs = for_training(model, inputs)
    with torch.no_grad():
        expected = model(*inputs)

    def compiled_step(arm: str):
        switches = arm_switches(arm)
        torch._dynamo.reset()
        fn = (
            model
            if switches is None
            else torch.compile(model, backend=BACKENDS.get(arm, "inductor"))
        )

        def step(fn=fn):
            if train:
                model.zero_grad(set_to_none=True)
                out = fn(*inputs)
                loss_of(out).backward()
                return out
            with torch.no_grad():
                return fn(*inputs)

        return step, switches

    for arm in arms:
        step, switches = compiled_step(arm)
        with torch._inductor.config.patch(switches or {}), compile_config(name):
            start = time.perf_counter()
            out = step()  # compiles (forward and backward)
            if device == "cuda":
                torch.cuda.synchronize()
            compile_s = time.perf_counter() - start if switches is not None else 0.0
            same, max_diff = matches(out.detach() if train else out, expected)
            with exclusive_device(gpu_lock):
                for _ in range(10):
                    step()
                if device == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                times = time_steps(step, repeats)
                peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
        rows.append(
            {
                "model": name,
                "mode": "training" if train else "inference",
                "arm": arm,
                "median_s": statistics.median(times),
                "repeats": len(times),
                "launches_per_step": None,
                "gpu_kernel_s": None,
                "compile_s": round(compile_s, 2),
                "peak_bytes": peak,
                "max_abs_diff": max_diff,
                "matches_eager": same,
            }
        )
    # Profiled only once every arm is timed: a torch.profiler session leaves
    # the process's later launches slower (measured on the H100: the first
    # arm timed was the fastest whatever it was), so each arm is compiled
    # again here and profiled.
    if device == "cuda":
        for row in rows:
            step, switches = compiled_step(row["arm"])
            with torch._inductor.config.patch(switches or {}), compile_config(name):
                for _ in range(3):
                    step()
                with exclusive_device(gpu_lock):
                    profile = kernel_profile(step, device) or {}
            row["launches_per_step"] = profile.get("launches")
            row["gpu_kernel_s"] = profile.get("gpu_s")
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


def write_report(json_path: Path) -> None:
    """The Markdown table and the speed-up plot, from a results JSON."""
    rows = json.loads(json_path.read_text())["rows"]
    keyed = {(r["model"], r["mode"], r["arm"]): r for r in rows}
    cases = list(dict.fromkeys((r["model"], r["mode"]) for r in rows))
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    compiled = [a for a in arms if a != "eager"]
    lines = [
        "| model | mode | "
        + " | ".join(f"{a} ms" for a in arms)
        + " | "
        + " | ".join(f"{a} x" for a in compiled)
        + f" | fusion share | launches ({'/'.join(arms)}) |",
        "|---|---|" + "---|" * (len(arms) + len(compiled) + 2),
    ]
    shares = []
    for model, mode in cases:
        get = {a: keyed.get((model, mode, a)) for a in arms}.get
        eager = get("eager")
        cells = [f"{get(a)['median_s'] * 1e3:.3f}" if get(a) else "-" for a in arms]
        speedups = [
            f"{eager['median_s'] / get(a)['median_s']:.2f}"
            + ("" if get(a)["matches_eager"] else " (!)")
            if eager and get(a)
            else "-"
            for a in compiled
        ]
        share = fusion_share(eager, get("fusion_only"), get("default"))
        if share is not None:
            shares.append(share)
        launches = "/".join(
            f"{get(a)['launches_per_step']:.0f}"
            if get(a) and get(a)["launches_per_step"] is not None
            else "-"
            for a in arms
        )
        lines.append(
            f"| {model} | {mode} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(speedups)
            + f" | {'-' if share is None else f'{share:.0%}'} | {launches} |"
        )
    if shares:
        lines.append("")
        lines.append(
            f"Fusion share of the speed-up, median over {len(shares)} cases: "
            f"{statistics.median(shares):.0%}"
        )
    md = json_path.with_suffix(".md")
    md.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    _plot(keyed, cases, compiled, json_path.with_suffix(".png"))


def fusion_share(eager, fusion_only, default) -> float | None:
    """ln(speed-up of fusion alone) / ln(speed-up of default), both over eager.

    1 means fusion alone reaches the default speed-up; 0 means fusion alone is
    as fast as eager.  Undefined when the default is not faster than eager.
    """
    if not (eager and fusion_only and default):
        return None
    total = math.log(eager["median_s"] / default["median_s"])
    if total <= 0.01:
        return None
    return math.log(eager["median_s"] / fusion_only["median_s"]) / total


def _plot(keyed, cases, arms, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(cases)), 4.5))
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        values = []
        for model, mode in cases:
            eager, row = (
                keyed.get((model, mode, "eager")),
                keyed.get((model, mode, arm)),
            )
            values.append(eager["median_s"] / row["median_s"] if eager and row else 0)
        ax.bar([c + i * width for c in range(len(cases))], values, width, label=arm)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([c + 0.4 - width / 2 for c in range(len(cases))])
    ax.set_xticklabels(
        [f"{m}\n{'train' if mode == 'training' else 'infer'}" for m, mode in cases],
        rotation=60,
        ha="right",
        fontsize=8,
    )
    ax.set_ylabel("speed-up over eager (median step time)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


def _write(path, device, shapes, repeats, rows, failures) -> None:
    from measure import provenance

    result = {
        **provenance(device),
        "shapes": shapes,
        "repeats": repeats,
        "rows": rows,
        "failures": [{"model": n, "mode": m, "stderr": e} for n, m, e in failures],
    }
    Path(path).write_text(json.dumps(result, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", default=None, help="cpu or cuda (default: cuda if present)"
    )
    parser.add_argument("--shapes", choices=("ci", "full"), default="full")
    parser.add_argument("--models", default="all")
    parser.add_argument(
        "--train", default="resnet18,bert", help="models also timed as a training step"
    )
    parser.add_argument(
        "--arms", default=",".join(ABLATION_ARMS), help=f"from {', '.join(ARMS)}"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="models compiled side by side (timed one at a time under --gpu-lock)",
    )
    parser.add_argument(
        "--gpu-lock", help="a lock file shared by processes timing on one GPU"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed steps (default 50 on GPU, 10 on CPU)",
    )
    parser.add_argument("--json", help="write the results here (and the .md, .png)")
    parser.add_argument(
        "--plot", help="only write the table and plot of this results JSON"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.plot:
        write_report(Path(args.plot))
        return 0
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here")
    repeats = args.repeats or (50 if device == "cuda" else 10)
    arms = args.arms.split(",")
    unknown = [a for a in arms if not known_arm(a)]
    if unknown:
        raise SystemExit(f"unknown arms {unknown}: choose from {', '.join(ARMS)}")
    if args.child:
        name, mode = args.child
        rows = run_model(
            name, device, args.shapes, mode == "training", repeats, arms, args.gpu_lock
        )
        print("ROWS " + json.dumps(rows))
        return 0

    from models import MODELS

    names = list(MODELS) if args.models == "all" else args.models.split(",")
    train = set(args.train.split(",")) if args.train else set()
    cases = [(n, "inference") for n in names] + [
        (n, "training") for n in names if n in train
    ]
    env = dict(
        os.environ,
        TORCHINDUCTOR_FX_GRAPH_CACHE="0",
        TORCHINDUCTOR_AUTOGRAD_CACHE="0",
        HF_HUB_OFFLINE="1",
    )
    if args.jobs > 1 and not args.gpu_lock:
        raise SystemExit("--jobs N needs --gpu-lock FILE: timings must not overlap")

    def run_case(case: tuple[str, str]) -> tuple[str, str, subprocess.CompletedProcess]:
        name, mode = case
        cmd = [sys.executable, __file__, "--device", device, "--shapes", args.shapes]
        cmd += ["--arms", args.arms, "--repeats", str(repeats), "--child", name, mode]
        if args.gpu_lock:
            cmd += ["--gpu-lock", args.gpu_lock]
        print(f"{name} {mode} ...", file=sys.stderr, flush=True)
        return name, mode, subprocess.run(cmd, env=env, capture_output=True, text=True)

    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for name, mode, proc in pool.map(run_case, cases):
            found = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROWS ")]
            if proc.returncode != 0 or not found:
                failures.append((name, mode, proc.stderr[-2000:]))
                print(proc.stderr[-2000:], file=sys.stderr)
            else:
                results[(name, mode)] = json.loads(found[-1][5:])
            # After every case: a run cut short keeps what it measured.
            rows = [r for c in cases for r in results.get(c, [])]
            if args.json:
                _write(args.json, device, args.shapes, repeats, rows, failures)
    if args.json:
        _write(args.json, device, args.shapes, repeats, rows, failures)
    for r in rows:
        print(
            f"{r['model']:20} {r['mode']:9} {r['arm']:12} {r['median_s'] * 1e3:9.3f} ms "
            f"launches {r['launches_per_step']} compile {r['compile_s']:.1f} s "
            f"{'ok' if r['matches_eager'] else 'DIFF ' + str(r['max_abs_diff'])}"
        )
    if failures:
        print(f"failed: {[(n, m) for n, m, _ in failures]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
