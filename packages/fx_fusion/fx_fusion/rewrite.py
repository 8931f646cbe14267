"""The rewrite of the FX fusion pass: a graph calling one kernel per group.

:func:`fuse` partitions the graph (:mod:`.partitioner`), compiles a kernel for
every group of two or more computing ops (:mod:`.plan`, :mod:`.runtime`), and
builds a new graph in a topological order of groups and single nodes close
to the original: each compiled group becomes one call of its
:class:`~.runtime.FusedKernel` (plus a ``getitem`` per output), everything
else is copied as the aten op it was.  The graph's report is built and
published by :mod:`.report`.
"""

from __future__ import annotations

import dataclasses
import heapq
import operator
from typing import Any, TYPE_CHECKING

import torch
import torch.fx

from .model import _val
from .partitioner import partition_graph
from .plan import _aliased_axes, _external_users, build_kernel_plan, KernelPlan
from .report import _publish, build_report
from .runtime import _get_runner, FusedKernel


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .model import Partition


def _condensed_order(part: Partition, units: dict[torch.fx.Node, Any]) -> list[Any]:
    """A topological order of groups and single nodes, close to the original."""
    index = part.index
    unit_nodes: dict[Any, list[torch.fx.Node]] = {}
    for n, u in units.items():
        unit_nodes.setdefault(u, []).append(n)
    preds: dict[Any, set[Any]] = {u: set() for u in unit_nodes}
    succs: dict[Any, set[Any]] = {u: set() for u in unit_nodes}
    for n, u in units.items():
        for s in part.succ[n]:
            v = units.get(s)
            if v is None or v is u:
                continue
            vg = part.view_of.get(n)
            if vg is not None and isinstance(v, KernelPlan) and v.group is vg:
                continue  # a view the group reads inside the kernel
            preds[v].add(u)
            succs[u].add(v)
    key = {u: max(index[n] for n in ns) for u, ns in unit_nodes.items()}
    heap = [(key[u], i, u) for i, u in enumerate(unit_nodes) if not preds[u]]
    counter = len(unit_nodes)
    heapq.heapify(heap)
    order = []
    remaining = {u: len(p) for u, p in preds.items()}
    while heap:
        _, _, u = heapq.heappop(heap)
        order.append(u)
        for v in succs[u]:
            remaining[v] -= 1
            if remaining[v] == 0:
                counter += 1
                heapq.heappush(heap, (key[v], counter, v))
    if len(order) != len(unit_nodes):
        raise AssertionError("fx_fusion: the fused graph has a cycle")
    return order


@dataclasses.dataclass
class FusionResult:
    """What :func:`fuse` did, attached to the result as ``gm.meta["fx_fusion"]``."""

    partition: Partition
    kernels: list[KernelPlan]
    report: dict[str, Any]


def fuse(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any] | None = None,
    *,
    runner: Any = None,
    single_op_kernels: bool = False,
    label: str | None = None,
    publish: bool = True,
) -> torch.fx.GraphModule:
    """Fuse ``gm`` (aten level) and return a new GraphModule calling fused kernels.

    ``example_inputs`` are only needed when nodes lack ``meta["val"]`` (they
    are then propagated with fake tensors).  ``runner`` picks the kernel
    generator: ``"codegen"`` (``codegen.compile_kernel``; the default when
    that module exists), ``"reference"`` (:func:`~.runtime.reference_runner`,
    eager torch ops) or any ``callable(spec, device) -> runner``.  With
    ``single_op_kernels`` a group of one op gets a kernel too; by default it
    stays its aten op.  ``label`` names the graph in the fusion report (its
    compile id); ``publish`` hands the report to ``fusion_remarks.sinks.publish`` when
    remarks are on.  The input is not modified; ``result.meta["fx_fusion"]``
    is a :class:`FusionResult`.
    """
    if example_inputs is not None and any(
        n.op == "placeholder" and "val" not in n.meta for n in gm.graph.nodes
    ):
        _propagate_fake(gm, example_inputs)
    make_runner = _get_runner(runner)
    part = partition_graph(gm.graph)
    kernels, compiled = _compile_groups(part, make_runner, single_op_kernels)
    result = torch.fx.GraphModule(gm, _rewrite_graph(gm, part, kernels, compiled))
    report = build_report(gm.graph, part, kernels, compiled, label or "fx_fusion")
    result.meta["fx_fusion"] = FusionResult(part, kernels, report)
    if publish:
        _publish(report)
    return result


def _compile_groups(
    part: Partition,
    make_runner: Callable[[Any, str], Callable[..., Any]],
    single_op_kernels: bool,
) -> tuple[list[KernelPlan], dict[int, FusedKernel]]:
    """The kernel plan of every group that gets a kernel, in graph order, and
    its :class:`FusedKernel` by ``id(plan)``; why the others do not is
    recorded in ``part.not_compiled``."""
    kernels: list[KernelPlan] = []
    compiled: dict[int, FusedKernel] = {}
    for group in sorted(part.groups, key=lambda g: part.index[g.members[0]]):
        if len(group.members) < 2 and not single_op_kernels:
            continue
        aliased = _aliased_axes(group)
        if aliased is not None:
            # Two dims of one value paired with one loop axis would compute
            # only its diagonal: keep the group's ops as aten ops.
            part.not_compiled[group.id] = (
                f"{aliased} would map two of its dims onto one loop axis"
            )
            continue
        plan = build_kernel_plan(part, group)
        if plan is None:
            part.not_compiled[group.id] = "nothing it computes is read outside it"
            continue
        try:
            kernel_runner = make_runner(plan.spec, plan.device)
        except NotImplementedError as e:
            # The generator cannot do it (e.g. a Triton reduction too large
            # for one block): the group's ops stay aten ops.
            part.not_compiled[group.id] = (
                f"fx_fusion_codegen cannot generate its kernel: {e}"
            )
            continue
        compiled[id(plan)] = FusedKernel(
            plan, kernel_runner, f"{plan.spec.name}_{len(kernels)}"
        )
        kernels.append(plan)
    return kernels, compiled


def _rewrite_graph(
    gm: torch.fx.GraphModule,
    part: Partition,
    kernels: list[KernelPlan],
    compiled: dict[int, FusedKernel],
) -> torch.fx.Graph:
    """The new graph: one call per compiled group, the other nodes copied."""
    units: dict[torch.fx.Node, Any] = {}
    for plan in kernels:
        for m in plan.group.members:
            units[m] = plan
    for n in gm.graph.nodes:
        if n.op != "output":
            units.setdefault(n, n)
    order = _condensed_order(part, units)
    compiled_groups = {id(plan.group) for plan in kernels}

    graph = torch.fx.Graph()
    graph._codegen = gm.graph._codegen
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for unit in order:
        if isinstance(unit, KernelPlan):
            kernel = compiled[id(unit)]
            call = graph.create_node(
                "call_function",
                kernel,
                tuple(env[x] for x in unit.inputs),
                {},
                name=kernel.__name__,
            )
            call.meta["val"] = tuple(_val(m) for m in unit.outputs)
            call.meta["fx_fusion_group"] = [m.name for m in unit.group.members]
            for k, m in enumerate(unit.outputs):
                out = graph.create_node(
                    "call_function", operator.getitem, (call, k), {}, name=m.name
                )
                out.meta = dict(m.meta)
                env[m] = out
            continue
        node = unit
        group = part.view_of.get(node)
        if (
            group is not None
            and id(group) in compiled_groups
            and not _external_users(part, group, node)
        ):
            continue  # read only inside its group's kernel
        env[node] = graph.node_copy(node, lambda x: env[x])
    output = next(n for n in gm.graph.nodes if n.op == "output")
    graph.node_copy(output, lambda x: env[x])
    graph.lint()
    return graph


def _propagate_fake(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = [
        mode.from_tensor(x) if isinstance(x, torch.Tensor) else x
        for x in example_inputs
    ]
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fake)
