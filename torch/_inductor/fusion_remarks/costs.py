"""What a missed fusion costs: a cost model, predicted gains, hotness.

Prices the boundaries of a graph report's JSON, the way XLA's priority fusion
attaches a predicted time to each decision and LLVM's remarks carry hotness:

* :class:`CostModel`: a device's copy bandwidth and the time one kernel
  launch costs, as ``config.fusion_cost_model`` gives them
  (:func:`cost_model_for`);
* :func:`predicted_gain`: what fusing the two kernels of one boundary would
  save: the bytes that would no longer cross memory (the consumer's read of
  the producer's buffer; the producer's write too when no other kernel reads
  it) at the copy bandwidth, and the launch of one kernel; nothing, and no
  time, where one side is a library call (:func:`library_side`);
* :func:`price`: every boundary's ``predicted`` gain in one graph's JSON, at
  the cost model ``config.fusion_cost_model`` names; the sinks call it for
  every published graph, so the JSON, the ``+fusion`` log and the pages show it;
* :func:`annotate`: with kernel times measured by a profiler, each kernel's and
  boundary's ``hotness_s``, joined by generated function name.

Nothing here times a device: what the compile records is priced from given
numbers only.  ``"measure"``, the default, leaves the time out
(:func:`awaits_measurement`); the fusion viewer's ``fusion_viewer.costs``
measures the device where the report is read, once per process, and prices
the report from its JSON.  Nothing here runs unless a report is being built,
and nothing changes what Inductor generates.  Graph outputs are not marked in
the report: a buffer that is also a graph output is still written when fused,
so the write saving is an upper bound there.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Mapping


__all__ = [
    "AWAITS_MEASUREMENT",
    "CostModel",
    "annotate",
    "awaits_measurement",
    "cost_model_for",
    "library_side",
    "predicted_gain",
    "price",
]


@dataclasses.dataclass(frozen=True)
class CostModel:
    """What memory traffic and launches cost on one device.

    ``bandwidth_bytes_per_s`` and ``launch_s`` are None where the model does
    not price time (``config.fusion_cost_model = "off"``, a model that awaits
    its measurement, or one that could not be measured: ``source`` says
    why)."""

    device: str
    bandwidth_bytes_per_s: float | None  # a copy: bytes read + written per second
    launch_s: float | None  # one more kernel launch in a step
    source: str  # how the numbers were obtained

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# The source of the model config.fusion_cost_model = "measure" names: no
# device is timed during a compile; the report's reader measures the device
# once and prices the report from its JSON (fusion_viewer.costs.price_measured).
AWAITS_MEASUREMENT = "to be measured"


def awaits_measurement(cost_model: Mapping[str, Any] | None) -> bool:
    """Whether a graph's ``cost_model`` (JSON) awaits the device's
    measurement: the report was captured under ``"measure"`` and not priced
    since."""
    source = (cost_model or {}).get("source")
    return isinstance(source, str) and source.startswith(AWAITS_MEASUREMENT)


def cost_model_for(device: str, spec: str | None = None) -> CostModel:
    """The cost model that ``spec`` (default: ``config.fusion_cost_model``)
    names for ``device``.  Never raises, and never times the device: a bad
    spec gives a model without time whose ``source`` says why, and
    ``"measure"`` one without time that :func:`awaits_measurement`."""
    from torch._inductor import config, fusion_switches

    raw = config.fusion_cost_model if spec is None else spec
    try:
        value = fusion_switches.parse_cost_model("config.fusion_cost_model", raw)
    except ValueError as e:
        return CostModel(device, None, None, f"not priced: {e}")
    value = value or "measure"
    if value == "off":
        return CostModel(device, None, None, "off (config.fusion_cost_model)")
    if value == "measure":
        return CostModel(
            device,
            None,
            None,
            f"{AWAITS_MEASUREMENT} where the report is read "
            "(config.fusion_cost_model='measure'): bytes and launches only "
            "until fusion_viewer.costs.price_measured prices it",
        )
    gbps, us = (float(x) for x in value.split(","))
    return CostModel(
        device, gbps * 1e9, us * 1e-6, f"given: {value} (config.fusion_cost_model)"
    )


# Reasons that fire only where the two sides share no memory access at the
# same index (see predicted_gain).
_NO_COMMON_ACCESS = frozenset({"no_shared_data", "indexing_mismatch"})
# Kernel kinds that are library calls: Inductor generates no code for them,
# so nothing can be fused into them (a template, e.g. under max-autotune, is
# generated and can take epilogues: it is not one of these).
_LIBRARY_KINDS = frozenset({"extern", "fallback"})
# Reasons recorded where one side of a boundary is such a call, for a
# boundary whose kernels' kinds are not in the report.
_LIBRARY_REASONS = frozenset({"extern_kernel", "fallback_kernel", "extern_input"})


def library_side(boundary: Mapping[str, Any], kinds: Mapping[str, str]) -> str | None:
    """The library call (extern or fallback kernel) on either side of
    ``boundary``, or None: such a call reads its inputs from memory and writes
    its output there whatever Inductor fuses, so no fusion removes the
    boundary.  ``kinds``: kernel name -> kind, of the boundary's graph."""
    for kernel in boundary.get("kernels") or []:
        if kinds.get(kernel) in _LIBRARY_KINDS:
            return str(kernel)
    if boundary.get("reason") in _LIBRARY_REASONS:
        return str(boundary.get("reason"))
    return None


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
    one reading it; for a shared input, one read of the input.  None where
    the boundary's reason says the two kernels share no access: upstream's
    ``no_shared_data`` and ``indexing_mismatch`` fire when
    ``Scheduler.score_fusion_memory`` (its own estimate of the memory
    operations a fusion saves) is 0, i.e. no buffer is read or written at the
    same index on both sides.  Fused, each side would still load its own
    elements (a buffer named on both sides is read at different places), so
    only the launch is saved; ``note`` says so.
    ``launches_saved``: 1 when both sides are generated kernels of different
    generated functions (two launches become one), else 0 (a library kernel
    stays a call of its own; loop nests of one C++ function launch nothing
    apart).
    ``gain_s``: bytes over the copy bandwidth plus launches times the launch
    cost; None where the model prices no time.  ``None`` byte fields where
    the report has no size for the buffer.

    A boundary with a library call on one side (:func:`library_side`: a conv
    or matmul run as an extern kernel and the batch norm or ReLU after it)
    saves nothing, and its ``gain_s`` is None whatever the model: the call
    writes its output and reads its inputs in memory however the generated
    code around it is fused, so pricing its buffer would predict a gain no
    fusion can give; ``note`` says so.
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
    library = library_side(boundary, kinds)
    if library is not None:
        return {
            "bytes_saved": 0,
            "read_saved": 0,
            "write_saved": 0,
            "launches_saved": 0,
            "gain_s": None,
            "note": f"no fusion can remove this boundary: {library} is a "
            "library call, which reads its inputs and writes its output in "
            "memory whatever Inductor fuses around it",
        }
    note = None
    if boundary.get("reason") in _NO_COMMON_ACCESS:
        read = write = 0
        note = (
            f"{boundary['reason']}: no buffer is accessed at the same index on "
            "both sides (upstream's score_fusion_memory is 0), so fused, each "
            "side still moves its own bytes"
        )
    elif size is None:
        read = write = None
    elif boundary.get("relation") == "dependency":
        read = int(size)
        only_reader = readers.get(args.get("buffer"), set()) <= {consumer_kernel}
        write = int(size) if only_reader else 0
    else:
        read, write = int(size), 0
    saved = None if read is None else read + (write or 0)
    gain = None
    if model.bandwidth_bytes_per_s and model.launch_s is not None:
        gain = launches * model.launch_s + (
            saved / model.bandwidth_bytes_per_s if saved else 0.0
        )
    out: dict[str, Any] = {
        "bytes_saved": saved,
        "read_saved": read,
        "write_saved": write,
        "launches_saved": launches,
        "gain_s": gain,
    }
    if note:
        out["note"] = note
    return out


def price(graph: dict[str, Any], model: CostModel | None = None) -> dict[str, Any]:
    """Give each boundary of one graph's JSON its ``predicted`` gain, and the
    graph its ``cost_model`` (default: :func:`cost_model_for` its device).
    Returns ``graph``, changed in place."""
    if model is None:
        model = cost_model_for(str(graph.get("device") or "cpu"))
    graph["cost_model"] = model.to_json()
    readers = _readers(graph)
    for b in graph.get("boundaries", []):
        b["predicted"] = predicted_gain(b, graph, model, readers)
    return graph


def annotate(
    data: dict[str, Any],
    model: CostModel,
    kernel_seconds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Give every boundary of a report's JSON its ``predicted`` gain and, with
    ``kernel_seconds`` (generated function or kernel name -> seconds per
    step, e.g. from a profiler), every kernel and boundary its ``hotness``:
    the kernel's time, and the two kernels' times of a boundary.  Returns
    ``data`` (changed in place); each graph's ``cost_model`` is ``model``."""
    for graph in data.get("graphs", []):
        price(graph, model)
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
            if kernel_seconds is not None:
                names = {timed_as[k] for k in b.get("kernels", []) if k in timed_as}
                known = [kernel_seconds[n] for n in names if n in kernel_seconds]
                b["hotness_s"] = sum(known) if known else None
    return data
