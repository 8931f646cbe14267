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

The pages, pictures and diffs of reports are the fusion viewer's, a package
of its own outside torch that reads only the report's JSON (torch never
imports it): ``pip install ./packages/fusion_viewer`` from the repository,
then ``fusion_viewer.page.save_html(rep, "report.html")`` for a capture of this
process, ``python -m fusion_viewer render IN -o OUT.html`` for a saved one (a
capture's JSON file or a ``TORCH_TRACE`` directory), ``python -m
fusion_viewer diff A B [-o OUT.html]`` and ``python -m fusion_viewer study
DIR``.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import torch

from .fusion_remarks import recorder as rec, summary as text_summary
from .fusion_remarks.model import GraphBreak
from .fusion_remarks.sinks import SCHEMA_VERSION
from .fusion_remarks.taxonomy import Category, Reason, reasons_table


__all__ = [
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "FusionCapture",
    "capture",
    "reasons_table",
    "validate",
]

# The JSON Schema (draft 2020-12) of ``FusionCapture.to_json()``.
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "fusion_report_schema.json")


class FusionCapture:
    """The fusion reports of every graph compiled while it is active."""

    def __init__(self) -> None:
        self.graphs: list[dict[str, Any]] = []
        self.graph_breaks: list[GraphBreak] = []
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
        rec.captures().append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in rec.captures():
            rec.captures().remove(self)
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "producer": rec.producer_identity(),
            "reasons": reasons_table(),
            "graphs": [dict(g) for g in self.graphs],
            "graph_breaks": [
                b.to_json([g["compile_id"] for g in self.graphs])
                for b in self.graph_breaks
            ],
        }

    def summary(self) -> str:
        return text_summary.render_with_graphs(
            self.graphs, self.graph_breaks, render_graph
        )


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
    except ImportError:
        raise ImportError(
            "fusion_report.validate() needs the jsonschema package: pip install "
            "jsonschema"
        ) from None
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


def render_graph(graph: dict[str, Any], evaluated_pairs: bool = False) -> str:
    """The readable per-graph summary the ``fusion`` log prints; with
    ``evaluated_pairs``, what ``TORCH_LOGS=+fusion`` adds: each pair the
    scheduler evaluated, once."""
    summary = text_summary.render_graph(graph)
    if evaluated_pairs:
        summary += "\n" + text_summary.render_evaluated_pairs(graph)
    return summary


def category_of(code: str) -> Category:
    return Reason(code).category
