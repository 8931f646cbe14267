"""How close to a copy does a hand-written two-read looped softmax get at long rows?

A probe for the one-pass pass's too-long rows: a Triton kernel of one row per
program (or a grid of 1-2 programs per SM looping over rows), online max and
sum over the row in blocks, then a second read that normalizes, optionally
with block starts aligned down to 16 bytes; every block / warps / grid
combination timed against Inductor's default and a copy (bfloat16,
``do_bench_cudagraph`` median).

    python benchmarks/fusion/probes/reductions_hand_loops.py 2048x50257,8192x128256
"""

# The timed lambdas run inside the loop iteration that defines them.
# ruff: noqa: B023

import json
import os
import re
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.testing import do_bench_cudagraph as bench

# the suites and the harness, one folder up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from reductions import softmax_baselines

OUT = os.environ.get("OUT", "/tmp")
SMS = (
    torch.cuda.get_device_properties(0).multi_processor_count
    if torch.cuda.is_available()
    else 0
)


@triton.jit
def _looped(
    x_ptr, y_ptr, n, rows, stride, RBLOCK: tl.constexpr, ALIGN: tl.constexpr, GRID
):
    pid = tl.program_id(0)
    for row in range(pid, rows, GRID):
        start = row.to(tl.int64) * stride
        if ALIGN > 1:
            base = (start // ALIGN) * ALIGN
            base = tl.multiple_of(base, ALIGN)
            lead = start - base
        else:
            base = start
            lead = 0
        end = lead + n
        m = tl.full([RBLOCK], -float("inf"), tl.float32)
        s = tl.zeros([RBLOCK], tl.float32)
        for off in range(0, end, RBLOCK):
            i = off + tl.arange(0, RBLOCK)
            mask = (i >= lead) & (i < end)
            x = tl.load(x_ptr + base + i, mask=mask, other=-float("inf")).to(tl.float32)
            mn = tl.maximum(m, x)
            s = s * tl.exp(m - mn) + tl.where(mask, tl.exp(x - mn), 0.0)
            m = tl.where(mn == -float("inf"), m, mn)
        mm = tl.max(m, 0)
        ss = tl.sum(s * tl.exp(m - mm), 0)
        r = 1.0 / ss
        for off in range(0, end, RBLOCK):
            i = off + tl.arange(0, RBLOCK)
            mask = (i >= lead) & (i < end)
            x = tl.load(x_ptr + base + i, mask=mask, other=-float("inf")).to(tl.float32)
            tl.store(
                y_ptr + base + i,
                (tl.exp(x - mm) * r).to(y_ptr.dtype.element_ty),
                mask=mask,
            )


def looped(x, rblock, warps, align, grid):
    y = torch.empty_like(x)
    rows, n = x.shape
    g = rows if grid == 0 else min(rows, grid)
    _looped[(g,)](
        x, y, n, rows, x.stride(0), RBLOCK=rblock, ALIGN=align, GRID=g, num_warps=warps
    )
    return y


def main() -> None:
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
    results = []
    for shape in shapes:
        x, ref, copy, default, code = softmax_baselines(shape)
        res = {"shape": list(shape), "copy_us": copy, "default_us": default}
        res["default_code_cfg"] = re.findall(r"R0_BLOCK.{0,40}|'num_warps': \d+", code)[
            :6
        ]
        print(
            shape, "copy", round(copy), "default", round(res["default_us"]), flush=True
        )
        for align in (1, 8):
            for rblock in (1024, 2048, 4096, 8192):
                for warps in (8, 16, 32):
                    if rblock // (32 * warps) < 2 or rblock // (32 * warps) > 64:
                        continue
                    for grid in (0, SMS, 2 * SMS):
                        key = f"a{align}_r{rblock}_w{warps}_g{grid}"
                        try:
                            y = looped(x, rblock, warps, align, grid)
                            err = (y.float() - ref).abs().max().item()
                            us = (
                                bench(lambda: looped(x, rblock, warps, align, grid))
                                * 1e3
                            )
                            res[key] = {"us": us, "pct": copy / us, "err": err}
                        except Exception as e:
                            res[key] = {"error": str(e)[:200]}
        best = sorted(
            ((v["us"], k) for k, v in res.items() if isinstance(v, dict) and "us" in v)
        )[:6]
        res["best"] = best
        print(
            shape,
            "best",
            [(k, round(u), f"{copy / u:.0%}") for u, k in best],
            flush=True,
        )
        results.append(res)
        with open(f"{OUT}/probe_long.json", "w") as fh:
            json.dump(results, fh, indent=1)
    for r in results:
        u, k = r["best"][0]
        print(
            "x".join(map(str, r["shape"])),
            f"copy {r['copy_us']:.0f} default {r['default_us']:.0f} ({r['copy_us'] / r['default_us']:.0%}) best {k} {u:.0f} ({r['copy_us'] / u:.0%}) gain {r['default_us'] / u:.2f}x",
        )


if __name__ == "__main__":
    main()
