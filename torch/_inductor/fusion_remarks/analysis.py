"""Turn what the fusion hooks recorded for one graph into a fusion report.

The analysis is a function of plain records: the scheduler's verdicts and the
lowering's realizations (:mod:`.recorder`) and the graph's final kernel map
(:mod:`.kernels`), copied when its code was generated.  It runs once the graph
is compiled and has no side effects.

A *boundary* is a memory crossing: a buffer that one kernel writes and another
reads.  Each crossing gets exactly one boundary (the coverage invariant, see
``DESIGN.md`` section 3), which names the buffer, both kernels, the ops on each
side (those computing the buffer, those of the consumer reading it), its
bytes and one reason:

1. an extern or fallback kernel on either side: the lowering decision that
   made it one (for a layout copy feeding it, the layout the call requires);
2. otherwise the scheduler's last verdict on a pair of nodes within the two
   kernels (the code its call site gave, the values it compared);
3. otherwise ``not_proposed``, with the concrete reason the scheduler never
   evaluated the pair.

Op pairs are a boundary's human label (``producer`` and ``consumer``), never
its identity: Inductor recomputes inlined ops in several kernels, so two
kernels may both compute an op while a buffer still crosses between them.
Kernels that only read the same input and were evaluated by the scheduler
get a ``shared_input`` boundary.
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING

from .kernels import (
    computes,
    Crossing,
    EXTERN_KINDS,
    Kernel,
    KernelMap,
    OpRecord,
    source_of,
)
from .model import (
    Boundary,
    GraphReport,
    KernelRecord,
    PairVerdict,
    Remark,
    with_compared,
)
from .taxonomy import Category, Kind, Reason, Stage


if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from .recorder import GraphRecorder, Refusal


__all__ = [
    "analyze_graph",
    "classify_verdicts",
    "computes",
    "coverage_violations",
    "op_edges",
    "refusal_detail",
    "source_of",
]


def classify_verdicts(recorder: GraphRecorder) -> None:
    """Give each refused pair the hooks recorded its reason (the hooks only
    record the refusals its rules made; a verdict a later check overturned
    already has the code of that check)."""
    for verdict in recorder.verdicts:
        if not verdict.fused and verdict.reason is None:
            verdict.reason, verdict.detail, verdict.args = rejection_reason(verdict)


def refusal_detail(refusal: Refusal) -> str:
    """A refusal's detail: its message, or for a rule that refused silently
    the check that said no and the values it compared."""
    args = refusal.args
    if refusal.check is None:
        return (
            refusal.detail
            if refusal.shows_values
            else with_compared(refusal.detail, args)
        )
    if refusal.code is Reason.CPP_REDUCTION_PRODUCER:
        return (
            f"{refusal.check}: reduction producer with ranges "
            f"{args.get('ranges1', '?')}, consumer ranges {args.get('ranges2', '?')}"
        )
    if refusal.code is Reason.CPP_RANGES_INCOMPATIBLE:
        return (
            f"{refusal.check}: ranges {args.get('ranges1', '?')} vs "
            f"{args.get('ranges2', '?')}"
        )
    return f"{refusal.check} returned False"


def rejection_reason(verdict: PairVerdict) -> tuple[Reason, str, dict[str, Any]]:
    """The code of a refused pair: the first coded refusal its rules made."""
    for refusal in verdict.refusals:
        if refusal.code is None:
            continue
        args = dict(refusal.args)
        detail = refusal_detail(refusal)
        common = verdict.facts.get("common_buffers")
        if refusal.code is Reason.NO_SHARED_DATA and common:
            # Upstream's text reads as if nothing were shared; say what is.
            args["common_buffers"] = common
            detail += (
                f": both access {', '.join(common)}, but no memory access of "
                "one matches one of the other"
            )
        if verdict.backend_refusals:
            # The heuristic decided first; the backend's own check, asked
            # afterwards, refuses the pair too: fusing was not possible anyway.
            args["backend_also_refuses"] = [
                r.code.value for r in verdict.backend_refusals
            ]
            detail += "; the backend would refuse it too: " + "; ".join(
                f"{r.code.value} ({refusal_detail(r)})"
                for r in verdict.backend_refusals
            )
        return refusal.code, detail, args
    if verdict.facts.get("same_node"):
        return Reason.NOT_PROPOSED, "a node paired with itself", {}
    if verdict.facts.get("extern"):
        return Reason.EXTERN_OR_NOP, "one node is an extern kernel", {}
    if verdict.refusals:  # a message logged without a code
        return Reason.BACKEND_REJECTED, verdict.refusals[0].detail, {}
    return Reason.BACKEND_REJECTED, "Scheduler.can_fuse returned False silently", {}


def analyze_graph(
    kmap: KernelMap, recorder: GraphRecorder, label: str
) -> dict[str, Any]:
    """The JSON-ready report of one graph (see fusion_report's schema)."""
    classify_verdicts(recorder)
    ops = {op.name: op for op in kmap.ops}
    order = {op.name: i for i, op in enumerate(kmap.ops)}
    kernels = {k.name: k for k in kmap.kernels}
    op_kernels: dict[str, list[Kernel]] = {}
    for kernel in kmap.kernels:
        for origin in kernel.origins:
            op_kernels.setdefault(origin, []).append(kernel)

    ops_json = []
    eliminated: set[str] = set()
    for op in kmap.ops:
        entry: dict[str, Any] = {
            "name": op.name,
            "target": op.target,
            "computes": op.computes,
            "kernels": [k.name for k in op_kernels.get(op.name, [])],
            "source": op.source,
        }
        if op.computes and not entry["kernels"]:
            entry["eliminated"] = _elimination(op)
            eliminated.add(op.name)
        ops_json.append(entry)

    edges = op_edges(
        [op.name for op in kmap.ops],
        lambda name: ops[name].inputs,
        lambda name: name in ops and ops[name].computes and name not in eliminated,
        lambda name: name in ops,
    )
    remarks: list[Remark] = []
    for producer, consumer in edges:
        shared = [
            k for k in op_kernels.get(producer, []) if k in op_kernels.get(consumer, [])
        ]
        if shared:
            remarks.append(
                _fused_remark(ops[producer], ops[consumer], shared[0], label)
            )

    boundaries: list[Boundary] = []
    for crossing in kmap.crossings:
        boundary, remark = _explain_crossing(
            crossing, kernels, ops, order, kmap, recorder, label
        )
        boundaries.append(boundary)
        remarks.append(remark)
    connected = {(c.producer, c.consumer) for c in kmap.crossings}
    for p, c in edges:
        for a in op_kernels.get(p, []):
            for b in op_kernels.get(c, []):
                connected.add((a.name, b.name))
    boundaries.extend(
        _shared_input_boundaries(kmap, connected, order, ops, recorder, remarks, label)
    )

    for name, ks in op_kernels.items():
        # a layout copy of an op's input does not compute the op again
        ks = [k for k in ks if name not in k.copy_for]
        if len(ks) > 1 and name in ops:
            remarks.append(
                Remark(
                    Kind.ANALYSIS,
                    Reason.RECOMPUTED,
                    Stage.LOWERING,
                    nodes=tuple(k.name for k in ks),
                    ops=(name,),
                    sources=_sources(ops[name]),
                    detail=f"{name} is computed in {len(ks)} kernels",
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

    report = GraphReport(
        compile_id=label,
        device=kmap.device,
        scheduler_nodes_before_fusion=len(recorder.base_nodes),
        ops=ops_json,
        edges=edges,
        kernels=[
            KernelRecord(
                k.name,
                k.kind,
                list(k.origins),
                k.function,
                k.generated,
                how=k.how,
                copy_for=k.copy_for,
                input_ops=list(k.input_ops),
                reads=sorted(k.reads),
                writes=sorted(k.writes),
            )
            for k in kmap.kernels
        ],
        kernel_sources={
            k.function: recorder.kernel_sources[k.function]
            for k in kmap.kernels
            if k.function in recorder.kernel_sources
        },
        boundaries=boundaries,
        remarks=remarks,
        evaluated_pairs=list(recorder.verdicts),
    ).to_json()
    report["crossings"] = [
        {"buffer": c.buffer, "producer": c.producer, "consumer": c.consumer}
        for c in kmap.crossings
    ]
    return report


def _elimination(op: OpRecord) -> str:
    """Why a computing op has no kernel of its own."""
    if not op.used:
        return "dead_code"
    if op.cat:
        return "cat_in_place"  # inputs were written into slices of the output
    if op.removed:
        return "removed"
    if op.scalar:
        # a size or other scalar of symbolic shapes: lowering keeps its
        # expression, which each kernel or wrapper line using it computes
        return "symbolic_scalar"
    return "no_kernel"


def op_edges(
    nodes: Sequence[Any],
    inputs_of: Callable[[Any], Iterable[Any]],
    is_endpoint: Callable[[Any], bool],
    is_op: Callable[[Any], bool],
) -> list[tuple[Any, Any]]:
    """Producer->consumer pairs of computing ops (``is_endpoint``), looking
    through views and through ops that have no kernel (a cat written in
    place); ``is_op``: a node that is an op at all (not a graph input)."""
    out: list[tuple[Any, Any]] = []
    memo: dict[Any, list[Any]] = {}

    def producers(node: Any) -> list[Any]:
        if node in memo:
            return memo[node]
        found: list[Any] = []
        for inp in inputs_of(node):
            if is_endpoint(inp):
                found.append(inp)
            elif is_op(inp):
                found.extend(producers(inp))
        memo[node] = list(dict.fromkeys(found))
        return memo[node]

    for node in nodes:
        if is_endpoint(node):
            out.extend((producer, node) for producer in producers(node))
    return out


def _sources(*ops: OpRecord) -> tuple[str, ...]:
    return tuple(op.source for op in ops if op.source)


def _fused_remark(
    producer: OpRecord, consumer: OpRecord, kernel: Kernel, label: str
) -> Remark:
    p_nodes = {n.name for n in kernel.nests_of(producer.name)}
    c_nodes = {n.name for n in kernel.nests_of(consumer.name)}
    if p_nodes & c_nodes:
        reason = Reason.INLINED
        stage = Stage.LOWERING
    elif kernel.kind == "template":
        reason = (
            Reason.FUSED_TEMPLATE_EPILOGUE
            if kernel.nests and kernel.nests[0].name in p_nodes
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


def _side_ops(
    kernel: Kernel,
    nests: list[str],
    ops: dict[str, OpRecord],
    order: dict[str, int],
    called: set[str],
) -> list[str]:
    """The computing ops of ``nests`` of ``kernel`` (an extern kernel: its op).
    An op a library call lowers (``called``) is the call's, not that of a
    generated kernel whose origins name it (one computing the call's inputs,
    such as an attention mask).  An extern kernel's origins can also name
    graph inputs, which are no ops (on the H200, one of max-autotune's
    choices in MobileNetV3's training step): they are left out."""
    if kernel.kind in EXTERN_KINDS:
        return [o for o in kernel.origins if o in ops]
    names = [
        o
        for n in kernel.nests
        if n.name in nests
        for o in n.origins
        if o in ops and ops[o].computes and o not in kernel.copy_for and o not in called
    ]
    return sorted(dict.fromkeys(names), key=lambda o: order.get(o, -1))


def _reads_any(
    op: str, producers: set[str], ops: dict[str, OpRecord], seen: set[str]
) -> bool:
    """Whether ``op`` reads one of ``producers``, through ops that compute
    nothing (a name that is no op, such as a graph input, reads nothing)."""
    record = ops.get(op)
    for inp in record.inputs if record is not None else ():
        if inp in producers:
            return True
        if inp in ops and not ops[inp].computes and inp not in seen:
            seen.add(inp)
            if _reads_any(inp, producers, ops, seen):
                return True
    return False


def _readers(
    candidates: list[str],
    producer_ops: list[str],
    value_op: str | None,
    ops: dict[str, OpRecord],
) -> list[str]:
    """The consumer's ops that read the buffer: those reading the op whose
    value it holds; failing that, those reading an op of the producer side
    that they do not recompute; failing that, all it computes."""
    if value_op is not None:
        found = [
            o
            for o in candidates
            if o != value_op and _reads_any(o, {value_op}, ops, set())
        ]
        if found:
            return found
    others = [o for o in candidates if o not in producer_ops]
    found = [o for o in others if _reads_any(o, set(producer_ops), ops, set())]
    return found or others or candidates


def _explain_crossing(
    crossing: Crossing,
    kernels: dict[str, Kernel],
    ops: dict[str, OpRecord],
    order: dict[str, int],
    kmap: KernelMap,
    recorder: GraphRecorder,
    label: str,
) -> tuple[Boundary, Remark]:
    kp, kc = kernels[crossing.producer], kernels[crossing.consumer]
    called = {
        k.origins[0] for k in kernels.values() if k.kind in EXTERN_KINDS and k.origins
    }
    producer_ops = _side_ops(kp, crossing.producer_nests, ops, order, called)
    consumer_ops = _readers(
        _side_ops(kc, crossing.consumer_nests, ops, order, called),
        producer_ops,
        crossing.value_op,
        ops,
    )
    facts = kmap.buffers.get(crossing.buffer, {})
    args: dict[str, Any] = {"buffer": crossing.buffer}
    if "bytes" in facts:
        args["bytes"] = facts["bytes"]
    realization = recorder.realizations.get(crossing.read_as) or (
        recorder.realizations.get(crossing.buffer)
    )
    if realization is not None:
        args["materialized_by"] = realization.reason.value
    stage = Stage.SCHEDULER
    if kp.kind in EXTERN_KINDS or kc.kind in EXTERN_KINDS:
        copy = kc.kind in EXTERN_KINDS and set(kc.origins) & set(kp.copy_for)
        extern = kc if copy or kp.kind not in EXTERN_KINDS else kp
        reason = (
            Reason.FALLBACK_KERNEL
            if extern.kind == "fallback"
            else Reason.EXTERN_KERNEL
        )
        what = "a fallback" if extern.kind == "fallback" else "an extern"
        detail = f"{extern.name} is {what} kernel"
        if copy:
            layout = ", ".join(
                f"{key} {facts[key]}" for key in ("size", "stride") if key in facts
            )
            args["layout_required"] = {
                k: facts[k] for k in ("size", "stride", "dtype") if k in facts
            }
            detail += (
                f": {kp.name} only copies its input into {crossing.buffer}, in the "
                f"layout the call requires{f' ({layout})' if layout else ''}"
            )
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
        elif crossing.written_as != crossing.read_as:
            reason = Reason.NO_COMMON_BUFFER
            detail = (
                f"{kc.name} reads {crossing.read_as}, which {kp.name} writes as "
                f"{crossing.written_as}, through a node that generates no code "
                "(e.g. a cat written in place): the two share no buffer name"
            )
        else:
            reason = Reason.NOT_PROPOSED
            detail = _why_not_proposed(kp, kc, recorder)
    producer = (
        crossing.value_op
        if crossing.value_op in producer_ops
        else _label(producer_ops, kp, crossing.producer_nests, order, last=True)
    )
    consumer = _label(consumer_ops, kc, crossing.consumer_nests, order, last=False)
    boundary = Boundary(
        producer,
        consumer,
        "dependency",
        reason,
        stage,
        _fusible(reason),
        detail,
        (kp.name, kc.name),
        args,
        buffer=crossing.buffer,
        producer_ops=producer_ops,
        consumer_ops=consumer_ops,
    )
    remark = Remark(
        Kind.MISSED,
        reason,
        stage,
        nodes=(kp.name, kc.name),
        buffers=(crossing.buffer,),
        ops=tuple(dict.fromkeys([*producer_ops, *consumer_ops]))
        or (producer, consumer),
        sources=tuple(
            dict.fromkeys(
                s for o in (*producer_ops, *consumer_ops) if (s := ops[o].source)
            )
        ),
        args=args,
        detail=detail,
        graph=label,
    )
    return boundary, remark


def _label(
    names: list[str],
    kernel: Kernel,
    nests: list[str],
    order: dict[str, int],
    last: bool,
) -> str:
    """The op that names one side of a boundary: the last op computing the
    buffer, the first op reading it; for a layout copy the op whose input it
    copies (or what its origins name), else the kernel."""
    if names:
        return names[-1] if last else names[0]
    named = [o for n in kernel.nests if n.name in nests for o in n.origins]
    named = [o for o in named if o not in kernel.copy_for] or named or kernel.origins
    if named:
        return sorted(dict.fromkeys(named), key=lambda o: order.get(o, -1))[-1]
    return kernel.name


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
    kmap: KernelMap,
    connected: set[tuple[str, str]],
    order: dict[str, int],
    ops: dict[str, OpRecord],
    recorder: GraphRecorder,
    remarks: list[Remark],
    label: str,
) -> list[Boundary]:
    """Evaluated pairs of independent nodes that ended in different kernels.

    A pair of which one node depends on the other is never one, in either
    order: tried producer first it is ``vertical``, tried consumer first
    (the scheduler tries a template or foreach node both ways) ``reversed``.
    Nodes a chain of kernels apart, as the steps of a recurrent network
    under max-autotune, would otherwise each be a boundary ``wrong_order``."""
    by_base: dict[str, Kernel] = {}
    for kernel in kmap.kernels:
        for name in kernel.base:
            by_base[name] = kernel
    seen: set[tuple[str, str]] = set()
    out: list[Boundary] = []
    for verdict in reversed(recorder.verdicts):
        if (
            verdict.fused
            or verdict.reason is None
            or verdict.vertical
            or verdict.facts.get("reversed")
        ):
            continue
        a = by_base.get(next(iter(verdict.first)))
        b = by_base.get(next(iter(verdict.second)))
        if a is None or b is None or a is b:
            continue
        key = (min(a.name, b.name), max(a.name, b.name))
        if (
            key in seen
            or (a.name, b.name) in connected
            or (b.name, a.name) in connected
        ):
            continue
        seen.add(key)
        pa, pb = _named_op(a, order, ops), _named_op(b, order, ops)
        reason = verdict.reason
        detail = f"{verdict.names[0]} + {verdict.names[1]}: {verdict.detail}"
        args = dict(verdict.args, **_pair_sides(verdict, a.base))
        # what both kernels read: fused, it would be read once (costs.py)
        shared = sorted(a.reads & b.reads)
        sizes = [kmap.buffers.get(name, {}).get("bytes") for name in shared]
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


def _named_op(kernel: Kernel, order: dict[str, int], ops: dict[str, OpRecord]) -> str:
    """The op that names a kernel in a shared-input boundary: the last op it
    computes, in graph order (its origins also name the views it reads
    through, which several kernels share)."""
    computed = [
        o
        for o in kernel.origins
        if o in ops and ops[o].computes and o not in kernel.copy_for
    ]
    if computed:
        return max(computed, key=lambda o: order.get(o, -1))
    return kernel.origins[-1] if kernel.origins else kernel.name


def coverage_violations(graph: dict[str, Any]) -> list[str]:
    """Memory crossings without exactly one boundary, and boundaries that name
    no crossing (a report without ``crossings``, of before the buffer-level
    invariant: op edges between kernels without exactly one boundary)."""
    known = {r.value for r in Reason}
    problems = [
        f"{b['producer']} -> {b['consumer']}: unknown reason {b['reason']}"
        for b in graph["boundaries"]
        if b["reason"] not in known
    ]
    if "crossings" not in graph:
        return _op_edge_violations(graph) + problems
    counts: dict[tuple[str, str, str], int] = {}
    for b in graph["boundaries"]:
        if b["relation"] == "dependency":
            key = (str(b.get("buffer")), *map(str, b["kernels"]))
            counts[key] = counts.get(key, 0) + 1
    crossings = {
        (c["buffer"], c["producer"], c["consumer"]) for c in graph["crossings"]
    }
    for key in crossings:
        if counts.get(key, 0) != 1:
            problems.append(
                f"{key[0]} ({key[1]} -> {key[2]}): {counts.get(key, 0)} boundaries"
            )
    for key in counts:
        if key not in crossings:
            problems.append(f"{key[0]} ({key[1]} -> {key[2]}): names no crossing")
    return problems


def _op_edge_violations(graph: dict[str, Any]) -> list[str]:
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
    return problems
