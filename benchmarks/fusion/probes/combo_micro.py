"""Does the launch-bound combo pass beat stock combo kernels on small branches?

The pass's micro-benchmarks, against stock Inductor and its combo-kernel
switches.

Cases (independent pointwise branches, fp32, one graph each):

* ``small8``: eight branches of 64-256 K elements (0.5-2 MiB each): every
  kernel launch-bound, the pattern the pass combines;
* ``mixed``: six such branches and two of 16 M elements (128 MiB moved each):
  stock ``combo_kernels`` puts all eight in one combo kernel with shared block
  sizes; the pass combines only the six small ones.

Arms: stock ``default``, each of upstream's optional fusion switches that can
act on independent kernels, and the pass (config switches as in
``ablation.py``; ``launch_bound_combo:N`` sets the pass's limit to N MiB).
Per case and arm: ``triton.testing.do_bench`` median of the compiled call,
kernels launched and summed GPU kernel time per call (``torch.profiler``),
compile time, bytes moved (inputs read + outputs written), the achieved
bandwidth per call and inside the kernels (bytes over summed kernel time;
under the pass on ``small8`` that is the one combo kernel's) and whether the
result equals eager.

    python benchmarks/fusion/probes/combo_micro.py --json benchmarks/results/launch_bound_combo/combo_micro_h100.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch


# the suites and the harness, one folder up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ARMS = (
    "default",
    "combo_kernels",
    "benchmark_combo_kernel",
    "aggressive_fusion",
    "benchmark_fusion",
    "no_mix_order_reduction",
    "launch_bound_combo",
)
SMALL = [65536, 98304, 131072, 163840, 196608, 229376, 262144, 81920]
CASES = {
    "small8": SMALL,
    "mixed": [*SMALL[:6], 1 << 24, (1 << 24) + 4096],
}


def branches(*xs):
    # A different pointwise op per branch, as in a network's parallel tails.
    ops = (
        lambda x: x.sin() * 2,
        lambda x: x.cos() + 1,
        lambda x: torch.relu(x) - 0.5,
        lambda x: x * x + 3,
        lambda x: torch.sigmoid(x),
        lambda x: x.exp() - 1,
        lambda x: torch.tanh(x) * 0.5,
        lambda x: x.abs() + x,
    )
    return tuple(ops[i % len(ops)](x) for i, x in enumerate(xs))


def run_case(case: str, arms: list[str], device: str) -> list[dict]:
    import triton
    from ablation import arm_switches
    from harness import kernel_profile

    torch.manual_seed(0)
    xs = [torch.randn(n, device=device) for n in CASES[case]]
    expected = branches(*xs)
    moved = 2 * sum(x.numel() * x.element_size() for x in xs)
    rows = []
    for arm in arms:
        torch._dynamo.reset()
        with torch._inductor.config.patch(arm_switches(arm)):
            fn = torch.compile(branches)
            start = time.perf_counter()
            out = fn(*xs)
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - start
            same = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(out, expected))
            ms = triton.testing.do_bench(lambda fn=fn: fn(*xs), return_mode="median")
            prof = kernel_profile(lambda fn=fn: fn(*xs), device)
        row = {
            "case": case,
            "arm": arm,
            "median_us": ms * 1e3,
            "launches": prof["launches"],
            "gpu_us": prof["gpu_s"] * 1e6,
            "compile_s": round(compile_s, 2),
            "bytes": moved,
            "matches_eager": same,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def write_markdown(rows: list[dict], path: Path, copy_gbps: float | None) -> str:
    lines = [
        "| case | arm | median us | x default | launches | GPU kernel us | GB/s per call | GB/s in kernels | compile s | matches |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in dict.fromkeys(r["case"] for r in rows):
        base = next(r for r in rows if r["case"] == case and r["arm"] == "default")
        for r in (r for r in rows if r["case"] == case):
            gbps = r["bytes"] / (r["median_us"] * 1e-6) / 1e9
            kernel_gbps = r["bytes"] / (r["gpu_us"] * 1e-6) / 1e9
            lines.append(
                f"| {case} | {r['arm']} | {r['median_us']:.1f} | "
                f"{base['median_us'] / r['median_us']:.2f} | {r['launches']:.0f} | "
                f"{r['gpu_us']:.1f} | {gbps:.0f} | {kernel_gbps:.0f} | "
                f"{r['compile_s']:.1f} | {r['matches_eager']} |"
            )
    if copy_gbps:
        lines += ["", f"Measured copy bandwidth: {copy_gbps:.0f} GB/s."]
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--json", required=True)
    parser.add_argument(
        "--table", action="store_true", help="only rewrite the table of --json"
    )
    args = parser.parse_args()
    if args.table:
        data = json.loads(Path(args.json).read_text())
        out = Path(args.json).with_suffix(".md")
        print(write_markdown(data["rows"], out, data.get("copy_gbps")))
        return 0
    if not torch.cuda.is_available():
        raise SystemExit(
            "combo_micro.py needs a CUDA GPU: combo kernels are Triton kernels"
        )
    from ablation import known_arm

    unknown = [a for a in args.arms.split(",") if not known_arm(a)] + [
        c for c in args.cases.split(",") if c not in CASES
    ]
    if unknown:
        raise SystemExit(f"unknown arms or cases: {unknown}")
    rows = []
    for case in args.cases.split(","):
        rows += run_case(case, args.arms.split(","), "cuda")
    from bandwidth import copy_bandwidth
    from harness import provenance

    gbps = copy_bandwidth("cuda", 1 << 28) / 1e9
    out = Path(args.json)
    out.write_text(
        json.dumps({**provenance("cuda"), "rows": rows, "copy_gbps": gbps}, indent=1)
    )
    print(write_markdown(rows, out.with_suffix(".md"), gbps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
