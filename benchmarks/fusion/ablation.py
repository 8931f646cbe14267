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
        --train resnet18,bert --json benchmarks/results/ablation/ablation_rounds_h100.json
    python benchmarks/fusion/ablation.py --plot benchmarks/results/ablation/ablation_rounds_h100.json

Leave one out (``--arms eager,leave_one_out``): ``default-OPTION`` is
``default`` with the one option OPTION set as ``fusion_only`` holds it, one
arm per held option that differs from its value in effect; the step time it
adds against ``default`` is that optimization's part of the gap between
``fusion_only`` and ``default`` (the report's "leave one out" table).

The second form writes the Markdown table and the speed-up plot (PNG,
matplotlib) next to the JSON.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys
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


# ``default-OPTION``: Inductor as shipped with one option that fusion_only
# holds set to the value fusion_only gives it (leave one out): the step time
# it adds against ``default`` is that optimization's part of the gap between
# fusion_only and default.
LEAVE_ONE_OUT = "default-"
FUNCTORCH = "functorch."


def _held_by_fusion_only() -> dict[str, Any]:
    """The options fusion_only holds on this torch release, with the value it
    gives each (``torch/_inductor/fusion_ablation.py``)."""
    from torch._inductor import fusion_ablation

    return {
        h.option: h.value
        for h in fusion_ablation.for_this_release(fusion_ablation.FUSION_ONLY)
    }


def _current(option: str) -> Any:
    """The value in effect of an option named as fusion_ablation names it."""
    from torch._inductor import fusion_ablation

    module, name = fusion_ablation._config_of(option)
    return getattr(module, name)


def leave_one_out_arms(device: str) -> list[str]:
    """``default-OPTION`` for every option fusion_only holds whose held value
    differs from the value in effect (holding the others changes nothing);
    the C++ backend's options only on the CPU."""
    arms = []
    for option, value in _held_by_fusion_only().items():
        if device != "cpu" and option.startswith("cpp."):
            continue
        if _current(option) != value:
            arms.append(LEAVE_ONE_OUT + option)
    return arms


def expand_arms(spec: str, device: str) -> list[str]:
    """The arms of ``--arms``: ``leave_one_out`` stands for default,
    fusion_only and every ``default-OPTION`` arm (after eager, when named)."""
    arms: list[str] = []
    for arm in spec.split(","):
        if arm == "leave_one_out":
            arms += ["fusion_only", "default", *leave_one_out_arms(device)]
        else:
            arms.append(arm)
    return list(dict.fromkeys(arms))


def arm_switches(arm: str) -> dict[str, Any] | None:
    """The config of an arm; ``launch_bound_combo:N`` is the pass with an N MiB
    limit; ``default-OPTION`` is default with OPTION as fusion_only holds it."""
    if arm.startswith(LEAVE_ONE_OUT):
        option = arm[len(LEAVE_ONE_OUT) :]
        held = _held_by_fusion_only()
        if option not in held:
            raise KeyError(arm)
        return {option: held[option]}
    base, _, mib = arm.partition(":")
    if base not in ARMS or (mib and base != "launch_bound_combo"):
        raise KeyError(arm)
    switches = ARMS[base]
    if mib:
        switches = {**switches, "launch_bound_combo_max_bytes": int(float(mib) * 2**20)}
    return switches


def split_switches(
    switches: dict[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An arm's switches as (Inductor options, ``torch._functorch.config``
    changes): ``torch.compile(options=...)`` takes only Inductor's."""
    inductor, functorch = {}, {}
    for key, value in (switches or {}).items():
        if key.startswith(FUNCTORCH):
            functorch[key[len(FUNCTORCH) :]] = value
        else:
            inductor[key] = value
    return inductor, functorch


def known_arm(arm: str) -> bool:
    try:
        arm_switches(arm)
    except (KeyError, ValueError):
        return False
    return True


# The arms whose config lets Inductor capture CUDA graphs itself
# (``triton.cudagraphs``): fusion_only holds the option off (it is not
# fusion), so no_opt and fusion_only cannot be timed that way.
INDUCTOR_CUDAGRAPH_ARMS = ("no_fusion", "default")
# Rounds of the interleaved comparison on a GPU: wall-clock and CUDA-graph
# steps, then the profiler's kernel time.
GPU_ROUNDS, GPU_STEPS_PER_ROUND = 5, 20
PROFILE_ROUNDS, PROFILE_STEPS_PER_ROUND = 3, 2


def run_model(
    name: str,
    device: str,
    shapes: str,
    train: bool,
    repeats: int,
    arms,
    gpu_lock: str | None = None,
    rounds: int | None = None,
):
    """:func:`_run_arms` with Dynamo's recompile limit raised for its duration:
    every arm keeps its own compiled code, so Dynamo holds one cache entry per
    arm (and per Inductor CUDA-graph variant) of each frame."""
    import torch

    limit = max(torch._dynamo.config.recompile_limit, 4 * len(arms) + 8)
    with torch._dynamo.config.patch(recompile_limit=limit):
        return _run_arms(name, device, shapes, train, repeats, arms, gpu_lock, rounds)


def _run_arms(
    name: str,
    device: str,
    shapes: str,
    train: bool,
    repeats: int,
    arms,
    gpu_lock: str | None,
    rounds: int | None,
):
    """All arms of one model and mode, in this process, compared round by round.

    Every arm is compiled first (each its own ``torch.compile``, its switches
    passed as ``options`` so the arms live side by side), checked against
    eager, and on a GPU captured whole into a CUDA graph; then all arms are
    timed in ``rounds`` interleaved rounds of ``repeats // rounds`` steps
    (timings under ``gpu_lock`` when given, see ``harness.exclusive_device``).
    Measures per arm:

    * ``wall``: the step between CUDA events (``perf_counter`` on the CPU),
      without CUDA graphs: host launch time included, host-bound at these
      shapes and noisy;
    * ``cuda_graph`` (GPU): the whole step (Dynamo's guards, the compiled
      graphs and, in training, the backward) captured once with
      ``torch.cuda.graph`` and replayed: the same method for every arm,
      eager included;
    * ``inductor_cudagraphs`` (GPU, arms in ``INDUCTOR_CUDAGRAPH_ARMS``): the
      arm compiled again with ``triton.cudagraphs`` (what ``mode=
      "reduce-overhead"`` sets), Inductor's own CUDA graphs: the check of
      the whole-step capture where the arm allows the option;
    * ``gpu_kernel`` (GPU): the summed kernel durations of a step in a
      profiler trace (``harness.kernel_time_rounds``), taken after all
      timing, since a profiler session slows the launches after it.
    """
    import torch
    import torch._functorch.config
    import torch._inductor.metrics
    from harness import (
        build_model,
        capture_step,
        first_call,
        interleaved_rounds,
        kernel_time_rounds,
        matches,
        model_step,
        shared_device,
        spread_summary,
        step_timer,
    )
    from models import compile_config

    time_steps = step_timer(device)
    gpu = device == "cuda"
    rounds = rounds or (GPU_ROUNDS if gpu else 2)
    per_round = max(1, repeats // rounds)
    torch._dynamo.reset()
    model, inputs = build_model(name, device, shapes, train)
    with torch.no_grad():
        expected = model(*inputs)

    def make_step(arm: str, cudagraphs: bool = False):
        switches = arm_switches(arm)
        if switches is None:
            fn = model
        elif arm in BACKENDS:
            fn = torch.compile(model, backend=BACKENDS[arm])
        else:
            options, _ = split_switches(switches)
            if cudagraphs:
                options["triton.cudagraphs"] = True
            fn = torch.compile(model, options=options or None)
        return model_step(fn, model, inputs, train, mark_cudagraph_step=cudagraphs)

    def compile_and_check(arm: str, step):
        """Compile (forward and backward) and check the result against eager:
        ``(compile seconds, kernels generated, (matches, max |diff|))``."""
        kernels = torch._inductor.metrics.generated_kernel_count
        # AOTAutograd reads its config while compiling (the first call).
        _, functorch = split_switches(arm_switches(arm))
        with (
            shared_device(gpu_lock),
            compile_config(name),
            torch._functorch.config.patch(functorch),
        ):
            out, seconds = first_call(step, device)
        compile_s = seconds if arm != "eager" else 0.0
        kernels = torch._inductor.metrics.generated_kernel_count - kernels
        return compile_s, kernels, matches(out.detach() if train else out, expected)

    def compiled_graphs() -> int:
        return torch._dynamo.utils.counters["stats"]["unique_graphs"]

    rows: dict[str, dict[str, Any]] = {}
    wall_steps: dict[str, Any] = {}
    graph_steps: dict[str, Any] = {}
    for arm in arms:
        step = make_step(arm)
        compile_s, kernels, (same, max_diff) = compile_and_check(arm, step)
        wall_steps[arm] = step
        row = rows[arm] = {
            "model": name,
            "mode": "training" if train else "inference",
            "arm": arm,
            "compile_s": round(compile_s, 2),
            # Inductor kernels generated by this arm's compile (an arm without
            # fusion generates more); not comparable under max-autotune.
            "generated_kernels": kernels,
            "max_abs_diff": max_diff,
            "matches_eager": same,
        }
        if not gpu:
            continue
        # Peak memory of one step above what is already resident (the other
        # arms' code, weights and graph pools).
        torch.cuda.synchronize()
        resident = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        row["peak_bytes"] = torch.cuda.max_memory_allocated() - resident
        replay, out, why = capture_step(step)
        row["cuda_graph_error"] = why
        if replay is not None:
            replay()
            torch.cuda.synchronize()
            row["cuda_graph_matches_eager"] = matches(
                out.detach() if train else out, expected
            )[0]
            graph_steps[f"{arm}/cuda_graph"] = replay
        if arm in INDUCTOR_CUDAGRAPH_ARMS:
            step = make_step(arm, cudagraphs=True)
            compile_s, _, (same, _) = compile_and_check(arm, step)
            row["inductor_cudagraphs_compile_s"] = round(compile_s, 2)
            row["inductor_cudagraphs_matches_eager"] = same
            graph_steps[f"{arm}/inductor_cudagraphs"] = step

    for step in (*wall_steps.values(), *graph_steps.values()):
        for _ in range(3 if gpu else 1):
            step()
    if gpu:
        torch.cuda.synchronize()
    # Every arm ran warm above: a frame evaluated during timing (a guard that
    # failed, a cache entry evicted) would time a compile.
    compiled_before = compiled_graphs()
    timed = interleaved_rounds(
        {**{f"{a}/wall": s for a, s in wall_steps.items()}, **graph_steps},
        time_steps,
        rounds,
        per_round,
        gpu_lock,
    )
    for key, round_medians in timed.items():
        arm, measure = key.split("/")
        summary = spread_summary(round_medians)
        rows[arm][f"{measure}_s"] = summary["median"]
        rows[arm][f"{measure}_spread"] = summary["spread"]
        rows[arm][f"{measure}_rounds"] = summary["rounds"]
    if gpu:
        profiled = kernel_time_rounds(
            wall_steps, PROFILE_ROUNDS, PROFILE_STEPS_PER_ROUND, gpu_lock
        )
        for arm, prof in profiled.items():
            row = rows[arm]
            row["gpu_kernel_s"] = prof["gpu_s"]["median"]
            row["gpu_kernel_spread"] = prof["gpu_s"]["spread"]
            row["gpu_kernel_rounds"] = prof["gpu_s"]["rounds"]
            row["launches_per_step"] = prof["launches"]
            row["top_kernels"] = prof["kernels"]
            row["unattributed_kernel_s"] = prof["unattributed_s"]
    recompiled = compiled_graphs() - compiled_before
    out_rows = []
    for arm in arms:
        row = rows[arm]
        # The wall-clock step under the name earlier results and readers use.
        row["median_s"] = row.get("wall_s")
        row["repeats"] = per_round * rounds
        row["rounds"] = rounds
        row["frames_compiled_while_timing"] = recompiled
        row.setdefault("launches_per_step", None)
        row.setdefault("gpu_kernel_s", None)
        out_rows.append(row)
        print(json.dumps(row), flush=True)
    return out_rows


def _write(path, device, shapes, repeats, rows, failures) -> None:
    from harness import provenance

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
        "--arms",
        default=",".join(ABLATION_ARMS),
        help=f"from {', '.join(ARMS)}; default-OPTION (default with one option "
        "as fusion_only holds it); leave_one_out (fusion_only, default and every "
        "default-OPTION)",
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
    parser.add_argument(
        "--recorded",
        action="append",
        help="with --plot: an earlier run's JSON to compare with (repeatable)",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.plot:
        from ablation_report import write_report

        write_report(Path(args.plot), [Path(p) for p in args.recorded or ()])
        return 0
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here")
    repeats = args.repeats or (50 if device == "cuda" else 10)
    arms = expand_arms(args.arms, device)
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
    from harness import child_env

    env = child_env()
    if args.jobs > 1 and not args.gpu_lock:
        raise SystemExit("--jobs N needs --gpu-lock FILE: timings must not overlap")

    def run_case(case: tuple[str, str]) -> tuple[str, str, subprocess.CompletedProcess]:
        name, mode = case
        cmd = [sys.executable, __file__, "--device", device, "--shapes", args.shapes]
        cmd += ["--arms", ",".join(arms), "--repeats", str(repeats)]
        cmd += ["--child", name, mode]
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
