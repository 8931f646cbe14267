"""Could any kernel of a sweep case's form close the case's shortfall (no GPU)?

The form-bound probe (``reductions_form_bound.py``, beside this file) times,
per shape, kernels that move a row the way each op's kernels do, with
nothing to compute or with the op's least arithmetic.  This module sets a
sweep's cases (``reductions.py`` JSONs) against those bounds: for each case,
eager, the default and the pass as fractions of the elementwise copy, the
bound of the form, and the pass's time over each bound.  It answers issue
39's second clause: where the pass misses a goal (85% of copy for a 16-bit
case; at or ahead of eager for every case), is the shortfall one that no
kernel of its form could close?

    python3 benchmarks/fusion/probes/reductions_form_bound.py \\
        --bounds form_bound.json [form_bound_float32.json] \\
        --explain sweep_a.json sweep_b.json [--all]

A case is set against the bounds of its element size (a 16-bit dtype's
bound serves the other 16-bit dtype: the same bytes move); cases of an
element size no bound file holds are left out.
"""

from __future__ import annotations

from typing import Any


# a goal of issue 39: the fraction of copy every 16-bit case should reach
GOAL = 0.85

# The forms of the kernels Inductor generates for each op and pass over a
# row (rows of the sweep's ops: no weights).  forward+backward runs the
# forward's kernel, then the backward's.
OP_FORMS = {
    ("softmax", "forward"): ("two_reads",),
    ("log_softmax", "forward"): ("two_reads",),
    ("layer_norm", "forward"): ("two_reads",),
    ("rms_norm", "forward"): ("two_reads",),
    ("cross_entropy", "forward"): ("one_read",),
    ("softmax", "forward+backward"): ("two_reads", "two_inputs_twice"),
    ("log_softmax", "forward+backward"): ("two_reads", "one_then_two"),
    ("layer_norm", "forward+backward"): ("two_reads", "two_inputs_twice"),
    ("rms_norm", "forward+backward"): ("two_reads", "two_inputs_twice"),
    ("cross_entropy", "forward+backward"): ("one_read", "read_write"),
}
# The same with the forward's least arithmetic: what a kernel that moves the
# data and computes no more than its op must reaches (an online softmax at
# one exp an element, two for a softmax's; a layer norm's Welford update; an
# RMS norm's squares).  The backward keeps its move-only form.
ARITHMETIC_FORMS = {
    ("softmax", "forward"): ("softmax",),
    ("log_softmax", "forward"): ("log_softmax",),
    ("cross_entropy", "forward"): ("logsumexp",),
    ("layer_norm", "forward"): ("layer_norm",),
    ("rms_norm", "forward"): ("rms_norm",),
    ("softmax", "forward+backward"): ("softmax", "two_inputs_twice"),
    ("log_softmax", "forward+backward"): ("log_softmax", "one_then_two"),
    ("cross_entropy", "forward+backward"): ("logsumexp", "read_write"),
    ("layer_norm", "forward+backward"): ("layer_norm", "two_inputs_twice"),
    ("rms_norm", "forward+backward"): ("rms_norm", "two_inputs_twice"),
}

ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}
# the sweep's arms set against the bound
ARMS = ("eager", "default", "one_pass")


def bounds_by_shape(
    bounds: list[dict[str, Any]],
) -> dict[tuple[int, int, int], dict[str, Any]]:
    """Bound files' cases by (rows, row, bytes an element): a 16-bit
    dtype's bound serves the other's cases (the same bytes move).  Where
    several files time a shape, each form's bound is its best in any of
    them, and the copy is the latest file's."""
    out: dict[tuple[int, int, int], dict[str, Any]] = {}
    for bound in bounds:
        for case in bound["cases"]:
            key = (case["rows"], case["row"], ITEMSIZE[case["dtype"]])
            merged = out.setdefault(key, {"forms": {}})
            merged.update({k: v for k, v in case.items() if k != "forms"})
            for name, form in case["forms"].items():
                best = form.get("best_us")
                held = merged["forms"].get(name, {}).get("best_us")
                if best is not None and (held is None or best < held):
                    merged["forms"][name] = {"best_us": best, "best": form.get("best")}
    return out


def bound_us(
    op: str, pass_: str, shape: dict[str, Any], table: dict[Any, Any] = OP_FORMS
) -> float | None:
    """The bound of an op's form at a shape: the sum of its kernels' forms'
    best times (``table``: ``OP_FORMS``, the forms moving data alone, or
    ``ARITHMETIC_FORMS``), or None where one was not measured or the op has
    no such form."""
    if (op, pass_) not in table:
        return None
    total = 0.0
    for name in table[(op, pass_)]:
        best = shape["forms"].get(name, {}).get("best_us")
        if best is None:
            return None
        total += best
    return total


def latest_cases(
    sweeps: list[dict[str, Any]], itemsizes: set[int]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The sweeps' cases of these element sizes by (row, rows, op, pass,
    dtype); a later sweep's arms replace an earlier one's of the same case,
    and arms it did not time stay."""
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for sweep in sweeps:
        for case in sweep["cases"]:
            if ITEMSIZE.get(case["dtype"]) in itemsizes:
                key = (
                    case["row"],
                    case["rows"],
                    case["op"],
                    case["pass"],
                    case["dtype"],
                )
                earlier = latest.get(key, {"arms": {}})
                latest[key] = {**case, "arms": {**earlier["arms"], **case["arms"]}}
    return latest


def explain(
    bounds: list[dict[str, Any]],
    sweeps: list[dict[str, Any]],
    everything: bool = False,
) -> tuple[str, dict[str, int]]:
    """A Markdown table of the sweeps' cases that miss a goal (a 16-bit
    case of the pass under ``GOAL`` of the elementwise copy, or any case of
    the pass slower than eager; with ``everything``, all): eager, the
    default, the pass, the bound of the form and the bound with the op's
    least arithmetic, as fractions of the copy, with the pass's time over
    each bound's.  Cases of element sizes no bound file holds are left out;
    one whose shape they lack has no bound cells.

    The counts summarize it: of the 16-bit cases, ``under_goal``, those
    whose bound of the form is under the goal too, and those within 10% of
    the nearer (slower) bound; of all, the pass ``behind_eager``, and in
    how many of those eager is faster than the nearer bound
    (``eager_beats_bound``: no kernel of the pass's form could catch it);
    ``no_bound``, cases listed without one."""
    shapes = bounds_by_shape(bounds)
    itemsizes = {size for _, _, size in shapes}
    latest = latest_cases(sweeps, itemsizes)
    if not latest:
        raise SystemExit(
            "error: the bound files hold no element size of the sweeps' cases"
        )
    lines = [
        "| op | rows x row | dtype | pass | eager | default | the pass | "
        "bound of the form | the pass over it | with the least arithmetic | "
        "the pass over it |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    counts = dict.fromkeys(
        (
            "cases",
            "under_goal",
            "bound_under_goal",
            "within_10pct",
            "behind_eager",
            "eager_beats_bound",
            "no_bound",
        ),
        0,
    )
    for key in sorted(latest):
        case = latest[key]
        size = ITEMSIZE[case["dtype"]]
        shape = shapes.get((case["rows"], case["row"], size), {"forms": {}})
        # without a bound at this shape, the copy of another shape of the
        # same element size (every bound file's copy moves 2^27 elements)
        copy_us = shape.get("copy_us") or next(
            s["copy_us"] for (_, _, z), s in shapes.items() if z == size
        )
        copy_bytes = shape.get("bytes") or next(
            s["bytes"] for (_, _, z), s in shapes.items() if z == size
        )
        copy_bw = 2 * copy_bytes / (copy_us["elementwise"] * 1e-6)

        def fraction(
            seconds: float | None,
            case: dict[str, Any] = case,
            copy_bw: float = copy_bw,
        ) -> float | None:
            return None if seconds is None else case["bytes"] / seconds / copy_bw

        arm_s = {arm: case["arms"].get(arm, {}).get("s") for arm in ARMS}
        form_us = bound_us(case["op"], case["pass"], shape)
        form_s = None if form_us is None else form_us * 1e-6
        arith_us = bound_us(case["op"], case["pass"], shape, ARITHMETIC_FORMS)
        arith_s = None if arith_us is None else arith_us * 1e-6
        nearer = max((t for t in (form_s, arith_s) if t), default=None)
        pass_s = arm_s["one_pass"]
        pass_fraction = fraction(pass_s)
        if size == 2:
            counts["cases"] += 1
        short = size == 2 and pass_fraction is not None and pass_fraction < GOAL
        behind = (
            pass_s is not None
            and arm_s["eager"] is not None
            and (pass_s > arm_s["eager"])
        )
        if not (short or behind or everything):
            continue
        if short:
            counts["under_goal"] += 1
            bound_fraction = fraction(form_s)
            if bound_fraction is not None and bound_fraction < GOAL:
                counts["bound_under_goal"] += 1
            if nearer and pass_s <= 1.10 * nearer:
                counts["within_10pct"] += 1
        if behind:
            counts["behind_eager"] += 1
            if nearer and arm_s["eager"] < nearer:
                counts["eager_beats_bound"] += 1
        if form_s is None and arith_s is None:
            counts["no_bound"] += 1

        def cell(value: float | None) -> str:
            return "-" if value is None else f"{value:.0%}"

        def over(bound_s: float | None, pass_s: float | None = pass_s) -> str:
            return f"{pass_s / bound_s:.2f}x" if bound_s and pass_s else "-"

        lines.append(
            f"| {case['op']} | {case['rows']} x {case['row']} | {case['dtype']} | "
            f"{case['pass']} | "
            + " | ".join(cell(fraction(arm_s[arm])) for arm in ARMS)
            + f" | {cell(fraction(form_s))} | {over(form_s)} | "
            f"{cell(fraction(arith_s))} | {over(arith_s)} |"
        )
    return "\n".join(lines), counts


def summary(counts: dict[str, int]) -> str:
    """The counts of :func:`explain` in a sentence or two (the 16-bit
    goal's only where 16-bit cases were set against a bound)."""
    behind = (
        f"The pass is behind eager in {counts['behind_eager']} cases; eager is "
        f"faster than the nearer bound of the pass's form in "
        f"{counts['eager_beats_bound']}; {counts['no_bound']} listed cases "
        "have no bound at their shape."
    )
    if not counts["cases"]:
        return behind
    return (
        f"{counts['under_goal']} of {counts['cases']} 16-bit cases of the pass "
        f"under {GOAL:.0%} of copy; the bound of the form is under it in "
        f"{counts['bound_under_goal']}; the pass is within 10% of the nearer "
        f"bound in {counts['within_10pct']}.\n" + behind
    )
