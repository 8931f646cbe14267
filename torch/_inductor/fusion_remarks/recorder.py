"""What the hooks record while one graph compiles, and whether anyone listens.

A :class:`GraphRecorder` is attached to the ``GraphLowering`` being compiled
(``V.graph``) and filled by :mod:`.hooks`; :mod:`.analysis` reads it after
codegen.  Recording happens only while :func:`is_enabled`: a capture is
active, the ``fusion`` log is on, or ``TORCH_TRACE`` is set.  Nothing here
may fail a compile: :func:`guarded` reports the first instrumentation error
of the process and swallows it.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import os
import re
from typing import Any, TYPE_CHECKING

import torch
import torch._logging
from torch._guards import CompileContext

from .model import PairVerdict, Realization, Remark
from .taxonomy import Reason


if TYPE_CHECKING:
    from collections.abc import Callable


log = logging.getLogger(__name__)
fusion_log = torch._logging.getArtifactLogger(
    "torch._inductor.fusion_remarks", "fusion"
)


def verbose_log_requested() -> bool:
    """``TORCH_LOGS=+fusion``: torch._logging ignores '+' on artifacts, so read it here."""
    return _verbose(os.environ.get("TORCH_LOGS", ""))


@functools.lru_cache(maxsize=8)
def _verbose(settings: str) -> bool:
    return bool(re.search(r"(^|,)\s*\+fusion\s*(,|$)", settings))


class DetailOnlyWhenVerbose(logging.Filter):
    """The ``fusion`` artifact's levels: INFO is the fork's per-graph summary,
    DEBUG the detail (upstream's scheduler dumps, every evaluated pair), shown
    only for ``TORCH_LOGS=+fusion``.  torch._logging turns an artifact on at
    DEBUG whether or not '+' was given, so the level is applied here, on each
    logger of the artifact (``hooks.fusion_detail_log``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG or verbose_log_requested()


DETAIL_FILTER = DetailOnlyWhenVerbose()
fusion_log.addFilter(DETAIL_FILTER)


@dataclasses.dataclass
class Refusal:
    """One reason a pair under evaluation was refused, as its call site gave it."""

    code: Reason | None  # None: a message logged without a code
    detail: str
    args: dict[str, Any]  # the values the rule compared, as its call site gave them
    # A rule that refuses silently: the check's name (the analysis words the
    # detail from it and ``args``).
    check: str | None = None
    # The message already shows the compared values (upstream's own format
    # arguments): the detail is not given them twice.
    shows_values: bool = False


@dataclasses.dataclass
class Evaluation:
    """One outermost ``Scheduler.can_fuse`` call and the refusals made inside it."""

    node1: Any
    node2: Any
    refusals: list[Refusal] = dataclasses.field(default_factory=list)


class GraphRecorder:
    """What the hooks saw while one graph was lowered and scheduled."""

    def __init__(self) -> None:
        self.realizations: dict[str, Realization] = {}
        self.verdicts: list[PairVerdict] = []
        self.base_nodes: list[str] = []
        # Generated kernels per final scheduler node (Inductor's own metric) and
        # the generated function that holds each base scheduler node.
        self.kernel_counts: dict[str, int] = {}
        self.kernel_functions: dict[str, str] = {}
        self.kernel_sources: dict[str, str] = {}
        self._seq = itertools.count()
        # The pairs being evaluated (Scheduler.can_fuse nests: foreach and
        # mix-order nodes evaluate their members); verdicts are of the outermost.
        self.evaluations: list[Evaluation] = []
        # The scheduler node whose code is being generated, and the metric then.
        self.generating: tuple[str, int] | None = None
        # Copied when the graph's code is generated: its final kernel map
        # (kernels.KernelMap), label, the kernels its codegen generated and
        # the remarks kept for its compile; analysed once it is compiled.
        self.kernel_map: Any = None
        self.label: str = ""
        self.generated_kernels: int = 0
        self.pending: list[Remark] = []
        self.published: dict[str, Any] | None = None  # the analysed report

    def next_seq(self) -> int:
        return next(self._seq)


# ---------------------------------------------------------------------------
# Enablement

_captures: list[Any] = []  # active fusion_report captures
_reported_failure = False


def is_enabled() -> bool:
    """Whether anyone will read remarks: a capture, the fusion log or TORCH_TRACE.

    TORCH_TRACE is read from the environment, as torch._logging does: its
    handler exists in every process until the first structured log.
    """
    return (
        bool(_captures)
        or fusion_log.isEnabledFor(logging.DEBUG)
        or bool(os.environ.get("TORCH_TRACE") or os.environ.get("TORCH_DTRACE"))
    )


def captures() -> list[Any]:
    """The active captures (fusion_report.FusionCapture), innermost last."""
    return _captures


def report_failure(error: BaseException) -> None:
    """Warn about the first instrumentation error of the process, with its traceback."""
    global _reported_failure
    if not _reported_failure:
        _reported_failure = True
        log.warning("fusion remarks failed; compilation goes on", exc_info=error)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Never let an instrumentation error escape into the compile."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            report_failure(e)
            return None

    return wrapper


def current_recorder(create: bool = True) -> GraphRecorder | None:
    from ..virtualized import V

    if not V.graph:  # no graph being compiled (e.g. a unit test of a helper)
        return None
    graph = V.graph
    recorder = getattr(graph, "_fusion_recorder", None)
    if recorder is None and create:
        recorder = GraphRecorder()
        graph._fusion_recorder = recorder  # type: ignore[attr-defined]
    return recorder


def producer_identity() -> str:
    """Who generated the code: the fork and its revision, or plain torch."""
    fork = getattr(torch.version, "fork", None)
    if fork is not None:
        return f"torch {torch.__version__} {fork}"
    return f"torch {torch.__version__}"


def graph_label() -> str:
    """The compile id, plus which AOT graph (forward/backward) is being compiled."""
    from ..virtualized import V

    compile_id = CompileContext.current_compile_id()
    label = str(compile_id) if compile_id is not None else "<no compile id>"
    if V.graph and getattr(V.graph, "is_backward", False):
        label += " backward"
    return label


def compile_key() -> str:
    compile_id = CompileContext.current_compile_id()
    return str(compile_id) if compile_id is not None else ""


# ---------------------------------------------------------------------------
# Remarks made before the graph's report exists (FX passes run before any
# GraphLowering; optional scheduler passes), kept per compile until analysed.

_pending_remarks: list[tuple[str, Remark]] = []
_MAX_PENDING_REMARKS = 1000


def keep_pending(remark: Remark) -> None:
    del _pending_remarks[:-_MAX_PENDING_REMARKS]  # compiles that never finished
    _pending_remarks.append((compile_key(), remark))


def pending_remarks() -> list[tuple[str, Remark]]:
    return _pending_remarks


# Features that add remarks to every graph's report (the ablation switches:
# one remark per option they held off), each called with the graph's label.
# A feature registers here when it is imported; the remarks core never
# imports a feature.
_graph_remark_providers: list[Callable[[str], list[Remark]]] = []


def add_graph_remarks(provider: Callable[[str], list[Remark]]) -> None:
    """Have ``provider(graph_label)`` add remarks to each published graph."""
    if provider not in _graph_remark_providers:
        _graph_remark_providers.append(provider)


def graph_remarks(graph_label: str) -> list[Remark]:
    return [r for provider in _graph_remark_providers for r in provider(graph_label)]


def take_pending_remarks() -> list[Remark]:
    """The remarks kept so far for the current compile (and forget them)."""
    key = compile_key()
    mine = [remark for k, remark in _pending_remarks if k == key]
    _pending_remarks[:] = [(k, r) for k, r in _pending_remarks if k != key]
    return mine
