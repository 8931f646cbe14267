"""Could this boundary be fused?  Force one refused fusion and see.

The fusion report (:mod:`torch._inductor.fusion_report`) gives every kernel
boundary of a compiled graph a reason.  For a ``legality`` reason the answer to
"could these two ops share a kernel?" is known: no.  For a ``heuristic`` reason
(``no_shared_data``, ``exceeds_max_fusion_size``, ``nodes_too_far_apart``,
``benchmark_slower``, ...) the scheduler judged the fusion unprofitable, and
only trying it answers both halves of the question: is the fused kernel
generated and correct, and is it faster?

This module is that opt-in check.  Under :func:`force_fusion`, a compile gets
exactly one refused scheduler pair forced through: when the scheduler refuses it
(named by graph and base scheduler node names, as the report's boundary
``args`` give them) for the heuristic that refused it in the stock compile, the
pair is evaluated again with that one heuristic turned off.  Every other check,
legality and the backend's own included, still applies, so a fusion that would
be wrong or cannot be generated simply does not happen.
:func:`check_fusible` does this for the costliest heuristic boundaries of a
capture, verifies from a capture of the forced compile that the two ops ended
up in one kernel, compares the forced result with eager, times the stock and
the forced compile, and fills the boundaries' ``fusible`` and ``fusible_check``.

It compiles the model once more per checked boundary, so it is never run
implicitly; ``benchmarks/fusion/study.py --check-fusible N`` runs it per case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
import time
from collections.abc import Mapping
from typing import Any, TYPE_CHECKING

import torch
import torch._logging
from torch.utils import _pytree as pytree

from . import config, fusion_remarks
from .fusion_remarks import Category, Reason


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from .fusion_report import FusionCapture
    from .scheduler import BaseSchedulerNode, Scheduler


__all__ = ["BYPASSES", "ForcedFusion", "can_force", "check_fusible", "force_fusion"]

fusion_log = torch._logging.getArtifactLogger(__name__, "fusion")


# ---------------------------------------------------------------------------
# How each heuristic is turned off for one evaluation of the forced pair


@contextlib.contextmanager
def _patched_attr(obj: Any, name: str, value: Any) -> Iterator[None]:
    """Shadow a method on one instance (the scheduler), restoring it after."""
    missing = object()
    old = obj.__dict__.get(name, missing)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if old is missing:
            delattr(obj, name)
        else:
            setattr(obj, name, old)


def _score_floor(scheduler: Scheduler) -> contextlib.AbstractContextManager[None]:
    """Count the pair as sharing enough data (``InductorChoices.can_fuse`` and
    ``can_fuse_horizontal`` refuse a score of 0 or below the threshold)."""
    original = scheduler.score_fusion_memory
    floor = max(1, int(config.score_fusion_memory_threshold))

    def floored(node1: Any, node2: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(node1, node2, *args, **kwargs)
        if isinstance(result, tuple):
            return (max(result[0], floor), *result[1:])
        return max(result, floor)

    return _patched_attr(scheduler, "score_fusion_memory", floored)


def _never(
    method: str,
) -> Callable[[Scheduler], contextlib.AbstractContextManager[None]]:
    def bypass(scheduler: Scheduler) -> contextlib.AbstractContextManager[None]:
        return _patched_attr(scheduler, method, lambda *args, **kwargs: False)

    return bypass


def _always(
    method: str,
) -> Callable[[Scheduler], contextlib.AbstractContextManager[None]]:
    def bypass(scheduler: Scheduler) -> contextlib.AbstractContextManager[None]:
        return _patched_attr(scheduler, method, lambda *args, **kwargs: True)

    return bypass


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
    Reason.NO_SHARED_DATA: _score_floor,
    Reason.INDEXING_MISMATCH: _score_floor,
    Reason.SCORE_BELOW_THRESHOLD: _score_floor,
    Reason.EXCEEDS_MAX_FUSION_SIZE: _config(max_fusion_size=_UNLIMITED),
    Reason.PEAK_MEMORY_INCREASE: _never("can_fusion_increase_peak_memory"),
    Reason.TOO_MANY_IO_BUFFERS: _config(max_fusion_unique_io_buffers=None),
    Reason.NODES_TOO_FAR_APART: _never("are_long_distant_nodes"),
    Reason.TILING_MISMATCH: _config(triton__tiling_prevents_pointwise_fusion=False),
    Reason.REDUCTION_TILING_INVALID: _config(
        triton__tiling_prevents_reduction_fusion=False
    ),
    Reason.CPP_MAX_HORIZONTAL_SIZE: _config(cpp__max_horizontal_fusion_size=_UNLIMITED),
    Reason.PROLOGUE_INCREASES_READS: _always(
        "check_prologue_fusion_heuristics_fusable"
    ),
    Reason.PROLOGUE_PADDING: _always("check_prologue_fusion_heuristics_fusable"),
    Reason.PROLOGUE_NEEDS_UPCAST: _always("check_prologue_fusion_heuristics_fusable"),
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
    Reason.NO_SHARED_DATA.value: "score_fusion_memory counts the pair as sharing "
    "config.score_fusion_memory_threshold bytes",
    Reason.INDEXING_MISMATCH.value: "as no_shared_data",
    Reason.SCORE_BELOW_THRESHOLD.value: "as no_shared_data",
    Reason.EXCEEDS_MAX_FUSION_SIZE.value: "config.max_fusion_size unlimited",
    Reason.PEAK_MEMORY_INCREASE.value: "can_fusion_increase_peak_memory returns False",
    Reason.TOO_MANY_IO_BUFFERS.value: "config.max_fusion_unique_io_buffers = None",
    Reason.NODES_TOO_FAR_APART.value: "are_long_distant_nodes returns False",
    Reason.TILING_MISMATCH.value: "config.triton.tiling_prevents_pointwise_fusion = False",
    Reason.REDUCTION_TILING_INVALID.value: "config.triton.tiling_prevents_reduction_fusion = False",
    Reason.CPP_MAX_HORIZONTAL_SIZE.value: "config.cpp.max_horizontal_fusion_size unlimited",
    Reason.PROLOGUE_INCREASES_READS.value: "check_prologue_fusion_heuristics_fusable returns True",
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

    The scheduler hooks in :mod:`fusion_remarks` call :meth:`reconsider`,
    :meth:`note_cycle` and :meth:`forced_speedup` while it is installed.  A
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

    # -- the hooks ---------------------------------------------------------

    def _matches(self, node1: Any, node2: Any) -> bool:
        try:
            if fusion_remarks.graph_label() != self.graph:
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
        scheduler: Scheduler,
        recorder: fusion_remarks.GraphRecorder,
        can_fuse: Callable[..., bool],
        node1: Any,
        node2: Any,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
    ) -> bool:
        """``Scheduler.can_fuse`` refused ``node1, node2``: evaluate a matching
        pair again with the heuristic that refused it turned off."""
        try:
            bypass = _CAN_FUSE_BYPASSES.get(self.reason)
            if bypass is None or not self._matches(node1, node2):
                return False
            names = f"{node1.get_name()} + {node2.get_name()}"
            refused, detail, _ = fusion_remarks._rejection_reason(
                scheduler, recorder, node1, node2
            )
            if _SAME_HEURISTIC.get(refused, refused) is not _SAME_HEURISTIC.get(
                self.reason, self.reason
            ):
                self._note(
                    self.refusals,
                    f"{names}: {refused.value} ({refused.category.value}): {detail}",
                )
                return False
            # Re-run the check; what refuses it now is what the verdict records.
            recorder._why.clear()
            recorder._silent.clear()
            recorder._depth += 1
            try:
                with bypass(scheduler):
                    result = bool(can_fuse(node1, node2, *args, **kwargs))
            finally:
                recorder._depth -= 1
            if result:
                self._note(self.overturned, names)
                fusion_log.debug(
                    "fusion_check: forcing %s in graph %s past %s",
                    names,
                    self.graph,
                    self.reason.value,
                )
            else:
                then, detail, _ = fusion_remarks._rejection_reason(
                    scheduler, recorder, node1, node2
                )
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

    def note_cycle(
        self, recorder: fusion_remarks.GraphRecorder, node1: Any, node2: Any
    ) -> None:
        """``Scheduler.will_fusion_create_cycle`` said yes for some pair."""
        if self._matches(node1, node2):
            self.cycle = True
            self.legality_refusal = True
            self._note(
                self.refusals,
                f"{node1.get_name()} + {node2.get_name()}: would_create_cycle "
                "(legality): fusing would create a cycle through other kernels",
            )

    def forced_speedup(
        self, recorder: fusion_remarks.GraphRecorder, node1: Any, node2: Any
    ) -> Any:
        """A ``FusionResult`` that fuses a matching pair without benchmarking,
        or None to let ``Scheduler.speedup_by_fusion`` decide."""
        if self.reason not in _SPEEDUP_BYPASSES or not self._matches(node1, node2):
            return None
        try:
            from . import ir
            from .scheduler import FusionResult

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
    from . import fusion_report

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
    if fusion_remarks._forcing is not None:
        raise RuntimeError("force_fusion does not nest")
    forced = ForcedFusion(
        graph=graph_compile_id,
        producer_nodes=frozenset(producer_nodes),
        consumer_nodes=frozenset(consumer_nodes),
        reason=code,
    )
    with fusion_report.capture() as rep:
        forced.capture = rep
        fusion_remarks._forcing = forced
        try:
            yield forced
        finally:
            fusion_remarks._forcing = None


# ---------------------------------------------------------------------------
# Running, comparing and timing


def _leaves(value: Any) -> list[Any]:
    out: list[Any] = []
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, Mapping):
            out.extend(_leaves(list(leaf.values())))
        elif isinstance(leaf, (tuple, list)):
            out.extend(_leaves(list(leaf)))
        else:
            out.append(leaf)
    return out


def _snapshot(value: Any) -> list[Any]:
    return [
        leaf.detach().clone() if isinstance(leaf, torch.Tensor) else leaf
        for leaf in _leaves(value)
    ]


# (atol, rtol) per dtype; rtol scales with the reference's largest |value|.
_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}
_DEFAULT_TOLERANCE = (1e-1, 1e-1)  # float8 and other narrow types


def _leaf_diff(actual: Any, expected: Any) -> float:
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape:
            return math.inf
        if expected.is_floating_point() or expected.is_complex():
            if expected.numel() == 0:
                return 0.0
            wide = torch.cdouble if expected.is_complex() else torch.double
            diff = (actual.to(wide) - expected.to(wide)).abs()
            both_nan = actual.isnan() & expected.isnan()
            return float(diff.masked_fill(both_nan, 0).nan_to_num(math.inf).max())
        return 0.0 if torch.equal(actual.cpu(), expected.cpu()) else math.inf
    try:
        return 0.0 if actual == expected else math.inf
    except Exception:
        return math.inf


def _compare(
    actual: list[Any], expected: list[Any], stock: list[Any]
) -> tuple[bool, float]:
    """Whether a forced result equals eager's (and the largest difference).

    Within the dtype's tolerance, or no more than twice as far from eager as
    the stock compile is (a reordered reduction rounds differently).
    """
    if len(actual) != len(expected):
        return False, math.inf
    if len(stock) != len(expected):
        stock = [None] * len(expected)
    ok, worst = True, 0.0
    for a, e, s in zip(actual, expected, stock):
        diff = _leaf_diff(a, e)
        worst = max(worst, diff)
        if diff == 0.0:
            continue
        if isinstance(e, torch.Tensor) and (e.is_floating_point() or e.is_complex()):
            atol, rtol = _TOLERANCES.get(e.dtype, _DEFAULT_TOLERANCE)
            magnitude = float(e.abs().nan_to_num(0).max()) if e.numel() else 0.0
            slack = _leaf_diff(s, e)
            if diff <= atol + rtol * magnitude or (
                math.isfinite(slack) and diff <= 2 * slack
            ):
                continue
        ok = False
    return ok, worst


class _Harness:
    """Runs one model eagerly and compiled, the same way for every arm."""

    def __init__(
        self,
        model: Callable[..., Any],
        inputs: Sequence[Any],
        compile_kwargs: dict[str, Any],
        training: bool,
        repeats: int,
    ) -> None:
        self.model = model
        self.inputs = tuple(inputs)
        self.compile_kwargs = compile_kwargs
        self.training = training
        self.repeats = repeats
        params = (
            [p for p in model.parameters() if p.requires_grad]
            if isinstance(model, torch.nn.Module)
            else []
        )
        if (
            training
            and not params
            and not any(
                isinstance(t, torch.Tensor) and t.requires_grad for t in self.inputs
            )
        ):
            # No weights: differentiate by the float inputs.
            self.inputs = tuple(
                t.detach().clone().requires_grad_()
                if isinstance(t, torch.Tensor) and t.is_floating_point()
                else t
                for t in self.inputs
            )
        self.grad_leaves = params + [
            t for t in self.inputs if isinstance(t, torch.Tensor) and t.requires_grad
        ]
        self.device = self._device()

    def _device(self) -> str:
        tensors = [t for t in self.inputs if isinstance(t, torch.Tensor)]
        if isinstance(self.model, torch.nn.Module):
            tensors += list(self.model.parameters())
        for t in tensors:
            if t.device.type != "cpu":
                return t.device.type
        return "cpu"

    def compile(self) -> Callable[..., Any]:
        torch._dynamo.reset()
        return torch.compile(self.model, **self.compile_kwargs)

    def step(self, fn: Callable[..., Any]) -> Any:
        if not self.training:
            with torch.no_grad():
                return fn(*self.inputs)
        for t in self.grad_leaves:
            t.grad = None
        out = fn(*self.inputs)
        loss = sum(
            (
                t.float().sum()
                for t in _leaves(out)
                if isinstance(t, torch.Tensor) and t.is_floating_point()
            ),
            torch.zeros((), device=self.device),
        )
        loss.backward()
        return out

    def results(self, fn: Callable[..., Any]) -> list[Any]:
        """Outputs, then gradients (training), of one seeded step."""
        devices = [torch.cuda.current_device()] if self.device == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(0)
            out = _snapshot(self.step(fn))
        if self.training:
            out += [
                t.grad.detach().clone() if t.grad is not None else None
                for t in self.grad_leaves
            ]
        return out

    def time_ms(self, fn: Callable[..., Any]) -> float:
        """Median milliseconds per step: ``triton.testing.do_bench`` on CUDA,
        3 warm-up steps and the median of ``repeats`` by ``time.perf_counter``
        elsewhere."""
        if self.device == "cuda":
            try:
                from triton.testing import do_bench

                return float(do_bench(lambda: self.step(fn), return_mode="median"))
            except ImportError:
                pass
        sync = torch.cuda.synchronize if self.device == "cuda" else lambda: None
        for _ in range(3):
            self.step(fn)
        sync()
        times = []
        for _ in range(max(1, self.repeats)):
            start = time.perf_counter()
            self.step(fn)
            sync()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3


# ---------------------------------------------------------------------------
# The check


@dataclasses.dataclass
class _Target:
    """One refused pair of one graph and the boundaries it explains."""

    graph: dict[str, Any]
    reason: str
    producer_nodes: tuple[str, ...]
    consumer_nodes: tuple[str, ...]
    boundaries: list[dict[str, Any]]

    @property
    def cost(self) -> int:
        return max(
            int((b.get("args") or {}).get("bytes") or 0) for b in self.boundaries
        )

    @property
    def forceable(self) -> bool:
        return bool(self.producer_nodes and self.consumer_nodes) and can_force(
            self.reason
        )


def _targets(data: dict[str, Any], limit: int) -> list[_Target]:
    """The heuristic boundaries to check, grouped by refused pair, costliest
    first; pairs that can be forced before those that cannot."""
    groups: dict[tuple[Any, ...], _Target] = {}
    for graph in data.get("graphs", []):
        for b in graph.get("boundaries", []):
            if b.get("category") != Category.HEURISTIC.value:
                continue
            args = b.get("args") or {}
            p = tuple(args.get("producer_nodes") or ())
            c = tuple(args.get("consumer_nodes") or ())
            key = (graph["compile_id"], b["reason"], p, c) if p and c else (id(b),)
            if key not in groups:
                groups[key] = _Target(graph, b["reason"], p, c, [])
            groups[key].boundaries.append(b)
    ordered = sorted(groups.values(), key=lambda t: (not t.forceable, -t.cost))
    return ordered[: max(0, limit)]


def _shares_kernel(graph: dict[str, Any] | None, boundary: dict[str, Any]) -> bool:
    if graph is None:
        return False
    ops = {op["name"]: op for op in graph.get("ops", [])}
    p, c = ops.get(boundary["producer"]), ops.get(boundary["consumer"])
    if p is None or c is None:
        return False
    return bool(set(p["kernels"]) & set(c["kernels"]))


def _unforceable_detail(target: _Target) -> str:
    try:
        code = Reason(target.reason)
    except ValueError:
        return f"unknown reason {target.reason!r}"
    if code.value in BYPASSES:
        return (
            f"{code.value}: the report names no refused scheduler pair "
            "(args producer_nodes/consumer_nodes) to force"
        )
    return (
        f"{code.value} is decided during lowering (a value realized into a "
        "buffer), not by a scheduler pair; forcing covers scheduler heuristics"
    )


def _record(
    target: _Target,
    result: dict[str, Any],
    forced_graph: dict[str, Any] | None,
    engaged: bool,
    checks: list[dict[str, Any]],
) -> None:
    """Fill ``fusible`` and ``fusible_check`` of each boundary of ``target``."""
    for b in target.boundaries:
        check = dict(result)
        if "forced" not in result:
            check["forced"] = engaged and _shares_kernel(forced_graph, b)
            if engaged and not check["forced"]:
                check["detail"] = (
                    f"{b['producer']} and {b['consumer']} are still in different "
                    f"kernels; {result['detail']}"
                )
            if not check["forced"]:
                check.update(correct=None, faster=None, forced_ms=None, speedup=None)
        fusible_check = {
            key: check.get(key)
            for key in (
                "forced",
                "correct",
                "faster",
                "stock_ms",
                "forced_ms",
                "speedup",
                "device",
                "detail",
            )
        }
        b["fusible_check"] = fusible_check
        if fusible_check["forced"] and fusible_check["correct"] is not None:
            b["fusible"] = bool(fusible_check["correct"])
        elif not fusible_check["forced"] and check.get("legality_refusal"):
            # Past the heuristic, a legality check refuses the pair.
            b["fusible"] = False
        checks.append(
            {
                "graph": target.graph["compile_id"],
                "producer": b["producer"],
                "consumer": b["consumer"],
                "relation": b.get("relation"),
                "reason": target.reason,
                "producer_nodes": list(target.producer_nodes),
                "consumer_nodes": list(target.consumer_nodes),
                "kernels": check.get("kernels"),
                **fusible_check,
            }
        )


def _forced_detail(forced: ForcedFusion) -> str:
    parts = []
    if forced.overturned:
        parts.append(
            f"forced {'; '.join(forced.overturned)} past {forced.reason.value}"
        )
    elif not forced.refusals:
        parts.append(
            f"the scheduler never refused a pair of "
            f"{'+'.join(sorted(forced.producer_nodes))} and "
            f"{'+'.join(sorted(forced.consumer_nodes))} in graph {forced.graph} "
            "(stale node names, or the graph changed)"
        )
    parts.extend(forced.refusals)
    parts.extend(f"error while forcing: {e}" for e in forced.errors)
    return "; ".join(parts)


def _check_one(
    harness: _Harness,
    target: _Target,
    expected: list[Any],
    stock: list[Any],
    stock_ms: float | None,
) -> tuple[dict[str, Any], dict[str, Any] | None, bool]:
    """Compile with the target forced; the shared part of its check."""
    result: dict[str, Any] = {"stock_ms": stock_ms, "device": harness.device}
    stock_kernels = len(target.graph.get("kernels", []))
    forced: ForcedFusion | None = None
    failure = None
    try:
        with force_fusion(
            target.graph["compile_id"],
            target.producer_nodes,
            target.consumer_nodes,
            target.reason,
        ) as forced:
            compiled = harness.compile()
            actual = harness.results(compiled)
    except Exception as e:
        failure = f"{type(e).__name__}: {e}"
    if forced is None:
        return dict(result, forced=False, detail=failure), None, False
    graph = forced.graph_report()
    engaged = bool(forced.overturned) and graph is not None
    detail = _forced_detail(forced)
    if graph is None:
        detail = f"graph {forced.graph} was not compiled again; {detail}"
    forced_kernels = len(graph["kernels"]) if graph is not None else None
    result["legality_refusal"] = forced.legality_refusal and not engaged
    result["kernels"] = {"stock": stock_kernels, "forced": forced_kernels}
    result["detail"] = detail
    if failure is not None:
        # Not judged: the error may have nothing to do with the fusion.
        result["detail"] = f"{detail}; the forced compile or run failed: {failure}"
        return result, graph, engaged
    if not engaged or not any(_shares_kernel(graph, b) for b in target.boundaries):
        return result, graph, engaged
    correct, diff = _compare(actual, expected, stock)
    result["correct"] = correct
    result["detail"] = (
        f"{detail}; {stock_kernels} -> {forced_kernels} kernels in graph "
        f"{forced.graph}; max |forced - eager| = {diff:.3g}"
    )
    try:
        forced_ms = harness.time_ms(compiled)
        result["forced_ms"] = forced_ms
        if stock_ms is not None and forced_ms > 0:
            result["speedup"] = stock_ms / forced_ms
            result["faster"] = forced_ms < stock_ms
    except Exception as e:
        result["detail"] += f"; timing failed: {type(e).__name__}: {e}"
    return result, graph, engaged


def check_fusible(
    model: Callable[..., Any],
    inputs: Sequence[Any],
    data: dict[str, Any],
    *,
    max_boundaries: int = 3,
    compile_kwargs: dict[str, Any] | None = None,
    training: bool = False,
    repeats: int = 20,
) -> list[dict[str, Any]]:
    """Force up to ``max_boundaries`` heuristic boundaries of ``data`` and judge them.

    ``data`` is the ``to_json()`` of a :func:`fusion_report.capture` around a
    stock ``torch.compile(model, **compile_kwargs)`` of ``model(*inputs)``
    (with ``training``, a forward and a backward).  Boundaries of category
    ``heuristic`` are taken costliest first (``args["bytes"]``); those that
    share one refused scheduler pair are checked by one forced compile.  For
    each, the model is compiled afresh under :func:`force_fusion`, and the
    boundary dict in ``data`` gets

    * ``fusible_check``: ``forced`` (the two ops ended up in one kernel),
      ``correct`` (outputs, and with ``training`` the gradients of parameters
      and float inputs, equal eager's within the dtype's tolerance), ``faster``,
      ``stock_ms``/``forced_ms`` (median per step; do_bench on CUDA,
      ``time.perf_counter`` over ``repeats`` steps elsewhere), ``speedup``
      (stock / forced), ``device`` and ``detail``;
    * ``fusible``: True if forced and correct; False if forced and wrong, or
      if with the heuristic off a legality reason (or a cycle) refuses the
      pair; unchanged (None) if it could not be forced otherwise.

    Returns one dict per checked boundary: its ``fusible_check`` fields plus
    ``graph``, ``producer``, ``consumer``, ``reason``, the forced pair's nodes
    and the graph's kernel counts.  A failing check never raises: the error is
    in ``detail``.
    """
    targets = _targets(data, max_boundaries)
    checks: list[dict[str, Any]] = []
    if not targets:
        return checks
    harness = _Harness(model, inputs, dict(compile_kwargs or {}), training, repeats)
    stock_ms: float | None = None
    # Eager and stock-compiled results and the stock time, once, for the
    # targets that can be forced.
    setup: tuple[list[Any], list[Any]] | str | None = None
    try:
        for target in targets:
            result: dict[str, Any] = {"stock_ms": stock_ms, "device": harness.device}
            graph, engaged = None, False
            if not target.forceable:
                result.update(forced=False, detail=_unforceable_detail(target))
                _record(target, result, graph, engaged, checks)
                continue
            if setup is None:
                try:
                    expected = harness.results(model)
                    stock_fn = harness.compile()
                    setup = (expected, harness.results(stock_fn))
                    stock_ms = result["stock_ms"] = harness.time_ms(stock_fn)
                    del stock_fn
                except Exception as e:
                    setup = f"eager or stock run failed: {type(e).__name__}: {e}"
            if isinstance(setup, str):
                result.update(forced=False, detail=setup)
            else:
                try:
                    result, graph, engaged = _check_one(
                        harness, target, *setup, stock_ms
                    )
                except Exception as e:  # never fail the caller
                    result.update(forced=False, detail=f"{type(e).__name__}: {e}")
            _record(target, result, graph, engaged, checks)
            fusion_log.debug("fusion_check: %s", checks[-1])
    finally:
        torch._dynamo.reset()
    return checks
