"""Can a Triton softmax read a row of 50257 once, holding it in registers?

Eager's softmax at 2670 x 50257 (bfloat16, H100) reads each row once into
shared memory and beat every two-read form the pass generates (259 us
against 300: benchmarks/results/one_pass/sweep_2.15.0_h100.md).  Triton as
Inductor writes it has no shared memory to ask for; the registers of one
block are what is left.  A row of 50257 in a block of 32 warps is 64
elements a thread: 64 float32 registers, all a thread may have at 1024
threads, and the kernel spilled (reductions_h100_acceptance.md).  Held in
its own 16-bit type the row is 32 registers of two elements each, if the
compiler keeps it packed.

Hand-written kernels of one row per program and the whole row in one block
(``BLOCK`` the power of two at or above the row), three ways of holding it:

* ``float32``: the row converted once and kept (what Inductor's code does:
  its loads convert to float32 and the conversion is shared by every use);
* ``packed``: the row kept in its own type, the max taken in it (exact),
  and converted again at each use, the second time by bit shift so that no
  compiler pass folds the two conversions into one live float32 row;
* ``packed_vectors``: as ``packed``, with masks constant over each 16-byte
  vector (the row's head and tail read whole vectors of the neighbouring
  rows, masked out of the max and sum), so that the loads can be vectors.

Each with its registers and spills (Triton's compiled kernel), its time as
CUDA-graph replays (median) and its error against a float32 softmax, beside
a copy of the input, eager and Inductor's default (``softmax_baselines``).

    python3 tools/fork.py run -- python3 benchmarks/fusion/probes/reductions_one_read_registers.py \
        --shapes 2670x50257
"""

# The timed lambdas run inside the loop iteration that defines them.
# ruff: noqa: B023

import argparse
import json
import os
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
FORMS = ("float32", "packed", "packed_vectors")


@triton.jit
def _widen_by_shift(x):
    """A 16-bit brain float to float32 by moving its bits up: the same
    value as ``x.to(tl.float32)``, written so that it is not the same
    operation (a compiler would share one conversion between two uses and
    keep its float32 result live)."""
    bits = x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _one_read(
    x_ptr,
    y_ptr,
    n,
    stride,
    BLOCK: tl.constexpr,
    FORM: tl.constexpr,
    V: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, BLOCK)
    start = row * stride
    if FORM == 2:
        # the row's start rounded down to a vector; masks whole vectors
        lead = start % V
        base = tl.multiple_of(start - lead, V)
        pos = i - lead
        vec = (i // V) * V
        load_mask = (vec + V > lead) & (vec < n + lead)
        x = tl.load(x_ptr + base + i, mask=load_mask, other=0.0)
        inside = (pos >= 0) & (pos < n)
    else:
        base = start
        pos = i
        inside = i < n
        x = tl.load(x_ptr + base + i, mask=inside, other=0.0)
    if FORM == 0:
        xf = x.to(tl.float32)
        m = tl.max(tl.where(inside, xf, -float("inf")), 0)
        e = tl.where(inside, tl.exp(xf - m), 0.0)
        s = tl.sum(e, 0)
        y = e * (1.0 / s)
    else:
        # the max in the row's own type is exact
        m = tl.max(tl.where(inside, x, -float("inf")), 0).to(tl.float32)
        s = tl.sum(tl.where(inside, tl.exp(x.to(tl.float32) - m), 0.0), 0)
        y = tl.exp(_widen_by_shift(x) - m) * (1.0 / s)
    tl.store(y_ptr + base + i, y.to(y_ptr.dtype.element_ty), mask=inside)


def one_read(x: torch.Tensor, form: str, warps: int) -> tuple[torch.Tensor, object]:
    if not x.is_contiguous():
        raise ValueError(
            "one_read: the rows must be contiguous (the output shares their stride)"
        )
    rows, n = x.shape
    V = 16 // x.element_size()
    y = torch.empty_like(x)
    kernel = _one_read[(rows,)](
        x,
        y,
        n,
        x.stride(0),
        # the row and, for vectors, its head before the first boundary
        BLOCK=triton.next_power_of_2(n + (V - 1 if form == "packed_vectors" else 0)),
        FORM=FORMS.index(form),
        V=V,
        num_warps=warps,
    )
    return y, kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="2670x50257")
    parser.add_argument("--warps", default="16,32")
    args = parser.parse_args()
    results = []
    for spec in args.shapes.split(","):
        shape = tuple(int(s) for s in spec.split("x"))
        x, ref, copy_us, default_us, _ = softmax_baselines(shape)
        eager_us = bench(lambda: torch.softmax(x, -1)) * 1e3
        res = {
            "shape": list(shape),
            "copy_us": copy_us,
            "eager_us": eager_us,
            "default_us": default_us,
        }
        print(
            f"{spec}: copy {copy_us:.1f} us, eager {eager_us:.1f}, "
            f"default {default_us:.1f}",
            flush=True,
        )
        for form in FORMS:
            for warps in (int(w) for w in args.warps.split(",")):
                key = f"{form}_w{warps}"
                try:
                    y, kernel = one_read(x, form, warps)
                    err = (y.float() - ref).abs().max().item()
                    us = bench(lambda: one_read(x, form, warps)) * 1e3
                    res[key] = {
                        "us": us,
                        "err": err,
                        "registers": getattr(kernel, "n_regs", None),
                        "spills": getattr(kernel, "n_spills", None),
                    }
                    print(
                        f"{spec} {key:20s} {us:7.1f} us ({copy_us / us:.0%} of copy, "
                        f"{eager_us / us:.2f}x eager) registers {res[key]['registers']} "
                        f"spills {res[key]['spills']} err {err:.1e}",
                        flush=True,
                    )
                except Exception as e:  # a probe: record and go on
                    res[key] = {"error": str(e)[:300]}
                    print(f"{spec} {key}: {str(e)[:200]}", flush=True)
        results.append(res)
        with open(f"{OUT}/one_read_registers.json", "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
