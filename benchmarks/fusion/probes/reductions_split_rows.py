"""Can a hand-written split-row softmax read a vocabulary-wide row only once?

A probe for the one-pass pass's next form.  A grid of one block per SM
(resident at once, so that spinning on a counter cannot deadlock) is split
into slots of ``K`` blocks; each slot loops over rows, each block holds
``1/K`` of a row in registers, publishes its partial max and sum to a
workspace (in L2), counts itself in on the slot's counter, waits for the
other ``K - 1`` and normalizes its part: the row is read once and written
once.  ``PREFETCH=1`` loads the slot's next row before waiting.
``ALIGN=1`` rounds each part up to a multiple of 16 bytes, so that with a
row length of a multiple of 8 every part starts on a 16-byte boundary (the
row stride is a constant, as in Inductor's code): 2048x50264 against
2048x50257 tells what alignment costs.  ``STAGES=n`` walks the rows with
``tl.range(..., num_stages=n)`` instead of the hand-written prefetch: whether
Triton's pipeliner loads the next row itself (what generated code would
rely on).  Timed as CUDA graph replays against Inductor's softmax and a copy
(bfloat16).

    PREFETCH=1 python benchmarks/fusion/probes/reductions_split_rows.py 2048x50257,8192x128256
"""

# The timed lambdas run inside the loop iteration that defines them; Triton
# loops count with a loop-carried variable, not enumerate().
# ruff: noqa: B023, SIM113
import json
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

# the suites and the harness, one folder up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from reductions import softmax_baselines
from triton.testing import do_bench_cudagraph as bench

OUT = os.environ.get("OUT", "/tmp")
SMS = (
    torch.cuda.get_device_properties(0).multi_processor_count
    if torch.cuda.is_available()
    else 0
)


@triton.jit
def _split_softmax(
    x_ptr,
    y_ptr,
    ws_ptr,
    cnt_ptr,
    n,
    rows,
    STRIDE: tl.constexpr,
    K: tl.constexpr,
    CHUNK: tl.constexpr,
    BLOCK: tl.constexpr,
    SLOTS,
    PREFETCH: tl.constexpr,
    STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    slot = pid // K
    part = pid % K
    offs = part * CHUNK + tl.arange(0, BLOCK)
    inside = (tl.arange(0, BLOCK) < CHUNK) & (offs < n)
    ks = tl.arange(0, K)
    it = 0
    if PREFETCH:
        x = tl.load(
            x_ptr + slot.to(tl.int64) * STRIDE + offs,
            mask=inside & (slot < rows),
            other=-float("inf"),
        ).to(tl.float32)
    for row in tl.range(slot, rows, SLOTS, num_stages=STAGES):
        base = row.to(tl.int64) * STRIDE
        if not PREFETCH:
            x = tl.load(x_ptr + base + offs, mask=inside, other=-float("inf")).to(
                tl.float32
            )
        m = tl.max(x, 0)
        s = tl.sum(tl.exp(x - m), 0)
        # Partials of even and odd iterations in two halves: a block one row
        # ahead cannot overwrite what a slower one still reads.
        buf = ws_ptr + ((slot * 2 + (it % 2)) * K) * 2
        tl.store(buf + part * 2, m)
        tl.store(buf + part * 2 + 1, s)
        tl.atomic_add(cnt_ptr + slot, 1, sem="release")
        if PREFETCH:
            nxt = row + SLOTS
            x_next = tl.load(
                x_ptr + nxt.to(tl.int64) * STRIDE + offs,
                mask=inside & (nxt < rows),
                other=-float("inf"),
            ).to(tl.float32)
        target = K * (it + 1)
        while tl.atomic_add(cnt_ptr + slot, 0, sem="acquire") < target:
            pass
        ms = tl.load(buf + ks * 2, volatile=True)
        ss = tl.load(buf + ks * 2 + 1, volatile=True)
        M = tl.max(ms, 0)
        S = tl.sum(ss * tl.exp(ms - M), 0)
        tl.store(
            y_ptr + base + offs,
            (tl.exp(x - M) / S).to(y_ptr.dtype.element_ty),
            mask=inside,
        )
        if PREFETCH:
            x = x_next
        it += 1


def split_softmax(x, K, warps, per_sm, prefetch, align=False, stages=None):
    rows, n = x.shape
    chunk = triton.cdiv(n, K)
    if align:
        step = 16 // x.element_size()
        chunk = triton.cdiv(chunk, step) * step
    block = triton.next_power_of_2(chunk)
    grid = (SMS * per_sm) // K * K
    slots = grid // K
    y = torch.empty_like(x)
    ws = torch.empty(slots * 2 * K * 2, device=x.device, dtype=torch.float32)
    cnt = torch.zeros(slots, device=x.device, dtype=torch.int32)
    _split_softmax[(grid,)](
        x,
        y,
        ws,
        cnt,
        n,
        rows,
        STRIDE=x.stride(0),
        K=K,
        CHUNK=chunk,
        BLOCK=block,
        SLOTS=slots,
        PREFETCH=prefetch,
        STAGES=stages,
        num_warps=warps,
    )
    return y


def main() -> None:
    prefetch = os.environ.get("PREFETCH") == "1"
    align = os.environ.get("ALIGN") == "1"
    stages = int(os.environ["STAGES"]) if os.environ.get("STAGES") else None
    variant = "_pf" * prefetch + "_al" * align + (f"_s{stages}" if stages else "")
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")]
    results = []
    for shape in shapes:
        x, ref, copy, default, _ = softmax_baselines(shape)
        res = {
            "shape": list(shape),
            "copy_us": copy,
            "default_us": default,
            "split": {},
        }
        print(shape, "copy", round(copy), "default", round(default), flush=True)
        for K in (2, 4, 8, 16):
            chunk = triton.cdiv(shape[1], K)
            for warps in (16, 32):
                ept = triton.next_power_of_2(chunk) / (warps * 32)
                if ept > 32 or ept < 2:
                    continue
                for per_sm in (1,):
                    key = f"K{K}_w{warps}_g{per_sm}"
                    try:
                        y = split_softmax(x, K, warps, per_sm, prefetch, align, stages)
                        torch.cuda.synchronize()
                        err = (y.float() - ref).abs().max().item()
                        us = (
                            bench(
                                lambda: split_softmax(
                                    x, K, warps, per_sm, prefetch, align, stages
                                )
                            )
                            * 1e3
                        )
                        res["split"][key] = {"us": us, "pct": copy / us, "err": err}
                    except Exception as e:
                        res["split"][key] = {"error": str(e)[:300]}
                    print(shape, key, res["split"][key], flush=True)
        results.append(res)
        with open(f"{OUT}/probe_split{variant}.json", "w") as fh:
            json.dump(results, fh, indent=1)
    for r in results:
        ok = sorted((v["us"], k) for k, v in r["split"].items() if "us" in v)
        if ok:
            u, k = ok[0]
            print(
                "x".join(map(str, r["shape"])),
                f"copy {r['copy_us']:.0f} default {r['default_us']:.0f} ({r['copy_us'] / r['default_us']:.0%}) best {k} {u:.0f} ({r['copy_us'] / u:.0%}) {r['default_us'] / u:.2f}x err {r['split'][k]['err']:.1e}",
            )


if __name__ == "__main__":
    main()
