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
    release_compat,
)
from .fusion_remarks.taxonomy import Reason


if TYPE_CHECKING:
    from .codegen.simd_kernel_features import SIMDKernelFeatures
    from .scheduler import BaseSchedulerNode


log = logging.getLogger(__name__)

WARP_SIZE = 32
MIN_WARPS = 4
MAX_WARPS = 32
# A row too long for one block's registers is walked in steps of one of
# these blocks by MAX_WARPS warps (16 bytes of bfloat16 per thread at 8192):
# the kernel still reads the row once per phase, but with one row per block
# and few blocks per SM the re-reads come from L2.
LOOP_BLOCKS = (8192, 4096)
LOOP_TAIL_WASTE = 0.05
# A kernel of two or more row-long inputs (a backward: the gradient and the
# saved input or output) walks its row in steps of this block with this many
# warps.  Measured on the H100 over the backward kernels of the four row ops
# at rows of 50257, 65536 and 131072, bfloat16 and float32
# (benchmarks/results/one_pass/reductions_h100_backward_loop_grid.md): it is within
# 1.1% of upstream or faster in all 24, 7% less time in all; 32 warps were
# faster in most but fell off a cliff in two (softmax backward: 4096 steps
# at 50257 float32 4x slower than upstream, 8192 steps at 131072 bfloat16
# 1.7x), which no rule of the row's length or bytes predicted.
TWO_INPUT_LOOP_BLOCK = 4096
TWO_INPUT_LOOP_WARPS = 16
# Upstream's own loop for an inner reduction of a long row (what its
# heuristics chose for every online softmax and logsumexp the sweep kept
# upstream's loop for): the pass fixes it only to give it the approximate exp
# (with_exp_form).
UPSTREAM_LOOP_BLOCK = 2048
UPSTREAM_LOOP_WARPS = 16
# Rows of elements of 4 bytes or more up to this length keep upstream's
# loop: at twice the bytes per element its re-reads hit L2 and its online
# softmax's arithmetic hides behind the loads, so it runs at a copy's speed
# already (float32 softmax, norms and cross-entropy at rows of 2048-16384,
# benchmarks/results/one_pass/reductions_h100_final_sweep.md), and a row on chip was
# 1-3% slower; at 4096 x 32768 on torch 2.15.0 on chip was 1-3% slower in all
# five ops, forward and forward+backward (long_rows_2.15.0_h100.md), so a
# float32 row goes on chip nowhere: 32768 elements is the most a block holds.
# Not where the kernel also gathers from another buffer per
# element (T5's attention softmax looks up its position bias): upstream's
# loop repeats the gathers in every pass, and on chip that kernel was 1.6x
# faster at rows of 2048 (reductions_models_h100_t5_seq2048.md).
WIDE_ELEMENT_ROW_LIMIT = 32768


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


def max_row_elements(elements_per_thread: int) -> int:
    """The longest row one block of :data:`MAX_WARPS` warps holds on chip."""
    return MAX_WARPS * WARP_SIZE * elements_per_thread


def warps_for_row(row: int, elements_per_thread: int) -> int:
    """The fewest warps (a power of two, at least :data:`MIN_WARPS`) whose
    threads hold ``row`` elements at ``elements_per_thread`` each."""
    warps = MIN_WARPS
    while warps < MAX_WARPS and warps * WARP_SIZE * elements_per_thread < row:
        warps *= 2
    return warps


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
    if release_compat.scalar_accumulators_on() or decision.rsplit > 1:
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


def loop_block_for_row(row: int, online: bool = False) -> int | None:
    """The block a looped kernel walks a too-long row with: the largest of
    :data:`LOOP_BLOCKS` whose masked last step wastes at most
    :data:`LOOP_TAIL_WASTE` of the row, else the smallest.  An online
    softmax kernel gets only the widest block, and ``None`` (upstream's
    configuration) where its tail is longer.

    Measured on the H100, bfloat16 (benchmarks/results/one_pass/
    reductions_h100_loop_configs.md): rows of 32768, 128256 and 262144
    (tails of 0-2% at 8192) are fastest at 8192 for softmax and norms; at
    50257 (14% tail at 8192, 6% at 4096) a norm is fastest at 4096 (1.33x
    upstream), while an online softmax with the accurate exp is no faster
    than upstream at any block of 2048-8192 and 16 or 32 warps (with the
    approximate exp, :func:`with_exp_form` takes it at 4096)."""
    blocks = LOOP_BLOCKS[:1] if online else LOOP_BLOCKS
    for block in blocks:
        steps = -(-row // block)
        if steps * block - row <= LOOP_TAIL_WASTE * row:
            return block
    return None if online else LOOP_BLOCKS[-1]


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the pass does with one kernel: ``num_warps`` is set when it
    holds the row on chip, ``reason`` says why (fused or missed)."""

    reason: Reason
    phases: int
    row: int | None
    rows: int | None
    num_warps: int | None = None
    limit: int | None = None
    row_inputs: int = 1
    loop_block: int | None = None
    online: bool = False
    memory_passes: int | None = None
    loop_warps: int = MAX_WARPS
    fast_exp: bool = False
    upstream_loop: bool = False
    lean_combine: bool = False
    aligned_vector: int = 0
    element_accumulators: bool = False
    upstream_scalar_loop: bool = False
    rsplit: int = 1

    @property
    def fused(self) -> bool:
        return self.num_warps is not None or self.rsplit > 1


def decide(
    *,
    phases: int,
    inner: bool,
    row: int | None,
    rows: int | None,
    multiprocessors: int,
    elements_per_thread: int,
    row_inputs: int = 1,
    online: bool = False,
    memory_passes: int | None = None,
    element_bytes: int = 2,
    gathers: bool = False,
    rsplit: int = 1,
    scalar_accumulators: bool = False,
) -> Decision | None:
    """The pure decision for a reduction kernel; ``None`` when the kernel
    makes one pass and there is nothing to decide.  Every kernel it keeps
    in upstream's form gets a decision whose reason says why.

    ``inner``: the rows are the contiguous, innermost dim and the kernel
    has no other tiling; ``row``/``rows``: the static row length and row
    count (``None`` when not static); ``row_inputs``: how many row-long
    inputs the block holds at once (a norm's backward holds the gradient,
    the input and the weight); ``online``: it has an online softmax
    reduction (``one_pass_reduction_rows.has_online_softmax``), worth
    holding on chip even in one pass; ``memory_passes``: how many of the
    phases read the row from memory (``one_pass_reduction_rows.
    memory_passes``; ``phases`` when not given).  A kernel that reads its
    row once is held on chip only in a block of fewer than
    :data:`MAX_WARPS` warps (else ``one_pass_row_read_once``), and is never
    looped in wide steps.  Where the release's loop folds each step to
    per-row scalars (``scalar_accumulators``: 2.15.0's
    ``triton.scalar_accumulators``), an online softmax too is held on chip
    only in a block of fewer than :data:`MAX_WARPS` warps (else
    ``one_pass_scalar_loop_faster``).
    ``element_bytes``: the smallest element size of the row-long inputs; a
    row of at most :data:`WIDE_ELEMENT_ROW_LIMIT` elements of 4 bytes or
    more keeps upstream's loop (``one_pass_row_at_copy_speed``), unless the
    kernel ``gathers`` from another buffer
    (``one_pass_reduction_rows.gathers``).
    ``rsplit``: the blocks each row is split over
    (``one_pass_reduction_split_rows.row_split``; 1 where rows are not
    split), for every kernel with rows of static length and count, one
    phase included: lowering left its row whole for it.

    A row whose inputs do not fit in registers is missed with
    ``one_pass_row_too_long``; where there are rows enough to fill the GPU
    and more than one pass over it, it gets :func:`loop_block_for_row`
    (``loop_block``) instead.
    """
    if rsplit > 1 and inner and row is not None and rows is not None:
        return _split_decision(
            phases=phases,
            row=row,
            rows=rows,
            rsplit=rsplit,
            multiprocessors=multiprocessors,
            elements_per_thread=elements_per_thread,
            row_inputs=row_inputs,
            online=online,
            memory_passes=memory_passes,
        )
    if phases < 2 and not online:
        return None
    if not inner:
        return Decision(
            Reason.ONE_PASS_ROWS_NOT_CONTIGUOUS, phases, row, rows, online=online
        )
    if row is None or rows is None:
        return Decision(Reason.ONE_PASS_DYNAMIC_ROW, phases, row, rows, online=online)
    limit = max_row_elements(elements_per_thread)
    many_rows = rows >= multiprocessors
    if row * row_inputs > limit:
        # Only re-reads gain from a wider loop: a kernel of one pass over
        # memory (an online logsumexp; a cross-entropy backward, whose first
        # phase sums a one-hot from indices) keeps upstream's configuration.
        rereads = (phases if memory_passes is None else memory_passes) >= 2
        loop_block, loop_warps = None, MAX_WARPS
        # A row that one block would hold alone (a backward at 32768, too
        # long only with its second input) keeps upstream's loop, at or near
        # a copy's speed there: the 16-warp loop was 1-3% slower in
        # bfloat16 and 10-20% in float32, 32 warps 2-5% in float32
        # (benchmarks/results/one_pass/reductions_h100_final_sweep.md).
        if many_rows and rereads and row > limit:
            if row_inputs >= 2:
                loop_block, loop_warps = TWO_INPUT_LOOP_BLOCK, TWO_INPUT_LOOP_WARPS
            else:
                loop_block = loop_block_for_row(row, online)
        return Decision(
            Reason.ONE_PASS_ROW_TOO_LONG,
            phases,
            row,
            rows,
            limit=limit,
            row_inputs=row_inputs,
            loop_block=loop_block,
            loop_warps=loop_warps,
            online=online,
            memory_passes=memory_passes,
        )
    if not many_rows:
        return Decision(
            Reason.ONE_PASS_TOO_FEW_ROWS,
            phases,
            row,
            rows,
            limit=multiprocessors,
            online=online,
            memory_passes=memory_passes,
        )
    if element_bytes >= 4 and row <= WIDE_ELEMENT_ROW_LIMIT and not gathers:
        return Decision(
            Reason.ONE_PASS_ROW_AT_COPY_SPEED,
            phases,
            row,
            rows,
            limit=WIDE_ELEMENT_ROW_LIMIT,
            online=online,
            memory_passes=memory_passes,
        )
    num_warps = warps_for_row(row * row_inputs, elements_per_thread)
    if (
        memory_passes is not None
        and memory_passes < 2
        and not online
        and num_warps >= MAX_WARPS
    ):
        # One read already: on chip it saves only the loop of its phase
        # that reads nothing, which a block of MAX_WARPS, alone on its SM
        # (no second block's loads to overlap), does not pay for.  A
        # cross-entropy backward at 8192 x 32000 was 390 -> 460 us on chip;
        # at rows of 4096-16384 (at most 16 warps) it gains 1.03-1.28x.
        return Decision(
            Reason.ONE_PASS_ROW_READ_ONCE,
            phases,
            row,
            rows,
            limit=num_warps,
            row_inputs=row_inputs,
            memory_passes=memory_passes,
        )
    if online and scalar_accumulators and num_warps >= MAX_WARPS:
        # H100, 2.15.0, 4096 x 32768 bf16: log-softmax 196 -> 181 us,
        # cross-entropy 108 -> 101, softmax 196 -> 192-197
        # (benchmarks/results/one_pass/vocabulary_2.15.0_h100.md)
        return Decision(
            Reason.ONE_PASS_SCALAR_LOOP_FASTER,
            phases,
            row,
            rows,
            limit=num_warps,
            online=online,
            memory_passes=memory_passes,
            upstream_scalar_loop=True,
        )
    return Decision(
        Reason.ONE_PASS_ROW_ON_CHIP,
        phases,
        row,
        rows,
        num_warps=num_warps,
        limit=limit,
        row_inputs=row_inputs,
        online=online,
        memory_passes=memory_passes,
    )


def _split_decision(
    *,
    phases: int,
    row: int,
    rows: int,
    rsplit: int,
    multiprocessors: int,
    elements_per_thread: int,
    row_inputs: int,
    online: bool,
    memory_passes: int | None,
) -> Decision:
    """A row split over ``rsplit`` blocks: each block's part of the row on
    chip where its row-long inputs fit in one block's registers, else
    walked in steps (a backward's two or three inputs; lowering keeps a row
    whole only where one input's part fits)."""
    part = -(-row // rsplit) * row_inputs
    limit = max_row_elements(elements_per_thread)
    on_chip = part <= limit
    if not on_chip:
        loop_block, loop_warps = (
            (TWO_INPUT_LOOP_BLOCK, TWO_INPUT_LOOP_WARPS)
            if row_inputs >= 2
            else (LOOP_BLOCKS[0], MAX_WARPS)
        )
    return Decision(
        Reason.ONE_PASS_ROW_SPLIT,
        phases,
        row,
        rows,
        num_warps=warps_for_row(part, elements_per_thread) if on_chip else None,
        limit=multiprocessors,
        row_inputs=row_inputs,
        loop_block=None if on_chip else loop_block,
        loop_warps=MAX_WARPS if on_chip else loop_warps,
        online=online,
        memory_passes=memory_passes,
        rsplit=rsplit,
    )


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
        scalar_accumulators=release_compat.scalar_accumulators_on(),
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
    # release's scalar accumulators beat the pass's loops
    if row is not None and decision.rsplit == 1:
        decision = one_pass_reduction_aligned_loops.online_loop(
            decision,
            kernel_rows.row_long_itemsizes(nodes, numel, row),
            aligned=bool(config.one_pass_reductions_aligned_loads),
            scalar_accumulators=release_compat.scalar_accumulators_on(),
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
