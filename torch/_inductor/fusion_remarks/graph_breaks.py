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
import logging
from typing import Any, TYPE_CHECKING

from torch._guards import CompileContext

from . import recorder as rec
from .model import base_compile_id, GraphBreak, Remark
from .summary import describe
from .taxonomy import Kind, Reason, Stage


if TYPE_CHECKING:
    pass


# Innermost frames of the user's stack kept with each break.
MAX_USER_STACK = 8
# Breaks waiting for the next compile; bounded in case none ever comes.
_MAX_PENDING = 100

_pending: list[GraphBreak] = []
# Compile ids of recently published graphs, to name them in the log.
_published: collections.deque[str] = collections.deque(maxlen=256)


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
    """Called by ``sinks.publish`` for each analysed graph."""
    _published.append(str(graph.get("compile_id")))


def _log(entry: GraphBreak) -> None:
    if not rec.fusion_log.isEnabledFor(logging.DEBUG):
        return
    before = [c for c in _published if base_compile_id(c) == entry.compile_id]
    after = [entry.next_compile] if entry.next_compile else []
    rec.fusion_log.info("%s", describe(entry, before, after))
