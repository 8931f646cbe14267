"""The HTML page of a fusion capture: the op graph by kernel, annotated source, tables.

``FusionCapture.save_html(path)`` writes one self-contained page (inline CSS,
inline SVG, a few lines of inline JavaScript, nothing fetched from the
network) so that it can be attached to an issue or a pull request and opened
anywhere.  The page renders the JSON of :meth:`FusionCapture.to_json` and
nothing else, so the study harness can render pages later from saved JSON
files: every field is read with a default, because files written by older or
newer code may lack one.

It has, in the manner of LLVM's opt-viewer:

* per graph, a picture laid out by Graphviz ``dot`` (:mod:`.graphviz`):
  computing ops as nodes, one cluster per kernel, fused edges grey, kernel
  boundaries red and labelled with their reason (shared-input boundaries
  dashed); above :data:`.graphviz.MAX_OP_NODES` computing ops, one node per
  kernel instead;
* the user's source lines, each followed by its remarks (:mod:`.source`):
  which kernels compute ops of the line, which boundaries start or end there;
* tables: boundaries by reason and by category (with the bytes that cross
  them), and every boundary of every graph, each an element with class
  ``boundary`` and ``data-`` attributes so that tools can find them in the DOM;
* the graph breaks that separate the graphs, when the capture recorded them.

The picture is optional: without ``dot`` (or when it fails or runs too long)
the page says so and holds everything else.  Rendering never raises because
of the picture.
"""

from __future__ import annotations

import collections
import os
from typing import Any

from .common import (
    boundary_id,
    break_summary,
    computing_ops,
    esc,
    fmt_bytes,
    GRAPH_BREAK,
    graph_anchor,
    graph_links,
    source_link,
)
from .graphviz import (
    BOUNDARY_COLOUR,
    FUSED_EDGE_COLOUR,
    GENERATED_PALETTE,
    kernel_colours,
    KIND_FILL,
    picture,
    SHARED_INPUT_COLOUR,
)
from .source import source_section


__all__ = ["render_html", "save_html"]


# Boundary tables with more rows than this start collapsed.
OPEN_TABLE_ROWS = 40


def save_html(data: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write :func:`render_html`'s page to ``path`` (UTF-8)."""
    page = render_html(data)
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        f.write(page)


def render_html(data: dict[str, Any]) -> str:
    """The self-contained HTML page of a capture's JSON (``FusionCapture.to_json()``)."""
    graphs = list(data.get("graphs") or [])
    breaks = list(data.get("graph_breaks") or [])
    reasons = data.get("reasons") or {}
    slugs = _unique_slugs(graphs)
    colours = [kernel_colours(g) for g in graphs]

    body: list[str] = []
    body.append(_header(data, graphs, slugs))
    body.append(_legend())
    body.append(_reason_tables(graphs, breaks, reasons))
    if breaks:
        body.append(_graph_breaks(breaks, graphs, slugs))
    body.append('<section id="graphs"><h2>Graphs</h2>')
    if not graphs:
        body.append('<p class="note">The capture holds no compiled graph.</p>')
    for graph, slug, colour in zip(graphs, slugs, colours):
        body.append(_graph_section(graph, slug, colour))
    body.append("</section>")
    body.append(source_section(graphs, breaks, slugs, colours))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        "<title>Fusion report</title>\n"
        f"<style>{_CSS}</style>\n"
        "</head><body>\n" + "\n".join(body) + f"\n<script>{_JS}</script>\n"
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


def _bytes_cell(n: object) -> str:
    text = fmt_bytes(n)
    return f'<td class="num" title="{esc(n)}">{esc(text)}</td>' if text else "<td></td>"


def _is_extern(kind: object) -> bool:
    return kind in ("extern", "fallback")


def _kernel_counts(graph: dict[str, Any]) -> tuple[int, int]:
    kernels = graph.get("kernels") or []
    extern = sum(1 for k in kernels if _is_extern(k.get("kind")))
    return len(kernels) - extern, extern


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def _fusible_check(check: object) -> str:
    """The forced-fusion experiment's verdict on a boundary, when one was run."""
    if not check:
        return ""
    if not isinstance(check, dict):
        return esc(check)
    parts = []
    for key in ("forced", "correct", "faster"):
        if key in check:
            value = check[key]
            cls = "yes" if value is True else "no" if value is False else ""
            parts.append(
                f'<span class="check {cls}">{key}: {esc(_format_value(value))}</span>'
            )
    timing = []
    if check.get("stock_ms") is not None:
        timing.append(f"stock {_format_value(check['stock_ms'])} ms")
    if check.get("forced_ms") is not None:
        timing.append(f"forced {_format_value(check['forced_ms'])} ms")
    if check.get("speedup") is not None:
        timing.append(f"speed-up {_format_value(check['speedup'])}\u00d7")
    if timing:
        parts.append(f"<span>{esc(', '.join(timing))}</span>")
    if check.get("detail"):
        parts.append(f'<span class="detail">{esc(check["detail"])}</span>')
    return '<div class="fusible-check">' + " ".join(parts) + "</div>"


def _fusible(value: object) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return "unknown" if value is None else esc(value)


# ---------------------------------------------------------------- page parts


def _header(
    data: dict[str, Any], graphs: list[dict[str, Any]], slugs: list[str]
) -> str:
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
            f"<td>{esc(graph.get('cache', ''))}</td>"
            f'<td class="num">{len(computing)}'
            f' <span class="dim">of {len(graph.get("ops") or [])}</span></td>'
            f'<td class="num">{generated + extern}'
            f' <span class="dim">({generated} generated, {extern} extern)</span></td>'
            f'<td class="num">{len(bounds) - shared}'
            + (f' <span class="dim">+ {shared} shared input</span>' if shared else "")
            + "</td></tr>"
        )
    table = (
        '<table class="overview"><thead><tr><th>graph</th><th>device</th>'
        "<th>cache</th><th>computing ops</th><th>kernels</th>"
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
    return (
        "<header><h1>Fusion report</h1>"
        f'<p class="producer">produced by <code>{esc(data.get("producer", "?"))}</code>'
        f" \u00b7 schema version {esc(data.get('schema_version', '?'))}"
        f" \u00b7 {len(graphs)} graph{'s' if len(graphs) != 1 else ''}</p>"
        f"{nav}{table}</header>"
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
        " shared input, not fused</p>"
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
        return (
            '<section id="reasons"><h2>Boundaries by reason</h2>'
            '<p class="note">No kernel boundaries: every dependent pair of ops '
            "shares a kernel.</p></section>"
        )
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
            f"<td><code>{esc(code)}</code></td>"
            f'<td class="cat cat-{esc(row["category"])}">{esc(row["category"])}</td>'
            f"<td>{esc(', '.join(sorted(row['stages'])))}</td>"
            f'<td class="num">{row["count"]}{shared if row["shared"] else ""}</td>'
            + _bytes_cell(row["bytes"])
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
        f'<td class="cat cat-{esc(name)}">{esc(name)}</td>'
        f'<td class="num">{cat["count"]}</td>'
        + _bytes_cell(cat["bytes"])
        + f'<td class="num">{cat["reasons"]}</td></tr>'
        for name, cat in sorted(by_category.items(), key=lambda kv: -kv[1]["count"])
    ]
    return (
        '<section id="reasons"><h2>Boundaries by reason</h2>'
        '<div class="tables"><table class="by-reason"><thead><tr><th>reason</th>'
        "<th>category</th><th>stage</th><th>boundaries</th><th>bytes</th>"
        "<th>meaning</th></tr></thead><tbody>"
        + "".join(rows)
        + '</tbody></table><table class="by-category"><thead><tr><th>category</th>'
        "<th>boundaries</th><th>bytes</th><th>reasons</th></tr></thead><tbody>"
        + "".join(cat_rows)
        + "</tbody></table></div>"
        '<p class="dim">bytes: the size of the buffer that crosses each boundary, '
        "summed (written once and read back at least once).</p></section>"
    )


def _graph_breaks(
    breaks: list[dict[str, Any]], graphs: list[dict[str, Any]], slugs: list[str]
) -> str:
    """The Dynamo graph breaks, each with its reason, source line and graphs."""
    items = []
    for i, brk in enumerate(breaks):
        source = brk.get("source")
        headline, explanation = break_summary(brk)
        stack = [s for s in brk.get("user_stack") or [] if s != source]
        before = graph_links(list(brk.get("graphs_before") or []), graphs, slugs)
        after = graph_links(list(brk.get("graphs_after") or []), graphs, slugs)
        items.append(
            f'<li class="graph-break" id="graph-break-{i}"'
            f' data-reason="{esc(brk.get("reason") or GRAPH_BREAK[0])}"'
            f' data-category="{esc(brk.get("category") or GRAPH_BREAK[1])}"'
            f' data-compile-id="{esc(brk.get("compile_id"))}"'
            f' data-source="{esc(source)}" data-gb-type="{esc(brk.get("gb_type"))}">'
            f'<b class="gb-type">{esc(headline)}</b>'
            + (f" at {source_link(source)}" if source else "")
            + f' <span class="dim">(in frame {esc(brk.get("compile_id", "?"))})</span>'
            + (
                f'<div class="gb-reason">{esc(explanation)}</div>'
                if explanation
                else ""
            )
            + f'<div class="gb-graphs">graphs before: {before} \u2192 after: {after}</div>'
            + (
                '<div class="dim">called from '
                + " \u2190 ".join(source_link(s) for s in reversed(stack))
                + "</div>"
                if stack
                else ""
            )
            + (
                "<details><summary>Dynamo's message</summary>"
                f'<pre class="gb-detail">{esc(brk.get("detail"))}</pre></details>'
                if brk.get("detail")
                else ""
            )
            + "</li>"
        )
    return (
        '<section id="graph-breaks"><h2>Graph breaks</h2>'
        "<p>Ops on either side of a Dynamo graph break are compiled in different "
        "graphs, so they never share a kernel.</p>"
        f'<ol class="graph-breaks">{"".join(items)}</ol></section>'
    )


def _graph_section(graph: dict[str, Any], slug: str, colours: dict[str, str]) -> str:
    cid = graph.get("compile_id", "?")
    computing = computing_ops(graph)
    generated, extern = _kernel_counts(graph)
    bounds = graph.get("boundaries") or []
    summary = (
        f"graph {esc(cid)} <span class=dim>({esc(graph.get('device', ''))})</span>: "
        f"{len(computing)} ops \u2192 {generated + extern} kernels "
        f"<span class=dim>({generated} generated, {extern} extern)</span>, "
        f"{len(bounds)} boundar{'y' if len(bounds) == 1 else 'ies'}"
    )
    parts = [
        f'<details class="graph" id="{esc(slug)}" data-graph="{esc(cid)}" open>'
        f"<summary>{summary}</summary>",
        _kernel_legend(graph, colours),
        picture(graph, slug, colours),
        _boundary_table(graph, slug, colours),
    ]
    eliminated = [op for op in computing if not op.get("kernels")]
    if eliminated:
        parts.append(
            '<p class="dim">Computing ops with no kernel of their own: '
            + ", ".join(
                f"<code>{esc(op.get('name'))}</code> ({esc(op.get('eliminated', 'no kernel'))})"
                for op in eliminated
            )
            + "</p>"
        )
    parts.append("</details>")
    return "\n".join(parts)


def _kernel_legend(graph: dict[str, Any], colours: dict[str, str]) -> str:
    ops = {op.get("name"): op for op in graph.get("ops") or []}
    chips = []
    for kernel in graph.get("kernels") or []:
        name = kernel.get("name", "")
        names = [n for n in kernel.get("ops") or [] if ops.get(n, {}).get("computes")]
        function = kernel.get("function")
        title = f"{kernel.get('kind')}" + (f", {function}" if function else "")
        title += f": {', '.join(names)}"
        chips.append(
            f'<span class="chip kernel kind-{esc(kernel.get("kind"))}"'
            f' data-kernel="{esc(name)}" data-kind="{esc(kernel.get("kind"))}"'
            f' data-fill="{esc(colours.get(name, ""))}"'
            f' style="background:{esc(colours.get(name, "#ffffff"))}"'
            f' title="{esc(title)}">{esc(name)} <span class=dim>{len(names)}</span></span>'
        )
    if not chips:
        return ""
    inner = " ".join(chips)
    if len(chips) > 40:
        return (
            f'<details class="kernels"><summary>{len(chips)} kernels</summary>'
            f"{inner}</details>"
        )
    return f'<p class="kernels">kernels: {inner}</p>'


def _boundary_table(graph: dict[str, Any], slug: str, colours: dict[str, str]) -> str:
    bounds = graph.get("boundaries") or []
    cid = graph.get("compile_id", "?")
    ops = {op.get("name"): op for op in graph.get("ops") or []}
    if not bounds:
        return '<p class="quiet">No kernel boundaries in this graph.</p>'
    rows = []
    for i, b in enumerate(bounds):
        args = dict(b.get("args") or {})
        nbytes = args.pop("bytes", None)
        kernels = " \u2192 ".join(
            f'<span class="chip" style="background:{esc(colours.get(k, "#ffffff"))}">'
            f"{esc(k)}</span>"
            for k in b.get("kernels") or []
        )
        arrow = "\u2225" if b.get("relation") == "shared_input" else "\u2192"
        where = " / ".join(
            source_link(source)
            for source in dict.fromkeys(
                (
                    ops.get(b.get("producer"), {}).get("source"),
                    ops.get(b.get("consumer"), {}).get("source"),
                )
            )
            if source
        )
        extra = ", ".join(f"{k}={_format_value(v)}" for k, v in args.items())
        rows.append(
            f'<tr class="boundary rel-{esc(b.get("relation"))}" id="{boundary_id(slug, i)}"'
            f' data-graph="{esc(cid)}" data-producer="{esc(b.get("producer"))}"'
            f' data-consumer="{esc(b.get("consumer"))}" data-reason="{esc(b.get("reason"))}"'
            f' data-category="{esc(b.get("category"))}" data-relation="{esc(b.get("relation"))}">'
            f"<td><code>{esc(b.get('producer'))}</code></td>"
            f"<td>{arrow}</td>"
            f"<td><code>{esc(b.get('consumer'))}</code></td>"
            f"<td>{esc(b.get('relation'))}</td>"
            f"<td><code>{esc(b.get('reason'))}</code></td>"
            f'<td class="cat cat-{esc(b.get("category"))}">{esc(b.get("category"))}</td>'
            f"<td>{esc(b.get('stage'))}</td>"
            f"<td>{kernels}</td>"
            + _bytes_cell(nbytes)
            + f'<td class="detail">{esc(b.get("detail"))}'
            + (f'<div class="args">{esc(extra)}</div>' if extra else "")
            + (f'<div class="dim">{where}</div>' if where else "")
            + "</td>"
            f"<td>{_fusible(b.get('fusible'))}</td>"
            f"<td>{_fusible_check(b.get('fusible_check'))}</td></tr>"
        )
    opened = " open" if len(rows) <= OPEN_TABLE_ROWS else ""
    return (
        f'<details class="boundary-list"{opened}><summary>{len(rows)} '
        f"boundar{'y' if len(rows) == 1 else 'ies'} of graph {esc(cid)}</summary>"
        '<table class="boundaries"><thead><tr><th>producer</th><th></th>'
        "<th>consumer</th><th>relation</th><th>reason</th><th>category</th>"
        "<th>stage</th><th>kernels</th><th>bytes</th><th>detail</th>"
        "<th>fusible</th><th>fusible check</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></details>"
    )


_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  margin: 1.2em 2em; color: #1c2833; background: #fff; }
h1 { font-size: 1.6em; margin: 0 0 .2em; } h2 { font-size: 1.25em; margin: 1.4em 0 .5em;
  border-bottom: 1px solid #d5d8dc; }
code { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.dim { color: #707b7c; font-weight: normal; }
.note { background: #fff8e1; border-left: 4px solid #f9a825; padding: .4em .8em; }
nav { margin: .4em 0 .8em; }
table { border-collapse: collapse; margin: .4em 0; }
th, td { border: 1px solid #d5d8dc; padding: 3px 7px; vertical-align: top; text-align: left; }
th { background: #f2f4f4; font-weight: 600; }
td.num { text-align: right; white-space: nowrap; }
.tables { display: flex; gap: 2em; flex-wrap: wrap; align-items: flex-start; }
table.boundaries td.detail { max-width: 38em; font-size: 12.5px; }
.args { color: #566573; font-size: 11.5px; }
.cat { font-weight: 600; white-space: nowrap; }
.cat-legality { color: #b71c1c; } .cat-heuristic { color: #e65100; }
.cat-backend { color: #4a148c; } .cat-config { color: #0d47a1; }
.cat-not_considered { color: #546e7a; }
.chip { display: inline-block; border: 1px solid #90a4ae; border-radius: 4px;
  padding: 0 5px; min-width: 1em; min-height: 1em; font-size: 12px; margin: 1px; }
.chip.kind-extern, .chip.kind-fallback, .chip.kind-template { border: 2px solid #37474f; }
.edge { display: inline-block; width: 2.2em; border-top: 2px solid; vertical-align: middle; }
.edge.dashed { border-top-style: dashed; }
details.graph { border: 1px solid #d5d8dc; border-radius: 6px; padding: .3em .8em;
  margin: .6em 0; }
details.graph > summary { font-weight: 600; cursor: pointer; }
.picture { overflow: auto; max-height: 85vh; border: 1px solid #eaeded; margin: .4em 0; }
.picture svg { display: block; }
.picture.fit svg { width: 100%; height: auto; }
.picture a { cursor: pointer; }
tr.boundary:target, li.graph-break:target { background: #ffebee; }
tr.rel-shared_input td { background: #fdfefe; }
.fusible-check { font-size: 12px; } .check.yes { color: #1b5e20; } .check.no { color: #b71c1c; }
.src { border: 1px solid #eaeded; border-radius: 4px; padding: .3em 0; }
.line { white-space: pre; padding: 0 .6em; }
.line.annotated { background: #fef9e7; }
.ln { display: inline-block; width: 4em; color: #99a3a4; text-align: right;
  margin-right: 1em; user-select: none; }
ul.remarks { margin: .1em 0 .4em 5.6em; padding-left: 1em; font-size: 13px; }
.remark.boundary-remark, .remark.graph-break-remark { color: #8e1b1b; }
.remark.kernel-remark { color: #1e5631; } .remark.kernel-remark.alone { color: #455a64; }
.gap { color: #99a3a4; padding: 0 .6em; font-size: 12px; }
.kind { display: inline-block; min-width: 3.6em; text-align: center; border-radius: 3px;
  font-size: 11px; font-weight: 600; padding: 0 3px; color: #fff; }
.kind-fused { background: #2e7d32; } .kind-alone { background: #78909c; }
.kind-missed { background: #c62828; } .kind-none { background: #9e9e9e; }
ol.graph-breaks li { margin-bottom: .6em; }
.gb-reason { margin-left: 1em; } .gb-graphs { margin-left: 1em; }
pre.gb-detail { white-space: pre-wrap; font-size: 12px; background: #f8f9f9;
  padding: .4em .6em; max-width: 100em; }
.picture-hint { font-size: 12px; margin: 0 0 .6em; }
p.quiet { color: #566573; }
details.gap summary { cursor: pointer; }
"""


# Opening the <details> that hold a link's target, so that links from the
# picture and the annotated source into collapsed tables land somewhere.
_JS = """
function openTarget() {
  var id = decodeURIComponent(location.hash.slice(1));
  var el = id && document.getElementById(id);
  for (var p = el; p; p = p.parentElement) {
    if (p.tagName === "DETAILS") { p.open = true; }
  }
  if (el) { el.scrollIntoView({block: "center"}); }
}
window.addEventListener("hashchange", openTarget);
if (location.hash) { openTarget(); }
document.querySelectorAll(".picture").forEach(function (pic) {
  pic.addEventListener("dblclick", function () { pic.classList.toggle("fit"); });
  // dot may put a wide picture's first ops anywhere along the top: when no
  // node is in view, scroll to the topmost one rather than show the empty
  // top-left corner.
  if (pic.scrollWidth <= pic.clientWidth) { return; }
  var top = null, seen = false, box = pic.getBoundingClientRect();
  pic.querySelectorAll("g.node").forEach(function (node) {
    var r = node.getBoundingClientRect();
    seen = seen || (r.left < box.right && r.right > box.left &&
                    r.top < box.bottom && r.bottom > box.top);
    if (top === null || r.top < top.top - 1) { top = r; }
  });
  if (!seen && top !== null) {
    pic.scrollLeft += top.left - box.left - (pic.clientWidth - top.width) / 2;
  }
});
"""
