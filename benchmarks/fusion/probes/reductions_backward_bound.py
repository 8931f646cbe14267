"""Is a looped log-softmax, forward and backward, at the bound of its form where eager is ahead?

A log-softmax forward reads each row twice in a loop (the max and the sum,
then the output written); its backward, ``grad - exp(out) * sum(grad)`` over each row, is a
kernel of two row-long inputs that loops over a long row twice: the sum of
the gradient, then the gradient and the output read again and the input's
gradient written.  Where eager is ahead of the pass's forward+backward at a
vocabulary's width in float32 (2670 x 50257: 1462 against 1533 us,
``vocabulary_2.15.0_h100.md``), this probe asks whether the pass's backward
kernels are at the bounds of those forms.  Per shape and dtype, CUDA graph
replays (``do_bench_cudagraph`` median, us):

* ``copy``: a copy of one input (one read, one write);
* ``eager`` / ``forward_eager``: ``aten._log_softmax_backward_data`` and
  ``torch.log_softmax``, eager's kernels;
* ``default`` and ``one_pass`` (``forward_`` too): the same ops compiled,
  Inductor's default and ``config.one_pass_reductions``;
* ``forward_move_<loads>_r<block>_w<warps>``: the forward's form with
  nothing to compute (``reductions_lean_combine.row_loop``'s move-only
  loop: the row's max, then the row scaled by it);
* ``move_<loads>_r<block>_w<warps>``: a hand-written loop of the backward's form
  with no exp (the gradient's sum, then ``grad - out * sum`` written), loads
  ``masked`` at the row's ends as Inductor's or ``aligned`` (steps start at
  the row's start rounded down to 16 bytes, unmasked inside the row): the
  data movement of the form alone.

    python3 tools/fork.py run -- python3 benchmarks/fusion/probes/reductions_backward_bound.py \\
        --shapes 2670x50257 --dtypes float32,bfloat16      # $OUT/backward_bound.json
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.testing import do_bench_cudagraph as bench


# the forward's move-only loop (reductions_lean_combine), beside this file;
# the harness and suites, one folder up (that probe imports them)
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = os.environ.get("OUT", "/tmp")


@triton.jit
def _masked_or_not(ptr, base, i, lead, end, inside):
    if inside:
        v = tl.load(ptr + base + i).to(tl.float32)
    else:
        v = tl.load(ptr + base + i, mask=(i >= lead) & (i < end), other=0.0)
        v = v.to(tl.float32)
    return v


@triton.jit
def _backward_form(
    g_ptr,
    y_ptr,
    out_ptr,
    n,
    stride,
    RBLOCK: tl.constexpr,
    ALIGN: tl.constexpr,
):
    row = tl.program_id(0)
    start = row.to(tl.int64) * stride
    if ALIGN > 1:
        base = tl.multiple_of((start // ALIGN) * ALIGN, ALIGN)
        lead = start - base
    else:
        base = start
        lead = 0
    end = lead + n
    acc = tl.zeros([RBLOCK], tl.float32)
    for off in range(0, end, RBLOCK):
        i = off + tl.arange(0, RBLOCK)
        inside = (off >= lead) & (off + RBLOCK <= end) if ALIGN > 1 else False
        acc += _masked_or_not(g_ptr, base, i, lead, end, inside)
    total = tl.sum(acc, 0)
    for off in range(0, end, RBLOCK):
        i = off + tl.arange(0, RBLOCK)
        inside = (off >= lead) & (off + RBLOCK <= end) if ALIGN > 1 else False
        g = _masked_or_not(g_ptr, base, i, lead, end, inside)
        y = _masked_or_not(y_ptr, base, i, lead, end, inside)
        value = (g - y * total).to(out_ptr.dtype.element_ty)
        if inside:
            tl.store(out_ptr + base + i, value)
        else:
            tl.store(out_ptr + base + i, value, mask=(i >= lead) & (i < end))


def backward_form(g: Any, y: Any, rblock: int, warps: int, align: int) -> Any:
    rows, n = g.shape
    out = torch.empty_like(g)
    _backward_form[(rows,)](
        g, y, out, n, g.stride(0), RBLOCK=rblock, ALIGN=align, num_warps=warps
    )
    return out


def log_softmax_backward(g: Any, y: Any) -> Any:
    return torch.ops.aten._log_softmax_backward_data(g, y, -1, g.dtype)


def log_softmax(x: Any) -> Any:
    return torch.log_softmax(x, -1)


def compiled_us(fn: Any, *args: Any, **patch: Any) -> float:
    from torch._inductor import config

    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False, **patch):
        compiled = torch.compile(fn, dynamic=False)
        compiled(*args)
        return bench(lambda: compiled(*args)) * 1e3


def forward_forms(x: Any) -> dict[str, Any]:
    """The forward's times: eager, compiled, and its move-only loops."""
    from reductions_lean_combine import row_loop
    from torch._inductor import config

    res: dict[str, Any] = {
        "forward_eager_us": bench(lambda: log_softmax(x)) * 1e3,
        "forward_default_us": compiled_us(log_softmax, x),
    }
    if hasattr(config, "one_pass_reductions"):
        res["forward_one_pass_us"] = compiled_us(
            log_softmax, x, one_pass_reductions=True
        )
    ref = x.float() * (1.0 / x.float().amax(-1, keepdim=True))
    for align in (1, 16 // x.element_size()):
        for rblock in (2048, 4096, 8192):
            for warps in (16, 32):
                key = (
                    f"forward_move_{'aligned' if align > 1 else 'masked'}"
                    f"_r{rblock}_w{warps}"
                )
                args = (x, rblock, warps, align, False, True, True)
                try:
                    err = (row_loop(*args).float() - ref).abs().max().item()
                    us = bench(lambda a=args: row_loop(*a)) * 1e3
                    res[key] = {"us": us, "err": err}
                except Exception as e:  # a probe: record and go on
                    res[key] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    return res


def measure(rows: int, row: int, dtype_name: str) -> dict[str, Any]:
    from torch._inductor import config

    dtype = getattr(torch, dtype_name)
    x = torch.randn(rows, row, device="cuda", dtype=dtype) * 4
    y = torch.log_softmax(x.float(), -1).to(dtype)
    g = torch.randn(rows, row, device="cuda", dtype=dtype)
    res: dict[str, Any] = {"shape": [rows, row], "dtype": dtype_name}
    res["copy_us"] = bench(lambda: g.clone()) * 1e3
    res["eager_us"] = bench(lambda: log_softmax_backward(g, y)) * 1e3
    res["default_us"] = compiled_us(log_softmax_backward, g, y)
    if hasattr(config, "one_pass_reductions"):
        res["one_pass_us"] = compiled_us(
            log_softmax_backward, g, y, one_pass_reductions=True
        )
    res.update(forward_forms(x))
    # the form's reference: its own arithmetic in float32
    ref = g.float() - y.float() * g.float().sum(-1, keepdim=True)
    for align in (1, 16 // g.element_size()):
        for rblock in (2048, 4096, 8192):
            for warps in (16, 32):
                key = f"move_{'aligned' if align > 1 else 'masked'}_r{rblock}_w{warps}"
                try:
                    out = backward_form(g, y, rblock, warps, align)
                    err = (out.float() - ref).abs().max().item() / (
                        ref.abs().max().item() or 1.0
                    )
                    us = bench(
                        lambda r=rblock, w=warps, a=align: backward_form(g, y, r, w, a)
                    )
                    res[key] = {"us": us * 1e3, "relative_err": err}
                except Exception as e:  # a probe: record and go on
                    res[key] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="2670x50257")
    p.add_argument("--dtypes", default="float32,bfloat16")
    args = p.parse_args(argv)
    results = []
    for shape in args.shapes.split(","):
        rows, row = map(int, shape.split("x"))
        for dtype in args.dtypes.split(","):
            res = measure(rows, row, dtype)
            results.append(res)
            with open(f"{OUT}/backward_bound.json", "w") as fh:
                json.dump(results, fh, indent=1)
            best = []
            for form in ("forward_move_", "move_"):
                moves = sorted(
                    (v["us"], k)
                    for k, v in res.items()
                    if k.startswith(form) and isinstance(v, dict) and "us" in v
                )
                if moves:
                    best.append(f"{moves[0][1]} {moves[0][0]:.1f}")
            timed = " ".join(
                f"{k[:-3]} {v:.1f}"
                for k, v in res.items()
                if k.endswith("_us") and isinstance(v, float)
            )
            print(f"{shape} {dtype}: {timed}; best {', '.join(best)} us", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
