"""Aligned loads in the looped kernels of the one-pass reductions pass.

Why: a row whose length is not a multiple of the 16-byte vector (50257
bfloat16 logits, GPT-2's vocabulary) starts off a 16-byte boundary in every
row but the first.  Upstream's reduction loop indexes each element as
``r0_1 + 50257*x0`` under the mask ``r0_index < r0_numel``; Triton cannot
prove that a group of elements starts on a boundary nor that the mask is
the same across it, so every load and store of the loop is a scalar one.
Eager's CUDA kernel loads each row's unaligned head apart and the rest in
vectors, and beat every compiled arm at such widths (H100, bfloat16
softmax at 2048 x 50257: 202 us in eager, 255 us in the pass's loop; a
hand-written loop of the pass's form with aligned loads, 217 us:
benchmarks/results/one_pass/reductions_h100_acceptance.md).

What it generates instead, in a looped kernel the pass configured with one
row per block (``XBLOCK`` 1) and a vector of ``V`` elements
(``OnePassTritonConfig.aligned_vector``): the loop walks the row from its
start rounded down to a multiple of ``V`` (``r0_lead`` elements before
it), so every step starts on a boundary; the index of each load or store of
the row is ``r0_row``, that boundary plus the step, marked
``tl.multiple_of(..., V)``; a step wholly inside the row runs under a mask
that is constant ``True`` (its loads and stores are vectors), and the first
and last steps, which hold the row's unaligned head and tail, under the
row's bounds.  The body is upstream's, generated once and written into both
branches.  A load of another buffer (a norm's weight, indexed by the
position in the row alone) whose start is not provably congruent to the
row's keeps upstream's index and mask.

The same steps serve a backward's loop over two or more row-long inputs
(:func:`two_input_loop`), at wider steps.

The hooks, :func:`index_str` (``TritonKernel.indexing``),
:func:`applies` / :func:`write_loop` (``TritonKernel.codegen_body``) and
:func:`keeps_element_accumulators` (``TritonKernel.use_scalar_accumulators``,
2.15.0), do nothing for a kernel the pass did not give ``aligned_vector``.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import sympy

from . import config
from .one_pass_reduction_decision import (
    ALIGNED_TWO_INPUT_LOOP_BLOCK,
    ALIGNED_TWO_INPUT_LOOP_WARPS,
)
from .utils import sympy_index_symbol
from .virtualized import V


@dataclasses.dataclass
class _AlignedRow:
    """The row of one kernel: the start of its first row-long access
    (``base``, in terms of the kernel's x variables) and the vector."""

    vector: int
    base: sympy.Expr
    x_subs: dict[sympy.Symbol, sympy.Expr]


# kernel -> its aligned row, set by the first load or store of the row
_ROWS: weakref.WeakKeyDictionary[Any, _AlignedRow] = weakref.WeakKeyDictionary()


VECTOR_BYTES = 16


def vector_for_row(row: int | None, itemsizes: list[int]) -> int:
    """The vector, in elements, of a looped kernel over rows of ``row``
    elements whose row-long buffers have elements of ``itemsizes`` bytes:
    16 bytes of the smallest; 0 (upstream's loop) where the row is a
    multiple of it (Triton proves each row's start aligned from the index
    itself) or nothing is known."""
    if row is None or not itemsizes or min(itemsizes) < 1:
        return 0
    vector = max(1, VECTOR_BYTES // min(itemsizes))
    return 0 if vector == 1 or row % vector == 0 else vector


def warps_for_vector(block: int, warps: int, vector: int) -> int:
    """At most ``warps`` warps, few enough that each thread of a step of
    ``block`` elements holds a whole vector: Triton gives each thread
    ``block / (32 * warps)`` consecutive elements, and loads no wider than
    that (a step of 4096 bfloat16 over 32 warps is 4 elements a thread, 8
    bytes: half-width loads, measured in the PTX on the H100)."""
    return max(1, min(warps, block // (32 * vector)))


def online_loop(
    decision: Any,
    itemsizes: list[int],
    *,
    aligned: bool,
    scalar_accumulators: bool,
) -> Any:
    """``decision`` (a looped online softmax the pass configured: a softmax,
    a log-softmax, cross-entropy's logsumexp) with its loop: aligned steps
    where its rows start off a 16-byte boundary and ``aligned``
    (``config.one_pass_reductions_aligned_loads``), with an accumulator per
    element of a step (``element_accumulators``) where the release would
    fold each step to per-row scalars and the kernel reads its row again;
    upstream's own loop
    (``upstream_scalar_loop``, nothing fixed) where they start on one and
    the release folds each step to per-row scalars (``scalar_accumulators``:
    2.15.0's ``triton.scalar_accumulators``); else the pass's loop as
    decided.  Any other decision is returned as it is.

    Why upstream's loop: with 2.15.0's scalar accumulators, upstream's
    autotuned loop was faster than every fixed loop of the pass at rows that
    are a multiple of the vector (H100, bfloat16 forward, CUDA-graph
    replays: softmax at 1046 x 128256 267 us against the pass's 285,
    log-softmax 262 against 282, cross-entropy's forward 114 against 189,
    and alike at 151936, 256000 and 262144), while at 50257, where the pass
    aligns its steps, the pass was ahead (softmax 300 against 431,
    cross-entropy 125 against 203): benchmarks/results/one_pass/
    sweep_2.15.0_h100.md.  A norm keeps the pass's loop, unaligned: a layer
    norm was slower with aligned steps (reductions_h100_aligned_steps.md).

    Why element accumulators in the aligned steps: at rows of 50257 the
    aligned loop with 2.15.0's per-row scalars (a reduction across the block
    at every step) took 300 us for a bfloat16 softmax at 2670 x 50257, with
    an accumulator per element 270-272 (log-softmax 296 against 262-266;
    forward+backward 782 against 755 and 671 against 642).  Cross-entropy's
    logsumexp, which reads its row once, gained nothing (forward 125 against
    124, forward+backward 447 against 462) and keeps the scalars (H100,
    CUDA-graph replays: benchmarks/results/one_pass/vocabulary_2.15.0_h100.md)."""
    if decision.loop_block is None or not decision.online:
        return decision
    vector = vector_for_row(decision.row, itemsizes) if aligned else 0
    if vector:
        return dataclasses.replace(
            decision,
            aligned_vector=vector,
            loop_warps=warps_for_vector(
                decision.loop_block, decision.loop_warps, vector
            ),
            # a kernel that reads its row again (softmax, log-softmax), not
            # cross-entropy's logsumexp, which reads it once
            element_accumulators=scalar_accumulators
            and (decision.memory_passes or decision.phases) > 1,
        )
    if scalar_accumulators:
        return dataclasses.replace(
            decision,
            loop_block=None,
            upstream_loop=False,
            fast_exp=False,
            lean_combine=False,
            upstream_scalar_loop=True,
        )
    return decision


def two_input_loop(decision: Any, itemsizes: list[int], *, aligned: bool) -> Any:
    """``decision`` (a looped kernel of two or more row-long inputs that
    reads its row again: a softmax's, log-softmax's or norm's backward, no
    online softmax) in aligned steps of
    :data:`~.one_pass_reduction_decision.ALIGNED_TWO_INPUT_LOOP_BLOCK`
    where its rows start off a 16-byte boundary and ``aligned``
    (``config.one_pass_reductions_aligned_loads``); any other decision as
    it is.

    Why: at such rows every load of the pass's masked loop (steps of 4096,
    16 warps) is a scalar one, and that form, not the kernel's arithmetic,
    bounds it.  A log-softmax's backward at 2670 x 50257 on the H100 took
    890 us in float32 (eager 770); a loop of the same form that only moves
    the bytes took 910, one of aligned steps of 8192 over 32 warps 664
    (bfloat16: the pass 378, eager 366, aligned 353): benchmarks/results/
    one_pass/sums_2.15.0_h100.md, section 5.  Wider steps only where they are
    aligned: masked, 32 warps fell off a cliff in a float32 softmax's
    backward at this width (reductions_h100_backward_loop_grid.md).  The
    real kernels on the H200 (backward_loops_2.15.0_h200.md): this form was
    the fastest of those tried in 7 of 8 backward kernels (softmax,
    log-softmax, both norms; float32 and bfloat16), float32 log-softmax 478
    us against 634 masked; a bfloat16 log-softmax's was faster in aligned
    steps of 4096 over 16 warps (273 against 313)."""
    if (
        not aligned
        or decision.loop_block is None
        or decision.online
        or decision.row_inputs < 2
        or decision.rsplit > 1
    ):
        return decision
    vector = vector_for_row(decision.row, itemsizes)
    if not vector:
        return decision
    return dataclasses.replace(
        decision,
        aligned_vector=vector,
        loop_block=ALIGNED_TWO_INPUT_LOOP_BLOCK,
        one_wave=False,
        loop_warps=warps_for_vector(
            ALIGNED_TWO_INPUT_LOOP_BLOCK, ALIGNED_TWO_INPUT_LOOP_WARPS, vector
        ),
    )


def vector_of(kernel: Any) -> int:
    """The vector (in elements) the pass chose for ``kernel``'s loop; 0 where
    it chose none (or the pass is off)."""
    if not config.one_pass_reductions:
        return 0
    return int(getattr(getattr(kernel, "fixed_config", None), "aligned_vector", 0))


def keeps_element_accumulators(kernel: Any) -> bool:
    """``TritonKernel.use_scalar_accumulators``' hook: whether the pass gave
    ``kernel``'s aligned loop an accumulator per element of a step, so that
    the release's per-row scalars (``triton.scalar_accumulators``) stay out
    of it (:func:`online_loop`)."""
    if not config.one_pass_reductions:
        return False
    return bool(
        getattr(getattr(kernel, "fixed_config", None), "element_accumulators", False)
    )


def _row_tree(kernel: Any) -> Any | None:
    """The kernel's one reduction loop (``r0_``), where its only other range
    is one ``x`` of one row per block; else ``None``."""
    trees = list(getattr(kernel, "range_trees", ()))
    loops = [t for t in trees if t.is_loop]
    others = [t for t in trees if not t.is_reduction]
    if (
        len(loops) != 1
        or len(trees) != 2
        or len(others) != 1
        or others[0].prefix != "x"
        or loops[0].prefix != "r0_"
        or kernel.cooperative_reduction
        or kernel.persistent_reduction
    ):
        return None
    return loops[0]


def _split(kernel: Any, index: sympy.Expr) -> tuple[sympy.Expr, dict] | None:
    """``index`` as ``base + r`` where ``r`` is the position in the row
    (the loop's index itself) and ``base`` depends on the x range only:
    ``(base, {x variable: its expression at xoffset})``; else ``None``."""
    tree = _row_tree(kernel)
    if tree is None:
        return None
    root = sympy_index_symbol(tree.name)
    x_root = sympy_index_symbol("xindex")
    r_symbols, x_subs = [], {}
    for symbol in index.free_symbols:
        entry = kernel.range_tree_nodes.get(symbol)
        if entry is None:
            if symbol.name.startswith(("tmp", "r")):
                return None
            continue  # a size: the same for every row
        if entry.prefix == "r0_":
            r_symbols.append(symbol)
        elif entry.prefix == "x":
            x_subs[symbol] = entry.expr.subs(x_root, sympy.Symbol("xoffset"))
        else:
            return None
    if len(r_symbols) != 1:
        return None
    (r,) = r_symbols
    if kernel.range_tree_nodes[r].expr != root:
        return None
    base = sympy.expand(index - r)
    if r in base.free_symbols:
        return None
    return base, x_subs


def index_str(kernel: Any, index: sympy.Expr) -> str | None:
    """``TritonKernel.indexing``'s hook: the index of a load or store of the
    row in an aligned loop (``r0_row``, or ``r0_row`` plus a multiple of the
    vector), ``None`` for upstream's."""
    vector = vector_of(kernel)
    if not vector:
        return None
    split = _split(kernel, index)
    if split is None:
        return None
    base, x_subs = split
    row = _ROWS.get(kernel)
    if row is None:
        row = _ROWS[kernel] = _AlignedRow(vector, base, x_subs)
        return "r0_row"
    difference = sympy.expand(base - row.base)
    if difference == 0:
        return "r0_row"
    if V.graph.sizevars.statically_known_multiple_of(difference, row.vector):
        return f"r0_row + ({kernel.index_to_str(difference)})"
    return None


def applies(kernel: Any, loop_trees: list[Any]) -> bool:
    """``TritonKernel.codegen_body``'s hook: whether this loop is written
    by :func:`write_loop` (some load or store of it indexes the row as
    ``r0_row``)."""
    return (
        kernel in _ROWS
        and vector_of(kernel) > 0
        and len(loop_trees) == 1
        and loop_trees[0] is _row_tree(kernel)
        and not kernel.pointer_advancements.get(loop_trees[0].symt)
    )


def write_loop(kernel: Any, loop_trees: list[Any]) -> None:
    """Write the kernel's reduction loop over aligned steps (module
    docstring): the body once under a constant mask for steps inside the
    row, once under the row's bounds for its head and tail."""
    (tree,) = loop_trees
    row = _ROWS[kernel]
    body = kernel.body
    prefix = tree.prefix
    block = f"{prefix.upper()}BLOCK"
    start = kernel.index_to_str(row.base.subs(row.x_subs))
    mask = tree.mask_name()
    body.writeline(f"{prefix}lead = ({start}) % {row.vector}")
    body.writeline(
        f"for {prefix}step in tl.range(0, {prefix}numel + {prefix}lead, {block}):"
    )
    with body.indent():
        body.writeline(f"{prefix}offset = {prefix}step - {prefix}lead")
        body.writeline(f"{tree.name} = {prefix}offset + {prefix}base")
        body.writeline(
            f"{prefix}row = tl.multiple_of({start} - {prefix}lead + {prefix}step, "
            f"{row.vector}) + {prefix}base"
        )
        kernel.codegen_reduction_indices(body)
        body.writeline(
            f"if ({prefix}step >= {prefix}lead) & "
            f"({prefix}step + {block} <= {prefix}numel + {prefix}lead):"
        )
        with body.indent():
            body.writeline(kernel.create_constant_mask(tree))
            _write_body(kernel)
        body.writeline("else:")
        with body.indent():
            body.writeline(
                f"{mask} = ({tree.name} >= 0) & ({tree.name} < {prefix}numel)"
            )
            _write_body(kernel)
    # as upstream does after its loop: values computed inside it are not
    # available after it
    kernel.cse.invalidate(kernel.outside_loop_vars)
    tree.cache_clear()


def _write_body(kernel: Any) -> None:
    kernel.body.splice(kernel.indexing_code)
    kernel.body.splice(kernel.loads)
    kernel.body.splice(kernel.compute)
    kernel.body.splice(kernel.stores)
