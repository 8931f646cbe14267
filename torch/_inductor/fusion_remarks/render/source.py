"""The annotated source of a fusion report, in the manner of LLVM's opt-viewer.

The user's source lines, each followed by its remarks: which kernels compute
ops of the line, which boundaries start or end there, and the graph breaks at
the line.  Lines around annotated ones are shown for context; long runs of
unannotated lines are folded or left out.
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
    graph_links,
    source_anchor,
    split_source,
)


__all__ = ["source_section"]


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
                        f' data-graph="{esc(cid)}" data-kernel="{esc(kname)}">'
                        f"{_kind_tag(state)} {glink}: kernel "
                        f'<span class="chip" style="background:'
                        f'{esc(colour.get(kname, "#ffffff"))}">{esc(kname)}</span> '
                        f"<span class=dim>({esc(kernel.get('kind'))}"
                        + (f", {esc(function)}" if function else "")
                        + ")</span> computes "
                        + ", ".join(f"<code>{esc(n)}</code>" for n in here)
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
                if loc is not None:
                    notes[loc[0]][loc[1]].append(
                        (
                            2,
                            f'<li class="remark eliminated">{_kind_tag("none")} '
                            f"{glink}: <code>{esc(op.get('name'))}</code> has no "
                            f"kernel ({esc(op.get('eliminated', 'no kernel'))})</li>",
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
