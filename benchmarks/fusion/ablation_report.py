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
given as the median with the range over rounds.  Undefined where the
default's gain over the baseline is within the noise: not above 1%, or not
above the spread between rounds of the baseline or the default.
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
# Leave-one-out arms (``ablation.LEAVE_ONE_OUT``): in their own table, not in
# the per-measure tables and the plot.
LEAVE_ONE_OUT = "default-"


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


def share(
    t_base: float, t_fusion_only: float, t_default: float, noise: float = 0.01
) -> float | None:
    """ln(t_base / t_fusion_only) / ln(t_base / t_default): 1 when fusion alone
    reaches the default's gain, 0 when it gains nothing; None when the
    default's gain (the log ratio) is not above ``noise``."""
    if min(t_base, t_fusion_only, t_default) <= 0:
        return None
    total = math.log(t_base / t_default)
    if total <= noise:
        return None
    return math.log(t_base / t_fusion_only) / total


def share_rounds(
    base: dict[str, Any] | None,
    fusion_only: dict[str, Any] | None,
    default: dict[str, Any] | None,
    measure: str,
) -> dict[str, Any] | None:
    """Fusion's share in each round (rounds paired by index: the arms of a
    round were timed back to back): ``{"median", "min", "max", "rounds"}``
    over the rounds.

    None where it is undefined: a row missing, or the default's gain over the
    baseline not above the noise, i.e. ln(t_base / t_default) of the medians
    at most 1% or at most the larger spread of the two arms (a gain inside
    the spread between rounds divides noise by noise).
    """
    series = [rounds_of(r, measure) for r in (base, fusion_only, default)]
    if not all(series):
        return None
    spreads = [(row or {}).get(f"{measure}_spread") or 0.0 for row in (base, default)]
    noise = max(0.01, *spreads)
    medians = [statistics.median(s) for s in series]
    if share(*medians, noise=noise) is None:
        return None
    per_round = [
        s
        for s in (share(*ts) for ts in zip(*series))
        if s is not None and math.isfinite(s)
    ]
    if not per_round:
        per_round = [share(*medians, noise=noise)]
    return {
        "median": statistics.median(per_round),
        "min": min(per_round),
        "max": max(per_round),
        "rounds": per_round,
    }


def ratio_rounds(
    a: dict[str, Any] | None, b: dict[str, Any] | None, measure: str
) -> dict[str, float] | None:
    """t_a / t_b: the ratio of the medians, with the range of the per-round
    ratios (rounds paired by index); None without both rows."""
    ra, rb = rounds_of(a, measure), rounds_of(b, measure)
    if not ra or not rb:
        return None
    per_round = [x / y for x, y in zip(ra, rb) if y > 0]
    mid = statistics.median(ra) / statistics.median(rb)
    return {
        "median": mid,
        "min": min(per_round, default=mid),
        "max": max(per_round, default=mid),
        "rounds": len(per_round),
    }


def ratio_cell(value: dict[str, float] | None) -> str:
    if value is None:
        return "-"
    if value["rounds"] > 1:
        return f"{value['median']:.2f} ({value['min']:.2f}-{value['max']:.2f})"
    return f"{value['median']:.2f}"


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
    arms = [
        a
        for a in dict.fromkeys(r["arm"] for r in rows)
        if not a.startswith(LEAVE_ONE_OUT)
    ]
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
            "the median over rounds with their range; `-` where the default's "
            "gain over the baseline is within the noise (at most 1% or at most "
            "the spread between rounds).",
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


def _recorded_case(
    runs: list[list[dict[str, Any]]], model: str, mode: str, arms: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    """The rows of ``arms`` for one case from the first recorded run that has
    them all (empty if none): figures of one run are never mixed with
    another's."""
    for rows in runs:
        found = {r["arm"]: r for r in rows if (r["model"], r["mode"]) == (model, mode)}
        if all(a in found for a in arms):
            return found
    return {}


def against_recorded(
    rows: list[dict[str, Any]], recorded: list[list[dict[str, Any]]]
) -> str:
    """Fusion's share per case, this run's measures beside a recorded run's
    wall-clock figure (each of ``recorded`` the rows of an earlier
    ``ablation.py`` JSON)."""
    new = {(r["model"], r["mode"], r["arm"]): r for r in rows}
    cases = list(
        dict.fromkeys((r["model"], r["mode"]) for run in recorded for r in run)
    )
    cases = [c for c in cases if (*c, "default") in new]
    measures = [
        m
        for m in ("gpu_kernel", "cuda_graph", "wall")
        if any(rounds_of(r, m) for r in rows)
    ]
    lines = [
        "### Fusion's share against the recorded run",
        "",
        "The recorded figure is one wall-clock median per arm, arms timed one "
        "after another; this run's are medians over interleaved rounds with "
        "their range.",
        "",
        "| model | mode | baseline | recorded (wall) | "
        + " | ".join(f"now: {m}" for m in measures)
        + " |",
        "|---|---|---|---|" + "---|" * len(measures),
    ]
    for model, mode in cases:
        for base in BASELINES:
            arms = (base, "fusion_only", "default")
            get_old = _recorded_case(recorded, model, mode, arms)
            get_new = {a: new.get((model, mode, a)) for a in arms}
            recorded_share = share_rounds(
                get_old.get(base),
                get_old.get("fusion_only"),
                get_old.get("default"),
                "wall",
            )
            cells = [
                _share_cell(
                    share_rounds(
                        get_new[base], get_new["fusion_only"], get_new["default"], m
                    )
                )
                for m in measures
            ]
            lines.append(
                f"| {model} | {mode} | {base} | {_share_cell(recorded_share)} | "
                + " | ".join(cells)
                + " |"
            )
    return "\n".join(lines) + "\n"


def fx_against_fusion_only(
    rows: list[dict[str, Any]], recorded: list[list[dict[str, Any]]] = ()
) -> str:
    """The FX arm against Inductor fusion-only per case: GPU kernel time,
    CUDA-graph step and wall-clock ratios (FX / fusion_only), launches, and
    the share of the wall-clock gap that is host time (the part the GPU
    kernel time does not explain); a recorded run's wall-clock ratio beside."""
    new = {(r["model"], r["mode"], r["arm"]): r for r in rows}
    cases = [
        c
        for c in dict.fromkeys((r["model"], r["mode"]) for r in rows)
        if (*c, "fx_fusion") in new and (*c, "fusion_only") in new
    ]
    lines = [
        "### The FX arm against Inductor fusion-only",
        "",
        "Ratios FX / fusion_only (above 1: the FX arm is slower), median of the "
        "rounds with the range of the per-round ratios; host share: of the "
        "wall-clock gap (t_fx - t_fusion_only), the part the GPU kernel time "
        "does not explain.",
        "",
        "| model | mode | GPU kernel | CUDA graph | wall (now) | wall (recorded) "
        "| launches fusion_only / FX | host share of the wall gap |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def ratio(fx, fo, measure):
        return ratio_cell(ratio_rounds(fx, fo, measure))

    for model, mode in cases:
        fx, fo = new[(model, mode, "fx_fusion")], new[(model, mode, "fusion_only")]
        old = _recorded_case(recorded, model, mode, ("fx_fusion", "fusion_only"))
        old_fx, old_fo = old.get("fx_fusion"), old.get("fusion_only")
        host = "-"
        wall_fx, wall_fo = value_of(fx, "wall"), value_of(fo, "wall")
        gpu_fx, gpu_fo = value_of(fx, "gpu_kernel"), value_of(fo, "gpu_kernel")
        if None not in (wall_fx, wall_fo, gpu_fx, gpu_fo) and wall_fx > wall_fo:
            host = f"{1 - (gpu_fx - gpu_fo) / (wall_fx - wall_fo):.0%}"
        launches = "/".join(
            f"{r['launches_per_step']:.0f}" if r.get("launches_per_step") else "-"
            for r in (fo, fx)
        )
        lines.append(
            f"| {model} | {mode} | {ratio(fx, fo, 'gpu_kernel')} | "
            f"{ratio(fx, fo, 'cuda_graph')} | {ratio(fx, fo, 'wall')} | "
            f"{ratio(old_fx, old_fo, 'wall') if old_fx and old_fo else '-'} | "
            f"{launches} | {host} |"
        )
    return "\n".join(lines) + "\n"


def leave_one_out(rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Which held-off optimization makes the gap between fusion_only and
    default: per case, t(default-OPTION) / t(default) for every option left
    out, on the first measure the run has of GPU kernel time, CUDA graph and
    wall-clock.  A ratio above 1 is time the option saves; below 1, time it
    costs.  It counts where it is outside the noise (1%, or the larger spread
    of the two arms).  ``explained``: the sum of the counted log ratios over
    ln(t_fusion_only / t_default).

    Returns the Markdown section and ``{case: {"measure", "gap", "options":
    {option: ratio}, "explained"}}``.
    """
    keyed = {(r["model"], r["mode"], r["arm"]): r for r in rows}
    cases = [
        c
        for c in dict.fromkeys((r["model"], r["mode"]) for r in rows)
        if (*c, "default") in keyed
        and any(a.startswith(LEAVE_ONE_OUT) for (m, md, a) in keyed if (m, md) == c)
    ]
    found: dict[str, Any] = {}
    if not cases:
        return "", found
    lines = [
        "### Leave one out: which held-off optimization makes the gap",
        "",
        "t(default with OPTION as fusion_only holds it) / t(default), the median "
        "with the range of the per-round ratios: above 1 the "
        "option saves time, below 1 it costs time; only ratios outside the noise "
        "(1%, or the larger spread of the two arms) are listed. Explained: their "
        "summed log ratios over ln(t_fusion_only / t_default).",
        "",
        "| model | mode | measure | fusion_only / default | saves time | costs time | explained |",
        "|---|---|---|---|---|---|---|",
    ]
    for model, mode in cases:
        default = keyed[(model, mode, "default")]
        measure = next(
            (m for m in ("gpu_kernel", "cuda_graph", "wall") if rounds_of(default, m)),
            None,
        )
        if measure is None:
            continue
        t_default = value_of(default, measure)
        fusion_only = keyed.get((model, mode, "fusion_only"))
        t_fo = value_of(fusion_only, measure)
        gap = t_fo / t_default if t_fo and t_default else None
        gap_cell = ratio_cell(ratio_rounds(fusion_only, default, measure))
        ratios: dict[str, float] = {}
        cells: dict[str, str] = {}
        counted: dict[str, float] = {}
        for (m, md, arm), row in keyed.items():
            if (m, md) != (model, mode) or not arm.startswith(LEAVE_ONE_OUT):
                continue
            value = ratio_rounds(row, default, measure)
            if value is None:
                continue
            option = arm[len(LEAVE_ONE_OUT) :]
            ratios[option] = value["median"]
            cells[option] = ratio_cell(value)
            noise = max(
                0.01,
                row.get(f"{measure}_spread") or 0.0,
                default.get(f"{measure}_spread") or 0.0,
            )
            if abs(math.log(ratios[option])) > noise:
                counted[option] = ratios[option]
        explained = (
            sum(math.log(r) for r in counted.values()) / math.log(gap)
            if gap and abs(math.log(gap)) > 0.01
            else None
        )
        saves = sorted((r, o) for o, r in counted.items() if r > 1)[::-1]
        costs = sorted((r, o) for o, r in counted.items() if r < 1)
        found[f"{model}/{mode}"] = {
            "measure": measure,
            "gap": gap,
            "options": ratios,
            "counted": counted,
            "explained": explained,
        }
        lines.append(
            f"| {model} | {mode} | {measure} | {gap_cell} | "
            + (", ".join(f"`{o}` {cells[o]}" for _, o in saves) or "none")
            + " | "
            + (", ".join(f"`{o}` {cells[o]}" for _, o in costs) or "none")
            + " | "
            + (f"{explained:.0%}" if explained is not None else "-")
            + " |"
        )
    return "\n".join(lines) + "\n", found


def write_report(json_path: Path, recorded: list[Path] = ()) -> dict[str, Any]:
    """The Markdown tables (``.md``) and the speed-up plot (``.png``) next to
    ``json_path``, with the comparison against ``recorded`` runs' JSON (their
    rows merged); returns the shares."""
    rows = json.loads(Path(json_path).read_text())["rows"]
    if not rows:
        raise SystemExit(f"{json_path}: no rows (every case failed?)")
    markdown, found = tables(rows)
    old_runs = [json.loads(Path(p).read_text())["rows"] for p in recorded]
    if old_runs:
        markdown += "\n" + against_recorded(rows, old_runs)
    if any(r["arm"] == "fx_fusion" for r in rows):
        markdown += "\n" + fx_against_fusion_only(rows, old_runs)
    loo_markdown, found["leave_one_out"] = leave_one_out(rows)
    if loo_markdown:
        markdown += "\n" + loo_markdown
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
    arms = [
        a
        for a in dict.fromkeys(r["arm"] for r in rows)
        if a != "eager" and not a.startswith(LEAVE_ONE_OUT)
    ]
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
