"""The text renderer: the per-graph summary the ``fusion`` log prints.

Reads only a graph report's JSON (``fusion_report``'s schema).
"""

from __future__ import annotations

from typing import Any


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
