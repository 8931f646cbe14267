"""Typed records of the fusion remarks: what the hooks record and the reports hold.

A :class:`Remark` is one fusion decision or kernel boundary (LLVM's remark:
kind, reason code, stage, the nodes, buffers and aten ops involved, the
numbers compared); :class:`PairVerdict` is the scheduler's verdict on one
evaluated pair; :class:`Realization` why lowering stored a value in a buffer.
Each turns itself into plain JSON with ``to_json``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .taxonomy import Category, Kind, Reason, Stage


@dataclasses.dataclass
class Remark:
    """One fusion decision or kernel boundary (see the module docstring)."""

    kind: Kind
    reason: Reason
    stage: Stage
    nodes: tuple[str, ...] = ()  # scheduler node names
    buffers: tuple[str, ...] = ()  # IR buffer names
    ops: tuple[str, ...] = ()  # post-grad FX node names
    sources: tuple[str, ...] = ()  # user source lines, "file:line"
    args: dict[str, Any] = dataclasses.field(default_factory=dict)
    detail: str = ""
    graph: str = ""

    @property
    def category(self) -> Category:
        return self.reason.category

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "reason": self.reason.value,
            "category": self.category.value,
            "stage": self.stage.value,
            "nodes": list(self.nodes),
            "buffers": list(self.buffers),
            "ops": list(self.ops),
            "sources": list(self.sources),
            "args": {k: _jsonable(v) for k, v in self.args.items()},
            "detail": self.detail,
            "graph": self.graph,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


@dataclasses.dataclass
class PairVerdict:
    """The outcome of the scheduler evaluating one pair of nodes."""

    seq: int
    first: frozenset[str]  # base scheduler node names of each side
    second: frozenset[str]
    names: tuple[str, str]
    fused: bool
    reason: Reason | None
    detail: str
    args: dict[str, Any]
    vertical: bool


@dataclasses.dataclass
class Realization:
    """Why lowering stored an IR value in a buffer instead of inlining it."""

    buffer: str
    reason: Reason
    detail: str
    args: dict[str, Any]
