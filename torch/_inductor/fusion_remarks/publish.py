"""From a graph's records to its published report: analyse, then publish.

The hooks (:mod:`.hooks`) only record what the rules decided while a graph is
lowered, scheduled and generated.  When its code is generated, and someone
listens (a ``fusion_report.capture()``, the ``fusion`` log or
``TORCH_TRACE``), the hooks hand the graph's records here: the analysis
(:mod:`.analysis`) classifies the refused pairs and gives every kernel
boundary its reason, and the sinks (:mod:`.sinks`) publish the report.  On an
FX graph cache hit the report stored with the cache entry is published again.
This module is loaded only then, so that importing a patched upstream module
loads the taxonomy, the records and the hooks alone.
"""

from __future__ import annotations

import copy
from typing import Any

from . import analysis, recorder as rec, sinks
from .recorder import fusion_log
from .taxonomy import Reason


def graph_generated(recorder: rec.GraphRecorder) -> None:
    """Analyse and publish a compiled graph from its records (its final
    kernel map, copied when its code was generated)."""
    report = analysis.analyze_graph(recorder.kernel_map, recorder, recorder.label)
    report["generated_kernel_count"] = recorder.generated_kernels
    # the invariant checked on every graph; the log says when it does not hold
    violations = analysis.coverage_violations(report)
    if violations:
        report["coverage_violations"] = violations
    report["remarks"].extend(r.to_json() for r in recorder.pending)
    label = report["compile_id"]
    report["remarks"].extend(r.to_json() for r in rec.graph_remarks(label))
    sinks.publish(report)
    recorder.published = report


def replay_cached(compiled: Any) -> None:
    """Publish again the report stored with an FX graph cache entry
    (``compiled``, the loaded ``CompiledFxGraph``), under this compile's id;
    an entry written with the remarks off says how to explain the graph."""
    from torch._guards import CompileContext

    compile_id = CompileContext.current_compile_id()
    label = str(compile_id) if compile_id is not None else "<no compile id>"
    stored = getattr(compiled, "fusion_report", None)
    if stored is None:
        fusion_log.info(
            "graph %s: loaded from Inductor's FX graph cache (key %s), whose entry was "
            "written with fusion remarks off: %s. To explain it, compile it again "
            "with TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 or inside "
            "torch._inductor.fusion_report.capture().",
            label,
            getattr(compiled, "cache_key", "?"),
            Reason.CACHE_HIT_WITHOUT_REMARKS.value,
        )
        return
    report = copy.deepcopy(stored)
    if str(stored.get("compile_id", "")).endswith(" backward"):
        label += " backward"
    report["compiled_as"] = stored.get("compile_id")
    report["compile_id"] = label
    report["remarks"] = [
        dict(r, graph=label) if r.get("graph") else r for r in report["remarks"]
    ]
    sinks.publish(report, cache="replayed")
