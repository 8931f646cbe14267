"""Could this boundary be fused?  Force one refused fusion and see.

The fusion report (:mod:`torch._inductor.fusion_report`) gives every kernel
boundary of a compiled graph a reason.  For a ``heuristic`` reason the
scheduler judged the fusion unprofitable, and only trying it answers both
halves of the question: is the fused kernel generated and correct, and is it
faster?  This opt-in check tries it, in two modules:

``policy``
    which heuristic refusals can be forced (:data:`BYPASSES`; those decided
    outside ``InductorChoices`` are :data:`OUT_OF_REACH`), the
    :class:`ForcingChoices` that lets one pair past them through upstream's
    extension point (``V.set_choices_handler``), :func:`can_force` and
    :func:`force_fusion` (one refused pair forced through one compile)
``harness``
    :func:`check_fusible`: compile the model again per boundary under
    :func:`force_fusion`, compare with eager, time both compiles, and fill the
    boundaries' ``fusible`` and ``fusible_check``

``harness`` imports ``policy``, never the reverse, and nothing in ``torch/``
imports either: the check reaches Inductor only through its choices handler
and reads what happened from the fusion report.  It compiles the model once
more per checked boundary, so it is never run implicitly;
``benchmarks/fusion/study.py --check-fusible N`` runs it per case.
"""

from .harness import check_fusible, StepTimer
from .policy import (
    BYPASSES,
    can_force,
    force_fusion,
    ForcedFusion,
    ForcingChoices,
    OUT_OF_REACH,
)


__all__ = [
    "BYPASSES",
    "OUT_OF_REACH",
    "ForcedFusion",
    "ForcingChoices",
    "StepTimer",
    "can_force",
    "check_fusible",
    "force_fusion",
]
