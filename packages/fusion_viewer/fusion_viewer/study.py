"""The pages of a fusion study: ``index.html`` and ``cases/<case>.html``.

``benchmarks/fusion/study.py`` runs the models and writes, under its output
directory, ``study.json`` (settings, one row per case, suite tables) and
``captures/<case>.json`` (each case's capture); this module renders the pages
from them (``python -m fusion_viewer study DIR``, or :func:`write_pages` from
the study itself):

* ``index.html``: the suite's tables, one row per case linked to its page, a
  legend of every column and a caveat where compiled is slower than eager;
* ``cases/<case>.html``: each case's fusion report page (:mod:`.html`).

The cell formatters (:func:`fmt_mb` and the others) are shared with the
study's Markdown summary, so that both say the same.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from .html import save_html


__all__ = [
    "StudyError",
    "fmt_fusible",
    "fmt_launches",
    "fmt_mb",
    "fmt_ms",
    "index_html",
    "render_study",
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
table.cases td.case { overflow-wrap: anywhere; min-width: 10em; }
table.cases td.error { overflow-wrap: anywhere; }
.top { display: block; }
table.cases td.reasons { min-width: 12em; }
table.cases td.reasons code { overflow-wrap: normal; }
.dim { color: #777; }
tr.failed td { background: #fde8e8; }
td.slower { background: #fff3e0; color: #b71c1c; font-weight: 600; }
.caveat { background: #fff8e1; border-left: 4px solid #f9a825; padding: .4em .8em; }
code { background: #f4f4f4; padding: 0 0.2em; overflow-wrap: anywhere; }
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
        "compiled is slower (flagged, see the note above the table)",
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
            (esc(r["case"]), "case"),
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
        (f'<a href="cases/{esc(r["case"])}.html">{esc(r["case"])}</a>', "case"),
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
    slower = [
        r
        for r in rows
        if r.get("status") == "ok" and r.get("speedup") is not None and r["speedup"] < 1
    ]
    timed = [
        r for r in rows if r.get("status") == "ok" and r.get("speedup") is not None
    ]
    caveat = ""
    if slower:
        names = ", ".join(
            f"{esc(r['case'])} ({r['speedup']:.2f}\u00d7)" for r in slower
        )
        caveat = (
            f'<p class="caveat" id="slower"><b>Compiled is slower than eager in '
            f"{len(slower)} of {len(timed)} timed cases</b> (speed-up below 1: "
            f"{names}). This study explains kernel boundaries; it does not "
            "analyse why a step is slow, and its timings are "
            f"{esc(settings['timing'])} on {esc(settings['device_name'])}. At small "
            "shapes, fixed costs per step (guards, the Python wrapper, layout "
            "copies before library calls) can outweigh what fusion saves; a "
            "speed-up below 1 here is a measurement to look into, not a "
            "property of fusion.</p>"
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
        + table(
            REASON_COLUMNS[:4],
            [
                [m["reason"], m["category"], str(m["count"]), fmt_mb(m["bytes"])]
                for m in fam_table
            ],
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
            caveat
            + f'<table class="cases">{head(columns)}'
            + "\n".join(case_rows)
            + "</table>"
            + f"<p>Unexplained boundaries (coverage violations): {suite['unexplained']}.</p>"
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
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Fusion study</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style></head><body>
<h1>Fusion study: which ops does Inductor not fuse, and why?</h1>
<p>{esc(settings["device_name"])}, torch {esc(settings["torch"])} {esc(settings["fork"])},
shapes {esc(settings["shapes"])}; timing: {esc(settings["timing"])}.<br>
Command: <code>{esc(settings["command"])}</code></p>
<h2>Cases</h2>
{cases}
{f"<h2>Failed</h2><ul>{failed}</ul>" if failed else ""}
{reasons}
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
            save_html(data, out / "cases" / f"{r['case']}.html")
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
