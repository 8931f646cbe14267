"""Tables, shares and plot of an ablation results JSON (``ablation.py --plot``).

Rows come from ``ablation.run_model``: per model, mode and arm, up to four
measures of one step, each the median of interleaved rounds with its spread
((max - min) / median of the round medians):

=====================  ====================================================
``gpu_kernel``         summed kernel durations in a profiler trace: the
                       device's work, free of host noise
``cuda_graph``         the whole step captured once as a CUDA graph and
                       replayed: the same method for every arm
``inductor_cudagraphs`` Inductor's own CUDA graphs (``triton.cudagraphs``),
                       where the arm allows the option
``wall``               the step between CUDA events without CUDA graphs:
                       host-bound at these shapes
=====================  ====================================================

Rows of an older run carry only ``median_s`` (wall-clock, no rounds); they
are shown as ``wall`` without a spread.

Fusion's share of Inductor's gain, per measure, over a baseline ``b``
(``no_opt``, the compiled code with nothing optimized, or ``eager``)::

    share = ln(t_b / t_fusion_only) / ln(t_b / t_default)

computed in each round (the arms of a round were timed back to back) and
given as the median with the range over rounds.  Undefined where the default
is not at least 1% faster than the baseline.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any


MEASURES = ("gpu_kernel", "cuda_graph", "inductor_cudagraphs", "wall")
MEASURE_TITLES = {
    "gpu_kernel": "GPU kernel time per step (profiler; device work, free of host noise)",
    "cuda_graph": "Step time as one replayed CUDA graph (whole step captured)",
    "inductor_cudagraphs": "Step time under Inductor's CUDA graphs (triton.cudagraphs)",
    "wall": "Wall-clock step time without CUDA graphs (host-bound, noisy)",
}
BASELINES = ("no_opt", "eager")


def rounds_of(row: dict[str, Any] | None, measure: str) -> list[float]:
    """The per-round medians of ``measure`` in ``row`` (one value for an
    older row that has only ``median_s``)."""
    if not row:
        return []
    values = row.get(f"{measure}_rounds")
    if values:
        return [float(v) for v in values]
    if measure == "wall" and row.get("median_s") is not None and "wall_s" not in row:
        return [float(row["median_s"])]
    if measure == "gpu_kernel" and row.get("gpu_kernel_s") is not None:
        return [float(row["gpu_kernel_s"])]
    return []


def value_of(row: dict[str, Any] | None, measure: str) -> float | None:
    values = rounds_of(row, measure)
    return statistics.median(values) if values else None


def share(t_base: float, t_fusion_only: float, t_default: float) -> float | None:
    """ln(t_base / t_fusion_only) / ln(t_base / t_default): 1 when fusion alone
    reaches the default's gain, 0 when it gains nothing; None when the
    default is not at least 1% faster than the baseline."""
    if min(t_base, t_fusion_only, t_default) <= 0:
        return None
    total = math.log(t_base / t_default)
    if total <= 0.01:
        return None
    return math.log(t_base / t_fusion_only) / total


def share_rounds(
    base: dict[str, Any] | None,
    fusion_only: dict[str, Any] | None,
    default: dict[str, Any] | None,
    measure: str,
) -> dict[str, Any] | None:
    """Fusion's share per round (rounds paired by index) and per the medians:
    ``{"median", "min", "max", "rounds"}``; None where undefined (no rows, or
    the default not faster than the baseline in the medians)."""
    series = [rounds_of(r, measure) for r in (base, fusion_only, default)]
    if not all(series):
        return None
    medians = [statistics.median(s) for s in series]
    central = share(*medians)
    if central is None:
        return None
    per_round = [
        s
        for s in (share(*ts) for ts in zip(*series))
        if s is not None and math.isfinite(s)
    ]
    return {
        "median": central,
        "min": min(per_round, default=central),
        "max": max(per_round, default=central),
        "rounds": per_round,
    }


def _cell(row: dict[str, Any] | None, measure: str) -> str:
    value = value_of(row, measure)
    if value is None:
        if row and measure == "cuda_graph" and row.get("cuda_graph_error"):
            return "not captured"
        return "-"
    spread = row.get(f"{measure}_spread") if row else None
    text = f"{value * 1e3:.3f}"
    if spread is not None:
        text += f" ±{spread / 2:.0%}"
    ok_key = {
        "cuda_graph": "cuda_graph_matches_eager",
        "inductor_cudagraphs": "inductor_cudagraphs_matches_eager",
    }.get(measure, "matches_eager")
    if row.get(ok_key) is False:
        text += " (!)"
    return text


def _share_cell(value: dict[str, Any] | None) -> str:
    if value is None:
        return "-"
    if len(value["rounds"]) > 1:
        return f"{value['median']:.0%} ({value['min']:.0%}-{value['max']:.0%})"
    return f"{value['median']:.0%}"


def tables(rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The Markdown tables of an ablation run and the shares they quote:
    ``(markdown, {"shares": {measure: {baseline: {case: share}}},
    "medians": {measure: {baseline: median over cases}}})``."""
    keyed = {(r["model"], r["mode"], r["arm"]): r for r in rows}
    cases = list(dict.fromkeys((r["model"], r["mode"]) for r in rows))
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    present = [m for m in MEASURES if any(rounds_of(r, m) for r in rows)]
    lines: list[str] = []
    for measure in present:
        measured_arms = [
            a
            for a in arms
            if any(rounds_of(keyed.get((*c, a)), measure) for c in cases)
        ]
        lines += [
            f"### {MEASURE_TITLES[measure]}",
            "",
            "Milliseconds per step, median of the rounds ± half their spread; "
            "`(!)` marks a result that differs from eager.",
            "",
            "| model | mode | "
            + " | ".join(measured_arms)
            + " | "
            + " | ".join(f"{a} x" for a in measured_arms if a != "eager")
            + " |",
            "|---|---|"
            + "---|" * (2 * len(measured_arms) - ("eager" in measured_arms)),
        ]
        for model, mode in cases:
            get = {a: keyed.get((model, mode, a)) for a in arms}.get
            eager = value_of(get("eager"), measure)
            speedups = []
            for a in measured_arms:
                if a == "eager":
                    continue
                t = value_of(get(a), measure)
                speedups.append(f"{eager / t:.2f}" if eager and t else "-")
            lines.append(
                f"| {model} | {mode} | "
                + " | ".join(_cell(get(a), measure) for a in measured_arms)
                + " | "
                + " | ".join(speedups)
                + " |"
            )
        lines.append("")
    shares: dict[str, dict[str, dict[str, Any]]] = {}
    medians: dict[str, dict[str, float | None]] = {}
    share_measures = [m for m in present if m != "inductor_cudagraphs"]
    if {"fusion_only", "default"} <= set(arms):
        lines += [
            "### Fusion's share of Inductor's gain",
            "",
            "ln(t_base / t_fusion_only) / ln(t_base / t_default) per measure, "
            "the median with the range over rounds; `-` where the default is "
            "not faster than the baseline.",
            "",
            "| model | mode | "
            + " | ".join(f"{m} over {b}" for m in share_measures for b in BASELINES)
            + " |",
            "|---|---|" + "---|" * (len(share_measures) * len(BASELINES)),
        ]
        for model, mode in cases:
            get = {a: keyed.get((model, mode, a)) for a in arms}.get
            cells = []
            for m in share_measures:
                for b in BASELINES:
                    value = share_rounds(get(b), get("fusion_only"), get("default"), m)
                    shares.setdefault(m, {}).setdefault(b, {})[f"{model}/{mode}"] = (
                        value
                    )
                    cells.append(_share_cell(value))
            lines.append(f"| {model} | {mode} | " + " | ".join(cells) + " |")
        summary = []
        for m in share_measures:
            for b in BASELINES:
                found = [
                    v["median"] for v in shares.get(m, {}).get(b, {}).values() if v
                ]
                medians.setdefault(m, {})[b] = (
                    statistics.median(found) if found else None
                )
                if found:
                    summary.append(
                        f"- {m} over {b}: median {statistics.median(found):.0%} "
                        f"over {len(found)} cases (range {min(found):.0%} to "
                        f"{max(found):.0%})"
                    )
        lines += ["", *summary, ""]
    return "\n".join(lines), {"shares": shares, "medians": medians}


def write_report(json_path: Path) -> dict[str, Any]:
    """The Markdown tables (``.md``) and the speed-up plot (``.png``) next to
    ``json_path``; returns the shares."""
    rows = json.loads(Path(json_path).read_text())["rows"]
    if not rows:
        raise SystemExit(f"{json_path}: no rows (every case failed?)")
    markdown, found = tables(rows)
    md = Path(json_path).with_suffix(".md")
    md.write_text(markdown)
    print(markdown)
    _plot(rows, Path(json_path).with_suffix(".png"))
    return found


def _plot(rows: list[dict[str, Any]], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keyed = {(r["model"], r["mode"], r["arm"]): r for r in rows}
    cases = list(dict.fromkeys((r["model"], r["mode"]) for r in rows))
    arms = [a for a in dict.fromkeys(r["arm"] for r in rows) if a != "eager"]
    present = [m for m in MEASURES if any(rounds_of(r, m) for r in rows)]
    fig, axes = plt.subplots(
        len(present),
        1,
        figsize=(max(8, 0.9 * len(cases)), 3.6 * len(present)),
        squeeze=False,
    )
    width = 0.8 / max(1, len(arms))
    for ax, measure in zip(axes[:, 0], present):
        for i, arm in enumerate(arms):
            values, errors = [], []
            for model, mode in cases:
                eager = keyed.get((model, mode, "eager"))
                row = keyed.get((model, mode, arm))
                e, t = value_of(eager, measure), value_of(row, measure)
                values.append(e / t if e and t else 0)
                spread = (row or {}).get(f"{measure}_spread") or 0
                errors.append(values[-1] * spread / 2)
            ax.bar(
                [c + i * width for c in range(len(cases))],
                values,
                width,
                yerr=errors,
                label=arm,
                capsize=1.5,
            )
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([c + 0.4 - width / 2 for c in range(len(cases))])
        ax.set_xticklabels(
            [f"{m}\n{'train' if mode == 'training' else 'infer'}" for m, mode in cases],
            rotation=60,
            ha="right",
            fontsize=7,
        )
        ax.set_ylabel("speed-up over eager")
        ax.set_title(MEASURE_TITLES[measure], fontsize=9)
        ax.set_yscale("log")
        ax.legend(fontsize=7, ncol=len(arms))
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")
