"""Measurements shared by the fusion benchmarks (ablation, study).

One method per quantity, so every arm of a comparison is measured alike:

* step time: CUDA events around each whole step on a GPU (launch overhead
  included, as a user sees it), ``time.perf_counter`` on the CPU; warm-up
  excluded, the median reported;
* kernel launches per step: GPU kernels in a ``torch.profiler`` trace
  (memcpy and memset excluded); ``None`` on the CPU, which launches none;
* agreement with eager: max |difference| against a tolerance scaled by the
  reference's magnitude;
* provenance: the device, torch, fork revision and command of a result;
* one timing at a time: processes side by side on one GPU machine compile in
  parallel and take their timings under one file lock (``exclusive_device``).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


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
    time, so no timing shares the GPU or the launching CPU with another."""
    if not lock_path:
        yield
        return
    import fcntl

    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


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


def launches_per_step(step: Callable[[], Any], device: str) -> float | None:
    """Kernels launched per step, from torch.profiler (GPU kernels only)."""
    profile = kernel_profile(step, device)
    return None if profile is None else profile["launches"]


def kernel_profile(step: Callable[[], Any], device: str) -> dict[str, float] | None:
    """Per step, from torch.profiler (GPU kernels only, memcpy and memset
    excluded): ``launches`` and ``gpu_s``, the summed kernel durations.

    A step whose wall time is well above ``gpu_s`` is host-bound: the GPU
    waits for launches, and fewer launches make it faster.
    """
    if device != "cuda":
        return None
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import profile, ProfilerActivity

    steps = 3
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kernels = [
        e
        for e in prof.events()
        if e.device_type == DeviceType.CUDA
        and not e.name.startswith(("Memcpy", "Memset"))
    ]
    busy_us = sum(e.time_range.elapsed_us() for e in kernels)
    return {"launches": len(kernels) / steps, "gpu_s": busy_us / steps / 1e6}


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
