"""The text renderer: the per-graph summary the ``fusion`` log prints.

Reads only a graph report's JSON (``fusion_report``'s schema).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..model import GraphBreak


def _short_source(source: str | None) -> str:
    if not source:
        return ""
    filename, _, line = source.rpartition(":")
    return f"{filename.rsplit('/', 1)[-1]}:{line}"


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


def short_source(source: str | None) -> str:
    if not source:
        return "<unknown>"
    filename, _, line = source.rpartition(":")
    return f"{os.path.basename(filename)}:{line}"


def short_reason(detail: str, gb_type: str | None) -> str:
    """Dynamo's kind of break and its one-line explanation."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    head = gb_type or (lines[0] if lines else "graph break")
    explanation = next(
        (
            line[len("Explanation:") :].strip()
            for line in lines
            if line.startswith("Explanation:")
        ),
        "",
    )
    return f"{head}: {explanation}" if explanation else head


def _names(ids: Sequence[str]) -> str:
    return " and ".join(ids)


def describe(entry: GraphBreak, before: Sequence[str], after: Sequence[str]) -> str:
    """One line: where the break is, the graphs it separates, and why."""
    if before:
        left = f"after graph{'s' if len(before) > 1 else ''} {_names(before)}"
    else:
        left = f"after no graph of {entry.compile_id}"
    if after:
        right = f"before {_names(after)}"
    elif entry.next_compile is not None:
        right = f"before {entry.next_compile}, which compiled no graph"
    else:
        right = "with nothing compiled after it"
    return (
        f"graph break at {short_source(entry.source)} ({left}, {right}): "
        f"{short_reason(entry.remark.detail, entry.gb_type)}"
    )


def render_with_graphs(
    graphs: Sequence[dict[str, Any]],
    breaks: Sequence[GraphBreak],
    render_graph: Callable[[dict[str, Any]], str],
) -> str:
    """The graphs' summaries, each graph break between the graphs it separates."""
    ids = [g["compile_id"] for g in graphs]
    inserted: dict[int, list[str]] = {}
    for entry in breaks:
        data = entry.to_json(ids)
        before, after = data["graphs_before"], data["graphs_after"]
        if after:
            position = ids.index(after[0])
        elif before:
            position = max(i for i, c in enumerate(ids) if c in before) + 1
        else:
            position = len(ids)
        inserted.setdefault(position, []).append(describe(entry, before, after))
    blocks: list[str] = []
    for i in range(len(graphs) + 1):
        blocks.extend(inserted.get(i, ()))
        if i < len(graphs):
            blocks.append(render_graph(graphs[i]))
    return "\n\n".join(blocks)
