"""Why is a combo kernel slower than its parts on one model?

Where a combo-kernel arm spends GPU time on one model: the kernels of one
inference step by GPU time, per arm, with the source of the arm's slowest
combo kernels.

    python benchmarks/fusion/probes/combo_profile.py convnext_tiny --arms default,combo_kernels
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path


# the suites and the harness, one folder up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--arms", default="default,combo_kernels,launch_bound_combo")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--shapes", default="full")
    args = parser.parse_args()
    import torch
    from ablation import arm_switches
    from models import build, compile_config
    from torch.autograd import DeviceType
    from torch.profiler import profile, ProfilerActivity

    from torch._inductor.utils import run_and_get_code

    model, inputs = build(args.model, "cuda", args.shapes)
    for arm in args.arms.split(","):
        torch._dynamo.reset()
        with (
            torch.no_grad(),
            torch._inductor.config.patch(arm_switches(arm)),
            compile_config(args.model),
        ):
            fn = torch.compile(model)
            _, code = run_and_get_code(fn, *inputs)
            for _ in range(5):
                fn(*inputs)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    fn(*inputs)
                torch.cuda.synchronize()
        per_kernel: dict[str, float] = defaultdict(float)
        for e in prof.events():
            if e.device_type == DeviceType.CUDA:
                per_kernel[e.name] += e.time_range.elapsed_us() / 5
        total = sum(per_kernel.values())
        print(
            f"== {args.model} {arm}: {total:.0f} us GPU per step, {len(per_kernel)} distinct kernels"
        )
        top = sorted(per_kernel.items(), key=lambda kv: -kv[1])[: args.top]
        for name, us in top:
            print(f"  {us:9.1f} us  {name[:110]}")
        combos = [n for n, _ in top if "triton_for_" in n][:2]
        source = "\n".join(code)
        for name in combos:
            match = re.search(
                rf"{re.escape(name)} = async_compile.triton\(.*?'''(.*?)'''",
                source,
                re.S,
            )
            if match:
                body = match.group(1)
                print(f"  -- source of {name} ({len(body)} chars), head:")
                print("\n".join("     " + ln for ln in body.splitlines()[:60]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
