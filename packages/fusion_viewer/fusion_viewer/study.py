"""The pages of a fusion study: ``index.html`` and ``cases/<case>.html``.

``benchmarks/fusion/study.py`` runs the models and writes, under its output
directory, ``study.json`` (settings, one row per case, suite tables) and
``captures/<case>.json`` (each case's capture); this module renders the pages
from them (``python -m fusion_viewer study DIR``, or :func:`write_pages` from
the study itself):

* ``index.html``: first the study's answers (kernels, boundaries, reasons,
  coverage: :func:`answers`), then the suite's tables, one row per case
  linked to its page, a legend of every column and, last, where compiled is
  slower than eager, a note that says why with the study's own numbers
  (:func:`slower_note`);
* ``cases/<case>.html``: each case's fusion report page (:mod:`.html`),
  titled with the case id and linked back to the index.

:func:`summary_markdown` (the study's ``summary.md``) says the same in
Markdown, from the same cell formatters (:func:`fmt_mb` and the others),
answers and note.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from .common import esc_name
from .html import save_html


__all__ = [
    "StudyError",
    "answers",
    "fmt_fusible",
    "fmt_inputs",
    "fmt_launches",
    "fmt_mb",
    "fmt_ms",
    "index_html",
    "render_study",
    "slower_cases",
    "slower_note",
    "summary_markdown",
    "top_reasons",
    "write_pages",
]


def fmt_mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.3f}"


def fmt_ms(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def fmt_launches(row: dict[str, Any]) -> str:
    e, c = row.get("launches_eager"), row.get("launches_compiled")
    return "-" if e is None else f"{e:.0f}/{c:.0f}"


def fmt_fusible(row: dict[str, Any]) -> str:
    f = row["fusible"]
    checked = f["true"] + f["false"]
    return f"{f['true']}/{checked}" if checked else "-"


def top_reasons(row: dict[str, Any], n: int = 3) -> str:
    top = sorted(row["by_reason"].items(), key=lambda kv: (-kv[1]["count"], kv[0]))
    return ", ".join(f"{k} {v['count']}" for k, v in top[:n])


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def answers(rows: list[dict[str, Any]], suite: dict[str, Any]) -> list[tuple[str, str]]:
    """The study's answers, first on the index and in ``summary.md``: (what,
    one plain-text sentence or two) for kernels, boundaries, reasons and
    coverage, summed over the cases that ran."""
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return []

    def total(key: str) -> int:
        return sum(int(r.get(key) or 0) for r in ok)

    unfused = total("unfused_ops")
    kernels = (
        f"{_plural(len(ok), 'case')} compiled {total('ops')} computing aten ops "
        f"into {total('kernels')} kernels: {total('kernels_generated')} generated "
        f"(C++ loop nests, Triton) and {total('kernels_extern')} extern (library "
        f"calls such as convolution and matmul); {_plural(unfused, 'op')} "
        f"share{'s' * (unfused == 1)} a kernel with no other computing op."
    )
    categories: dict[str, int] = {}
    for r in ok:
        for category, count in (r.get("by_category") or {}).items():
            categories[category] = categories.get(category, 0) + count
    breaks = total("graph_breaks")
    by_category = ", ".join(
        f"{category} {count}"
        for category, count in sorted(categories.items(), key=lambda kv: -kv[1])
    )
    boundaries = (
        f"{total('boundaries')} kernel boundaries"
        + (f" ({breaks} of them graph breaks)" if breaks else "")
        + (f", by category: {by_category}" if by_category else "")
        + f". {total('heuristic_boundaries')} are heuristic: legal, but judged "
        "unprofitable, the only ones a forced fusion can try (--check-fusible)."
    )
    fusible = {k: sum(r["fusible"][k] for r in ok) for k in ("true", "false")}
    if fusible["true"] or fusible["false"]:
        boundaries += (
            f" Could they fuse? {fusible['true']} yes, {fusible['false']} no; "
            "the rest are not tried."
        )
    top = suite["by_count"][:3]
    heaviest = next((m for m in suite["by_bytes"] if m["bytes"]), None)
    reasons = (
        "Most frequent: "
        + "; ".join(
            f"{m['reason']} {m['count']} ({m['category']}, in "
            f"{_plural(m['cases'], 'case')})"
            for m in top
        )
        + "."
        if top
        else "No kernel boundaries in any case."
    )
    if heaviest:
        moved = sum(m["bytes"] for m in suite["by_bytes"])
        reasons += (
            f" Of the {fmt_mb(moved)} MB that cross boundaries, "
            f"{heaviest['reason']} moves the most: {fmt_mb(heaviest['bytes'])} MB."
        )
    unexplained = suite["unexplained"]
    coverage = (
        "Every boundary has a reason: 0 unexplained (coverage violations)."
        if not unexplained
        else f"{_plural(unexplained, 'boundary', 'boundaries')} "
        "without a reason (coverage violations): see the case pages."
    )
    return [
        ("kernels", kernels),
        ("boundaries", boundaries),
        ("reasons", reasons),
        ("coverage", coverage),
    ]


def fmt_inputs(row: dict[str, Any]) -> str:
    """A case's input shapes (``2x3x64x64``), or "-" for older studies."""
    shapes = row.get("inputs")
    if not shapes:
        return "-"
    return ", ".join("x".join(str(d) for d in shape) or "scalar" for shape in shapes)


def slower_note(settings: dict[str, Any], rows: list[dict[str, Any]]) -> str | None:
    """Why compiled is slower than eager in some cases, with the study's
    numbers (shapes, device, threads, step times), in plain text; None where
    no timed case is slower.  The cases themselves are in
    :func:`slower_cases`."""
    slower = slower_cases(rows)
    if not slower:
        return None
    timed = [
        r for r in rows if r.get("status") == "ok" and r.get("speedup") is not None
    ]
    threads = settings.get("threads")
    where = str(settings.get("device_name") or settings.get("device") or "?")
    if threads:
        where += f" with {_plural(threads, 'thread')}"
    if settings.get("cpu_count") and settings.get("device") != "cuda":
        where += f" on a machine of {_plural(settings['cpu_count'], 'core')}"
    repeats = settings.get("repeats")
    steps = f"{_plural(repeats, 'step')}" if repeats else "the steps"
    shapes = settings.get("shapes", "?")
    text = (
        f"Compiled is slower than eager in {len(slower)} of {len(timed)} timed "
        "cases, listed below with their inputs and step times. The timings are "
        f"{settings.get('timing', 'medians')}"
        + (f" of {steps} after warm-up" if repeats else "")
        + f", on {where}, at the {shapes} shapes"
    )
    if shapes == "ci":
        return text + (
            " (small inputs, made for a quick run). At such sizes a step holds "
            "little work for fusion to save, so the fixed costs of a compiled "
            "step (Dynamo's guards, the Python wrapper around the kernels, "
            "layout copies before library calls) can outweigh it, and a median "
            f"of {steps}"
            + (f" on {_plural(threads, 'thread')}" if threads else "")
            + " moves with whatever else runs on the machine; the study does not "
            "measure which it is. Full shapes (--shapes full), more steps "
            "(--repeats) or a GPU answer that. This study explains kernel "
            "boundaries: a speed-up below 1 here is a measurement to look into, "
            "not a property of fusion."
        )
    return text + (
        ". The study does not measure where a step's time goes: it explains "
        "kernel boundaries, and a speed-up below 1 here is a measurement to "
        "look into (a profile of those steps), not a property of fusion."
    )


def slower_cases(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cases that ran and were timed slower compiled than eager."""
    return [
        r
        for r in rows
        if r.get("status") == "ok" and r.get("speedup") is not None and r["speedup"] < 1
    ]


# The columns of summary.md's case table.
ROW_COLUMNS = (
    "case",
    "family",
    "graphs",
    "breaks",
    "ops",
    "unfused ops",
    "kernels gen/ext",
    "boundaries",
    "heuristic",
    "fusible",
    "boundary MB",
    "eager ms",
    "compiled ms",
    "speed-up",
    "launches eager/compiled",
    "top reasons",
)


def _row_cells(r: dict[str, Any]) -> list[str]:
    if r.get("status") != "ok":
        return [r["case"], r.get("family", "-"), "FAILED: " + r["error"][:160]] + [
            ""
        ] * (len(ROW_COLUMNS) - 3)
    return [
        r["case"],
        r["family"],
        str(r["graphs"]),
        str(r["graph_breaks"]),
        str(r["ops"]),
        str(r.get("unfused_ops", "-")),
        f"{r['kernels_generated']}/{r['kernels_extern']}",
        str(r["boundaries"]),
        str(r["heuristic_boundaries"]),
        fmt_fusible(r),
        fmt_mb(r["boundary_bytes"]),
        fmt_ms(r.get("eager_ms")),
        fmt_ms(r.get("compiled_ms")),
        "-" if r.get("speedup") is None else f"{r['speedup']:.2f}",
        fmt_launches(r),
        top_reasons(r),
    ]


def summary_markdown(
    settings: dict[str, Any], rows: list[dict[str, Any]], suite: dict[str, Any]
) -> str:
    """The study's ``summary.md``: what the index says, as Markdown (the
    answers first, the cases, the top reasons, the note on timings last)."""
    lines = [
        "# Fusion study",
        "",
        f"{settings['device_name']}, torch {settings['torch']} {settings['fork']}, "
        f"shapes {settings['shapes']}; timing: {settings['timing']}, "
        f"{settings['repeats']} steps after warm-up.",
        "",
        f"Command: `{settings['command']}`",
        "",
    ]
    # The fusion answers first; the note on timings last (as on the index).
    found = answers(rows, suite)
    if found:
        lines += ["## Answers", ""]
        lines += [f"- **{what.capitalize()}**: {text}" for what, text in found]
        lines += [""]
    lines += [
        "## Cases",
        "",
        "| " + " | ".join(ROW_COLUMNS) + " |",
        "|" + "---|" * len(ROW_COLUMNS),
    ]
    lines += ["| " + " | ".join(_row_cells(r)) + " |" for r in rows]
    if suite["failed"]:
        lines += ["", f"Failed cases: {', '.join(suite['failed'])}."]
    lines += [
        "",
        "## Top reasons, suite-wide",
        "",
        "| reason | category | boundaries | MB moved | cases |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {m['reason']} | {m['category']} | {m['count']} | {fmt_mb(m['bytes'])} | {m['cases']} |"
        for m in suite["by_count"][:12]
    ]
    lines += [
        "",
        "## Top reasons by bytes moved",
        "",
        "| reason | category | MB moved | boundaries |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {m['reason']} | {m['category']} | {fmt_mb(m['bytes'])} | {m['count']} |"
        for m in suite["by_bytes"][:8]
        if m["bytes"]
    ]
    for family, table in suite["by_family"].items():
        lines += ["", f"## Top reasons: {family}", ""]
        if not table:
            lines += ["No kernel boundaries."]
            continue
        lines += [
            "| reason | category | boundaries | MB moved |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {m['reason']} | {m['category']} | {m['count']} | {fmt_mb(m['bytes'])} |"
            for m in table[:6]
        ]
    note = slower_note(settings, rows)
    if note:
        lines += ["", "## Timings", "", note, ""]
        lines += [
            "| case | inputs | eager ms | compiled ms | speed-up |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['case']} | {fmt_inputs(r)} | {fmt_ms(r['eager_ms'])} | "
            f"{fmt_ms(r['compiled_ms'])} | {r['speedup']:.2f} |"
            for r in slower_cases(rows)
        ]
    return "\n".join(lines) + "\n"


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.2em 1.5em; color: #222;
  overflow-wrap: break-word; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: 0.5em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.45em; text-align: left;
  vertical-align: top; }
th { background: #f0f0f0; white-space: nowrap; }
th abbr { text-decoration: none; border-bottom: 1px dotted #777; cursor: help; }
td.num { text-align: right; white-space: nowrap; }
table.cases { width: 100%; }
table.cases td.case { min-width: 10em; }
table.cases td.error { overflow-wrap: break-word; }
.top { display: block; }
table.cases td.reasons { min-width: 12em; }
table.cases td.reasons code { overflow-wrap: normal; }
.dim { color: #777; }
tr.failed td { background: #fde8e8; }
td.slower { background: #fff3e0; color: #b71c1c; font-weight: 600; }
.caveat { background: #fff8e1; border-left: 4px solid #f9a825; padding: .4em .8em; }
code { background: #f4f4f4; padding: 0 0.2em; overflow-wrap: break-word; }
ul.answers li { margin: .2em 0; } ul.answers b { text-transform: capitalize; }
table.slower { margin: .5em 0 .2em; background: #fff; }
dl.columns { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em;
  font-size: 13px; } dl.columns dt { font-weight: 600; } dl.columns dd { margin: 0; }
.families { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
"""

# The index's case table: (header, what the column says).  Every column is
# explained on the page, in this order.
INDEX_COLUMNS = (
    (
        "case",
        "model, step (inference, or a training step: forward + backward) "
        "and compile mode; links to the case's fusion report page",
    ),
    ("family", "the kind of model (cnn, transformer, rnn, micro)"),
    ("graphs", "graphs compiled, and Dynamo graph breaks between them"),
    (
        "ops",
        "computing aten ops; unfused: ops that share their kernel with no "
        "other computing op",
    ),
    (
        "kernels",
        "kernels: generated (C++ loop nests, Triton) / extern (library "
        "calls such as convolution and matmul)",
    ),
    (
        "boundaries",
        "kernel boundaries between ops, graph breaks included; "
        "heuristic: those the scheduler refused as unprofitable, not illegal",
    ),
    (
        "fusible",
        "boundaries with a known answer to 'could it fuse?': yes "
        "(forced by the fusible check, correct) and no (legality, or forcing "
        "failed); the rest are not tried. Only --check-fusible N tries heuristic "
        "boundaries",
    ),
    (
        "boundary MB",
        "megabytes written by one kernel and read back by another "
        "across the boundaries (each buffer crossing counted once)",
    ),
    ("eager ms", "median step time in eager mode"),
    ("compiled ms", "median step time compiled"),
    (
        "speed-up",
        "eager ms / compiled ms: above 1 compiled is faster; below 1 "
        "compiled is slower (flagged; the Timings note below the tables says why)",
    ),
    (
        "launches",
        "kernel launches per step, eager / compiled (GPU only, from torch.profiler)",
    ),
    ("top reasons", "the three most frequent boundary reasons, with counts"),
)
REASON_COLUMNS = (
    ("reason", "the reason code of a kernel boundary (see the case pages)"),
    (
        "category",
        "legality: fusing would be wrong; heuristic: judged "
        "unprofitable; backend: the backend cannot; config: a setting forbids it; "
        "not_considered: the pair was never evaluated",
    ),
    ("boundaries", "how many boundaries have this reason"),
    ("MB moved", "megabytes that cross these boundaries"),
    ("cases", "in how many cases the reason occurs"),
)


def _index_cells(r: dict[str, Any]) -> list[tuple[str, str]]:
    """The (HTML, class) cells of a case row of the index (escaped here)."""
    esc = html.escape
    if r.get("status") != "ok":
        return [
            (esc_name(r["case"]), "case"),
            (esc(r.get("family", "-")), ""),
            ("FAILED: " + esc(r.get("error", "")[:300]), "error"),
        ]
    f = r["fusible"]
    fusible = f"{f['true']} yes \u00b7 {f['false']} no" + (
        f'<br><span class="dim">{f["unknown"]} not tried</span>'
        if f.get("unknown")
        else ""
    )
    speedup, cls = "-", "num"
    if r.get("speedup") is not None:
        speedup = f"{r['speedup']:.2f}\u00d7"
        if r["speedup"] < 1:
            speedup += (
                ' <a href="#slower" title="compiled is slower than eager">slower</a>'
            )
            cls = "num slower"
    top = sorted(r["by_reason"].items(), key=lambda kv: (-kv[1]["count"], kv[0]))
    breaks = r["graph_breaks"]
    return [
        (f'<a href="cases/{esc(r["case"])}.html">{esc_name(r["case"])}</a>', "case"),
        (esc(r["family"]), ""),
        (
            f"{r['graphs']}"
            + (f" \u00b7 {breaks} break{'s' * (breaks != 1)}" if breaks else ""),
            "num",
        ),
        (
            f'{r["ops"]}<br><span class="dim">{r.get("unfused_ops", "-")} unfused</span>',
            "num",
        ),
        (f"{r['kernels_generated']} / {r['kernels_extern']}", "num"),
        (
            f'{r["boundaries"]}<br><span class="dim">{r["heuristic_boundaries"]} heuristic</span>',
            "num",
        ),
        (fusible, "num"),
        (fmt_mb(r["boundary_bytes"]), "num"),
        (fmt_ms(r.get("eager_ms")), "num"),
        (fmt_ms(r.get("compiled_ms")), "num"),
        (speedup, cls),
        (esc(fmt_launches(r)), "num"),
        (
            "".join(
                f'<span class="top"><code>{esc(k).replace("_", "_<wbr>")}</code> '
                f"{v['count']}</span>"
                for k, v in top[:3]
            ),
            "reasons",
        ),
    ]


def index_html(settings: dict[str, Any], rows: list[dict], suite: dict) -> str:
    """The study's index page: cases, a legend of every column, reason tables."""
    esc = html.escape
    # Launches are counted on a GPU only: without any, the column goes.
    launches = any(r.get("launches_eager") is not None for r in rows)
    columns = tuple(c for c in INDEX_COLUMNS if launches or c[0] != "launches")

    def head(columns: tuple[tuple[str, str], ...]) -> str:
        return (
            "<tr>"
            + "".join(
                f'<th><abbr title="{esc(meaning)}">{esc(name)}</abbr></th>'
                for name, meaning in columns
            )
            + "</tr>"
        )

    def table(columns: tuple[tuple[str, str], ...], body: list[list[str]]) -> str:
        out = [f"<table>{head(columns)}"]
        for cells in body:
            out.append(
                "<tr>"
                + "".join(
                    f'<td class="num">{esc(c)}</td>'
                    if c[:1].isdigit()
                    else f"<td>{esc(c)}</td>"
                    for c in cells
                )
                + "</tr>"
            )
        return "\n".join(out) + "</table>"

    def legend(columns: tuple[tuple[str, str], ...]) -> str:
        return (
            '<dl class="columns">'
            + "".join(
                f'<dt data-column="{esc(n)}">{esc(n)}</dt><dd>{esc(m)}</dd>'
                for n, m in columns
            )
            + "</dl>"
        )

    case_rows = []
    for r in rows:
        cells = _index_cells(r)
        if not launches and len(cells) == len(INDEX_COLUMNS):
            del cells[[c[0] for c in INDEX_COLUMNS].index("launches")]
        if r.get("status") != "ok":
            first, second, error = cells
            case_rows.append(
                f'<tr class="failed"><td class="case">{first[0]}</td><td>{second[0]}</td>'
                f'<td class="error" colspan="{len(columns) - 2}">{error[0]}</td></tr>'
            )
            continue
        case_rows.append(
            f'<tr class="case-row" data-case="{esc(r["case"])}">'
            + "".join(
                f'<td class="{c}">{h}</td>' if c else f"<td>{h}</td>" for h, c in cells
            )
            + "</tr>"
        )
    note = slower_note(settings, rows)
    timings = ""
    if note:
        # After the answers: why some cases are slower compiled, with the
        # study's own numbers, and those cases.
        timings = (
            '<h2 id="timings">Timings</h2>'
            f'<div class="caveat" id="slower"><p>{esc(note)}</p>'
            '<table class="slower"><tr><th>case</th><th>inputs</th>'
            "<th>eager ms</th><th>compiled ms</th><th>speed-up</th>"
            "<th>kernels</th></tr>"
            + "".join(
                f'<tr data-case="{esc(r["case"])}">'
                f'<td><a href="cases/{esc(r["case"])}.html">{esc_name(r["case"])}'
                f'</a></td><td>{esc(fmt_inputs(r))}</td><td class="num">'
                f'{fmt_ms(r["eager_ms"])}</td><td class="num">'
                f'{fmt_ms(r["compiled_ms"])}</td><td class="num">'
                f'{r["speedup"]:.2f}\u00d7</td><td class="num">'
                f"{r['kernels_generated']} / {r['kernels_extern']}</td></tr>"
                for r in slower_cases(rows)
            )
            + "</table></div>"
        )
    reason_rows = [
        [
            m["reason"],
            m["category"],
            str(m["count"]),
            fmt_mb(m["bytes"]),
            str(m["cases"]),
        ]
        for m in suite["by_count"]
    ]
    byte_rows = [
        [
            m["reason"],
            m["category"],
            str(m["count"]),
            fmt_mb(m["bytes"]),
            str(m["cases"]),
        ]
        for m in suite["by_bytes"]
        if m["bytes"]
    ]
    family_parts = [
        f"<div><h3>{esc(family)}</h3>"
        + (
            table(
                REASON_COLUMNS[:4],
                [
                    [m["reason"], m["category"], str(m["count"]), fmt_mb(m["bytes"])]
                    for m in fam_table
                ],
            )
            if fam_table
            else '<p class="dim">no kernel boundaries</p>'
        )
        + "</div>"
        for family, fam_table in suite["by_family"].items()
    ]
    failed = "".join(
        f"<li><b>{esc(r['case'])}</b>: <code>{esc(r.get('error', ''))}</code></li>"
        for r in rows
        if r.get("status") != "ok"
    )
    if rows:
        cases = (
            f'<table class="cases">{head(columns)}'
            + "\n".join(case_rows)
            + "</table>"
            + "<details open><summary>What the columns say</summary>"
            + legend(columns)
            + "</details>"
        )
    else:
        cases = '<p class="caveat">No case ran: the study is empty.</p>'
    reasons = ""
    if suite["by_count"]:
        reasons = (
            "<h2>Top reasons, suite-wide</h2>"
            + table(REASON_COLUMNS, reason_rows)
            + (
                (
                    "<h2>Top reasons by bytes moved</h2>"
                    + table(REASON_COLUMNS, byte_rows)
                )
                if byte_rows
                else ""
            )
            + "<h2>Per model family</h2>"
            + f'<div class="families">{"".join(family_parts)}</div>'
            + "<details><summary>What the columns say</summary>"
            + legend(REASON_COLUMNS)
            + "</details>"
        )
    elif rows:
        reasons = "<p>No kernel boundaries in any case.</p>"
    found = answers(rows, suite)
    answer_list = (
        '<h2 id="answers">Answers</h2><ul class="answers">'
        + "".join(
            f'<li data-answer="{what}"><b>{what}</b>: {esc(text)}</li>'
            for what, text in found
        )
        + "</ul>"
        if found
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Fusion study</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style></head><body>
<h1>Fusion study: which ops does Inductor not fuse, and why?</h1>
<p>{esc(settings["device_name"])}, torch {esc(settings["torch"])} {esc(settings["fork"])},
shapes {esc(settings["shapes"])}; timing: {esc(settings["timing"])}.<br>
Command: <code>{esc(settings["command"])}</code></p>
{answer_list}
<h2>Cases</h2>
{cases}
{f"<h2>Failed</h2><ul>{failed}</ul>" if failed else ""}
{reasons}
{timings}
<script>
// The page's width, for tests: nothing may be wider than the window.
var root = document.documentElement;
root.setAttribute("data-scroll-width", root.scrollWidth);
root.setAttribute("data-client-width", root.clientWidth);
</script>
</body></html>
"""


class StudyError(ValueError):
    """The directory holds no readable study (one line, for people)."""


def write_pages(
    out: str | os.PathLike[str],
    settings: dict[str, Any],
    rows: list[dict[str, Any]],
    suite: dict[str, Any],
    case_pages: bool = True,
) -> int:
    """Write ``index.html`` and, with ``case_pages``, one page per case whose
    capture is in ``captures/``; returns the number of case pages written."""
    out = Path(out)
    (out / "index.html").write_text(index_html(settings, rows, suite), encoding="utf-8")
    if not case_pages:
        return 0
    (out / "cases").mkdir(exist_ok=True)
    written = 0
    for r in rows:
        capture = out / "captures" / f"{r['case']}.json"
        if r.get("status") == "ok" and capture.exists():
            data = json.loads(capture.read_text(encoding="utf-8"))
            save_html(
                data,
                out / "cases" / f"{r['case']}.html",
                name=r["case"],
                index_href="../index.html",
            )
            written += 1
    return written


def render_study(directory: str | os.PathLike[str]) -> int:
    """Render the pages of the study written to ``directory`` (its
    ``study.json`` and ``captures/``); returns the number of case pages."""
    path = Path(directory) / "study.json"
    if not path.is_file():
        raise StudyError(
            f"{directory}: no study.json (write one with "
            "python benchmarks/fusion/study.py --out DIR)"
        )
    try:
        study = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise StudyError(f"{path}: cannot read: {e}") from e
    if not isinstance(study, dict) or not all(
        key in study for key in ("settings", "rows", "suite")
    ):
        raise StudyError(f"{path}: not a study (no settings, rows and suite)")
    return write_pages(directory, study["settings"], study["rows"], study["suite"])
