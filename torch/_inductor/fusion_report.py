"""Fusion reports: which ops Inductor fused, which it left apart, and why.

Capture the reports of everything compiled inside a ``with`` block::

    from torch._inductor import fusion_report

    with fusion_report.capture() as rep:
        torch.compile(fn)(*args)
    data = rep.to_json()  # plain JSON-serializable dict
    print(rep.summary())

``data["graphs"]`` has one entry per compiled graph (forward and backward
apart); see :data:`SCHEMA_VERSION` and ``docs/source/torch.compiler_fusion_remarks.md``
for the fields, and :func:`validate` to check a document against the JSON
Schema at :data:`SCHEMA_PATH`.  While a capture is active, Inductor's FX graph cache and
AOTAutograd's cache are bypassed, because a cache hit skips the scheduler
whose decisions the report explains; each graph records that in ``cache``.

The same per-graph summary goes to the ``fusion`` log artifact
(``TORCH_LOGS=fusion``), and the JSON to a ``TORCH_TRACE`` artifact named
``inductor_fusion_remarks``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from typing import Any

import torch
import torch._logging

from . import fusion_graph_breaks, fusion_remarks
from .fusion_remarks import Category, REASON_INFO, Reason


__all__ = [
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "FusionCapture",
    "capture",
    "reasons_table",
    "validate",
]

# 2: top-level ``graph_breaks``; boundaries' ``args`` carry ``bytes`` and the
# refused pair's ``producer_nodes``/``consumer_nodes``; ``fusible_check``.
SCHEMA_VERSION = 2
# The JSON Schema (draft 2020-12) of ``FusionCapture.to_json()``.
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "fusion_report_schema.json")


def reasons_table() -> dict[str, dict[str, str]]:
    """The taxonomy as JSON: ``{code: {"category": ..., "description": ...}}``."""
    return {
        reason.value: {"category": category.value, "description": description}
        for reason, (category, description) in REASON_INFO.items()
    }


class FusionCapture:
    """The fusion reports of every graph compiled while it is active."""

    def __init__(self) -> None:
        self.graphs: list[dict[str, Any]] = []
        self.graph_breaks: list[fusion_graph_breaks.GraphBreak] = []
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> FusionCapture:
        stack = contextlib.ExitStack()
        # A cache hit skips lowering and scheduling: bypass the caches so that
        # every graph compiled in the block is explained.
        stack.enter_context(
            torch._inductor.config.patch(
                fx_graph_cache=False, fx_graph_remote_cache=False
            )
        )
        stack.enter_context(
            torch._functorch.config.patch(
                enable_autograd_cache=False, enable_remote_autograd_cache=False
            )
        )
        self._stack = stack
        fusion_remarks._captures.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in fusion_remarks._captures:
            fusion_remarks._captures.remove(self)
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "producer": fusion_remarks.producer_identity(),
            "reasons": reasons_table(),
            "graphs": [dict(g) for g in self.graphs],
            "graph_breaks": [
                b.to_json([g["compile_id"] for g in self.graphs])
                for b in self.graph_breaks
            ],
        }

    def summary(self) -> str:
        return fusion_graph_breaks.render_with_graphs(
            self.graphs, self.graph_breaks, render_graph
        )

    def save_html(self, path: str | os.PathLike[str]) -> None:
        """Write the self-contained HTML page of this capture (see fusion_html)."""
        from . import fusion_html

        fusion_html.save_html(self.to_json(), path)


def capture() -> FusionCapture:
    """Capture the fusion reports of the graphs compiled inside ``with``."""
    return FusionCapture()


def validate(data: dict[str, Any]) -> None:
    """Check a ``to_json()`` document against :data:`SCHEMA_PATH`.

    Raises ``ValueError`` listing every violation as ``path: message``; needs
    the ``jsonschema`` package.
    """
    try:
        import jsonschema
    except ImportError as e:
        raise ImportError(
            "fusion_report.validate() needs the jsonschema package: "
            "pip install jsonschema (its pinned version is in requirements.txt)"
        ) from e
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(data),
        key=lambda e: [(isinstance(p, str), p) for p in e.absolute_path],
    )
    if errors:
        lines = [f"  {e.json_path}: {_error_message(e)}" for e in errors]
        raise ValueError(
            f"not a valid fusion report (schema version {SCHEMA_VERSION}, "
            f"{SCHEMA_PATH}): {len(errors)} violation(s)\n" + "\n".join(lines)
        )


def _error_message(error: Any) -> str:
    # An enum of every reason code would bury the message; name the bad value.
    if error.validator == "enum" and len(error.validator_value) > 8:
        return (
            f"{error.instance!r} is not one of the "
            f"{len(error.validator_value)} allowed values"
        )
    return error.message


def publish(graph: dict[str, Any], cache: str | None = None) -> None:
    """Hand one analysed graph to the captures, the fusion log and TORCH_TRACE.

    ``cache`` says where the graph came from: ``"replayed"`` from an FX graph
    cache entry; by default ``"bypassed"`` under a capture (which turns the
    caches off), else ``"miss"`` (compiled, whether or not a cache was on).
    """
    if cache is None:
        cache = "bypassed" if fusion_remarks._captures else "miss"
    graph["cache"] = cache
    reason = {
        "bypassed": Reason.CACHE_BYPASSED,
        "replayed": Reason.CACHE_REPLAYED,
    }.get(cache)
    if reason is not None:
        graph["remarks"].append(
            fusion_remarks.Remark(
                fusion_remarks.Kind.ANALYSIS,
                reason,
                fusion_remarks.Stage.CACHE,
                detail=(
                    f"compiled as graph {graph.get('compiled_as')}"
                    if cache == "replayed"
                    else "fx_graph_cache and autograd_cache off while capturing"
                ),
                graph=graph["compile_id"],
            ).to_json()
        )
    for active in fusion_remarks._captures:
        active.graphs.append(graph)
    fusion_graph_breaks.note_published(graph)
    if fusion_remarks.fusion_log.isEnabledFor(logging.DEBUG):
        fusion_remarks.fusion_log.debug(
            "%s", render_graph(graph, evaluated_pairs=verbose_log_requested())
        )
    torch._logging.trace_structured(
        "artifact",
        metadata_fn=lambda: {
            "name": "inductor_fusion_remarks",
            "encoding": "json",
        },
        payload_fn=lambda: json.dumps(
            {"schema_version": SCHEMA_VERSION, "graph": graph}, default=str
        ),
    )


def _short_source(source: str | None) -> str:
    if not source:
        return ""
    filename, _, line = source.rpartition(":")
    return f"{filename.rsplit('/', 1)[-1]}:{line}"


def verbose_log_requested() -> bool:
    """``TORCH_LOGS=+fusion``: torch._logging ignores '+' on artifacts, so read it here."""
    return bool(
        re.search(r"(^|,)\s*\+fusion\s*(,|$)", os.environ.get("TORCH_LOGS", ""))
    )


def render_graph(graph: dict[str, Any], evaluated_pairs: bool = False) -> str:
    """The readable per-graph summary (the ``fusion`` log prints this).

    With ``evaluated_pairs``, every pair the scheduler evaluated follows.
    """
    ops = {op["name"]: op for op in graph["ops"]}
    computing = [op for op in graph["ops"] if op["computes"]]
    kernels = graph["kernels"]
    generated = [k for k in kernels if k["kind"] not in ("extern", "fallback")]
    replayed = (
        f", replayed from the FX graph cache (compiled as {graph.get('compiled_as')})"
        if graph.get("cache") == "replayed"
        else ""
    )
    lines = [
        f"graph {graph['compile_id']} ({graph['device']}{replayed}): "
        f"{len(computing)} ops -> "
        f"{len(kernels)} kernels ({len(generated)} generated, "
        f"{len(kernels) - len(generated)} extern)"
    ]
    for kernel in kernels:
        names = [n for n in kernel["ops"] if ops.get(n, {}).get("computes")]
        sources = sorted(
            {_short_source(ops[n]["source"]) for n in names if ops[n].get("source")}
        )
        where = f"  [{', '.join(sources)}]" if sources else ""
        state = "fused" if len(names) > 1 else "alone"
        function = kernel.get("function")
        named = f" = {function}" if function and function != kernel["name"] else ""
        lines.append(
            f"  kernel {kernel['name']}{named} ({kernel['kind']}, {state}): "
            f"{', '.join(names) or '-'}{where}"
        )
    passes = [r for r in graph["remarks"] if r["stage"] == "fx_pass"]
    if passes:
        lines.append(
            "  fx passes: "
            + "; ".join(
                r["detail"]
                + (
                    f", {r['args']['matches']} matches"
                    if "matches" in r["args"]
                    else ""
                )
                for r in passes
            )
        )
    held = [r for r in graph["remarks"] if r["reason"] == "config_held_off"]
    if held:
        switches = sorted({r["args"]["switch"] for r in held})
        lines.append(
            f"  held off by config.{' and config.'.join(switches)}: "
            + ", ".join(f"{r['args']['option']}={r['args']['value']!r}" for r in held)
        )
    boundaries = graph["boundaries"]
    if boundaries:
        lines.append(f"  {len(boundaries)} boundaries:")
    for b in boundaries:
        arrow = "->" if b["relation"] == "dependency" else "||"
        sources = [
            _short_source(ops.get(n, {}).get("source"))
            for n in (b["producer"], b["consumer"])
        ]
        where = " / ".join(s for s in sources if s)
        lines.append(
            f"    {b['producer']} {arrow} {b['consumer']}: {b['reason']} "
            f"({b['category']}, {b['stage']})"
            + (f" [{where}]" if where else "")
            + (f": {b['detail']}" if b["detail"] else "")
        )
    for op in computing:
        if op.get("eliminated"):
            lines.append(f"  {op['name']}: no kernel ({op['eliminated']})")
    if evaluated_pairs:
        pairs = graph.get("evaluated_pairs", [])
        lines.append(f"  {len(pairs)} evaluated pairs:")
        for pair in pairs:
            verdict = "fused" if pair["fused"] else f"rejected, {pair['reason']}"
            detail = f": {pair['detail']}" if pair["detail"] else ""
            lines.append(f"    {pair['first']} + {pair['second']}: {verdict}{detail}")
    return "\n".join(lines)


def category_of(code: str) -> Category:
    return Reason(code).category
