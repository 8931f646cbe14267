"""Split rows for the one-pass reductions pass (``one_pass_reductions``):
how many blocks each of a few long rows is split over.

Why: with fewer rows than half the multiprocessors, one block per row
leaves most of them idle, and upstream splits such a reduction at lowering
(``InductorChoices.reduction_split_factor``) into a kernel of partial
results over chunks of the row and a kernel that combines them; a later
phase of the same computation (a softmax's normalization, a norm's scale)
then runs in a kernel of its own and reads the row again.  Split in one
kernel instead, as upstream's cooperative reduction (the blocks of a row
combine their partial results through a workspace behind a barrier, and
the kernel is launched as a cooperative grid, so that all its blocks are
resident or the launch fails rather than hangs), the row is read once
where each block's part of it fits in registers.  The pass asks for that
form through ``InductorChoices.should_use_cooperative_reduction`` (lowering
keeps the row whole) and ``InductorChoices.triton_kernel_kwargs`` (the
kernel's fixed ``RSPLIT``); the code generation is upstream's.
"""

from __future__ import annotations


# Each block of a split row gets at least this many elements, so that a
# short row is not spread thin over blocks whose combine through the
# workspace costs more than their loads.
MIN_SPLIT_CHUNK = 4096


def row_split(row: int, rows: int, multiprocessors: int) -> int:
    """The blocks each of ``rows`` rows of ``row`` elements is split over:
    the largest power of two that keeps every block of the kernel resident
    at one block per multiprocessor (``rows`` times it at most
    ``multiprocessors``), at most upstream's ``TRITON_MAX_RSPLIT``, and that
    leaves each block :data:`MIN_SPLIT_CHUNK` elements or more; 1 (no
    split) where none of 2 or more does (the module's docstring says why).
    One block per multiprocessor: a cooperative grid must fit at once, and
    the blocks of the pass's configuration are large (up to 32 warps)."""
    from .runtime.hints import TRITON_MAX_RSPLIT

    if rows < 1:
        return 1
    split = 1
    while (
        2 * split * rows <= multiprocessors
        and 2 * split <= TRITON_MAX_RSPLIT
        and row // (2 * split) >= MIN_SPLIT_CHUNK
    ):
        split *= 2
    return split


def keeps_row_whole(row: int, rows: int, multiprocessors: int, limit: int) -> bool:
    """Whether lowering leaves a reduction of ``rows`` rows of ``row``
    elements whole for the pass to split in its kernel: split in 2 or more
    (:func:`row_split`), each part of at most ``limit`` elements, the most
    one block holds in registers (so the row is read once where the kernel
    has one row-long input).  A longer row keeps upstream's split into
    kernels: 64 blocks walking it in steps would leave the GPU
    half-used where upstream's split gives it thousands."""
    split = row_split(row, rows, multiprocessors)
    return split > 1 and -(-row // split) <= limit
