"""Where does the time of Inductor's looped online logsumexp go?

A copy of its kernel, with switches.

The kernel below is the body Inductor generates for cross-entropy's forward
logsumexp at a row too long for one block (the one-pass pass's
``upstream_loop``: 2048 elements a step, 16 warps, approximate exp), as a
standalone Triton kernel with two switches: ``HELPER`` folds each element in
with upstream's ``triton_helpers.online_softmax_combine`` (1), with the
fork's ``online_softmax_combine_lean`` (2), or with a plain ``tl.maximum``
and two exps, no guards (0); ``EVICT`` keeps Inductor's
``evict_first`` on the load (1) or not (0); each in the generated code's 2-D
``[XBLOCK, R0_BLOCK]`` form and in 1-D.  Against Inductor's ``amax`` of the
same rows (a pure read); bfloat16, ``do_bench_cudagraph`` median us.

    python3 tools/fork.py run -- python3 \
        benchmarks/fusion/probes/reductions_combine_kernel_copy.py 2048x50257,1046x128256

(The helpers' signatures are torch 2.11.0's, the H100's release.)
"""

# The timed closures run inside the loop iteration that defines them.
# ruff: noqa: B023
import itertools
import sys
import torch
import triton
import triton.language as tl
from triton.testing import do_bench_cudagraph as bench
from torch._inductor.runtime import triton_helpers


@triton.jit
def _fold(in_ptr0, index, mask, _max, _sum, EVICT: tl.constexpr, HELPER: tl.constexpr):
    """One block of the row loaded and folded into the running max and sum,
    as the generated kernel's loop body does (``HELPER``, ``EVICT``: the
    module's docstring)."""
    if EVICT:
        x = tl.load(in_ptr0 + index, mask, eviction_policy="evict_first", other=0.0).to(
            tl.float32
        )
    else:
        x = tl.load(in_ptr0 + index, mask, other=0.0).to(tl.float32)
    if HELPER == 1:
        mn, sn = triton_helpers.online_softmax_combine(_max, _sum, x, True)
    elif HELPER == 2:
        mn, sn = triton_helpers.online_softmax_combine_lean(_max, _sum, x, True)
    else:
        mn = tl.maximum(_max, x)
        sn = _sum * tl.exp(_max - mn) + tl.exp(x - mn)
    return tl.where(mask, mn, _max), tl.where(mask, sn, _sum)


@triton.jit
def k2d(
    in_ptr0,
    out_ptr0,
    out_ptr1,
    xnumel,
    r0_numel: tl.constexpr,
    XBLOCK: tl.constexpr,
    R0_BLOCK: tl.constexpr,
    EVICT: tl.constexpr,
    HELPER: tl.constexpr,
):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _max = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    _sum = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        _max, _sum = _fold(
            in_ptr0, r0_index + r0_numel * x0, r0_mask, _max, _sum, EVICT, HELPER
        )
    tmp3, tmp4 = triton_helpers.online_softmax_reduce(_max, _sum, 1, True)
    tl.store(out_ptr0 + (x0), tmp3[:, None], None)
    tl.store(out_ptr1 + (x0), tmp4[:, None], None)


@triton.jit
def k1d(
    in_ptr0,
    out_ptr0,
    out_ptr1,
    xnumel,
    r0_numel: tl.constexpr,
    R0_BLOCK: tl.constexpr,
    EVICT: tl.constexpr,
    HELPER: tl.constexpr,
):
    x0 = tl.program_id(0)
    r0_base = tl.arange(0, R0_BLOCK)
    _max = tl.full([R0_BLOCK], float("-inf"), tl.float32)
    _sum = tl.zeros([R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        _max, _sum = _fold(
            in_ptr0, r0_index + r0_numel * x0, r0_mask, _max, _sum, EVICT, HELPER
        )
    tmp3, tmp4 = triton_helpers.online_softmax_reduce(_max, _sum, 0, True)
    tl.store(out_ptr0 + x0, tmp3)
    tl.store(out_ptr1 + x0, tmp4)


def main() -> None:
    for shape in sys.argv[1].split(","):
        rows, n = map(int, shape.split("x"))
        x = torch.randn(rows, n, device="cuda", dtype=torch.bfloat16) * 4
        ref = torch.logsumexp(x.float(), -1)
        m = torch.empty(rows, device="cuda")
        s = torch.empty(rows, device="cuda")
        amax = torch.compile(lambda t: t.amax(-1))
        amax(x)
        print(shape, "amax", round(bench(lambda: amax(x)) * 1e3, 1), flush=True)
        for dims, evict, helper in itertools.product((2, 1), (1, 0), (1, 2, 0)):
            for rb, w in ((2048, 16), (4096, 16), (4096, 32)):

                def run() -> None:
                    if dims == 2:
                        k2d[(rows,)](
                            x,
                            m,
                            s,
                            rows,
                            n,
                            1,
                            rb,
                            evict,
                            helper,
                            num_warps=w,
                            num_stages=1,
                        )
                    else:
                        k1d[(rows,)](
                            x,
                            m,
                            s,
                            rows,
                            n,
                            rb,
                            evict,
                            helper,
                            num_warps=w,
                            num_stages=1,
                        )

                run()
                err = (m + s.log() - ref).abs().max().item()
                us = bench(run) * 1e3
                print(
                    shape,
                    f"{dims}d evict{evict} helper{helper} r{rb} w{w} {us:7.1f} err {err:.1e}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
