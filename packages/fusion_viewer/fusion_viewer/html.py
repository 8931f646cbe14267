"""The HTML page of a fusion capture: kernels, boundaries, pictures, sources.

``fusion_viewer.page.save_html(rep, path)`` writes one self-contained page (inline CSS
and JavaScript from ``page.css`` and ``page.js`` beside this module, inline
SVG, nothing fetched from the network) that can be attached to an issue and
opened anywhere.  It renders the JSON of :meth:`FusionCapture.to_json` and
nothing else, every field read with a default (files written by older or
newer code may lack one).  Made to work at model size (500+ ops):

* a filter bar: search by op, kernel or source line (``file.py:123``) and
  filters by a boundary's reason and category and by kernel kind, kept in the
  URL's hash (``#filter=reason:extern_kernel&q=relu``; see ``page.js``);
* per graph, a kernel table first: one row per kernel, one per generated
  function on the CPU (several loop nests share one C++ function), its ops
  folded under it, its source lines, boundaries and a link to its generated
  code (:func:`.source.code_section`, from the optional ``kernel_sources``);
* every boundary of the graph, each an element with class ``boundary`` and
  ``data-`` attributes so that tools can find them in the DOM
  (:mod:`.boundaries`);
* folded under them, the picture laid out by Graphviz ``dot``
  (:mod:`.graphviz`; optional: without ``dot`` the page says so);
* tables of boundaries by reason and category, the graph breaks, and the
  user's source annotated with remarks (:mod:`.source`).

The page is titled with the model or capture it shows (``name``: a study's
case id, or the file's name); a column that no row has data for is left out,
and names wrap only between their words (:func:`.common.esc_name`).
"""

from __future__ import annotations

import collections
import functools
import os
from typing import Any

from .boundaries import boundary_table, bytes_cell, LIBRARY_KINDS
from .common import (
    boundary_id,
    check_writable,
    code_anchors,
    computing_ops,
    copied_ops,
    eliminated_words,
    esc,
    esc_name,
    extern_inputs,
    fmt_seconds,
    GRAPH_BREAK,
    graph_anchor,
    HOW_LABELS,
    kernel_groups,
    kernel_row_id,
    kernel_sources,
    source_link,
    write_text,
)
from .graphviz import (
    BOUNDARY_COLOUR,
    FUSED_EDGE_COLOUR,
    GENERATED_PALETTE,
    kernel_colours,
    KIND_FILL,
    MAX_OP_NODES,
    picture,
    SHARED_INPUT_COLOUR,
)
from .source import code_section, graph_break_section, source_section


__all__ = ["render_html", "save_html"]


# Ops named in a kernel row before the rest are left to its drill-down.
OPS_IN_SUMMARY = 4


@functools.cache
def _asset(name: str) -> str:
    """The text of ``page.css`` or ``page.js``, beside this module."""
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
        return f.read()


def save_html(
    data: dict[str, Any],
    path: str | os.PathLike[str],
    name: str | None = None,
    index_href: str | None = None,
) -> None:
    """Write :func:`render_html`'s page to ``path`` (UTF-8); a path that cannot
    be written is an ``OSError`` naming it, raised before the page is made.
    ``name`` defaults to the file's name without its extension
    (``resnet18.html``: ``resnet18``), so that ``fusion_viewer.page.save_html``
    titles the page with what its caller named the file."""
    check_writable(path)
    if name is None:
        name = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    write_text(path, render_html(data, name, index_href))


def render_html(
    data: dict[str, Any], name: str | None = None, index_href: str | None = None
) -> str:
    """The self-contained HTML page of a capture's JSON (``FusionCapture.to_json()``).

    ``name``: the model or capture the page shows (a study's case id, a
    capture's file name), in the page's title and heading; ``index_href``: a
    link back to the index the page belongs to (a study's ``index.html``)."""
    graphs = list(data.get("graphs") or [])
    breaks = list(data.get("graph_breaks") or [])
    reasons = data.get("reasons") or {}
    slugs = _unique_slugs(graphs)
    colours = [kernel_colours(g) for g in graphs]

    body: list[str] = [_header(data, graphs, slugs, name, index_href)]
    if not graphs and not breaks:
        # Said once: no tables, legend or source that would each say it again.
        body.append(
            '<p class="note empty-capture">The capture is empty: no graph was '
            "compiled and no graph break happened inside the "
            "<code>fusion_report.capture()</code> block, so there is nothing to "
            "show.</p>"
        )
    else:
        body.append(_legend())
        body.append(_controls(graphs, breaks))
        body.append(_reason_tables(graphs, breaks, reasons))
        if breaks:
            body.append(graph_break_section(breaks, graphs, slugs))
        body.append('<section id="graphs"><h2>Graphs</h2>')
        if not graphs:
            body.append(
                '<p class="note">No graph was compiled: the capture holds only '
                "the graph breaks above.</p>"
            )
        for graph, slug, colour in zip(graphs, slugs, colours):
            body.append(_graph_section(data, graph, slug, colour))
        body.append("</section>")
        body.append(source_section(graphs, breaks, slugs, colours))
    title = f"{name} \u00b7 fusion report" if name else "Fusion report"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n"
        f"<style>{_asset('page.css')}</style>\n"
        "</head><body>\n"
        + "\n".join(body)
        + f"\n<script>{_asset('page.js')}</script>\n"
        "</body></html>\n"
    )


# ---------------------------------------------------------------- helpers


def _unique_slugs(graphs: list[dict[str, Any]]) -> list[str]:
    # Two graphs may share a compile id (a capture that spans a reset);
    # later ones get a suffix so that anchors stay unique.
    seen: collections.Counter[str] = collections.Counter()
    out = []
    for graph in graphs:
        slug = graph_anchor(graph.get("compile_id", "?"))
        seen[slug] += 1
        out.append(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}")
    return out


def _is_extern(kind: object) -> bool:
    return kind in ("extern", "fallback")


def _kernel_counts(graph: dict[str, Any]) -> tuple[int, int]:
    """(generated, extern) kernels as the output code has them: a generated
    function holding several loop nests (C++) counts once, as in the log."""
    groups = kernel_groups(graph)
    extern = sum(1 for g in groups if _is_extern(g["records"][0].get("kind")))
    return len(groups) - extern, extern


# ---------------------------------------------------------------- page parts


def _header(
    data: dict[str, Any],
    graphs: list[dict[str, Any]],
    slugs: list[str],
    name: str | None = None,
    index_href: str | None = None,
) -> str:
    show_cache = any(graph.get("cache") for graph in graphs)
    rows = []
    for graph, slug in zip(graphs, slugs):
        computing = computing_ops(graph)
        generated, extern = _kernel_counts(graph)
        bounds = graph.get("boundaries") or []
        shared = sum(1 for b in bounds if b.get("relation") == "shared_input")
        rows.append(
            "<tr>"
            f'<td><a href="#{esc(slug)}">{esc(graph.get("compile_id"))}</a></td>'
            f"<td>{esc(graph.get('device', ''))}</td>"
            + (f"<td>{esc(graph.get('cache', ''))}</td>" if show_cache else "")
            + f'<td class="num">{len(computing)}'
            f' <span class="dim">of {len(graph.get("ops") or [])}</span></td>'
            f'<td class="num">{generated + extern}'
            f' <span class="dim">({generated} generated, {extern} extern)</span></td>'
            f'<td class="num">{len(bounds) - shared}'
            + (f' <span class="dim">+ {shared} shared input</span>' if shared else "")
            + "</td></tr>"
        )
    table = (
        '<table class="overview"><thead><tr><th>graph</th><th>device</th>'
        + ("<th>cache</th>" if show_cache else "")
        + "<th>computing ops</th><th>kernels</th>"
        "<th>boundaries</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        if rows
        else ""
    )
    nav = (
        '<nav><a href="#reasons">reasons</a> \u00b7 '
        + (
            '<a href="#graph-breaks">graph breaks</a> \u00b7 '
            if data.get("graph_breaks")
            else ""
        )
        + '<a href="#graphs">graphs</a> \u00b7 <a href="#source">annotated source</a></nav>'
    )
    heading = (
        f'<h1 data-name="{esc(name)}">{esc_name(name)} '
        '<span class="dim">\u00b7 fusion report</span></h1>'
        if name
        else "<h1>Fusion report</h1>"
    )
    back = (
        f'<p class="back"><a href="{esc(index_href)}" rel="up">'
        "\u2190 back to the index</a></p>"
        if index_href
        else ""
    )
    return (
        f"<header>{back}{heading}"
        f'<p class="producer">produced by <code>{esc(data.get("producer", "?"))}</code>'
        f" \u00b7 schema version {esc(data.get('schema_version', '?'))}"
        f" \u00b7 {len(graphs)} graph{'s' if len(graphs) != 1 else ''}</p>"
        f"{nav if graphs or data.get('graph_breaks') else ''}{table}</header>"
    )


def _legend() -> str:
    def chip(colour: str, text: str, cls: str = "") -> str:
        return (
            f'<span class="chip {cls}" style="background:{colour}">{esc(text)}</span>'
        )

    generated = "".join(chip(c, "") for c in GENERATED_PALETTE[:4])
    return (
        '<p class="legend">'
        f"{generated} generated kernels (C++ loop nests, Triton kernels) \u00b7 "
        f"{chip(KIND_FILL['extern'], 'extern', 'kind-extern')} "
        f"{chip(KIND_FILL['fallback'], 'fallback', 'kind-fallback')} "
        f"{chip(KIND_FILL['template'], 'template', 'kind-template')} \u00b7 "
        f'<span class="edge" style="border-color:{FUSED_EDGE_COLOUR}"></span> fused '
        f'<span class="edge" style="border-color:{BOUNDARY_COLOUR}"></span> '
        "boundary (labelled with its reason) "
        f'<span class="edge dashed" style="border-color:{SHARED_INPUT_COLOUR}"></span>'
        " shared input, not fused</p>" + _asset("guide.html")
    )


def _controls(graphs: list[dict[str, Any]], breaks: list[dict[str, Any]]) -> str:
    """The filter bar: search, and the reason, category and kind selectors."""
    reasons: set[str] = set()
    categories: set[str] = set()
    kinds: set[str] = set()
    for graph in graphs:
        for b in graph.get("boundaries") or []:
            reasons.add(str(b.get("reason")))
            categories.add(str(b.get("category")))
        kinds.update(str(k.get("kind")) for k in graph.get("kernels") or [])

    def select(field: str, values: set[str]) -> str:
        options = "".join(
            f'<option value="{esc(v)}">{esc(v)}</option>' for v in sorted(values)
        )
        return (
            f'<label>{field} <select id="filter-{field}" data-field="{field}">'
            f'<option value="">any</option>{options}</select></label>'
        )

    return (
        '<div class="controls" id="controls" role="search">'
        '<input type="search" id="filter-q" data-field="q" '
        'placeholder="search an op, kernel or file.py:line" '
        'aria-label="search an op, kernel or source line">'
        + select("reason", reasons)
        + select("category", categories)
        + select("kind", kinds)
        + '<button type="button" id="filter-clear">clear</button>'
        '<span id="filter-status" class="dim"></span></div>'
    )


def _reason_tables(
    graphs: list[dict[str, Any]],
    breaks: list[dict[str, Any]],
    reasons: dict[str, Any],
) -> str:
    """Boundaries counted by reason and by category, with the bytes that cross them."""
    by_reason: dict[str, dict[str, Any]] = {}
    for graph in graphs:
        for b in graph.get("boundaries") or []:
            code = str(b.get("reason"))
            row = by_reason.setdefault(
                code,
                {
                    "category": b.get("category", ""),
                    "stages": set(),
                    "count": 0,
                    "shared": 0,
                    "bytes": None,
                },
            )
            row["stages"].add(str(b.get("stage", "")))
            row["count"] += 1
            row["shared"] += b.get("relation") == "shared_input"
            nbytes = (b.get("args") or {}).get("bytes")
            if isinstance(nbytes, (int, float)) and not isinstance(nbytes, bool):
                row["bytes"] = (row["bytes"] or 0) + nbytes
    if breaks:
        code, category, stage = GRAPH_BREAK
        by_reason[code] = {
            "category": category,
            "stages": {stage},
            "count": len(breaks),
            "shared": 0,
            "bytes": None,
        }
    if not by_reason:
        computing = sum(len(computing_ops(g)) for g in graphs)
        text = (
            "No kernel boundaries: every dependent pair of computing ops shares "
            "a kernel."
            if computing
            else "No kernel boundaries: the graphs compute nothing."
        )
        return (
            '<section id="reasons"><h2>Boundaries by reason</h2>'
            f'<p class="quiet">{text}</p></section>'
        )
    # No byte count anywhere (older captures): no bytes columns.
    show_bytes = any(row["bytes"] is not None for row in by_reason.values())
    rows = []
    for code, row in sorted(
        by_reason.items(), key=lambda kv: (-kv[1]["count"], -(kv[1]["bytes"] or 0))
    ):
        description = (reasons.get(code) or {}).get("description", "")
        if code == GRAPH_BREAK[0] and not description:
            description = (
                "the ops are in different graphs, separated by a Dynamo graph break"
            )
        shared = f' <span class="dim">({row["shared"]} shared input)</span>'
        rows.append(
            f'<tr class="reason-row" data-reason="{esc(code)}"'
            f' data-category="{esc(row["category"])}" data-count="{row["count"]}"'
            f' data-bytes="{esc(row["bytes"] if row["bytes"] is not None else "")}">'
            f'<td><a class="filter-link" href="#filter=reason:{esc(code)}"'
            f' title="show only boundaries and kernels of this reason">'
            f"<code>{esc_name(code)}</code></a></td>"
            f'<td class="cat cat-{esc(row["category"])}">'
            f"{esc_name(row['category'])}</td>"
            f"<td>{esc_name(', '.join(sorted(row['stages'])))}</td>"
            f'<td class="num">{row["count"]}{shared if row["shared"] else ""}</td>'
            + (bytes_cell(row["bytes"]) if show_bytes else "")
            + f"<td>{esc(description)}</td></tr>"
        )
    by_category: dict[str, dict[str, Any]] = {}
    for row in by_reason.values():
        cat = by_category.setdefault(
            str(row["category"]), {"count": 0, "bytes": None, "reasons": 0}
        )
        cat["count"] += row["count"]
        if row["bytes"] is not None:
            cat["bytes"] = (cat["bytes"] or 0) + row["bytes"]
        cat["reasons"] += 1
    cat_rows = [
        f'<tr class="category-row" data-category="{esc(name)}"'
        f' data-count="{cat["count"]}"'
        f' data-bytes="{esc(cat["bytes"] if cat["bytes"] is not None else "")}">'
        f'<td class="cat cat-{esc(name)}"><a class="filter-link"'
        f' href="#filter=category:{esc(name)}">{esc_name(name)}</a></td>'
        f'<td class="num">{cat["count"]}</td>'
        + (bytes_cell(cat["bytes"]) if show_bytes else "")
        + f'<td class="num">{cat["reasons"]}</td></tr>'
        for name, cat in sorted(by_category.items(), key=lambda kv: -kv[1]["count"])
    ]
    bytes_head = "<th>bytes</th>" if show_bytes else ""
    return (
        '<section id="reasons"><h2>Boundaries by reason</h2>'
        '<div class="tables"><table class="by-reason"><thead><tr><th>reason</th>'
        f"<th>category</th><th>stage</th><th>boundaries</th>{bytes_head}"
        "<th>meaning</th></tr></thead><tbody>"
        + "".join(rows)
        + '</tbody></table><table class="by-category"><thead><tr><th>category</th>'
        f"<th>boundaries</th>{bytes_head}<th>reasons</th></tr></thead><tbody>"
        + "".join(cat_rows)
        + "</tbody></table></div>"
        + (
            '<p class="dim">bytes: the size of the buffer that crosses each '
            "boundary, summed (written once and read back at least once).</p>"
            if show_bytes
            else ""
        )
        + "</section>"
    )


def _graph_section(
    data: dict[str, Any], graph: dict[str, Any], slug: str, colours: dict[str, str]
) -> str:
    cid = graph.get("compile_id", "?")
    computing = computing_ops(graph)
    generated, extern = _kernel_counts(graph)
    bounds = graph.get("boundaries") or []
    groups = kernel_groups(graph)
    records = len(graph.get("kernels") or [])
    summary = (
        f"graph {esc(cid)} <span class=dim>({esc(graph.get('device', ''))})</span>: "
        f"{len(computing)} ops \u2192 {generated + extern} kernels "
        f"<span class=dim>({generated} generated, {extern} extern"
        + (f"; {records} loop nests and calls" if records != generated + extern else "")
        + ")</span>, "
        f"{len(bounds)} boundar{'y' if len(bounds) == 1 else 'ies'}"
    )
    sources = kernel_sources(graph, data)
    anchors = code_anchors(slug, [g["function"] for g in groups if g["function"]])
    parts = [
        f'<details class="graph" id="{esc(slug)}" data-graph="{esc(cid)}" open>'
        f"<summary>{summary}</summary>",
        _kernel_table(graph, slug, colours, groups, sources, anchors),
        boundary_table(graph, slug, colours),
    ]
    eliminated: dict[str, list[str]] = {}  # why, in words -> ops
    for op in computing:
        if not op.get("kernels"):
            why = eliminated_words(op.get("eliminated")) or "no kernel"
            eliminated.setdefault(why, []).append(str(op.get("name")))
    if eliminated:
        parts.append(
            '<p class="dim">Computing ops with no kernel of their own: '
            + "; ".join(
                ", ".join(f"<code>{esc(n)}</code>" for n in names) + f": {esc(why)}"
                for why, names in eliminated.items()
            )
            + "</p>"
        )
    if groups:
        parts.append(code_section(graph, sources, anchors))
    if computing:
        mode = "ops" if len(computing) <= MAX_OP_NODES else "kernels"
        parts.append(
            f'<details class="picture-box" id="picture-{esc(slug)}"'
            f' data-graph="{esc(cid)}">'
            f"<summary>Picture of graph {esc(cid)} "
            f'<span class="dim">(Graphviz; {len(computing)} ops, by {mode})'
            "</span></summary>" + picture(graph, slug, colours) + "</details>"
        )
    parts.append("</details>")
    return "\n".join(parts)


def _kernel_table(
    graph: dict[str, Any],
    slug: str,
    colours: dict[str, str],
    groups: list[dict[str, Any]],
    sources: dict[str, str] | None,
    anchors: dict[str, str],
) -> str:
    """The kernel overview: one row per kernel (per function on the CPU), ops folded."""
    if not groups:
        return '<p class="quiet">No kernels in this graph.</p>'
    cid = graph.get("compile_id", "?")
    ops = {op.get("name"): op for op in graph.get("ops") or []}
    order = {name: i for i, name in enumerate(ops)}
    row_of = {k.get("name"): gi for gi, g in enumerate(groups) for k in g["records"]}
    # group -> [(direction, boundary index, boundary)]
    touching: dict[int, list[tuple[str, int, dict[str, Any]]]] = (
        collections.defaultdict(list)
    )
    for i, b in enumerate(graph.get("boundaries") or []):
        ks = list(b.get("kernels") or [])
        ends = [row_of.get(k) for k in ks[:1] + ks[-1:]] if ks else [None, None]
        if len(ks) == 2 and ends[0] is not None and ends[0] == ends[1]:
            touching[ends[0]].append(("within", i, b))
            continue
        if ends[0] is not None:
            touching[ends[0]].append(("out", i, b))
        if ends[1] is not None and len(ks) > 1:
            touching[ends[1]].append(("in", i, b))
    show_how = any(k.get("how") for k in graph.get("kernels") or [])
    # measured GPU time per kernel (costs.annotate), where a profile was joined
    show_time = any(k.get("hotness_s") is not None for k in graph.get("kernels") or [])
    # Columns that no row has data for are left out: source lines where no op
    # has one, boundaries where the graph has none, code where the capture
    # holds no generated code (older captures; code_section says so).
    show_lines = any(op.get("source") for op in ops.values() if op.get("computes"))
    show_touching = bool(touching)
    show_code = sources is not None
    rows = []
    for gi, group in enumerate(groups):
        records = group["records"]
        first = records[0]
        kinds = list(dict.fromkeys(str(k.get("kind")) for k in records))
        computed: list[str] = []
        copies: list[str] = []
        search = {group["name"].lower()}
        for k in records:
            search.add(str(k.get("name", "")).lower())
            copy_for = copied_ops(k)
            for n in k.get("ops") or []:
                op = ops.get(n, {})
                if not op.get("computes"):
                    continue
                (copies if n in copy_for else computed).append(n)
                search.update(
                    str(x).lower() for x in (n, op.get("target"), op.get("source")) if x
                )
        computed = sorted(dict.fromkeys(computed), key=lambda n: order.get(n, 0))
        copies = [n for n in dict.fromkeys(copies) if n not in computed]
        lines = list(
            dict.fromkeys(
                ops[n]["source"] for n in computed + copies if ops[n].get("source")
            )
        )
        hits = touching.get(gi, [])
        reasons = sorted({str(b.get("reason")) for _, _, b in hits})
        categories = sorted({str(b.get("category")) for _, _, b in hits})
        colour = colours.get(first.get("name", ""), "#ffffff")
        name_cell = (
            f'<span class="chip kind-{esc(kinds[0])}" style="background:{esc(colour)}">'
            "&nbsp;</span> "
            f'<code class="kname">{esc_name(group["name"])}</code>'
        )
        if len(records) > 1:
            name_cell += (
                f'<div class="dim">{len(records)} loop nests: '
                + ", ".join(esc_name(k.get("name")) for k in records)
                + "</div>"
            )
        elif group["function"]:
            name_cell += f'<div class="dim">{esc_name(first.get("name"))}</div>'
        how = list(dict.fromkeys(h for k in records for h in k.get("how") or []))
        how_cell = (
            "<td>"
            + " ".join(
                f'<span class="how how-{esc(h)}">{esc(HOW_LABELS.get(h, h))}</span>'
                for h in how
            )
            + "</td>"
            if show_how
            else ""
        )
        if group["function"] and sources is not None and group["function"] in sources:
            code = (
                f'<a class="code-link" href="#{esc(anchors[group["function"]])}">'
                "generated code</a>"
            )
        elif kinds[0] in LIBRARY_KINDS:
            code = '<span class="no-code">not in the capture (a library call)</span>'
        else:
            code = '<span class="no-code">not in the capture</span>'
        rows.append(
            f'<tr class="kernel-row" id="{kernel_row_id(slug, gi)}"'
            f' data-graph="{esc(cid)}" data-kernels="'
            + esc(" ".join(str(k.get("name")) for k in records))
            + f'" data-kinds="{esc(" ".join(kinds))}"'
            f' data-reasons="{esc(" ".join(reasons))}"'
            f' data-categories="{esc(" ".join(categories))}"'
            f' data-search="{esc(" ".join(sorted(search)))}">'
            f'<td class="num">{gi}</td><td>{name_cell}</td>'
            f"<td>{esc(', '.join(kinds))}</td>{how_cell}"
            + (
                f'<td class="num">{esc(fmt_seconds(first.get("hotness_s")))}</td>'
                if show_time
                else ""
            )
            + f'<td class="ops">{_ops_cell(records, computed, copies, ops, order)}'
            + f"{_inputs_note(first, graph)}</td>"
            + (f"<td>{_lines_cell(lines)}</td>" if show_lines else "")
            + (f"<td>{_touching_cell(slug, hits)}</td>" if show_touching else "")
            + (f"<td>{code}</td>" if show_code else "")
            + "</tr>"
        )
    head = (
        "<th>#</th><th>kernel</th><th>kind</th>"
        + ("<th>how</th>" if show_how else "")
        + ('<th title="measured time per step">time</th>' if show_time else "")
        + "<th>ops</th>"
        + ("<th>source lines</th>" if show_lines else "")
        + ("<th>boundaries</th>" if show_touching else "")
        + ("<th>code</th>" if show_code else "")
    )
    return (
        f'<div class="kernel-table"><b>Kernels</b> <span class="dim">({len(rows)} '
        f"row{'s' if len(rows) != 1 else ''})</span>"
        '<span class="table-status"></span>'
        f'<table class="kernels" data-graph="{esc(cid)}"><thead><tr>{head}</tr>'
        "</thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


def _inputs_note(kernel: dict[str, Any], graph: dict[str, Any]) -> str:
    """Under an extern kernel's ops, the buffers other kernels write that it
    reads (its memory crossings), which it does not compute: "inputs from
    cpp_fused_x_0: buf3 (clone)"."""
    return "".join(
        '<div class="dim">'
        + f"inputs from <code>{esc_name(source)}</code>: "
        + ", ".join(f"<code>{esc_name(n)}</code>" for n in names)
        + "</div>"
        for source, names in extern_inputs(kernel, graph)
    )


def _ops_cell(
    records: list[dict[str, Any]],
    computed: list[str],
    copies: list[str],
    ops: dict[str, Any],
    order: dict[str, int],
) -> str:
    """A kernel row's ops: a summary, and each op of each loop nest folded under it."""
    names = ", ".join(f"<code>{esc_name(n)}</code>" for n in computed[:OPS_IN_SUMMARY])
    if len(computed) > OPS_IN_SUMMARY:
        names += ", \u2026"
    head = f"{len(computed)} op{'s' if len(computed) != 1 else ''}" + (
        f": {names}" if computed else ""
    )
    if copies:
        copy = (
            '<span class="layout-copy">layout copy for '
            + ", ".join(f"<code>{esc_name(n)}</code>" for n in copies)
            + "</span>"
        )
        head = f"{head}; {copy}" if computed else copy
    if not computed and not copies:
        names = [n for k in records for n in k.get("ops") or []]
        return '<span class="dim">no computing op' + (
            f" ({esc_name(', '.join(names[:3]))})</span>" if names else "</span>"
        )
    items = []
    for k in records:
        copy_for = copied_ops(k)
        mine = sorted(
            (n for n in k.get("ops") or [] if ops.get(n, {}).get("computes")),
            key=lambda n: order.get(n, 0),
        )
        if len(records) > 1:
            items.append(f'<li class="nest">{esc_name(k.get("name"))}</li>')
        for n in mine:
            op = ops[n]
            what = (
                '<span class="layout-copy">layout copy for</span> '
                if n in copy_for
                else ""
            )
            others = [x for x in op.get("kernels") or [] if x != k.get("name")]
            items.append(
                f'<li data-op="{esc(n)}">{what}<code>{esc_name(n)}</code>'
                f' <span class="dim">= {esc_name(op.get("target"))}</span>'
                + (f" {source_link(op['source'])}" if op.get("source") else "")
                + (
                    f' <span class="dim">(also in {esc_name(", ".join(others[:3]))}'
                    + (", \u2026" if len(others) > 3 else "")
                    + ")</span>"
                    if others
                    else ""
                )
                + "</li>"
            )
    return (
        f'<details class="ops"><summary>{head}</summary>'
        f'<ul class="op-list">{"".join(items)}</ul></details>'
    )


def _lines_cell(lines: list[str], limit: int = 3) -> str:
    links = [source_link(s) for s in lines[:limit]]
    more = len(lines) - limit
    return ", ".join(links) + (
        f' <span class="dim">+{more} more</span>' if more > 0 else ""
    )


def _touching_cell(slug: str, hits: list[tuple[str, int, dict[str, Any]]]) -> str:
    """A kernel's boundaries by direction and reason, each linked to its first row."""
    arrows = {"in": "\u2190", "out": "\u2192", "within": "\u21bb"}
    first: dict[tuple[str, str], int] = {}
    count: collections.Counter[tuple[str, str]] = collections.Counter()
    for direction, i, b in hits:
        key = (direction, str(b.get("reason")))
        first.setdefault(key, i)
        count[key] += 1
    return (
        "".join(
            f'<span class="bd bd-{direction}">{arrows[direction]} '
            f'<a href="#{boundary_id(slug, first[(direction, reason)])}">'
            f"<code>{esc_name(reason)}</code></a>"
            + (
                f" \u00d7{count[(direction, reason)]}"
                if count[(direction, reason)] > 1
                else ""
            )
            + "</span>"
            for direction, reason in sorted(
                count, key=lambda k: (["in", "out", "within"].index(k[0]), k[1])
            )
        )
        or '<span class="dim">none</span>'
    )
