"""The text summary of a graph report: what the ``fusion`` log prints.

One paragraph per graph (``TORCH_LOGS=fusion``, ``fusion_report.summary``),
the pairs the scheduler evaluated (``TORCH_LOGS=+fusion``), and one line per
Dynamo graph break.  Reads only a graph report's JSON (``fusion_report``'s
schema).  The pages, pictures and diffs are the fusion viewer's
(``packages/fusion_viewer``), which torch does not import; the few formatters
both need (byte counts, durations, predicted gains, kernel groups, folded
lists of names, an extern kernel's inputs, why an op has no kernel) are
therefore kept here too, and must say the same as the viewer's
``fusion_viewer.common``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from .model import GraphBreak


def fmt_bytes(n: object) -> str:
    """A byte count for people (``1.5 MiB``), or "" when ``n`` is not a number."""
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return ""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)  # unreachable


def fmt_seconds(s: object) -> str:
    """A duration for people (``1.25 us``, ``3.1 ms``), or "" when ``s`` is
    not a number."""
    if not isinstance(s, (int, float)) or isinstance(s, bool):
        return ""
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if abs(s) < 1000 * scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def fmt_predicted(predicted: object) -> str:
    """A boundary's predicted gain in a few words (``saves 2.0 MiB and 1
    launch: 1.3 us``), or "" when it has none."""
    if not isinstance(predicted, dict):
        return ""
    parts = []
    if predicted.get("bytes_saved"):
        parts.append(fmt_bytes(predicted["bytes_saved"]))
    launches = predicted.get("launches_saved") or 0
    if launches:
        parts.append(f"{launches} launch{'' if launches == 1 else 'es'}")
    what = f"saves {' and '.join(parts)}" if parts else "saves nothing"
    gain = fmt_seconds(predicted.get("gain_s"))
    return f"{what}: {gain}" if gain and parts else what


def fmt_cost_model(model: object) -> str:
    """The cost model of a graph in one line."""
    if not isinstance(model, dict):
        return ""
    bandwidth = model.get("bandwidth_bytes_per_s")
    launch = model.get("launch_s")
    if not bandwidth or launch is None:
        return f"cost model: {model.get('source')}"
    return (
        f"cost model: {bandwidth / 1e9:.0f} GB/s copy bandwidth, "
        f"{fmt_seconds(launch)} per launch ({model.get('source')})"
    )


def kernel_groups(graph: dict[str, Any]) -> list[dict[str, Any]]:
    """The graph's kernels grouped by generated ``function``, in graph order.

    On the CPU several kernel records (loop nests) share one generated C++
    function; a group is that function with its records.  A kernel with no
    ``function`` (extern, fallback) is a group of its own.  Each group is
    ``{"function": name or None, "name": the group's display name,
    "records": [kernel, ...]}``.
    """
    groups: list[dict[str, Any]] = []
    by_function: dict[str, dict[str, Any]] = {}
    for kernel in graph.get("kernels") or []:
        function = kernel.get("function")
        if function and function in by_function:
            by_function[function]["records"].append(kernel)
            continue
        group = {
            "function": function or None,
            "name": str(function or kernel.get("name", "?")),
            "records": [kernel],
        }
        groups.append(group)
        if function:
            by_function[function] = group
    return groups


def fold_names(names: Sequence[object], limit: int = 8, last: str = " and ") -> str:
    """Names for people: ``a, b and c`` (``last`` joins the last two); past
    ``limit`` names, the first ``limit`` and how many more (``a, b, c and 37
    more``), so that a line stays readable for a graph of thousands of ops."""
    words = [str(n) for n in names]
    if len(words) > limit:
        return ", ".join(words[:limit]) + f" and {len(words) - limit} more"
    if len(words) < 2:
        return "".join(words)
    return ", ".join(words[:-1]) + last + words[-1]


def extern_inputs(
    kernel: dict[str, Any], graph: dict[str, Any]
) -> list[tuple[str, list[str]]]:
    """What other kernels write into the buffers an extern kernel reads, by
    the kernel that writes them, in the order of its boundaries:
    ``[("cpp_fused_clone_0", ["buf3 (clone)"]), ...]``; a generated kernel is
    named by its function.  Read from the graph's memory crossings (the
    dependency boundaries into ``kernel``), never from op names.  Empty for
    other kernels and for captures of before the buffer-level boundaries."""
    shown = {
        k.get("name"): str(k.get("function") or k.get("name"))
        for k in graph.get("kernels") or []
    }
    out: dict[str, list[str]] = {}
    for b in graph.get("boundaries") or []:
        if b.get("relation") != "dependency" or "buffer" not in b:
            continue
        producer, consumer = ([*list(b.get("kernels") or []), "", ""])[:2]
        if consumer != kernel.get("name"):
            continue
        ops = b.get("producer_ops") or []
        what = f"{b['buffer']} ({fold_names(ops, 3)})" if ops else str(b["buffer"])
        out.setdefault(shown.get(producer, str(producer)), []).append(what)
    return list(out.items())


def eliminated_words(code: object) -> str:
    """Why a computing op has no kernel (its ``eliminated`` code), in words
    that say what the generated code does (fusion_remarks.analysis)."""
    words = {
        "dead_code": "its value is never used (dead code)",
        "cat_in_place": "a cat: the kernels computing its inputs write them "
        "into slices of its output",
        "removed": "Inductor removed its buffer",
        "symbolic_scalar": "a size (a scalar of symbolic shapes), not a "
        "tensor: each kernel or wrapper line that uses it computes its "
        "expression",
        "no_kernel": "no kernel names it among its origins",
    }
    return words.get(str(code), str(code or ""))


def _short_source(source: str | None) -> str:
    if not source:
        return ""
    filename, _, line = source.rpartition(":")
    return f"{filename.rsplit('/', 1)[-1]}:{line}"


# How many loop nests of one function, and options held off by an ablation
# switch, one line names (fold_names says how many more).
_NESTS_SHOWN = 8
_HELD_SHOWN = 8
_HOW_WORDS = {
    "inlined": "inlined into one loop nest at lowering",
    "scheduler": "fused by the scheduler",
    "combined": "combined into one launch",
}
_EXTERN_KINDS = ("extern", "fallback")


def _loop_nest(
    kernel: dict[str, Any], ops: dict[str, Any], order: dict[str, int]
) -> str:
    """What one kernel record (a loop nest, template or call) computes, in words."""
    copies = [n for n in kernel.get("copy_for", ()) if n in ops]
    names = sorted(
        (
            n
            for n in kernel["ops"]
            if ops.get(n, {}).get("computes") and n not in copies
        ),
        key=lambda n: order.get(n, 0),
    )
    parts = []
    if names:
        how = [_HOW_WORDS[h] for h in kernel.get("how", ()) if h in _HOW_WORDS]
        if len(names) == 1:
            parts.append(names[0])
        else:
            parts.append(fold_names(names) + (", " + " and ".join(how) if how else ""))
    if copies:
        parts.append(f"layout copy for {fold_names(copies)}")
    if not parts:
        named = [n for n in kernel["ops"] if n not in ops or not ops[n]["computes"]]
        return "no computing op" + (f" ({fold_names(named)})" if named else "")
    return "; ".join(parts)


def _inputs_from(kernel: dict[str, Any], graph: dict[str, Any]) -> str:
    """``; inputs from cpp_fused_x_0: buf3 (clone)``: the buffers other
    kernels write that an extern kernel reads (it does not compute them)."""
    return "".join(
        f"; inputs from {source}: {fold_names(names)}"
        for source, names in extern_inputs(kernel, graph)
    )


def render_graph(graph: dict[str, Any], costs: bool = False) -> str:
    """The readable per-graph summary (the ``fusion`` log prints this).

    One line per kernel: per generated function, the loop nests it holds, and
    for each what it computes and how its ops came together.  With ``costs``
    (``TORCH_LOGS=+fusion``), the cost model and each boundary's predicted
    gain (``costs.price``), kept out of the default log's few lines.
    """
    ops = {op["name"]: op for op in graph["ops"]}
    order = {op["name"]: i for i, op in enumerate(graph["ops"])}
    computing = [op for op in graph["ops"] if op["computes"]]
    groups = [g["records"] for g in kernel_groups(graph)]
    calls = sum(1 for g in groups if g[0]["kind"] in _EXTERN_KINDS)
    replayed = (
        f", replayed from the FX graph cache (compiled as {graph.get('compiled_as')})"
        if graph.get("cache") == "replayed"
        else ""
    )
    # A kernel is one loop nest, template or call (DESIGN.md section 3); the
    # C++ backend's functions that group several loop nests are counted apart.
    records = [k for g in groups for k in g]
    generated = len(records) - calls
    functions = len(groups) - calls
    in_functions = (
        f" in {functions} function{'' if functions == 1 else 's'}"
        if functions != generated
        else ""
    )
    lines = [
        f"graph {graph['compile_id']} ({graph['device']}{replayed}): "
        f"{len(computing)} op{'' if len(computing) == 1 else 's'} -> {len(records)} "
        f"kernel{'' if len(records) == 1 else 's'} "
        f"({generated} generated{in_functions}, {calls} extern)"
    ]
    for group in groups:
        first = group[0]
        names = [n for k in group for n in k["ops"] if ops.get(n, {}).get("computes")]
        sources = sorted(
            {_short_source(ops[n]["source"]) for n in names if ops[n].get("source")}
        )
        where = f"  [{fold_names(sources, last=', ')}]" if sources else ""
        if first["kind"] in _EXTERN_KINDS:
            node, _, call = first["name"].partition(":")
            label = f"{call or node} [{node}] ({first['kind']} call)"
            body = _loop_nest(first, ops, order) + _inputs_from(first, graph)
        elif len(group) == 1:
            function = first.get("function") or "<no generated function>"
            label = f"{function} [{first['name']}] ({first['kind']})"
            body = _loop_nest(first, ops, order)
        else:
            nests = "loop nests" if first["kind"] == "cpp" else "kernels"
            label = (
                f"{first['function']} ({first['kind']}, one function of "
                f"{len(group)} {nests}, not fused with each other)"
            )
            body = " | ".join(
                f"[{k['name']}] {_loop_nest(k, ops, order)}"
                for k in group[:_NESTS_SHOWN]
            )
            if len(group) > _NESTS_SHOWN:
                body += f" | and {len(group) - _NESTS_SHOWN} more {nests}"
        lines.append(f"  {label}: {body}{where}")
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
        options = [f"{r['args']['option']}={r['args']['value']!r}" for r in held]
        count = f" ({len(held)} options)" if len(held) > _HELD_SHOWN else ""
        lines.append(
            f"  held off by config.{' and config.'.join(switches)}{count}: "
            + fold_names(options, _HELD_SHOWN, last=", ")
        )
    boundaries = graph["boundaries"]
    if boundaries:
        lines.append(
            f"  {len(boundaries)} boundar{'y' if len(boundaries) == 1 else 'ies'}:"
        )
        if costs and graph.get("cost_model"):
            lines.append(f"    ({fmt_cost_model(graph['cost_model'])})")
    elif len(groups) > 1:
        lines.append("  no boundaries: no buffer crosses memory between two kernels")
    elif len(computing) > 1:
        lines.append("  no boundaries: every dependent pair of ops shares a kernel")
    lines.extend(_boundary_lines(boundaries, ops, costs))
    violations = graph.get("coverage_violations") or []
    if violations:
        lines.append(
            f"  coverage: {len(violations)} crossing{'' if len(violations) == 1 else 's'}"
            f" without exactly one boundary: {fold_names(violations, 3, last='; ')}"
        )
    eliminated: dict[str, list[str]] = {}
    for op in computing:
        if op.get("eliminated"):
            eliminated.setdefault(op["eliminated"], []).append(op["name"])
    for code, names in eliminated.items():
        lines.append(f"  {fold_names(names)}: no kernel: {eliminated_words(code)}")
    if not computing:
        lines.append("  no computing op: the graph only moves or views its inputs")
    return "\n".join(lines)


def _boundary_lines(
    boundaries: list[dict[str, Any]], ops: dict[str, Any], costs: bool
) -> list[str]:
    """One line per boundary; shared-input boundaries between the same two
    ops, for the same reason, are one line naming their pairs of kernels
    (several loop nests that read one buffer, each pair refused alike)."""
    lines: list[str] = []
    alike: dict[object, list[dict[str, Any]]] = {}
    for i, b in enumerate(boundaries):
        shared = b["relation"] == "shared_input"
        key = (b["producer"], b["consumer"], b["reason"]) if shared else i
        alike.setdefault(key, []).append(b)
    for repeats in alike.values():
        b = repeats[0]
        arrow = "->" if b["relation"] == "dependency" else "||"
        sources = [
            _short_source(ops.get(n, {}).get("source"))
            for n in (b["producer"], b["consumer"])
        ]
        where = " / ".join(dict.fromkeys(s for s in sources if s))
        also = [" + ".join(r["kernels"]) for r in repeats[1:]]
        lines.append(
            f"    {_boundary_label(b)} {arrow} {_boundary_label(b, False)}"
            + (f" {_crossing(b)}" if "buffer" in b else "")
            + f": {b['reason']} "
            f"({b['category']}, {b['stage']})"
            + (f" [{where}]" if where else "")
            + (f": {b['detail']}" if b["detail"] else "")
            + (
                f" (and {len(also)} more pair{'s' if len(also) > 1 else ''} "
                f"of kernels alike: {fold_names(also)})"
                if also
                else ""
            )
            + (
                f"; predicted: {fmt_predicted(b['predicted'])}"
                if costs and b.get("predicted")
                else ""
            )
        )
    return lines


def _boundary_label(b: dict[str, Any], producer: bool = True) -> str:
    """One side of a boundary: the ops computing its buffer, or reading it
    (its label op for a shared-input pair and older captures)."""
    names = b.get("producer_ops" if producer else "consumer_ops") or []
    return (
        fold_names(names, 3)
        if names
        else str(b["producer" if producer else "consumer"])
    )


def _crossing(b: dict[str, Any]) -> str:
    """``(buf3, 1.0 KiB, op0 -> op2)``: the buffer, its bytes and the kernels."""
    size = fmt_bytes((b.get("args") or {}).get("bytes"))
    kernels = " -> ".join(str(k).partition(":")[0] for k in b.get("kernels") or [])
    return "(" + ", ".join(p for p in (str(b["buffer"]), size, kernels) if p) + ")"


def render_evaluated_pairs(graph: dict[str, Any]) -> str:
    """Every pair the scheduler evaluated, once, with its last verdict
    (``TORCH_LOGS=+fusion``).  The scheduler tries a pair again in later
    rounds and after loop reordering; the count says how often."""
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pair in graph.get("evaluated_pairs", []):
        pairs.setdefault((str(pair["first"]), str(pair["second"])), []).append(pair)
    head = f"graph {graph['compile_id']}: {len(pairs)} evaluated pairs"
    nodes = graph.get("scheduler_nodes_before_fusion")
    if not pairs and isinstance(nodes, int) and nodes < 2:
        head += (
            f": the scheduler had {nodes} node{'' if nodes == 1 else 's'}, "
            "nothing to pair"
        )
    lines = [head]
    if graph.get("cache") == "replayed":
        lines.append(
            "  replayed from the FX graph cache: the pairs recorded when it was "
            "compiled; upstream's scheduler dumps of +fusion need a fresh compile "
            "(TORCHINDUCTOR_FORCE_DISABLE_CACHES=1)"
        )
    for (first, second), tries in pairs.items():
        last = tries[-1]
        verdict = "fused" if last["fused"] else f"rejected, {last['reason']}"
        detail = f": {last['detail']}" if last["detail"] else ""
        times = f" (evaluated {len(tries)} times)" if len(tries) > 1 else ""
        lines.append(f"  {first} + {second}: {verdict}{times}{detail}")
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
    # only compiled graphs are named: the frame Dynamo starts after a break
    # may compile none (a training step's code after backward())
    if after:
        right = f"before {_names(after)}"
    else:
        right = "with no graph compiled after it"
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
    if not graphs:
        inserted.setdefault(0, []).append(
            "no compiled graph: nothing was compiled by Inductor while capturing "
            "(a function compiled before the capture is not compiled again; "
            "call torch._dynamo.reset() first)"
        )
    blocks: list[str] = []
    for i in range(len(graphs) + 1):
        blocks.extend(inserted.get(i, ()))
        if i < len(graphs):
            blocks.append(render_graph(graphs[i]))
    return "\n\n".join(blocks)
