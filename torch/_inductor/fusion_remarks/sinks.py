"""The sinks: where an analysed graph report goes.

The active ``fusion_report.capture()`` blocks, the ``fusion`` log artifact
(rendered as text) and ``TORCH_TRACE``: per graph the structured artifact
``inductor_fusion_remarks`` (the graph's JSON, which the fusion viewer reads
back) and beside it ``inductor_fusion_summary`` (the log's text summary with
the costs and the evaluated pairs), which tlparse shows as a text file.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import torch._logging

from . import costs, graph_breaks, recorder as rec
from .model import Remark
from .summary import render_evaluated_pairs, render_graph
from .taxonomy import Kind, Reason, Stage


# 2: top-level ``graph_breaks``; boundaries' ``args`` carry ``bytes`` and the
# refused pair's ``producer_nodes``/``consumer_nodes``; ``fusible_check``.
# 3: each graph's ``cost_model`` and each boundary's ``predicted`` gain.
# 4: boundaries are memory crossings: each graph's ``crossings``; a dependency
# boundary's ``buffer``, ``producer_ops`` and ``consumer_ops``.
SCHEMA_VERSION = 4


def publish(graph: dict[str, Any], cache: str | None = None) -> None:
    """Hand one analysed graph to the captures, the fusion log and TORCH_TRACE.

    ``cache`` says where the graph came from: ``"replayed"`` from an FX graph
    cache entry; by default ``"bypassed"`` under a capture (which turns the
    caches off), else ``"miss"`` (compiled, whether or not a cache was on).
    """
    if cache is None:
        cache = "bypassed" if rec.captures() else "miss"
    graph["cache"] = cache
    reason = {
        "bypassed": Reason.CACHE_BYPASSED,
        "replayed": Reason.CACHE_REPLAYED,
    }.get(cache)
    if reason is not None:
        graph["remarks"].append(
            Remark(
                Kind.ANALYSIS,
                reason,
                Stage.CACHE,
                detail=(
                    f"compiled as graph {graph.get('compiled_as')}"
                    if cache == "replayed"
                    else "fx_graph_cache and autograd_cache off while capturing"
                ),
                graph=graph["compile_id"],
            ).to_json()
        )
    # (a replayed graph is priced again: the cost model is this process's)
    costs.price(graph)
    for active in rec.captures():
        active.graphs.append(graph)
    graph_breaks.note_published(graph)
    # (the artifact is on when its logger is at DEBUG; its own filter shows
    # the DEBUG records only for TORCH_LOGS=+fusion)
    if rec.fusion_log.isEnabledFor(logging.DEBUG):
        verbose = rec.verbose_log_requested()
        rec.fusion_log.info("%s", render_graph(graph, costs=verbose))
        if verbose:
            rec.fusion_log.debug("%s", render_evaluated_pairs(graph))
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
    torch._logging.trace_structured(
        "artifact",
        metadata_fn=lambda: {
            "name": "inductor_fusion_summary",
            "encoding": "string",
        },
        payload_fn=lambda: (
            f"{render_graph(graph, costs=True)}\n{render_evaluated_pairs(graph)}\n"
        ),
    )
