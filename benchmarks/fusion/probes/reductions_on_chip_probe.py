"""Why does a row held on chip fall short of copy speed: registers, spills or form?

A probe of the one-pass pass's on-chip form at its longest rows (CUDA).  Each
op and shape is compiled with ``config.one_pass_reductions`` off (upstream),
on (the pass's own choice), on with the on-chip kernel's ``num_warps`` set,
and on with a smaller ``one_pass_reductions_elements_per_thread`` so that the
row is too long and the pass walks it in a loop whose ``R0_BLOCK`` /
``num_warps`` are set.  Per setting: the forward's time as CUDA graph
replays (``do_bench_cudagraph`` median), each kernel's GPU time from the
profiler (``harness.kernel_time_rounds``), and per generated Triton kernel its
registers per thread and spilled bytes as Triton reports them (the
``n_regs`` / ``n_spills`` of the compiled binary Inductor launches).  The
override is ``reductions_loop_configs``' wrapper of the pass's own
``one_pass_reductions.triton_kernel_kwargs`` (the hook calls it by module
attribute); nothing of upstream is replaced.
``amax`` (a row read once, nothing else) gives the read-only speed of
Inductor's own reduction kernel at the same shape; ``max_then_scale`` (the
row's max, then the row scaled by it: two reads and a write, no exp) the
speed of a kernel of two passes over the row with nothing to compute; and
``cross_entropy_target_in_row`` cross-entropy written so that each row's
target logit is picked out in the row's own kernel (a sum over the row of
the one element whose index is the target) instead of gathered by the
loss's kernel after it, which is what upstream's decomposition does.
``--on-chip-ept`` sets ``one_pass_reductions_elements_per_thread`` for the
on-chip settings, so that a row the pass would loop over (50257 at 32) is
held on chip (at 64: 32 warps of 64 elements a thread).

``--sums-on-chip`` holds the kernels that only sum on chip in the pass's
settings, as the pass did before its ``one_pass_sums_at_copy_speed`` rule.

``--unaligned`` adds the pass and each forced loop without its aligned
steps (``one_pass_reductions_aligned_loads`` off).

``--backward`` times forward+backward steps instead (the gradient of the
input for a fixed incoming gradient), each kernel of both in the profile.

    python benchmarks/fusion/probes/reductions_on_chip_probe.py \\
        --ops softmax,log_softmax --shapes 4096x32768   # $OUT/probe_on_chip.json
"""

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


def settings(
    on_chip_warps: list[int],
    loops: list[tuple[int, int]],
    loop_ept: int,
    on_chip_ept: int | None = None,
    sums_on_chip: bool = False,
    unaligned: bool = False,
) -> list[dict[str, Any]]:
    """Upstream, the pass, the pass on chip at each of ``on_chip_warps``
    (at ``on_chip_ept`` elements per thread where given), and the pass made
    to loop (``loop_ept`` elements per thread) at each (R0_BLOCK, warps) of
    ``loops``.  With ``sums_on_chip`` every setting of the pass holds
    kernels that only sum on chip too (``one_pass_reductions_sums_on_chip``),
    and its own choice is named ``pass_sums_on_chip``.  With ``unaligned``
    the pass and each loop come again without aligned steps
    (``one_pass_reductions_aligned_loads`` off; ``..._unaligned``)."""
    on_chip_extra = {} if on_chip_ept is None else {"ept": on_chip_ept}
    sums = {"sums_on_chip": True} if sums_on_chip else {}
    out: list[dict[str, Any]] = [
        {"name": "upstream", "on": False},
        {"name": "pass_sums_on_chip" if sums_on_chip else "pass", "on": True, **sums},
    ]
    out += [
        {
            "name": f"on_chip_{w}w",
            "on": True,
            "override": {"num_warps": w},
            **on_chip_extra,
            **sums,
        }
        for w in on_chip_warps
    ]
    out += [
        {
            "name": f"loop_{r0}_{w}w",
            "on": True,
            "ept": loop_ept,
            "override": {"R0_BLOCK": r0, "num_warps": w},
            **sums,
        }
        for r0, w in loops
    ]
    if unaligned:
        out += [
            {**s, "name": f"{s['name']}_unaligned", "unaligned": True}
            for s in out
            if s["on"] and not s["name"].startswith("on_chip")
        ]
    return out


def kernel_registers(modules_before: int) -> list[dict[str, Any]]:
    """Registers and spills of each Triton kernel of the modules Inductor
    loaded since ``modules_before`` modules."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    found = []
    for mod in PyCodeCache.modules[modules_before:]:
        for name, value in vars(mod).items():
            if isinstance(value, CachingAutotuner):
                for launcher in value.launchers:
                    found.append(
                        {
                            "kernel": name,
                            "config": dict(launcher.config.kwargs),
                            "num_warps": launcher.config.num_warps,
                            "n_regs": launcher.n_regs,
                            "n_spills": launcher.n_spills,
                        }
                    )
    return found


def run(
    op: str,
    rows: int,
    row: int,
    dtype: str,
    setting: dict[str, Any],
    backward: bool = False,
) -> Any:
    import torch
    import triton.testing
    from harness import kernel_time_rounds
    from reductions_loop_configs import _ops, OVERRIDE
    from torch._inductor import config as inductor_config
    from torch._inductor.codecache import PyCodeCache

    import torch.nn.functional as F

    ops = {
        **_ops(),
        "cross_entropy": lambda t, target: F.cross_entropy(t, target),
        # a reduction that reads its row once and does nothing else: the
        # read-only speed of Inductor's own kernel (not the pass's business)
        "amax": lambda t, _: t.amax(-1),
        "max_then_scale": lambda t, _: t * t.amax(-1, keepdim=True),
        "cross_entropy_target_in_row": cross_entropy_target_in_row,
    }
    reference = {"cross_entropy_target_in_row": ops["cross_entropy"]}.get(op, ops[op])
    fn = ops[op]
    x = torch.randn(rows, row, device="cuda", dtype=getattr(torch, dtype)) * 4
    target = torch.randint(0, row, (rows,), device="cuda")
    OVERRIDE.clear()
    OVERRIDE.update(setting.get("override", {}))
    patch: dict[str, Any] = {
        "one_pass_reductions": setting["on"],
        "fx_graph_cache": False,
    }
    if "ept" in setting:
        patch["one_pass_reductions_elements_per_thread"] = setting["ept"]
    if setting.get("sums_on_chip"):
        patch["one_pass_reductions_sums_on_chip"] = True
    if setting.get("unaligned"):
        patch["one_pass_reductions_aligned_loads"] = False
    torch._dynamo.reset()
    before = len(PyCodeCache.modules)
    with inductor_config.patch(patch):
        compiled = torch.compile(lambda t, y: fn(t, y), dynamic=False)
        step = with_backward(compiled, x, target) if backward else compiled
        step(x, target)
        ms = triton.testing.do_bench_cudagraph(
            lambda: step(x, target), return_mode="median"
        )
        kernel_times = kernel_time_rounds(
            {"step": lambda: step(x, target)}, rounds=1, per_round=3
        )["step"]["kernels"]
    copy = triton.testing.do_bench_cudagraph(lambda: x.clone(), return_mode="median")
    # against the op in eager float32 (cross-entropy for the target-in-row form)
    expected = with_backward(reference, x, target) if backward else reference
    diff = (step(x, target).float() - expected(x.float(), target).float()).abs()
    return {
        "max_abs_diff": float(diff.max()),
        "kernel_us": {k["name"]: k["s"] * 1e6 for k in kernel_times},
        "op": op,
        "shape": [rows, row],
        "dtype": dtype,
        "setting": setting["name"],
        "pass": "forward+backward" if backward else "forward",
        "us": ms * 1e3,
        "copy_us": copy * 1e3,
        "fraction_of_copy": fraction_of_copy(op, x, ms * 1e3, copy * 1e3, backward),
        "kernels": kernel_registers(before),
    }


def fraction_of_copy(
    op: str, x: Any, us: float, copy_us: float, backward: bool
) -> float:
    """The step's bandwidth at the least bytes the op needs
    (``reductions.least_bytes``: forward+backward adds the backward's reads
    and its gradient) as a fraction of a copy of ``x``'s; for the probe's
    own forms (``amax``, ...), a copy's time over the step's."""
    from reductions import least_bytes, OPS

    if op not in OPS:
        return copy_us / us
    rows, row = x.shape
    nbytes = least_bytes(op, rows, row, x.element_size(), backward)
    return (nbytes / us) / (2 * x.numel() * x.element_size() / copy_us)


def with_backward(fn: Any, x: Any, target: Any) -> Any:
    """A step of ``fn`` that returns the gradient of its input for a fixed
    incoming gradient (seeded, of ``fn``'s output shape, in its output's
    dtype, converted once per dtype so that no conversion kernel runs in the
    step): the forward and the backward kernels, as a training step runs
    them."""
    import torch

    seeded = torch.Generator(device=x.device).manual_seed(1)
    grad = torch.randn(
        fn(x, target).shape, generator=seeded, device=x.device, dtype=torch.float32
    )
    grads = {torch.float32: grad}

    def step(t: Any, y: Any) -> Any:
        t = t.detach().requires_grad_(True)
        out = fn(t, y)
        if out.dtype not in grads:
            grads[out.dtype] = grad.to(out.dtype)
        return torch.autograd.grad(out, t, grads[out.dtype])[0]

    return step


def cross_entropy_target_in_row(logits: Any, target: Any) -> Any:
    """Mean cross-entropy, each row's target logit summed out of its row
    (the one element whose column is the target), so that the row's kernel
    yields it beside the logsumexp.  Targets are assumed valid (no
    ``ignore_index``), as in the probe's inputs."""
    import torch

    x = logits.float()
    columns = torch.arange(x.shape[-1], device=x.device)
    picked = torch.where(columns == target[:, None], x, 0.0).sum(-1)
    return (torch.logsumexp(x, -1) - picked).mean()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=lambda s: s.split(","), default=["softmax"])
    p.add_argument(
        "--shapes",
        type=lambda s: [tuple(map(int, v.split("x"))) for v in s.split(",")],
        default=[(4096, 32768)],
    )
    p.add_argument(
        "--dtype",
        type=lambda s: s.split(","),
        default=["bfloat16"],
        help="one dtype or several, e.g. float32,bfloat16",
    )
    p.add_argument(
        "--backward",
        action="store_true",
        help="time forward+backward steps (each kernel of both in the profile)",
    )
    p.add_argument(
        "--on-chip-warps",
        type=lambda s: [int(v) for v in s.split(",") if v],
        default=[16, 32],
    )
    p.add_argument(
        "--loops",
        type=lambda s: [tuple(map(int, v.split("/"))) for v in s.split(",") if v],
        default=[(8192, 32), (8192, 16), (4096, 16), (4096, 32)],
        help="R0_BLOCK/num_warps of the forced loop, e.g. 8192/32,4096/16",
    )
    p.add_argument("--loop-ept", type=int, default=4)
    p.add_argument(
        "--on-chip-ept",
        type=int,
        default=None,
        help="elements per thread of the on-chip settings (default: the pass's)",
    )
    p.add_argument(
        "--sums-on-chip",
        action="store_true",
        help="the pass's settings hold kernels that only sum on chip too "
        "(the counterfactual of its one_pass_sums_at_copy_speed rule)",
    )
    p.add_argument(
        "--unaligned",
        action="store_true",
        help="the pass and each loop again without aligned steps "
        "(one_pass_reductions_aligned_loads off)",
    )
    args = p.parse_args(argv)
    from reductions_loop_configs import _wrap_hook

    _wrap_hook()
    results = []
    cases = [
        (op, shape, dtype)
        for dtype in args.dtype
        for op in args.ops
        for shape in args.shapes
    ]
    for op, (rows, row), dtype in cases:
        for setting in settings(
            args.on_chip_warps,
            args.loops,
            args.loop_ept,
            args.on_chip_ept,
            args.sums_on_chip,
            args.unaligned,
        ):
            try:
                res = run(op, rows, row, dtype, setting, args.backward)
            except Exception as e:  # a setting Triton cannot compile
                res = {
                    "op": op,
                    "shape": [rows, row],
                    "dtype": dtype,
                    "setting": setting["name"],
                }
                res["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            results.append(res)
            regs = [
                (k["kernel"][-12:], k["num_warps"], k["n_regs"], k["n_spills"])
                for k in res.get("kernels", [])
            ]
            pct = res.get("fraction_of_copy", 0)
            times = [
                f"{name[:28]} {us:.1f}" for name, us in res.get("kernel_us", {}).items()
            ]
            print(
                op,
                dtype,
                f"{rows}x{row}",
                setting["name"],
                f"{res.get('us', 0):.1f} us ({pct:.0%} of copy)",
                regs or res.get("error"),
                times,
                flush=True,
            )
            with open(f"{OUT}/probe_on_chip.json", "w") as fh:
                json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
