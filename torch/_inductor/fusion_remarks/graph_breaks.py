"""Dynamo graph breaks as kernel boundaries.

Ops on the two sides of a graph break are in different graphs, so no kernel can
hold both: a graph break is a ``legality`` boundary that Inductor never sees.
Dynamo reports each break once, in ``InstructionTranslatorBase.log_graph_break``
(the ``graph_breaks`` log and the ``dynamo_graph_break_reason`` trace artifact);
a two-line patch there calls :func:`record_graph_break`, which keeps Dynamo's
reason text, the user's source line and the compile id of the frame that broke.

Which graphs a break separates is known only later: the graphs of the breaking
compile are compiled after the break is traced (``compile_subgraph``), and the
code after the break runs in a resume function that Dynamo compiles as a new
frame when it is first called.  So a break is linked to

* ``graphs_before``: the graphs compiled for the compile in which it happened
  (forward and backward), and
* ``graphs_after``: the graphs of the next frame Dynamo starts compiling after
  it (normally the resume function's; empty if that frame compiled no graph),

which a start-of-compile callback on Dynamo's ``callback_handler`` observes.
Breaks appear once, as ``missed`` remarks of reason ``graph_break`` and stage
``dynamo``, in the capture's top-level ``graph_breaks`` list (a break may have
no graph before it to hold it) and on the ``fusion`` log, between the graphs.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
from typing import Any, TYPE_CHECKING

from torch._guards import CompileContext

from . import recorder as rec
from .model import Remark
from .taxonomy import Kind, Reason, Stage


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


# Innermost frames of the user's stack kept with each break.
MAX_USER_STACK = 8
# Breaks waiting for the next compile; bounded in case none ever comes.
_MAX_PENDING = 100

_pending: list[GraphBreak] = []
# Compile ids of recently published graphs, to name them in the log.
_published: collections.deque[str] = collections.deque(maxlen=256)


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


def record_graph_break(frame_loc: Any, reason: str, exc: Any) -> None:
    """Called by Dynamo's ``log_graph_break`` once for each graph break."""
    if rec.is_enabled():
        _record(frame_loc, reason, exc)


@rec.guarded
def _record(frame_loc: Any, reason: str, exc: Any) -> None:
    compile_id = CompileContext.current_compile_id()
    label = str(compile_id) if compile_id is not None else "<no compile id>"
    source = f"{frame_loc[0]}:{frame_loc[1]}" if frame_loc else None
    stack = getattr(exc, "real_stack", None) or ()
    user_stack = tuple(f"{f.filename}:{f.lineno}" for f in stack)[-MAX_USER_STACK:]
    gb_type = getattr(exc, "gb_type", None) or None
    entry = GraphBreak(
        remark=Remark(
            Kind.MISSED,
            Reason.GRAPH_BREAK,
            Stage.DYNAMO,
            sources=(source,) if source else (),
            detail=reason,
            graph=label,
        ),
        source=source,
        user_stack=user_stack or ((source,) if source else ()),
        gb_type=gb_type,
        compile_id=label,
    )
    _watch_compiles()
    for seen in _pending:
        if (seen.compile_id, seen.source, seen.remark.detail) == (
            label,
            source,
            reason,
        ):
            return  # the same break, logged again by a restarted trace
    _pending.append(entry)
    del _pending[:-_MAX_PENDING]
    for capture in rec.captures():
        capture.graph_breaks.append(entry)


def _watch_compiles() -> None:
    """Make sure the start of the next Dynamo compile resolves pending breaks.

    ``torch._dynamo.reset()`` clears Dynamo's callbacks; breaks still pending
    then came before the reset, and no compile will follow them.
    """
    from torch._dynamo.callback import callback_handler

    if _on_compile_start not in callback_handler.start_callbacks:
        for stale in _pending:
            _log(stale)
        _pending.clear()
        callback_handler.register_start_callback(_on_compile_start)


def _on_compile_start(args: Any) -> None:
    """Dynamo started compiling a frame: it follows every pending break."""
    if not _pending:
        return
    try:
        from torch._dynamo.callback import CallbackTrigger

        if args.callback_trigger is not CallbackTrigger.DYNAMO:
            return  # a lazy backward or cudagraph recording, not a new frame
        resolved = [b for b in _pending if b.compile_id != args.compile_id]
        _pending[:] = [b for b in _pending if b.compile_id == args.compile_id]
        for entry in resolved:
            entry.next_compile = args.compile_id
            _log(entry)
    except Exception as e:
        rec.report_failure(e)


@rec.guarded
def note_published(graph: dict[str, Any]) -> None:
    """Called by ``fusion_report.publish`` for each analysed graph."""
    _published.append(str(graph.get("compile_id")))


def _log(entry: GraphBreak) -> None:
    if not rec.fusion_log.isEnabledFor(logging.DEBUG):
        return
    before = [c for c in _published if base_compile_id(c) == entry.compile_id]
    after = [entry.next_compile] if entry.next_compile else []
    rec.fusion_log.debug("%s", describe(entry, before, after))


def short_source(source: str | None) -> str:
    if not source:
        return "<unknown>"
    filename, _, line = source.rpartition(":")
    return f"{os.path.basename(filename)}:{line}"


def short_reason(detail: str, gb_type: str | None) -> str:
    """Dynamo's kind of break and its one-line explanation."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    head = gb_type or (lines[0] if lines else "graph break")
    explanation = next(
        (
            line[len("Explanation:") :].strip()
            for line in lines
            if line.startswith("Explanation:")
        ),
        "",
    )
    return f"{head}: {explanation}" if explanation else head


def _names(ids: Sequence[str]) -> str:
    return " and ".join(ids)


def describe(entry: GraphBreak, before: Sequence[str], after: Sequence[str]) -> str:
    """One line: where the break is, the graphs it separates, and why."""
    if before:
        left = f"after graph{'s' if len(before) > 1 else ''} {_names(before)}"
    else:
        left = f"after no graph of {entry.compile_id}"
    if after:
        right = f"before {_names(after)}"
    elif entry.next_compile is not None:
        right = f"before {entry.next_compile}, which compiled no graph"
    else:
        right = "with nothing compiled after it"
    return (
        f"graph break at {short_source(entry.source)} ({left}, {right}): "
        f"{short_reason(entry.remark.detail, entry.gb_type)}"
    )


def render_with_graphs(
    graphs: Sequence[dict[str, Any]],
    breaks: Sequence[GraphBreak],
    render_graph: Callable[[dict[str, Any]], str],
) -> str:
    """The graphs' summaries, each graph break between the graphs it separates."""
    ids = [g["compile_id"] for g in graphs]
    inserted: dict[int, list[str]] = {}
    for entry in breaks:
        data = entry.to_json(ids)
        before, after = data["graphs_before"], data["graphs_after"]
        if after:
            position = ids.index(after[0])
        elif before:
            position = max(i for i, c in enumerate(ids) if c in before) + 1
        else:
            position = len(ids)
        inserted.setdefault(position, []).append(describe(entry, before, after))
    blocks: list[str] = []
    for i in range(len(graphs) + 1):
        blocks.extend(inserted.get(i, ()))
        if i < len(graphs):
            blocks.append(render_graph(graphs[i]))
    return "\n\n".join(blocks)
