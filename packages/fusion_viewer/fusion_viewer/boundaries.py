"""The boundary table of a graph on the fusion report page.

One row per kernel boundary (class ``boundary``, with ``data-`` attributes
that tools find in the DOM): its two ops, reason, category, stage, kernels,
the bytes that cross it, the predicted gain of fusing it, the detail, and
whether it could fuse (``fusible`` and the forced-fusion ``fusible_check``).

Two rules keep the table readable in a window of 1400 pixels:

* a column that no row has data for is left out (the fusible check appears
  only where ``fusion_viewer.check`` ran; bytes and gains only where the
  capture has them), so the columns with data get the width;
* names (ops, kernels, reason codes) wrap between their words (after ``_``
  and ``.``, :func:`.common.esc_name`), never inside one.

A boundary with a library call on one side (an extern or fallback kernel:
the convolution before a batch norm) shows no predicted gain, whatever an
older capture recorded: the call reads and writes memory however the code
around it is fused, so no fusion removes the boundary.  Torch's
``fusion_remarks.costs.predicted_gain`` predicts nothing for it since; the
check here keeps the pages of captures priced before right.
"""

from __future__ import annotations

from typing import Any

from .common import (
    boundary_id,
    esc,
    esc_name,
    fmt_bytes,
    fmt_cost_model,
    fmt_predicted,
    fmt_seconds,
    source_link,
)


__all__ = ["LIBRARY_KINDS", "boundary_table", "bytes_cell", "library_side"]


# Boundary tables with more rows than this start collapsed.
OPEN_TABLE_ROWS = 40
# Kernel kinds that are library calls: nothing fuses into them.
LIBRARY_KINDS = ("extern", "fallback")


def bytes_cell(n: object) -> str:
    """A table cell of a byte count (the exact count on hover), or empty."""
    text = fmt_bytes(n)
    return f'<td class="num" title="{esc(n)}">{esc(text)}</td>' if text else "<td></td>"


def library_side(boundary: dict[str, Any], kinds: dict[str, str]) -> str | None:
    """The kernel on either side of ``boundary`` that is a library call
    (kind extern or fallback, ``kinds``: kernel name -> kind), or None."""
    for kernel in boundary.get("kernels") or []:
        if kinds.get(kernel) in LIBRARY_KINDS:
            return str(kernel)
    return None


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


def _gain_cell(boundary: dict[str, Any], library: str | None) -> str:
    """The predicted gain (and, measured, the two kernels' time) of a boundary:
    "-" where none is predicted, with why on hover."""
    predicted = boundary.get("predicted")
    hot = fmt_seconds(boundary.get("hotness_s"))
    measured = f'<div class="dim">kernels {esc(hot)}</div>' if hot else ""
    if library is not None and predicted:
        why = (
            f"no gain: {library} is a library call, which reads its inputs and "
            "writes its output in memory whatever is fused around it, so no "
            "fusion removes this boundary"
        )
        return (
            f'<td class="num no-gain" title="{esc(why)}" data-gain="">-{measured}</td>'
        )
    gain = predicted.get("gain_s") if isinstance(predicted, dict) else None
    text = fmt_seconds(gain) or ("-" if predicted else "")
    title = fmt_predicted(predicted)
    if isinstance(predicted, dict) and predicted.get("note"):
        title += f" ({predicted['note']})"
    return (
        f'<td class="num" title="{esc(title)}"'
        f' data-gain="{esc(gain if gain is not None else "")}">{esc(text)}'
        f"{measured}</td>"
    )


# The columns of the table: (key, header).  A column is shown when some row
# has data in it (see _cells).
_COLUMNS = (
    ("producer", "<th>producer</th>"),
    ("arrow", "<th></th>"),
    ("consumer", "<th>consumer</th>"),
    ("relation", "<th>relation</th>"),
    ("reason", "<th>reason</th>"),
    ("category", "<th>category</th>"),
    ("stage", "<th>stage</th>"),
    ("kernels", "<th>kernels</th>"),
    (
        "buffer",
        '<th title="the buffer one kernel writes and the other reads">buffer</th>',
    ),
    ("bytes", "<th>bytes</th>"),
    (
        "gain",
        '<th title="what fusing the two kernels is predicted to save">'
        "predicted gain</th>",
    ),
    ("detail", "<th>detail</th>"),
    ("fusible", "<th>fusible</th>"),
    ("check", "<th>fusible check</th>"),
)


def _cells(
    b: dict[str, Any],
    ops: dict[str, Any],
    kinds: dict[str, str],
    colours: dict[str, str],
) -> dict[str, tuple[str, bool]]:
    """Column key -> (the row's cell, whether it holds data)."""
    args = dict(b.get("args") or {})
    nbytes = args.pop("bytes", None)
    buffer = b.get("buffer") or args.get("buffer")
    args.pop("buffer", None)
    sides = [
        ", ".join(str(n) for n in b.get(key) or [])
        for key in ("producer_ops", "consumer_ops")
    ]
    kernels = " \u2192 ".join(
        f'<span class="chip" style="background:{esc(colours.get(k, "#ffffff"))}">'
        f"{esc_name(k)}</span>"
        for k in b.get("kernels") or []
    )
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
    category = b.get("category")
    arrow = "\u2225" if b.get("relation") == "shared_input" else "\u2192"
    check = _fusible_check(b.get("fusible_check"))
    return {
        "producer": (f"<td><code>{esc_name(b.get('producer'))}</code></td>", True),
        "arrow": (f"<td>{arrow}</td>", True),
        "consumer": (f"<td><code>{esc_name(b.get('consumer'))}</code></td>", True),
        "relation": (f"<td>{esc_name(b.get('relation'))}</td>", True),
        "reason": (f"<td><code>{esc_name(b.get('reason'))}</code></td>", True),
        "category": (
            f'<td class="cat cat-{esc(category)}">{esc_name(category)}</td>',
            bool(category),
        ),
        "stage": (f"<td>{esc_name(b.get('stage'))}</td>", bool(b.get("stage"))),
        "kernels": (f"<td>{kernels}</td>", bool(kernels)),
        "buffer": (
            f"<td><code>{esc_name(buffer)}</code>"
            + (
                f'<div class="dim">{esc_name(sides[0])} \u2192 {esc_name(sides[1])}</div>'
                if all(sides)
                else ""
            )
            + "</td>"
            if buffer
            else "<td></td>",
            bool(buffer),
        ),
        "bytes": (bytes_cell(nbytes), bool(fmt_bytes(nbytes))),
        "gain": (
            _gain_cell(b, library_side(b, kinds)),
            bool(b.get("predicted") or b.get("hotness_s") is not None),
        ),
        "detail": (
            f'<td class="detail">{esc_name(b.get("detail"))}'
            + (f'<div class="args">{esc_name(extra)}</div>' if extra else "")
            + (f'<div class="dim">{where}</div>' if where else "")
            + "</td>",
            bool(b.get("detail") or extra or where),
        ),
        "fusible": (
            f"<td>{_fusible(b.get('fusible'))}</td>",
            b.get("fusible") is not None,
        ),
        "check": (f"<td>{check}</td>", bool(check)),
    }


def boundary_table(graph: dict[str, Any], slug: str, colours: dict[str, str]) -> str:
    """Every boundary of ``graph``, one row each; folded past
    :data:`OPEN_TABLE_ROWS` rows."""
    bounds = graph.get("boundaries") or []
    cid = graph.get("compile_id", "?")
    ops = {op.get("name"): op for op in graph.get("ops") or []}
    if not bounds:
        return '<p class="quiet">No kernel boundaries in this graph.</p>'
    kinds = {k.get("name"): str(k.get("kind")) for k in graph.get("kernels") or []}
    cells = [_cells(b, ops, kinds, colours) for b in bounds]
    shown = [(key, head) for key, head in _COLUMNS if any(row[key][1] for row in cells)]
    rows = []
    for i, (b, row) in enumerate(zip(bounds, cells)):
        search = {
            str(x).lower()
            for n in (b.get("producer"), b.get("consumer"))
            for x in (n, ops.get(n, {}).get("source"))
            if x
        } | {str(k).lower() for k in b.get("kernels") or []}
        rows.append(
            f'<tr class="boundary rel-{esc(b.get("relation"))}" id="{boundary_id(slug, i)}"'
            f' data-graph="{esc(cid)}" data-producer="{esc(b.get("producer"))}"'
            f' data-consumer="{esc(b.get("consumer"))}" data-buffer="{esc(b.get("buffer") or "")}"'
            f' data-reason="{esc(b.get("reason"))}"'
            f' data-category="{esc(b.get("category"))}" data-relation="{esc(b.get("relation"))}"'
            f' data-kinds="{esc(" ".join(sorted({kinds.get(k, "?") for k in b.get("kernels") or []})))}"'
            f' data-search="{esc(" ".join(sorted(search)))}">'
            + "".join(row[key][0] for key, _ in shown)
            + "</tr>"
        )
    opened = " open" if len(rows) <= OPEN_TABLE_ROWS else ""
    return (
        f'<details class="boundary-list"{opened}><summary>{len(rows)} '
        f"boundar{'y' if len(rows) == 1 else 'ies'} of graph {esc(cid)}"
        '<span class="table-status"></span></summary>'
        '<table class="boundaries"><thead><tr>'
        + "".join(head for _, head in shown)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + (
            f'<p class="dim">{esc(fmt_cost_model(graph["cost_model"]))}</p>'
            if graph.get("cost_model")
            else ""
        )
        + "</details>"
    )
