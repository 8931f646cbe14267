"""A generated graph's final kernel map, copied into plain records.

A final scheduler node is one kernel: a generated loop nest or template, or a
call of an extern or fallback kernel.  Its ops are the post-grad FX nodes
Inductor names among its origins, with two corrections: an extern kernel's
origins also name the ops of the values lowering passed it unrealized, which
generated kernels compute before the call (its ``input_ops``); and a loop nest
that only loads and stores, copying an extern kernel's input into another
layout, computes none of the ops its origins name: it is a copy for that
extern op (``copy_for``).

A *crossing* is a buffer that one kernel writes and another reads: the unit
of the coverage invariant (``DESIGN.md`` section 3).  It is read from the
scheduler's own dependencies, looking through the nodes that generate no
code (an extern kernel's ``MultiOutput`` selecting one of its tuple outputs, a
``cat`` whose inputs are written into slices of its buffer).

:func:`final_kernel_map` copies all of it out of the scheduler once its code
is generated: the records hold names, sizes and flags, never a scheduler or
IR object, so that the analysis can run after the compile and on records
replayed from a cache.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from typing import Any, TYPE_CHECKING

import torch


if TYPE_CHECKING:
    from ..scheduler import BaseSchedulerNode, Scheduler
    from .recorder import GraphRecorder


__all__ = [
    "Crossing",
    "Kernel",
    "KernelMap",
    "LoopNest",
    "OpRecord",
    "computes",
    "final_kernel_map",
    "source_of",
]


_aten = torch.ops.aten
# The kinds of a call of a library kernel (not generated code).
EXTERN_KINDS = ("extern", "fallback")


# Ops that compute nothing: they only reinterpret or select existing data.
_NON_COMPUTING = {
    operator.getitem,
    _aten._unsafe_view.default,
    _aten.reshape.default,
    _aten.contiguous.default,
    _aten.lift_fresh.default,
    _aten.detach.default,
}


def computes(node: torch.fx.Node) -> bool:
    """Whether an FX node computes values (views and getitem do not)."""
    if node.op != "call_function":
        return False
    target = node.target
    if target in _NON_COMPUTING:
        return False
    return not getattr(target, "is_view", False)


@dataclasses.dataclass
class OpRecord:
    """One post-grad FX ``call_function`` node, as plain data."""

    name: str
    target: str
    computes: bool
    source: str | None
    inputs: list[str]  # the FX nodes it reads (any op), by name
    used: bool  # it has users
    scalar: bool  # its value is a size or scalar of symbolic shapes
    cat: bool  # aten.cat
    removed: bool  # Inductor removed its buffer


@dataclasses.dataclass
class LoopNest:
    """One base scheduler node of a kernel: a loop nest, or the kernel itself."""

    name: str
    origins: list[str]  # FX op names Inductor gives it
    reads: list[str]  # buffer names its dependencies read
    writes: list[str]  # buffer names it writes
    only_copies: bool  # its loop body only loads and stores
    ranges: str  # its iteration ranges (``group[1]``), "?" when it has none


@dataclasses.dataclass
class Kernel:
    """One kernel of a generated graph (a final scheduler node, or one node
    of a grouped one): the ops it computes (``origins``), the buffers it
    reads and writes, its loop nests and the generated function holding it."""

    name: str
    kind: str
    base: frozenset[str]
    nests: list[LoopNest]
    origins: list[str]
    # ops named in an extern kernel's origins that it does not compute: the
    # values lowering passed it unrealized (graph.py's gather_origins)
    input_ops: list[str]
    function: str | None
    generated: int
    reads: set[str]
    writes: set[str]
    copy_for: list[str] = dataclasses.field(default_factory=list)
    how: list[str] = dataclasses.field(default_factory=list)

    def nests_of(self, op: str) -> list[LoopNest]:
        """The loop nests whose origins name ``op``."""
        return [n for n in self.nests if op in n.origins]


@dataclasses.dataclass
class Crossing:
    """A buffer one kernel writes and another reads (in the names of the code)."""

    buffer: str  # as the generated code names it (a mutation's real buffer)
    read_as: str  # as the consumer's dependency names it
    written_as: str  # as the producer's names it (another through a node without code)
    producer: str  # kernel names
    consumer: str
    producer_nests: list[str]  # the loop nests that write it, and that read it
    consumer_nests: list[str]
    value_op: str | None = None  # the FX op whose value the buffer holds


@dataclasses.dataclass
class KernelMap:
    """Everything the analysis needs of a generated graph, as plain data."""

    device: str
    ops: list[OpRecord]
    kernels: list[Kernel]
    crossings: list[Crossing]
    buffers: dict[str, dict[str, Any]]  # name -> bytes, size, stride, dtype


def kernel_kind(snode: BaseSchedulerNode) -> str | None:
    """The report's kernel kind of a final scheduler node (None: no kernel)."""
    from .. import config, ir
    from ..scheduler import (
        ExternKernelSchedulerNode,
        ForeachKernelSchedulerNode,
        NopKernelSchedulerNode,
    )

    if isinstance(snode, NopKernelSchedulerNode):
        return None
    if isinstance(snode, ExternKernelSchedulerNode):
        node = snode.node
        if isinstance(node, ir.MultiOutput):
            return None  # selects an output of another kernel
        if isinstance(node, ir.FallbackKernel):
            return "fallback"
        return "extern"
    if isinstance(snode, ForeachKernelSchedulerNode):
        return "foreach"
    if snode.is_template():
        return "template"
    device = snode.get_device()
    if device is not None and device.type == "cpu" and config.cpu_backend == "cpp":
        return "cpp"
    return "triton"


def _origin_names(ir_node: Any) -> list[str]:
    return [o.name for o in ir_node.get_origins() if isinstance(o, torch.fx.Node)]


def _lowered_op(snode: BaseSchedulerNode) -> str | None:
    """The FX node an extern or fallback kernel lowers: its ``origin_node``
    where lowering returned one tensor, else its ``fx_node`` (the node being
    lowered when the kernel was made, also for several outputs)."""
    for attr in ("origin_node", "fx_node"):
        node = getattr(snode.node, attr, None)
        if isinstance(node, torch.fx.Node):
            return node.name
    return None


def _kernel_name(snode: BaseSchedulerNode, kind: str) -> str:
    if kind in EXTERN_KINDS:
        python_name = getattr(snode.node, "python_kernel_name", None)
        if python_name:
            return f"{snode.get_name()}:{python_name}"
    return snode.get_name()


# The operations of a loop body that only moves data: a body made of these
# copies its input into another layout.
_COPY_BODY_OPS = frozenset({"get_index", "load", "store", "output"})


def _only_copies(sub: BaseSchedulerNode) -> bool:
    body = getattr(sub, "_body", None)
    counts = getattr(body, "op_counts", None)
    return bool(counts) and set(counts) <= _COPY_BODY_OPS


def _ranges(sub: BaseSchedulerNode) -> str:
    try:
        return str(sub.group[1])
    except Exception:
        return "?"


def _data_reads(snode: BaseSchedulerNode) -> list[str]:
    """The buffers a node's dependencies read (ordering-only deps left out)."""
    from ..dependencies import WeakDep

    return list(
        dict.fromkeys(
            dep.name for dep in snode.read_writes.reads if not isinstance(dep, WeakDep)
        )
    )


def _writes(snode: BaseSchedulerNode) -> list[str]:
    return list(
        dict.fromkeys(
            [
                *snode.get_buffer_names(),
                *(dep.name for dep in snode.read_writes.writes),
            ]
        )
    )


def _nest(sub: BaseSchedulerNode) -> LoopNest:
    ir_node = getattr(sub, "node", None)
    return LoopNest(
        name=sub.get_name(),
        origins=_origin_names(ir_node) if ir_node is not None else [],
        reads=_data_reads(sub),
        writes=_writes(sub),
        only_copies=_only_copies(sub),
        ranges=_ranges(sub),
    )


def _kernel(snode: BaseSchedulerNode, kind: str, recorder: GraphRecorder) -> Kernel:
    nests = [_nest(sub) for sub in snode.get_nodes()]
    origins = list(
        dict.fromkeys(
            o
            for sub in snode.get_nodes()
            if getattr(sub, "node", None) is not None
            for o in _origin_names(sub.node)
        )
    )
    input_ops: list[str] = []
    lowered = _lowered_op(snode) if kind in EXTERN_KINDS else None
    if lowered is not None:
        input_ops = [o for o in origins if o != lowered]
        origins = [lowered]
    base = frozenset(n.name for n in nests)
    return Kernel(
        name=_kernel_name(snode, kind),
        kind=kind,
        base=base,
        nests=nests,
        origins=origins,
        input_ops=input_ops,
        function=next(
            (
                recorder.kernel_functions[n]
                for n in sorted(base)
                if n in recorder.kernel_functions
            ),
            None,
        ),
        # Templates are generated through their template sub-node, so the
        # count may be recorded under a base node's name.
        generated=sum(
            recorder.kernel_counts.get(name, 0) for name in {snode.get_name(), *base}
        ),
        writes=set(_writes(snode)) | {w for n in nests for w in n.writes},
        reads=set(_data_reads(snode)),
    )


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def source_of(node: torch.fx.Node) -> str | None:
    """The user's source line of an op, from its FX stack trace."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    filename, line = frames[-1]
    return f"{filename}:{line}"


def _op_records(graph: Any) -> list[OpRecord]:
    out = []
    for node in graph.graph.nodes:
        if node.op != "call_function":
            continue
        val = node.meta.get("val")
        out.append(
            OpRecord(
                name=node.name,
                target=str(node.target),
                computes=computes(node),
                source=source_of(node),
                inputs=[i.name for i in node.all_input_nodes],
                used=bool(node.users),
                scalar=isinstance(
                    val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float)
                ),
                cat=node.target is _aten.cat.default,
                removed=node.name in graph.removed_buffers,
            )
        )
    return out


def buffer_facts(graph: Any, name: str) -> dict[str, Any]:
    """Bytes, size, stride and dtype of one buffer or graph input (hints for
    symbolic sizes, ``SizeVarAllocator.optimization_hint``: no guard is
    added); what is unknown is left out."""
    out: dict[str, Any] = {}
    try:
        buf = graph.try_get_buffer(name)
        if buf is None:
            return out

        def hint(expr: Any) -> int:
            return int(graph.sizevars.optimization_hint(expr, fallback=0))

        out["bytes"] = hint(buf.get_numel()) * buf.get_dtype().itemsize
        out["dtype"] = str(buf.get_dtype()).removeprefix("torch.")
        layout = buf.get_layout()
        out["size"] = [hint(s) for s in layout.size]
        out["stride"] = [hint(s) for s in layout.stride]
    except Exception:
        pass
    return out


def final_kernel_map(scheduler: Scheduler, recorder: GraphRecorder) -> KernelMap:
    """Copy the generated graph's kernels, ops and crossings into plain records."""
    from ..scheduler import GroupedSchedulerNode
    from ..virtualized import V

    graph = V.graph
    ops = _op_records(graph)
    parts: list[BaseSchedulerNode] = []
    for snode in scheduler.nodes:
        if isinstance(snode, GroupedSchedulerNode):
            parts.extend(snode.snodes)
        else:
            parts.append(snode)
    kernels: list[Kernel] = []
    kernel_of_base: dict[str, Kernel] = {}
    passthrough: dict[str, list[str]] = {}  # a node without code: what it reads
    for part in parts:
        kind = kernel_kind(part)
        if kind is None:
            for sub in part.get_nodes():
                passthrough[sub.get_name()] = _data_reads(sub)
            continue
        kernel = _kernel(part, kind, recorder)
        kernels.append(kernel)
        for name in kernel.base:
            kernel_of_base[name] = kernel
    settle_ops(kernels, {op.name: op for op in ops})
    crossings = _crossings(scheduler, parts, kernel_of_base, passthrough)
    buffers = {
        name: buffer_facts(graph, name)
        for name in dict.fromkeys(c.buffer for c in crossings)
    }
    for kernel in kernels:
        for name in kernel.reads:
            if name not in buffers:
                buffers[name] = buffer_facts(graph, name)
    return KernelMap(
        device=",".join(sorted(graph.device_types)) or "cpu",
        ops=ops,
        kernels=kernels,
        crossings=crossings,
        buffers=buffers,
    )


def _crossings(
    scheduler: Scheduler,
    parts: list[BaseSchedulerNode],
    kernel_of_base: dict[str, Kernel],
    passthrough: dict[str, list[str]],
) -> list[Crossing]:
    """Every buffer a kernel reads that another kernel wrote (in schedule order)."""

    def producers(
        name: str, seen: frozenset[str] = frozenset()
    ) -> list[tuple[str, Kernel]]:
        """The kernels that wrote ``name``, with the buffer each wrote."""
        buf = scheduler.name_to_buf.get(name)
        if buf is None or name in seen:
            return []  # a graph input or constant
        op = buf.defining_op_name()
        kernel = kernel_of_base.get(op)
        if kernel is not None:
            return [(name, kernel)]
        found: list[tuple[str, Kernel]] = []
        for read in passthrough.get(op, ()):
            found.extend(producers(read, seen | {name}))
        return found

    real = getattr(scheduler, "mutation_real_name", {})
    out: dict[tuple[str, str, str], Crossing] = {}
    for part in parts:
        consumer = kernel_of_base.get(part.get_name()) or next(
            (
                kernel_of_base[n.get_name()]
                for n in part.get_nodes()
                if n.get_name() in kernel_of_base
            ),
            None,
        )
        if consumer is None:
            continue
        for name in sorted(consumer.reads):
            for written, producer in producers(name):
                buffer = real.get(name, name)
                key = (buffer, producer.name, consumer.name)
                if producer is consumer:
                    continue
                nests = [
                    n.name
                    for n in producer.nests
                    if written in n.writes or buffer in n.writes
                ]
                crossing = out.get(key)
                if crossing is not None:
                    # one buffer written in parts (the slices of a cat)
                    crossing.producer_nests += [
                        n for n in nests if n not in crossing.producer_nests
                    ]
                    if written not in crossing.written_as.split(" and "):
                        crossing.written_as += f" and {written}"
                        crossing.value_op = None
                    continue
                out[key] = Crossing(
                    buffer=buffer,
                    read_as=name,
                    written_as=written,
                    producer=producer.name,
                    consumer=consumer.name,
                    producer_nests=nests,
                    consumer_nests=[n.name for n in consumer.nests if name in n.reads],
                    value_op=_value_op(scheduler, written),
                )
    return list(out.values())


def _value_op(scheduler: Scheduler, name: str) -> str | None:
    """The FX op whose value buffer ``name`` holds (its ``origin_node``)."""
    buf = scheduler.name_to_buf.get(name)
    origin = getattr(getattr(buf, "node", None), "origin_node", None)
    return origin.name if isinstance(origin, torch.fx.Node) else None


def _how_joined(kernel: Kernel, ops: dict[str, OpRecord]) -> list[str]:
    """How a kernel's computing ops came together, in the order it happened.

    "inlined": several ops in one loop nest (one scheduler node), which
    lowering made; "scheduler": several scheduler nodes fused into one kernel;
    "combined": independent kernels combined into one launch (foreach).  Only
    the ops it computes count (not those of a layout copy).
    """
    if kernel.kind in EXTERN_KINDS:
        return []
    computed = {
        o
        for o in kernel.origins
        if o in ops and ops[o].computes and o not in kernel.copy_for
    }
    per_node = [sum(1 for o in n.origins if o in computed) for n in kernel.nests]
    how = []
    if any(n > 1 for n in per_node):
        how.append("inlined")
    if sum(1 for n in per_node if n) > 1:
        how.append("combined" if kernel.kind == "foreach" else "scheduler")
    return how


def settle_ops(kernels: list[Kernel], ops: dict[str, OpRecord]) -> None:
    """What each kernel computes, once every kernel is known: the layout
    copies told apart (``_mark_layout_copies``), then how each kernel's
    computing ops came together (``how``)."""
    _mark_layout_copies(kernels, ops)
    for kernel in kernels:
        kernel.how = _how_joined(kernel, ops)


def _all_copy(nests: list[LoopNest]) -> bool:
    return bool(nests) and all(n.only_copies for n in nests)


def _mark_layout_copies(kernels: list[Kernel], ops: dict[str, OpRecord]) -> None:
    """Tell the layout copies lowering adds around an extern kernel's inputs
    (on the CPU, a convolution's input and weight to channels-last) from the
    kernels that compute their ops: each loop nest of such a copy only loads
    and stores, so it computes none of the ops its origins name.

    Inductor's origins of a copy name the extern op it was made for, with
    (as for the extern kernel) that op's ``input_ops``, which other kernels
    compute; or, for a copy of a graph input, only that input.  The copy is
    marked ``copy_for`` the extern op (named in its origins in the second
    case, as in the first), and the extern op's input ops leave its origins.
    """

    def computing(name: str) -> bool:
        return name in ops and ops[name].computes

    externs = {k.origins[0]: k for k in kernels if k.kind in EXTERN_KINDS and k.origins}
    readers: dict[str, list[str]] = {}
    for op, extern in externs.items():
        for name in extern.reads:
            readers.setdefault(name, []).append(op)
    for kernel in kernels:
        if kernel.kind in EXTERN_KINDS:
            continue
        read_by = [op for name in sorted(kernel.writes) for op in readers.get(name, ())]
        if (
            read_by
            and _all_copy(kernel.nests)
            and not any(map(computing, kernel.origins))
        ):
            kernel.origins += list(dict.fromkeys(read_by))  # a graph input's copy
            kernel.copy_for = list(dict.fromkeys(read_by))
            continue
        copied = [
            o for o in kernel.origins if o in externs and _all_copy(kernel.nests_of(o))
        ]
        kernel.copy_for = copied
        inputs = {i for o in copied for i in externs[o].input_ops}
        kernel.origins = [
            o
            for o in kernel.origins
            if o not in inputs or not _all_copy(kernel.nests_of(o))
        ]
