"""The FX fusion arm's remarks: the same fusion report as Inductor's graphs.

This is the one module of the arm that imports the fusion-remarks code
(``torch._inductor.fusion_remarks``, ``fusion_analysis`` and
``fusion_report``): the other modules take the names they need from here
(:func:`_reason`, :func:`computes`), so a change to that code changes only
this module.  It builds the graph dict of the report schema for one fused
graph (:func:`build_report`: every boundary between two kernels along a data
edge is explained by one reason, stage ``fx_fusion``) and publishes it
(:func:`_publish`, when remarks are on).
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING

import torch
import torch.fx
from torch._inductor.fusion_remarks import recorder as fusion_recorder, sinks
from torch._inductor.fusion_remarks.analysis import computes, op_edges, source_of
from torch._inductor.fusion_remarks.model import Remark
from torch._inductor.fusion_remarks.taxonomy import Kind, Reason, Stage

from .model import _val


if TYPE_CHECKING:
    from .model import Partition
    from .plan import KernelPlan
    from .runtime import FusedKernel


def _reason(name: str) -> Any:
    """The report's reason called ``name`` (a ``fusion_remarks.taxonomy.Reason``)."""
    return Reason[name]


def _publish(report: dict[str, Any]) -> None:
    if not fusion_recorder.is_enabled():
        return
    try:
        sinks.publish(report)
    except Exception as e:
        fusion_recorder.report_failure(e)


def _bytes(node: torch.fx.Node) -> int | None:
    val = _val(node)
    if isinstance(val, torch.Tensor) and all(isinstance(s, int) for s in val.shape):
        return int(val.numel()) * val.element_size()
    return None


def build_report(
    graph: torch.fx.Graph,
    part: Partition,
    kernels: list[KernelPlan],
    compiled: dict[int, FusedKernel],
    label: str,
) -> dict[str, Any]:
    """The graph dict of the fusion report schema for one fused graph."""
    fx_ops = [n for n in graph.nodes if n.op == "call_function"]
    devices = sorted(
        {_val(n).device.type for n in graph.nodes if isinstance(_val(n), torch.Tensor)}
    ) or ["cpu"]
    kernel_of: dict[torch.fx.Node, str] = {}
    kernels_json: list[dict[str, Any]] = []
    entries: list[tuple[int, dict[str, Any]]] = []
    for i, plan in enumerate(kernels):
        name = f"fx{i}"
        ops = [m for m in plan.group.members if computes(m)]
        for m in plan.group.members:
            kernel_of[m] = name
        kind = "triton" if plan.device.startswith("cuda") else "cpp"
        entries.append(
            (
                part.index[plan.group.members[0]],
                {
                    "name": name,
                    "kind": kind,
                    "ops": [m.name for m in ops],
                    "function": compiled[id(plan)].__name__,
                    "generated_kernels": 1,
                },
            )
        )
    eliminated: set[torch.fx.Node] = set()
    for n in fx_ops:
        if n in kernel_of or not computes(n):
            continue
        if not n.users and not n.is_impure():
            eliminated.add(n)
            continue
        if isinstance(
            _val(n), (torch.SymInt, torch.SymFloat, torch.SymBool, int, float)
        ):
            continue  # size arithmetic: runs in Python, no kernel
        name = f"{n.name}:{n.target}"
        kernel_of[n] = name
        entries.append(
            (
                part.index[n],
                {
                    "name": name,
                    "kind": "extern",
                    "ops": [n.name],
                    "function": None,
                    "generated_kernels": 0,
                },
            )
        )
    kernels_json = [e for _, e in sorted(entries, key=lambda t: t[0])]
    ops_json = []
    for n in fx_ops:
        entry: dict[str, Any] = {
            "name": n.name,
            "target": str(n.target),
            "computes": computes(n),
            "kernels": [kernel_of[n]] if n in kernel_of else [],
            "source": source_of(n),
        }
        if n in eliminated:
            entry["eliminated"] = "dead_code"
        ops_json.append(entry)
    edges = op_edges(
        fx_ops,
        lambda n: n.all_input_nodes,
        lambda n: computes(n) and n not in eliminated,
        lambda n: n.op == "call_function",
    )
    boundaries: list[dict[str, Any]] = []
    remarks: list[Remark] = []
    for p, c in edges:
        kp, kc = kernel_of.get(p), kernel_of.get(c)
        if kp is None or kc is None:
            continue
        sources = tuple(s for s in (source_of(p), source_of(c)) if s)
        if kp == kc:
            remarks.append(
                Remark(
                    Kind.FUSED,
                    Reason.FX_FUSED,
                    Stage.FX_FUSION,
                    nodes=(kp,),
                    ops=(p.name, c.name),
                    sources=sources,
                    detail=f"{p.name} and {c.name} are computed in {kp}",
                    graph=label,
                )
            )
            continue
        reason, detail = _boundary_reason(part, p, c)
        args: dict[str, Any] = {"buffer": p.name}
        size = _bytes(p)
        if size is not None:
            args["bytes"] = size
        boundaries.append(
            {
                "producer": p.name,
                "consumer": c.name,
                "relation": "dependency",
                "reason": reason.value,
                "category": reason.category.value,
                "stage": Stage.FX_FUSION.value,
                "fusible": False if reason.category.value == "legality" else None,
                "detail": detail,
                "kernels": [kp, kc],
                "args": args,
            }
        )
        remarks.append(
            Remark(
                Kind.MISSED,
                reason,
                Stage.FX_FUSION,
                nodes=(kp, kc),
                buffers=(p.name,),
                ops=(p.name, c.name),
                sources=sources,
                args=args,
                detail=detail,
                graph=label,
            )
        )
    n_computing = sum(1 for n in fx_ops if computes(n) and n not in eliminated)
    return {
        "compile_id": label,
        "device": ",".join(devices),
        "scheduler_nodes_before_fusion": n_computing,
        "ops": ops_json,
        "edges": [{"producer": p.name, "consumer": c.name} for p, c in edges],
        "kernels": kernels_json,
        "boundaries": boundaries,
        "remarks": [r.to_json() for r in remarks],
        "evaluated_pairs": list(part.pairs),
        "generated_kernel_count": len(kernels),
    }


def _boundary_reason(
    part: Partition, p: torch.fx.Node, c: torch.fx.Node
) -> tuple[Any, str]:
    refused = [(n, part.refused[n]) for n in (p, c) if n in part.refused]
    if refused:
        # A mutation first, then a library call, then anything unsupported.
        rank = {"mutation": 0, "extern_kernel": 1, "device_mismatch": 2}
        n, r = min(refused, key=lambda t: rank.get(t[1].reason.value, 3))
        return r.reason, f"{n.name}: {r.detail}"
    verdict = part.verdicts.get((p, c))
    if verdict is not None and not verdict.fused:
        return verdict.reason, verdict.detail
    gp, gc = part.group_of.get(p), part.group_of.get(c)
    if gp is not None and gp is gc:
        why = part.not_compiled.get(gp.id, "the group was not compiled")
        return _reason(
            "FX_UNSUPPORTED_OP"
        ), f"the group of {p.name} runs as aten ops: {why}"
    return (
        _reason("FX_ITERATION_SPACE_MISMATCH"),
        f"{c.name} could not join the group of {p.name}",
    )
