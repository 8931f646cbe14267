"""What the scheduler nodes of a reduction kernel say about its rows, for
the one-pass reductions pass (``one_pass_reductions``): how many passes
over each row the kernel makes (:func:`phases`, :func:`memory_passes`),
whether it has an online softmax or only sums, which buffers are as long as a row, their
element sizes, whether the kernel gathers from elsewhere and whether its
rows are contiguous.

Why apart: these read upstream's scheduler nodes and their dependencies and
decide nothing; the pass's rules take their answers as plain numbers.
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Iterable

    from .scheduler import BaseSchedulerNode


def _phase_of_each(nodes: Iterable[Any]) -> list[tuple[Any, int]]:
    """Each node with the phase (the loop over the row, from 0) it runs in:
    the phase after the last reduction of the kernel it waits for."""
    phase_of_buffer: dict[str, int] = {}
    placed = []
    for node in nodes:
        waits = [
            phase_of_buffer[dep.name]
            for dep in node.read_writes.reads
            if dep.name in phase_of_buffer
        ]
        phase = max(waits, default=0)
        placed.append((node, phase))
        done = phase + 1 if node.is_reduction() else phase
        for name in node.get_buffer_names():
            phase_of_buffer[name] = done
    return placed


def phases(nodes: Iterable[Any]) -> int:
    """How many passes over its rows a looped reduction kernel of ``nodes``
    makes: one, plus one for each reduction that a later node of the kernel
    waits for.  ``nodes`` are scheduler nodes in schedule order (anything
    with ``is_reduction()``, ``get_buffer_names()`` and ``read_writes``).

    Softmax online: 2 (max and sum, then the normalization); two-pass
    softmax: 3; layer and RMS norm: 2; a plain sum, and cross-entropy's
    online logsumexp: 1.
    """
    return 1 + max((phase for _, phase in _phase_of_each(nodes)), default=0)


def memory_passes(nodes: Iterable[Any], numel: Any, row: Any) -> int:
    """How many of the :func:`phases` of a kernel read a row-long buffer
    (:func:`is_row_long`) from memory: the passes over memory that holding
    the row on chip would save.  A phase that computes from indices alone
    moves nothing: cross-entropy's backward sums its one-hot gradient
    (``iota == target``, one target per row) in a loop of its own, then
    reads the logits once, so it is one pass over memory in two phases.
    At least 1."""
    from .dependencies import MemoryDep

    reading = {
        phase
        for node, phase in _phase_of_each(nodes)
        if any(
            isinstance(dep, MemoryDep) and is_row_long(dep, numel, row)
            for dep in node.read_writes.reads
        )
    }
    return max(1, len(reading))


def is_row_long(dep: Any, numel: Any, row: Any) -> bool:
    """Whether the buffer of ``dep`` is as long as the kernel's rows
    (``numel``: rows times row length) or as one row (a weight broadcast
    to every row), as against a value per row or a scalar."""
    from .virtualized import V

    size = dep.get_numel()
    sizevars = V.graph.sizevars
    return sizevars.statically_known_equals(
        size, numel
    ) or sizevars.statically_known_equals(size, row)


def has_online_softmax(nodes: Iterable[Any]) -> bool:
    """Whether a kernel of ``nodes`` has an online softmax reduction: max
    and sum in one pass over memory, paid for by rescaling the running sum
    at every element (an exp, a multiply and a select each).  A row held on
    chip takes the max and then the sum in registers, without that work;
    upstream's persistent reduction does so."""
    for node in nodes:
        data = getattr(getattr(node, "node", None), "data", None)
        if getattr(data, "reduction_type", None) == "online_softmax_reduce":
            return True
    return False


def sums_only(nodes: Iterable[Any]) -> bool:
    """Whether every reduction of a kernel of ``nodes`` is a plain sum: an
    RMS norm's forward (the sum of squares), a layer norm's forward where
    upstream takes the variance in two steps (the mean, then the variance
    about it: on the CPU at rows up to its threshold; on CUDA a layer
    norm's variance is a Welford reduction, its input cast to float32
    first), the backward of a norm, a softmax or a log-softmax.  Such a kernel does one add an element per
    pass, so a pass that re-reads its row from L2 costs little more than
    the same row held in registers; a Welford reduction or an online
    softmax does more work per element and pass."""
    types = [
        getattr(
            getattr(getattr(node, "node", None), "data", None), "reduction_type", None
        )
        for node in nodes
        if node.is_reduction()
    ]
    return bool(types) and all(kind == "sum" for kind in types)


def row_long_inputs(nodes: list[BaseSchedulerNode], numel: Any, row: int) -> set[str]:
    """The row-long buffers a block of the kernel loads from memory (not
    those it writes for itself): of ``numel`` elements (rows times row
    length) or of ``row`` (a weight broadcast to every row).  Values of one
    per row (a norm's saved statistics, a cross-entropy target) are a
    register each and are not among them."""
    from .dependencies import MemoryDep

    written = {name for node in nodes for name in node.get_buffer_names()}
    return {
        dep.name
        for node in nodes
        for dep in node.read_writes.reads
        if dep.name not in written
        and isinstance(dep, MemoryDep)
        and is_row_long(dep, numel, row)
    }


def row_inputs(nodes: list[BaseSchedulerNode], numel: Any, row: int) -> int:
    """How many row-long inputs a block of the kernel holds."""
    return max(1, len(row_long_inputs(nodes, numel, row)))


def gathers(nodes: list[BaseSchedulerNode], numel: Any, row: int) -> bool:
    """Whether the kernel loads by computed index from a buffer other than
    its row-long inputs (an embedding table looked up per element), work a
    looped kernel repeats in every pass.  A cross-entropy's target logit,
    gathered from its own rows, is not such a load."""
    rows_read = row_long_inputs(nodes, numel, row)
    return any(
        dep.is_indirect() and dep.name not in rows_read
        for node in nodes
        for dep in node.read_writes.reads
        if hasattr(dep, "is_indirect")
    )


def element_bytes(nodes: list[BaseSchedulerNode], numel: Any, row: int) -> int:
    """The smallest element size of the kernel's row-long inputs (2 where
    it has none or a size is unknown: the sizes the pass was measured for)."""
    from .virtualized import V

    try:
        sizes = [
            V.graph.get_dtype(name).itemsize
            for name in row_long_inputs(nodes, numel, row)
        ]
    except Exception:
        return 2
    return min(sizes, default=2)


def row_long_itemsizes(nodes: list[Any], numel: Any, row: int) -> list[int]:
    """The element sizes of every row-long buffer the kernel reads or writes."""
    from .dependencies import MemoryDep
    from .virtualized import V

    return [
        V.graph.get_dtype(dep.name).itemsize
        for node in nodes
        for dep in (*node.read_writes.reads, *node.read_writes.writes)
        if isinstance(dep, MemoryDep) and is_row_long(dep, numel, row)
    ]


def rows_contiguous(nodes: list[BaseSchedulerNode], numel: Any, row: int) -> bool:
    """Whether every row-long buffer the kernel reads or writes is contiguous
    along the row.  Upstream's reduction hint says so only from the
    reduction's own loads: a cross-entropy backward sums a one-hot built
    from ``iota`` (no load at all) while its pointwise part reads and writes
    the logits row by row, and its hint stays ``DEFAULT``."""
    from .dependencies import MemoryDep

    row_long = [
        dep
        for node in nodes
        for dep in (*node.read_writes.reads, *node.read_writes.writes)
        if isinstance(dep, MemoryDep) and is_row_long(dep, numel, row)
    ]
    return bool(row_long) and all(dep.stride1_for_last_dim() for dep in row_long)
