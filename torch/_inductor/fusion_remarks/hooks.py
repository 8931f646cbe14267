"""The hooks: the only code of the fusion remarks that upstream's patched files call.

Each hook sits at the upstream rule that makes a decision and is given that
decision's reason code by its call site:

* ``WhyNoFuse(node1, node2)(message, code=...)``: a scheduler or backend rule
  refused a pair (:func:`why_no_fuse`); a rule that refuses silently calls
  :func:`refused` or passes its verdict through :func:`checked`;
* ``Scheduler.can_fuse`` hands its decision to :func:`evaluate_pair`, which
  records the verdict of each evaluated pair; ``Scheduler.speedup_by_fusion``
  reports each refusal of a pair ``can_fuse`` accepted (:func:`speedup_refused`,
  with the times a benchmark compared);
* a helper that decides for its caller and returns a bool hands over the
  values it compared (:func:`decision_values`);
* lowering tags the rule that realizes a value (:func:`begin_realize_rule`
  and :func:`end_realize_rule` one line before and after the statement,
  :func:`realizes_for` on a helper that realizes inputs)
  and ``StorageBox.realize`` reports the buffer (:func:`record_realize`);
* codegen reports each scheduler node it generates (:func:`generating`) and
  each kernel it defines (:func:`kernel_defined`);
* FX passes (``GraphTransformObserver``, ``PatternMatcherPass``) and the
  FX graph cache (:func:`graph_compiled`, :func:`replay_cached_report`).

When nothing listens (:func:`recorder.is_enabled` is false) each hook returns
after one check and changes nothing; no hook may change what Inductor
generates or fail a compile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
from typing import Any, TYPE_CHECKING, TypeVar

import torch

from .. import fusion_switches
from . import recorder as rec
from .model import PairVerdict, Realization, Remark, with_compared
from .recorder import Evaluation, fusion_log, guarded, Refusal
from .taxonomy import Kind, Reason, Stage


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from ..scheduler import BaseSchedulerNode, Scheduler, WhyNoFuse


_T = TypeVar("_T")


# ---------------------------------------------------------------------------
# Lowering: which rule realized a value into a buffer of its own

# The realize rules in force, innermost last: (code, is_rule).  A rule tag
# (is_rule) names the rule that decided; a mechanism tag (an extern kernel's
# helper that realizes its inputs) applies only where no rule encloses it.
# (code, is_rule, what the rule compared) of each realize rule entered.
_realize_tags: list[tuple[Reason, bool, dict[str, Any]]] = []
# Beside each tag: the graph a begin_realize_rule() tag was set in (None for
# the context manager and the decorator, which always remove their own tag).
_realize_tag_graphs: list[int | None] = []


@contextlib.contextmanager
def realize_rule(code: Reason, **compared: Any) -> Iterator[None]:
    """Around a ``realize()`` call: the rule ``code`` decided to realize;
    ``compared``: numbers the rule decided on that the buffer does not keep
    (e.g. ``users``)."""
    _realize_tags.append((code, True, compared))
    _realize_tag_graphs.append(None)
    try:
        yield
    finally:
        end_realize_rule()


def begin_realize_rule(code: Reason, **compared: Any) -> None:
    """Before a statement that realizes a value: the rule ``code`` decided to
    realize it (``compared``: as :func:`realize_rule`).  One line before the
    upstream statement and :func:`end_realize_rule` one line after, so that
    the statement keeps its indentation.  A tag left by an exception between
    the two belongs to a graph whose lowering failed: the next graph drops it."""
    if not rec.is_enabled():
        return
    from ..virtualized import V

    graph = id(V.graph) if V.graph is not None else None
    while _realize_tag_graphs and _realize_tag_graphs[-1] not in (None, graph):
        _realize_tag_graphs.pop()
        _realize_tags.pop()
    _realize_tags.append((code, True, compared))
    _realize_tag_graphs.append(graph)


def end_realize_rule() -> None:
    """After the statement :func:`begin_realize_rule` announced (which tags
    nothing while nothing listens: one check)."""
    if _realize_tag_graphs:
        _realize_tag_graphs.pop()
        _realize_tags.pop()


def realizes_for(
    code: Reason, rule: bool = False
) -> Callable[[Callable[..., _T]], Callable[..., _T]]:
    """Decorate a function that realizes values for ``code``: a rule
    (``rule=True``, e.g. graph outputs) or a mechanism, e.g. an extern
    kernel's helper reading its inputs from memory, which names the reason
    only where no rule encloses it."""

    def decorate(fn: Callable[..., _T]) -> Callable[..., _T]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> _T:
            if not rec.is_enabled():
                return fn(*args, **kwargs)
            _realize_tags.append((code, rule, {}))
            _realize_tag_graphs.append(None)
            try:
                return fn(*args, **kwargs)
            finally:
                end_realize_rule()

        return wrapper

    return decorate


@guarded
def record_realize(buffer: Any) -> None:
    """Called by ``StorageBox.realize`` after it stored an IR value in ``buffer``."""
    if not rec.is_enabled():
        return
    recorder = rec.current_recorder()
    if recorder is None:
        return
    reason, detail, args = _realize_reason(buffer)
    recorder.realizations[buffer.get_name()] = Realization(
        buffer.get_name(), reason, detail, args
    )


def _realize_reason(buffer: Any) -> tuple[Reason, str, dict[str, Any]]:
    """The innermost rule tag; for the reuse and accumulated-reads rules, the
    cause their branch that fired gave (:func:`realize_cause`), with the
    values it compared."""
    from .. import ir
    from ..virtualized import V

    data = getattr(buffer, "data", None)
    rules = [(code, compared) for code, is_rule, compared in _realize_tags if is_rule]
    mechanisms = [code for code, is_rule, _ in _realize_tags if not is_rule]
    code = rules[-1][0] if rules else mechanisms[-1] if mechanisms else None
    args = dict(rules[-1][1]) if rules else {}
    cause = _realize_cause.pop() if _realize_cause else None
    node = getattr(V.graph, "current_node", None) if V.graph else None
    op = str(node.target) if node is not None and node.op == "call_function" else ""
    detail = f"lowering {op}" if op else ""
    if code is Reason.NO_FUSION:
        return code, detail, {}
    if isinstance(data, ir.Reduction):
        return Reason.REDUCTION_OUTPUT, detail, {}
    if code is None:
        return Reason.LOWERING_MATERIALIZES, detail, {}
    if code in (Reason.REUSE_TOO_MANY_READS, Reason.ACC_READS_EXCEEDED):
        if cause is not None:
            code = cause[0]
            args.update(cause[1])
        elif code is Reason.ACC_READS_EXCEEDED and not isinstance(data, ir.Pointwise):
            code = Reason.MULTI_USER_EXTERN_CONSUMER
    return code, detail, args


# The cause the reuse or accumulated-reads rule gave at the branch that
# decided to realize (at most one, taken by the realize that follows).
_realize_cause: list[tuple[Reason, dict[str, Any]]] = []


def realize_cause(code: Reason, **compared: Any) -> None:
    """At the branch of ``StorageBox.should_realize_on_reuse`` or
    ``has_exceeded_max_reads`` that returns True: its cause, and the values it
    compared (``compared``), for the realize its caller then makes."""
    if not rec.is_enabled():
        return
    _realize_cause[:] = [(code, _plain(compared))]


# ---------------------------------------------------------------------------
# FX passes: GraphTransformObserver (every named Inductor FX pass) and
# PatternMatcherPass.apply (match counts)


@dataclasses.dataclass
class FxPassWatch:
    passname: str
    names: set[str]


@guarded
def fx_pass_enter(gm: torch.fx.GraphModule, passname: str) -> FxPassWatch | None:
    """Called when GraphTransformObserver enters: remember the graph's nodes."""
    if not rec.is_enabled():
        return None
    return FxPassWatch(passname, {n.name for n in gm.graph.nodes})


@guarded
def fx_pass_exit(watch: FxPassWatch | None, gm: torch.fx.GraphModule) -> None:
    """Called when GraphTransformObserver exits: record the pass if it changed the graph."""
    if watch is None:
        return
    after = {n.name for n in gm.graph.nodes}
    erased, created = watch.names - after, after - watch.names
    if not erased and not created:
        return
    rec.keep_pending(
        Remark(
            Kind.ANALYSIS,
            Reason.FX_PASS_REWROTE_GRAPH,
            Stage.FX_PASS,
            args={
                "pass": watch.passname,
                "nodes_before": len(watch.names),
                "nodes_after": len(after),
                "erased": len(erased),
                "created": len(created),
            },
            detail=(
                f"{watch.passname}: {len(watch.names)} -> {len(after)} nodes "
                f"({len(erased)} erased, {len(created)} created)"
            ),
            graph=rec.compile_key(),
        )
    )


@guarded
def record_pattern_matches(pass_name: str, count: int) -> None:
    """Called at the end of PatternMatcherPass.apply with its match count."""
    if not count or not rec.is_enabled():
        return
    key = rec.compile_key()
    for k, remark in reversed(rec.pending_remarks()):
        if k == key and remark.args.get("pass") == pass_name:
            remark.args["matches"] = remark.args.get("matches", 0) + count
            return


@guarded
def origin_names(nodes: Any) -> tuple[str, ...]:
    """The FX nodes (post-grad ops) that scheduler ``nodes``, fused or not,
    came from, in order and once each: the ``ops`` of an optional pass's
    remark."""
    names: list[str] = []
    for node in nodes:
        for sub in node.get_nodes():
            ir_node = getattr(sub, "node", None)
            if ir_node is None:
                continue
            for origin in ir_node.get_origins():
                name = getattr(origin, "name", None)
                if name is not None and name not in names:
                    names.append(name)
    return tuple(names)


def record_pass_remark(remark: Remark) -> None:
    """Keep a remark of an optional scheduler pass for the graph being compiled."""
    if not rec.is_enabled():
        return
    remark.graph = remark.graph or rec.compile_key()
    rec.keep_pending(remark)


# ---------------------------------------------------------------------------
# Scheduler: evaluated pairs and the rules that refused them


def fusion_detail_log(logger: logging.Logger) -> logging.Logger:
    """Give an upstream module's ``fusion`` artifact logger the artifact's
    levels (``recorder.DetailOnlyWhenVerbose``): its DEBUG messages, the
    scheduler's dumps, then show only under ``TORCH_LOGS=+fusion`` and the
    fork's summary stands alone under ``TORCH_LOGS=fusion``."""
    logger.addFilter(rec.DETAIL_FILTER)
    return logger


def log_graph_header(nodes: Sequence[BaseSchedulerNode]) -> None:
    """Open a graph's fusion log with its compile id and the code's identity."""
    if not fusion_log.isEnabledFor(logging.DEBUG):
        return
    try:
        fusion_log.debug(
            "fusion remarks for graph %s by %s: %d scheduler nodes before fusion",
            rec.graph_label(),
            rec.producer_identity(),
            len(nodes),
        )
    except Exception as e:  # never fail a compile because of instrumentation
        rec.report_failure(e)


def begin_fusion(scheduler: Scheduler) -> None:
    """Called before ``Scheduler.fuse_nodes``: the graph's nodes before fusion."""
    log_graph_header(scheduler.nodes)
    if not rec.is_enabled():
        return
    try:
        recorder = rec.current_recorder()
        if recorder is not None:
            recorder.base_nodes = [n.get_name() for n in scheduler.nodes]
    except Exception as e:
        rec.report_failure(e)


def _base_names(node: BaseSchedulerNode) -> frozenset[str]:
    return frozenset(n.get_name() for n in node.get_nodes())


def evaluate_pair(
    scheduler: Scheduler,
    node1: BaseSchedulerNode,
    node2: BaseSchedulerNode,
    decide: Callable[..., bool],
    **options: Any,
) -> bool:
    """``Scheduler.can_fuse``: run the check (``decide(node1, node2,
    **options)``, the scheduler's own method, so that no closure is built per
    call) and record its verdict.

    Nested evaluations (a foreach or mix-order node evaluating its members)
    add their refusals to the outermost pair, whose verdict is recorded.
    """
    recorder = rec.current_recorder(create=False) if rec.is_enabled() else None
    if recorder is None:
        return decide(node1, node2, **options)
    outermost = not recorder.evaluations
    if outermost:
        recorder.evaluations.append(Evaluation(node1, node2))
    try:
        result = decide(node1, node2, **options)
    finally:
        evaluation = recorder.evaluations.pop() if outermost else None
    if evaluation is not None:
        backend_refusals = (
            [] if result else _ask_backend(scheduler, recorder, evaluation)
        )
        _record_verdict(recorder, evaluation, result, backend_refusals)
    return result


def _ask_backend(
    scheduler: Scheduler, recorder: rec.GraphRecorder, evaluation: Evaluation
) -> list[Refusal]:
    # loaded once a compile is recorded, like the analysis
    from .backend_check import ask_backend

    return ask_backend(scheduler, recorder, evaluation)


def speedup_refused(
    node1: BaseSchedulerNode,
    node2: BaseSchedulerNode,
    code: Reason,
    **compared: Any,
) -> None:
    """``Scheduler.speedup_by_fusion`` refused a pair ``can_fuse`` accepted
    (``code``: the check at the call site; ``compared``: the times it compared,
    for a benchmark).  A benchmark can run after the pair's verdict, when its
    compiled kernels are ready: the verdict becomes the refusal."""
    overturned(node1, node2, code, code.description, **compared)


# The values a helper that returns only a bool compared, for its caller's
# refusal: (code, node names, values), at most one.
_decision_values: list[tuple[Reason, tuple[str, str], dict[str, Any]]] = []


def decision_values(
    code: Reason,
    node1: BaseSchedulerNode,
    node2: BaseSchedulerNode,
    **compared: Any,
) -> None:
    """A helper that decides for its caller (``Scheduler.are_long_distant_nodes``,
    ``can_fusion_increase_peak_memory``, ``fusion_prevent_too_many_reads_and_writes``
    return a bool) hands over what it compared; the caller's ``WhyNoFuse`` of
    ``code`` for the same pair takes it (see :func:`why_no_fuse`)."""
    if not rec.is_enabled():
        return
    try:
        _decision_values[:] = [
            (code, (node1.get_name(), node2.get_name()), _plain(compared))
        ]
    except Exception as e:
        rec.report_failure(e)


def _take_decision_values(why: WhyNoFuse, code: Reason | None) -> dict[str, Any]:
    if not _decision_values:
        return {}
    pending_code, names, values = _decision_values.pop()
    if pending_code is code and names == (why.name1, why.name2):
        return values
    return {}


def why_no_fuse(
    why: WhyNoFuse, code: Reason | None, compared: dict[str, Any] | None = None
) -> None:
    """``WhyNoFuse.__call__``: a rule refused a pair, with its code and the
    values it compared (``compared``: plain numbers, as its call site gave them).

    Inside an evaluation the refusal explains it; after one (a cycle found by
    ``will_fusion_create_cycle``, a benchmark) it overturns the pair's verdict.
    """
    if not rec.is_enabled():
        return
    try:
        recorder = rec.current_recorder(create=False)
        if recorder is None:
            return
        text = why.reason
        try:
            detail = text % why.args if why.args else text
        except (TypeError, ValueError):
            detail = text
        args = {**_take_decision_values(why, code), **_plain(compared or {})}
        if recorder.evaluations:
            recorder.evaluations[0].refusals.append(
                Refusal(code, detail, args, shows_values=bool(why.args))
            )
            return
        if code is None:
            return
        _amend_verdict_by_names(recorder, why.name1, why.name2, code, detail, args)
    except Exception as e:
        rec.report_failure(e)


def refused(
    node1: BaseSchedulerNode, node2: BaseSchedulerNode, code: Reason, detail: str
) -> None:
    """A rule that refuses without a ``WhyNoFuse`` message refused this pair."""
    if not rec.is_enabled():
        return
    try:
        recorder = rec.current_recorder(create=False)
        if recorder is not None and recorder.evaluations:
            recorder.evaluations[0].refusals.append(
                Refusal(code, detail, _compared_ranges(code, node1, node2))
            )
    except Exception as e:
        rec.report_failure(e)


def blocked_by_placement(
    scheduler: Scheduler, node1: BaseSchedulerNode, node2: BaseSchedulerNode
) -> None:
    """``Scheduler._fusion_blocked_by_placement`` (2.15.0) refused this pair:
    the nodes run on different CUDA streams or in different memory pools
    (the stream and mempool rules of 2.14.1's ``_can_fuse``), or are one node."""
    if not rec.is_enabled():
        return
    if node1 is node2:
        return  # a node is not paired with itself: no boundary to explain
    try:
        if scheduler.get_node_stream(node1) != scheduler.get_node_stream(node2):
            refused(node1, node2, Reason.STREAM_MISMATCH, "different streams")
        else:
            refused(node1, node2, Reason.MEMPOOL_MISMATCH, "different mempools")
    except Exception as e:
        rec.report_failure(e)


def overturned(
    node1: BaseSchedulerNode,
    node2: BaseSchedulerNode,
    code: Reason,
    detail: str,
    **compared: Any,
) -> None:
    """A check that runs after a pair's verdict (``Scheduler.can_fuse``'s
    peak-memory check on 2.15.0) refused it: the recorded verdict becomes
    that refusal, with the values the check compared."""
    if not rec.is_enabled():
        return
    try:
        recorder = rec.current_recorder(create=False)
        if recorder is not None:
            _amend_verdict_by_names(
                recorder,
                node1.get_name(),
                node2.get_name(),
                code,
                detail,
                _plain(compared),
            )
    except Exception as e:
        rec.report_failure(e)


def checked(
    result: bool,
    node1: BaseSchedulerNode,
    node2: BaseSchedulerNode,
    code: Reason,
    check: str,
) -> bool:
    """Pass a silent rule's verdict through; a refusal is recorded as ``code``."""
    if not result and rec.is_enabled():
        try:
            recorder = rec.current_recorder(create=False)
            if recorder is not None and recorder.evaluations:
                recorder.evaluations[0].refusals.append(
                    Refusal(code, "", _compared_ranges(code, node1, node2), check=check)
                )
        except Exception as e:
            rec.report_failure(e)
    return result


def _compared_ranges(
    code: Reason, node1: BaseSchedulerNode, node2: BaseSchedulerNode
) -> dict[str, Any]:
    """What a backend's range rule compared (the C++ backend's checks compare
    the two nodes' iteration ranges, ``group[1]``), as text."""
    if not code.value.startswith("cpp_"):
        return {}
    return {"ranges1": _ranges_of(node1), "ranges2": _ranges_of(node2)}


def _ranges_of(node: BaseSchedulerNode) -> str:
    try:
        return str(node.group[1])
    except Exception:
        return "?"


def epilogue_code(
    node2: BaseSchedulerNode,
    *,
    mutation_allowed: bool = False,
    reduction_allowed: Callable[[], bool] | None = None,
    enabled: Callable[[], bool] | None = None,
) -> Reason | None:
    """The rule behind upstream's one "template epilogue not satisfied" check;
    None when nothing listens (one check).

    The check exempts atomic-add epilogues from the mutation rule and
    reductions the backend can fuse, and reads a per-template switch: its call
    site passes what it computed (``mutation_allowed``) and, as callables
    evaluated only here and only while remarks are on, the rest
    (``reduction_allowed``, ``enabled``; ``config.epilogue_fusion`` without).
    """
    if not rec.is_enabled():
        return None
    from .. import config

    if node2.has_aliasing_or_mutation() and not mutation_allowed:
        return Reason.EPILOGUE_MUTATION
    if node2.is_reduction() and not (reduction_allowed and reduction_allowed()):
        return Reason.EPILOGUE_REDUCTION
    if config.epilogue_fusion if enabled is None else enabled():
        return Reason.TEMPLATE_KERNEL
    return Reason.EPILOGUE_DISABLED


def _record_verdict(
    recorder: rec.GraphRecorder,
    evaluation: Evaluation,
    fused: bool,
    backend_refusals: list[Refusal] | None = None,
) -> None:
    try:
        node1, node2 = evaluation.node1, evaluation.node2
        recorder.verdicts.append(
            PairVerdict(
                seq=recorder.next_seq(),
                first=_base_names(node1),
                second=_base_names(node2),
                names=(node1.get_name(), node2.get_name()),
                fused=fused,
                reason=None,
                detail="",
                args={},
                vertical=bool(
                    node2.ancestors & _base_names(node1)
                    if hasattr(node2, "ancestors")
                    else False
                ),
                refusals=list(evaluation.refusals),
                backend_refusals=list(backend_refusals or []),
                facts=_pair_facts(node1, node2, fused),
            )
        )
    except Exception as e:
        rec.report_failure(e)


def _pair_facts(
    node1: BaseSchedulerNode, node2: BaseSchedulerNode, fused: bool
) -> dict[str, Any]:
    """What the analysis words a refusal with, copied from the pair."""
    if fused:
        return {}
    return {
        "same_node": node1 is node2,
        "extern": bool(node1.is_extern() or node2.is_extern()),
        "common_buffers": sorted(node1.used_buffer_names() & node2.used_buffer_names()),
        # node1 depends on node2: a reversed try of dependent nodes (refused
        # as wrong_order, or earlier by a template's rules), not two
        # independent nodes
        "reversed": bool(getattr(node1, "ancestors", set()) & _base_names(node2)),
    }


def _amend_verdict_by_names(
    recorder: rec.GraphRecorder,
    name1: str,
    name2: str,
    reason: Reason,
    detail: str,
    args: dict[str, Any] | None = None,
) -> None:
    for verdict in reversed(recorder.verdicts):
        if verdict.names == (name1, name2):
            verdict.fused = False
            verdict.reason = reason
            verdict.args = dict(args or {})
            verdict.detail = with_compared(detail, verdict.args)
            return


def _plain(compared: dict[str, Any]) -> dict[str, Any]:
    """A call site's compared values as plain data (a symbolic size as text)."""
    return {
        key: value if isinstance(value, (bool, int, float, str)) else str(value)
        for key, value in compared.items()
    }


# ---------------------------------------------------------------------------
# Codegen: which kernels each scheduler node became


def _listening_recorder() -> rec.GraphRecorder | None:
    """The graph's recorder while remarks are on, else None."""
    return rec.current_recorder(create=False) if rec.is_enabled() else None


def generating(node: BaseSchedulerNode) -> None:
    """``Scheduler._codegen`` is about to generate ``node``'s code."""
    recorder = _listening_recorder()
    if recorder is None:
        return
    try:
        from .. import metrics

        _close_generating(recorder)
        recorder.generating = (node.get_name(), metrics.generated_kernel_count)
    except Exception as e:
        rec.report_failure(e)


def _close_generating(recorder: rec.GraphRecorder) -> None:
    from .. import metrics

    if recorder.generating is not None:
        name, before = recorder.generating
        recorder.kernel_counts[name] = (
            recorder.kernel_counts.get(name, 0)
            + metrics.generated_kernel_count
            - before
        )
        recorder.generating = None


def kernel_defined(kernel_name: str, nodes: Any, source: str | None = None) -> None:
    """A backend's ``define_kernel`` named the function holding ``nodes``
    (``source``: its generated code, which the pages link kernels to)."""
    recorder = _listening_recorder()
    if recorder is None:
        return
    try:
        if source is not None:
            recorder.kernel_sources.setdefault(kernel_name, source)
        for node in nodes or ():
            get_nodes = getattr(node, "get_nodes", None)
            if get_nodes is None:
                continue  # a marker such as EnableReduction
            for sub in get_nodes():
                recorder.kernel_functions.setdefault(sub.get_name(), kernel_name)
    except Exception as e:
        rec.report_failure(e)


@contextlib.contextmanager
def watch_codegen(scheduler: Scheduler) -> Iterator[None]:
    """Around ``Scheduler.codegen``; on success, copy the graph's final
    kernel map into its records (plain data: the analysis runs once the
    graph is compiled, :func:`graph_compiled`)."""
    from .. import metrics

    before = metrics.generated_kernel_count
    yield
    if not rec.is_enabled():
        return
    try:
        recorder = rec.current_recorder(create=False)
        if recorder is None or not recorder.base_nodes:
            return
        _close_generating(recorder)
        from .kernels import final_kernel_map

        recorder.kernel_map = final_kernel_map(scheduler, recorder)
        recorder.label = rec.graph_label()
        # Inductor's metric also counts kernels made while autotuning during
        # lowering; what this graph's codegen generated is the difference.
        recorder.generated_kernels = metrics.generated_kernel_count - before
        recorder.pending = rec.take_pending_remarks()
    except Exception as e:
        rec.report_failure(e)


# ---------------------------------------------------------------------------
# Inductor's FX graph cache: a hit skips lowering and scheduling, so the report
# of a graph is stored with its cache entry and replayed on a hit, the way
# upstream replays metrics and trace artifacts of cached graphs.


def compile_starting() -> None:
    """Called by ``compile_fx`` first.  A bad value of a fusion feature's
    environment switch, read when ``config`` was imported (which never fails
    on it: the option keeps its default), stops the compile here, where the
    option would be used, as one line (``fusion_switches.raise_bad_environ``);
    not guarded, since the user has to see it.  One check when all is well."""
    fusion_switches.raise_bad_environ()


@guarded
def graph_compiled(graph: Any) -> dict[str, Any] | None:
    """``graph`` (a GraphLowering) is compiled: analyse its records and publish
    its report (:mod:`.publish`, loaded only then); return the report to
    store with its cache entry.

    Called by ``CompiledFxGraph.__init__``; None when remarks were off.  The
    report is reduced to plain JSON data so that it pickles with the entry.
    """
    recorder = getattr(graph, "_fusion_recorder", None)
    if recorder is None or not rec.is_enabled():
        return None
    if recorder.published is None and recorder.kernel_map is not None:
        from . import publish

        publish.graph_generated(recorder)
    report = recorder.published
    if report is None:
        return None
    return json.loads(json.dumps(report, default=str))


@guarded
def replay_cached_report(compiled: Any) -> None:
    """Called on an FX graph cache hit with the loaded ``CompiledFxGraph``."""
    if not rec.is_enabled():
        return
    from . import publish

    publish.replay_cached(compiled)
