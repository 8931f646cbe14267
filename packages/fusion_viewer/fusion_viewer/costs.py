"""The device's cost model, measured where a fusion report is read.

torch prices each boundary of a report from a cost model it is given
(``config.fusion_cost_model``; :mod:`torch._inductor.fusion_remarks.costs`)
and times no device during a compile.  Under ``"measure"``, the default, a
report leaves the time out and says so (``costs.awaits_measurement``); this
module measures the device and prices such a report from its JSON:

* :func:`measure_cost_model`: the copy bandwidth and the cost of one kernel
  launch, timed on the device;
* :func:`measured_cost_model`: the same at a small size, measured once per
  process and device and never raising, what :func:`price_measured` uses;
* :func:`price_measured`: every graph of a report that awaits its
  measurement, priced at its device's measured model.

The pricing itself (``CostModel``, ``predicted_gain``, ``price``,
``annotate``) is torch's, re-exported here so that a reader needs one import.
It runs on the machine that compiled the report (the fusible check, the
study): measuring elsewhere would price one device's report at another's
numbers.
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any, TYPE_CHECKING

from torch._inductor.fusion_remarks.costs import (
    annotate,
    awaits_measurement,
    CostModel,
    predicted_gain,
    price,
)


if TYPE_CHECKING:
    from collections.abc import Callable


__all__ = [
    "CostModel",
    "annotate",
    "measure_cost_model",
    "measured_cost_model",
    "predicted_gain",
    "price",
    "price_measured",
]

log = logging.getLogger(__name__)


def _synchronizer(device: str) -> Callable[[], None] | None:
    import torch

    if device == "cpu":
        return lambda: None
    if device == "cuda":
        return torch.cuda.synchronize
    module = getattr(torch, device, None)
    return getattr(module, "synchronize", None)


def measure_cost_model(
    device: str,
    nbytes: int = 256 * 2**20,
    copies: int = 4,
    launches: int = 200,
    repeats: int = 5,
    in_cuda_graph: bool = False,
) -> CostModel:
    """Measure ``device``'s copy bandwidth (``copies`` back-to-back copies of
    ``nbytes``, the median of ``repeats``) and its launch cost: the time per
    kernel of ``launches`` one-element kernels issued back to back.  Issued
    from the stream, that is the host's launch rate, what a fused launch saves
    where a step is launch-bound; with ``in_cuda_graph`` the kernels are
    replayed from one CUDA graph, and it is what one more kernel costs the
    GPU itself (the gap and ramp between kernels), what a fusion saves in GPU
    time under CUDA graphs."""
    import torch
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    sync = _synchronizer(device)
    if sync is None:
        raise RuntimeError(f"no way to synchronize device {device!r}")
    with unset_fake_temporarily(), torch.no_grad():
        src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        dst = torch.empty_like(src)
        tiny = torch.zeros(1, device=device)

        def timed(fn: Callable[[], None]) -> float:
            fn()
            times = []
            for _ in range(repeats):
                sync()
                start = time.perf_counter()
                fn()
                sync()
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        def copy() -> None:
            for _ in range(copies):
                dst.copy_(src)

        def chain() -> None:
            for _ in range(launches):
                tiny.add_(1.0)

        copy_s = timed(copy) / copies
        how = "back to back"
        if in_cuda_graph and device == "cuda":
            chain()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                chain()
            launch_s = timed(graph.replay) / launches
            how = "replayed from one CUDA graph"
        else:
            launch_s = timed(chain) / launches
    return CostModel(
        device=device,
        bandwidth_bytes_per_s=2 * (nbytes // 4 * 4) / copy_s,
        launch_s=launch_s,
        source=(
            f"measured: {copies} copies of {nbytes // 2**20} MiB and {launches} "
            f"one-element kernels {how}, median of {repeats}"
        ),
    )


# What a reader's measurement moves: enough to reach a device's bandwidth
# (tens of microseconds of copying on a GPU) and little enough to take
# milliseconds.  (The sizes the compile-time measurement had, so that a report
# priced here reads as one priced in the compile did.)
_READER_BYTES = {"cpu": 16 * 2**20}
_DEFAULT_READER_BYTES = 64 * 2**20

# device -> the model measured in this process (measured once: every report
# of a process priced at one model)
_measured: dict[str, CostModel] = {}


def _in_stream_capture(device: str) -> bool:
    import torch

    return device == "cuda" and torch.cuda.is_current_stream_capturing()


def measured_cost_model(device: str) -> CostModel:
    """``device``'s cost model, measured the first time this process asks.

    Never raises: a failed measurement gives a model without time whose
    ``source`` says why (kept: it is not tried again); inside a CUDA stream
    capture nothing is measured (not kept: asked again later, it measures)."""
    if device in _measured:
        return _measured[device]
    if _in_stream_capture(device):
        return CostModel(device, None, None, "not measured: the stream is capturing")
    try:
        model = measure_cost_model(
            device,
            nbytes=_READER_BYTES.get(device, _DEFAULT_READER_BYTES),
            copies=2 if device == "cpu" else 8,
        )
    except Exception as e:
        log.warning(
            "fusion viewer: could not measure a cost model on %s: %s", device, e
        )
        model = CostModel(device, None, None, f"not measured: {type(e).__name__}: {e}")
    _measured[device] = model
    return model


def price_measured(
    data: dict[str, Any], model: CostModel | None = None
) -> dict[str, Any]:
    """Price every graph of a report's JSON that awaits its measurement
    (captured under ``config.fusion_cost_model = "measure"``) at ``model``,
    or at its device's :func:`measured_cost_model`.  Graphs priced at a given
    model are left as they are.  Returns ``data``, changed in place."""
    for graph in data.get("graphs", []):
        if awaits_measurement(graph.get("cost_model")):
            device = str(graph.get("device") or "cpu")
            price(graph, model if model is not None else measured_cost_model(device))
    return data
