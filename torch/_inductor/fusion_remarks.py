"""Fusion remarks: Inductor explains which ops it fused and why others stayed apart.

This module is the home of the fork's fusion instrumentation.  For now it
holds the first hook: the ``fusion`` log artifact opens each graph with a line
that names the graph's compile id and, on the fork, the fork's revision, so a
log can always be traced back to the code that produced it.

The hooks are small calls from upstream modules (``scheduler.py`` for now);
everything they do lives here so that the patches to upstream files stay a
few lines long.  A hook never raises into the compile: instrumentation errors
are reported once and swallowed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import torch
import torch._logging
from torch._guards import CompileContext


if TYPE_CHECKING:
    from collections.abc import Sequence

    from .scheduler import BaseSchedulerNode


log = logging.getLogger(__name__)
fusion_log = torch._logging.getArtifactLogger(__name__, "fusion")

_reported_failure = False


def producer_identity() -> str:
    """Who generated the code: the fork and its revision, or plain torch."""
    fork = getattr(torch.version, "fork", None)
    if fork is not None:
        return f"torch {torch.__version__} {fork}"
    return f"torch {torch.__version__}"


def log_graph_header(nodes: Sequence[BaseSchedulerNode]) -> None:
    """Open a graph's fusion log with its compile id and the code's identity."""
    if not fusion_log.isEnabledFor(logging.DEBUG):
        return
    try:
        compile_id = CompileContext.current_compile_id()
        fusion_log.debug(
            "fusion remarks for graph %s by %s: %d scheduler nodes before fusion",
            compile_id if compile_id is not None else "<no compile id>",
            producer_identity(),
            len(nodes),
        )
    except Exception as e:  # never fail a compile because of instrumentation
        _report_failure(e)


def _report_failure(error: BaseException) -> None:
    """Warn about the first instrumentation error of the process, with its traceback."""
    global _reported_failure
    if not _reported_failure:
        _reported_failure = True
        log.warning("fusion remarks failed; compilation goes on", exc_info=error)
