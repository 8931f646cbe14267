"""The decision of the one-pass reductions pass (``one_pass_reductions``)
for one reduction kernel, from plain numbers: its phases and passes over
memory, its row's length and count, the row-long inputs a block holds and
their element size, the multiprocessors to fill.  :func:`decide` says
whether the row goes on chip (and in how many warps), is walked in wide
steps, is split over several blocks, or stays in upstream's form, and why
(the :class:`Decision`'s ``reason``, a remark's code).

Why apart: these rules read nothing of upstream's scheduler or code
generation, so each is tested as a function of its inputs
(``test_one_pass_reductions_decision``); ``one_pass_reductions`` measures
a kernel (through ``one_pass_reduction_rows``) and turns the decision into
the kernel's configuration.  The figures that fixed each threshold are
cited beside it, with the result file that holds them.
"""

from __future__ import annotations

import dataclasses

from .fusion_remarks.taxonomy import Reason


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
# Such a loop over more rows than ONE_WAVE_BLOCKS - 1 blocks of
# TWO_INPUT_LOOP_WARPS warps on each multiprocessor hold, but no more than
# ONE_WAVE_BLOCKS do, walks them in steps of ONE_WAVE_LOOP_BLOCK: a block
# of 16 warps fits four times only at 32 registers a thread or fewer, and
# in steps of 4096 a kernel of two sums takes more, so these rows would run
# in two waves, the second thin.  A layer norm's backward at 524 x 256000
# took 40 registers in steps of 4096: three blocks a multiprocessor, 396
# rows at once, a second wave of 128 rows, 350 us against upstream's 326 on
# the H200; in steps of 2048, 32 registers, one wave, 328.  The softmax,
# log-softmax and RMS norm backwards there were within 0.6% at either step
# (benchmarks/results/one_pass/on_by_default_2.15.0_h200.md, section 5).
# In this rule's code the layer norm's forward+backward there takes the
# default's 569 us (590 before), and at 396 rows (one wave at three blocks)
# steps of 4096 stay 3% faster (wider_sweep_2.15.0_h200.md, section 2).
# Fewer rows run in one wave either way, more in several either way: both
# keep steps of 4096 (at 1046 x 128256 they were 0.5-3.3% faster).  A thin
# last wave after two full ones is not covered yet: a float32 softmax's
# backward at 883 x 151936 took 670 us in steps of 4096 against upstream's
# 650 (wider_sweep_2.15.0_h200.md, section 4).
ONE_WAVE_LOOP_BLOCK = 2048
ONE_WAVE_BLOCKS = 4
# Such a loop over rows that start off a 16-byte boundary (GPT-2's 50257)
# walks them in aligned steps of this block and these warps
# (``one_pass_reduction_aligned_loops.two_input_loop``).  The move-only
# bound of a backward's form at 2670 x 50257 on the H100, 2.15.0
# (benchmarks/results/one_pass/sums_2.15.0_h100.md, section 5): float32
# 910 us masked at 4096 x 16 warps (the pass's 890), 770 masked at 8192 x 32
# (eager's 770), 664 aligned at 8192 x 32; bfloat16 353 aligned at 8192 x 32
# against the pass's 378 and eager's 366.  The real kernels in this form on
# the H200: the fastest tried in 7 of 8 backward kernels
# (backward_loops_2.15.0_h200.md).
ALIGNED_TWO_INPUT_LOOP_BLOCK = 8192
ALIGNED_TWO_INPUT_LOOP_WARPS = 32
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
# The release's scalar accumulators (2.15.0's triton.scalar_accumulators)
# fold the loop of an online softmax to per-row scalars only at rows longer
# than this (upstream's ``TritonKernel.use_scalar_accumulators``); there its
# loop reaches a copy's speed, and the pass keeps it
# (``one_pass_scalar_loop_faster``).
SCALAR_LOOP_MIN_ROW = 4096
# A kernel that reads its row from memory once (a cross-entropy backward)
# goes on chip only in a block of at most this many warps
# (``one_pass_row_read_once``).  H200, 2.15.0, bfloat16 cross-entropy
# backward kernel: 156 us on chip in 8 warps against upstream's 176 at
# 16384 x 8192, 202 in 16 warps against 167 at 8192 x 16384
# (benchmarks/results/one_pass/backward_loops_2.15.0_h200.md); on the H100
# its forward+backward at 8192 x 16384 was 322 against 305 us.
READ_ONCE_MAX_WARPS = 8
# Any other kernel that reads its row twice (a layer norm's forward: a
# Welford reduction, then the scale) keeps upstream's loop at rows longer
# than this (``one_pass_loop_at_copy_speed``): bfloat16 layer norm forward,
# upstream's loop against on chip, H100 177 against 190 us at 16384 x 8192
# and 1.6% faster at 8192 x 16384; H200 127 against 140 and 130 against 136
# (on chip in 16 or 32 warps no faster:
# benchmarks/results/one_pass/backward_loops_2.15.0_h200.md).  At 4096 on
# chip was faster: 188 against 200 us at 32768 x 4096 on the H100.
TWO_READ_ON_CHIP_MAX_ROW = 4096


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
    one_wave: bool = False

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
    sums_only: bool = False,
    sums_on_chip: bool = False,
    wide_rows_on_chip: bool = False,
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
    row once is held on chip only in a block of at most
    :data:`READ_ONCE_MAX_WARPS` warps (else ``one_pass_row_read_once``),
    and is never looped in wide steps.  Where the release's loop folds
    each step to per-row scalars (``scalar_accumulators``: 2.15.0's
    ``triton.scalar_accumulators``), an online softmax that reads its row
    twice is held on chip only at rows the release does not fold, of at
    most :data:`SCALAR_LOOP_MIN_ROW` elements, and one that reads it once
    (cross-entropy's logsumexp) only in a block of fewer than
    :data:`MAX_WARPS` warps (else ``one_pass_scalar_loop_faster``).
    ``element_bytes``: the smallest element size of the row-long inputs; a
    row of at most :data:`WIDE_ELEMENT_ROW_LIMIT` elements of 4 bytes or
    more keeps upstream's loop (``one_pass_row_at_copy_speed``), unless the
    kernel ``gathers`` from another buffer
    (``one_pass_reduction_rows.gathers``) or ``wide_rows_on_chip``
    (``config.one_pass_reductions_wide_rows_on_chip``).
    ``sums_only``: every reduction of the kernel is a plain sum
    (``one_pass_reduction_rows.sums_only``); such a kernel that reads its
    row from memory exactly twice keeps upstream's loop
    (``one_pass_sums_at_copy_speed``) unless ``sums_on_chip``
    (``config.one_pass_reductions_sums_on_chip``) or it ``gathers``; any
    other kernel without an online softmax that reads its row twice keeps
    it at rows longer than :data:`TWO_READ_ON_CHIP_MAX_ROW`
    (``one_pass_loop_at_copy_speed``), unless it ``gathers``.
    ``rsplit``: the blocks each row is split over
    (``one_pass_reduction_split_rows.row_split``; 1 where rows are not
    split), for every kernel with rows of static length and count, one
    phase included: lowering left its row whole for it.

    A row whose inputs do not fit in registers is missed with
    ``one_pass_row_too_long``; where there are rows enough to fill the GPU
    and more than one pass over it, it gets :func:`loop_block_for_row`
    (``loop_block``) instead, or, with two or more row-long inputs, steps
    of :data:`TWO_INPUT_LOOP_BLOCK` (:data:`ONE_WAVE_LOOP_BLOCK` and
    ``one_wave`` where only the narrower steps run every row in one wave).
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
        one_wave = False
        # A row that one block would hold alone (a backward at 32768, too
        # long only with its second input) keeps upstream's loop, at or near
        # a copy's speed there: the 16-warp loop was 1-3% slower in
        # bfloat16 and 10-20% in float32, 32 warps 2-5% in float32
        # (benchmarks/results/one_pass/reductions_h100_final_sweep.md).
        if many_rows and rereads and row > limit:
            if row_inputs >= 2:
                one_wave = (
                    (ONE_WAVE_BLOCKS - 1) * multiprocessors
                    < rows
                    <= ONE_WAVE_BLOCKS * multiprocessors
                )
                loop_block = ONE_WAVE_LOOP_BLOCK if one_wave else TWO_INPUT_LOOP_BLOCK
                loop_warps = TWO_INPUT_LOOP_WARPS
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
            one_wave=one_wave,
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
    if (
        element_bytes >= 4
        and row <= WIDE_ELEMENT_ROW_LIMIT
        and not gathers
        and not wide_rows_on_chip
    ):
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
        and num_warps > READ_ONCE_MAX_WARPS
    ):
        # One read already: on chip it saves only the loop of its phase
        # that reads nothing, which a block of 16 or 32 warps (one a
        # multiprocessor at its registers: no second block's loads to
        # overlap) does not pay for.  A cross-entropy backward at
        # 8192 x 32000 was 390 -> 460 us on chip (H100, before 2.15.0); on
        # 2.15.0 see READ_ONCE_MAX_WARPS.
        return Decision(
            Reason.ONE_PASS_ROW_READ_ONCE,
            phases,
            row,
            rows,
            limit=num_warps,
            row_inputs=row_inputs,
            memory_passes=memory_passes,
        )
    if (
        sums_only
        and not sums_on_chip
        and not online
        and not gathers
        and (phases if memory_passes is None else memory_passes) == 2
    ):
        # A plain sum adds once an element per pass: its loop's second read
        # comes from L2 as fast as the row from registers.  H100, 2.15.0,
        # bfloat16, rows of 2048-16384: on chip was 0.5-3.1% slower in all
        # 20 cases (an RMS norm's forward, the four ops' forward+backward;
        # benchmarks/results/one_pass/sums_2.15.0_h100.md); at 32768 x 4096
        # a norm's backward kernel took 261 us in upstream's loop, 269 on
        # chip (interleaved_2.15.0_h100.md).  On 2.11.0 on chip was level
        # (reductions_h100_final_sweep.md).  Three reads (a variance taken
        # in two steps: the mean, the variance about it, the scale) save two
        # on chip.
        return Decision(
            Reason.ONE_PASS_SUMS_AT_COPY_SPEED,
            phases,
            row,
            rows,
            limit=num_warps,
            row_inputs=row_inputs,
            memory_passes=memory_passes,
        )
    reads_twice = (phases if memory_passes is None else memory_passes) >= 2
    if (
        not online
        and not gathers
        and (phases if memory_passes is None else memory_passes) == 2
        and row > TWO_READ_ON_CHIP_MAX_ROW
    ):
        # At rows this long upstream's loop takes its second read from L2
        # at a copy's speed, and the row on chip was slower
        # (TWO_READ_ON_CHIP_MAX_ROW).
        return Decision(
            Reason.ONE_PASS_LOOP_AT_COPY_SPEED,
            phases,
            row,
            rows,
            limit=num_warps,
            row_inputs=row_inputs,
            memory_passes=memory_passes,
        )
    if (
        online
        and scalar_accumulators
        and row > SCALAR_LOOP_MIN_ROW
        and (reads_twice or num_warps >= MAX_WARPS)
    ):
        # H100, 2.15.0, bf16, upstream's scalar loop against the row on chip:
        # 4096 x 32768 log-softmax 181 against 196 us, cross-entropy 101
        # against 108, softmax 192-197 against 196
        # (benchmarks/results/one_pass/vocabulary_2.15.0_h100.md); log-softmax
        # 178 against 183 at 16384 x 8192, 180 against 182 at 8192 x 16384
        # (sums_2.15.0_h100.md).  An online logsumexp read once
        # (cross-entropy's forward) gains on chip below a full block: 98
        # against 105 us at 16384 x 8192, 98 against 99 at 8192 x 16384.
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
