"""The remarks of the one-pass reductions pass (``one_pass_reductions``).

Why apart: the pass decides, this module says what it decided, in the
remark data model (``fusion_remarks.model``): ``fused`` with
``one_pass_row_on_chip`` or ``one_pass_row_split``, or ``missed`` with the
reason the row stays in several passes, with the decision's numbers as
``args`` and a sentence as ``detail``.  Nothing here runs while no recorder
listens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fusion_remarks import hooks as fusion_hooks, recorder as fusion_recorder
from .fusion_remarks.model import Remark
from .fusion_remarks.taxonomy import Kind, Reason, Stage


if TYPE_CHECKING:
    from .one_pass_reduction_decision import Decision
    from .scheduler import BaseSchedulerNode


def record(decision: Decision, nodes: list[BaseSchedulerNode]) -> None:
    """Record ``decision`` on the kernel of ``nodes`` as a remark of stage
    ``one_pass_reduction`` (nothing is built while no recorder listens)."""
    if not fusion_recorder.is_enabled():
        return
    names = tuple(n.get_name() for n in nodes)
    args = {
        "phases": decision.phases,
        "row": decision.row,
        "rows": decision.rows,
    }
    if decision.row_inputs > 1:
        args["row_inputs"] = decision.row_inputs
    inputs = (
        f" times {decision.row_inputs} row-long inputs"
        if decision.row_inputs > 1
        else ""
    )
    if decision.online:
        args["online_softmax"] = True
    plural = "es" if decision.phases > 1 else ""
    passes = f"{decision.phases} pass{plural}" + (
        " and online softmax rescaling" if decision.online else ""
    )
    if decision.memory_passes is not None and decision.memory_passes != decision.phases:
        args["memory_passes"] = decision.memory_passes
        passes += f" ({decision.memory_passes} reading the row from memory)"
    if decision.rsplit > 1:
        part = -(-decision.row // decision.rsplit)
        args.update(rsplit=decision.rsplit, multiprocessors=decision.limit)
        if decision.num_warps is not None:
            args["num_warps"] = decision.num_warps
            form = (
                f"each part held in the registers of a block of "
                f"{decision.num_warps} warps, so {passes} became one pass"
            )
        else:
            args.update(loop_block=decision.loop_block, loop_warps=decision.loop_warps)
            form = (
                f"each part walked by a block of {decision.loop_warps} warps in "
                f"steps of {decision.loop_block} elements{inputs}"
            )
        detail = (
            f"{decision.rows} rows of {decision.row} elements for "
            f"{decision.limit} multiprocessors: each row split over "
            f"{decision.rsplit} blocks of {part} elements in one kernel, their "
            f"partial results combined through a workspace (upstream's "
            f"cooperative reduction), where lowering would have split the "
            f"reduction into kernels; {form}"
        )
    elif decision.fused:
        args["num_warps"] = decision.num_warps
        detail = (
            f"{passes} over each row of {decision.row} elements{inputs} made "
            f"one plain pass: the row is held in the registers of one block "
            f"of {decision.num_warps} warps"
        )
    elif decision.reason == Reason.ONE_PASS_ROW_TOO_LONG:
        args["limit"] = decision.limit
        detail = (
            f"a row of {decision.row} elements{inputs} is more than one block "
            f"holds in registers ({decision.limit}): {passes} kept"
        )
        if decision.upstream_loop:
            args["upstream_loop"] = True
            detail += (
                f", in upstream's loop of {decision.loop_block} elements a "
                f"step, {decision.loop_warps} warps"
            )
        elif decision.upstream_scalar_loop:
            args["upstream_scalar_loop"] = True
            detail += (
                ", in upstream's own loop: it folds each step to per-row "
                "scalars (triton.scalar_accumulators) and is faster than the "
                "pass's loops where rows start on a 16-byte boundary"
            )
        elif decision.loop_block is not None:
            args["loop_block"] = decision.loop_block
            args["loop_warps"] = decision.loop_warps
            detail += (
                f", one row per block of {decision.loop_warps} warps in steps of "
                f"{decision.loop_block} elements so that re-reads come from L2"
            )
            if decision.one_wave:
                args["one_wave"] = True
                detail += (
                    f"; steps this narrow keep a thread's registers few enough "
                    f"for four such blocks a multiprocessor, so the "
                    f"{decision.rows} rows run in one wave (three, as in wider "
                    f"steps, would leave a thin second)"
                )
    elif decision.reason == Reason.ONE_PASS_TOO_FEW_ROWS:
        args["multiprocessors"] = decision.limit
        detail = (
            f"{decision.rows} rows for {decision.limit} multiprocessors: one "
            f"block per row would leave most idle; {passes} kept"
        )
    elif decision.reason == Reason.ONE_PASS_ROW_AT_COPY_SPEED:
        args["limit"] = decision.limit
        detail = (
            f"a row of {decision.row} elements of 4 bytes or more (at most "
            f"{decision.limit}): upstream's loop is at a copy's speed there "
            f"(config.one_pass_reductions_wide_rows_on_chip); {passes} kept"
        )
    elif decision.reason == Reason.ONE_PASS_ROW_READ_ONCE:
        args["num_warps_on_chip"] = decision.limit
        detail = (
            f"the kernel reads its row of {decision.row} elements{inputs} from "
            f"memory once; on chip it would take a block of {decision.limit} "
            f"warps, one a multiprocessor with no other block's loads to "
            f"overlap: {passes} kept in upstream's loop"
        )
    elif decision.reason == Reason.ONE_PASS_SCALAR_LOOP_FASTER:
        args["num_warps_on_chip"] = decision.limit
        args["upstream_scalar_loop"] = True
        detail = (
            f"at a row of {decision.row} elements upstream's loop folds each "
            "step to per-row scalars (triton.scalar_accumulators) and is as "
            f"fast as a block of {decision.limit} warps holding the row on "
            f"chip, or faster: {passes} kept"
        )
    elif decision.reason == Reason.ONE_PASS_SUMS_AT_COPY_SPEED:
        args["num_warps_on_chip"] = decision.limit
        detail = (
            f"every reduction is a sum: upstream's loop re-reads the row of "
            f"{decision.row} elements from L2 as fast as a block of "
            f"{decision.limit} warps would hold it on chip "
            f"(config.one_pass_reductions_sums_on_chip): {passes} kept"
        )
    elif decision.reason == Reason.ONE_PASS_LOOP_AT_COPY_SPEED:
        args["num_warps_on_chip"] = decision.limit
        detail = (
            f"the kernel reads its row of {decision.row} elements twice: at "
            f"rows this long upstream's loop re-reads it from L2 at a copy's "
            f"speed, faster than a block of {decision.limit} warps holding it "
            f"on chip: {passes} kept"
        )
    elif decision.reason == Reason.ONE_PASS_DYNAMIC_ROW:
        detail = f"the row length is not static: {passes} kept"
    else:
        detail = (
            "the reduced dim is not the contiguous innermost one, or the "
            f"kernel is tiled: {passes} kept"
        )
    if decision.fast_exp:
        args["exp"] = "approximate"
        detail += "; exp in its approximate form (16-bit inputs)"
    if decision.lean_combine:
        args["online_combine"] = "lean"
        detail += "; the online softmax's lean combine"
    if decision.aligned_vector:
        args["aligned_vector"] = decision.aligned_vector
        detail += (
            f"; its steps aligned to {decision.aligned_vector} elements (rows "
            "start off a 16-byte boundary): the row's head and tail masked, the "
            "loads and stores inside it in vectors"
        )
    if decision.element_accumulators:
        args["element_accumulators"] = True
        detail += (
            "; an accumulator per element of a step, not "
            "triton.scalar_accumulators' per-row scalars (faster with aligned "
            "steps)"
        )
    fusion_hooks.record_pass_remark(
        Remark(
            Kind.FUSED if decision.fused else Kind.MISSED,
            decision.reason,
            Stage.ONE_PASS_REDUCTION,
            nodes=names,
            ops=fusion_hooks.origin_names(nodes),
            args=args,
            detail=detail,
        )
    )
