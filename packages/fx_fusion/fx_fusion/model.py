"""The data the stages of the FX fusion pass hand each other.

:mod:`.lowering` describes how each fusible FX node computes (a
:class:`_Lowered`) or says why it cannot fuse (a :class:`_Refused`);
:mod:`.partitioner` groups the nodes (:class:`Group`) and records every
decision in a :class:`Partition`; :mod:`.plan` turns a group into a
:class:`~.ir.KernelSpec` through an :class:`Emitter`.  This module holds only
these plain data types and the small helpers every stage uses.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, TYPE_CHECKING

import torch
import torch.fx

from .ir import Level


if TYPE_CHECKING:
    from collections.abc import Callable


INNER, OUTER = Level.INNER, Level.OUTER


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else node


def _scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float)) and not isinstance(value, torch.Tensor)


class _Refused(Exception):
    """An op, or a join, the pass cannot express; carries the report's reason."""

    def __init__(self, reason: Any, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class Emitter(Protocol):
    """What a :class:`_Lowered`'s ``build`` emits statements through (the
    pass's implementation is ``plan._Emitter``); each method returns the
    index of the statement holding the value."""

    def value(self, x: Any, dtype: str) -> int: ...

    def const(self, value: Any, dtype: str) -> int: ...

    def op(self, name: str, args: tuple[int, ...], dtype: str) -> int: ...

    def reduce(self, name: str, arg: int, dtype: str) -> int: ...


@dataclasses.dataclass
class _Lowered:
    """How one fusible node computes its value.

    ``kind`` is ``pointwise`` (including casts and constants), ``reduction``
    or ``view`` (a view followed inside a group).  ``build`` emits the node's
    statements through an :class:`Emitter` and returns the final one.
    """

    kind: str
    tensors: list[torch.fx.Node]
    build: Callable[[Emitter, str], int] | None = None
    reduce_input: torch.fx.Node | None = None
    reduce_dims: tuple[int, ...] = ()
    keepdim: bool = False
    view: Callable[[tuple[int | None, ...]], tuple[int | None, ...] | None] | None = (
        None
    )


@dataclasses.dataclass(eq=False)
class Group:
    """One fusion group: FX nodes that become one kernel.

    ``members`` are the computing nodes in graph order; ``views`` the view
    nodes of member values that the group's members read inside the kernel
    (they stay in the graph as eager views where something outside reads
    them).  ``axes`` maps each loop dim (an id) to its size, ``reduce_axes``
    the reduced ones; ``dims`` maps every member and view to the axis of each
    of its tensor dims (``None`` for size-1 dims).
    """

    id: int
    members: list[torch.fx.Node] = dataclasses.field(default_factory=list)
    views: list[torch.fx.Node] = dataclasses.field(default_factory=list)
    axes: dict[int, int] = dataclasses.field(default_factory=dict)
    reduce_axes: set[int] = dataclasses.field(default_factory=set)
    dims: dict[torch.fx.Node, tuple[int | None, ...]] = dataclasses.field(
        default_factory=dict
    )
    # The dims a member's external operands are aligned to: its own dims, or
    # for a reduction the dims of the reduced input.
    context: dict[torch.fx.Node, tuple[int | None, ...]] = dataclasses.field(
        default_factory=dict
    )
    ref: tuple[int | None, ...] = ()

    def level(self, node: torch.fx.Node) -> Level:
        if not self.reduce_axes:
            return INNER
        return INNER if set(self.dims[node]) & self.reduce_axes else OUTER

    def is_reduction(self) -> bool:
        return bool(self.reduce_axes)

    def __repr__(self) -> str:
        return f"Group({self.id}, {[m.name for m in self.members]})"


@dataclasses.dataclass
class Verdict:
    """Why a producer and a consumer did (not) end up in one group."""

    fused: bool
    reason: Any  # fusion_remarks.Reason or None
    detail: str


@dataclasses.dataclass
class Partition:
    """The result of :func:`partition_graph`: groups plus every decision."""

    graph: torch.fx.Graph
    groups: list[Group]
    lowered: dict[torch.fx.Node, _Lowered]
    refused: dict[torch.fx.Node, _Refused]  # non-fusible call_function nodes
    verdicts: dict[tuple[torch.fx.Node, torch.fx.Node], Verdict]
    pairs: list[dict[str, Any]]  # evaluated pairs, in order
    group_of: dict[torch.fx.Node, Group]
    view_of: dict[torch.fx.Node, Group]
    succ: dict[torch.fx.Node, list[torch.fx.Node]]
    index: dict[torch.fx.Node, int]
    # Groups :func:`fuse` left as aten ops (other than single ops), and why.
    not_compiled: dict[int, str] = dataclasses.field(default_factory=dict)
