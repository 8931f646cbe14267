"""Turn what the fusion hooks recorded for one graph into a fusion report.

After codegen, every post-grad FX node (an *op*) is mapped to the kernels
that compute it (:mod:`.kernels`), every data dependency between two computing ops becomes an
*edge*, and every edge whose two ops share no kernel is a *boundary*.  Each
boundary gets exactly one reason (the coverage invariant, see
``DESIGN.md`` section 3):

1. an extern, fallback or template kernel on either side: the lowering
   decision that made it one;
2. otherwise the scheduler's last verdict on a pair of nodes that contained
   the two ops (upstream's ``WhyNoFuse`` text, or the silent backend check
   that said no, refined to a code);
3. otherwise ``not_proposed``, with the concrete reason the scheduler never
   evaluated the pair.

The buffer that carries the value across the boundary, and the lowering rule
that made it a buffer, are kept in the boundary's ``args``.
"""

from __future__ import annotations

import re
from typing import Any, TYPE_CHECKING

import torch

from .. import release_compat
from .kernels import (
    base_of,
    computes,
    Kernel,
    kernel_kind,
    settle_ops,
    split_grouped,
)
from .model import Boundary, GraphReport, KernelRecord, PairVerdict, Remark
from .taxonomy import Category, Kind, Reason, Stage


if TYPE_CHECKING:
    from ..scheduler import Scheduler
    from .recorder import GraphRecorder, Refusal


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def source_of(node: torch.fx.Node) -> str | None:
    """The user's source line of an op, from its FX stack trace."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    filename, line = frames[-1]
    return f"{filename}:{line}"


def classify_verdicts(recorder: GraphRecorder) -> None:
    """Give each refused pair the hooks recorded its reason (the hooks only
    record the refusals its rules made; a verdict a later check overturned
    already has the code of that check)."""
    for verdict in recorder.verdicts:
        if not verdict.fused and verdict.reason is None and verdict.nodes:
            verdict.reason, verdict.detail, verdict.args = rejection_reason(verdict)


def refusal_detail(refusal: Refusal) -> str:
    """A refusal's detail: its message, or for a rule that refused silently
    the check that said no and what it compared."""
    if refusal.check is None:
        return refusal.detail
    return _silent_detail(refusal.code, *refusal.nodes, refusal.check)


def rejection_reason(verdict: PairVerdict) -> tuple[Reason, str, dict[str, Any]]:
    """The code of a refused pair: the first coded refusal its rules made."""
    node1, node2 = verdict.nodes
    for refusal in verdict.refusals:
        if refusal.code is None:
            continue
        args = dict(refusal.args)
        detail = refusal_detail(refusal)
        if refusal.nodes:
            args.update(_rule_args(refusal.code, *refusal.nodes))
        if refusal.code is Reason.NO_SHARED_DATA:
            common = sorted(node1.used_buffer_names() & node2.used_buffer_names())
            if common:
                # Upstream's text reads as if nothing were shared; say what is.
                args["common_buffers"] = common
                detail += (
                    f": both access {', '.join(common)}, but at different "
                    "indices, so no memory access would be saved"
                )
        return refusal.code, detail, args
    if node1 is node2:
        return Reason.NOT_PROPOSED, "a node paired with itself", {}
    if node1.is_extern() or node2.is_extern():
        return Reason.EXTERN_OR_NOP, "one node is an extern kernel", {}
    if verdict.refusals:  # a message logged without a code
        return Reason.BACKEND_REJECTED, verdict.refusals[0].detail, {}
    return Reason.BACKEND_REJECTED, "Scheduler.can_fuse returned False silently", {}


def _ranges(node: Any) -> str:
    try:
        return str(node.group[1])
    except Exception:
        return "?"


def _silent_detail(code: Reason, node1: Any, node2: Any, check: str) -> str:
    if code is Reason.CPP_REDUCTION_PRODUCER:
        return (
            f"{check}: reduction producer with ranges {_ranges(node1)}, "
            f"consumer ranges {_ranges(node2)}"
        )
    if code is Reason.CPP_RANGES_INCOMPATIBLE:
        return f"{check}: ranges {_ranges(node1)} vs {_ranges(node2)}"
    return f"{check} returned False"


def _rule_args(code: Reason, node1: Any, node2: Any) -> dict[str, Any]:
    if code.value.startswith("cpp_"):
        return {"ranges1": _ranges(node1), "ranges2": _ranges(node2)}
    return {}


def analyze_graph(
    scheduler: Scheduler, recorder: GraphRecorder, label: str
) -> dict[str, Any]:
    """The JSON-ready report of one graph (see fusion_report's schema)."""
    from ..virtualized import V

    graph = V.graph.graph
    fx_ops = [n for n in graph.nodes if n.op == "call_function"]
    classify_verdicts(recorder)

    kernels: list[Kernel] = []
    for snode in scheduler.nodes:
        for part in split_grouped(snode):
            kind = kernel_kind(part)
            if kind is not None:
                kernels.append(Kernel(part, kind, recorder))
    settle_ops(kernels)
    op_kernels: dict[torch.fx.Node, list[Kernel]] = {}
    for kernel in kernels:
        for origin in kernel.origins:
            op_kernels.setdefault(origin, []).append(kernel)

    ops_json = []
    eliminated: set[torch.fx.Node] = set()
    for node in fx_ops:
        entry: dict[str, Any] = {
            "name": node.name,
            "target": str(node.target),
            "computes": computes(node),
            "kernels": [k.name for k in op_kernels.get(node, [])],
            "source": source_of(node),
        }
        if entry["computes"] and not entry["kernels"]:
            entry["eliminated"] = _elimination(node, scheduler)
            eliminated.add(node)
        ops_json.append(entry)

    edges = _edges(fx_ops, eliminated)
    remarks: list[Remark] = []
    boundaries: list[Boundary] = []
    for producer, consumer in edges:
        kp = op_kernels.get(producer, [])
        kc = op_kernels.get(consumer, [])
        if not kp or not kc:
            continue
        shared = [k for k in kp if k in kc]
        if shared:
            remarks.append(
                _fused_remark(producer, consumer, shared[0], recorder, label)
            )
            continue
        boundary, remark = _explain_boundary(
            producer, consumer, *_carrier(kp, kc), recorder, label
        )
        boundaries.append(boundary)
        remarks.append(remark)

    order = {node: i for i, node in enumerate(fx_ops)}
    boundaries.extend(
        _shared_input_boundaries(
            kernels, edges, op_kernels, order, recorder, remarks, label
        )
    )

    for node, ks in op_kernels.items():
        # a layout copy of an op's input does not compute the op again
        ks = [k for k in ks if node.name not in k.copy_for]
        if len(ks) > 1:
            remarks.append(
                Remark(
                    Kind.ANALYSIS,
                    Reason.RECOMPUTED,
                    Stage.LOWERING,
                    nodes=tuple(k.name for k in ks),
                    ops=(node.name,),
                    sources=_sources(node),
                    detail=f"{node.name} is computed in {len(ks)} kernels",
                    graph=label,
                )
            )
    for realization in recorder.realizations.values():
        remarks.append(
            Remark(
                Kind.ANALYSIS,
                realization.reason,
                Stage.LOWERING,
                buffers=(realization.buffer,),
                args=realization.args,
                detail=realization.detail,
                graph=label,
            )
        )

    return GraphReport(
        compile_id=label,
        device=",".join(sorted(V.graph.device_types)) or "cpu",
        scheduler_nodes_before_fusion=len(recorder.base_nodes),
        ops=ops_json,
        edges=[(p.name, c.name) for p, c in edges],
        kernels=[
            KernelRecord(
                k.name,
                k.kind,
                [o.name for o in k.origins],
                k.function,
                k.generated,
                how=k.how,
                copy_for=k.copy_for,
                input_ops=[o.name for o in k.input_ops],
            )
            for k in kernels
        ],
        kernel_sources={
            k.function: recorder.kernel_sources[k.function]
            for k in kernels
            if k.function in recorder.kernel_sources
        },
        boundaries=boundaries,
        remarks=remarks,
        evaluated_pairs=list(recorder.verdicts),
    ).to_json()


def _elimination(node: torch.fx.Node, scheduler: Scheduler) -> str:
    """Why a computing op has no kernel of its own."""
    from ..virtualized import V

    if not node.users:
        return "dead_code"
    if node.target is torch.ops.aten.cat.default:
        return "cat_in_place"  # inputs were written into slices of the output
    if node.name in V.graph.removed_buffers:
        return "removed"
    if isinstance(
        node.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool, int, float)
    ):
        # a size or other scalar of symbolic shapes: lowering keeps its
        # expression, which each kernel or wrapper line using it computes
        return "symbolic_scalar"
    return "no_kernel"


def _carrier(kp: list[Kernel], kc: list[Kernel]) -> tuple[Kernel, Kernel]:
    """The producer kernel whose buffer a consumer kernel reads, and that consumer."""
    for c in kc:
        for p in reversed(kp):
            if p.writes & c.reads:
                return p, c
    return kp[-1], kc[0]


def _edges(
    fx_ops: list[torch.fx.Node], eliminated: set[torch.fx.Node]
) -> list[tuple[torch.fx.Node, torch.fx.Node]]:
    """Producer->consumer pairs of computing ops, looking through views and
    through ops that have no kernel (a cat written in place)."""
    out: list[tuple[torch.fx.Node, torch.fx.Node]] = []
    memo: dict[torch.fx.Node, list[torch.fx.Node]] = {}

    def endpoint(node: torch.fx.Node) -> bool:
        return computes(node) and node not in eliminated

    def producers(node: torch.fx.Node) -> list[torch.fx.Node]:
        if node in memo:
            return memo[node]
        found: list[torch.fx.Node] = []
        for inp in node.all_input_nodes:
            if endpoint(inp):
                found.append(inp)
            elif inp.op == "call_function":
                found.extend(producers(inp))
        memo[node] = list(dict.fromkeys(found))
        return memo[node]

    for node in fx_ops:
        if endpoint(node):
            out.extend((producer, node) for producer in producers(node))
    return out


def _sources(*nodes: torch.fx.Node) -> tuple[str, ...]:
    return tuple(s for s in (source_of(n) for n in nodes) if s)


def _fused_remark(
    producer: torch.fx.Node,
    consumer: torch.fx.Node,
    kernel: Kernel,
    recorder: GraphRecorder,
    label: str,
) -> Remark:
    p_nodes = {n.get_name() for n in base_of(kernel, producer)}
    c_nodes = {n.get_name() for n in base_of(kernel, consumer)}
    if p_nodes & c_nodes:
        reason = Reason.INLINED
        stage = Stage.LOWERING
    elif kernel.kind == "template":
        reason = (
            Reason.FUSED_TEMPLATE_EPILOGUE
            if any(n.is_template() for n in base_of(kernel, producer))
            else Reason.FUSED_TEMPLATE_PROLOGUE
        )
        stage = Stage.SCHEDULER
    else:
        reason = Reason.FUSED_VERTICAL
        stage = Stage.SCHEDULER
    return Remark(
        Kind.FUSED,
        reason,
        stage,
        nodes=(kernel.name,),
        ops=(producer.name, consumer.name),
        sources=_sources(producer, consumer),
        detail=f"{producer.name} and {consumer.name} are computed in {kernel.name}",
        graph=label,
    )


def _latest_verdict(
    recorder: GraphRecorder, a: frozenset[str], b: frozenset[str]
) -> PairVerdict | None:
    """The last refusal of a pair holding producer side ``a`` and consumer side
    ``b``, in the producer-first order where there is one: the scheduler also
    tries a template or foreach consumer first (``get_possible_fusions``), and
    that reversed try is refused as ``wrong_order`` after the rule that
    decided (a template's prologue rules) refused the pair in its own order."""
    reversed_refusal = None
    for verdict in reversed(recorder.verdicts):
        if verdict.fused:
            continue
        if verdict.first <= a and verdict.second <= b:
            return verdict
        if reversed_refusal is None and verdict.first <= b and verdict.second <= a:
            reversed_refusal = verdict
    return reversed_refusal


def buffer_bytes(name: str) -> int | None:
    """Bytes of one IR buffer (size hints for symbolic sizes), None if unknown.

    A boundary's value is written to this buffer by one kernel and read back by
    the other, so it prices the boundary in memory traffic.
    """
    from ..virtualized import V

    try:
        buf = V.graph.try_get_buffer(name)
        if buf is None:
            return None
        numel = release_compat.size_hint(V.graph.sizevars, buf.get_numel())
        return numel * buf.get_dtype().itemsize
    except Exception:
        return None


def _materialization(
    kernel: Kernel, op: torch.fx.Node, recorder: GraphRecorder
) -> dict[str, Any]:
    for sub in base_of(kernel, op):
        for name in sub.get_buffer_names():
            out: dict[str, Any] = {"buffer": name}
            size = buffer_bytes(name)
            if size is not None:
                out["bytes"] = size
            realization = recorder.realizations.get(name)
            if realization is not None:
                out["materialized_by"] = realization.reason.value
            return out
    return {}


def _explain_boundary(
    producer: torch.fx.Node,
    consumer: torch.fx.Node,
    kp: Kernel,
    kc: Kernel,
    recorder: GraphRecorder,
    label: str,
) -> tuple[Boundary, Remark]:
    args = _materialization(kp, producer, recorder)
    stage = Stage.SCHEDULER
    verdict = None
    if kp.kind in ("extern", "fallback") or kc.kind in ("extern", "fallback"):
        extern = kp if kp.kind in ("extern", "fallback") else kc
        reason = (
            Reason.FALLBACK_KERNEL
            if extern.kind == "fallback"
            else Reason.EXTERN_KERNEL
        )
        detail = f"{extern.name} is {'a fallback' if extern.kind == 'fallback' else 'an extern'} kernel"
        stage = Stage.LOWERING
    else:
        verdict = _latest_verdict(recorder, kp.base, kc.base)
        if verdict is not None and verdict.reason is not None:
            reason = verdict.reason
            detail = f"{verdict.names[0]} + {verdict.names[1]}: {verdict.detail}"
            args.update(verdict.args)
            args.update(_pair_sides(verdict, kp.base))
        elif kp.kind == "template" or kc.kind == "template":
            reason = Reason.TEMPLATE_KERNEL
            detail = "the template's fusion rules were never satisfied for this pair"
        elif not kp.writes & kc.reads:
            reason = Reason.NO_COMMON_BUFFER
            detail = (
                f"{kc.name} reads {', '.join(sorted(kc.reads)) or 'nothing'}, which "
                f"{kp.name} does not write ({', '.join(sorted(kp.writes))}): the value "
                "flows through a buffer the scheduler does not see as shared "
                "(e.g. a cat written in place)"
            )
            stage = Stage.SCHEDULER
        else:
            reason = Reason.NOT_PROPOSED
            detail = _why_not_proposed(kp, kc, recorder)
    boundary = Boundary(
        producer.name,
        consumer.name,
        "dependency",
        reason,
        stage,
        _fusible(reason),
        detail,
        (kp.name, kc.name),
        args,
    )
    remark = Remark(
        Kind.MISSED,
        reason,
        stage,
        nodes=(kp.name, kc.name),
        buffers=tuple(v for k, v in args.items() if k == "buffer"),
        ops=(producer.name, consumer.name),
        sources=_sources(producer, consumer),
        args=args,
        detail=detail,
        graph=label,
    )
    return boundary, remark


def _pair_sides(verdict: PairVerdict, producer_base: frozenset[str]) -> dict[str, Any]:
    """The base scheduler nodes of the refused pair, producer side first.

    The kernels of a boundary are the nodes after all fusion; the pair that was
    refused may have been smaller.  fusion_check targets exactly that pair.
    """
    first, second = verdict.first, verdict.second
    if not first <= producer_base:
        first, second = second, first
    return {"producer_nodes": sorted(first), "consumer_nodes": sorted(second)}


def _fusible(reason: Reason) -> bool | None:
    """Known from the category alone for legality; otherwise unknown until tried."""
    if reason.category is Category.LEGALITY:
        return False
    return None


def _why_not_proposed(kp: Kernel, kc: Kernel, recorder: GraphRecorder) -> str:
    evaluated = [
        v
        for v in recorder.verdicts
        if (v.first & kp.base and v.second & kc.base)
        or (v.first & kc.base and v.second & kp.base)
    ]
    if evaluated:
        last = evaluated[-1]
        return (
            f"the scheduler last evaluated {last.names[0]} + {last.names[1]} "
            f"({'fused' if last.fused else last.reason.value if last.reason else '?'}), "
            f"but never {kp.name} + {kc.name}"
        )
    return f"no pair containing {kp.name} and {kc.name} was ever proposed"


def _shared_input_boundaries(
    kernels: list[Kernel],
    edges: list[tuple[torch.fx.Node, torch.fx.Node]],
    op_kernels: dict[torch.fx.Node, list[Kernel]],
    order: dict[torch.fx.Node, int],
    recorder: GraphRecorder,
    remarks: list[Remark],
    label: str,
) -> list[Boundary]:
    """Evaluated pairs of independent nodes that ended in different kernels."""
    connected: set[tuple[str, str]] = set()
    for p, c in edges:
        for a in op_kernels.get(p, []):
            for b in op_kernels.get(c, []):
                connected.add((a.name, b.name))
                connected.add((b.name, a.name))
    by_base: dict[str, Kernel] = {}
    for kernel in kernels:
        for name in kernel.base:
            by_base[name] = kernel
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for verdict in reversed(recorder.verdicts):
        if verdict.fused or verdict.reason is None or verdict.vertical:
            continue
        a = by_base.get(next(iter(verdict.first)))
        b = by_base.get(next(iter(verdict.second)))
        if a is None or b is None or a is b:
            continue
        key = (min(a.name, b.name), max(a.name, b.name))
        if key in seen or (a.name, b.name) in connected:
            continue
        seen.add(key)
        pa, pb = _named_op(a, order), _named_op(b, order)
        reason = verdict.reason
        detail = f"{verdict.names[0]} + {verdict.names[1]}: {verdict.detail}"
        args = dict(verdict.args, **_pair_sides(verdict, a.base))
        # what both kernels read: fused, it would be read once (costs.py)
        shared = sorted(a.reads & b.reads)
        sizes = [buffer_bytes(name) for name in shared]
        if shared:
            args["shared_buffers"] = shared
        if shared and all(size is not None for size in sizes):
            args["bytes"] = sum(size for size in sizes if size is not None)
        out.append(
            Boundary(
                pa,
                pb,
                "shared_input",
                reason,
                Stage.SCHEDULER,
                _fusible(reason),
                detail,
                (a.name, b.name),
                args,
            )
        )
        remarks.append(
            Remark(
                Kind.MISSED,
                reason,
                Stage.SCHEDULER,
                nodes=(a.name, b.name),
                ops=(pa, pb),
                args=dict(verdict.args, relation="shared_input"),
                detail=detail,
                graph=label,
            )
        )
    return out


def _named_op(kernel: Kernel, order: dict[torch.fx.Node, int]) -> str:
    """The op that names a kernel in a shared-input boundary: the last op it
    computes, in graph order (its origins also name the views it reads
    through, which several kernels share)."""
    computed = [
        o for o in kernel.origins if computes(o) and o.name not in kernel.copy_for
    ]
    if computed:
        return max(computed, key=lambda o: order.get(o, -1)).name
    return kernel.origins[-1].name if kernel.origins else kernel.name


def coverage_violations(graph: dict[str, Any]) -> list[str]:
    """Edges between computing ops in different kernels without exactly one boundary."""
    ops = {op["name"]: op for op in graph["ops"]}
    counts: dict[tuple[str, str], int] = {}
    for b in graph["boundaries"]:
        if b["relation"] == "dependency":
            key = (b["producer"], b["consumer"])
            counts[key] = counts.get(key, 0) + 1
    problems = []
    for edge in graph["edges"]:
        p, c = ops[edge["producer"]], ops[edge["consumer"]]
        if not (p["computes"] and c["computes"] and p["kernels"] and c["kernels"]):
            continue  # views and eliminated ops are not endpoints
        apart = not set(p["kernels"]) & set(c["kernels"])
        n = counts.get((p["name"], c["name"]), 0)
        if apart and n != 1:
            problems.append(f"{p['name']} -> {c['name']}: {n} boundary remarks")
        if not apart and n:
            problems.append(f"{p['name']} -> {c['name']}: fused but has a boundary")
    for b in graph["boundaries"]:
        if b["reason"] not in {r.value for r in Reason}:
            problems.append(
                f"{b['producer']} -> {b['consumer']}: unknown reason {b['reason']}"
            )
    return problems
