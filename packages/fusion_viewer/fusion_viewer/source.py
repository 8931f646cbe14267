"""The sources on a fusion report's page: the user's, annotated, and the generated code.

* :func:`source_section`: the user's source lines, each followed by its
  remarks, in the manner of LLVM's opt-viewer: which kernels compute ops of
  the line, which boundaries start or end there, and the graph breaks at the
  line.  Lines around annotated ones are shown for context; long runs of
  unannotated lines are folded or left out.
* :func:`graph_break_section`: the Dynamo graph breaks, each with its
  reason, source line and the graphs it separates.
* :func:`code_section`: per graph, the generated source of each kernel
  function (the report's optional ``kernel_sources``), each in a folded block
  with an anchor that the kernel table links to.
"""

from __future__ import annotations

import collections
import os
from typing import Any

from .common import (
    boundary_id,
    break_summary,
    computing_ops,
    copied_ops,
    eliminated_words,
    esc,
    fmt_bytes,
    GRAPH_BREAK,
    graph_links,
    kernel_groups,
    kernel_row_id,
    source_anchor,
    source_link,
    split_source,
)


__all__ = ["code_section", "graph_break_section", "source_section"]


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


def _op_line(ops: dict[str, Any], name: object) -> tuple[str, int] | None:
    """The (path, line) an op was traced from, if it has one."""
    return split_source(ops.get(name, {}).get("source"))


def _kind_tag(kind: str) -> str:
    """opt-viewer's remark kind, as a coloured tag: fused, alone, missed."""
    return f'<span class="kind kind-{kind}">{kind}</span>'


def source_section(
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
        glink = f'<a class="graph-link" href="#{esc(slug)}">graph {esc(cid)}</a>'
        ops = {op.get("name"): op for op in graph.get("ops") or []}
        order = {name: i for i, name in enumerate(ops)}

        rows = {
            k.get("name"): kernel_row_id(slug, gi)
            for gi, group in enumerate(kernel_groups(graph))
            for k in group["records"]
        }
        for kernel in graph.get("kernels") or []:
            kname = kernel.get("name", "")
            copies = copied_ops(kernel)
            names = sorted(
                (n for n in kernel.get("ops") or [] if ops.get(n, {}).get("computes")),
                key=lambda n: order.get(n, 0),
            )
            per_line: dict[tuple[str, int], list[str]] = collections.defaultdict(list)
            for n in names:
                loc = _op_line(ops, n)
                if loc is not None:
                    per_line[loc].append(n)
            computed = [n for n in names if n not in copies]
            for (path, line), here in per_line.items():
                others = len(names) - len(here)
                state = "fused" if len(computed) > 1 else "alone"
                function = kernel.get("function")
                chip = (
                    f'<span class="chip" style="background:'
                    f'{esc(colour.get(kname, "#ffffff"))}">{esc(kname)}</span>'
                )
                if kname in rows:
                    chip = f'<a href="#{rows[kname]}">{chip}</a>'
                computes_here = [n for n in here if n not in copies]
                copies_here = [n for n in here if n in copies]
                does = []
                if computes_here:
                    does.append(
                        "computes "
                        + ", ".join(f"<code>{esc(n)}</code>" for n in computes_here)
                    )
                if copies_here:
                    does.append(
                        "is a layout copy for "
                        + ", ".join(f"<code>{esc(n)}</code>" for n in copies_here)
                    )
                notes[path][line].append(
                    (
                        1,
                        f'<li class="remark kernel-remark {state}"'
                        f' data-graph="{esc(cid)}" data-kernel="{esc(kname)}">'
                        f"{_kind_tag(state)} {glink}: kernel {chip} "
                        f"<span class=dim>({esc(kernel.get('kind'))}"
                        + (f", {esc(function)}" if function else "")
                        + ")</span> "
                        + " and ".join(does)
                        + (
                            f" <span class=dim>with {others} op"
                            f"{'s' if others != 1 else ''} of other lines</span>"
                            if others
                            else ""
                        )
                        + "</li>",
                    )
                )
        for op in computing_ops(graph):
            if not op.get("kernels"):
                loc = _op_line(ops, op.get("name"))
                why = eliminated_words(op.get("eliminated"))
                if loc is not None:
                    notes[loc[0]][loc[1]].append(
                        (
                            2,
                            f'<li class="remark eliminated">{_kind_tag("none")} '
                            f"{glink}: <code>{esc(op.get('name'))}</code> has no "
                            "kernel" + (f": {esc(why)}" if why else "") + "</li>",
                        )
                    )
        for i, b in enumerate(graph.get("boundaries") or []):
            p, c = b.get("producer"), b.get("consumer")
            lp, lc = _op_line(ops, p), _op_line(ops, c)
            shared = b.get("relation") == "shared_input"
            arrow = "\u2225" if shared else "\u2192"
            nbytes = fmt_bytes((b.get("args") or {}).get("bytes"))
            category = esc(b.get("category"))
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
                        f' data-graph="{esc(cid)}" data-producer="{esc(p)}"'
                        f' data-consumer="{esc(c)}" data-reason="{esc(b.get("reason"))}"'
                        f' data-category="{category}">'
                        f"{_kind_tag('missed')} {glink}: "
                        f'<a href="#{boundary_id(slug, i)}"><code>{esc(p)}</code> '
                        f"{arrow} <code>{esc(c)}</code></a> "
                        f"<b>{esc(b.get('reason'))}</b> "
                        f'<span class="cat cat-{category}">{category}</span> '
                        f"<span class=dim>{esc(b.get('stage'))}{role}"
                        + (f", {esc(nbytes)}" if nbytes else "")
                        + "</span>"
                        + (f" \u2014 {esc(b.get('detail'))}" if b.get("detail") else "")
                        + "</li>",
                    )
                )
    for i, brk in enumerate(breaks):
        loc = split_source(brk.get("source"))
        if loc is None:
            continue
        headline, explanation = break_summary(brk)
        before = graph_links(list(brk.get("graphs_before") or []), graphs, slugs)
        after = graph_links(list(brk.get("graphs_after") or []), graphs, slugs)
        notes[loc[0]][loc[1]].append(
            (
                -1,
                f'<li class="remark graph-break-remark cat-legality"'
                f' data-reason="{esc(brk.get("reason") or GRAPH_BREAK[0])}">'
                f"{_kind_tag('missed')} "
                f'<a href="#graph-break-{i}"><b>graph break</b></a> '
                '<span class="cat cat-legality">legality</span> '
                f"<b>{esc(headline)}</b>"
                + (f" \u2014 {esc(explanation)}" if explanation else "")
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
        f'<div class="{cls}" id="{source_anchor(f"{path}:{number}")}"'
        f' data-line="{number}"><span class="ln">{number}</span>'
        f"<code>{esc(text) or ' '}</code></div>"
    )


def _source_file(path: str, by_line: dict[int, list[tuple[int, str]]]) -> str:
    count = sum(len(v) for v in by_line.values())
    head = (
        f'<details class="source-file" open data-path="{esc(path)}"><summary>'
        f"<code>{esc(os.path.basename(path))}</code> "
        f'<span class="dim">{esc(path)} \u00b7 {len(by_line)} annotated '
        f"line{'s' if len(by_line) != 1 else ''}, {count} remarks</span></summary>"
    )
    lines, error = _read_lines(path)
    out = [head, '<div class="src">']
    if lines is None:
        out.append(
            f'<p class="note">Could not read the file ({esc(error)}); '
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


def code_section(
    graph: dict[str, Any],
    sources: dict[str, str] | None,
    anchors: dict[str, str],
) -> str:
    """The generated source of each kernel function of a graph, each folded.

    ``sources`` is the report's ``kernel_sources`` (function name -> text) or
    None when the capture has none; ``anchors`` the id of each function's
    block.  Functions of ``sources`` that no kernel names come last.
    """
    cid = esc(graph.get("compile_id", "?"))
    if sources is None:
        return (
            '<p class="dim no-code-note">The generated source is not in this '
            "capture (its JSON has no <code>kernel_sources</code>: written "
            "before the field existed, or by a sink that leaves it out).</p>"
        )
    if not sources:
        return '<p class="dim no-code-note">No generated source in this capture.</p>'
    named = [f for f in anchors if f in sources]
    extra = [f for f in sources if f not in anchors]
    blocks = []
    for function in named + extra:
        text = sources[function]
        anchor = anchors.get(function)
        id_attr = f' id="{esc(anchor)}"' if anchor else ""
        blocks.append(
            f'<details class="kernel-code"{id_attr} data-function="{esc(function)}">'
            f"<summary><code>{esc(function)}</code> "
            f'<span class="dim">{len(text.splitlines())} lines</span></summary>'
            f'<pre class="kernel-source"><code>{esc(text)}</code></pre></details>'
        )
    return (
        f'<details class="code-list" data-graph="{cid}"><summary>Generated code of '
        f"graph {cid}: {len(blocks)} function{'s' if len(blocks) != 1 else ''}"
        "</summary>" + "".join(blocks) + "</details>"
    )


def graph_break_section(
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
