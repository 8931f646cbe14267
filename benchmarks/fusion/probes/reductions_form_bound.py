"""How close can a kernel of each reduction's form come to a copy, moving data alone?

Issue 39 asks every 16-bit case of the one-pass pass to reach 85% of a copy,
and, where one does not, the shortfall explained by the bound of its form:
what a kernel that reads and writes the same rows in the same way, with
nothing to compute, reaches.  This probe times those move-only kernels,
``--explain`` sets them against a sweep (``reductions.py`` JSONs).

A form says which row-long tensors a kernel reads before its row's
reduction is known (the first read), which it reads again once it is (the
second), and whether it writes a row-long output.  Per op and pass (the
kernels Inductor generates for them, ``OP_FORMS`` in
``reductions_form_explain.py``):

* ``two_reads``: one input read for its reduction, then read again and the
  output written: the forward of softmax, log-softmax, layer norm and RMS
  norm (the row's max and sum, or its mean and variance, then the row
  normalized);
* ``one_read``: one input read and reduced, a scalar a row written:
  cross-entropy's forward (the row's logsumexp);
* ``two_inputs_twice``: two inputs read for the reduction and both read
  again: the backward of softmax (the sum of gradient times output) and of
  the norms (the gradient and the saved input);
* ``one_then_two``: the gradient read for its sum, then read again with the
  output: log-softmax's backward;
* ``read_write``: one input read and the output written, no reduction to
  wait for: cross-entropy's backward (the row's saved logsumexp).

The forwards' forms also run with their ops' least arithmetic
(``ARITHMETIC_FORMS``): ``logsumexp``, ``log_softmax`` and ``softmax`` (an
online max and sum at one exp an element), ``layer_norm`` (Welford's update,
a division an element, as Inductor's loop) and ``rms_norm`` (a sum of
squares).  Where a case is far over its move-only bound, these say whether
the arithmetic is why; ``layer_norm_shifted_sums`` (the variance from sums
of the row less its first element and of their squares: no division an
element) whether Welford's division is.

Each form runs looped (steps of ``RBLOCK`` along the row, aligned as the
pass's loops are: steps start at the row's start rounded down to 16 bytes
and load without a mask inside the row; with Inductor's cache hints and
without) and, at rows of at most 32768, on chip (the whole row in one
block: each input read once; rows of at most 2048 also several a block).
The form's bound is its fastest variant.  Times are ``do_bench_cudagraph`` medians in us,
beside the same input's elementwise copy (``torch.mul(x, 1, out=y)``) and
clone (``probes/copy_baseline.py``: the faster way to copy).

    python3 benchmarks/fusion/probes/reductions_form_bound.py \\
        --shapes 2670x50257,1046x128256 --dtypes bfloat16       # $OUT/form_bound.json
    # no GPU (reductions_form_explain.py): each sweep case's time against
    # the bound of its form (each form's best over the bound files; a later
    # sweep's arms replace an earlier one's)
    python3 benchmarks/fusion/probes/reductions_form_bound.py \\
        --bounds form_bound.json --explain sweep_a.json sweep_b.json [--all]

Plain Triton: it runs on any CUDA machine's own release, no fork needed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import triton
import triton.language as tl

# the copy probe's shape parsing and JSON reading, beside this file
sys.path.insert(0, str(Path(__file__).resolve().parent))
from copy_baseline import load_json, parse_shapes
from reductions_form_explain import explain, ITEMSIZE, summary

SHAPES = (
    "262144x512,65536x2048,32768x4096,16384x8192,8192x16384,4096x32768,"
    "2670x50257,1046x128256,883x151936,524x256000"
)
# the pass keeps a row of at most this many elements on chip
ON_CHIP_ROW_LIMIT = 32768
# rows of at most this many elements are also held several a block
SHORT_ROW_LIMIT = 2048
# looped variants: (elements a step, warps); upstream's 2048 x 16 and the
# pass's 4096 x 16 and 8192 x 32 among them
LOOPED = ((2048, 8), (2048, 16), (4096, 16), (4096, 32), (8192, 32))


# a form's arithmetic (``Form.arithmetic``, the kernel's ``ARITH``)
MOVE = 0  # data alone: the row's sum, then a - sum written
LOGSUMEXP = 1  # an online logsumexp at one exp an element; a - lse written
SOFTMAX = 2  # the same; exp(a - lse) written, one exp an element more
WELFORD = 3  # a layer norm's: Welford's mean and variance; (a - mean) * rstd
SQUARES = 4  # an RMS norm's: the mean of squares; a * rstd
# a layer norm's statistics from two sums around a shift (the row's first
# element): no division an element, where Welford's update has one (Triton's
# ``/`` is already the approximate ``div.full.f32``, about ten instructions
# an element with its range checks); not Inductor's form, the question
# whether the division is the cost
SHIFTED_SUMS = 5


class Form(NamedTuple):
    """Which inputs (0: the first, 1: the second) a kernel reads before its
    reduction is known and after, whether it writes a row, and its
    arithmetic (``MOVE`` for data alone, or an op's least)."""

    first: tuple[int, ...]
    second: tuple[int, ...]
    writes: bool
    arithmetic: int = MOVE


FORMS = {
    "two_reads": Form((0,), (0,), True),
    "one_read": Form((0,), (), False),
    "two_inputs_twice": Form((0, 1), (0, 1), True),
    "one_then_two": Form((0,), (0, 1), True),
    "read_write": Form((), (0,), True),
    # the forwards' forms with the least arithmetic of their ops
    "logsumexp": Form((0,), (), False, LOGSUMEXP),
    "log_softmax": Form((0,), (0,), True, LOGSUMEXP),
    "softmax": Form((0,), (0,), True, SOFTMAX),
    "layer_norm": Form((0,), (0,), True, WELFORD),
    "rms_norm": Form((0,), (0,), True, SQUARES),
    "layer_norm_shifted_sums": Form((0,), (0,), True, SHIFTED_SUMS),
}

# the norms' epsilon, as F.layer_norm's and F.rms_norm's in the sweep
EPS = 1e-5


def next_power_of_2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def variants(
    row: int, itemsize: int
) -> list[tuple[str, int, int, bool, int, bool, int]]:
    """(name, elements a block, warps, on chip, alignment in elements,
    cache hints, rows a block) of the kernels a form is timed as at this
    row length.  Looped kernels hold one row a block, with Inductor's cache
    hints (a first read of what is read again ``evict_last``, the rest
    ``evict_first``) and without; on chip, rows of up to
    ``SHORT_ROW_LIMIT`` are also held several a block, as Inductor's
    kernels hold short rows."""
    align = 16 // itemsize
    # steps longer than the row (rounded up, 2048 at least) only add masks
    out = [
        (
            f"loop_r{block}_w{warps}{'' if hints else '_nohints'}",
            block,
            warps,
            False,
            align,
            hints,
            1,
        )
        for block, warps in LOOPED
        if block <= max(2048, next_power_of_2(row))
        for hints in (True, False)
    ]
    if row <= ON_CHIP_ROW_LIMIT:
        # rows of whole 16-byte lines start aligned: no head to step over
        chip_align = 1 if (row * itemsize) % 16 == 0 else align
        block = next_power_of_2(row + chip_align - 1)
        for rows_a_block in (1, 2, 4, 8, 16):
            if rows_a_block > 1 and row > SHORT_ROW_LIMIT:
                break
            for warps in (4, 8, 16, 32):
                if 4 <= block * rows_a_block // (32 * warps) <= 32:
                    several = f"_x{rows_a_block}" if rows_a_block > 1 else ""
                    out.append(
                        (
                            f"chip_r{block}{several}_w{warps}",
                            block,
                            warps,
                            True,
                            chip_align,
                            False,
                            rows_a_block,
                        )
                    )
    return out


@triton.jit
def _load(ptr, base, i, lead, end, inside, POLICY: tl.constexpr, OTHER: tl.constexpr):
    if inside:
        v = tl.load(ptr + base + i, eviction_policy=POLICY).to(tl.float32)
    else:
        mask = (i >= lead) & (i < end)
        v = tl.load(ptr + base + i, mask=mask, other=0.0, eviction_policy=POLICY)
        v = tl.where(mask, v.to(tl.float32), OTHER)
    return v


@triton.jit
def _online(m, s, v):
    # an online max and sum at one exp an element: the side that is not
    # the new max is scaled, the other's scale is exactly 1
    mn = tl.maximum(m, v)
    e = tl.exp(tl.minimum(m, v) - mn)
    s_new = tl.where(v > m, s * e + 1.0, s + e)
    # neither side finite yet: keep the empty sum
    return mn, tl.where(mn == -float("inf"), s, s_new)


@triton.jit
def _welford_combine(mean1, m2_1, n1, mean2, m2_2, n2):
    nn = n1 + n2
    delta = mean2 - mean1
    w2 = tl.where(nn == 0.0, 0.0, n2 / nn)
    return mean1 + delta * w2, m2_1 + m2_2 + delta * delta * n1 * w2, nn


@triton.jit
def _written(
    a,
    b,
    total,
    scale,
    SECOND_A: tl.constexpr,
    SECOND_B: tl.constexpr,
    ARITH: tl.constexpr,
):
    # the row written from its second reads and its reduction
    if SECOND_A:
        value = a
    else:
        value = tl.zeros_like(a)
    if ARITH == 3 or ARITH == 5:
        value = (value - total) * scale
    elif ARITH == 4:
        value = value * total
    elif SECOND_B:
        value -= b * total
    else:
        value -= total
    if ARITH == 2:
        value = tl.exp(value)
    return value


@triton.jit
def _form(
    a_ptr,
    b_ptr,
    out_ptr,
    row_out_ptr,
    rows,
    n,
    stride,
    FIRST_A: tl.constexpr,
    FIRST_B: tl.constexpr,
    SECOND_A: tl.constexpr,
    SECOND_B: tl.constexpr,
    WRITES: tl.constexpr,
    RBLOCK: tl.constexpr,
    XBLOCK: tl.constexpr,
    ALIGN: tl.constexpr,
    ON_CHIP: tl.constexpr,
    HINTS: tl.constexpr,
    ARITH: tl.constexpr,
    EPS: tl.constexpr,
):
    # the row's reduction is the sum of its first-read inputs (ARITH 0),
    # the logsumexp of a (1, 2), its mean under Welford's update (3) or its
    # mean of squares (4); the row written is _written's.  On chip, XBLOCK
    # rows a block, each read once; looped, one row a block.
    FIRST_A_POLICY: tl.constexpr = (
        ("evict_last" if SECOND_A else "evict_first") if HINTS else ""
    )
    FIRST_B_POLICY: tl.constexpr = (
        ("evict_last" if SECOND_B else "evict_first") if HINTS else ""
    )
    DROP: tl.constexpr = "evict_first" if HINTS else ""
    if ON_CHIP:
        row = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
        start = row.to(tl.int64) * stride
        if ALIGN > 1:
            base = (start // ALIGN) * ALIGN
        else:
            base = start
        lead = start - base
        i = tl.arange(0, RBLOCK)[None, :]
        mask = (i >= lead) & (i < lead + n) & (row < rows)
        a = tl.load(a_ptr + base + i, mask=mask, other=0.0).to(tl.float32)
        b = tl.zeros([XBLOCK, RBLOCK], tl.float32)
        if FIRST_B or SECOND_B:
            b = tl.load(b_ptr + base + i, mask=mask, other=0.0).to(tl.float32)
        scale = tl.full([XBLOCK, 1], 1.0, tl.float32)
        if ARITH == 1 or ARITH == 2:
            mx = tl.max(tl.where(mask, a, -float("inf")), 1)[:, None]
            total = mx + tl.log(tl.sum(tl.where(mask, tl.exp(a - mx), 0.0), 1)[:, None])
        elif ARITH == 3 or ARITH == 5:
            total = tl.sum(a, 1)[:, None] / n
            centred = tl.where(mask, a - total, 0.0)
            scale = tl.rsqrt(tl.sum(centred * centred, 1)[:, None] / n + EPS)
        elif ARITH == 4:
            total = tl.rsqrt(tl.sum(a * a, 1)[:, None] / n + EPS)
        else:
            acc = tl.zeros([XBLOCK, RBLOCK], tl.float32)
            if FIRST_A:
                acc += a
            if FIRST_B:
                acc += b
            total = tl.sum(acc, 1)[:, None]
        if WRITES:
            value = _written(a, b, total, scale, SECOND_A, SECOND_B, ARITH)
            tl.store(out_ptr + base + i, value.to(out_ptr.dtype.element_ty), mask=mask)
        tl.store(row_out_ptr + row, total, mask=row < rows)
    else:
        row = tl.program_id(0)
        start = row.to(tl.int64) * stride
        if ALIGN > 1:
            base = tl.multiple_of((start // ALIGN) * ALIGN, ALIGN)
            lead = start - base
        else:
            base = start
            lead = 0
        end = lead + n
        scale = 1.0
        if ARITH == 1 or ARITH == 2:
            m = tl.full([RBLOCK], -float("inf"), tl.float32)
            s = tl.zeros([RBLOCK], tl.float32)
            for off in range(0, end, RBLOCK):
                i = off + tl.arange(0, RBLOCK)
                inside = (off >= lead) & (off + RBLOCK <= end) if ALIGN > 1 else False
                v = _load(
                    a_ptr, base, i, lead, end, inside, FIRST_A_POLICY, -float("inf")
                )
                m, s = _online(m, s, v)
            mm = tl.max(m, 0)
            ss = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - mm)), 0)
            total = mm + tl.log(ss)
        elif ARITH == 3:
            mean = tl.zeros([RBLOCK], tl.float32)
            m2 = tl.zeros([RBLOCK], tl.float32)
            count = tl.zeros([RBLOCK], tl.float32)
            for off in range(0, end, RBLOCK):
                i = off + tl.arange(0, RBLOCK)
                inside = (off >= lead) & (off + RBLOCK <= end) if ALIGN > 1 else False
                v = _load(a_ptr, base, i, lead, end, inside, FIRST_A_POLICY, 0.0)
                # Welford's update, a division an element, as Inductor's
                # loop; a step inside the row updates every lane (no mask
                # to evaluate), as the pass's aligned steps do
                count_next = count + 1.0
                delta = v - mean
                mean_next = mean + delta / count_next
                m2_next = m2 + delta * (v - mean_next)
                if inside:
                    mean, m2, count = mean_next, m2_next, count_next
                else:
                    valid = (i >= lead) & (i < end)
                    mean = tl.where(valid, mean_next, mean)
                    m2 = tl.where(valid, m2_next, m2)
                    count = tl.where(valid, count_next, count)
            total, m2_row, _ = tl.reduce((mean, m2, count), 0, _welford_combine)
            scale = tl.rsqrt(m2_row / n + EPS)
        elif ARITH == 5:
            # sums of d = x - shift and d * d, shift the row's first element
            shift = tl.load(a_ptr + start).to(tl.float32)
            acc = tl.zeros([RBLOCK], tl.float32)
            acc2 = tl.zeros([RBLOCK], tl.float32)
            for off in range(0, end, RBLOCK):
                i = off + tl.arange(0, RBLOCK)
                inside = (off >= lead) & (off + RBLOCK <= end) if ALIGN > 1 else False
                v = _load(a_ptr, base, i, lead, end, inside, FIRST_A_POLICY, 0.0)
                d = v - shift
                if not inside:
                    d = tl.where((i >= lead) & (i < end), d, 0.0)
                acc += d
                acc2 += d * d
            mean_d = tl.sum(acc, 0) / n
            total = shift + mean_d
            scale = tl.rsqrt(
                tl.maximum(tl.sum(acc2, 0) / n - mean_d * mean_d, 0.0) + EPS
            )
        else:
            acc = tl.zeros([RBLOCK], tl.float32)
            if FIRST_A or FIRST_B:
                for off in range(0, end, RBLOCK):
                    i = off + tl.arange(0, RBLOCK)
                    inside = (
                        (off >= lead) & (off + RBLOCK <= end) if ALIGN > 1 else False
                    )
                    if FIRST_A:
                        v = _load(
                            a_ptr, base, i, lead, end, inside, FIRST_A_POLICY, 0.0
                        )
                        if ARITH == 4:
                            v = v * v
                        acc += v
                    if FIRST_B:
                        acc += _load(
                            b_ptr, base, i, lead, end, inside, FIRST_B_POLICY, 0.0
                        )
            total = tl.sum(acc, 0)
            if ARITH == 4:
                total = tl.rsqrt(total / n + EPS)
        if WRITES:
            for off in range(0, end, RBLOCK):
                i = off + tl.arange(0, RBLOCK)
                inside = (off >= lead) & (off + RBLOCK <= end) if ALIGN > 1 else False
                a = tl.zeros([RBLOCK], tl.float32)
                b = tl.zeros([RBLOCK], tl.float32)
                if SECOND_A:
                    a = _load(a_ptr, base, i, lead, end, inside, DROP, 0.0)
                if SECOND_B:
                    b = _load(b_ptr, base, i, lead, end, inside, DROP, 0.0)
                value = _written(a, b, total, scale, SECOND_A, SECOND_B, ARITH)
                value = value.to(out_ptr.dtype.element_ty)
                if inside:
                    tl.store(out_ptr + base + i, value)
                else:
                    tl.store(out_ptr + base + i, value, mask=(i >= lead) & (i < end))
        tl.store(row_out_ptr + row, total)


def run_form(
    form: Form, a: Any, b: Any, out: Any, row_out: Any, variant: tuple[Any, ...]
) -> None:
    """One launch of the kernel of ``form`` over ``a``'s rows."""
    _, block, warps, on_chip, align, hints, rows_a_block = variant
    rows, n = a.shape
    _form[(-(-rows // rows_a_block),)](
        a,
        b,
        out,
        row_out,
        rows,
        n,
        a.stride(0),
        FIRST_A=0 in form.first,
        FIRST_B=1 in form.first,
        SECOND_A=0 in form.second,
        SECOND_B=1 in form.second,
        WRITES=form.writes,
        RBLOCK=block,
        XBLOCK=rows_a_block,
        ALIGN=align,
        ON_CHIP=on_chip,
        HINTS=hints,
        ARITH=form.arithmetic,
        EPS=EPS,
        num_warps=warps,
    )


def reference(form: Form, a: Any, b: Any) -> tuple[Any, Any]:
    """The kernel's row reductions and output, in float32."""
    import torch

    x, y = a.float(), b.float()
    if form.arithmetic in (LOGSUMEXP, SOFTMAX):
        total = torch.logsumexp(x, -1, keepdim=True)
    elif form.arithmetic in (WELFORD, SHIFTED_SUMS):
        total = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + EPS)
        return total.squeeze(-1), (x - total) * rstd
    elif form.arithmetic == SQUARES:
        total = torch.rsqrt(x.square().mean(-1, keepdim=True) + EPS)
        return total.squeeze(-1), x * total
    else:
        total = sum(
            ((x, y)[k].sum(-1, keepdim=True) for k in form.first),
            torch.zeros_like(x[:, :1]),
        )
    value = x if 0 in form.second else torch.zeros_like(x)
    value = value - (y if 1 in form.second else 1.0) * total
    if form.arithmetic == SOFTMAX:
        value = value.exp()
    return total.squeeze(-1), value


def time_shape(rows: int, row: int, dtype_name: str) -> dict[str, Any]:
    """Every form's variants at one shape, with the copies, in us."""
    import torch
    from triton.testing import do_bench_cudagraph

    def bench(fn: Any) -> float:
        return do_bench_cudagraph(fn, return_mode="median") * 1e3

    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    a = torch.randn(rows, row, device="cuda", dtype=dtype)
    b = torch.randn(rows, row, device="cuda", dtype=dtype)
    out = torch.empty_like(a)
    row_out = torch.empty(rows, device="cuda", dtype=torch.float32)
    entry: dict[str, Any] = {
        "rows": rows,
        "row": row,
        "dtype": dtype_name,
        "bytes": a.numel() * a.element_size(),
        "copy_us": {
            "elementwise": bench(lambda: torch.mul(a, 1, out=out)),
            "clone": bench(lambda: a.clone()),
        },
        "forms": {},
    }
    for name, form in FORMS.items():
        total_ref, value_ref = reference(form, a, b)
        timed: dict[str, Any] = {}
        for variant in variants(row, a.element_size()):
            try:
                run_form(form, a, b, out, row_out, variant)
                torch.cuda.synchronize()
                # sums of ~row standard normals: relative to the largest
                scale = float(total_ref.abs().max()) or 1.0
                err = float((row_out - total_ref).abs().max()) / scale
                if form.writes:
                    vscale = float(value_ref.abs().max()) or 1.0
                    err = max(
                        err, float((out.float() - value_ref).abs().max()) / vscale
                    )
                timed[variant[0]] = {
                    "us": bench(
                        lambda v=variant, f=form: run_form(f, a, b, out, row_out, v)
                    ),
                    "relative_err": err,
                }
            except Exception as e:  # noqa: PERF203  # a probe: record and go on
                timed[variant[0]] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
        right = {k: v for k, v in timed.items() if v.get("relative_err", 1.0) < 2e-2}
        best = min(right, key=lambda k: right[k]["us"]) if right else None
        entry["forms"][name] = {
            "variants": timed,
            "best": best,
            "best_us": right[best]["us"] if best else None,
        }
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument(
        "--explain",
        nargs="+",
        metavar="SWEEP_JSON",
        help="reductions.py JSONs to set against --bounds",
    )
    parser.add_argument(
        "--bounds",
        nargs="+",
        metavar="BOUND_JSON",
        help="form_bound.json files, for --explain",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="--explain every case, not only those short of a goal",
    )
    parser.add_argument("--deadline-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.explain:
        if not args.bounds:
            raise SystemExit("error: --explain needs --bounds form_bound.json")
        table, counts = explain(
            [load_json(path) for path in args.bounds],
            [load_json(path) for path in args.explain],
            args.all,
        )
        print(table)
        print()
        print(summary(counts))
        return 0
    shapes = parse_shapes(args.shapes)
    dtypes = [d for d in args.dtypes.split(",") if d]
    for name in dtypes:
        if name not in ITEMSIZE:
            raise SystemExit(
                f"error: unknown dtype {name!r} (want {', '.join(ITEMSIZE)})"
            )
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("error: needs a CUDA device")
    start = time.time()
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cases": [],
    }
    path = os.path.join(os.environ.get("OUT", "/tmp"), "form_bound.json")
    for rows, row in shapes:
        for name in dtypes:
            if args.deadline_s and time.time() - start > args.deadline_s:
                print(f"deadline: {rows}x{row} {name} and later left out", flush=True)
                return 0
            entry = time_shape(rows, row, name)
            torch.cuda.empty_cache()
            result["cases"].append(entry)
            with open(path, "w") as fh:
                json.dump(result, fh, indent=1)
            copy = entry["copy_us"]["elementwise"]
            cells = " ".join(
                f"{form} {f['best_us']:.0f} ({copy / f['best_us']:.0%}, {f['best']})"
                if f["best_us"]
                else f"{form} -"
                for form, f in entry["forms"].items()
            )
            print(f"{rows}x{row} {name}: copy {copy:.0f} us; {cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
