"""One-pass reductions: softmax-class Triton kernels that read each row once.

Why: a softmax, log-softmax, cross-entropy, layer norm or RMS norm needs its
input read once and its output written once, the bytes of a copy.  Inductor
generates one kernel for each of them, but when a row is longer than its
persistent reduction limit (``InductorChoices.should_use_persistent_reduction``:
1024 elements for an inner reduction) the kernel loops over the row once per
*phase*: online softmax reads it twice (max and sum together, then the
normalization), the two-pass form three times, a norm twice (the
statistics, then the scale); cross-entropy's online logsumexp reads it once
but rescales its running sum at every element.  Each extra pass moves the
row again, from L2 at best.  On an H100 a bfloat16 softmax over 32768 x 4096
reaches 58% of copy bandwidth that way; the same kernel with the row held in
registers reaches copy speed.

This pass keeps the row on chip where it fits: a kernel with more than one
phase (or an online softmax) over an inner, contiguous reduction of a static
length whose row-long inputs fit in the registers of one thread block
becomes a persistent reduction, one block per row (``XBLOCK`` 1), with
``num_warps`` chosen so that each thread holds about
``config.one_pass_reductions_elements_per_thread`` elements.  The cost model
is the memory traffic: a kernel of ``p`` phases moves ``p`` reads of each
row and one write; the one-pass form one read and one write; so it saves
``(p - 1)`` row reads, as long as the row fits in registers (more elements
per thread than that spill to local memory, which is slower than the passes
saved) and there are at least as many rows as the GPU has multiprocessors
(one block per row would otherwise leave SMs idle, where upstream's split
reductions use them).  A row too long for that, in a kernel of several
passes over memory (``one_pass_reduction_rows.memory_passes``: phases that
read the row) and enough rows, is walked by one block in wide steps (32 warps,
:func:`loop_block_for_row`; 16 warps and 4096 elements where it holds two
or more row-long inputs): still a read per phase, but with few rows in
flight per SM the re-reads come from L2.  Rows of 4-byte elements up to
:data:`WIDE_ELEMENT_ROW_LIMIT` keep upstream's loop, which reaches a copy's
speed there.

The rules are ``one_pass_reduction_decision``'s, functions of the numbers
this module reads from the kernel (``one_pass_reduction_rows``).
The kernel it asks for is upstream's persistent or looped reduction with a
fixed configuration, through the hook upstream provides for exactly that,
``InductorChoices.triton_kernel_kwargs``; the code generation is upstream's.
Where the kernel's row-long inputs are 16-bit, its body is generated under
upstream's ``use_fast_math`` (Triton's approximate exp, :func:`with_exp_form`,
:func:`codegen_config`): the accurate exp made the kernels compute-bound.
A looped online softmax it configures combines each element with a leaner
helper of the same result (:func:`uses_lean_combine`).
Fewer rows than half the multiprocessors, each long enough to split, are
split over several blocks each in one kernel
(``one_pass_reduction_split_rows``, ``config.one_pass_reductions_split_rows``):
upstream's cooperative reduction with a fixed ``RSPLIT``, each block's part
of the row on chip where it fits, where lowering would have split the
reduction into kernels that read the row again.
Every decision is a remark (stage ``one_pass_reduction``): ``fused`` with
``one_pass_row_on_chip`` or ``one_pass_row_split``, or ``missed`` with the
reason the row stays in several passes.  Kernels of one phase without an
online softmax (a plain sum) are not its business and get no remark, but
where their rows are split.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from typing import Any, TYPE_CHECKING

from . import (
    config,
    one_pass_reduction_aligned_loops,
    one_pass_reduction_remarks,
    one_pass_reduction_rows as kernel_rows,
    one_pass_reduction_split_rows,
)
from .fusion_remarks.taxonomy import Reason
from .one_pass_reduction_decision import (
    Decision,
    decide,
    LOOP_BLOCKS,
    max_row_elements,
    MAX_WARPS,
    UPSTREAM_LOOP_BLOCK,
    UPSTREAM_LOOP_WARPS,
)


if TYPE_CHECKING:
    from .codegen.simd_kernel_features import SIMDKernelFeatures
    from .scheduler import BaseSchedulerNode


log = logging.getLogger(__name__)


def enabled() -> bool:
    return bool(config.one_pass_reductions)


def check_config() -> None:
    """Fail with the option's name rather than inside code generation."""
    value = config.one_pass_reductions_elements_per_thread
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            "torch._inductor.config.one_pass_reductions_elements_per_thread must "
            f"be an integer >= 1, got {value!r}"
        )


def uses_fast_exp(decision: Decision, element_bytes: int, allowed: bool) -> bool:
    """Whether a kernel the pass configures computes exp in Triton's
    approximate form (``tl_math.exp``, upstream's ``use_fast_math``) rather
    than libdevice's accurate one.

    Why: on chip, the accurate exp made the kernel compute-bound.  A
    bfloat16 softmax over 4096 x 32768 took 247 us on chip with it and 193
    us (92% of copy) with the approximate form; log-softmax 203 -> 195,
    cross-entropy's forward 138 -> 124 (H100,
    benchmarks/results/one_pass/reductions_h100_fast_exp.md).  The approximate form
    is off by a few units in the last place of a float32 (a relative 2^-21
    or so, plus 2^-24 times the argument from its scaling by log2(e)): far
    below the rounding of 16-bit inputs (2^-9 for bfloat16, 2^-12 for
    float16), so only kernels whose row-long inputs are 16-bit use it, and
    only kernels the pass takes (on chip or in its wide loop); ``allowed``
    is ``config.one_pass_reductions_fast_exp``.
    """
    taken = decision.fused or decision.loop_block is not None
    return allowed and taken and element_bytes <= 2


def with_exp_form(
    decision: Decision, element_bytes: int, allowed: bool, multiprocessors: int
) -> Decision:
    """``decision`` with its choice of exp (:func:`uses_fast_exp`), and
    one more kernel taken for it: an online softmax or logsumexp of one
    row-long input whose row is too long for a block and left to upstream
    by :func:`loop_block_for_row` (a long tail at 8192, as 50257 has).
    With the approximate exp it is taken after all: a softmax or
    log-softmax, which reads its row again, into the wide loop at 4096
    elements a step with :data:`MAX_WARPS` warps; a logsumexp read once
    (cross-entropy's forward) into upstream's own loop
    (:data:`UPSTREAM_LOOP_BLOCK` elements a step,
    :data:`UPSTREAM_LOOP_WARPS` warps), fixed.

    Why: their loops rescale the running sum with two exps per element and
    are compute-bound.  With the approximate exp and the lean combine
    (:func:`uses_lean_combine`), a bfloat16 softmax at 2048 x 50257 took
    256 us at 4096 and 32 warps, 280 us in upstream's loop and 306 us in
    upstream's kernel; log-softmax 245, 277 and 279 us; cross-entropy's
    forward 118 us in upstream's loop, 133 at 4096 and 32 warps, 178 in
    upstream's kernel (benchmarks/results/one_pass/reductions_h100_lean_combine.md).
    Not with fewer rows than multiprocessors, where upstream splits the row
    instead.
    """
    if uses_fast_exp(decision, element_bytes, allowed):
        return dataclasses.replace(decision, fast_exp=True)
    if not (
        allowed
        and element_bytes <= 2
        and decision.reason == Reason.ONE_PASS_ROW_TOO_LONG
        and decision.online
        and decision.row_inputs == 1
        and decision.rows is not None
        and decision.rows >= multiprocessors
    ):
        return decision
    if (decision.memory_passes or decision.phases) > 1:
        return dataclasses.replace(
            decision, loop_block=LOOP_BLOCKS[-1], loop_warps=MAX_WARPS, fast_exp=True
        )
    return dataclasses.replace(
        decision,
        loop_block=UPSTREAM_LOOP_BLOCK,
        loop_warps=UPSTREAM_LOOP_WARPS,
        fast_exp=True,
        upstream_loop=True,
    )


def scalar_accumulators_on() -> bool:
    """2.15.0's ``config.triton.scalar_accumulators`` (on by default): a
    large looped online softmax reduces each block to per-row scalars before
    it combines them (``online_softmax_reduce_scalar_combine``), so the
    per-element combine that the lean helper replaces is not emitted.  Strict
    signed zeros keep upstream's vector path.  (2.14.1 has no such option.)"""
    on = bool(getattr(config.triton, "scalar_accumulators", False))
    return on and not config.strict_signed_zero


def uses_lean_combine(decision: Decision, allowed: bool) -> bool:
    """Whether a looped online softmax the pass configures folds each
    element in with ``triton_helpers.online_softmax_combine_lean`` (the
    same max and sum wherever the row has a finite value) rather than
    upstream's ``online_softmax_combine``.

    Why: with the approximate exp that loop is bound by instructions, most
    of them spent on upstream's NaN-propagating max and its guard per
    scale.  Cross-entropy's forward at 50257-262144 went from 139-151 us
    to 118-129 us, a softmax in the wide loop gained 1-5% (H100,
    benchmarks/results/one_pass/reductions_h100_lean_combine.md).  A softmax that
    reads its row again in upstream's loop of 2048 elements was 2.5-3.5%
    slower with it, but no such kernel is left (:func:`with_exp_form`).
    ``allowed`` is ``config.one_pass_reductions_lean_combine``.  Where
    upstream folds each block to per-row scalars first (2.15.0's scalar
    accumulators), it combines once per block and there is no per-element
    combine to replace: the pass leaves upstream's helper, and its remark
    does not claim the lean one.
    """
    if scalar_accumulators_on() or decision.rsplit > 1:
        return False
    return allowed and decision.online and decision.loop_block is not None


def online_softmax_combine_helper(kernel: Any) -> str:
    """The ``triton_helpers`` function ``kernel``'s looped online softmax
    combines each element with: the lean one where the pass chose it
    (:func:`uses_lean_combine`), else upstream's."""
    fixed = getattr(kernel, "fixed_config", None)
    if (
        config.one_pass_reductions
        and isinstance(fixed, _config_class())
        and fixed.lean_combine
    ):
        return "online_softmax_combine_lean"
    return "online_softmax_combine"


@functools.cache
def _config_class() -> type:
    """Upstream's ``FixedTritonConfig`` with the pass's choice of exp
    (imported late: ``codegen.triton`` imports this module's hooks)."""
    from .codegen.triton import FixedTritonConfig

    @dataclasses.dataclass
    class OnePassTritonConfig(FixedTritonConfig):
        fast_exp: bool = False
        lean_combine: bool = False
        aligned_vector: int = 0
        element_accumulators: bool = False

    return OnePassTritonConfig


def codegen_config(kernel: Any) -> contextlib.AbstractContextManager[Any]:
    """The config to generate ``kernel``'s body under: upstream's
    ``use_fast_math`` where the pass chose the approximate exp for it
    (:func:`uses_fast_exp`), else the config as it is.  Every exp of the
    body and of its online-softmax helpers reads that one option."""
    fixed = getattr(kernel, "fixed_config", None)
    if (
        config.one_pass_reductions
        and not config.use_fast_math
        and isinstance(fixed, _config_class())
        and fixed.fast_exp
    ):
        return config.patch(use_fast_math=True)
    return contextlib.nullcontext()


def splits_rows_enabled() -> bool:
    """Whether the pass splits rows (``config.one_pass_reductions`` and
    ``config.one_pass_reductions_split_rows``): then Triton's backend
    offers reductions to a single element, so that lowering asks
    :func:`splits_rows` before it splits a reduction (upstream's
    ``TritonScheduling.get_backend_features`` does so for its own
    cooperative reductions)."""
    return bool(config.one_pass_reductions and config.one_pass_reductions_split_rows)


def splits_rows(device: Any, numel: Any, reduction_numel: Any) -> bool:
    """``InductorChoices.should_use_cooperative_reduction``: whether a
    reduction of ``numel`` rows of ``reduction_numel`` elements on
    ``device`` has its rows split in one kernel rather than split into
    kernels at lowering (``one_pass_reduction_split_rows.keeps_row_whole``:
    static sizes on a CUDA device).  A kernel the pass does not configure
    itself (a reduced dim that is not the innermost) gets upstream's
    cooperative configurations.  False with the option off, under
    ``triton.multi_kernel`` or where the sizes cannot be read."""
    if not splits_rows_enabled() or getattr(device, "type", None) != "cuda":
        return False
    check_config()
    row, rows = _static_int(reduction_numel), _static_int(numel)
    if row is None or rows is None or config.triton.multi_kernel:
        return False
    try:
        from .runtime.hints import DeviceProperties

        multiprocessors = int(DeviceProperties.create(device).multi_processor_count)
    except Exception:
        log.warning(
            "one_pass_reductions: left a reduction to upstream's split, the "
            "device's multiprocessors could not be read",
            exc_info=True,
        )
        return False
    return one_pass_reduction_split_rows.keeps_row_whole(
        row,
        rows,
        multiprocessors,
        max_row_elements(config.one_pass_reductions_elements_per_thread),
    )


def _static_int(expr: Any) -> int | None:
    if isinstance(expr, int) and not isinstance(expr, bool):
        return expr
    try:
        return int(expr) if getattr(expr, "is_number", False) else None
    except TypeError:
        return None


def _multiprocessors(nodes: list[BaseSchedulerNode]) -> int:
    from .runtime.hints import DeviceProperties

    device = nodes[0].get_device() if nodes else None
    if device is None:
        return 1
    count = DeviceProperties.create(device).multi_processor_count
    return int(count or 1)


def triton_kernel_kwargs(
    features: SIMDKernelFeatures, groups: list[Any], kernel_kwargs: dict[str, Any]
) -> dict[str, Any]:
    """``InductorChoices.triton_kernel_kwargs``: with this pass on, the
    kwargs of a persistent kernel where the row goes on chip, of a looped
    one in wide steps where it is too long for that; the kwargs unchanged
    otherwise (and with the pass off).

    The configuration is fixed: one row per block and :func:`warps_for_row`
    warps; a row too long for that, a looped kernel of :data:`MAX_WARPS`
    warps walking one row per block in steps of ``loop_block``.  A bad
    config value is an error naming it; a failure to analyse the kernel
    keeps upstream's kwargs (with a warning) rather than fail the compile.
    """
    if not config.one_pass_reductions or not features.is_reduction():
        return kernel_kwargs
    check_config()
    try:
        return _kernel_kwargs(features, groups, kernel_kwargs)
    except Exception:
        log.warning(
            "one_pass_reductions: kept upstream's configuration for a kernel "
            "it could not analyse",
            exc_info=True,
        )
        return kernel_kwargs


def _kernel_kwargs(
    features: SIMDKernelFeatures, groups: list[Any], kernel_kwargs: dict[str, Any]
) -> dict[str, Any]:
    from .runtime.hints import ReductionHint

    row = _static_int(features.reduction_numel)
    if row is not None and row <= 1024:
        # Upstream's persistent limit: such rows are already read once.
        return kernel_kwargs
    nodes = list(features.scheduler_nodes())
    dynamic_row = row is None
    if not dynamic_row and _decided_elsewhere(kernel_kwargs):
        return kernel_kwargs
    rows = _static_int(features.numel)
    numel = features.numel * features.reduction_numel
    element_bytes = 2 if row is None else kernel_rows.element_bytes(nodes, numel, row)
    rsplit = (
        one_pass_reduction_split_rows.row_split(row, rows, _multiprocessors(nodes))
        if row is not None and rows is not None and splits_rows_enabled()
        else 1
    )
    decision = decide(
        phases=kernel_rows.phases(nodes),
        memory_passes=None
        if row is None
        else kernel_rows.memory_passes(nodes, numel, row),
        inner=_only_x_and_r(groups)
        and (
            features.get_reduction_hint() == ReductionHint.INNER
            or (row is not None and kernel_rows.rows_contiguous(nodes, numel, row))
        ),
        row=row,
        rows=rows if rows is not None else _rows_hint(features),
        multiprocessors=_multiprocessors(nodes),
        elements_per_thread=config.one_pass_reductions_elements_per_thread,
        row_inputs=1 if row is None else kernel_rows.row_inputs(nodes, numel, row),
        online=kernel_rows.has_online_softmax(nodes),
        element_bytes=element_bytes,
        gathers=row is not None and kernel_rows.gathers(nodes, numel, row),
        rsplit=rsplit,
        scalar_accumulators=scalar_accumulators_on(),
        sums_only=kernel_rows.sums_only(nodes),
        sums_on_chip=bool(config.one_pass_reductions_sums_on_chip),
        wide_rows_on_chip=bool(config.one_pass_reductions_wide_rows_on_chip),
    )
    if decision is None:
        return kernel_kwargs
    if row is not None:
        decision = with_exp_form(
            decision,
            element_bytes,
            bool(config.one_pass_reductions_fast_exp),
            _multiprocessors(nodes),
        )
    decision = dataclasses.replace(
        decision,
        lean_combine=uses_lean_combine(
            decision, bool(config.one_pass_reductions_lean_combine)
        ),
    )
    # An online softmax's loop: aligned steps, or upstream's own where the
    # release's scalar accumulators beat the pass's loops; a backward's loop
    # over rows off a 16-byte boundary: aligned, wider steps
    if row is not None and decision.rsplit == 1:
        decision = one_pass_reduction_aligned_loops.online_loop(
            decision,
            kernel_rows.row_long_itemsizes(nodes, numel, row),
            aligned=bool(config.one_pass_reductions_aligned_loads),
            scalar_accumulators=scalar_accumulators_on(),
        )
        decision = one_pass_reduction_aligned_loops.two_input_loop(
            decision,
            kernel_rows.row_long_itemsizes(nodes, numel, row),
            aligned=bool(config.one_pass_reductions_aligned_loads),
        )
    one_pass_reduction_remarks.record(decision, nodes)
    config_class = _config_class()

    if decision.rsplit > 1:
        # upstream's cooperative reduction, RSPLIT blocks a row: persistent
        # (R0_BLOCK is the row's part) on chip, else in steps of loop_block
        on_chip = decision.num_warps is not None
        block = {} if on_chip else {"R0_BLOCK": decision.loop_block}
        return {
            **kernel_kwargs,
            "override_persistent_reduction": on_chip,
            "override_cooperative_reduction": True,
            "fixed_config": config_class(
                {
                    "XBLOCK": 1,
                    **block,
                    "RSPLIT": decision.rsplit,
                    "num_warps": decision.num_warps or decision.loop_warps,
                    "num_stages": 1,
                },
                fast_exp=decision.fast_exp,
            ),
        }
    if decision.loop_block is not None:
        return {
            **kernel_kwargs,
            "override_persistent_reduction": False,
            "override_cooperative_reduction": False,
            "fixed_config": config_class(
                {
                    "XBLOCK": 1,
                    "R0_BLOCK": decision.loop_block,
                    "num_warps": decision.loop_warps,
                    "num_stages": 1,
                },
                fast_exp=decision.fast_exp,
                lean_combine=decision.lean_combine,
                aligned_vector=decision.aligned_vector,
                element_accumulators=decision.element_accumulators,
            ),
        }
    if not decision.fused:
        return kernel_kwargs
    return {
        **kernel_kwargs,
        "override_persistent_reduction": True,
        "override_cooperative_reduction": False,
        "fixed_config": config_class(
            {"XBLOCK": 1, "num_warps": decision.num_warps, "num_stages": 1},
            fast_exp=decision.fast_exp,
        ),
    }


def _rows_hint(features: SIMDKernelFeatures) -> int | None:
    from .virtualized import V

    try:
        return int(V.graph.sizevars.optimization_hint(features.numel, fallback=0))
    except Exception:
        return None


def _decided_elsewhere(kernel_kwargs: dict[str, Any]) -> bool:
    """Kernels whose form upstream has fixed: sorts and scans (they need
    their own forms), mix-order reductions, fixed configurations."""
    return bool(
        kernel_kwargs.get("fixed_config")
        or kernel_kwargs.get("mix_order_reduction")
        or "override_persistent_reduction" in kernel_kwargs
        or "override_cooperative_reduction" in kernel_kwargs
        or config.triton.multi_kernel
    )


def _only_x_and_r(groups: list[Any]) -> bool:
    """One row dim and one reduction dim: the kernel's tiling (``groups``
    of the hook, ``[{prefix: numel}]``) is ``x`` and ``r0_``, nothing else."""
    return (
        len(groups) == 1
        and isinstance(groups[0], dict)
        and set(groups[0])
        == {
            "x",
            "r0_",
        }
    )
