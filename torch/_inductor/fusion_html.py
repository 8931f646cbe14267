"""The HTML page of a fusion capture: the op graph by kernel, annotated source, tables.

``FusionCapture.save_html(path)`` writes one self-contained page (inline CSS,
inline SVG, a few lines of inline JavaScript, nothing fetched from the
network) so that it can be attached to an issue or a pull request and opened
anywhere.  The page renders the JSON of :meth:`FusionCapture.to_json` and
nothing else, so the study harness can render pages later from saved JSON
files: every field is read with a default, because files written by older or
newer code may lack one.

It has, in the manner of LLVM's opt-viewer:

* per graph, a picture laid out by Graphviz ``dot``: computing ops as nodes,
  one cluster per kernel, fused edges grey, kernel boundaries red and labelled
  with their reason (shared-input boundaries dashed).  Above
  :data:`MAX_OP_NODES` computing ops the picture shows kernels instead of ops
  (one node per kernel, boundaries aggregated into one edge per pair of
  kernels), and says so, because dot's layout of thousands of ops is neither
  fast nor readable;
* the user's source lines, each followed by its remarks (which kernels
  compute ops of the line, which boundaries start or end there);
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
import hashlib
import html
import itertools
import logging
import os
import re
import shutil
import subprocess
import time
from typing import Any


__all__ = ["DOT_TIMEOUT_S", "MAX_OP_NODES", "render_html", "save_html"]

log = logging.getLogger(__name__)

# Above this many computing ops in a graph, the picture shows one node per
# kernel.  dot (2.43) lays out 400 ops in under a second, but the op-level
# picture of ResNet-50's backward (942 ops) takes it 8 s with the edge labels
# in the layout (which it then fails to route; over 60 s with newrank) and
# 0.4 s with xlabels, and is some 56,000 points wide: nobody can read it.
# Its kernel-level picture takes 0.2 s.
MAX_OP_NODES = 400
# dot's run time per graph, all attempts together, is bounded so that a
# huge graph cannot hang the page.
DOT_TIMEOUT_S = 30.0
# Lines of context shown around each annotated source line.
SOURCE_CONTEXT = 2
# Runs of unannotated lines longer than this are folded away.
SOURCE_FOLD = 4
# Folded runs longer than this are left out of the page altogether.
SOURCE_MAX_FOLDED = 300
# Remarks shown under one source line before the rest are folded away, and
# the most a line holds at all: a line run by every layer of a deep model
# (``out = self.bn1(out)``) gathers thousands, which the graphs' boundary
# tables already list.
REMARKS_PER_LINE = 10
MAX_REMARKS_PER_LINE = 200
# Boundary tables with more rows than this start collapsed.
OPEN_TABLE_ROWS = 40

# Fill colours of generated kernels (C++ loop nests, Triton kernels, foreach
# and combo kernels), by their order in the graph.  Extern, fallback and
# template kernels have colours of their own, outside this palette, and other
# node shapes, so that they stand out.
GENERATED_PALETTE = (
    "#9fd3f5",
    "#a8e6b4",
    "#f7e08a",
    "#9ee2d6",
    "#f6c28b",
    "#c2d9f7",
    "#d6ef9a",
    "#f3b6d2",
)
KIND_FILL = {
    "extern": "#c8ccd0",
    "fallback": "#e5b98f",
    "template": "#cbb4e8",
}
KIND_SHAPE = {"extern": "box3d", "fallback": "box3d", "template": "component"}
BOUNDARY_COLOUR = "#c62828"
SHARED_INPUT_COLOUR = "#e57373"
FUSED_EDGE_COLOUR = "#8a8a8a"

# graph breaks are not boundaries inside a graph, but they separate kernels
# all the same; they enter the reason table under this code.
GRAPH_BREAK = ("graph_break", "legality", "dynamo")

_warned_missing_dot = False


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
    colours = [_kernel_colours(g) for g in graphs]

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
    body.append(_source_section(graphs, breaks, slugs, colours))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        "<title>Fusion report</title>\n"
        f"<style>{_CSS}</style>\n"
        "</head><body>\n" + "\n".join(body) + f"\n<script>{_JS}</script>\n"
        "</body></html>\n"
    )


# ---------------------------------------------------------------- helpers


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def graph_anchor(compile_id: str) -> str:
    """The id of a graph's section: ``graph-`` and the compile id, non-alnum as ``-``."""
    return "graph-" + re.sub(r"[^0-9A-Za-z]", "-", str(compile_id))


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


def _fmt_bytes(n: object) -> str:
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return ""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)  # unreachable


def _bytes_cell(n: object) -> str:
    text = _fmt_bytes(n)
    return f'<td class="num" title="{_e(n)}">{_e(text)}</td>' if text else "<td></td>"


def _split_source(source: object) -> tuple[str, int] | None:
    if not isinstance(source, str) or ":" not in source:
        return None
    path, _, line = source.rpartition(":")
    try:
        return path, int(line)
    except ValueError:
        return None


def _short_source(source: object) -> str:
    split = _split_source(source)
    if split is None:
        return "" if source is None else str(source)
    return f"{os.path.basename(split[0])}:{split[1]}"


def _is_extern(kind: object) -> bool:
    return kind in ("extern", "fallback")


def _kernel_colours(graph: dict[str, Any]) -> dict[str, str]:
    """Kernel name -> fill colour; generated kernels cycle through the palette."""
    out: dict[str, str] = {}
    generated = 0
    for kernel in graph.get("kernels") or []:
        kind = kernel.get("kind")
        if kind in KIND_FILL:
            out[kernel.get("name", "")] = KIND_FILL[kind]
        else:
            out[kernel.get("name", "")] = GENERATED_PALETTE[
                generated % len(GENERATED_PALETTE)
            ]
            generated += 1
    return out


def _tint(colour: str, amount: float = 0.55) -> str:
    """``colour`` mixed with white: the background of a kernel's cluster."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def _computing(graph: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for op in graph.get("ops") or [] if op.get("computes")]


def _kernel_counts(graph: dict[str, Any]) -> tuple[int, int]:
    kernels = graph.get("kernels") or []
    extern = sum(1 for k in kernels if _is_extern(k.get("kind")))
    return len(kernels) - extern, extern


def _boundary_id(slug: str, index: int) -> str:
    return f"b-{slug}-{index}"


def _graph_links(ids: list[str], graphs: list[dict[str, Any]], slugs: list[str]) -> str:
    """Links to the sections of the graphs with these compile ids (and their backward)."""
    parts = []
    linked: set[str] = set()
    for cid in ids:
        # "1/0" also names its backward "1/0 backward", which the list may
        # name again: each graph is linked once.
        targets = [
            (g.get("compile_id", ""), slug)
            for g, slug in zip(graphs, slugs)
            if g.get("compile_id") == cid
            or str(g.get("compile_id", "")).startswith(f"{cid} ")
        ]
        if not targets:
            parts.append(f'<span title="not in this capture">graph {_e(cid)}</span>')
        for name, slug in targets:
            if slug not in linked:
                linked.add(slug)
                parts.append(
                    f'<a class="graph-link" href="#{_e(slug)}">graph {_e(name)}</a>'
                )
    return ", ".join(parts) or "none"


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
        return _e(check)
    parts = []
    for key in ("forced", "correct", "faster"):
        if key in check:
            value = check[key]
            cls = "yes" if value is True else "no" if value is False else ""
            parts.append(
                f'<span class="check {cls}">{key}: {_e(_format_value(value))}</span>'
            )
    timing = []
    if check.get("stock_ms") is not None:
        timing.append(f"stock {_format_value(check['stock_ms'])} ms")
    if check.get("forced_ms") is not None:
        timing.append(f"forced {_format_value(check['forced_ms'])} ms")
    if check.get("speedup") is not None:
        timing.append(f"speed-up {_format_value(check['speedup'])}\u00d7")
    if timing:
        parts.append(f"<span>{_e(', '.join(timing))}</span>")
    if check.get("detail"):
        parts.append(f'<span class="detail">{_e(check["detail"])}</span>')
    return '<div class="fusible-check">' + " ".join(parts) + "</div>"


def _fusible(value: object) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return "unknown" if value is None else _e(value)


# ---------------------------------------------------------------- page parts


def _header(
    data: dict[str, Any], graphs: list[dict[str, Any]], slugs: list[str]
) -> str:
    rows = []
    for graph, slug in zip(graphs, slugs):
        computing = _computing(graph)
        generated, extern = _kernel_counts(graph)
        bounds = graph.get("boundaries") or []
        shared = sum(1 for b in bounds if b.get("relation") == "shared_input")
        rows.append(
            "<tr>"
            f'<td><a href="#{_e(slug)}">{_e(graph.get("compile_id"))}</a></td>'
            f"<td>{_e(graph.get('device', ''))}</td>"
            f"<td>{_e(graph.get('cache', ''))}</td>"
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
        f'<p class="producer">produced by <code>{_e(data.get("producer", "?"))}</code>'
        f" \u00b7 schema version {_e(data.get('schema_version', '?'))}"
        f" \u00b7 {len(graphs)} graph{'s' if len(graphs) != 1 else ''}</p>"
        f"{nav}{table}</header>"
    )


def _legend() -> str:
    def chip(colour: str, text: str, cls: str = "") -> str:
        return f'<span class="chip {cls}" style="background:{colour}">{_e(text)}</span>'

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
            f'<tr class="reason-row" data-reason="{_e(code)}"'
            f' data-category="{_e(row["category"])}" data-count="{row["count"]}"'
            f' data-bytes="{_e(row["bytes"] if row["bytes"] is not None else "")}">'
            f"<td><code>{_e(code)}</code></td>"
            f'<td class="cat cat-{_e(row["category"])}">{_e(row["category"])}</td>'
            f"<td>{_e(', '.join(sorted(row['stages'])))}</td>"
            f'<td class="num">{row["count"]}{shared if row["shared"] else ""}</td>'
            + _bytes_cell(row["bytes"])
            + f"<td>{_e(description)}</td></tr>"
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
        f'<tr class="category-row" data-category="{_e(name)}"'
        f' data-count="{cat["count"]}"'
        f' data-bytes="{_e(cat["bytes"] if cat["bytes"] is not None else "")}">'
        f'<td class="cat cat-{_e(name)}">{_e(name)}</td>'
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


def _break_summary(brk: dict[str, Any]) -> tuple[str, str]:
    """A graph break's headline and one-line reason, from Dynamo's message.

    Dynamo's message (``detail``) is many lines: "Encountered graph break when
    attempting to trace ...", the kind of break (``gb_type``), an
    "Explanation:", hints and a debug context.  The kind and the explanation
    say why; the whole message is kept on the page, folded.
    """
    detail = str(brk.get("detail") or "")
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    headline = str(brk.get("gb_type") or "") or (lines[0] if lines else "graph break")
    explanation = next(
        (
            line.split(":", 1)[1].strip()
            for line in lines
            if line.startswith("Explanation:")
        ),
        "",
    )
    if not explanation:
        explanation = next((line for line in lines if line != headline), "")
    return headline, explanation


def _source_anchor(source: object) -> str | None:
    """The id of a source line in the annotated source (``src-<file>-L<line>``)."""
    split = _split_source(source)
    if split is None:
        return None
    digest = hashlib.sha1(split[0].encode("utf-8", "replace")).hexdigest()[:8]
    return f"src-{digest}-L{split[1]}"


def _source_link(source: object) -> str:
    """``file:line`` linked to that line of the annotated source."""
    anchor = _source_anchor(source)
    text = f'<code title="{_e(source)}">{_e(_short_source(source))}</code>'
    return f'<a href="#{anchor}">{text}</a>' if anchor else text


def _graph_breaks(
    breaks: list[dict[str, Any]], graphs: list[dict[str, Any]], slugs: list[str]
) -> str:
    """The Dynamo graph breaks, each with its reason, source line and graphs."""
    items = []
    for i, brk in enumerate(breaks):
        source = brk.get("source")
        headline, explanation = _break_summary(brk)
        stack = [s for s in brk.get("user_stack") or [] if s != source]
        before = _graph_links(list(brk.get("graphs_before") or []), graphs, slugs)
        after = _graph_links(list(brk.get("graphs_after") or []), graphs, slugs)
        items.append(
            f'<li class="graph-break" id="graph-break-{i}"'
            f' data-reason="{_e(brk.get("reason") or GRAPH_BREAK[0])}"'
            f' data-category="{_e(brk.get("category") or GRAPH_BREAK[1])}"'
            f' data-compile-id="{_e(brk.get("compile_id"))}"'
            f' data-source="{_e(source)}" data-gb-type="{_e(brk.get("gb_type"))}">'
            f'<b class="gb-type">{_e(headline)}</b>'
            + (f" at {_source_link(source)}" if source else "")
            + f' <span class="dim">(in frame {_e(brk.get("compile_id", "?"))})</span>'
            + (f'<div class="gb-reason">{_e(explanation)}</div>' if explanation else "")
            + f'<div class="gb-graphs">graphs before: {before} \u2192 after: {after}</div>'
            + (
                '<div class="dim">called from '
                + " \u2190 ".join(_source_link(s) for s in reversed(stack))
                + "</div>"
                if stack
                else ""
            )
            + (
                "<details><summary>Dynamo's message</summary>"
                f'<pre class="gb-detail">{_e(brk.get("detail"))}</pre></details>'
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
    computing = _computing(graph)
    generated, extern = _kernel_counts(graph)
    bounds = graph.get("boundaries") or []
    summary = (
        f"graph {_e(cid)} <span class=dim>({_e(graph.get('device', ''))})</span>: "
        f"{len(computing)} ops \u2192 {generated + extern} kernels "
        f"<span class=dim>({generated} generated, {extern} extern)</span>, "
        f"{len(bounds)} boundar{'y' if len(bounds) == 1 else 'ies'}"
    )
    parts = [
        f'<details class="graph" id="{_e(slug)}" data-graph="{_e(cid)}" open>'
        f"<summary>{summary}</summary>",
        _kernel_legend(graph, colours),
        _picture(graph, slug, colours),
        _boundary_table(graph, slug, colours),
    ]
    eliminated = [op for op in computing if not op.get("kernels")]
    if eliminated:
        parts.append(
            '<p class="dim">Computing ops with no kernel of their own: '
            + ", ".join(
                f"<code>{_e(op.get('name'))}</code> ({_e(op.get('eliminated', 'no kernel'))})"
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
            f'<span class="chip kernel kind-{_e(kernel.get("kind"))}"'
            f' data-kernel="{_e(name)}" data-kind="{_e(kernel.get("kind"))}"'
            f' data-fill="{_e(colours.get(name, ""))}"'
            f' style="background:{_e(colours.get(name, "#ffffff"))}"'
            f' title="{_e(title)}">{_e(name)} <span class=dim>{len(names)}</span></span>'
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
            f'<span class="chip" style="background:{_e(colours.get(k, "#ffffff"))}">'
            f"{_e(k)}</span>"
            for k in b.get("kernels") or []
        )
        arrow = "\u2225" if b.get("relation") == "shared_input" else "\u2192"
        where = " / ".join(
            _source_link(source)
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
            f'<tr class="boundary rel-{_e(b.get("relation"))}" id="{_boundary_id(slug, i)}"'
            f' data-graph="{_e(cid)}" data-producer="{_e(b.get("producer"))}"'
            f' data-consumer="{_e(b.get("consumer"))}" data-reason="{_e(b.get("reason"))}"'
            f' data-category="{_e(b.get("category"))}" data-relation="{_e(b.get("relation"))}">'
            f"<td><code>{_e(b.get('producer'))}</code></td>"
            f"<td>{arrow}</td>"
            f"<td><code>{_e(b.get('consumer'))}</code></td>"
            f"<td>{_e(b.get('relation'))}</td>"
            f"<td><code>{_e(b.get('reason'))}</code></td>"
            f'<td class="cat cat-{_e(b.get("category"))}">{_e(b.get("category"))}</td>'
            f"<td>{_e(b.get('stage'))}</td>"
            f"<td>{kernels}</td>"
            + _bytes_cell(nbytes)
            + f'<td class="detail">{_e(b.get("detail"))}'
            + (f'<div class="args">{_e(extra)}</div>' if extra else "")
            + (f'<div class="dim">{where}</div>' if where else "")
            + "</td>"
            f"<td>{_fusible(b.get('fusible'))}</td>"
            f"<td>{_fusible_check(b.get('fusible_check'))}</td></tr>"
        )
    opened = " open" if len(rows) <= OPEN_TABLE_ROWS else ""
    return (
        f'<details class="boundary-list"{opened}><summary>{len(rows)} '
        f"boundar{'y' if len(rows) == 1 else 'ies'} of graph {_e(cid)}</summary>"
        '<table class="boundaries"><thead><tr><th>producer</th><th></th>'
        "<th>consumer</th><th>relation</th><th>reason</th><th>category</th>"
        "<th>stage</th><th>kernels</th><th>bytes</th><th>detail</th>"
        "<th>fusible</th><th>fusible check</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></details>"
    )


# ---------------------------------------------------------------- the picture


def _find_dot() -> str | None:
    """The Graphviz ``dot`` binary, or None (tests patch this)."""
    return shutil.which("dot")


def _note(text: str) -> str:
    return f'<p class="note picture-note">{_e(text)}</p>'


def _picture(graph: dict[str, Any], slug: str, colours: dict[str, str]) -> str:
    """The graph's SVG, or a note saying why there is none; never raises.

    dot is tried on simpler pictures until one works, all within
    :data:`DOT_TIMEOUT_S`: first with edge labels that take part in the
    layout (the most readable), then with labels placed after it (``xlabel``:
    much faster, and it avoids dot 2.43's failures to route labelled edges
    between clusters), then at kernel level.
    """
    global _warned_missing_dot
    try:
        n_ops = len(_computing(graph))
        if not n_ops:
            return _note("This graph computes nothing: no picture.")
        dot = _find_dot()
        if dot is None:
            if not _warned_missing_dot:
                _warned_missing_dot = True
                log.warning(
                    "fusion report: Graphviz 'dot' not found; the HTML page has no "
                    "pictures (install Graphviz, e.g. apt-get install graphviz)"
                )
            return _note(
                "No picture: Graphviz's dot was not found on PATH. Install "
                "Graphviz (e.g. apt-get install graphviz, brew install graphviz) "
                "and render the page again."
            )
        attempts = [
            ("kernels", "label"),
            ("kernels", "xlabel"),
        ]
        if n_ops <= MAX_OP_NODES:
            attempts = [("ops", "label"), ("ops", "xlabel"), *attempts]
        deadline = time.monotonic() + DOT_TIMEOUT_S
        errors = []
        svg: str | None = None
        mode, edge_label = attempts[0]
        for mode, edge_label in attempts:
            make = _op_dot if mode == "ops" else _kernel_dot
            source = make(graph, slug, colours, edge_label)
            # Leave later (simpler, faster) attempts half of the time left.
            left = deadline - time.monotonic()
            last = (mode, edge_label) == attempts[-1]
            svg, error = _run_dot(dot, source, left if last else left / 2)
            if svg is not None:
                break
            errors.append(f"{mode} with {edge_label}s: {error}")
            log.debug("fusion report: dot failed on %s: %s", slug, error)
            if time.monotonic() >= deadline:
                break
        if svg is None:
            log.warning(
                "fusion report: no picture of graph %s: %s",
                graph.get("compile_id"),
                "; ".join(errors),
            )
            return _note(
                "No picture: Graphviz's dot gave no picture of this graph within "
                f"{DOT_TIMEOUT_S:g} s ({'; '.join(errors)})."
            )
        note = ""
        if mode == "kernels":
            why = (
                f"it has {n_ops} computing ops, more than {MAX_OP_NODES}"
                if n_ops > MAX_OP_NODES
                else "dot could not lay out its ops"
            )
            note = (
                f'<p class="note picture-note kernel-level">Collapsed to kernels: '
                f"{_e(why)}. The picture shows one node per kernel (its op count "
                "and first ops) and one edge per pair of kernels with boundaries "
                "between them, labelled with their reasons, counts and bytes; the "
                "table below lists every boundary.</p>"
            )
        return (
            note
            + f'<div class="picture" data-mode="{mode}" data-labels="{edge_label}" data-graph="'
            f'{_e(graph.get("compile_id"))}">{svg}</div>'
            '<p class="dim picture-hint">Hover over a node or edge for details; '
            "click a red edge for its boundary; double-click the picture to fit it "
            "to the page width.</p>"
        )
    except Exception as exc:  # the picture is optional; the page is not
        log.warning("fusion report: the picture of a graph failed", exc_info=True)
        return _note(f"No picture: {type(exc).__name__}: {exc}")


def _run_dot(dot: str, source: str, timeout: float) -> tuple[str | None, str]:
    """dot's SVG of ``source``, ready to inline, or None and why not."""
    if timeout <= 0:
        return None, "no time left"
    try:
        proc = subprocess.run(
            [dot, "-Tsvg"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"did not finish within {timeout:.3g} s"
    except OSError as exc:
        return None, f"could not run ({exc})"
    if proc.returncode != 0:
        # dot says where it failed on the last line or two; the rest is noise.
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"exit status {proc.returncode}: " + " ".join(err[-2:])[:300]
    svg = proc.stdout.decode("utf-8", "replace")
    start = svg.find("<svg")
    if start < 0:
        return None, "no SVG in its output"
    # The XML prolog and doctype are not allowed inside HTML; the comments
    # only repeat the node names.
    return re.sub(r"<!--.*?-->", "", svg[start:], flags=re.DOTALL), ""


def _q(text: object) -> str:
    """A DOT quoted string."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{s}"'


def _name_list(names: list[str], limit: int) -> str:
    """The first ``limit`` names, then an ellipsis if there are more."""
    return ", ".join(names[:limit]) + (", \u2026" if len(names) > limit else "")


# Columns of the grid of unconnected kernels in the kernel-level picture.
GRID_COLUMNS = 8


def _bottom_grid(nodes: list[str]) -> list[str]:
    """DOT lines that put these unconnected nodes in a grid on the last ranks.

    Invisible edges chain each node to the one a row below it, and the last
    row is ``rank=sink``, so that dot lays the rows out at the bottom instead
    of side by side on the first rank.
    """
    if not nodes:
        return []
    # The first row takes the remainder, so that every node above the last
    # row has one below it.
    first = len(nodes) % GRID_COLUMNS or GRID_COLUMNS
    rows = [nodes[:first]] + [
        nodes[i : i + GRID_COLUMNS] for i in range(first, len(nodes), GRID_COLUMNS)
    ]
    lines = [
        f"  {_q(upper)} -> {_q(lower)} [style=invis];"
        for above, below in itertools.pairwise(rows)
        for upper, lower in zip(above, below)
    ]
    lines.append("  { rank=sink; " + " ".join(_q(n) + ";" for n in rows[-1]) + " }")
    return lines


def _short_target(target: object) -> str:
    parts = str(target).split(".")
    if len(parts) >= 3 and parts[0] in ("aten", "prims", "quantized"):
        return parts[1]
    return str(target)[:40]


def _abbreviate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _dot_prelude(slug: str, label: str) -> list[str]:
    """The graph's attributes.  Not ``newrank``: with clusters it makes dot's
    layout many times slower and lets dot 2.43 fail (``trouble in init_rank``).
    """
    return [
        f"digraph {_q(slug)} {{",
        f"  graph [id={_q('svg-' + slug)}, rankdir=TB, "
        'fontname="Helvetica", fontsize=11, bgcolor="white", nodesep=0.25, '
        f"ranksep=0.35, label={_q(label)}, labelloc=t, labeljust=l];",
        '  node [fontname="Helvetica", fontsize=10, shape=box, '
        'style="rounded,filled", margin="0.08,0.03", height=0.3];',
        '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.6];',
    ]


def _cluster_style(kind: object, colour: str) -> str:
    border = "#37474f" if kind in KIND_FILL else "#78909c"
    style = {
        "extern": "filled,bold",
        "fallback": "filled,bold,dashed",
        "template": "filled,bold,rounded",
    }.get(str(kind), "filled,rounded")
    return (
        f'style="{style}", fillcolor="{_tint(colour)}", color="{border}", '
        f'penwidth={2 if kind in KIND_FILL else 1}, fontsize=10, fontcolor="#263238"'
    )


def _node_style(kind: object, colour: str) -> str:
    shape = KIND_SHAPE.get(str(kind), "box")
    style = "filled" if kind in KIND_FILL else "rounded,filled"
    return f'shape={shape}, style="{style}", fillcolor="{colour}"'


def _primary_kernels(graph: dict[str, Any]) -> dict[str, str]:
    """Op -> the one kernel whose cluster draws it.

    An op inlined into several kernels (recomputed) can sit in only one
    cluster: prefer the kernel that boundaries name as carrying its value,
    then the kernel holding most of its fused neighbours, then the first.
    """
    members: dict[str, list[str]] = collections.defaultdict(list)
    for kernel in graph.get("kernels") or []:
        for op in kernel.get("ops") or []:
            members[op].append(kernel.get("name", ""))
    for op in graph.get("ops") or []:
        for k in op.get("kernels") or []:
            if k not in members[op.get("name")]:
                members[op.get("name")].append(k)
    score: collections.Counter[tuple[str, str]] = collections.Counter()
    for b in graph.get("boundaries") or []:
        ks = b.get("kernels") or []
        if b.get("relation") == "dependency" and len(ks) == 2:
            score[(b.get("producer"), ks[0])] += 100
            score[(b.get("consumer"), ks[1])] += 100
    for edge in graph.get("edges") or []:
        p, c = edge.get("producer"), edge.get("consumer")
        for k in set(members.get(p, [])) & set(members.get(c, [])):
            score[(p, k)] += 1
            score[(c, k)] += 1
    out = {}
    for op, ks in members.items():
        if ks:
            out[op] = max(ks, key=lambda k: (score[(op, k)], -ks.index(k)))
    return out


def _op_dot(
    graph: dict[str, Any],
    slug: str,
    colours: dict[str, str],
    edge_label: str = "label",
) -> str:
    """The op-level picture: computing ops in one cluster per kernel.

    ``edge_label`` is the DOT attribute of edge labels: ``label`` or ``xlabel``.
    """
    cid = graph.get("compile_id", "?")
    computing = _computing(graph)
    names = {op.get("name") for op in computing}
    primary = _primary_kernels(graph)
    kernels = graph.get("kernels") or []
    node_ids: dict[str, str] = {}
    lines = _dot_prelude(slug, f"graph {cid}: ops grouped by kernel")

    in_kernel: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    loose = []
    for op in computing:
        k = primary.get(op.get("name"))
        if k is None:
            loose.append(op)
        else:
            in_kernel[k].append(op)

    def op_node(op: dict[str, Any], kind: object, colour: str) -> str:
        name = op.get("name", "")
        node_ids[name] = f"n-{slug}-{len(node_ids)}"
        target = _short_target(op.get("target", ""))
        label = name if target == name else f"{name}\n{target}"
        others = [k for k in op.get("kernels") or [] if k != primary.get(name)]
        if others:
            label += f"\nalso computed in {', '.join(others[:3])}" + (
                ", \u2026" if len(others) > 3 else ""
            )
        tooltip = f"{name} = {op.get('target', '')}" + (
            f"  [{op.get('source')}]" if op.get("source") else ""
        )
        return (
            f"    {_q(name)} [id={_q(node_ids[name])}, label={_q(label)}, "
            f"tooltip={_q(tooltip)}, {_node_style(kind, colour)}];"
        )

    for i, kernel in enumerate(kernels):
        kname = kernel.get("name", "")
        kind = kernel.get("kind")
        colour = colours.get(kname, "#ffffff")
        function = kernel.get("function")
        label = f"{kname} ({kind})"
        tooltip = label + (f" = {function}" if function else "")
        if function and function != kname:
            label += "\n" + _abbreviate(function, 34)
        lines.append(f"  subgraph {_q(f'cluster_{i}')} {{")
        lines.append(
            f"    graph [id={_q(f'k-{slug}-{i}')}, label={_q(label)}, "
            f"tooltip={_q(tooltip)}, {_cluster_style(kind, colour)}];"
        )
        placed = in_kernel.get(kname, [])
        for op in placed:
            lines.append(op_node(op, kind, colour))
        if not placed:
            # Every op of this kernel is drawn in another kernel's cluster:
            # a ghost keeps the kernel visible.
            # A kernel may also compute no op of the graph's computing ops
            # (an in-place update of an input): it names what it writes.
            recomputed = [n for n in kernel.get("ops") or [] if n in names]
            ghost = f"{kname}\u00b7recomputed"
            text = (
                "recomputes " + _name_list(recomputed, 4)
                if recomputed
                else "no computing op"
                + (
                    f"\n({_name_list(kernel.get('ops') or [], 2)})"
                    if kernel.get("ops")
                    else ""
                )
            )
            lines.append(
                f"    {_q(ghost)} [id={_q(f'g-{slug}-{i}')}, label={_q(text)}, "
                f'shape=box, style="dashed,rounded,filled", fillcolor="{colour}"];'
            )
        lines.append("  }")
    for op in loose:
        name = op.get("name", "")
        node_ids[name] = f"n-{slug}-{len(node_ids)}"
        why = op.get("eliminated") or "no kernel"
        lines.append(
            f"  {_q(name)} [id={_q(node_ids[name])}, "
            f"label={_q(f'{name}{chr(10)}{why}')}, shape=box, "
            'style="dashed,rounded", color="#9e9e9e", fontcolor="#616161"];'
        )

    dependency: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for i, b in enumerate(graph.get("boundaries") or []):
        if b.get("relation") == "dependency":
            dependency.setdefault((b.get("producer"), b.get("consumer")), (i, b))

    def boundary_attrs(i: int, b: dict[str, Any], colour: str) -> str:
        nbytes = _fmt_bytes((b.get("args") or {}).get("bytes"))
        label = str(b.get("reason")) + (f"\n{nbytes}" if nbytes else "")
        tooltip = (
            f"{b.get('producer')} -> {b.get('consumer')}: {b.get('reason')} "
            f"({b.get('category')}, {b.get('stage')}): {b.get('detail') or ''}"
        )
        return (
            f"{edge_label}={_q(label)}, color={_q(colour)}, fontcolor={_q(colour)}, "
            f"penwidth=1.8, tooltip={_q(tooltip)}, "
            f"URL={_q('#' + _boundary_id(slug, i))}, "
            f"id={_q('e-' + _boundary_id(slug, i))}, class={_q('boundary-edge')}"
        )

    by_name = {op.get("name"): op for op in computing}
    drawn: set[tuple[str, str]] = set()
    for edge in graph.get("edges") or []:
        p, c = edge.get("producer"), edge.get("consumer")
        if p not in node_ids or c not in node_ids or (p, c) in drawn:
            continue
        drawn.add((p, c))
        if (p, c) in dependency:
            i, b = dependency[(p, c)]
            lines.append(
                f"  {_q(p)} -> {_q(c)} [{boundary_attrs(i, b, BOUNDARY_COLOUR)}];"
            )
            continue
        shared = set(by_name[p].get("kernels") or []) & set(
            by_name[c].get("kernels") or []
        )
        if shared:
            lines.append(
                f'  {_q(p)} -> {_q(c)} [color="{FUSED_EDGE_COLOUR}", '
                f'tooltip="fused in {", ".join(sorted(shared))}"];'
            )
        else:
            lines.append(
                f'  {_q(p)} -> {_q(c)} [color="black", style=dotted, '
                f'{edge_label}="no remark", '
                'tooltip="different kernels, but no boundary remark"];'
            )
    for (p, c), (i, b) in dependency.items():
        if (p, c) not in drawn and p in node_ids and c in node_ids:
            lines.append(
                f"  {_q(p)} -> {_q(c)} [{boundary_attrs(i, b, BOUNDARY_COLOUR)}];"
            )
    for i, b in enumerate(graph.get("boundaries") or []):
        p, c = b.get("producer"), b.get("consumer")
        if b.get("relation") != "dependency" and p in node_ids and c in node_ids:
            lines.append(
                f"  {_q(p)} -> {_q(c)} [{boundary_attrs(i, b, SHARED_INPUT_COLOUR)}, "
                "style=dashed, dir=none, constraint=false];"
            )
    lines.append("}")
    return "\n".join(lines)


def _kernel_dot(
    graph: dict[str, Any],
    slug: str,
    colours: dict[str, str],
    edge_label: str = "label",
) -> str:
    """The kernel-level picture: one node per kernel, boundaries aggregated."""
    cid = graph.get("compile_id", "?")
    ops = {op.get("name"): op for op in graph.get("ops") or []}
    kernels = graph.get("kernels") or []
    lines = _dot_prelude(
        slug, f"graph {cid}: one node per kernel ({len(_computing(graph))} ops)"
    )
    order = {name: i for i, name in enumerate(ops)}
    known = set()
    for i, kernel in enumerate(kernels):
        kname = kernel.get("name", "")
        known.add(kname)
        kind = kernel.get("kind")
        names = sorted(
            (n for n in kernel.get("ops") or [] if ops.get(n, {}).get("computes")),
            key=lambda n: order.get(n, 0),
        )
        if names:
            label = (
                f"{kname} ({kind})\n{len(names)} op{'s' if len(names) != 1 else ''}: "
                + _name_list(names, 2)
            )
        else:
            label = f"{kname} ({kind})\nno computing op" + (
                f" ({_name_list(kernel.get('ops') or [], 2)})"
                if kernel.get("ops")
                else ""
            )
        tooltip = f"{kname} ({kind}): {_name_list(names, 50)}"
        lines.append(
            f"  {_q(kname)} [id={_q(f'n-{slug}-{i}')}, label={_q(label)}, "
            f"tooltip={_q(tooltip)}, "
            f"{_node_style(kind, colours.get(kname, '#ffffff'))}];"
        )
    # Boundaries between the same two kernels become one edge, labelled with
    # each reason and its count, and the bytes that cross it.
    primary = _primary_kernels(graph)
    agg: dict[tuple[str, str, str], collections.Counter[str]] = {}
    moved: dict[tuple[str, str, str], int] = collections.Counter()
    first: dict[tuple[str, str, str], int] = {}
    for i, b in enumerate(graph.get("boundaries") or []):
        ks = list(b.get("kernels") or [])
        if len(ks) != 2 or ks[0] not in known or ks[1] not in known:
            ks = [primary.get(b.get("producer")), primary.get(b.get("consumer"))]
            if ks[0] not in known or ks[1] not in known:
                continue  # an op with no kernel: the table has it
        key = (str(ks[0]), str(ks[1]), str(b.get("relation")))
        agg.setdefault(key, collections.Counter())[str(b.get("reason"))] += 1
        nbytes = (b.get("args") or {}).get("bytes")
        if isinstance(nbytes, (int, float)) and not isinstance(nbytes, bool):
            moved[key] += int(nbytes)
        first.setdefault(key, i)
    for key, counts in agg.items():
        a, z, relation = key
        label = "\n".join(
            f"{reason} \u00d7{n}" if n > 1 else reason
            for reason, n in counts.most_common()
        )
        if moved.get(key):
            label += f"\n{_fmt_bytes(moved[key])}"
        shared = relation != "dependency"
        colour = SHARED_INPUT_COLOUR if shared else BOUNDARY_COLOUR
        extra = ", style=dashed, dir=none, constraint=false" if shared else ""
        tooltip = f"{a} -> {z}: " + label.replace("\n", ", ")
        lines.append(
            f"  {_q(a)} -> {_q(z)} [{edge_label}={_q(label)}, color={_q(colour)}, "
            f"fontcolor={_q(colour)}, penwidth=1.5, tooltip={_q(tooltip)}, "
            f"URL={_q('#' + _boundary_id(slug, first[key]))}, "
            f"class={_q('boundary-edge')}{extra}];"
        )
    # Kernels with no boundary (in-place updates of inputs, kernels alone in
    # the graph) would all sit on the first rank, pushing the kernels that
    # matter out of view: they go in a grid under the rest.
    linked = {k for a, z, _ in agg for k in (a, z)}
    lines.extend(
        _bottom_grid(
            [k.get("name", "") for k in kernels if k.get("name") not in linked]
        )
    )
    lines.append("}")
    return "\n".join(lines)


# ---------------------------------------------------------------- annotated source


def _op_line(ops: dict[str, Any], name: object) -> tuple[str, int] | None:
    """The (path, line) an op was traced from, if it has one."""
    return _split_source(ops.get(name, {}).get("source"))


def _kind_tag(kind: str) -> str:
    """opt-viewer's remark kind, as a coloured tag: fused, alone, missed."""
    return f'<span class="kind kind-{kind}">{kind}</span>'


def _source_section(
    graphs: list[dict[str, Any]],
    breaks: list[dict[str, Any]],
    slugs: list[str],
    colours: list[dict[str, str]],
) -> str:
    """The user's source, each line followed by its remarks, as opt-viewer does.

    A line gets a ``fused`` (or ``alone``) remark for each kernel that computes
    ops of the line, a ``missed`` remark for each boundary whose producer or
    consumer comes from the line, and one for each graph break there.
    """
    # path -> line -> [(order, html)]; missed remarks first, then fused ones.
    notes: dict[str, dict[int, list[tuple[int, str]]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    for graph, slug, colour in zip(graphs, slugs, colours):
        cid = graph.get("compile_id", "?")
        glink = f'<a class="graph-link" href="#{_e(slug)}">graph {_e(cid)}</a>'
        ops = {op.get("name"): op for op in graph.get("ops") or []}
        order = {name: i for i, name in enumerate(ops)}

        for kernel in graph.get("kernels") or []:
            kname = kernel.get("name", "")
            names = sorted(
                (n for n in kernel.get("ops") or [] if ops.get(n, {}).get("computes")),
                key=lambda n: order.get(n, 0),
            )
            per_line: dict[tuple[str, int], list[str]] = collections.defaultdict(list)
            for n in names:
                loc = _op_line(ops, n)
                if loc is not None:
                    per_line[loc].append(n)
            for (path, line), here in per_line.items():
                others = len(names) - len(here)
                state = "fused" if len(names) > 1 else "alone"
                function = kernel.get("function")
                notes[path][line].append(
                    (
                        1,
                        f'<li class="remark kernel-remark {state}"'
                        f' data-graph="{_e(cid)}" data-kernel="{_e(kname)}">'
                        f"{_kind_tag(state)} {glink}: kernel "
                        f'<span class="chip" style="background:'
                        f'{_e(colour.get(kname, "#ffffff"))}">{_e(kname)}</span> '
                        f"<span class=dim>({_e(kernel.get('kind'))}"
                        + (f", {_e(function)}" if function else "")
                        + ")</span> computes "
                        + ", ".join(f"<code>{_e(n)}</code>" for n in here)
                        + (
                            f" <span class=dim>with {others} op"
                            f"{'s' if others != 1 else ''} of other lines</span>"
                            if others
                            else ""
                        )
                        + "</li>",
                    )
                )
        for op in _computing(graph):
            if not op.get("kernels"):
                loc = _op_line(ops, op.get("name"))
                if loc is not None:
                    notes[loc[0]][loc[1]].append(
                        (
                            2,
                            f'<li class="remark eliminated">{_kind_tag("none")} '
                            f"{glink}: <code>{_e(op.get('name'))}</code> has no "
                            f"kernel ({_e(op.get('eliminated', 'no kernel'))})</li>",
                        )
                    )
        for i, b in enumerate(graph.get("boundaries") or []):
            p, c = b.get("producer"), b.get("consumer")
            lp, lc = _op_line(ops, p), _op_line(ops, c)
            shared = b.get("relation") == "shared_input"
            arrow = "\u2225" if shared else "\u2192"
            nbytes = _fmt_bytes((b.get("args") or {}).get("bytes"))
            category = _e(b.get("category"))
            for loc in dict.fromkeys(x for x in (lp, lc) if x is not None):
                role = (
                    ""
                    if lp == lc
                    else ", producer here"
                    if loc == lp
                    else ", consumer here"
                )
                notes[loc[0]][loc[1]].append(
                    (
                        0,
                        f'<li class="remark boundary-remark cat-{category}"'
                        f' data-graph="{_e(cid)}" data-producer="{_e(p)}"'
                        f' data-consumer="{_e(c)}" data-reason="{_e(b.get("reason"))}"'
                        f' data-category="{category}">'
                        f"{_kind_tag('missed')} {glink}: "
                        f'<a href="#{_boundary_id(slug, i)}"><code>{_e(p)}</code> '
                        f"{arrow} <code>{_e(c)}</code></a> "
                        f"<b>{_e(b.get('reason'))}</b> "
                        f'<span class="cat cat-{category}">{category}</span> '
                        f"<span class=dim>{_e(b.get('stage'))}{role}"
                        + (f", {_e(nbytes)}" if nbytes else "")
                        + "</span>"
                        + (f" \u2014 {_e(b.get('detail'))}" if b.get("detail") else "")
                        + "</li>",
                    )
                )
    for i, brk in enumerate(breaks):
        loc = _split_source(brk.get("source"))
        if loc is None:
            continue
        headline, explanation = _break_summary(brk)
        before = _graph_links(list(brk.get("graphs_before") or []), graphs, slugs)
        after = _graph_links(list(brk.get("graphs_after") or []), graphs, slugs)
        notes[loc[0]][loc[1]].append(
            (
                -1,
                f'<li class="remark graph-break-remark cat-legality"'
                f' data-reason="{_e(brk.get("reason") or GRAPH_BREAK[0])}">'
                f"{_kind_tag('missed')} "
                f'<a href="#graph-break-{i}"><b>graph break</b></a> '
                '<span class="cat cat-legality">legality</span> '
                f"<b>{_e(headline)}</b>"
                + (f" \u2014 {_e(explanation)}" if explanation else "")
                + f' <span class="dim">separates {before} \u2192 {after}</span></li>',
            )
        )

    parts = ['<section id="source"><h2>Annotated source</h2>']
    if not notes:
        parts.append(
            '<p class="note">No op has a source line (the graphs were not traced '
            "from Python code).</p>"
        )
    for path in sorted(notes):
        parts.append(_source_file(path, notes[path]))
    parts.append("</section>")
    return "\n".join(parts)


def _remark_list(items: list[tuple[int, str]]) -> str:
    """A line's remarks: missed ones first; past REMARKS_PER_LINE, folded."""
    ordered = sorted(items, key=lambda t: t[0])
    left_out = max(0, len(ordered) - MAX_REMARKS_PER_LINE)
    ordered = ordered[:MAX_REMARKS_PER_LINE]
    shown, rest = ordered[:REMARKS_PER_LINE], ordered[REMARKS_PER_LINE:]
    out = '<ul class="remarks">' + "".join(h for _, h in shown)
    if rest:
        # Orders: -1 graph break, 0 boundary (missed), 1 kernel, 2 no kernel.
        kinds = collections.Counter(
            "missed" if order <= 0 else "kernel" if order == 1 else "other"
            for order, _ in rest
        )
        what = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()) if n)
        out += (
            f"<li><details><summary>{len(rest)} more remarks ({what})</summary>"
            '<ul class="remarks">'
            + "".join(h for _, h in rest)
            + "</ul></details></li>"
        )
    if left_out:
        out += (
            f'<li class="dim">{left_out} more remarks left out: the boundary '
            "tables of the graphs list every boundary</li>"
        )
    return out + "</ul>"


def _read_lines(path: str) -> tuple[list[str] | None, str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines(), ""
    except OSError as exc:
        return None, f"{type(exc).__name__}: {exc.strerror or exc}"


def _code_line(path: str, number: int, text: str, annotated: bool) -> str:
    cls = "line annotated" if annotated else "line"
    return (
        f'<div class="{cls}" id="{_source_anchor(f"{path}:{number}")}"'
        f' data-line="{number}"><span class="ln">{number}</span>'
        f"<code>{_e(text) or ' '}</code></div>"
    )


def _source_file(path: str, by_line: dict[int, list[tuple[int, str]]]) -> str:
    count = sum(len(v) for v in by_line.values())
    head = (
        f'<details class="source-file" open data-path="{_e(path)}"><summary>'
        f"<code>{_e(os.path.basename(path))}</code> "
        f'<span class="dim">{_e(path)} \u00b7 {len(by_line)} annotated '
        f"line{'s' if len(by_line) != 1 else ''}, {count} remarks</span></summary>"
    )
    lines, error = _read_lines(path)
    out = [head, '<div class="src">']
    if lines is None:
        out.append(
            f'<p class="note">Could not read the file ({_e(error)}); '
            "remarks by line number:</p>"
        )
        for number in sorted(by_line):
            out.append(_code_line(path, number, "", True))
            out.append(_remark_list(by_line[number]))
        out.append("</div></details>")
        return "\n".join(out)
    total = len(lines)
    wanted: set[int] = set()
    for number in by_line:
        wanted.update(
            range(
                max(1, number - SOURCE_CONTEXT), min(total, number + SOURCE_CONTEXT) + 1
            )
        )
    shown = sorted(wanted)
    previous = 0
    for number in shown:
        gap = number - previous - 1
        if gap > 0 and previous:
            if gap <= SOURCE_FOLD:
                for k in range(previous + 1, number):
                    out.append(_code_line(path, k, lines[k - 1], False))
            elif gap <= SOURCE_MAX_FOLDED:
                out.append(
                    f'<details class="gap"><summary>\u22ef {gap} unannotated lines '
                    f"({previous + 1}\u2013{number - 1})</summary>"
                    + "".join(
                        _code_line(path, k, lines[k - 1], False)
                        for k in range(previous + 1, number)
                    )
                    + "</details>"
                )
            else:
                out.append(
                    f'<div class="gap">\u22ef {gap} unannotated lines '
                    f"({previous + 1}\u2013{number - 1}) left out</div>"
                )
        elif gap > 0:
            out.append(f'<div class="gap">\u22ef lines 1\u2013{gap}</div>')
        out.append(_code_line(path, number, lines[number - 1], number in by_line))
        if number in by_line:
            out.append(_remark_list(by_line[number]))
        previous = number
    if previous and previous < total:
        out.append(f'<div class="gap">\u22ef lines {previous + 1}\u2013{total}</div>')
    beyond = sorted(n for n in by_line if n > total or n < 1)
    if beyond:
        out.append(
            '<p class="note">Remarks on lines the file no longer has '
            "(it changed since the capture):</p>"
        )
        for number in beyond:
            out.append(_code_line(path, number, "", True))
            out.append(_remark_list(by_line[number]))
    out.append("</div></details>")
    return "\n".join(out)


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
