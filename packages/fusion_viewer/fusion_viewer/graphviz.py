"""The picture of a graph in a fusion report, laid out by Graphviz ``dot``.

Computing ops are nodes, one cluster per kernel, fused edges grey, kernel
boundaries red and labelled with their reason (shared-input boundaries
dashed).  Above :data:`MAX_OP_NODES` computing ops the picture shows kernels
instead of ops (one node per kernel, boundaries aggregated into one edge per
pair of kernels), and says so, because dot's layout of thousands of ops is
neither fast nor readable.

:func:`picture` returns the inline SVG, or a note saying why there is none:
without ``dot`` (or when it fails or runs too long) the page says so and holds
everything else.  It never raises because of the picture.  The colours of
kernels, shared with the page's legend, are defined here.
"""

from __future__ import annotations

import collections
import itertools
import logging
import re
import shutil
import subprocess
import time
from typing import Any

from .common import (
    boundary_id,
    computing_ops,
    copied_ops,
    eliminated_short,
    eliminated_words,
    esc,
    fmt_bytes,
)


__all__ = [
    "BOUNDARY_COLOUR",
    "DOT_TIMEOUT_S",
    "FUSED_EDGE_COLOUR",
    "GENERATED_PALETTE",
    "KIND_FILL",
    "MAX_OP_NODES",
    "SHARED_INPUT_COLOUR",
    "kernel_colours",
    "picture",
]

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

# The missing dot is logged once per process, not once per picture.
_warned_missing_dot = False


# ---------------------------------------------------------------- colours


def kernel_colours(graph: dict[str, Any]) -> dict[str, str]:
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


# ---------------------------------------------------------------- running dot


def _find_dot() -> str | None:
    """The Graphviz ``dot`` binary, or None (tests patch this)."""
    return shutil.which("dot")


def _note(text: str) -> str:
    return f'<p class="note picture-note">{esc(text)}</p>'


def picture(graph: dict[str, Any], slug: str, colours: dict[str, str]) -> str:
    """The graph's SVG, or a note saying why there is none; never raises.

    dot is tried on simpler pictures until one works, all within
    :data:`DOT_TIMEOUT_S`: first with edge labels that take part in the
    layout (the most readable), then with labels placed after it (``xlabel``:
    much faster, and it avoids dot 2.43's failures to route labelled edges
    between clusters), then at kernel level.
    """
    global _warned_missing_dot
    try:
        n_ops = len(computing_ops(graph))
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
                f"{esc(why)}. The picture shows one node per kernel (its op count "
                "and first ops) and one edge per pair of kernels with boundaries "
                "between them, labelled with their reasons, counts and bytes; the "
                "table below lists every boundary.</p>"
            )
        return (
            note
            + f'<div class="picture" data-mode="{mode}" data-labels="{edge_label}" data-graph="'
            f'{esc(graph.get("compile_id"))}">{svg}</div>'
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


# ---------------------------------------------------------------- DOT source


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
    copies: dict[str, list[str]] = collections.defaultdict(list)
    for kernel in graph.get("kernels") or []:
        copy_for = copied_ops(kernel)
        for op in kernel.get("ops") or []:
            # A kernel that only copies an op's input (``copy_for``) does not
            # draw the op, unless no other kernel computes it.
            (copies if op in copy_for else members)[op].append(kernel.get("name", ""))
    for op in graph.get("ops") or []:
        for k in op.get("kernels") or []:
            if k not in members[op.get("name")] and k not in copies[op.get("name")]:
                members[op.get("name")].append(k)
    for op, ks in copies.items():
        if not members.get(op):
            members[op].extend(ks)
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
    computing = computing_ops(graph)
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
            copy_for = copied_ops(kernel)
            recomputed = [
                n for n in kernel.get("ops") or [] if n in names and n not in copy_for
            ]
            copied = [n for n in kernel.get("ops") or [] if n in copy_for]
            ghost = f"{kname}\u00b7recomputed"
            text = (
                "recomputes " + _name_list(recomputed, 4)
                if recomputed
                else "layout copy for " + _name_list(copied, 4)
                if copied
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
        why = eliminated_short(op.get("eliminated"))
        tooltip = f"{name}: {eliminated_words(op.get('eliminated')) or why}"
        lines.append(
            f"  {_q(name)} [id={_q(node_ids[name])}, "
            f"label={_q(f'{name}{chr(10)}{why}')}, tooltip={_q(tooltip)}, shape=box, "
            'style="dashed,rounded", color="#9e9e9e", fontcolor="#616161"];'
        )

    dependency: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for i, b in enumerate(graph.get("boundaries") or []):
        if b.get("relation") == "dependency":
            dependency.setdefault((b.get("producer"), b.get("consumer")), (i, b))

    def boundary_attrs(i: int, b: dict[str, Any], colour: str) -> str:
        nbytes = fmt_bytes((b.get("args") or {}).get("bytes"))
        label = str(b.get("reason")) + (f"\n{nbytes}" if nbytes else "")
        tooltip = (
            f"{b.get('producer')} -> {b.get('consumer')}: {b.get('reason')} "
            f"({b.get('category')}, {b.get('stage')}): {b.get('detail') or ''}"
        )
        return (
            f"{edge_label}={_q(label)}, color={_q(colour)}, fontcolor={_q(colour)}, "
            f"penwidth=1.8, tooltip={_q(tooltip)}, "
            f"URL={_q('#' + boundary_id(slug, i))}, "
            f"id={_q('e-' + boundary_id(slug, i))}, class={_q('boundary-edge')}"
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
        slug, f"graph {cid}: one node per kernel ({len(computing_ops(graph))} ops)"
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
            label += f"\n{fmt_bytes(moved[key])}"
        shared = relation != "dependency"
        colour = SHARED_INPUT_COLOUR if shared else BOUNDARY_COLOUR
        extra = ", style=dashed, dir=none, constraint=false" if shared else ""
        tooltip = f"{a} -> {z}: " + label.replace("\n", ", ")
        lines.append(
            f"  {_q(a)} -> {_q(z)} [{edge_label}={_q(label)}, color={_q(colour)}, "
            f"fontcolor={_q(colour)}, penwidth=1.5, tooltip={_q(tooltip)}, "
            f"URL={_q('#' + boundary_id(slug, first[key]))}, "
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
