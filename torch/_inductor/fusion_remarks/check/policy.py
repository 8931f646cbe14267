"""Could this boundary be fused?  The policy: which refusals can be forced, and how.

The fusion report (:mod:`torch._inductor.fusion_report`) gives every kernel
boundary of a compiled graph a reason.  For a ``legality`` reason the answer to
"could these two ops share a kernel?" is known: no.  For a ``heuristic`` reason
(``no_shared_data``, ``exceeds_max_fusion_size``, ``nodes_too_far_apart``,
``benchmark_slower``, ...) the scheduler judged the fusion unprofitable, and
only trying it answers both halves of the question: is the fused kernel
generated and correct, and is it faster?

Under :func:`force_fusion`, a compile gets exactly one refused scheduler pair
forced through: when the scheduler refuses it (named by graph and base
scheduler node names, as the report's boundary ``args`` give them) for the
heuristic that refused it in the stock compile, the pair is evaluated again
with that one heuristic turned off (:data:`BYPASSES` says how for each).  Every
other check, legality and the backend's own included, still applies, so a
fusion that would be wrong or cannot be generated simply does not happen.  The
scheduler hooks (:mod:`torch._inductor.fusion_remarks.hooks`) reach the active
:class:`ForcedFusion` through ``fusion_remarks.recorder.forcing``.

Compiling, comparing with eager and timing live in
:mod:`torch._inductor.fusion_remarks.check.harness` (:func:`check_fusible`),
which imports this module, never the reverse.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, TYPE_CHECKING

import torch
import torch._logging

from ... import config
from .. import hooks as fusion_hooks, recorder as fusion_recorder
from ..taxonomy import Category, Reason


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from ...fusion_report import FusionCapture
    from ...scheduler import BaseSchedulerNode, Scheduler


__all__ = ["BYPASSES", "ForcedFusion", "can_force", "force_fusion"]

fusion_log = torch._logging.getArtifactLogger(__name__, "fusion")


# ---------------------------------------------------------------------------
# How each heuristic is turned off for one evaluation of the forced pair


def _at_site(
    scheduler: Scheduler,
) -> contextlib.AbstractContextManager[None]:
    """The heuristic's own site asks ``fusion_hooks.heuristic_applies`` and
    skips its check for the forced pair (see :meth:`ForcedFusion.bypasses`)."""
    return contextlib.nullcontext()


def _config(
    **changes: Any,
) -> Callable[[Scheduler], contextlib.AbstractContextManager[None]]:
    patch = {key.replace("__", "."): value for key, value in changes.items()}

    def bypass(scheduler: Scheduler) -> contextlib.AbstractContextManager[None]:
        return config.patch(patch)

    return bypass


_UNLIMITED = 2**31 - 1

# The heuristics a forced pair can bypass in Scheduler.can_fuse, each with how
# (applied only around the one re-evaluation of the forced pair).
_CAN_FUSE_BYPASSES: dict[
    Reason, Callable[[Scheduler], contextlib.AbstractContextManager[None]]
] = {
    Reason.NO_SHARED_DATA: _at_site,
    Reason.INDEXING_MISMATCH: _at_site,
    Reason.SCORE_BELOW_THRESHOLD: _at_site,
    Reason.EXCEEDS_MAX_FUSION_SIZE: _config(max_fusion_size=_UNLIMITED),
    Reason.PEAK_MEMORY_INCREASE: _at_site,
    Reason.TOO_MANY_IO_BUFFERS: _config(max_fusion_unique_io_buffers=None),
    Reason.NODES_TOO_FAR_APART: _at_site,
    Reason.TILING_MISMATCH: _config(triton__tiling_prevents_pointwise_fusion=False),
    Reason.REDUCTION_TILING_INVALID: _config(
        triton__tiling_prevents_reduction_fusion=False
    ),
    Reason.CPP_MAX_HORIZONTAL_SIZE: _config(cpp__max_horizontal_fusion_size=_UNLIMITED),
    Reason.PROLOGUE_INCREASES_READS: _at_site,
    Reason.PROLOGUE_PADDING: _at_site,
    Reason.PROLOGUE_NEEDS_UPCAST: _at_site,
}
# Codes that name one heuristic (one bypass): a pair refused for one of them
# in the stock compile may be refused for another in the forced one.
_SAME_HEURISTIC: dict[Reason, Reason] = {
    Reason.INDEXING_MISMATCH: Reason.NO_SHARED_DATA,
    Reason.SCORE_BELOW_THRESHOLD: Reason.NO_SHARED_DATA,
    Reason.PROLOGUE_PADDING: Reason.PROLOGUE_INCREASES_READS,
    Reason.PROLOGUE_NEEDS_UPCAST: Reason.PROLOGUE_INCREASES_READS,
    Reason.REGISTER_SPILLING: Reason.BENCHMARK_SLOWER,
}
# Refused by Scheduler.speedup_by_fusion (config.benchmark_fusion): the forced
# pair is fused without benchmarking.
_SPEEDUP_BYPASSES = frozenset({Reason.BENCHMARK_SLOWER, Reason.REGISTER_SPILLING})

BYPASSES: dict[str, str] = {
    Reason.NO_SHARED_DATA.value: "InductorChoices.can_fuse and can_fuse_horizontal "
    "skip their shared-data checks for the pair",
    Reason.INDEXING_MISMATCH.value: "as no_shared_data",
    Reason.SCORE_BELOW_THRESHOLD.value: "as no_shared_data",
    Reason.EXCEEDS_MAX_FUSION_SIZE.value: "config.max_fusion_size unlimited",
    Reason.PEAK_MEMORY_INCREASE.value: "InductorChoices.can_fuse skips its peak-memory check",
    Reason.TOO_MANY_IO_BUFFERS.value: "config.max_fusion_unique_io_buffers = None",
    Reason.NODES_TOO_FAR_APART.value: "InductorChoices.can_fuse_horizontal skips its distance check",
    Reason.TILING_MISMATCH.value: "config.triton.tiling_prevents_pointwise_fusion = False",
    Reason.REDUCTION_TILING_INVALID.value: "config.triton.tiling_prevents_reduction_fusion = False",
    Reason.CPP_MAX_HORIZONTAL_SIZE.value: "config.cpp.max_horizontal_fusion_size unlimited",
    Reason.PROLOGUE_INCREASES_READS.value: "check_prologue_fusion_heuristics_fusable skips its heuristics",
    Reason.PROLOGUE_PADDING.value: "as prologue_increases_reads",
    Reason.PROLOGUE_NEEDS_UPCAST.value: "as prologue_increases_reads",
    Reason.BENCHMARK_SLOWER.value: "speedup_by_fusion fuses without benchmarking",
    Reason.REGISTER_SPILLING.value: "as benchmark_slower",
}
"""Each heuristic reason :func:`force_fusion` can bypass, and how."""


def _base_names(node: BaseSchedulerNode) -> frozenset[str]:
    return frozenset(n.get_name() for n in node.get_nodes())


# ---------------------------------------------------------------------------
# Forcing one pair


@dataclasses.dataclass
class ForcedFusion:
    """One forced pair and what happened to it while :func:`force_fusion` was active.

    The scheduler hooks (:mod:`fusion_remarks.hooks`) call :meth:`reconsider`,
    :meth:`bypasses`, :meth:`note_cycle` and :meth:`forced_speedup` while it
    is installed.  A
    scheduler pair *matches* when one side holds every producer node and the
    other every consumer node (after earlier fusions a side may hold more).
    """

    graph: str
    producer_nodes: frozenset[str]
    consumer_nodes: frozenset[str]
    reason: Reason
    capture: FusionCapture | None = None
    # Scheduler names of the matching pairs whose refusal was overturned.
    overturned: list[str] = dataclasses.field(default_factory=list)
    # Why matching pairs were still refused: "names: reason (category): detail".
    refusals: list[str] = dataclasses.field(default_factory=list)
    cycle: bool = False
    # A legality reason refused a matching pair once the heuristic was off:
    # the boundary cannot be fused without breaking the program.
    legality_refusal: bool = False
    errors: list[str] = dataclasses.field(default_factory=list)
    # True while reconsider() evaluates a matching pair with the heuristic off.
    _reconsidering: bool = dataclasses.field(default=False, repr=False)

    # -- the hooks ---------------------------------------------------------

    def _matches_names(self, name1: str, name2: str) -> bool:
        """As :meth:`_matches`, from scheduler node names (a fused node's name
        joins its base nodes' names with ``_``)."""
        if fusion_recorder.graph_label() != self.graph:
            return False
        a, b = frozenset(name1.split("_")), frozenset(name2.split("_"))
        p, c = self.producer_nodes, self.consumer_nodes
        return (p <= a and c <= b) or (p <= b and c <= a)

    def _matches(self, node1: Any, node2: Any) -> bool:
        try:
            if fusion_recorder.graph_label() != self.graph:
                return False
            a, b = _base_names(node1), _base_names(node2)
        except Exception:
            return False
        p, c = self.producer_nodes, self.consumer_nodes
        return (p <= a and c <= b) or (p <= b and c <= a)

    def _note(self, items: list[str], text: str) -> None:
        if text not in items:
            items.append(text)

    def reconsider(
        self,
        recorder: fusion_recorder.GraphRecorder,
        node1: Any,
        node2: Any,
        decide: Callable[[], bool],
    ) -> bool:
        """``Scheduler.can_fuse`` refused ``node1, node2``: evaluate a matching
        pair again with the heuristic that refused it turned off."""
        try:
            bypass = _CAN_FUSE_BYPASSES.get(self.reason)
            if bypass is None or not self._matches(node1, node2):
                return False
            names = f"{node1.get_name()} + {node2.get_name()}"
            evaluation = recorder.evaluations[0]
            refused, detail, _ = fusion_hooks.rejection_reason(evaluation)
            if _SAME_HEURISTIC.get(refused, refused) is not _SAME_HEURISTIC.get(
                self.reason, self.reason
            ):
                self._note(
                    self.refusals,
                    f"{names}: {refused.value} ({refused.category.value}): {detail}",
                )
                return False
            # Re-run the check; what refuses it now is what the verdict records.
            evaluation.refusals.clear()
            self._reconsidering = True
            try:
                with bypass(None):  # type: ignore[arg-type]
                    result = bool(decide())
            finally:
                self._reconsidering = False
            if result:
                self._note(self.overturned, names)
                fusion_log.debug(
                    "fusion_check: forcing %s in graph %s past %s",
                    names,
                    self.graph,
                    self.reason.value,
                )
            else:
                then, detail, _ = fusion_hooks.rejection_reason(evaluation)
                if then.category is Category.LEGALITY:
                    self.legality_refusal = True
                self._note(
                    self.refusals,
                    f"{names}: with {self.reason.value} bypassed, refused by "
                    f"{then.value} ({then.category.value}): {detail}",
                )
            return result
        except Exception as e:
            self._note(self.errors, f"{type(e).__name__}: {e}")
            return False

    def bypasses(self, code: Reason) -> bool:
        """Whether the heuristic ``code`` is off for the pair being reconsidered."""
        return self._reconsidering and _SAME_HEURISTIC.get(
            code, code
        ) is _SAME_HEURISTIC.get(self.reason, self.reason)

    def note_cycle(self, name1: str, name2: str) -> None:
        """``Scheduler.will_fusion_create_cycle`` said yes for some pair."""
        if self._matches_names(name1, name2):
            self.cycle = True
            self.legality_refusal = True
            self._note(
                self.refusals,
                f"{name1} + {name2}: would_create_cycle "
                "(legality): fusing would create a cycle through other kernels",
            )

    def forced_speedup(self, node1: Any, node2: Any) -> Any:
        """A ``FusionResult`` that fuses a matching pair without benchmarking,
        or None to let ``Scheduler.speedup_by_fusion`` decide."""
        if self.reason not in _SPEEDUP_BYPASSES or not self._matches(node1, node2):
            return None
        try:
            from ... import ir
            from ...scheduler import FusionResult

            names = f"{node1.get_name()} + {node2.get_name()}"
            if any(
                n.is_template()
                and isinstance(n.get_template_node(), ir.MultiTemplateBuffer)
                for n in (node1, node2)
            ):
                # Fusing into an autotuned multi-template also picks its
                # choice; forcing that choice is not supported.
                self._note(
                    self.refusals,
                    f"{names}: benchmarked fusion with an autotuned template "
                    "cannot be forced",
                )
                return None
            self._note(self.overturned, names)
            return FusionResult.fuse(True)
        except Exception as e:
            self._note(self.errors, f"{type(e).__name__}: {e}")
            return None

    # -- results -----------------------------------------------------------

    def graph_report(self) -> dict[str, Any] | None:
        """The forced compile's report of the target graph, if it was compiled."""
        if self.capture is None:
            return None
        for graph in reversed(self.capture.graphs):
            if graph.get("compile_id") == self.graph:
                return graph
        return None


def _as_reason(reason: Reason | str) -> Reason:
    try:
        return Reason(reason)
    except ValueError:
        raise ValueError(f"unknown fusion reason {reason!r}") from None


def can_force(reason: Reason | str) -> bool:
    """Whether :func:`force_fusion` knows how to bypass ``reason``."""
    try:
        return Reason(reason).value in BYPASSES
    except ValueError:
        return False


@contextlib.contextmanager
def force_fusion(
    graph_compile_id: str,
    producer_nodes: Sequence[str],
    consumer_nodes: Sequence[str],
    reason: Reason | str,
) -> Iterator[ForcedFusion]:
    """Compile with one refused scheduler pair forced past one heuristic.

    Inside the block, in the graph labelled ``graph_compile_id`` (a fusion
    report's ``compile_id``, e.g. ``"0/0"`` or ``"0/0 backward"``), whenever the
    scheduler refuses a pair whose sides hold ``producer_nodes`` and
    ``consumer_nodes`` (base scheduler node names, e.g. ``["op3"]``) because of
    ``reason``, the pair is evaluated again with that heuristic off (see
    :data:`BYPASSES`); anything else that refuses it still does.  The block
    runs under a :func:`fusion_report.capture` (kept in the yielded
    :class:`ForcedFusion`), which also keeps forced graphs out of Inductor's
    caches.  Compile afresh inside (``torch._dynamo.reset()``): a cached or
    already compiled graph is not scheduled again.
    """
    from ... import fusion_report

    code = _as_reason(reason)
    if code.value not in BYPASSES:
        why = (
            "it is a legality reason: the fusion would be wrong"
            if code.category is Category.LEGALITY
            else f"it is a {code.category.value} reason, not a scheduler heuristic"
            if code.category is not Category.HEURISTIC
            else "it is decided during lowering, not by the scheduler"
        )
        raise ValueError(f"{code.value} cannot be forced: {why}")
    if fusion_recorder.forcing is not None:
        raise RuntimeError("force_fusion does not nest")
    forced = ForcedFusion(
        graph=graph_compile_id,
        producer_nodes=frozenset(producer_nodes),
        consumer_nodes=frozenset(consumer_nodes),
        reason=code,
    )
    with fusion_report.capture() as rep:
        forced.capture = rep
        fusion_recorder.forcing = forced
        try:
            yield forced
        finally:
            fusion_recorder.forcing = None
