"""What fused or split between two fusion captures, as text and as an HTML page.

In the manner of LLVM's opt-diff for remark files: two captures of the same
program (two configs, two releases, before and after a code change) are
compared graph by graph, and every kernel boundary that appeared, disappeared
or changed its reason is listed, with each graph's kernel count before and
after.  Like the other renderers this reads only the captures' JSON
(``FusionCapture.to_json()``), every field with a default.

Graphs are matched by compile id (``"0/0"``, ``"0/0 backward"``); a compile
id seen twice in one capture is matched by its occurrence.  Op names are the
post-grad FX node names, which change with any change upstream of them, so a
boundary is matched by what it joins: ``(producer op's target and source line,
consumer op's target and source line, relation)``, several boundaries with one
key paired in graph order, those with the same reason first.  A boundary that
stays unmatched, and whose endpoints the other graph has no op for at all (the
code moved), is matched by the same key with each source line reduced to its
file: it is *moved* when its reason stayed, else *changed*.  An op without a
source line is matched by its target alone.
"""

from __future__ import annotations

import collections
import dataclasses
import os
from typing import Any, TYPE_CHECKING

from .common import (
    check_writable,
    esc,
    graph_anchor,
    kernel_groups,
    short_source,
    split_source,
    write_text,
)


if TYPE_CHECKING:
    from collections.abc import Callable


__all__ = [
    "BoundaryChange",
    "CaptureDiff",
    "GraphDiff",
    "diff",
    "render_html",
    "render_text",
    "save_html",
    "source_files",
]

APPEARED = "appeared"
DISAPPEARED = "disappeared"
CHANGED = "changed"
MOVED = "moved"
_MARK = {APPEARED: "+", DISAPPEARED: "-", CHANGED: "~", MOVED: ">"}
_ORDER = {DISAPPEARED: 0, APPEARED: 1, CHANGED: 2, MOVED: 3}

# (producer target, producer source, consumer target, consumer source)
Ends = tuple[str, "str | None", str, "str | None"]


@dataclasses.dataclass
class BoundaryChange:
    """One boundary that differs; ``a``/``b`` are its JSON in each capture."""

    status: str  # appeared, disappeared, changed (reason), moved (source line)
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    a_ends: Ends | None
    b_ends: Ends | None

    @property
    def relation(self) -> str:
        return str((self.b or self.a or {}).get("relation") or "dependency")

    @property
    def reasons(self) -> tuple[str | None, str | None]:
        return (
            None if self.a is None else self.a.get("reason"),
            None if self.b is None else self.b.get("reason"),
        )


@dataclasses.dataclass
class GraphDiff:
    """One graph of either capture, matched by compile id, and what differs."""

    compile_id: str  # "A's | B's" when matched by order
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    changes: list[BoundaryChange]  # empty unless the graph is in both
    same: int  # boundaries matched with the same reason and source lines

    def kernels(self, side: str) -> tuple[int, int] | None:
        """``(generated, extern)`` kernel counts of one side, None when absent:
        as the output code has them and the log counts them (a generated
        function holding several loop nests counts once)."""
        graph = self.a if side == "a" else self.b
        if graph is None:
            return None
        groups = kernel_groups(graph)
        extern = sum(
            1 for g in groups if g["records"][0].get("kind") in ("extern", "fallback")
        )
        return len(groups) - extern, extern

    def loop_nests(self, side: str) -> int | None:
        """Generated kernel records of one side (a C++ function's loop nests
        counted one by one), None when absent."""
        graph = self.a if side == "a" else self.b
        if graph is None:
            return None
        return sum(
            1
            for k in graph.get("kernels") or []
            if k.get("kind") not in ("extern", "fallback")
        )

    def count(self, status: str) -> int:
        return sum(1 for c in self.changes if c.status == status)


@dataclasses.dataclass
class CaptureDiff:
    """The comparison of two captures (see :func:`diff`)."""

    a_label: str
    b_label: str
    a_producer: str
    b_producer: str
    graphs: list[GraphDiff]
    matched_by_order: int = 0  # graphs whose compile ids differ (see diff())
    # the source files of each capture's ops (see unrelated)
    a_files: tuple[str, ...] = ()
    b_files: tuple[str, ...] = ()

    @property
    def unrelated(self) -> bool:
        """The two captures share no source file although each names some:
        not two captures of one program, so any pairing of their boundaries
        would be chance."""
        return bool(self.a_files and self.b_files) and not (
            set(self.a_files) & set(self.b_files)
        )

    def count(self, status: str) -> int:
        return sum(g.count(status) for g in self.graphs)

    @property
    def empty(self) -> bool:
        return all(
            not g.changes
            and g.a is not None
            and g.b is not None
            and g.kernels("a") == g.kernels("b")
            and g.loop_nests("a") == g.loop_nests("b")
            for g in self.graphs
        )


def diff(
    a: dict[str, Any], b: dict[str, Any], a_label: str = "A", b_label: str = "B"
) -> CaptureDiff:
    """Compare capture ``a`` (before) with capture ``b`` (after).

    Graphs are matched by compile id; when the graphs left unmatched on the
    two sides are as many, they are matched in order (two captures taken in
    one process without ``torch._dynamo.reset()`` number their compiles on).
    """
    pairs: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]] = []
    b_by_id = dict(_keyed(b))
    for key, ga in _keyed(a):
        pairs.append((key[0], ga, b_by_id.pop(key, None)))
    only_a = [i for i, (_, _, gb) in enumerate(pairs) if gb is None]
    by_order = len(only_a) == len(b_by_id) > 0
    for i, gb in zip(only_a, b_by_id.values()):
        if by_order:
            cid = pairs[i][0]
            pairs[i] = (f"{cid} | {gb.get('compile_id', '?')}", pairs[i][1], gb)
    if not by_order:
        pairs.extend((key[0], None, gb) for key, gb in b_by_id.items())
    graphs = [_diff_graph(cid, ga, gb) for cid, ga, gb in pairs]
    return CaptureDiff(
        a_label,
        b_label,
        str(a.get("producer") or "?"),
        str(b.get("producer") or "?"),
        graphs,
        matched_by_order=len(only_a) if by_order else 0,
        a_files=source_files(a),
        b_files=source_files(b),
    )


def source_files(capture: dict[str, Any]) -> tuple[str, ...]:
    """The files the ops of ``capture``'s graphs come from, sorted."""
    files = {
        _file(op.get("source"))
        for graph in capture.get("graphs") or []
        for op in graph.get("ops") or []
    }
    return tuple(sorted(f for f in files if f))


def _keyed(capture: dict[str, Any]) -> list[tuple[tuple[str, int], dict[str, Any]]]:
    seen: collections.Counter[str] = collections.Counter()
    out = []
    for graph in capture.get("graphs") or []:
        cid = str(graph.get("compile_id", "?"))
        out.append(((cid, seen[cid]), graph))
        seen[cid] += 1
    return out


def _diff_graph(
    compile_id: str, ga: dict[str, Any] | None, gb: dict[str, Any] | None
) -> GraphDiff:
    if ga is None or gb is None:
        return GraphDiff(compile_id, ga, gb, [], 0)
    la = _located(ga)
    lb = _located(gb)
    ops_a = _op_keys(ga)
    ops_b = _op_keys(gb)
    left_a = list(range(len(la)))
    left_b = list(range(len(lb)))
    changes: list[tuple[int, BoundaryChange]] = []
    same = 0

    def pair(
        key: Callable[[Ends, dict[str, Any]], object],
        status_of: Callable[
            [tuple[Ends, dict[str, Any]], tuple[Ends, dict[str, Any]]], str | None
        ],
        eligible: Callable[[int, int], bool] = lambda i, j: True,
    ) -> None:
        nonlocal left_a, left_b, same
        pool: dict[object, collections.deque[int]] = collections.defaultdict(
            collections.deque
        )
        for i in left_a:
            pool[key(*la[i])].append(i)
        taken: set[int] = set()
        rest_b = []
        for j in left_b:
            queue = pool.get(key(*lb[j]))
            i = next((i for i in queue or () if eligible(i, j)), None)
            if i is None:
                rest_b.append(j)
                continue
            queue.remove(i)  # type: ignore[union-attr]
            taken.add(i)
            status = status_of(la[i], lb[j])
            if status is None:
                same += 1
            else:
                changes.append(
                    (j, BoundaryChange(status, la[i][1], lb[j][1], la[i][0], lb[j][0]))
                )
        left_a = [i for i in left_a if i not in taken]
        left_b = rest_b

    def reason(ends: Ends, boundary: dict[str, Any]) -> object:
        return boundary.get("reason")

    def exact(ends: Ends, boundary: dict[str, Any]) -> object:
        return (ends, boundary.get("relation"))

    def by_file(ends: Ends, boundary: dict[str, Any]) -> object:
        pt, ps, ct, cs = ends
        return (pt, _file(ps), ct, _file(cs), boundary.get("relation"))

    def moved(i: int, j: int) -> bool:
        # only code that is gone from the other graph is matched by file
        ea, eb = la[i][0], lb[j][0]
        return not ({ea[:2], ea[2:]} <= ops_b) and not ({eb[:2], eb[2:]} <= ops_a)

    pair(lambda e, b: (exact(e, b), reason(e, b)), lambda x, y: None)
    pair(exact, lambda x, y: CHANGED)
    pair(
        lambda e, b: (by_file(e, b), reason(e, b)),
        lambda x, y: MOVED,
        moved,
    )
    pair(by_file, lambda x, y: CHANGED, moved)
    for i in left_a:
        changes.append(
            (-1, BoundaryChange(DISAPPEARED, la[i][1], None, la[i][0], None))
        )
    for j in left_b:
        changes.append((j, BoundaryChange(APPEARED, None, lb[j][1], None, lb[j][0])))
    changes.sort(key=lambda c: (_ORDER[c[1].status], c[0]))
    return GraphDiff(compile_id, ga, gb, [c for _, c in changes], same)


def _located(graph: dict[str, Any] | None) -> list[tuple[Ends, dict[str, Any]]]:
    """Each boundary of ``graph`` with its endpoints' targets and source lines."""
    if graph is None:
        return []
    ops = {op.get("name"): op for op in graph.get("ops") or []}

    def end(name: object) -> tuple[str, str | None]:
        op = ops.get(name)
        if op is None:  # not an op (a kernel named instead): the name itself
            return str(name), None
        return str(op.get("target") or name), op.get("source")

    return [
        ((*end(b.get("producer")), *end(b.get("consumer"))), b)  # type: ignore[misc]
        for b in graph.get("boundaries") or []
    ]


def _op_keys(graph: dict[str, Any] | None) -> set[tuple[str, str | None]]:
    if graph is None:
        return set()
    return {
        (str(op.get("target") or op.get("name")), op.get("source"))
        for op in graph.get("ops") or []
    }


def _file(source: str | None) -> str | None:
    split = split_source(source)
    return split[0] if split else source


# ---------------------------------------------------------------- text


def _target(target: str) -> str:
    """``aten.mul.Tensor`` -> ``mul.Tensor``; ``aten.relu.default`` -> ``relu``."""
    if target.startswith("<built-in function "):  # operator.getitem
        return target.removeprefix("<built-in function ").removesuffix(">")
    target = target.removeprefix("aten.")
    return target.removesuffix(".default")


def _end_text(target: str, source: str | None, name: object) -> str:
    where = short_source(source) if source else f"op {name}"
    return f"{_target(target)} ({where})"


def boundary_text(ends: Ends, boundary: dict[str, Any]) -> str:
    """``producer (file:line) -> consumer (file:line)``; shared inputs joined by ``|``."""
    pt, ps, ct, cs = ends
    joint = " | " if boundary.get("relation") == "shared_input" else " -> "
    text = _end_text(pt, ps, boundary.get("producer")) + joint
    text += _end_text(ct, cs, boundary.get("consumer"))
    if boundary.get("relation") == "shared_input":
        text += " [shared input]"
    return text


def _change_line(change: BoundaryChange) -> str:
    mark = f"{_MARK[change.status]} {change.status:<11}"
    ra, rb = change.reasons
    if change.status == APPEARED:
        return f"{mark} {boundary_text(change.b_ends, change.b)}: {rb}"  # type: ignore[arg-type]
    if change.status == DISAPPEARED:
        return f"{mark} {boundary_text(change.a_ends, change.a)}: {ra}"  # type: ignore[arg-type]
    text = f"{mark} {boundary_text(change.b_ends, change.b)}: "  # type: ignore[arg-type]
    text += f"{ra} -> {rb}" if ra != rb else str(rb)
    if change.a_ends != change.b_ends:
        text += f" (was {boundary_text(change.a_ends, change.a)})"  # type: ignore[arg-type]
    return text


def _kernel_text(counts: tuple[int, int] | None) -> str:
    return "-" if counts is None else str(sum(counts))


def _kernels_line(g: GraphDiff) -> str:
    ka, kb = g.kernels("a"), g.kernels("b")
    text = f"kernels {_kernel_text(ka)} -> {_kernel_text(kb)}"
    if ka is not None and kb is not None:
        delta = sum(kb) - sum(ka)
        text += f" ({delta:+d}; generated {ka[0]} -> {kb[0]}, extern {ka[1]} -> {kb[1]}"
        la, lb = g.loop_nests("a"), g.loop_nests("b")
        if (la, lb) != (ka[0], kb[0]):  # C++ functions holding several loop nests
            text += f"; loop nests {la} -> {lb}"
        text += ")"
    return text


def _reason_counts(graph: dict[str, Any] | None) -> collections.Counter[str]:
    return collections.Counter(
        str(b.get("reason")) for b in (graph or {}).get("boundaries") or []
    )


def render_text(d: CaptureDiff) -> str:
    """The comparison as plain text: a summary, then each graph that differs."""
    width = max(len(d.a_label), len(d.b_label))
    lines = [
        "fusion diff",
        f"  A: {d.a_label:<{width}}  {d.a_producer}",
        f"  B: {d.b_label:<{width}}  {d.b_producer}",
    ]
    if d.unrelated:
        lines.append(
            "  the captures share no source file: A's ops come from "
            f"{', '.join(d.a_files)}, B's from {', '.join(d.b_files)}; "
            "boundaries are paired by chance"
        )
    matched = [g for g in d.graphs if g.a is not None and g.b is not None]
    only_a = [g.compile_id for g in d.graphs if g.b is None]
    only_b = [g.compile_id for g in d.graphs if g.a is None]
    by_id = len(matched) - d.matched_by_order
    lines.append(
        f"graphs: {by_id} matched by compile id, "
        + (f"{d.matched_by_order} by order, " if d.matched_by_order else "")
        + f"{len(only_a)} only in A"
        + (f" ({', '.join(only_a)})" if only_a else "")
        + f", {len(only_b)} only in B"
        + (f" ({', '.join(only_b)})" if only_b else "")
    )
    n_a = sum(len(g.a.get("boundaries") or []) for g in matched)  # type: ignore[union-attr]
    n_b = sum(len(g.b.get("boundaries") or []) for g in matched)  # type: ignore[union-attr]
    lines.append(
        f"boundaries in matched graphs: {n_a} -> {n_b}: {d.count(APPEARED)} appeared, "
        f"{d.count(DISAPPEARED)} disappeared, {d.count(CHANGED)} changed, "
        f"{d.count(MOVED)} moved, {sum(g.same for g in d.graphs)} the same"
    )
    k_a = sum(sum(g.kernels("a") or (0, 0)) for g in d.graphs)
    k_b = sum(sum(g.kernels("b") or (0, 0)) for g in d.graphs)
    lines.append(f"kernels in all graphs: {k_a} -> {k_b} ({k_b - k_a:+d})")
    if d.empty:
        lines.append("no differences")
        return "\n".join(lines) + "\n"
    for g in d.graphs:
        if g.a is not None and g.b is not None and not g.changes:
            if g.kernels("a") == g.kernels("b"):
                continue
        side = " (only in A)" if g.b is None else " (only in B)" if g.a is None else ""
        n_ga = len((g.a or {}).get("boundaries") or [])
        n_gb = len((g.b or {}).get("boundaries") or [])
        lines.append("")
        lines.append(
            f"graph {g.compile_id}{side}: {_kernels_line(g)}; "
            f"boundaries {n_ga} -> {n_gb}"
        )
        if g.a is None or g.b is None:
            continue
        ca, cb = _reason_counts(g.a), _reason_counts(g.b)
        differ = sorted(r for r in set(ca) | set(cb) if ca[r] != cb[r])
        if differ:
            header = "boundaries by reason"
            rw = max(len(header), *(len(r) for r in differ))
            lines.append(f"  {header:<{rw}}  {'A':>4} {'B':>4}")
            lines.extend(f"  {r:<{rw}}  {ca[r]:>4} {cb[r]:>4}" for r in differ)
        lines.extend(f"  {_change_line(c)}" for c in g.changes)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- HTML

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right}
tr.appeared td.status{background:#fde2e1}tr.disappeared td.status{background:#dff3df}
tr.changed td.status{background:#fff2cc}tr.moved td.status{background:#e8eefc}
code{font-size:.95em}.detail{color:#555;font-size:.9em}.none{color:#777}
"""


def _end_html(target: str, source: str | None, name: object) -> str:
    where = (
        f'<code title="{esc(source)}">{esc(short_source(source))}</code>'
        if source
        else f'<span class="none">op {esc(name)}</span>'
    )
    return f'<code title="op {esc(name)}">{esc(_target(target))}</code> {where}'


def _change_row(change: BoundaryChange) -> str:
    ends = change.b_ends if change.b is not None else change.a_ends
    boundary = change.b if change.b is not None else change.a
    pt, ps, ct, cs = ends  # type: ignore[misc]
    ra, rb = change.reasons
    was = ""
    if change.a is not None and change.b is not None and change.a_ends != ends:
        was = (
            '<div class="detail">was '
            + esc(boundary_text(change.a_ends, change.a))  # type: ignore[arg-type]
            + "</div>"
        )
    details = [
        f'<div class="detail">{side}: {esc(b.get("detail"))}</div>'
        for side, b in (("A", change.a), ("B", change.b))
        if b is not None and b.get("detail")
    ]
    return (
        f'<tr class="boundary-change {change.status}" data-status="{change.status}"'
        f' data-reason-a="{esc(ra)}" data-reason-b="{esc(rb)}">'
        f'<td class="status">{_MARK[change.status]} {change.status}</td>'
        f"<td>{_end_html(pt, ps, boundary.get('producer'))}</td>"  # type: ignore[union-attr]
        f"<td>{_end_html(ct, cs, boundary.get('consumer'))}{was}</td>"  # type: ignore[union-attr]
        f"<td>{esc(change.relation)}</td>"
        f"<td><code>{esc(ra) or '&ndash;'}</code></td>"
        f"<td><code>{esc(rb) or '&ndash;'}</code>{''.join(details)}</td></tr>"
    )


def render_html(d: CaptureDiff) -> str:
    """The comparison as one self-contained HTML page."""
    summary = render_text(d).split("\n\n", 1)[0]
    parts = [
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">',
        f"<title>fusion diff: {esc(d.a_label)} vs {esc(d.b_label)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Fusion diff: {esc(d.a_label)} &rarr; {esc(d.b_label)}</h1>",
        f'<pre class="summary">{esc(summary)}</pre>',
    ]
    for g in d.graphs:
        ca, cb = _reason_counts(g.a), _reason_counts(g.b)
        parts.append(
            f'<section class="graph-diff" id="{esc(graph_anchor(g.compile_id))}"'
            f' data-compile-id="{esc(g.compile_id)}">'
            f"<h2>graph {esc(g.compile_id)}</h2>"
            f"<p>{esc(_kernels_line(g))}; boundaries "
            f"{sum(ca.values())} &rarr; {sum(cb.values())}, {g.same} the same</p>"
        )
        if g.a is None or g.b is None:
            parts.append(f"<p>only in {'B' if g.a is None else 'A'}</p></section>")
            continue
        reasons = sorted(set(ca) | set(cb))
        if reasons:
            parts.append(
                '<table class="reasons"><tr><th>reason</th><th>A</th><th>B</th></tr>'
            )
            parts.extend(
                f'<tr><td><code>{esc(r)}</code></td><td class="num">{ca[r]}</td>'
                f'<td class="num">{cb[r]}</td></tr>'
                for r in reasons
            )
            parts.append("</table>")
        if g.changes:
            parts.append(
                '<table class="changes"><tr><th>status</th><th>producer</th>'
                "<th>consumer</th><th>relation</th><th>reason in A</th>"
                "<th>reason in B</th></tr>"
            )
            parts.extend(_change_row(c) for c in g.changes)
            parts.append("</table>")
        else:
            parts.append("<p>no boundary differs</p>")
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def save_html(d: CaptureDiff, path: str | os.PathLike[str]) -> None:
    """Write :func:`render_html` of ``d`` to ``path``; a path that cannot be
    written is an ``OSError`` naming it."""
    check_writable(path)
    write_text(path, render_html(d))
