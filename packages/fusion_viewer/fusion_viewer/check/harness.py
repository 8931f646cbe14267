"""Could this boundary be fused?  The harness that forces each one and judges it.

:func:`check_fusible` takes the costliest ``heuristic`` boundaries of a
:func:`torch._inductor.fusion_report.capture`, and for each compiles the model
again with the refused scheduler pair forced through
(:func:`~fusion_viewer.check.policy.force_fusion`), verifies
from a capture of the forced compile that the two ops ended up in one kernel,
compares the forced result with eager, times the stock and the forced compile,
and fills the boundaries' ``fusible`` and ``fusible_check``.

It compiles the model once more per checked boundary, so it is never run
implicitly; ``benchmarks/fusion/study.py --check-fusible N`` runs it per case.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Mapping
from typing import Any, Protocol, TYPE_CHECKING

import torch
import torch._logging
from torch.utils import _pytree as pytree

from torch._inductor.fusion_remarks.taxonomy import Category, Reason

from .. import costs as viewer_costs
from .policy import BYPASSES, can_force, force_fusion, ForcedFusion, why_not_forced


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


__all__ = ["StepTimer", "check_fusible"]

fusion_log = torch._logging.getArtifactLogger(__name__, "fusion")


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


class StepTimer(Protocol):
    """How the check times the stock and the forced compile of a model.

    :meth:`prepare` is called with a step of a compiled model right after it
    compiled and ran once (the compiled code is valid only until the next
    compile resets Dynamo); :meth:`compare` gets what two ``prepare`` calls
    returned, the stock compile's first, and returns at least ``stock_ms``
    and ``forced_ms`` (per step), optionally ``faster`` (None where the
    difference is inside the timer's noise) and anything else it measured,
    which the check keeps under ``timing``.  The default times each step with
    ``do_bench`` (CUDA) or ``time.perf_counter``; ``benchmarks/fusion/
    predictions.py`` replays CUDA graphs and reads profiler kernel time,
    stock and forced interleaved round by round."""

    def prepare(self, step: Callable[[], Any]) -> Any: ...

    def compare(self, stock: Any, forced: Any) -> dict[str, Any]: ...


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
    def cost(self) -> tuple[float, int]:
        """The predicted gain of its costliest boundary (``costs.price``), then
        the bytes that cross it (a report priced without time ranks by bytes)."""
        return max(
            (
                float((b.get("predicted") or {}).get("gain_s") or 0.0),
                int((b.get("args") or {}).get("bytes") or 0),
            )
            for b in self.boundaries
        )

    @property
    def forceable(self) -> bool:
        return bool(self.producer_nodes and self.consumer_nodes) and can_force(
            self.reason
        )


def _targets(data: dict[str, Any], limit: int) -> list[_Target]:
    """The heuristic boundaries to check, grouped by refused pair, the largest
    predicted gain first; pairs that can be forced before those that cannot."""
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
    ordered = sorted(
        groups.values(), key=lambda t: (not t.forceable, -t.cost[0], -t.cost[1])
    )
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
        f"{code.value} cannot be forced: {why_not_forced(code)}; the check "
        "forces only the heuristics of InductorChoices' fusion hooks"
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
        for key in ("timing", "fused_into"):
            if check.get(key) is not None and fusible_check["forced"]:
                fusible_check[key] = check[key]
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
    overturned, refusals = forced.overturned, forced.refusals
    if overturned:
        parts.append(f"forced {'; '.join(overturned)} past {forced.reason.value}")
    elif not refusals:
        parts.append(
            f"the scheduler never refused a pair of "
            f"{'+'.join(sorted(forced.producer_nodes))} and "
            f"{'+'.join(sorted(forced.consumer_nodes))} in graph {forced.graph} "
            "(stale node names, or the graph changed)"
        )
    parts.extend(refusals)
    parts.extend(f"error while forcing: {e}" for e in forced.errors)
    return "; ".join(parts)


def _fused_into(graph: dict[str, Any], target: _Target) -> str | None:
    """The generated function (or kernel) holding both ops of the target's
    first boundary in the forced compile."""
    ops = {op["name"]: op for op in graph.get("ops", [])}
    functions = {k["name"]: k.get("function") or k["name"] for k in graph["kernels"]}
    for b in target.boundaries:
        p, c = ops.get(b["producer"]), ops.get(b["consumer"])
        if p is not None and c is not None:
            shared = [k for k in p["kernels"] if k in c["kernels"]]
            if shared:
                return functions.get(shared[0], shared[0])
    return None


def _check_one(
    harness: _Harness,
    target: _Target,
    expected: list[Any],
    stock: list[Any],
    stock_ms: float | None,
    timer: StepTimer | None = None,
    stock_prepared: Any = None,
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
    result["fused_into"] = _fused_into(graph, target)
    result["detail"] = (
        f"{detail}; {stock_kernels} -> {forced_kernels} kernels in graph "
        f"{forced.graph}; max |forced - eager| = {diff:.3g}"
    )
    try:
        faster = None
        if timer is not None and stock_prepared is not None:
            prepared = timer.prepare(lambda: harness.step(compiled))
            timing = dict(timer.compare(stock_prepared, prepared))
            del prepared
            stock_ms = result["stock_ms"] = timing.pop("stock_ms")
            forced_ms = timing.pop("forced_ms")
            faster = timing.pop("faster", None)
            result["timing"] = timing
        else:
            forced_ms = harness.time_ms(compiled)
        result["forced_ms"] = forced_ms
        if stock_ms is not None and forced_ms > 0:
            result["speedup"] = stock_ms / forced_ms
            result["faster"] = faster if timer is not None else forced_ms < stock_ms
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
    timer: StepTimer | None = None,
    stock: Callable[..., Any] | None = None,
    enough_forced: int | None = None,
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

    ``enough_forced``: stop once this many targets were forced into one
    kernel (many refused pairs meet a legality check once the heuristic is
    out of the way; with ``max_boundaries`` above ``enough_forced`` the check
    goes on down the list until enough of them could be measured).
    ``stock``: the stock compile of ``model`` that ``data`` was captured from,
    if the caller still holds it (one compile fewer), else the check compiles
    it again.  ``timer`` (a :class:`StepTimer`) replaces the default timing: each
    forced compile is then timed against the stock one by ``compare``, and
    ``fusible_check`` also has its ``timing`` and ``fused_into`` (the
    generated function that holds both ops).  Targets are taken in the order
    of their predicted gain (``predicted.gain_s``, which
    ``torch._inductor.fusion_remarks.costs.price`` gives every published
    boundary), then of their bytes; a report captured under
    ``config.fusion_cost_model = "measure"`` (the default) is priced first,
    at this device's measured cost model
    (:func:`fusion_viewer.costs.price_measured`).

    Returns one dict per checked boundary: its ``fusible_check`` fields plus
    ``graph``, ``producer``, ``consumer``, ``reason``, the forced pair's nodes
    and the graph's kernel counts.  A failing check never raises: the error is
    in ``detail``.
    """
    viewer_costs.price_measured(data)
    targets = _targets(data, max_boundaries)
    checks: list[dict[str, Any]] = []
    if not targets:
        return checks
    harness = _Harness(model, inputs, dict(compile_kwargs or {}), training, repeats)
    stock_ms: float | None = None
    # Eager and stock-compiled results and the stock time, once, for the
    # targets that can be forced.
    setup: tuple[list[Any], list[Any]] | str | None = None
    stock_prepared: Any = None
    forced_count = 0
    try:
        for target in targets:
            if enough_forced is not None and forced_count >= enough_forced:
                break
            result: dict[str, Any] = {"stock_ms": stock_ms, "device": harness.device}
            graph, engaged = None, False
            if not target.forceable:
                result.update(forced=False, detail=_unforceable_detail(target))
                _record(target, result, graph, engaged, checks)
                continue
            if setup is None:
                try:
                    expected = harness.results(model)
                    stock_fn = stock if stock is not None else harness.compile()
                    setup = (expected, harness.results(stock_fn))
                    if timer is not None:
                        stock_prepared = timer.prepare(
                            lambda fn=stock_fn: harness.step(fn)
                        )
                    else:
                        stock_ms = result["stock_ms"] = harness.time_ms(stock_fn)
                    del stock_fn
                except Exception as e:
                    setup = f"eager or stock run failed: {type(e).__name__}: {e}"
            if isinstance(setup, str):
                result.update(forced=False, detail=setup)
            else:
                try:
                    result, graph, engaged = _check_one(
                        harness, target, *setup, stock_ms, timer, stock_prepared
                    )
                except Exception as e:  # never fail the caller
                    result.update(forced=False, detail=f"{type(e).__name__}: {e}")
            _record(target, result, graph, engaged, checks)
            forced_count += bool(checks[-1]["forced"])
            fusion_log.debug("fusion_check: %s", checks[-1])
    finally:
        torch._dynamo.reset()
    return checks
