"""Small helpers shared by the renderers of a fusion report.

Writing an output file, escaping, byte counts, source locations (``file:line``) and their anchors in
the annotated source, the ids of graphs and boundaries, links between graphs,
and the summary of a Dynamo graph break: what :mod:`.html`, :mod:`.graphviz`
and :mod:`.source` all need.  Like the renderers, these read only the report's
JSON, every field with a default.  The formatters the ``fusion`` log's text
summary uses too (:func:`fmt_bytes`, :func:`fmt_seconds`,
:func:`fmt_predicted`, :func:`fmt_cost_model`, :func:`kernel_groups`,
:func:`fold_names`, :func:`extern_inputs`, :func:`eliminated_words`) are
torch's (``torch._inductor.fusion_remarks.summary``), which cannot import the
viewer: the viewer imports them from there, so they live in one place.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
from typing import Any

from torch._inductor.fusion_remarks.summary import (
    eliminated_words,
    extern_inputs,
    fmt_bytes,
    fmt_cost_model,
    fmt_predicted,
    fmt_seconds,
    fold_names,
    kernel_groups,
)


__all__ = [
    "GRAPH_BREAK",
    "HOW_LABELS",
    "boundary_id",
    "break_summary",
    "check_writable",
    "code_anchors",
    "computing_ops",
    "copied_ops",
    "eliminated_words",
    "esc",
    "esc_name",
    "extern_inputs",
    "fmt_bytes",
    "fmt_cost_model",
    "fmt_predicted",
    "fmt_seconds",
    "fold_names",
    "graph_anchor",
    "graph_links",
    "kernel_groups",
    "kernel_row_id",
    "kernel_sources",
    "short_source",
    "source_anchor",
    "source_link",
    "split_source",
    "write_text",
]

# graph breaks are not boundaries inside a graph, but they separate kernels
# all the same; they enter the reason table under this code.
GRAPH_BREAK = ("graph_break", "legality", "dynamo")


def esc(value: object) -> str:
    """``value`` as HTML text or attribute value (None as the empty string)."""
    return html.escape("" if value is None else str(value), quote=True)


def esc_name(value: object) -> str:
    """A name (op, kernel, reason code) as HTML text that wraps only between
    its words: a ``<wbr>`` after each ``_`` and ``.`` not followed by a digit
    (``convolution_12`` stays whole).  In a narrow table column
    ``extern_kernel`` then wraps as ``extern_`` / ``kernel``, where CSS that
    breaks anywhere would cut it as ``extern_kerne`` / ``l``."""
    return re.sub(r"([_.])(?!\d)", r"\1<wbr>", esc(value))


def graph_anchor(compile_id: str) -> str:
    """The id of a graph's section: ``graph-`` and the compile id, non-alnum as ``-``."""
    return "graph-" + re.sub(r"[^0-9A-Za-z]", "-", str(compile_id))


def split_source(source: object) -> tuple[str, int] | None:
    """``(path, line)`` of a ``path:line`` source location, or None."""
    if not isinstance(source, str) or ":" not in source:
        return None
    path, _, line = source.rpartition(":")
    try:
        return path, int(line)
    except ValueError:
        return None


def short_source(source: object) -> str:
    """A source location as ``file.py:line``, without its directory."""
    split = split_source(source)
    if split is None:
        return "" if source is None else str(source)
    return f"{os.path.basename(split[0])}:{split[1]}"


def source_anchor(source: object) -> str | None:
    """The id of a source line in the annotated source (``src-<file>-L<line>``)."""
    split = split_source(source)
    if split is None:
        return None
    digest = hashlib.sha1(split[0].encode("utf-8", "replace")).hexdigest()[:8]
    return f"src-{digest}-L{split[1]}"


def source_link(source: object) -> str:
    """``file:line`` linked to that line of the annotated source."""
    anchor = source_anchor(source)
    text = f'<code title="{esc(source)}">{esc(short_source(source))}</code>'
    return f'<a href="#{anchor}">{text}</a>' if anchor else text


def computing_ops(graph: dict[str, Any]) -> list[dict[str, Any]]:
    """The ops of a graph whose ``computes`` flag is set, in graph order."""
    return [op for op in graph.get("ops") or [] if op.get("computes")]


def boundary_id(slug: str, index: int) -> str:
    """The id of a boundary's row in its graph's boundary table."""
    return f"b-{slug}-{index}"


def graph_links(ids: list[str], graphs: list[dict[str, Any]], slugs: list[str]) -> str:
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
            parts.append(f'<span title="not in this capture">graph {esc(cid)}</span>')
        for name, slug in targets:
            if slug not in linked:
                linked.add(slug)
                parts.append(
                    f'<a class="graph-link" href="#{esc(slug)}">graph {esc(name)}</a>'
                )
    return ", ".join(parts) or "none"


def break_summary(brk: dict[str, Any]) -> tuple[str, str]:
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


# How a kernel's ops came together (the optional ``how`` field of a kernel).
HOW_LABELS = {
    "inlined": "inlined at lowering",
    "scheduler": "fused by the scheduler",
    "combined": "combined into one launch",
}


def copied_ops(kernel: dict[str, Any]) -> set[str]:
    """The ops whose input ``kernel`` only copies into another layout (``copy_for``).

    Such a kernel does not compute these ops (on the CPU, the layout copies
    before a convolution name the convolution): renderers say "layout copy
    for" them instead.  Empty when the field is absent (older captures).
    """
    return {str(n) for n in kernel.get("copy_for") or []}


# ``eliminated_words`` in a few words, for a node of a picture (its tooltip
# has the full words).
_ELIMINATED_SHORT = {
    "dead_code": "dead code",
    "cat_in_place": "written in place into the cat",
    "removed": "buffer removed",
    "symbolic_scalar": "a size, computed where used",
    "no_kernel": "no kernel",
}


def eliminated_short(code: object) -> str:
    """Why a computing op has no kernel, in a few words."""
    return _ELIMINATED_SHORT.get(str(code), str(code or "no kernel"))


def kernel_row_id(slug: str, index: int) -> str:
    """The id of a kernel group's row in its graph's kernel table."""
    return f"kern-{slug}-{index}"


def kernel_sources(
    graph: dict[str, Any], data: dict[str, Any] | None = None
) -> dict[str, str] | None:
    """Function name -> generated source, or None when the capture has none.

    Read from the graph's ``kernel_sources`` (or, failing that, the capture's
    top-level one); absent in captures written before the field existed.
    """
    for holder in (graph, data or {}):
        sources = holder.get("kernel_sources")
        if isinstance(sources, dict):
            return {str(k): str(v) for k, v in sources.items() if v is not None}
    return None


def code_anchors(slug: str, functions: list[str]) -> dict[str, str]:
    """Function name -> the id of its generated source block (unique in the page)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for function in functions:
        if function in out:
            continue
        base = f"code-{slug}-" + re.sub(r"[^0-9A-Za-z_]", "-", function)
        anchor, n = base, 1
        while anchor in used:
            n += 1
            anchor = f"{base}-{n}"
        used.add(anchor)
        out[function] = anchor
    return out


def check_writable(path: str | os.PathLike[str]) -> None:
    """Fail before any work when a file cannot be written at ``path``: an
    ``OSError`` whose one line names the path and what is in the way (no
    such directory, a directory of that name, no permission)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"cannot write {path}: no directory {parent}")
    if not os.access(path if os.path.exists(path) else parent, os.W_OK):
        raise PermissionError(f"cannot write {path}: permission denied")


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8); a failure is an ``OSError`` of the
    same kind whose one line names the path."""
    path = os.fspath(path)
    check_writable(path)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise type(e)(f"cannot write {path}: {e.strerror or e}") from None
