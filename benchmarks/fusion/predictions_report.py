"""The outputs of a predictions run (``predictions.py``): the Markdown table
of predicted against measured gain per checked boundary, with the
whole-model verdicts and the hotness join, and the scatter plot of the
calibration.  Pure functions of a results JSON, so that ``--plot`` writes
them again without a device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def fmt_us(s: Any) -> str:
    return "" if s is None else f"{s * 1e6:.1f}"


def markdown(result: dict[str, Any]) -> str:
    rho = result.get("spearman")
    lines = [
        "# Predicted against measured gain of missed fusions",
        "",
        f"Device: {result.get('device')}; torch {result.get('torch')}; fork "
        f"{result.get('fork')}; shapes {result.get('shapes')}; top {result.get('top')} "
        "predicted heuristic boundaries forced per case.",
        "",
        f"**Spearman's rho over {len(result['points'])} boundaries: "
        + ("n/a" if rho is None else f"{rho:.2f}")
        + "** (goal >= 0.7); outside the noise only: "
        + (
            "n/a"
            if result.get("spearman_outside_noise") is None
            else f"{result['spearman_outside_noise']:.2f}"
        )
        + f" over {sum(abs(p['measured_s']) > p['noise_s'] for p in result['points'])}; "
        "on the changed kernels only (local gain): "
        + (
            "n/a"
            if result.get("spearman_local") is None
            else f"{result['spearman_local']:.2f}"
        )
        + "."
        + "".join(
            f" {name}: "
            + ("n/a" if v["spearman"] is None else f"{v['spearman']:.2f}")
            + f" over {v['n']};"
            for name, v in (result.get("spearman_by_set") or {}).items()
        ),
        "",
        "Measured gain: stock minus forced GPU kernel time per step, CUDA graph "
        "replays, median of the per-round differences (noise: their "
        "interquartile range); local gain: the same on the kernels whose "
        "launches differ between the two compiles.",
        "",
        "## Whole-model verdicts",
        "",
    ]
    for case in result["cases"]:
        if case.get("verdict"):
            lines.append(f"- **{case['case']}**: {case['verdict']['line']}")
    lines += [
        "",
        "## Checked boundaries",
        "",
        "| case | boundary | reason | predicted us (bytes, launches) | measured us "
        "(noise) | local us | legal, correct | why apart |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by_key = {(p["case"], p.get("graph"), p["boundary"]): p for p in result["points"]}
    for case in result["cases"]:
        for c in case.get("checks", []):
            b = f"{c['producer']} -> {c['consumer']}"
            p = by_key.get((case["case"], c.get("graph"), b))
            t = c.get("timing") or {}
            pred = (
                f"{fmt_us(c.get('predicted_s'))} ({c.get('bytes_saved')}, "
                f"{c.get('launches_saved')})"
            )
            meas = (
                f"{fmt_us(t.get('gain_s'))} ({fmt_us(t.get('noise_s'))})"
                if t
                # a '|' (max |forced - eager|) would end the table cell
                else (c.get("detail") or "")[:80].replace("|", "\\|")
            )
            legal = (
                f"{'forced' if c.get('forced') else 'not forced'}, {c.get('correct')}"
            )
            lines.append(
                f"| {case['case']} | `{b}` | {c['reason']} | {pred} | {meas} "
                f"| {fmt_us(t.get('local_gain_s'))} | {legal} "
                f"| {p['why'] if p else ''} |"
            )
    lines += ["", "## Hotness: measured kernel time joined to the report", ""]
    lines.append("| case | kernel time us | joined to report kernels | hottest |")
    lines.append("|---|---|---|---|")
    for case in result["cases"]:
        h = case.get("hotness") or {}
        if h.get("total_s") is None:
            continue
        top = h["top"][0] if h.get("top") else {}
        lines.append(
            f"| {case['case']} | {fmt_us(h['total_s'])} | {h['joined_share']:.0%} | "
            f"`{top.get('name', '')[:60]}` {fmt_us(top.get('s'))} us |"
        )
    lines.append("")
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = result["points"]
    fig, ax = plt.subplots(figsize=(7, 5))
    models = sorted({p["case"] for p in points})
    cmap = plt.get_cmap("tab20")
    for i, case in enumerate(models):
        mine = [p for p in points if p["case"] == case]
        for resolved in (True, False):
            sel = [p for p in mine if (abs(p["measured_s"]) > p["noise_s"]) == resolved]
            if not sel:
                continue
            ax.scatter(
                [p["predicted_s"] * 1e6 for p in sel],
                [p["measured_s"] * 1e6 for p in sel],
                label=case if resolved else None,
                marker="s" if mine[0].get("set") == "calibration" else "o",
                color=cmap(i % 20),
                facecolors=None if resolved else "none",
                edgecolors=cmap(i % 20),
            )
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("predicted gain per step (us)")
    ax.set_ylabel("measured gain per step (us, GPU kernel time)")
    rho = result.get("spearman")
    ax.set_title(
        "Forced fusions: predicted vs measured"
        + ("" if rho is None else f" (Spearman {rho:.2f}, n={len(points)})")
        + "\nhollow: inside the noise between rounds; squares: calibration sweep",
        fontsize=9,
    )
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(result: dict[str, Any], json_path: Path) -> None:
    json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    json_path.with_suffix(".md").write_text(markdown(result))
    if result["points"]:
        plot(result, json_path.with_suffix(".png"))
