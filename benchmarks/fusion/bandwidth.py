"""Memory-bound micro-benchmarks: the bandwidth each compiled arm achieves.

At the study's shapes the micro-benchmarks (about a million elements) take a
few microseconds on an H100, so their step time is launch overhead, not
memory traffic.  Here each runs at a size where it moves hundreds of
megabytes, and every arm of ``ablation.py`` (eager, Inductor fusion-only,
Inductor default, the FX fusion arm, upstream's optional fusion switches) is
timed on the kernels alone:

* time: ``triton.testing.do_bench`` median on a GPU (``perf_counter`` median
  on the CPU), after the first call compiled;
* bytes: the least traffic the computation needs, every input read once and
  every output written once (what a perfectly fused kernel moves);
* achieved bandwidth: bytes / time, next to a device-to-device copy of the
  same size measured alike (the practical ceiling);
* throughput relative to Inductor fusion-only (the FX arm's goal is 90%).

``--host-path`` measures the other end: sin+cos of an 8-element tensor, where
a call's time is its host path (guards, wrappers, the kernel launch): the
median over rounds of back-to-back calls, the arms interleaved.

    python benchmarks/fusion/bandwidth.py --device cuda \\
        --json benchmarks/results/ablation/bandwidth_h100.json
    python benchmarks/fusion/bandwidth.py --device cpu --host-path \
        --arms eager,default,fx_fusion --json benchmarks/results/ablation/host_path_cpu.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# name -> (input shape on a GPU, on the CPU); each moves 256-512 MB on a GPU.
CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "sin_cos": ((1 << 26,), (1 << 20,)),
    "softmax": ((32768, 4096), (512, 1024)),
    "layer_norm_gelu": ((32, 2048, 1024), (4, 128, 1024)),
}
DEFAULT_ARMS = "eager,fusion_only,default,fx_fusion"


def module_of(name: str) -> Any:
    import models

    return {
        "sin_cos": models.SinCos,
        "softmax": models.Softmax,
        "layer_norm_gelu": lambda: models.LayerNormGelu(1024),
    }[name]()


def tensor_bytes(value: Any) -> int:
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    return sum(tensor_bytes(v) for v in value)


def copy_bandwidth(device: str, nbytes: int) -> float:
    """Bytes per second of a device-to-device copy of ``nbytes``."""
    import torch

    src = torch.empty(nbytes // 4, device=device)
    dst = torch.empty_like(src)
    from harness import call_timer

    return 2 * nbytes / call_timer(device)(lambda: dst.copy_(src))


def run(
    device: str, arms: list[str], dtype_name: str, gpu_lock: str | None = None
) -> dict[str, Any]:
    import torch
    import torch._functorch.config
    from ablation import arm_switches, BACKENDS, split_switches
    from harness import call_timer, exclusive_device, first_call, matches, provenance

    dtype = getattr(torch, dtype_name)
    median_s = call_timer(device)
    rows = []
    largest = 0
    for name, (gpu_shape, cpu_shape) in CASES.items():
        torch.manual_seed(0)
        shape = gpu_shape if device == "cuda" else cpu_shape
        model = module_of(name).to(device=device, dtype=dtype).eval()
        x = torch.randn(shape, device=device, dtype=dtype)
        with torch.no_grad():
            expected = model(x)
        nbytes = tensor_bytes([x, expected, *model.parameters()])
        largest = max(largest, tensor_bytes(x))
        for arm in arms:
            torch._dynamo.reset()
            switches = arm_switches(arm)
            inductor, functorch = split_switches(switches)
            fn = (
                model
                if switches is None
                else torch.compile(model, backend=BACKENDS.get(arm, "inductor"))
            )
            with (
                torch.no_grad(),
                torch._inductor.config.patch(inductor),
                torch._functorch.config.patch(functorch),
            ):
                out, compile_s = first_call(lambda fn=fn, x=x: fn(x), device)
                same, diff = matches(out, expected)
                with exclusive_device(gpu_lock):
                    seconds = median_s(lambda fn=fn, x=x: fn(x))
            rows.append(
                {
                    "case": name,
                    "shape": list(shape),
                    "dtype": dtype_name,
                    "arm": arm,
                    "median_s": seconds,
                    "bytes": nbytes,
                    "bandwidth_gbs": nbytes / seconds / 1e9,
                    "compile_s": round(compile_s if switches is not None else 0, 2),
                    "matches_eager": same,
                    "max_abs_diff": diff,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    for r in rows:
        base = next(
            (o for o in rows if o["case"] == r["case"] and o["arm"] == "fusion_only"),
            None,
        )
        r["throughput_vs_fusion_only"] = (
            base["median_s"] / r["median_s"] if base else None
        )
    return {
        **provenance(device),
        "timing": "triton.testing.do_bench median"
        if device == "cuda"
        else "perf_counter median of 20",
        "copy_bandwidth_gbs": copy_bandwidth(device, largest) / 1e9,
        "rows": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Device: {result['device']}, torch {result['torch']}, {result['fork']}; "
        f"timing: {result['timing']}; device-to-device copy: "
        f"{result['copy_bandwidth_gbs']:.0f} GB/s.",
        "",
        "| case | shape | dtype | arm | time us | GB/s | % of copy | vs fusion_only "
        "| compile s | matches eager |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        ratio = r["throughput_vs_fusion_only"]
        lines.append(
            f"| {r['case']} | {'x'.join(map(str, r['shape']))} | {r['dtype']} "
            f"| {r['arm']} | {r['median_s'] * 1e6:.1f} | {r['bandwidth_gbs']:.0f} "
            f"| {r['bandwidth_gbs'] / result['copy_bandwidth_gbs']:.0%} "
            f"| {'-' if ratio is None else f'{ratio:.2f}'} | {r['compile_s']} "
            f"| {r['matches_eager']} |"
        )
    return "\n".join(lines) + "\n"


def _sin_cos(x: Any) -> Any:
    import torch

    return torch.sin(x) + torch.cos(x)


def host_path(
    device: str, arms: list[str], calls: int = 500, rounds: int = 9
) -> dict[str, Any]:
    """Seconds per call of sin+cos on 8 elements, per arm: the median over
    ``rounds`` rounds of ``calls`` back-to-back calls, arms interleaved within
    each round so that a busy machine slows all alike."""
    import torch
    import torch._functorch.config
    from ablation import arm_switches, BACKENDS, split_switches
    from harness import provenance

    x = torch.randn(8, device=device)
    fns = {}
    torch._dynamo.reset()
    for arm in arms:
        # A code object of its own per arm: Dynamo caches compiled graphs per
        # code object, so arms sharing one would share the first arm's graph.
        code = _sin_cos.__code__.replace(co_name=f"sin_cos_{arm}")
        fn = types.FunctionType(code, _sin_cos.__globals__)
        switches = arm_switches(arm)
        inductor, functorch = split_switches(switches)
        if switches is not None:
            fn = torch.compile(fn, backend=BACKENDS.get(arm, "inductor"))
        with (
            torch.no_grad(),
            torch._inductor.config.patch(inductor),
            torch._functorch.config.patch(functorch),
        ):
            for _ in range(50):
                fn(x)
        fns[arm] = fn
    per_call: dict[str, list[float]] = {arm: [] for arm in arms}
    with torch.no_grad():
        for _ in range(rounds):
            for arm, fn in fns.items():
                if device == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(calls):
                    fn(x)
                if device == "cuda":
                    torch.cuda.synchronize()
                per_call[arm].append((time.perf_counter() - start) / calls)
    rows = [
        {
            "arm": arm,
            "us_per_call": statistics.median(per_call[arm]) * 1e6,
            "calls": calls,
            "rounds": rounds,
        }
        for arm in arms
    ]
    return {
        **provenance(device),
        "case": "sin_cos of 8 float32 elements",
        "recompiles": dict(torch._dynamo.utils.counters["stats"]),
        "rows": rows,
    }


def host_path_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Device: {result['device']}, torch {result['torch']}, {result['fork']}; "
        f"{result['case']}; median over {result['rows'][0]['rounds']} rounds of "
        f"{result['rows'][0]['calls']} calls, arms interleaved.",
        "",
        "| arm | us per call |",
        "|---|---|",
    ]
    lines += [f"| {r['arm']} | {r['us_per_call']:.1f} |" for r in result["rows"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None)
    parser.add_argument("--arms", default=DEFAULT_ARMS)
    parser.add_argument(
        "--dtypes", default="float32", help="comma-separated: float32,bfloat16"
    )
    parser.add_argument("--json", type=Path, help="write JSON here (and the .md)")
    parser.add_argument(
        "--gpu-lock", help="a lock file shared by processes timing on one GPU"
    )
    parser.add_argument(
        "--host-path",
        action="store_true",
        help="time the call path on a tiny tensor instead of the bandwidth",
    )
    args = parser.parse_args(argv)
    import torch
    from ablation import ARMS, expand_arms, known_arm

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here")
    arms = expand_arms(args.arms, device)
    unknown = [a for a in arms if not known_arm(a)]
    if unknown:
        raise SystemExit(f"unknown arms {unknown}: choose from {', '.join(ARMS)}")
    if args.host_path:
        result = host_path(device, arms)
        table = host_path_markdown(result)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n")
            args.json.with_suffix(".md").write_text(table)
        print(table)
        return 0
    results = [run(device, arms, d, args.gpu_lock) for d in args.dtypes.split(",")]
    result = dict(results[0], rows=[r for res in results for r in res["rows"]])
    table = markdown(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        args.json.with_suffix(".md").write_text(table)
    print(table)
    return 0 if all(r["matches_eager"] for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
