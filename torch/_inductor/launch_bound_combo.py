"""Launch-bound combo kernels: horizontal fusion decided per kernel by a cost model.

Why: on a GPU, compiled inference and training steps of ordinary models are
dominated by launches, not bytes.  Between the kernels Inductor generates, the
most frequent legal-but-unfused boundary is ``no_shared_data``: independent
kernels (the Q, K and V head reshapes of an attention block, the per-branch
pointwise tails of a network) that vertical fusion rightly leaves apart,
because fusing them saves no memory traffic.  What combining them saves is
launches.  Upstream's ``config.combo_kernels`` does that for every group of
independent kernels it finds, and its effect on a model set is mixed: the
kernels it combines share one set of block sizes and one launch grid, which
suits small kernels and can slow a large one down by more than the launch it
saves.  ``config.benchmark_combo_kernel`` decides by benchmarking each group
at compile time, which costs compile time and is noisy exactly for the small
kernels where combining pays.

This pass decides per kernel, before grouping: a kernel is *launch-bound*
when the bytes it moves (Inductor's own estimate,
``BaseSchedulerNode.get_read_write_buffers_sizes``) take the GPU less time
than a launch costs, i.e. when it moves at most
``config.launch_bound_combo_max_bytes``.  Only launch-bound kernels are
combined; each group is a set of mutually independent kernels of one
topological level (as upstream groups them), at most
``config.launch_bound_combo_max_nodes`` per group.  The groups go through
upstream's combo-kernel code generation unchanged
(``Scheduler.create_combo_kernel_nodes``), so the generated kernels are
upstream's; what is new is which kernels are put together.

Every decision is a remark (stage ``launch_bound_combo``): ``missed`` with
``combo_not_launch_bound`` for each kernel the cost model kept apart although
it had independent partners; and, once upstream's combo-kernel step has run,
``fused`` with ``combined_launch_bound`` for each combo kernel it made of a
group, ``missed`` with ``launch_bound_group_refused`` for the members it left
apart (its distance window, speed-up estimate or peak-memory gate may split or
refuse a group).  The outcome is read from the schedule the step leaves, so a
remark names only what was combined.  ``TORCH_LOGS=fusion`` and the fusion
report show them.

The pass applies to Triton devices only: the C++ backend calls its kernels as
plain functions, with no launch to save.

The groups take the place of upstream's in upstream's own combo-kernel step
(the scheduler's ``config.combo_kernels`` branch, which calls
:func:`create_combo_kernel_nodes`), so everything upstream does after
combining runs for them too: on 2.14.1 the buffers' memory-planning users are
recomputed, without which the wrapper's peak-memory estimate looks up kernels
that no longer exist.  They reach the step through upstream's extension point
for grouping, ``ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels``,
registered for the one call and restored after it; a grouping callback the
user registered is left in charge (the pass then says it did not apply).  The candidates follow upstream's grouping
rules: one device, one stream and one memory pool per group, and no kernel
that reads a mix-order reduction's outputs.  The pass never fails a compile:
if it cannot group a graph's kernels it leaves upstream's schedule and says
why in a ``launch_bound_combo_not_applied`` remark.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from . import config
from .fusion_remarks import hooks as fusion_hooks, recorder as fusion_recorder
from .fusion_remarks.releases import release_at_least
from .fusion_remarks.model import Remark
from .fusion_remarks.taxonomy import Kind, Reason, Stage


if TYPE_CHECKING:
    from collections.abc import Iterator

    from .scheduler import BaseSchedulerNode, Scheduler


log = logging.getLogger(__name__)

# Devices whose kernels are called, not launched: nothing to combine.
_NO_LAUNCH_DEVICES = ("cpu", "mps")


def enabled() -> bool:
    return bool(config.launch_bound_combo_kernels)


def check_config() -> None:
    """Fail with the option's name rather than deep inside the scheduler."""
    for name, lowest in (
        ("launch_bound_combo_max_bytes", 0),
        ("launch_bound_combo_max_nodes", 2),
    ):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
            raise ValueError(
                f"torch._inductor.config.{name} must be an integer >= {lowest}, "
                f"got {value!r}"
            )


def estimated_bytes(node: BaseSchedulerNode) -> int:
    """The bytes a kernel reads and writes, as Inductor's scheduler estimates them."""
    return int(node.get_read_write_buffers_sizes())


def is_launch_bound(node: BaseSchedulerNode) -> bool:
    return estimated_bytes(node) <= config.launch_bound_combo_max_bytes


def _mix_order_outputs(scheduler: Scheduler) -> set[str]:
    """The buffers written by mix-order reductions, whose readers upstream's
    grouping keeps out of combo kernels."""
    from .scheduler import FusedMixOrderReductions

    return {
        name
        for node in scheduler.nodes
        if isinstance(node, FusedMixOrderReductions)
        for name in node.get_buffer_names()
    }


def _candidates(
    scheduler: Scheduler, nodes: list[BaseSchedulerNode], excluded: set[str]
) -> dict[object, list[BaseSchedulerNode]]:
    """The nodes of one topological level that upstream's combo kernels can
    take, by what one combo kernel must share: device, stream, memory pool."""
    from .scheduler import ForeachKernelSchedulerNode

    on_gpu = []
    for node in nodes:
        device = node.get_device()
        if device is None or device.type in _NO_LAUNCH_DEVICES:
            continue
        if excluded and node.used_buffer_names() & excluded:
            continue
        on_gpu.append(node)
    by_context: dict[object, list[BaseSchedulerNode]] = {}
    for node in ForeachKernelSchedulerNode.combinable_nodes(on_gpu):
        # one combo kernel combines only nodes of one CUDA stream and one
        # memory pool (Scheduler.get_node_stream, Scheduler.node_to_mempool)
        key = (
            node.get_device(),
            scheduler.get_node_stream(node),
            scheduler.node_to_mempool.get(node),
        )
        by_context.setdefault(key, []).append(node)
    return by_context


def group_nodes(scheduler: Scheduler) -> list[list[BaseSchedulerNode]]:
    """Groups of independent launch-bound kernels, each to become one combo kernel.

    Kernels of one topological level do not depend on each other; within a
    level, launch-bound kernels of one device are chunked in schedule order.
    Kernels kept apart by the cost model get a ``missed`` remark when they had
    a launch-bound partner to combine with.
    """
    groups: list[list[BaseSchedulerNode]] = []
    kept_apart: list[tuple[BaseSchedulerNode, int]] = []
    check_config()
    max_nodes = config.launch_bound_combo_max_nodes
    excluded = _mix_order_outputs(scheduler)
    for level in scheduler._topological_sort_nodes():
        for nodes in _candidates(scheduler, level, excluded).values():
            if len(nodes) < 2:
                continue
            small = [n for n in nodes if is_launch_bound(n)]
            if len(small) >= 2:
                kept_apart.extend(
                    (n, len(small)) for n in nodes if not is_launch_bound(n)
                )
            for start in range(0, len(small), max_nodes):
                chunk = small[start : start + max_nodes]
                if len(chunk) >= 2:
                    groups.append(chunk)
    _record_kept_apart(kept_apart)
    return groups


def create_combo_kernel_nodes(scheduler: Scheduler) -> None:
    """Upstream's combo-kernel step (``Scheduler.create_combo_kernel_nodes``),
    with this pass's groups where it is on, then the remarks of its outcome.

    The scheduler calls this in place of the step when ``config.combo_kernels``
    or ``config.launch_bound_combo_kernels`` is on.  With the pass off it is
    the step as upstream runs it.
    """
    groups = groups_for_combo_kernels(scheduler)
    if groups is None:
        scheduler.create_combo_kernel_nodes(num_ck_nodes=None)
        return
    with _grouping_callback(groups):
        scheduler.create_combo_kernel_nodes(num_ck_nodes=None)
    record_combo_outcome(scheduler, groups)


# Options of upstream's combo-kernel step (Scheduler.create_combo_kernel_nodes)
# that may split or refuse a group, and the value at which each is off.
_COMBO_STEP_GATES_OFF: dict[str, object] = {
    "benchmark_combo_kernel": False,
    "combo_kernel_max_distance": -1,
    "combo_kernel_peak_memory_pct_threshold": None,
    "combo_kernel_peak_memory_increase_gb": None,
}

# 2.15.0 rewrote the combo-kernel step: groups handed to it (the pass's, as a
# custom grouping callback's) take its path without the distance window and
# the peak-memory gate, which only its own grouping has.
COMBO_GROUPS_MEMORY_GATED: bool = not release_at_least("2.15.0")


def combo_step_gates() -> dict[str, object]:
    """The gates of upstream's combo-kernel step that are on for the pass's
    groups, by option name, with their values: what may have left a group's
    kernels apart."""
    gates: dict[str, object] = {}
    for name, off in _COMBO_STEP_GATES_OFF.items():
        if not COMBO_GROUPS_MEMORY_GATED and name != "benchmark_combo_kernel":
            continue
        value = getattr(config, name, off)
        if name == "combo_kernel_max_distance" and value < 0:
            continue
        if value != off:
            gates[name] = value
    return gates


@contextlib.contextmanager
def _grouping_callback(groups: list[list[BaseSchedulerNode]]) -> Iterator[None]:
    """``groups`` as upstream's grouping callback for one combo-kernel step.

    From 2.15.0 the step's peak-memory gating collects its own candidates and
    ignores a callback (:data:`COMBO_GROUPS_MEMORY_GATED`), so
    there the gating is off for the step, as upstream's docstring of
    ``set_group_algorithm_for_combo_kernels`` asks of a custom grouping.
    """
    from .scheduler import ForeachKernelSchedulerNode

    # as stored (a staticmethod until a callback is registered), to restore
    previous = vars(ForeachKernelSchedulerNode)["group_algorithm_for_combo_kernels"]
    gating_off: dict[str, object] = {}
    if not COMBO_GROUPS_MEMORY_GATED:
        gating_off = {
            "combo_kernel_peak_memory_increase_gb": None,
            "combo_kernel_peak_memory_pct_threshold": None,
        }
    ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels(
        lambda _scheduler: groups
    )
    try:
        with config.patch(gating_off):
            yield
    finally:
        ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels(previous)


def _custom_grouping_registered() -> bool:
    from .scheduler import ForeachKernelSchedulerNode

    return (
        ForeachKernelSchedulerNode.group_algorithm_for_combo_kernels
        is not ForeachKernelSchedulerNode._default_group_nodes_for_combo_kernels
    )


def groups_for_combo_kernels(
    scheduler: Scheduler,
) -> list[list[BaseSchedulerNode]] | None:
    """The groups upstream's combo-kernel step combines: None (upstream's
    grouping) with the pass off, else :func:`group_nodes`.

    A bad option of the pass is an error naming it.  A grouping callback the
    user registered, or any failure to group, leaves the schedule the pass
    found (upstream's step where ``config.combo_kernels`` is on too, no combo
    kernel otherwise), with a ``launch_bound_combo_not_applied`` remark (and a
    warning for a failure).
    """
    if not enabled():
        return None
    check_config()
    if _custom_grouping_registered():
        _record_not_applied(
            "CustomGrouping",
            "a grouping callback is registered "
            "(ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels)",
        )
        return None if config.combo_kernels else []
    try:
        return group_nodes(scheduler)
    except Exception as error:
        log.warning(
            "launch_bound_combo_kernels: not applied to this graph", exc_info=True
        )
        _record_not_applied(
            type(error).__name__,
            f"the pass could not group this graph's kernels "
            f"({type(error).__name__}: {error})",
        )
        return None if config.combo_kernels else []


def _record_not_applied(cause: str, why: str) -> None:
    if not fusion_recorder.is_enabled():
        return
    fallback = "upstream's combo kernels" if config.combo_kernels else "no combo kernel"
    fusion_hooks.record_pass_remark(
        Remark(
            Kind.ANALYSIS,
            Reason.LAUNCH_BOUND_COMBO_NOT_APPLIED,
            Stage.LAUNCH_BOUND_COMBO,
            args={"error": cause, "fallback": fallback},
            detail=f"{why}; the schedule keeps {fallback}",
        )
    )


def record_combo_outcome(
    scheduler: Scheduler, groups: list[list[BaseSchedulerNode]] | None
) -> None:
    """Remarks for what upstream's combo-kernel step made of the pass's groups.

    Called after upstream's combo-kernel step: each combo kernel in
    the schedule whose members come from one group is ``combined_launch_bound``;
    the group's members in no combo kernel are ``launch_bound_group_refused``.
    Recording never fails the compile.
    """
    if not groups or not fusion_recorder.is_enabled():
        return
    try:
        _record_outcome(scheduler, groups)
    except Exception:
        log.warning(
            "launch_bound_combo_kernels: outcome not recorded for this graph",
            exc_info=True,
        )


def _record_outcome(
    scheduler: Scheduler, groups: list[list[BaseSchedulerNode]]
) -> None:
    combo_of: dict[str, BaseSchedulerNode] = {}
    for node in scheduler.nodes:
        if node.is_foreach():
            for member in node.get_subkernel_nodes():
                combo_of[member.get_name()] = node
    limit = config.launch_bound_combo_max_bytes
    for group in groups:
        combined: dict[BaseSchedulerNode, list[BaseSchedulerNode]] = {}
        refused: list[BaseSchedulerNode] = []
        for node in group:
            combo = combo_of.get(node.get_name())
            if combo is None:
                refused.append(node)
            else:
                combined.setdefault(combo, []).append(node)
        for members in combined.values():
            if len(members) < 2:
                refused.extend(members)
                continue
            names = tuple(n.get_name() for n in members)
            sizes = [estimated_bytes(n) for n in members]
            fusion_hooks.record_pass_remark(
                Remark(
                    Kind.FUSED,
                    Reason.COMBINED_LAUNCH_BOUND,
                    Stage.LAUNCH_BOUND_COMBO,
                    nodes=names,
                    ops=fusion_hooks.origin_names(members),
                    args={
                        "kernels": len(members),
                        "bytes": sizes,
                        "max_bytes": limit,
                    },
                    detail=(
                        f"{len(members)} independent kernels ({', '.join(names)}), "
                        f"each moving at most {max(sizes)} bytes (limit {limit}), "
                        "share one launch"
                    ),
                )
            )
        if refused:
            _record_refused(refused, len(group))


def _record_refused(refused: list[BaseSchedulerNode], group_size: int) -> None:
    names = tuple(n.get_name() for n in refused)
    gates = combo_step_gates()
    shown = ", ".join(f"{k}={v}" for k, v in gates.items()) or "none configured"
    fusion_hooks.record_pass_remark(
        Remark(
            Kind.MISSED,
            Reason.LAUNCH_BOUND_GROUP_REFUSED,
            Stage.LAUNCH_BOUND_COMBO,
            nodes=names,
            ops=fusion_hooks.origin_names(refused),
            args={"kernels": len(refused), "group": group_size, **gates},
            detail=(
                f"{', '.join(names)}: {len(refused)} of a launch-bound group of "
                f"{group_size} left apart by upstream's combo-kernel step "
                f"(its gates: {shown})"
            ),
        )
    )


def _record_kept_apart(kept_apart: list[tuple[BaseSchedulerNode, int]]) -> None:
    if not fusion_recorder.is_enabled():
        return
    limit = config.launch_bound_combo_max_bytes
    for node, partners in kept_apart:
        size = estimated_bytes(node)
        fusion_hooks.record_pass_remark(
            Remark(
                Kind.MISSED,
                Reason.COMBO_NOT_LAUNCH_BOUND,
                Stage.LAUNCH_BOUND_COMBO,
                nodes=(node.get_name(),),
                ops=fusion_hooks.origin_names([node]),
                args={"bytes": size, "max_bytes": limit, "partners": partners},
                detail=(
                    f"{node.get_name()} moves {size} bytes, more than the "
                    f"launch-bound limit {limit}: kept out of a combo kernel "
                    f"with {partners} independent launch-bound kernels"
                ),
            )
        )
