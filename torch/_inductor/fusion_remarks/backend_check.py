"""The device backend's own fusion check, asked about a pair a heuristic
refused first.

``Scheduler._can_fuse`` asks ``InductorChoices``' heuristics before the
backend's ``can_fuse_vertical`` / ``can_fuse_horizontal``, so a heuristic's
refusal hides whether the backend could generate the pair at all.  The
boundary says so where the backend would refuse too: fusing was impossible
anyway, and lifting the heuristic would not help.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import recorder as rec
from .recorder import Evaluation, fusion_log, Refusal
from .taxonomy import Category, Reason


if TYPE_CHECKING:
    from ..scheduler import Scheduler


def ask_backend(
    scheduler: Scheduler, recorder: rec.GraphRecorder, evaluation: Evaluation
) -> list[Refusal]:
    """A pair that a heuristic refused first never reached the device
    backend's own check (``can_fuse_vertical`` or ``can_fuse_horizontal``,
    asked last by ``Scheduler._can_fuse``): ask it now, so that the boundary
    can say whether fusing was also impossible.  Its refusals are what it
    reports through its own hooks; the pair's verdict does not change.

    Asked only while remarks are on, for two plain scheduler nodes (no
    template, foreach, extern, grouped or nested-reduction node; a C++
    function of loop nests is one) after ``Scheduler.can_fuse``
    refused them and before it rolls back their loop changes; a check that
    fails is taken as no answer."""
    from ..codegen.cpp import OuterLoopFusedSchedulerNode
    from ..scheduler import FusedSchedulerNode, SchedulerNode

    first = next((r for r in evaluation.refusals if r.code is not None), None)
    if first is None or first.code.category is not Category.HEURISTIC:
        return []
    node1, node2 = evaluation.node1, evaluation.node2
    plain = (SchedulerNode, FusedSchedulerNode, OuterLoopFusedSchedulerNode)
    if node1 is node2 or not (
        type(node1) in plain
        and type(node2) in plain
        and not node1.is_template()
        and not node2.is_template()
    ):
        return []
    device = node1.get_device()
    if device is None or device != node2.get_device():
        return []
    try:
        backend = scheduler.get_backend(device)
        vertical = bool(node2.ancestors & {n.get_name() for n in node1.get_nodes()})
        check = backend.can_fuse_vertical if vertical else backend.can_fuse_horizontal
        name = f"{type(backend).__name__}.{check.__name__}"
        fusion_log.debug(
            "fusion remarks: asking %s about %s and %s, which %s refused first "
            "(the pair stays refused)",
            name,
            node1.get_name(),
            node2.get_name(),
            first.code.value,
        )
        asked = Evaluation(node1, node2)
        recorder.evaluations.append(asked)
        try:
            fusible = check(node1, node2)
        finally:
            recorder.evaluations.pop()
    except Exception:
        return []
    if fusible:
        return []
    coded = [r for r in asked.refusals if r.code is not None]
    return coded or [
        Refusal(Reason.BACKEND_REJECTED, f"{name} returned False", {}, check=name)
    ]
