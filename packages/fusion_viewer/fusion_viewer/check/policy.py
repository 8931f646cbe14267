"""Could this boundary be fused?  The policy: which refusals can be forced, and how.

The fusion report (:mod:`torch._inductor.fusion_report`) gives every kernel
boundary of a compiled graph a reason.  For a ``legality`` reason the answer to
"could these two ops share a kernel?" is known: no.  For a ``heuristic`` reason
(``no_shared_data``, ``exceeds_max_fusion_size``, ``nodes_too_far_apart``, ...)
the scheduler judged the fusion unprofitable, and only trying it answers both
halves of the question: is the fused kernel generated and correct, and is it
faster?

Under :func:`force_fusion`, one compile runs with a :class:`ForcingChoices`
installed by ``V.set_choices_handler``, upstream's extension point for fusion
heuristics.  For the one refused pair (named by graph and base scheduler node
names, as the report's boundary ``args`` give them) it answers what
``InductorChoices.can_fuse``, ``can_fuse_vertical`` and ``can_fuse_horizontal``
answer once their heuristics are out of the way: yes.  Upstream documents those
hooks as heuristics that correctness does not need, so nothing that keeps a
fusion correct is skipped: every check the scheduler and the backend make
outside ``InductorChoices`` (legality, cycles, what the backend can generate)
still applies, so a fusion that would be wrong or cannot be generated simply
does not happen.  Every other pair gets the previous handler's answers.

Only heuristics decided in ``InductorChoices`` can be forced this way
(:data:`BYPASSES`).  Those decided elsewhere are out of the extension point's
reach and are not forced (:data:`OUT_OF_REACH` says where each is decided):
the prologue heuristics (``Scheduler.check_prologue_fusion_heuristics_fusable``),
benchmarked fusion (``Scheduler.speedup_by_fusion``) and the backends' tiling
and size flags (their ``can_fuse``, switched by config for a whole compile,
not for one pair).

What happened to the forced pair is read afterwards from the forced compile's
own fusion report (its ``evaluated_pairs``): nothing in Inductor calls this
module, and the remarks' hooks know nothing of it.  Compiling, comparing with
eager and timing live in :mod:`fusion_viewer.check.harness`
(:func:`~fusion_viewer.check.harness.check_fusible`), which imports this
module, never the reverse.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, TYPE_CHECKING

import torch
import torch._logging
from torch._inductor import fusion_report
from torch._inductor.choices import InductorChoices
from torch._inductor.fusion_remarks.recorder import graph_label
from torch._inductor.fusion_remarks.taxonomy import Category, Reason
from torch._inductor.virtualized import V


if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from torch._inductor.fusion_report import FusionCapture
    from torch._inductor.scheduler import BaseSchedulerNode, Scheduler


__all__ = [
    "BYPASSES",
    "OUT_OF_REACH",
    "ForcedFusion",
    "ForcingChoices",
    "can_force",
    "force_fusion",
    "why_not_forced",
]

fusion_log = torch._logging.getArtifactLogger(__name__, "fusion")


_IN_CAN_FUSE = (
    "ForcingChoices.can_fuse answers yes for the pair "
    "(InductorChoices.can_fuse holds only heuristics)"
)
_IN_CAN_FUSE_HORIZONTAL = (
    "ForcingChoices.can_fuse_horizontal answers yes for the pair "
    "(InductorChoices.can_fuse_horizontal holds only heuristics)"
)

BYPASSES: dict[str, str] = {
    Reason.NO_SHARED_DATA.value: _IN_CAN_FUSE,
    Reason.INDEXING_MISMATCH.value: _IN_CAN_FUSE,
    Reason.EXCEEDS_MAX_FUSION_SIZE.value: _IN_CAN_FUSE,
    Reason.PEAK_MEMORY_INCREASE.value: _IN_CAN_FUSE
    + "; the peak-memory gate Scheduler.can_fuse has of its own (2.15.0) still "
    "applies",
    Reason.TOO_MANY_IO_BUFFERS.value: _IN_CAN_FUSE,
    Reason.SCORE_BELOW_THRESHOLD.value: _IN_CAN_FUSE_HORIZONTAL,
    Reason.NODES_TOO_FAR_APART.value: _IN_CAN_FUSE_HORIZONTAL,
}
"""Each heuristic reason :func:`force_fusion` can force a pair past, and how.

Each is decided in one of ``InductorChoices``' fusion hooks; for the forced
pair :class:`ForcingChoices` answers all three hooks with yes, so the pair is
past whichever of them refused it, and past any other of them that would
refuse it next."""

_IN_BACKEND = (
    "decided by the backend's can_fuse from a config flag, for every pair of a "
    "compile: InductorChoices cannot lift it for one pair"
)
_IN_PROLOGUE = (
    "decided by Scheduler.check_prologue_fusion_heuristics_fusable, outside "
    "InductorChoices"
)
_IN_SPEEDUP = (
    "decided by Scheduler.speedup_by_fusion (config.benchmark_fusion, or an "
    "autotuned template's choices), outside InductorChoices"
)

OUT_OF_REACH: dict[str, str] = {
    Reason.TILING_MISMATCH.value: _IN_BACKEND,
    Reason.REDUCTION_TILING_INVALID.value: _IN_BACKEND,
    Reason.CPP_MAX_HORIZONTAL_SIZE.value: _IN_BACKEND,
    Reason.PROLOGUE_INCREASES_READS.value: _IN_PROLOGUE,
    Reason.PROLOGUE_PADDING.value: _IN_PROLOGUE,
    Reason.PROLOGUE_NEEDS_UPCAST.value: _IN_PROLOGUE,
    Reason.BENCHMARK_SLOWER.value: _IN_SPEEDUP,
    Reason.REGISTER_SPILLING.value: _IN_SPEEDUP,
    Reason.NO_FUSIBLE_TEMPLATE_CHOICE.value: _IN_SPEEDUP,
}
"""Scheduler heuristics the check does not force, and where each is decided:
outside ``InductorChoices``, so the extension point cannot lift them."""


def _base_names(node: BaseSchedulerNode) -> frozenset[str]:
    return frozenset(n.get_name() for n in node.get_nodes())


def _add_once(items: list[str], text: str) -> None:
    if text not in items:
        items.append(text)


def _names_in(scheduler_name: str) -> frozenset[str]:
    """The base node names in a scheduler node's name (a fused node's name
    joins its base nodes' names with ``_``)."""
    return frozenset(scheduler_name.split("_"))


# ---------------------------------------------------------------------------
# Forcing one pair


@dataclasses.dataclass
class ForcedFusion:
    """One forced pair, and what the forced compile did with it.

    A scheduler pair *matches* when one side holds every producer node and the
    other every consumer node (after earlier fusions a side may hold more).
    :class:`ForcingChoices` notes each matching pair it answered for in
    ``let_through``; the scheduler's verdicts on the matching pairs come from
    the forced compile's report (:meth:`verdicts`).
    """

    graph: str
    producer_nodes: frozenset[str]
    consumer_nodes: frozenset[str]
    reason: Reason
    capture: FusionCapture | None = None
    # "name1 + name2" of each matching pair ForcingChoices answered yes for.
    let_through: list[str] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)

    def matches(self, side1: Iterable[str], side2: Iterable[str]) -> bool:
        """Whether a pair whose sides hold these base node names is the target."""
        a, b = frozenset(side1), frozenset(side2)
        p, c = self.producer_nodes, self.consumer_nodes
        return (p <= a and c <= b) or (p <= b and c <= a)

    # -- results, from the forced compile's report ---------------------------

    def graph_report(self) -> dict[str, Any] | None:
        """The forced compile's report of the target graph, if it was compiled."""
        if self.capture is None:
            return None
        for graph in reversed(self.capture.graphs):
            if graph.get("compile_id") == self.graph:
                return graph
        return None

    def verdicts(self) -> list[dict[str, Any]]:
        """The scheduler's verdicts on matching pairs in the forced compile
        (``evaluated_pairs`` entries), in the order they were made."""
        graph = self.graph_report()
        if graph is None:
            return []
        return [
            v
            for v in graph.get("evaluated_pairs", [])
            if self.matches(_names_in(v["first"]), _names_in(v["second"]))
        ]

    @property
    def overturned(self) -> list[str]:
        """``"name1 + name2"`` of each matching pair the scheduler fused."""
        out: list[str] = []
        for v in self.verdicts():
            if v["fused"]:
                _add_once(out, f"{v['first']} + {v['second']}")
        return out

    def _refused(self) -> list[tuple[dict[str, Any], Reason | None]]:
        out = []
        for v in self.verdicts():
            if not v["fused"]:
                try:
                    code: Reason | None = Reason(v["reason"])
                except ValueError:
                    code = None
                out.append((v, code))
        return out

    @property
    def refusals(self) -> list[str]:
        """Why matching pairs were still refused: what refused them once the
        choices' heuristics were out of the way."""
        out: list[str] = []
        for v, code in self._refused():
            category = code.category.value if code is not None else "?"
            _add_once(
                out,
                f"{v['first']} + {v['second']}: with {self.reason.value} bypassed, "
                f"refused by {v['reason']} ({category}): {v['detail']}",
            )
        return out

    @property
    def legality_refusal(self) -> bool:
        """A legality reason (a cycle included) refused a matching pair past
        the heuristics: the boundary cannot be fused without breaking the
        program."""
        return any(
            code is not None and code.category is Category.LEGALITY
            for _, code in self._refused()
        )

    @property
    def cycle(self) -> bool:
        """Fusing a matching pair would have created a cycle."""
        return any(code is Reason.WOULD_CREATE_CYCLE for _, code in self._refused())


# Attributes a ForcingChoices answers itself; it hands every other one to the
# handler it was installed over.
_OWN_ATTRIBUTES = frozenset(
    {
        "forced",
        "previous",
        "can_fuse",
        "can_fuse_vertical",
        "can_fuse_horizontal",
        "_is_forced_pair",
    }
)


class ForcingChoices(InductorChoices):
    """``InductorChoices`` that lets one pair past the fusion heuristics.

    For a pair matching ``forced`` in the graph ``forced.graph``, the three
    fusion hooks answer yes: upstream keeps only heuristics in them ("not
    needed for correctness"), so the yes skips no correctness check; what the
    scheduler and the backend check outside them still decides.  For any other
    pair, and for every other hook (kernel configs, scores, ...), it answers
    what ``previous``, the handler installed before it, answers, so that the
    forced compile differs from the stock one in the forced pair only.
    """

    def __init__(self, forced: ForcedFusion, previous: InductorChoices) -> None:
        super().__init__()
        self.forced = forced
        self.previous = previous

    def __getattribute__(self, name: str) -> Any:
        if name in _OWN_ATTRIBUTES or name.startswith("__"):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "previous"), name)

    def _is_forced_pair(
        self, node1: BaseSchedulerNode, node2: BaseSchedulerNode
    ) -> bool:
        forced = self.forced
        try:
            if graph_label() != forced.graph:
                return False
            if not forced.matches(_base_names(node1), _base_names(node2)):
                return False
            names = f"{node1.get_name()} + {node2.get_name()}"
        except Exception as e:  # never fail the forced compile
            _add_once(forced.errors, f"{type(e).__name__}: {e}")
            return False
        if names not in forced.let_through:
            forced.let_through.append(names)
            fusion_log.debug(
                "fusion_check: letting %s in graph %s past InductorChoices' "
                "heuristics (refused for %s in the stock compile)",
                names,
                forced.graph,
                forced.reason.value,
            )
        return True

    def can_fuse(  # type: ignore[override]
        self,
        scheduler: Scheduler,
        node1: BaseSchedulerNode,
        node2: BaseSchedulerNode,
        shared_data_score: int,
    ) -> bool:
        if self._is_forced_pair(node1, node2):
            return True
        return self.previous.can_fuse(scheduler, node1, node2, shared_data_score)

    def can_fuse_vertical(  # type: ignore[override]
        self,
        scheduler: Scheduler,
        node1: BaseSchedulerNode,
        node2: BaseSchedulerNode,
        shared_data_score: int,
    ) -> bool:
        if self._is_forced_pair(node1, node2):
            return True
        return self.previous.can_fuse_vertical(
            scheduler, node1, node2, shared_data_score
        )

    def can_fuse_horizontal(  # type: ignore[override]
        self,
        scheduler: Scheduler,
        node1: BaseSchedulerNode,
        node2: BaseSchedulerNode,
        shared_data_score: int,
    ) -> bool:
        if self._is_forced_pair(node1, node2):
            return True
        return self.previous.can_fuse_horizontal(
            scheduler, node1, node2, shared_data_score
        )


def _as_reason(reason: Reason | str) -> Reason:
    try:
        return Reason(reason)
    except ValueError:
        raise ValueError(f"unknown fusion reason {reason!r}") from None


def can_force(reason: Reason | str) -> bool:
    """Whether :func:`force_fusion` can force a pair past ``reason``."""
    try:
        return Reason(reason).value in BYPASSES
    except ValueError:
        return False


def why_not_forced(code: Reason) -> str:
    """Why :func:`force_fusion` cannot force a pair past ``code``."""
    if code.category is Category.LEGALITY:
        return "it is a legality reason: the fusion would be wrong"
    if code.category is not Category.HEURISTIC:
        return f"it is a {code.category.value} reason, not a scheduler heuristic"
    if code.value in OUT_OF_REACH:
        return f"it is {OUT_OF_REACH[code.value]}"
    return (
        "it is decided during lowering (a value realized into a buffer), "
        "not by a scheduler pair"
    )


@contextlib.contextmanager
def force_fusion(
    graph_compile_id: str,
    producer_nodes: Sequence[str],
    consumer_nodes: Sequence[str],
    reason: Reason | str,
) -> Iterator[ForcedFusion]:
    """Compile with one refused scheduler pair let past the fusion heuristics.

    Inside the block, in the graph labelled ``graph_compile_id`` (a fusion
    report's ``compile_id``, e.g. ``"0/0"`` or ``"0/0 backward"``), a pair whose
    sides hold ``producer_nodes`` and ``consumer_nodes`` (base scheduler node
    names, e.g. ``["op3"]``) gets yes from every ``InductorChoices`` fusion
    hook (:class:`ForcingChoices`, installed with ``V.set_choices_handler``
    and the previous handler restored when the block ends, also on an error);
    anything outside them that refuses it still does.  ``reason``, the
    heuristic that refused the pair in the stock compile, must be one of
    :data:`BYPASSES`.  The block runs under a :func:`fusion_report.capture`
    (kept in the yielded :class:`ForcedFusion`, which reads the pair's
    verdicts from it), which also keeps forced graphs out of Inductor's
    caches.  Compile afresh inside (``torch._dynamo.reset()``): a cached or
    already compiled graph is not scheduled again.
    """
    code = _as_reason(reason)
    if code.value not in BYPASSES:
        raise ValueError(f"{code.value} cannot be forced: {why_not_forced(code)}")
    previous = V.choices
    if isinstance(previous, ForcingChoices):
        raise RuntimeError("force_fusion does not nest")
    forced = ForcedFusion(
        graph=graph_compile_id,
        producer_nodes=frozenset(producer_nodes),
        consumer_nodes=frozenset(consumer_nodes),
        reason=code,
    )
    with fusion_report.capture() as rep:
        forced.capture = rep
        with V.set_choices_handler(ForcingChoices(forced, previous)):
            yield forced
