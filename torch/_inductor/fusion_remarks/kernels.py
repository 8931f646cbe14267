"""The kernels of a generated graph, and the ops each computes.

A final scheduler node is one kernel: a generated loop nest or template, or a
call of an extern or fallback kernel.  Its ops are the post-grad FX nodes
Inductor names among its origins, with two corrections: an extern kernel's
origins also name the ops of the values lowering passed it unrealized, which
generated kernels compute before the call (its ``input_ops``); and a loop nest
that only loads and stores, copying an extern kernel's input into another
layout, computes none of the ops its origins name: it is a copy for that
extern op (``copy_for``).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import torch


if TYPE_CHECKING:
    from ..scheduler import BaseSchedulerNode
    from .recorder import GraphRecorder


__all__ = [
    "Kernel",
    "base_of",
    "computes",
    "kernel_kind",
    "settle_ops",
    "split_grouped",
]


_aten = torch.ops.aten
# The kinds of a call of a library kernel (not generated code).
_EXTERN_KINDS = ("extern", "fallback")


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


def _origins(snode: BaseSchedulerNode) -> list[torch.fx.Node]:
    out: list[torch.fx.Node] = []
    for sub in snode.get_nodes():
        node = getattr(sub, "node", None)
        if node is None:
            continue
        for origin in node.get_origins():
            if isinstance(origin, torch.fx.Node) and origin not in out:
                out.append(origin)
    return out


def _lowered_op(snode: BaseSchedulerNode) -> torch.fx.Node | None:
    """The FX node an extern or fallback kernel lowers: its ``origin_node``
    where lowering returned one tensor, else its ``fx_node`` (the node being
    lowered when the kernel was made, also for several outputs)."""
    for attr in ("origin_node", "fx_node"):
        node = getattr(snode.node, attr, None)
        if isinstance(node, torch.fx.Node):
            return node
    return None


def _kernel_name(snode: BaseSchedulerNode, kind: str) -> str:
    if kind in ("extern", "fallback"):
        python_name = getattr(snode.node, "python_kernel_name", None)
        if python_name:
            return f"{snode.get_name()}:{python_name}"
    return snode.get_name()


class Kernel:
    """One kernel of a generated graph (a final scheduler node, or one node of
    a grouped one): the ops it computes (``origins``), the buffers it reads
    and writes, and the generated function that holds it."""

    def __init__(
        self, snode: BaseSchedulerNode, kind: str, recorder: GraphRecorder
    ) -> None:
        self.snode = snode
        self.kind = kind
        self.name = _kernel_name(snode, kind)
        self.base = frozenset(n.get_name() for n in snode.get_nodes())
        self.origins = _origins(snode)
        # ops named in an extern kernel's origins that it does not compute:
        # the values lowering passed it unrealized, which generated kernels
        # compute before the call (graph.py's gather_origins names them)
        self.input_ops: list[torch.fx.Node] = []
        lowered = _lowered_op(snode) if kind in _EXTERN_KINDS else None
        if lowered is not None:
            self.input_ops = [o for o in self.origins if o is not lowered]
            self.origins = [lowered]
        self.function = next(
            (
                recorder.kernel_functions[n]
                for n in sorted(self.base)
                if n in recorder.kernel_functions
            ),
            None,
        )
        # Templates are generated through their template sub-node, so the
        # count may be recorded under a base node's name.
        self.generated = sum(
            recorder.kernel_counts.get(name, 0)
            for name in {snode.get_name(), *self.base}
        )
        self.writes = {
            name for n in snode.get_nodes() for name in n.get_buffer_names()
        } | {dep.name for dep in snode.read_writes.writes}
        self.reads = {dep.name for dep in snode.read_writes.reads}
        # ops whose input this kernel only copies into another layout, and
        # how its computing ops came together (set once every kernel is
        # known: settle_ops)
        self.copy_for: list[str] = []
        self.how: list[str] = []


def _how_joined(kernel: Kernel) -> list[str]:
    """How a kernel's computing ops came together, in the order it happened.

    "inlined": several ops in one loop nest (one scheduler node), which
    lowering made; "scheduler": several scheduler nodes fused into one kernel;
    "combined": independent kernels combined into one launch (foreach).  Only
    the ops it computes count (not those of a layout copy).
    """
    if kernel.kind in _EXTERN_KINDS:
        return []
    computed = {
        o for o in kernel.origins if computes(o) and o.name not in kernel.copy_for
    }
    per_node = [
        sum(1 for o in sub.node.get_origins() if o in computed)
        for sub in kernel.snode.get_nodes()
        if getattr(sub, "node", None) is not None
    ]
    how = []
    if any(n > 1 for n in per_node):
        how.append("inlined")
    if sum(1 for n in per_node if n) > 1:
        how.append("combined" if kernel.kind == "foreach" else "scheduler")
    return how


# The operations of a loop body that only moves data: a body made of these
# copies its input into another layout.
_COPY_BODY_OPS = frozenset({"get_index", "load", "store", "output"})


def _only_copies(subs: list[BaseSchedulerNode]) -> bool:
    """Whether these loop nests (at least one) only load and store."""
    if not subs:
        return False
    for sub in subs:
        body = getattr(sub, "_body", None)
        counts = getattr(body, "op_counts", None)
        if not counts or not set(counts) <= _COPY_BODY_OPS:
            return False
    return True


def settle_ops(kernels: list[Kernel]) -> None:
    """What each kernel computes, once every kernel is known: the layout
    copies told apart (``_mark_layout_copies``), then how each kernel's
    computing ops came together (``how``)."""
    _mark_layout_copies(kernels)
    for kernel in kernels:
        kernel.how = _how_joined(kernel)


def _mark_layout_copies(kernels: list[Kernel]) -> None:
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
    externs = {
        k.origins[0]: k for k in kernels if k.kind in _EXTERN_KINDS and k.origins
    }
    readers: dict[str, list[torch.fx.Node]] = {}
    for op, extern in externs.items():
        for name in extern.reads:
            readers.setdefault(name, []).append(op)
    for kernel in kernels:
        if kernel.kind in _EXTERN_KINDS:
            continue
        nests = [s for s in kernel.snode.get_nodes() if getattr(s, "node", None)]
        read_by = [op for name in sorted(kernel.writes) for op in readers.get(name, ())]
        if read_by and _only_copies(nests) and not any(map(computes, kernel.origins)):
            kernel.origins += list(dict.fromkeys(read_by))  # a graph input's copy
            kernel.copy_for = [op.name for op in dict.fromkeys(read_by)]
            continue
        copied = [
            o
            for o in kernel.origins
            if o in externs and _only_copies(base_of(kernel, o))
        ]
        kernel.copy_for = [o.name for o in copied]
        inputs = {i for o in copied for i in externs[o].input_ops}
        kernel.origins = [
            o
            for o in kernel.origins
            if o not in inputs or not _only_copies(base_of(kernel, o))
        ]


def split_grouped(snode: BaseSchedulerNode) -> list[BaseSchedulerNode]:
    from ..scheduler import GroupedSchedulerNode

    if isinstance(snode, GroupedSchedulerNode):
        return list(snode.snodes)
    return [snode]


def base_of(kernel: Kernel, op: torch.fx.Node) -> list[BaseSchedulerNode]:
    return [
        sub
        for sub in kernel.snode.get_nodes()
        if getattr(sub, "node", None) is not None and op in sub.node.get_origins()
    ]
