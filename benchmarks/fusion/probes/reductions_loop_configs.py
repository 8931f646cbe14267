"""Which looped configuration should the one-pass pass give a too-long row?

A probe of the pass's ``loop_block`` form on CUDA: each op and shape
compiled with ``config.one_pass_reductions`` off (upstream) and on with the
looped kernel's ``R0_BLOCK`` / ``num_warps`` / ``num_stages`` overridden,
timed as CUDA graph replays (``do_bench_cudagraph`` median), and the
kernels of the step with their GPU time (``torch.profiler``), so that the
kernel a setting changes is seen apart from the rest of the step.  The
override wraps the pass's own ``one_pass_reductions.triton_kernel_kwargs``
(the hook calls it by module attribute); nothing of upstream is replaced.
Each setting also records the launcher each Triton kernel kept
(``launch_facts``: upstream's autotuned winner, registers and spills a
thread), so that a time can be read against the blocks a multiprocessor
holds at once.

    python benchmarks/fusion/probes/reductions_loop_configs.py   # $OUT/probe_loop_cfg.json
    python benchmarks/fusion/probes/reductions_loop_configs.py --ops cross_entropy_fp32 \\
        --shapes 8184x50257 --backward --blocks 2048,4096,8192

``cross_entropy_fp32``: bfloat16 logits cast to float32, then
cross-entropy.  ``causal_lm_loss``: a language model's loss as Hugging Face
computes it for GPT-2 and Llama (the rows as 8 sequences; labels padded
with the ignored index, shifted by one token, logits cast to float32), whose
backward is the GPT-2 step's largest softmax-class kernel.
"""

# The timed lambdas run inside the loop iteration that defines them.
# ruff: noqa: B023
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


# the suites and the harness, one folder up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = os.environ.get("OUT", "/tmp")
# The override the wrapped hook applies to the looped kernel's config.
OVERRIDE: dict[str, int] = {}


def _ops() -> dict[str, Any]:
    """The sweep's row ops (``reductions.op_fn``; each called with the
    logits and a target, which only the losses use) and the two losses."""
    import torch.nn.functional as F
    from reductions import op_fn

    def of_logits(op: str) -> Any:
        fn = op_fn(op)
        return lambda t, _: fn(t)

    ops: dict[str, Any] = {
        op: of_logits(op) for op in ("softmax", "log_softmax", "layer_norm", "rms_norm")
    }
    ops["cross_entropy_fp32"] = lambda t, target: F.cross_entropy(t.float(), target)
    ops["causal_lm_loss"] = _causal_lm_loss
    return ops


def _causal_lm_loss(logits: Any, tokens: Any, sequences: int = 8) -> Any:
    """The loss of a causal language model over ``logits`` of rows of
    ``sequences`` sequences: each token predicts the next, the last of
    each sequence predicts nothing (label -100, ignored)."""
    import torch.nn.functional as F

    labels = F.pad(tokens.view(sequences, -1), (0, 1), value=-100)[..., 1:]
    return F.cross_entropy(
        logits.float(), labels.contiguous().view(-1), ignore_index=-100
    )


def _wrap_hook() -> None:
    """Apply :data:`OVERRIDE` to the fixed config the pass returns: an
    override with an ``R0_BLOCK`` to looped kernels only, one without (say
    ``num_warps`` alone) to persistent and looped kernels alike."""
    from torch._inductor import one_pass_reductions as opr

    original = opr.triton_kernel_kwargs

    def overridden(features: Any, groups: Any, kwargs: Any) -> Any:
        out = original(features, groups, kwargs)
        fixed = out.get("fixed_config")
        looped = fixed is not None and "R0_BLOCK" in fixed.config
        if fixed is not None and OVERRIDE and (looped or "R0_BLOCK" not in OVERRIDE):
            fixed.config.update(OVERRIDE)
        return out

    opr.triton_kernel_kwargs = overridden


def launch_facts(since: int) -> list[dict[str, Any]]:
    """The launcher each Triton kernel of the modules Inductor loaded after
    the first ``since`` kept: its config (for an autotuned kernel, the
    winner) and its registers and spills a thread, from which the blocks a
    multiprocessor holds at once follow.  Read after the step has run (an
    autotuned kernel keeps one launcher once it has been timed)."""
    from torch._inductor.codecache import PyCodeCache

    facts: dict[str, dict[str, Any]] = {}
    for module in PyCodeCache.modules[since:]:
        for name, kernel in vars(module).items():
            launchers = getattr(kernel, "launchers", None)
            if not name.startswith("triton_") or not launchers:
                continue
            # The same kernel may sit in its own module too, not yet run
            # (every candidate config a launcher): the run one has one.
            if name in facts and facts[name]["launchers"] <= len(launchers):
                continue
            launcher = launchers[0]
            config = launcher.config
            facts[name] = {
                "kernel": name,
                "config": dict(config.kwargs),
                "num_warps": config.num_warps,
                "num_stages": config.num_stages,
                "n_regs": getattr(launcher, "n_regs", None),
                "n_spills": getattr(launcher, "n_spills", None),
                "launchers": len(launchers),
            }
    return sorted(facts.values(), key=lambda f: f["kernel"])


WARPS_STAGES = ((16, 1), (32, 1), (32, 2))


def settings(
    blocks: list[int], warps_stages: tuple[tuple[int, int], ...] = WARPS_STAGES
) -> list[tuple[bool, int, int, int]]:
    """Upstream first, then each block at each (warps, stages) of
    ``warps_stages`` (by default 16 and 32 warps of one stage and 32 of
    two): (pass on, R0_BLOCK, num_warps, num_stages).  No blocks: upstream
    and the pass's own choice (R0_BLOCK 0)."""
    if not blocks:
        return [(False, 0, 0, 0), (True, 0, 0, 0)]
    return [(False, 0, 0, 0)] + [
        (True, r0, w, st) for r0 in blocks for (w, st) in warps_stages
    ]


def run(
    op: str,
    rows: int,
    row: int,
    backward: bool,
    blocks: list[int],
    dtype: str = "bfloat16",
    save_code: bool = False,
    warps_stages: tuple[tuple[int, int], ...] = WARPS_STAGES,
) -> list[Any]:
    import torch
    import triton.testing
    from harness import kernel_time_rounds
    from torch._inductor import config as inductor_config
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.utils import run_and_get_code

    fn = _ops()[op]
    x = torch.randn(rows, row, device="cuda", dtype=getattr(torch, dtype)) * 4
    target = torch.randint(0, row, (rows,), device="cuda")
    x.requires_grad_(backward)
    copy = triton.testing.do_bench_cudagraph(lambda: x.clone(), return_mode="median")
    results = []
    for on, r0, w, st in settings(blocks, warps_stages):
        OVERRIDE.clear()
        if r0:
            OVERRIDE.update({"R0_BLOCK": r0, "num_warps": w, "num_stages": st})
        torch._dynamo.reset()
        loaded = len(PyCodeCache.modules)
        with inductor_config.patch(one_pass_reductions=on, fx_graph_cache=False):
            compiled = torch.compile(lambda t, y: fn(t, y), dynamic=False)

            def step() -> Any:
                out = compiled(x, target)
                if backward:
                    out.sum().backward()
                    x.grad = None
                return out

            codes = run_and_get_code(step)[1]  # not the output: its graph
            if save_code:
                setting = "upstream" if not on else f"{r0}_{w}w_{st}s" if r0 else "pass"
                name = f"code_{op}_{rows}x{row}_{dtype}_{setting}.py"
                Path(OUT, name).write_text("\n".join(codes))
            ms = triton.testing.do_bench_cudagraph(step, return_mode="median")
            kernels = kernel_time_rounds({"step": step}, rounds=1, per_round=3)
            launches = launch_facts(loaded)
        results.append(
            {
                "op": op,
                "shape": [rows, row],
                "dtype": dtype,
                "backward": backward,
                "on": on,
                "r0": r0,
                "w": w,
                "st": st,
                "us": ms * 1e3,
                "pct": copy / ms,
                "kernels": [
                    {"name": k["name"], "us": k["s"] * 1e6}
                    for k in kernels["step"]["kernels"]
                ],
                "launches": launches,
            }
        )
        print(
            op,
            rows,
            row,
            dtype,
            "backward" * backward,
            "upstream" if not on else f"{r0}/{w}w/{st}s" if r0 else "pass",
            f"{ms * 1e3:.1f} us",
            [
                f"{k['name'][:40]} {k['s'] * 1e6:.1f}"
                for k in kernels["step"]["kernels"]
            ],
            [
                f"{f['kernel'][:40]} {f['config']} w{f['num_warps']} "
                f"regs {f['n_regs']} spills {f['n_spills']}"
                for f in launches
            ],
            flush=True,
        )
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--ops", type=lambda s: s.split(","), default=["softmax", "rms_norm"]
    )
    p.add_argument(
        "--shapes",
        type=lambda s: [tuple(map(int, v.split("x"))) for v in s.split(",")],
        default=[(2670, 50257), (1046, 128256)],
    )
    p.add_argument("--backward", action="store_true")
    p.add_argument("--dtype", default="bfloat16", help="of the logits")
    p.add_argument(
        "--save-code", action="store_true", help="write each setting's code to $OUT"
    )
    p.add_argument(
        "--warps-stages",
        type=lambda s: tuple(tuple(map(int, v.split("/"))) for v in s.split(",")),
        default=WARPS_STAGES,
        help="warps/stages settings of each block, e.g. 16/1,32/1",
    )
    p.add_argument(
        "--blocks",
        type=lambda s: [int(v) for v in s.split(",") if v],
        default=[2048, 4096, 8192],
        help="R0_BLOCKs to try (empty: the pass's own choice only)",
    )
    args = p.parse_args(argv)
    unknown = sorted(set(args.ops) - set(_ops()))
    if unknown:
        p.error(f"unknown op(s) {unknown}; choose from {sorted(_ops())}")
    _wrap_hook()
    results = []
    for op in args.ops:
        for rows, row in args.shapes:
            results += run(
                op,
                rows,
                row,
                args.backward,
                args.blocks,
                args.dtype,
                args.save_code,
                args.warps_stages,
            )
            with open(f"{OUT}/probe_loop_cfg.json", "w") as fh:
                json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
