"""Typed records of the fusion remarks: what the hooks record and the reports hold.

A :class:`Remark` is one fusion decision or kernel boundary (LLVM's remark:
kind, reason code, stage, the nodes, buffers and aten ops involved, the
numbers compared); :class:`PairVerdict` is the scheduler's verdict on one
evaluated pair; :class:`Realization` why lowering stored a value in a buffer.
Each turns itself into plain JSON with ``to_json``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TYPE_CHECKING

from .taxonomy import Category, Kind, Reason, Stage


if TYPE_CHECKING:
    from collections.abc import Sequence


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


def with_compared(detail: str, compared: dict[str, Any]) -> str:
    """A refusal's detail with the values its rule compared, as the call
    site named them: ``"message (score 3, threshold 10)"``."""
    if not compared:
        return detail
    return f"{detail} ({', '.join(f'{k} {v}' for k, v in compared.items())})"


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
    # As recorded: the refusals its rules made (``recorder.Refusal``, plain
    # data) and what the hooks copied of the pair (``same_node``, ``extern``,
    # ``common_buffers``); not serialized.  The hooks only record; the
    # analysis classifies a refused pair (``reason`` None) from these.
    refusals: list[Any] = dataclasses.field(default_factory=list)
    # A heuristic refused first: the refusals of the device backend's own
    # check, asked afterwards (empty where it would fuse or was not asked).
    backend_refusals: list[Any] = dataclasses.field(default_factory=list)
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "first": self.names[0],
            "second": self.names[1],
            "fused": self.fused,
            "reason": self.reason.value if self.reason else None,
            "detail": self.detail,
        }


@dataclasses.dataclass
class Realization:
    """Why lowering stored an IR value in a buffer instead of inlining it."""

    buffer: str
    reason: Reason
    detail: str
    args: dict[str, Any]


@dataclasses.dataclass
class Boundary:
    """A buffer crossing memory between two kernels (``dependency``), or two
    kernels that read the same input unfused (``shared_input``), with one
    reason.  ``producer`` and ``consumer`` are the ops that label it; a
    crossing names its ``buffer`` and the ops on each side."""

    producer: str  # post-grad FX node names
    consumer: str
    relation: str  # "dependency" or "shared_input"
    reason: Reason
    stage: Stage
    fusible: bool | None  # False for legality, else None until tried
    detail: str
    kernels: tuple[str, str]
    args: dict[str, Any]
    buffer: str | None = None  # the buffer that crosses (a dependency)
    producer_ops: list[str] = dataclasses.field(default_factory=list)
    consumer_ops: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {
            "producer": self.producer,
            "consumer": self.consumer,
            "relation": self.relation,
            "reason": self.reason.value,
            "category": self.reason.category.value,
            "stage": self.stage.value,
            "fusible": self.fusible,
            "detail": self.detail,
            "kernels": list(self.kernels),
            "args": self.args,
        }
        if self.buffer is not None:
            out["buffer"] = self.buffer
            out["producer_ops"] = list(self.producer_ops)
            out["consumer_ops"] = list(self.consumer_ops)
        return out


@dataclasses.dataclass
class KernelRecord:
    """One kernel: a generated loop nest or template, or an extern/fallback call."""

    name: str  # the final scheduler node's name
    kind: str  # "triton", "cpp", "template", "extern", "fallback", ...
    ops: list[str]  # post-grad FX nodes it computes
    function: str | None  # the generated function that holds it
    generated_kernels: int  # what metrics.generated_kernel_count counted for it
    # how its ops came together: "inlined" (at lowering), "scheduler" (fused by
    # the scheduler), "combined" (independent kernels in one launch)
    how: list[str] = dataclasses.field(default_factory=list)
    # ops whose value it only copies into another layout (for an extern kernel)
    copy_for: list[str] = dataclasses.field(default_factory=list)
    # for an extern kernel: ops that other kernels compute into its inputs,
    # which Inductor names among its origins (only present when some are)
    input_ops: list[str] = dataclasses.field(default_factory=list)
    # the buffers it reads and writes (the scheduler's names)
    reads: list[str] = dataclasses.field(default_factory=list)
    writes: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "ops": list(self.ops),
            "function": self.function,
            "generated_kernels": self.generated_kernels,
            "how": list(self.how),
            "copy_for": list(self.copy_for),
        }
        if self.input_ops:
            out["input_ops"] = list(self.input_ops)
        out["reads"] = sorted(self.reads)
        out["writes"] = sorted(self.writes)
        return out


@dataclasses.dataclass
class GraphReport:
    """The fusion report of one compiled graph (``fusion_report``'s schema)."""

    compile_id: str
    device: str
    scheduler_nodes_before_fusion: int
    ops: list[dict[str, Any]]
    edges: list[tuple[str, str]]  # op pairs, the graph's data flow
    kernels: list[KernelRecord]
    boundaries: list[Boundary]
    remarks: list[Remark]
    evaluated_pairs: list[PairVerdict]
    # generated function name -> its source, for the pages' links to the code
    kernel_sources: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id,
            "device": self.device,
            "scheduler_nodes_before_fusion": self.scheduler_nodes_before_fusion,
            "ops": self.ops,
            "edges": [{"producer": p, "consumer": c} for p, c in self.edges],
            "kernels": [k.to_json() for k in self.kernels],
            "boundaries": [b.to_json() for b in self.boundaries],
            "remarks": [r.to_json() for r in self.remarks],
            "evaluated_pairs": [v.to_json() for v in self.evaluated_pairs],
            "kernel_sources": dict(self.kernel_sources),
        }


def base_compile_id(label: str) -> str:
    """``"1/0 backward"`` -> ``"1/0"``: the Dynamo compile a graph came from."""
    return label.split(" ", 1)[0]


@dataclasses.dataclass
class GraphBreak:
    """One Dynamo graph break, and the compiles on its two sides."""

    remark: Remark  # kind missed, reason graph_break, stage dynamo
    source: str | None  # "path:line" of the user frame where it broke
    user_stack: tuple[str, ...]  # "path:line", outermost first
    gb_type: str | None  # Dynamo's short name for the kind of break
    compile_id: str  # the compile in which the break happened
    next_compile: str | None = None  # the next compile Dynamo started

    def to_json(self, compile_ids: Sequence[str]) -> dict[str, Any]:
        """The break as JSON, linked to the graphs among ``compile_ids``."""
        remark = self.remark
        return {
            "kind": remark.kind.value,
            "reason": remark.reason.value,
            "category": remark.category.value,
            "stage": remark.stage.value,
            "detail": remark.detail,
            "gb_type": self.gb_type,
            "source": self.source,
            "user_stack": list(self.user_stack),
            "compile_id": self.compile_id,
            "graphs_before": [
                c for c in compile_ids if base_compile_id(c) == self.compile_id
            ],
            "graphs_after": [
                c
                for c in compile_ids
                if self.next_compile is not None
                and base_compile_id(c) == self.next_compile
            ],
        }
