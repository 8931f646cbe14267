"""What a missed fusion costs: a device cost model, predicted gains, hotness.

Work in progress (issue 17).  Post-processing of a fusion report's JSON, the
way LLVM's opt-viewer reads remarks: nothing here runs during a compile.

* :class:`CostModel`: the device's copy bandwidth and the time one kernel
  launch costs, measured (:func:`measure_cost_model`) or given;
* :func:`predicted_gain`: what fusing the two kernels of one boundary would
  save: the bytes that would no longer cross memory (the consumer's read of
  the producer's buffer; the producer's write too when no other kernel reads
  it) at the copy bandwidth, and the launch of one kernel;
* :func:`annotate`: each boundary's ``predicted`` (and, given kernel times,
  each kernel's and boundary's ``hotness``) in the report's JSON.

Graph outputs are not marked in the report: a buffer that is also a graph
output is still written when fused, so the write saving is an upper bound
there.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Mapping


__all__ = ["CostModel", "annotate", "measure_cost_model", "predicted_gain"]


@dataclasses.dataclass(frozen=True)
class CostModel:
    """What memory traffic and launches cost on one device."""

    device: str
    bandwidth_bytes_per_s: float  # a device-to-device copy: bytes read + written
    launch_s: float  # one more kernel in a step
    source: str  # how the numbers were obtained

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def measure_cost_model(
    device: str, nbytes: int = 256 * 2**20, launches: int = 200, repeats: int = 9
) -> CostModel:
    """Measure the copy bandwidth (median of ``repeats`` copies of ``nbytes``)
    and the launch cost (the median time per kernel of ``launches`` tiny
    kernels issued back to back) on ``device``."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    tiny = torch.zeros(1, device=device)

    def timed(fn: Any) -> float:
        times = []
        for _ in range(repeats):
            sync()
            start = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    dst.copy_(src)
    copy_s = timed(lambda: dst.copy_(src))

    def chain() -> None:
        for _ in range(launches):
            tiny.add_(1.0)

    chain()
    launch_s = timed(chain) / launches
    return CostModel(
        device=device,
        bandwidth_bytes_per_s=2 * src.nbytes / copy_s,
        launch_s=launch_s,
        source=(
            f"measured: copy of {src.nbytes // 2**20} MiB, {launches} tiny "
            f"kernels back to back, median of {repeats}"
        ),
    )


def _readers(graph: Mapping[str, Any]) -> dict[str, set[str]]:
    """Buffer -> the kernels that read it across a dependency boundary."""
    readers: dict[str, set[str]] = {}
    for b in graph.get("boundaries", []):
        buffer = (b.get("args") or {}).get("buffer")
        if b.get("relation") == "dependency" and buffer and len(b["kernels"]) == 2:
            readers.setdefault(buffer, set()).add(b["kernels"][1])
    return readers


def predicted_gain(
    boundary: Mapping[str, Any],
    graph: Mapping[str, Any],
    model: CostModel,
    readers: Mapping[str, set[str]] | None = None,
) -> dict[str, Any]:
    """What fusing the two kernels of ``boundary`` would save, predicted.

    ``bytes_saved``: for a dependency, the consumer's read of the producer's
    buffer, and the producer's write when the consumer's kernel is the only
    one reading it; for a shared input, one read of the input.
    ``launches_saved``: 1 when both sides are generated kernels of different
    generated functions (two launches become one), else 0 (a library kernel
    stays a call of its own; loop nests of one C++ function launch nothing
    apart).
    ``gain_s``: bytes over the copy bandwidth plus launches times the launch
    cost.  ``None`` fields where the report does not price the boundary.
    """
    readers = _readers(graph) if readers is None else readers
    kinds = {k["name"]: k["kind"] for k in graph.get("kernels", [])}
    functions = {k["name"]: k.get("function") for k in graph.get("kernels", [])}
    args = boundary.get("args") or {}
    size = args.get("bytes")
    producer_kernel, consumer_kernel = [*boundary.get("kernels", []), None, None][:2]
    generated = all(
        kinds.get(k) not in (None, "extern", "fallback")
        for k in (producer_kernel, consumer_kernel)
    )
    # Loop nests of one generated function (the C++ backend's) launch nothing
    # apart: fusing them saves memory traffic only.
    same_function = functions.get(producer_kernel) is not None and functions.get(
        producer_kernel
    ) == functions.get(consumer_kernel)
    launches = 1 if generated and not same_function else 0
    if size is None:
        read = write = None
    elif boundary.get("relation") == "dependency":
        read = int(size)
        only_reader = readers.get(args.get("buffer"), set()) <= {consumer_kernel}
        write = int(size) if only_reader else 0
    else:
        read, write = int(size), 0
    saved = None if read is None else read + (write or 0)
    gain = launches * model.launch_s + (
        saved / model.bandwidth_bytes_per_s if saved else 0.0
    )
    return {
        "bytes_saved": saved,
        "read_saved": read,
        "write_saved": write,
        "launches_saved": launches,
        "gain_s": gain,
    }


def annotate(
    data: dict[str, Any],
    model: CostModel,
    kernel_seconds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Give every boundary of a report's JSON its ``predicted`` gain and, with
    ``kernel_seconds`` (generated function or kernel name -> seconds per
    step, e.g. from a profiler), every kernel and boundary its ``hotness``:
    the kernel's time, and the two kernels' times of a boundary.  Returns
    ``data`` (changed in place) with the cost model under ``cost_model``."""
    data["cost_model"] = model.to_json()
    for graph in data.get("graphs", []):
        readers = _readers(graph)
        # A kernel's time is its generated function's (loop nests of one C++
        # function share it); a boundary's, that of the distinct functions on
        # its two sides.
        timed_as: dict[str, str] = {}
        for kernel in graph.get("kernels", []):
            if kernel_seconds is None:
                continue
            timed_as[kernel["name"]] = kernel.get("function") or kernel["name"]
            kernel["hotness_s"] = kernel_seconds.get(timed_as[kernel["name"]])
        for b in graph.get("boundaries", []):
            b["predicted"] = predicted_gain(b, graph, model, readers)
            if kernel_seconds is not None:
                names = {timed_as[k] for k in b.get("kernels", []) if k in timed_as}
                known = [kernel_seconds[n] for n in names if n in kernel_seconds]
                b["hotness_s"] = sum(known) if known else None
    return data
