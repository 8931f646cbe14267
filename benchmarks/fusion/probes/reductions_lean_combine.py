"""Does a leaner online-softmax combine speed up looped kernels at long rows?

Two parts, bfloat16 unless given, ``do_bench_cudagraph`` median us:

``--inductor`` (through the fork): each op compiled three ways, arms
interleaved per case: Inductor's default, the one-pass pass with upstream's
``online_softmax_combine`` (its hook wrapped to clear ``lean_combine``), and
the pass as it is (``online_softmax_combine_lean`` in the looped online
softmax kernels it configures), against a copy of the input; the fraction
of copy is at the least bytes the op needs (``reductions.least_bytes``).

``--hand``: hand-written loops of the same shape as Inductor's (online max
and sum in blocks of ``RBLOCK``, then a second read that normalizes; or,
for the logsumexp of cross-entropy's forward, no second read) in four
variants: ``combine`` ``two`` exps per element as upstream, or ``one``
(``exp(min(m, x) - max(m, x))``, the scale of whichever side is not the
new max: the other side's is exactly 1); ``loads`` ``masked`` at the row's
ends as Inductor's (a row of odd length starts off a 16-byte boundary, so
no load is a vector), or ``aligned``: blocks start at the row's start
rounded down to 16 bytes and blocks inside the row load and store without
a mask.  Against Inductor's ``amax`` of the same rows (a pure read).
``--move-only`` times instead the same two-read loop with nothing to
compute (the row's max, then the row scaled by it), masked and aligned: the
data movement of a two-read softmax alone.

    python3 tools/fork.py run -- python3 benchmarks/fusion/probes/reductions_lean_combine.py \
        --inductor --shapes 2048x50257,1046x128256 --dtypes bfloat16,float32
    python3 benchmarks/fusion/probes/reductions_lean_combine.py --hand --shapes 2048x50257
    python3 benchmarks/fusion/probes/reductions_lean_combine.py --hand --move-only \
        --shapes 2048x50257,8192x128256
"""

# The timed lambdas run inside the loop iteration that defines them.
# ruff: noqa: B023

import argparse
import contextlib
import json
import os
import statistics
from unittest import mock
import sys
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl
from triton.testing import do_bench_cudagraph as bench

# the suites and the harness, one folder up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from reductions import softmax_baselines

OUT = os.environ.get("OUT", "/tmp")


@triton.jit
def _combine(m, s, x, ONE_EXP: tl.constexpr):
    mn = tl.maximum(m, x)
    if ONE_EXP:
        e = tl.exp(tl.minimum(m, x) - mn)
        s_new = tl.where(x > m, s * e + 1.0, s + e)
    else:
        s_new = s * tl.exp(m - mn) + tl.exp(x - mn)
    # Neither side finite yet: keep the empty sum.
    s = tl.where(mn == -float("inf"), s, s_new)
    return mn, s


@triton.jit
def _load(x_ptr, base, i, lead, end, inside):
    if inside:
        x = tl.load(x_ptr + base + i).to(tl.float32)
    else:
        mask = (i >= lead) & (i < end)
        x = tl.load(x_ptr + base + i, mask=mask, other=-float("inf")).to(tl.float32)
    return x


@triton.jit
def _row_loop(
    x_ptr,
    y_ptr,
    lse_ptr,
    n,
    stride,
    RBLOCK: tl.constexpr,
    ALIGN: tl.constexpr,
    ONE_EXP: tl.constexpr,
    WRITE: tl.constexpr,
    MOVE_ONLY: tl.constexpr = False,
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
    m = tl.full([RBLOCK], -float("inf"), tl.float32)
    s = tl.zeros([RBLOCK], tl.float32)
    for off in range(0, end, RBLOCK):
        i = off + tl.arange(0, RBLOCK)
        if ALIGN > 1:
            inside = (off >= lead) & (off + RBLOCK <= end)
        else:
            inside = False
        x = _load(x_ptr, base, i, lead, end, inside)
        if MOVE_ONLY:
            m = tl.maximum(m, x)
        else:
            m, s = _combine(m, s, x, ONE_EXP)
    mm = tl.max(m, 0)
    ss = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - mm)), 0)
    if WRITE:
        r = 1.0 / mm if MOVE_ONLY else 1.0 / ss
        for off in range(0, end, RBLOCK):
            i = off + tl.arange(0, RBLOCK)
            if ALIGN > 1:
                inside = (off >= lead) & (off + RBLOCK <= end)
            else:
                inside = False
            x = _load(x_ptr, base, i, lead, end, inside)
            if MOVE_ONLY:
                y = (x * r).to(y_ptr.dtype.element_ty)
            else:
                y = (tl.exp(x - mm) * r).to(y_ptr.dtype.element_ty)
            if inside:
                tl.store(y_ptr + base + i, y)
            else:
                tl.store(y_ptr + base + i, y, mask=(i >= lead) & (i < end))
    else:
        tl.store(lse_ptr + row, mm + tl.log(ss))


def row_loop(x, rblock, warps, align, one_exp, write, move_only=False):
    rows, n = x.shape
    y = torch.empty_like(x) if write else x
    lse = torch.empty(rows, device=x.device, dtype=torch.float32)
    _row_loop[(rows,)](
        x,
        y,
        lse,
        n,
        x.stride(0),
        RBLOCK=rblock,
        ALIGN=align,
        ONE_EXP=one_exp,
        WRITE=write,
        MOVE_ONLY=move_only,
        num_warps=warps,
    )
    return y if write else lse


def compiled_us(fn, x, **patch):
    from torch._inductor import config

    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False, **patch):
        compiled = torch.compile(fn, dynamic=False)
        compiled(x)
        return bench(lambda: compiled(x)) * 1e3


def hand(
    shapes: list[tuple[int, int]],
    move_only: bool = False,
    dtypes: tuple[str, ...] = ("bfloat16",),
) -> None:
    from torch._inductor import config

    fork = hasattr(config, "one_pass_reductions")
    results = []
    for shape, dtype in ((s, d) for s in shapes for d in dtypes):
        x, ref, copy, default, _ = softmax_baselines(shape, dtype)
        lse_ref = torch.logsumexp(x.float(), -1)
        res = {
            "shape": list(shape),
            "dtype": dtype,
            "copy_us": copy,
            "softmax_default_us": default,
        }
        res["lse_default_us"] = compiled_us(lambda t: torch.logsumexp(t, -1), x)
        res["amax_us"] = compiled_us(lambda t: t.amax(-1), x)
        if fork:
            res["softmax_pass_us"] = compiled_us(
                lambda t: torch.softmax(t, -1), x, one_pass_reductions=True
            )
            res["lse_pass_us"] = compiled_us(
                lambda t: torch.logsumexp(t, -1), x, one_pass_reductions=True
            )
        if move_only:
            # the max of each row, then the row scaled by it (float32 reference)
            ref = x.float() * (1.0 / x.float().amax(-1, keepdim=True))
        for write in (True,) if move_only else (True, False):
            for one_exp in (False,) if move_only else (False, True):
                for align in (1, 8):
                    for rblock in (2048, 4096, 8192):
                        for warps in (16, 32):
                            if rblock // (32 * warps) < 2:
                                continue
                            kind = "lse"
                            if write:
                                kind = "move" if move_only else "softmax"
                            key = (
                                f"{kind}_"
                                f"{'one' if one_exp else 'two'}_"
                                f"{'aligned' if align > 1 else 'masked'}_"
                                f"r{rblock}_w{warps}"
                            )
                            args = (x, rblock, warps, align, one_exp, write, move_only)
                            try:
                                out = row_loop(*args)
                                want = ref if write else lse_ref
                                err = (out.float() - want).abs().max().item()
                                us = bench(lambda: row_loop(*args)) * 1e3
                                res[key] = {"us": us, "err": err}
                            except Exception as e:  # a probe: record and go on
                                res[key] = {"error": str(e)[:200]}
        results.append(res)
        name = "move_only_hand" if move_only else "lean_combine_hand"
        with open(f"{OUT}/{name}.json", "w") as fh:
            json.dump(results, fh, indent=1)
        print(json.dumps({k: v for k, v in res.items() if not isinstance(v, dict)}))
        for kind in ("move",) if move_only else ("softmax", "lse"):
            for combine in ("two",) if move_only else ("two", "one"):
                for loads in ("masked", "aligned"):
                    prefix = f"{kind}_{combine}_{loads}_"
                    timed = sorted(
                        (v["us"], k)
                        for k, v in res.items()
                        if k.startswith(prefix) and "us" in v
                    )
                    if timed:
                        us, key = timed[0]
                        err = res[key]["err"]
                        print(
                            f"{'x'.join(map(str, shape))} {dtype} {prefix:28s} best "
                            f"{us:7.1f} us ({copy / us if kind != 'lse' else res['amax_us'] / us:.0%} "
                            f"of {'copy' if kind != 'lse' else 'amax'}) "
                            f"{key[len(prefix) :]} err {err:.1e}",
                            flush=True,
                        )


ARMS = ("default", "pass_upstream_combine", "pass_lean_combine")
# Not timed unless asked for: the lean combine also where the pass's rule
# leaves it out (an online softmax that reads its row again in upstream's
# loop), its rule replaced by module attribute (the pass calls it so).
LEAN_EVERYWHERE = "pass_lean_everywhere"
# The --loop override's BLOCKxWARPS, for the result's name.
LOOP = ""


@contextlib.contextmanager
def _lean_everywhere() -> Any:
    from torch._inductor import one_pass_reductions as opr

    rule = opr.uses_lean_combine
    opr.uses_lean_combine = lambda decision, allowed: (
        allowed and decision.online and decision.loop_block is not None
    )
    try:
        yield
    finally:
        opr.uses_lean_combine = rule


def inductor(
    shapes: list[tuple[int, int]],
    dtypes: list[str],
    arms: tuple[str, ...] = ARMS,
    ops: tuple[str, ...] = ("softmax", "log_softmax", "cross_entropy"),
) -> None:
    from reductions import code_sha, least_bytes, make_inputs, op_fn

    from torch._inductor import config
    from torch._inductor.graph import GraphLowering

    results = []
    for rows, row in shapes:
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name)
            x = make_inputs("softmax", rows, row, dtype, "cuda")[0]
            copy = bench(x.clone) * 1e3
            for op in ops:
                inputs = make_inputs(op, rows, row, dtype, "cuda")
                fn = op_fn(op)
                case = {
                    "op": op,
                    "shape": f"{rows}x{row}",
                    "dtype": dtype_name,
                    "copy_us": copy,
                    "least_bytes": least_bytes(op, rows, row, dtype.itemsize, False),
                }
                compiled = {}
                torch._dynamo.reset()
                for arm in arms:
                    # A code object of its own per arm: Dynamo caches its
                    # compile on the code object, so the arms coexist.
                    arm_fn = eval("lambda *a: fn(*a)", {"fn": fn})
                    patch = {"fx_graph_cache": False}
                    patch["one_pass_reductions"] = arm != "default"
                    patch["one_pass_reductions_lean_combine"] = arm in (
                        "pass_lean_combine",
                        LEAN_EVERYWHERE,
                    )
                    everywhere = arm == LEAN_EVERYWHERE
                    with (
                        config.patch(patch),
                        _lean_everywhere() if everywhere else contextlib.nullcontext(),
                    ):
                        c = torch.compile(arm_fn, dynamic=False)
                        # Not run_and_get_code: it resets Dynamo, which
                        # would drop the arms compiled before this one.
                        codes: list[str] = []
                        with mock.patch.object(
                            GraphLowering, "save_output_code", codes.append
                        ):
                            c(*inputs)
                    code = "\n".join(codes)
                    case[f"{arm}_lean_in_code"] = "online_softmax_combine_lean(" in code
                    case[f"{arm}_code_sha"] = code_sha(codes)
                    compiled[arm] = c
                ref = fn(*inputs).float()
                for arm in arms:
                    err = (compiled[arm](*inputs).float() - ref).abs().max().item()
                    case[f"{arm}_err_vs_eager"] = err
                # Interleaved: each round times every arm once.
                times: dict[str, list[float]] = {arm: [] for arm in arms}
                for _ in range(3):
                    for arm in arms:
                        c = compiled[arm]
                        times[arm].append(bench(lambda: c(*inputs)) * 1e3)
                for arm in arms:
                    case[f"{arm}_us"] = statistics.median(times[arm])
                results.append(case)
                loop = f"_loop{LOOP}" if LOOP else ""
                name = f"lean_combine_inductor_{'-'.join(arms)}{loop}.json"
                with open(f"{OUT}/{name}", "w") as fh:
                    json.dump(results, fh, indent=1)
                bytes_us = (
                    copy * case["least_bytes"] / (2 * x.numel() * x.element_size())
                )
                timed = " ".join(
                    f"{a} {case[a + '_us']:7.1f} ({bytes_us / case[a + '_us']:.0%})"
                    for a in arms
                )
                print(
                    f"{op:13s} {case['shape']:12s} {dtype_name:9s} copy {copy:6.1f} "
                    f"{timed} lean in code "
                    f"{[case[a + '_lean_in_code'] for a in arms]}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="2048x50257,1046x128256")
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--hand", action="store_true")
    parser.add_argument("--inductor", action="store_true")
    parser.add_argument(
        "--move-only",
        action="store_true",
        help="with --hand: the two-read loop with nothing to compute",
    )
    parser.add_argument("--ops", default="softmax,log_softmax,cross_entropy")
    parser.add_argument(
        "--loop",
        default="",
        help="BLOCKxWARPS: the pass's looped kernels get this block and warps "
        "instead of its own (reductions_loop_configs' override of its hook)",
    )
    parser.add_argument(
        "--arms",
        default=",".join(ARMS),
        help=f"the --inductor arms to time, of {', '.join(ARMS)} and {LEAN_EVERYWHERE}",
    )
    args = parser.parse_args()
    shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",")]
    if args.loop:
        import reductions_loop_configs as loop_configs

        global LOOP
        LOOP = args.loop
        block, warps = map(int, args.loop.split("x"))
        loop_configs._wrap_hook()
        loop_configs.OVERRIDE.update({"R0_BLOCK": block, "num_warps": warps})
    if args.hand:
        hand(shapes, args.move_only, tuple(args.dtypes.split(",")))
    if args.inductor:
        inductor(
            shapes,
            args.dtypes.split(","),
            tuple(args.arms.split(",")),
            tuple(args.ops.split(",")),
        )


if __name__ == "__main__":
    main()
