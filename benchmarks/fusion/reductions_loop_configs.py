"""Which looped configuration the one-pass pass should give a too-long row.

A probe of the pass's ``loop_block`` form on CUDA: softmax and RMS norm at
rows of 50257 and 128256 (bfloat16, 2^27 elements), each compiled with
``config.one_pass_reductions`` off (upstream) and on with the looped kernel's
``R0_BLOCK`` / ``num_warps`` / ``num_stages`` overridden, timed as CUDA graph
replays (``do_bench_cudagraph`` median).  The override wraps the pass's own
``one_pass_reductions.triton_kernel_kwargs`` (the hook calls it by module
attribute); nothing of upstream is replaced.

    python benchmarks/fusion/reductions_loop_configs.py   # $OUT/probe_loop_cfg.json
"""

# The timed lambdas run inside the loop iteration that defines them.
# ruff: noqa: B023

import json
import os
import itertools
import torch
import torch.nn.functional as F
import triton.testing
from torch._inductor import one_pass_reductions as opr, config as ic

OUT = os.environ.get("OUT", "/tmp")
orig = opr.triton_kernel_kwargs
state = {}


def patched(features, groups, kwargs):
    out = orig(features, groups, kwargs)
    fc = out.get("fixed_config")
    if fc is not None and "R0_BLOCK" in fc.config and state:
        fc.config.update(state)
    return out


opr.triton_kernel_kwargs = patched

fns = {
    "softmax": lambda t: torch.softmax(t, -1),
    "rms_norm": lambda t: F.rms_norm(t, (t.shape[-1],)),
}
res = []
for op, (rows, row) in itertools.product(
    ["softmax", "rms_norm"], [(2670, 50257), (1046, 128256)]
):
    x = torch.randn(rows, row, device="cuda", dtype=torch.bfloat16) * 4
    copy = triton.testing.do_bench_cudagraph(lambda: x.clone(), return_mode="median")
    for on, r0, w, st in [(False, 0, 0, 0)] + [
        (True, r0, w, st)
        for r0 in (2048, 4096, 8192)
        for (w, st) in ((16, 1), (32, 1), (32, 2))
    ]:
        state.clear()
        if on:
            state.update({"R0_BLOCK": r0, "num_warps": w, "num_stages": st})
        torch._dynamo.reset()
        with ic.patch(one_pass_reductions=on, fx_graph_cache=False):
            f = torch.compile(fns[op])
            f(x)
            ms = triton.testing.do_bench_cudagraph(lambda: f(x), return_mode="median")
        res.append(
            {
                "op": op,
                "shape": [rows, row],
                "on": on,
                "r0": r0,
                "w": w,
                "st": st,
                "us": ms * 1e3,
                "pct": copy / ms,
            }
        )
        print(res[-1], flush=True)
    with open(f"{OUT}/probe_loop_cfg.json", "w") as fh:
        json.dump(res, fh)
