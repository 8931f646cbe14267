"""The benchmark harness: the one place where the fusion suites build a
model's step and measure it, so that every arm of every suite is measured alike.

* a model's step (:func:`build_model`, :func:`model_step`): inference under
  ``torch.no_grad``, or a training step (forward, the model's loss, backward);
  :func:`compile_kwargs` gives ``torch.compile``'s arguments for a mode and
  :func:`first_call` times the call that compiles;
* step time: CUDA events around each whole step on a GPU (launch overhead
  included, as a user sees it), ``time.perf_counter`` on the CPU; warm-up
  excluded, the median reported (:func:`median_step_s`);
* call time of a kernel-sized function (:func:`median_call_s`):
  ``triton.testing.do_bench`` (or ``do_bench_cudagraph``) on a GPU;
* kernel launches per step: GPU kernels in a ``torch.profiler`` trace
  (memcpy and memset excluded); ``None`` on the CPU, which launches none;
* agreement with eager: max |difference| against a tolerance scaled by the
  reference's magnitude;
* provenance: the device, torch, fork revision and command of a result;
* one timing at a time: processes side by side on one GPU machine compile in
  parallel and take their timings under one file lock (``exclusive_device``);
  each case runs in a child process whose environment (:func:`child_env`)
  turns the compile caches off, so that every arm lowers and schedules;
* arms compared round by round (``interleaved_rounds``): every arm timed for a
  few steps, then every arm again, so drift of the host (other processes,
  clocks, a profiler session's after-effects) falls on all arms alike, and the
  spread between rounds says how far a figure can be trusted;
* three measures of a GPU step: its wall-clock time (host launch time
  included: host-bound at small shapes, and noisy), the summed durations of
  its kernels in a profiler trace (``kernel_time_rounds``: the device's work,
  free of host noise) and its time as one replayed CUDA graph
  (``capture_step``: launches gone, the kernels back to back).
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import statistics
import time
from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from torch import nn


# ---------------------------------------------------------------------------
# A model's step


def build_model(
    name: str, device: str, shapes: str, train: bool
) -> tuple[nn.Module, tuple[Any, ...]]:
    """A model of the set (``models.build``) and its inputs; for a training
    step the inputs that take a gradient require one (``models.for_training``)."""
    from models import build, for_training

    model, inputs = build(name, device, shapes)
    if train:
        inputs = for_training(model, inputs)
    return model, inputs


def model_step(
    fn: Callable[..., Any],
    model: nn.Module,
    inputs: tuple[Any, ...],
    train: bool,
    mark_cudagraph_step: bool = False,
) -> Callable[[], Any]:
    """One step of ``model`` through ``fn`` (the model itself, or a compile of
    it): inference under ``torch.no_grad``, or a training step (gradients
    cleared, forward, the model's loss, backward).  Returns the forward's
    output.  ``mark_cudagraph_step`` starts each step with
    ``torch.compiler.cudagraph_mark_step_begin``, which Inductor's own CUDA
    graphs (``triton.cudagraphs``) need between steps."""
    import torch
    from models import loss_of

    def step() -> Any:
        if mark_cudagraph_step:
            torch.compiler.cudagraph_mark_step_begin()
        if train:
            model.zero_grad(set_to_none=True)
            out = fn(*inputs)
            loss_of(out).backward()
            return out
        with torch.no_grad():
            return fn(*inputs)

    return step


def compile_kwargs(mode: str, autotune_convs: bool = False) -> dict[str, Any]:
    """``torch.compile`` arguments for a mode: max-autotune tunes GEMMs, and
    convolutions only if asked (autotuning every convolution of a CNN takes
    minutes per model on a GPU).

    ``torch.compile`` refuses a ``mode`` together with ``options``, so a mode
    with extra options is passed as the mode's own options plus ours.
    """
    if mode == "default":
        return {}
    if "max-autotune" in mode and not autotune_convs:
        import torch._inductor

        options = dict(torch._inductor.list_mode_options(mode))
        options["max_autotune_conv_backends"] = "ATEN"
        return {"options": options}
    return {"mode": mode}


def first_call(step: Callable[[], Any], device: str) -> tuple[Any, float]:
    """The output of ``step`` and the seconds it took, the device's work
    included: of a compiled step's first call, its compile time."""
    import torch

    start = time.perf_counter()
    out = step()
    if device == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process that runs a case: the FX graph and
    AOTAutograd caches off (every compile lowers and schedules; the kernel
    code cache stays shared) and nothing downloaded."""
    return dict(
        os.environ,
        TORCHINDUCTOR_FX_GRAPH_CACHE="0",
        TORCHINDUCTOR_AUTOGRAD_CACHE="0",
        HF_HUB_OFFLINE="1",
        **extra,
    )


# ---------------------------------------------------------------------------
# Provenance and the GPU lock


def provenance(device: str) -> dict[str, str]:
    """Where a result was measured, for the head of every results JSON: the
    device's name, the torch version, the fork revision and the command."""
    import sys

    import torch

    return {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "fork": str(getattr(torch.version, "fork", "")),
        "command": " ".join(sys.argv),
    }


@contextlib.contextmanager
def exclusive_device(lock_path: str | None) -> Iterator[None]:
    """Hold an exclusive file lock (none when ``lock_path`` is empty): processes
    running side by side on one machine compile in parallel but time one at a
    time, so no timing shares the GPU or the launching CPU with another.

    A compile holds the same lock shared (:func:`shared_device`), because its
    autotuning runs kernels on the GPU: a timing waits for the compiles under
    way, and while it waits, the turnstile (``lock_path + ".turn"``) keeps new
    ones from starting.  Without it, processes that compile one case after
    another can hold the shared lock between them indefinitely.  The H100
    sweep of 2026-11-27 timed alongside other processes' autotuning, and its
    copies of the same bytes ranged from 178 to 443 us."""
    with _device_lock(lock_path, shared=False):
        yield


@contextlib.contextmanager
def shared_device(lock_path: str | None) -> Iterator[None]:
    """A compile's hold on ``lock_path``: any number at once, none while a
    timing holds it (:func:`exclusive_device`)."""
    with _device_lock(lock_path, shared=True):
        yield


@contextlib.contextmanager
def _device_lock(lock_path: str | None, shared: bool) -> Iterator[None]:
    if not lock_path:
        yield
        return
    import fcntl

    with open(lock_path + ".turn", "a") as turn, open(lock_path, "a") as f:
        fcntl.flock(turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(f, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        finally:
            fcntl.flock(turn, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------
# Step and call times, launches


def step_timer(device: str) -> Callable[[Callable[[], Any], int], list[float]]:
    """A function timing ``repeats`` calls of ``step``, in seconds each."""
    import torch

    if device == "cuda":

        def time_steps(step: Callable[[], Any], repeats: int) -> list[float]:
            times = []
            for _ in range(repeats):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                step()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            return times

    else:

        def time_steps(step: Callable[[], Any], repeats: int) -> list[float]:
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                step()
                times.append(time.perf_counter() - start)
            return times

    return time_steps


def median_step_s(
    step: Callable[[], Any], device: str, repeats: int, warmup: int = 3
) -> float:
    """The median time of one step after ``warmup`` untimed steps."""
    import torch

    for _ in range(warmup):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    return statistics.median(step_timer(device)(step, repeats))


def call_timer(device: str) -> Callable[[Callable[[], Any]], float]:
    """A function giving the median seconds of one call of ``fn``: on a GPU
    ``triton.testing.do_bench`` (kernel-sized calls, flushed L2 between
    calls); on the CPU one untimed call, then 20 timed with ``perf_counter``."""
    if device == "cuda":
        import triton.testing

        return lambda fn: triton.testing.do_bench(fn, return_mode="median") / 1e3

    def median_s(fn: Callable[[], Any]) -> float:
        fn()
        times = []
        for _ in range(20):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return median_s


def median_call_s(
    device: str, fn: Callable[[], Any], cuda_graph: bool = False
) -> float:
    """Median seconds of ``fn`` (:func:`call_timer`); with ``cuda_graph``
    its calls are replayed from a CUDA graph
    (``triton.testing.do_bench_cudagraph``), so that the host time of an
    autograd step does not hide its kernels."""
    if device == "cuda" and cuda_graph:
        import triton.testing

        return triton.testing.do_bench_cudagraph(fn, return_mode="median") / 1e3
    return call_timer(device)(fn)


def launches_per_step(step: Callable[[], Any], device: str) -> float | None:
    """Kernels launched per step, from torch.profiler (GPU kernels only)."""
    profile = kernel_profile(step, device)
    return None if profile is None else profile["launches"]


def kernel_profile(step: Callable[[], Any], device: str) -> dict[str, float] | None:
    """Per step, from torch.profiler (GPU kernels only, memcpy and memset
    excluded): ``launches`` and ``gpu_s``, the summed kernel durations (the
    median of 3 steps; :func:`kernel_time_rounds` with one arm).

    A step whose wall time is well above ``gpu_s`` is host-bound: the GPU
    waits for launches, and fewer launches make it faster.
    """
    if device != "cuda":
        return None
    profiled = kernel_time_rounds({"step": step}, rounds=1, per_round=3)["step"]
    return {"launches": profiled["launches"], "gpu_s": profiled["gpu_s"]["median"]}


def _is_kernel(event: Any) -> bool:
    """A GPU kernel of a profiler trace: not a memcpy or memset, and not the
    device-side span of a ``record_function`` range (a user annotation,
    which covers the kernels launched inside it)."""
    from torch.autograd import DeviceType

    return (
        event.device_type == DeviceType.CUDA
        and not getattr(event, "is_user_annotation", False)
        and not event.name.startswith(("Memcpy", "Memset"))
    )


# ---------------------------------------------------------------------------
# Agreement with eager


def max_abs_diff(actual: Any, expected: Any) -> float:
    """The largest elementwise difference between two (nested) results."""
    import torch

    if isinstance(actual, (tuple, list)):
        return max((max_abs_diff(a, e) for a, e in zip(actual, expected)), default=0.0)
    if isinstance(actual, torch.Tensor) and actual.is_floating_point():
        return (actual.float() - expected.float()).abs().max().item()
    return 0.0 if torch.equal(actual, expected) else math.inf


def magnitude(expected: Any) -> float:
    """The largest |value| of a (nested) result, 1.0 for non-float results."""
    import torch

    if isinstance(expected, (tuple, list)):
        return max((magnitude(e) for e in expected), default=1.0)
    if isinstance(expected, torch.Tensor) and expected.is_floating_point():
        return expected.abs().max().item()
    return 1.0


def matches(actual: Any, expected: Any) -> tuple[bool, float]:
    """Whether a compiled result equals eager's, and the max |difference|."""
    diff = max_abs_diff(actual, expected)
    return diff <= 1e-2 * max(1.0, magnitude(expected)), diff


# ---------------------------------------------------------------------------
# Arms compared round by round


def spread_summary(round_values: list[float]) -> dict[str, Any]:
    """A figure measured in several rounds: the median of the round values,
    their spread ((max - min) / median) and the rounds themselves."""
    values = [v for v in round_values if v is not None and math.isfinite(v)]
    if not values:
        return {"median": None, "spread": None, "rounds": []}
    mid = statistics.median(values)
    spread = (max(values) - min(values)) / mid if mid > 0 else None
    return {"median": mid, "spread": spread, "rounds": values}


def interleaved_rounds(
    steps: Mapping[str, Callable[[], Any]],
    time_steps: Callable[[Callable[[], Any], int], list[float]],
    rounds: int,
    per_round: int,
    lock: str | None = None,
) -> dict[str, list[float]]:
    """The median step time of each arm in each of ``rounds`` rounds.

    A round times ``per_round`` steps of every arm, one arm after another;
    round r starts at the r-th arm of ``steps`` (a rotation), so that every
    arm takes every place in the order as often (an arm timed after a slow
    one, or first, would otherwise always be).  Each arm's block is taken
    under ``lock`` (``exclusive_device``), so processes beside this one
    compile between blocks, not during them.
    Returns ``{arm: [median of round 1, median of round 2, ...]}``.
    """
    out: dict[str, list[float]] = {arm: [] for arm in steps}
    names = list(steps)
    for r in range(max(1, rounds)):
        start = r % len(names) if names else 0
        for arm in names[start:] + names[:start]:
            step = steps[arm]
            with exclusive_device(lock):
                step()  # one untimed step: the arm's caches warm again
                out[arm].append(statistics.median(time_steps(step, per_round)))
    return out


def kernel_time_rounds(
    steps: Mapping[str, Callable[[], Any]],
    rounds: int = 3,
    per_round: int = 2,
    lock: str | None = None,
    top: int = 12,
) -> dict[str, dict[str, Any]]:
    """Per arm, the GPU kernel time of a step, from one ``torch.profiler``
    session over all arms, interleaved round by round.

    Each step runs alone inside a ``record_function`` window that ends with a
    device synchronization; the kernels (memcpy and memset excluded) that
    start inside a window are that step's (the profiler puts host and device
    events on one clock).  Per arm: ``gpu_s`` (per-round medians of the
    per-step kernel time, summarized by :func:`spread_summary`),
    ``launches`` (kernels per step), ``kernels`` (the ``top`` kernel names by
    time per step: name, launches and seconds per step) and
    ``unattributed_s`` (kernel time in the session outside every window, per
    step: should be 0).
    """
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import profile, ProfilerActivity

    windows: list[tuple[str, int, str]] = []  # (arm, round, window name)
    with exclusive_device(lock):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for r in range(max(1, rounds)):
                for arm, step in steps.items():
                    for _ in range(per_round):
                        name = f"fusion_bench_step:{len(windows)}"
                        windows.append((arm, r, name))
                        with torch.profiler.record_function(name):
                            step()
                            torch.cuda.synchronize()
    events = prof.events()
    spans = {
        e.name: (e.time_range.start, e.time_range.end)
        for e in events
        if e.name.startswith("fusion_bench_step:") and e.device_type == DeviceType.CPU
    }
    kernels = sorted(
        (
            (e.time_range.start, e.time_range.elapsed_us(), e.name)
            for e in events
            if _is_kernel(e)
        ),
    )
    ordered = sorted(
        (spans[name] + (arm, r) for arm, r, name in windows if name in spans),
    )
    per_step: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    names: dict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    unattributed = 0.0
    k = 0
    for start, end, arm, r in ordered:
        while k < len(kernels) and kernels[k][0] < start:
            unattributed += kernels[k][1]
            k += 1
        busy = 0.0
        while k < len(kernels) and kernels[k][0] <= end:
            _, us, kname = kernels[k]
            busy += us
            names[arm][kname] += us
            counts[arm][kname] += 1
            k += 1
        per_step[(arm, r)].append(busy / 1e6)
    unattributed += sum(us for _, us, _ in kernels[k:])
    total_steps = max(1, len(windows))
    result: dict[str, dict[str, Any]] = {}
    for arm in steps:
        arm_steps = max(1, sum(len(per_step[(arm, r)]) for r in range(rounds)))
        result[arm] = {
            "gpu_s": spread_summary(
                [
                    statistics.median(per_step[(arm, r)])
                    for r in range(rounds)
                    if per_step[(arm, r)]
                ]
            ),
            "launches": sum(counts[arm].values()) / arm_steps,
            "kernels": [
                {
                    "name": kname,
                    "launches": counts[arm][kname] / arm_steps,
                    "s": us / arm_steps / 1e6,
                }
                for kname, us in names[arm].most_common(top)
            ],
            "unattributed_s": unattributed / total_steps / 1e6,
        }
    return result


def capture_step(
    step: Callable[[], Any], warmup: int = 3
) -> tuple[Callable[[], Any] | None, Any, str | None]:
    """The whole ``step`` captured as one CUDA graph (``torch.cuda.graph``).

    Returns ``(replay, output, None)``: ``replay()`` launches the graph and
    returns the captured step's output (static tensors, refreshed by each
    replay).  A step that cannot be captured (a host synchronization, a CPU
    tensor, an op without capture support) gives ``(None, None, why)``.
    Warm-up steps run on a side stream first, as capture requires.
    """
    import torch

    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(warmup):
                step()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            output = step()
        torch.cuda.synchronize()
    except Exception as e:  # the reason is the result
        torch.cuda.synchronize()
        return None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"

    def replay() -> Any:
        graph.replay()
        return output

    return replay, output, None
