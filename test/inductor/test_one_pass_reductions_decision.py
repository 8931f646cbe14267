# Owner(s): ["module: inductor"]
"""The decision of the one-pass reduction pass
(torch/_inductor/one_pass_reductions.py) from the facts of a kernel, without
compiling: the reason of each outcome, the warps per row, the wide loop, the
approximate exp and the lean online-softmax combine, the config check and a
kernel the pass cannot analyse.  The lean combine itself is compared with
upstream's under Triton's interpreter.

The facts are given by hand here; test_one_pass_reductions_analysis.py
reads them off real kernels, and test_one_pass_reductions.py tests the pass
in real compiles.
"""

import importlib.util
import json
import math
import os
import subprocess
import sys
import unittest

from torch._inductor import (
    config,
    one_pass_reduction_aligned_loops as aligned_loops,
    one_pass_reduction_decision as rules,
    one_pass_reductions as opr,
)
from torch._inductor.fusion_remarks.taxonomy import Reason
from torch._inductor.test_case import run_tests, TestCase


class TestDecision(TestCase):
    def decide(self, **overrides):
        kwargs = {
            "phases": 2,
            "inner": True,
            "row": 4096,
            "rows": 32768,
            "multiprocessors": 132,
            "elements_per_thread": 32,
        }
        kwargs.update(overrides)
        return rules.decide(**kwargs)

    def test_one_phase_is_not_its_business(self):
        self.assertIsNone(self.decide(phases=1))
        # An online softmax is one pass over memory, rescaled at every element.
        self.assertTrue(self.decide(phases=1, online=True).fused)

    def test_row_long_inputs_share_the_registers(self):
        # A norm's backward holds the gradient, the input and the weight.
        self.assertEqual(self.decide(row=4096, row_inputs=3).num_warps, 16)
        # (three reads: two are saved on chip at any row)
        self.assertTrue(self.decide(row=8192, row_inputs=4, phases=3).fused)
        self.assertFalse(self.decide(row=8192, row_inputs=5).fused)

    def test_too_long_rows_are_looped_in_wide_steps_where_rows_fill_the_gpu(self):
        self.assertEqual(self.decide(row=65536).loop_block, 8192)
        self.assertEqual(self.decide(row=50257).loop_block, 4096)
        self.assertIsNone(self.decide(row=65536, rows=64).loop_block)
        self.assertIsNone(self.decide(row=4096).loop_block)
        self.assertEqual(
            [rules.loop_block_for_row(r) for r in (32768, 128256, 36000, 33000)],
            # 36000: a tail of 13.8% at 8192, 2.4% at 4096; 33000: over 5%
            # at both, the smaller block.
            [8192, 8192, 4096, 4096],
        )
        # An online softmax only at the widest block, where its tail is short.
        self.assertEqual(rules.loop_block_for_row(128256, online=True), 8192)
        self.assertIsNone(rules.loop_block_for_row(50257, online=True))
        self.assertIsNone(self.decide(row=50257, online=True).loop_block)
        # One pass (an online logsumexp) has no re-read to take from L2.
        self.assertIsNone(self.decide(row=131072, phases=1, online=True).loop_block)
        # Nor has a cross-entropy backward: two phases, one reading memory
        # (GPT-2's was 13% slower looped). On chip it still saves its
        # phase of one-hot sums.
        one_read = self.decide(row=50257, memory_passes=1)
        self.assertIsNone(one_read.loop_block)
        self.assertEqual(one_read.reason, Reason.ONE_PASS_ROW_TOO_LONG)
        self.assertEqual(self.decide(row=50257, memory_passes=2).loop_block, 4096)
        self.assertTrue(self.decide(row=4096, memory_passes=1).fused)

    def test_a_backward_walks_its_row_with_sixteen_warps(self):
        # Two row-long inputs (the gradient and the saved output): 4096
        # elements a step at 16 warps, where 32 warps fell off a cliff.
        looped = self.decide(row=50257, row_inputs=2)
        self.assertEqual((looped.loop_block, looped.loop_warps), (4096, 16))
        self.assertEqual(
            (self.decide(row=131072, row_inputs=3).loop_block),
            rules.TWO_INPUT_LOOP_BLOCK,
        )
        # Counterfactual: one row-long input keeps the 32-warp steps.
        one = self.decide(row=131072)
        self.assertEqual((one.loop_block, one.loop_warps), (8192, 32))
        # A row one block holds alone, too long only with its second input,
        # keeps upstream's loop.
        fits_alone = self.decide(row=32768, row_inputs=2)
        self.assertEqual(fits_alone.reason, Reason.ONE_PASS_ROW_TOO_LONG)
        self.assertIsNone(fits_alone.loop_block)
        self.assertEqual(self.decide(row=32769, row_inputs=2).loop_block, 4096)

    def test_a_backward_over_one_waves_rows_takes_narrower_steps(self):
        # 524 rows of 256000 on 132 multiprocessors: more than three blocks
        # of 16 warps each hold (a layer norm's backward in steps of 4096
        # takes 40 registers a thread), no more than four (32 registers, in
        # steps of 2048): one wave.
        for rows in (524, 397, 528):
            with self.subTest(rows=rows):
                narrow = self.decide(row=256000, rows=rows, row_inputs=2)
                self.assertEqual(
                    (narrow.loop_block, narrow.loop_warps),
                    (rules.ONE_WAVE_LOOP_BLOCK, rules.TWO_INPUT_LOOP_WARPS),
                )
                self.assertTrue(narrow.one_wave)
        # Counterfactuals: rows one wave holds at three blocks, rows more
        # than one wave holds at four, one row-long input.
        for rows, row_inputs in ((396, 2), (529, 2), (1046, 3), (524, 1)):
            with self.subTest(rows=rows, row_inputs=row_inputs):
                wide = self.decide(row=256000, rows=rows, row_inputs=row_inputs)
                self.assertFalse(wide.one_wave)
                self.assertGreaterEqual(wide.loop_block, rules.TWO_INPUT_LOOP_BLOCK)
        # An aligned loop (rows off a 16-byte boundary) takes its own steps.
        aligned = aligned_loops.two_input_loop(
            self.decide(row=50257, rows=524, row_inputs=2), [2, 2], aligned=True
        )
        self.assertEqual(aligned.loop_block, rules.ALIGNED_TWO_INPUT_LOOP_BLOCK)
        self.assertFalse(aligned.one_wave)

    def test_rows_of_four_byte_elements_at_copy_speed_keep_upstreams_loop(self):
        for row, element_bytes in ((4096, 4), (16384, 8), (32768, 4)):
            kept = self.decide(row=row, element_bytes=element_bytes)
            self.assertEqual(kept.reason, Reason.ONE_PASS_ROW_AT_COPY_SPEED)
            self.assertFalse(kept.fused)
            self.assertIsNone(kept.loop_block)
            self.assertFalse(opr.uses_fast_exp(kept, element_bytes, True))
        # Counterfactuals: two-byte elements, a kernel that gathers per
        # element (which upstream's loop repeats every pass), the option on.
        self.assertEqual(
            self.decide(row=32768, element_bytes=2, phases=3).num_warps, 32
        )
        self.assertEqual(
            self.decide(row=32768, element_bytes=4, gathers=True).num_warps, 32
        )
        self.assertTrue(self.decide(row=4096, element_bytes=2).fused)
        self.assertTrue(self.decide(row=2048, element_bytes=4, gathers=True).fused)
        # The option lifts this rule only: an online softmax at 32768 goes on
        # chip, a layer norm's forward there keeps upstream's loop by the
        # two-read rule.
        for row, online in ((2048, False), (4096, False), (32768, True)):
            on_chip = self.decide(
                row=row, element_bytes=4, online=online, wide_rows_on_chip=True
            )
            self.assertTrue(on_chip.fused)
            self.assertEqual(on_chip.num_warps, rules.warps_for_row(row, 32))
        self.assertEqual(
            self.decide(row=32768, element_bytes=4, wide_rows_on_chip=True).reason,
            Reason.ONE_PASS_LOOP_AT_COPY_SPEED,
        )
        # A row too long for the block is decided as before.
        self.assertEqual(
            self.decide(row=65536, element_bytes=4).reason,
            Reason.ONE_PASS_ROW_TOO_LONG,
        )

    def test_a_row_read_once_goes_on_chip_only_in_a_small_block(self):
        # It saves no memory traffic: in 16 or 32 warps (one block a
        # multiprocessor) a cross-entropy backward was slower on chip (H200,
        # 2.15.0: 202 against 167 us at 16 warps), in 8 faster (156 against
        # 176).
        self.assertEqual(self.decide(row=8192, memory_passes=1).num_warps, 8)
        for row, warps in ((16384, 16), (32000, 32)):
            kept = self.decide(row=row, memory_passes=1)
            self.assertEqual(kept.reason, Reason.ONE_PASS_ROW_READ_ONCE)
            self.assertEqual(
                (kept.fused, kept.loop_block, kept.limit), (False, None, warps)
            )
            # Counterfactuals: two re-reads to save, or an online softmax.
            self.assertEqual(
                self.decide(row=row, phases=3, memory_passes=3).num_warps, warps
            )
            self.assertTrue(self.decide(row=row, memory_passes=1, online=True).fused)

    def test_an_online_softmax_at_a_folded_row_keeps_the_releases_scalar_loop(
        self,
    ):
        # 2.15.0's scalar accumulators fold an online softmax's loop at rows
        # over 4096: there one that reads its row twice keeps upstream's
        # loop, whatever the warps; one read once, at 32 warps.
        for row, memory_passes in (
            (32768, None),
            (32000, 1),
            (16385, None),
            (8192, None),
            (8192, 2),
            (4097, None),
        ):
            kept = self.decide(
                row=row,
                rows=4096,
                online=True,
                memory_passes=memory_passes,
                scalar_accumulators=True,
            )
            self.assertEqual(kept.reason, Reason.ONE_PASS_SCALAR_LOOP_FASTER)
            self.assertEqual(
                (kept.fused, kept.loop_block, kept.limit),
                (False, None, rules.warps_for_row(row, 32)),
            )
            self.assertTrue(kept.upstream_scalar_loop)
        # Counterfactuals: no scalar accumulators; a row the release does
        # not fold; a row read once (cross-entropy's logsumexp) in fewer
        # than 32 warps; no online softmax (a kernel of three reads): on chip.
        for overrides in (
            {"row": 32768, "online": True},
            {
                "row": 16384,
                "online": True,
                "phases": 1,
                "memory_passes": 1,
                "scalar_accumulators": True,
            },
            {"row": 8192, "online": True, "phases": 1, "scalar_accumulators": True},
            {"row": 8192, "online": True},
            {"row": 4096, "online": True, "scalar_accumulators": True},
            {"row": 32768, "phases": 3, "scalar_accumulators": True},
        ):
            with self.subTest(**{k: str(v) for k, v in overrides.items()}):
                decision = self.decide(rows=4096, **overrides)
                self.assertEqual(decision.reason, Reason.ONE_PASS_ROW_ON_CHIP)
                self.assertTrue(decision.fused)

    def test_a_kernel_of_sums_reading_its_row_twice_keeps_upstreams_loop(self):
        # An RMS norm's forward, a norm's or softmax's backward: the second
        # read comes from L2 as fast as the row from registers (H100, 2.15.0,
        # 32768 x 4096 bfloat16: backward 261 us in the loop, 269 on chip).
        for row, row_inputs in ((2048, 2), (4096, 2), (8192, 1), (16384, 2)):
            kept = self.decide(
                row=row, row_inputs=row_inputs, memory_passes=2, sums_only=True
            )
            self.assertEqual(kept.reason, Reason.ONE_PASS_SUMS_AT_COPY_SPEED)
            self.assertEqual((kept.fused, kept.loop_block), (False, None))
            self.assertEqual(kept.limit, rules.warps_for_row(row * row_inputs, 32))
        # Counterfactuals: the option on; three reads (a two-step layer
        # norm); an online softmax; a gather per element; other reductions.
        for overrides in (
            {"memory_passes": 2, "sums_only": True, "sums_on_chip": True},
            {"memory_passes": 3, "phases": 3, "sums_only": True},
            {"memory_passes": 2, "sums_only": True, "online": True},
            {"memory_passes": 2, "sums_only": True, "gathers": True},
            {"memory_passes": 2},
        ):
            with self.subTest(**{k: str(v) for k, v in overrides.items()}):
                decision = self.decide(**overrides)
                self.assertEqual(decision.reason, Reason.ONE_PASS_ROW_ON_CHIP)
                self.assertTrue(decision.fused)
        # Rules before it keep their reasons: float32 rows at copy speed, rows
        # too long, too few rows.
        for overrides, reason in (
            ({"element_bytes": 4}, Reason.ONE_PASS_ROW_AT_COPY_SPEED),
            ({"row": 65536}, Reason.ONE_PASS_ROW_TOO_LONG),
            ({"rows": 64}, Reason.ONE_PASS_TOO_FEW_ROWS),
        ):
            with self.subTest(reason=reason.value):
                decision = self.decide(memory_passes=2, sums_only=True, **overrides)
                self.assertEqual(decision.reason, reason)

    def test_a_kernel_reading_its_row_twice_keeps_upstreams_loop_above_4096(self):
        # A layer norm's forward (a Welford reduction, then the scale): H200,
        # 2.15.0, bfloat16, upstream's loop 127 against 140 us on chip at
        # 16384 x 8192; at 4096 on chip was faster (H100, 188 against 200).
        for row in (8192, 16384, 32768):
            kept = self.decide(row=row, memory_passes=2)
            self.assertEqual(kept.reason, Reason.ONE_PASS_LOOP_AT_COPY_SPEED)
            self.assertEqual((kept.fused, kept.loop_block), (False, None))
            self.assertEqual(kept.limit, rules.warps_for_row(row, 32))
        # Counterfactuals: a row of 4096; three reads; an online softmax
        # (its own rules); a gather per element.
        for overrides in (
            {"row": 4096, "memory_passes": 2},
            {"row": 8192, "phases": 3, "memory_passes": 3},
            {"row": 8192, "memory_passes": 2, "online": True},
            {"row": 8192, "memory_passes": 2, "gathers": True},
        ):
            with self.subTest(**{k: str(v) for k, v in overrides.items()}):
                decision = self.decide(**overrides)
                self.assertEqual(decision.reason, Reason.ONE_PASS_ROW_ON_CHIP)
                self.assertTrue(decision.fused)

    def test_the_approximate_exp_only_where_16_bit_rows_are_taken(self):
        on_chip, looped = self.decide(), self.decide(row=65536)
        self.assertTrue(opr.uses_fast_exp(on_chip, 2, True))
        self.assertTrue(opr.uses_fast_exp(looped, 2, True))
        # Counterfactuals: float32 rows, the option off, a kernel the pass
        # leaves to upstream (too few rows).
        self.assertFalse(opr.uses_fast_exp(on_chip, 4, True))
        self.assertFalse(opr.uses_fast_exp(on_chip, 2, False))
        kept = self.decide(rows=64)
        self.assertEqual(kept.reason, Reason.ONE_PASS_TOO_FEW_ROWS)
        self.assertFalse(opr.uses_fast_exp(kept, 2, True))

    def test_an_online_softmax_left_to_upstream_is_taken_with_the_approximate_exp(
        self,
    ):
        def form(decision, element_bytes=2, allowed=True):
            return opr.with_exp_form(decision, element_bytes, allowed, 132)

        # A softmax at 50257 reads its row twice: the wide loop at 4096.
        kept = self.decide(row=50257, online=True)
        self.assertIsNone(kept.loop_block)
        taken = form(kept)
        self.assertEqual(
            (taken.loop_block, taken.loop_warps, taken.fast_exp, taken.upstream_loop),
            (4096, rules.MAX_WARPS, True, False),
        )
        # A logsumexp read once (cross-entropy's forward): upstream's loop.
        read_once = form(self.decide(row=131072, phases=1, online=True))
        self.assertEqual(
            (
                read_once.loop_block,
                read_once.loop_warps,
                read_once.fast_exp,
                read_once.upstream_loop,
            ),
            (rules.UPSTREAM_LOOP_BLOCK, rules.UPSTREAM_LOOP_WARPS, True, True),
        )
        # Counterfactuals: float32 rows, the option off, fewer rows than
        # multiprocessors (upstream splits the row), no online softmax (a
        # one-read backward), a second row-long input: upstream's kernel.
        for decision, element_bytes, allowed in (
            (kept, 4, True),
            (kept, 2, False),
            (self.decide(row=50257, rows=64, online=True), 2, True),
            (self.decide(row=50257, memory_passes=1), 2, True),
            (self.decide(row=32768, row_inputs=2, online=True), 2, True),
        ):
            with self.subTest(decision=decision, element_bytes=element_bytes):
                self.assertEqual(form(decision, element_bytes, allowed), decision)
        # Kernels already taken only get the exp.
        on_chip = form(self.decide())
        self.assertEqual((on_chip.fast_exp, on_chip.upstream_loop), (True, False))

    def test_a_looped_online_softmax_uses_the_lean_combine(self):
        kept = self.decide(row=50257, online=True)
        # A logsumexp read once (cross-entropy's forward) in upstream's loop,
        # a softmax in the wide loop.
        read_once = self.decide(row=50257, phases=1, online=True)
        upstream_loop = opr.with_exp_form(read_once, 2, True, 132)
        self.assertTrue(upstream_loop.upstream_loop)
        wide = self.decide(row=131072, online=True)
        self.assertEqual(wide.loop_block, 8192)
        scalar = {"triton.scalar_accumulators": False}
        with config.patch(
            scalar if hasattr(config.triton, "scalar_accumulators") else {}
        ):
            self.assertTrue(opr.uses_lean_combine(upstream_loop, True))
            self.assertTrue(opr.uses_lean_combine(wide, True))
        if hasattr(config.triton, "scalar_accumulators"):
            # 2.15.0's scalar accumulators combine once per block: no lean helper
            with config.patch({"triton.scalar_accumulators": True}):
                self.assertFalse(opr.uses_lean_combine(wide, True))
        # Counterfactuals: the option off, on chip (no loop, no combine), a
        # loop without an online softmax, a kernel left in upstream's own
        # configuration.
        self.assertFalse(opr.uses_lean_combine(wide, False))
        for decision in (
            self.decide(online=True),
            self.decide(row=65536),
            kept,
        ):
            with self.subTest(decision=decision):
                self.assertFalse(opr.uses_lean_combine(decision, True))

    def test_the_lean_combine_is_chosen_per_kernel_at_its_call_site(self):
        from torch._inductor.codegen.triton import FixedTritonConfig

        class Kernel:
            def __init__(self, fixed_config):
                self.fixed_config = fixed_config

        ours = opr._config_class()
        lean = Kernel(ours({"XBLOCK": 1, "R0_BLOCK": 2048}, lean_combine=True))
        with config.patch(one_pass_reductions=True):
            self.assertEqual(
                opr.online_softmax_combine_helper(lean), "online_softmax_combine_lean"
            )
            for kernel in (
                Kernel(ours({"XBLOCK": 1, "R0_BLOCK": 2048})),
                Kernel(FixedTritonConfig({"XBLOCK": 1})),
                Kernel(None),
            ):
                self.assertEqual(
                    opr.online_softmax_combine_helper(kernel), "online_softmax_combine"
                )
        with config.patch(one_pass_reductions=False):
            self.assertEqual(
                opr.online_softmax_combine_helper(lean), "online_softmax_combine"
            )
        # Both helpers exist in this release's triton_helpers.
        from torch._inductor.runtime import triton_helpers

        self.assertTrue(hasattr(triton_helpers, "online_softmax_combine_lean"))

    def test_a_kernel_given_the_approximate_exp_is_generated_under_fast_math(self):
        from torch._inductor.codegen.triton import FixedTritonConfig

        class Kernel:
            def __init__(self, fixed_config):
                self.fixed_config = fixed_config

        ours = opr._config_class()
        self.assertTrue(issubclass(ours, FixedTritonConfig))
        fast = Kernel(ours({"XBLOCK": 1, "num_warps": 32}, fast_exp=True))
        with config.patch(one_pass_reductions=True):
            with opr.codegen_config(fast):
                self.assertTrue(config.use_fast_math)
            self.assertFalse(config.use_fast_math)
            # Counterfactuals: the pass's config without it, upstream's
            # fixed config, no fixed config.
            for kernel in (
                Kernel(ours({"XBLOCK": 1}, fast_exp=False)),
                Kernel(FixedTritonConfig({"XBLOCK": 1})),
                Kernel(None),
            ):
                with opr.codegen_config(kernel):
                    self.assertFalse(config.use_fast_math)
        # The fixed config still reads as upstream's.
        self.assertEqual(fast.fixed_config["num_warps"], 32)
        self.assertIn("XBLOCK", fast.fixed_config)

    def test_each_reason(self):
        cases = [
            ({}, Reason.ONE_PASS_ROW_ON_CHIP),
            ({"inner": False}, Reason.ONE_PASS_ROWS_NOT_CONTIGUOUS),
            ({"row": None}, Reason.ONE_PASS_DYNAMIC_ROW),
            ({"rows": None}, Reason.ONE_PASS_DYNAMIC_ROW),
            ({"row": 32769}, Reason.ONE_PASS_ROW_TOO_LONG),
            ({"rows": 131}, Reason.ONE_PASS_TOO_FEW_ROWS),
            ({"row": 16384, "row_inputs": 3}, Reason.ONE_PASS_ROW_TOO_LONG),
            ({"phases": 1, "online": True}, Reason.ONE_PASS_ROW_ON_CHIP),
            ({"element_bytes": 4}, Reason.ONE_PASS_ROW_AT_COPY_SPEED),
            ({"row": 32000, "memory_passes": 1}, Reason.ONE_PASS_ROW_READ_ONCE),
            (
                {"row": 32768, "online": True, "scalar_accumulators": True},
                Reason.ONE_PASS_SCALAR_LOOP_FASTER,
            ),
            ({"sums_only": True}, Reason.ONE_PASS_SUMS_AT_COPY_SPEED),
            ({"row": 8192}, Reason.ONE_PASS_LOOP_AT_COPY_SPEED),
        ]
        for overrides, reason in cases:
            with self.subTest(**{k: str(v) for k, v in overrides.items()}):
                decision = self.decide(**overrides)
                self.assertEqual(decision.reason, reason)
                self.assertEqual(decision.fused, reason == Reason.ONE_PASS_ROW_ON_CHIP)

    def test_the_longest_row_follows_elements_per_thread(self):
        # a kernel of three reads, held on chip at any row that fits
        self.assertTrue(self.decide(row=32768, phases=3).fused)
        self.assertFalse(self.decide(row=32768, phases=3, elements_per_thread=16).fused)
        self.assertTrue(self.decide(row=65536, phases=3, elements_per_thread=64).fused)

    def test_warps_hold_the_row_at_elements_per_thread(self):
        self.assertEqual(
            [rules.warps_for_row(r, 32) for r in (2048, 4096, 8192, 16384, 32768)],
            [4, 4, 8, 16, 32],
        )
        self.assertEqual(rules.warps_for_row(50257, 32), rules.MAX_WARPS)
        self.assertEqual(self.decide(row=8192, phases=3).num_warps, 8)

    def test_bad_elements_per_thread_is_named(self):
        for bad in (0, -3, 2.5, True):
            with config.patch(one_pass_reductions_elements_per_thread=bad):
                with self.assertRaisesRegex(
                    ValueError, "one_pass_reductions_elements_per_thread"
                ):
                    opr.check_config()


class TestRobust(TestCase):
    def test_a_kernel_it_cannot_analyse_keeps_upstreams_kwargs(self):
        """A failure inside the pass's analysis never fails the compile:
        the hook returns the kwargs it was given and logs a warning; a bad
        config value is still an error that names it."""

        class Unreadable:
            numel = 4096
            reduction_numel = 4096

            def is_reduction(self):
                return True

            def scheduler_nodes(self):
                raise RuntimeError("no nodes")

        kwargs = {"pid_cache": {}}
        groups = [{"x": 4096, "r0_": 4096}]
        with (
            config.patch(one_pass_reductions=True),
            self.assertLogs(opr.log, level="WARNING") as logs,
        ):
            self.assertIs(
                opr.triton_kernel_kwargs(Unreadable(), groups, kwargs), kwargs
            )
        self.assertIn("could not analyse", logs.output[0])
        # with the pass off the hook does not look at the kernel at all
        with config.patch(one_pass_reductions=False), self.assertNoLogs(opr.log):
            self.assertIs(
                opr.triton_kernel_kwargs(Unreadable(), groups, kwargs), kwargs
            )
        with config.patch(
            one_pass_reductions=True, one_pass_reductions_elements_per_thread=0
        ):
            with self.assertRaisesRegex(
                ValueError, "one_pass_reductions_elements_per_thread"
            ):
                opr.triton_kernel_kwargs(Unreadable(), [], kwargs)


# Run under Triton's interpreter (TRITON_INTERPRET=1, read when triton_helpers'
# functions are decorated, so in a process of its own): upstream's and the lean
# combine of each pair of special values, one per lane.
_COMBINE_BOTH = """
import inspect, json, math
import torch, triton, triton.language as tl
from torch._inductor.runtime import triton_helpers as th

# 2.14 adds a strict_signed_zero argument to both helpers.
EXTRA = len(inspect.signature(th.online_softmax_combine.fn).parameters) == 5

@triton.jit
def both(lm, ls, r, m1, s1, m2, s2, N: tl.constexpr, EXTRA: tl.constexpr):
    i = tl.arange(0, N)
    a, b, c = tl.load(lm + i), tl.load(ls + i), tl.load(r + i)
    if EXTRA:
        x1, y1 = th.online_softmax_combine(a, b, c, FAST, False)
        x2, y2 = th.online_softmax_combine_lean(a, b, c, FAST, False)
    else:
        x1, y1 = th.online_softmax_combine(a, b, c, FAST)
        x2, y2 = th.online_softmax_combine_lean(a, b, c, FAST)
    tl.store(m1 + i, x1); tl.store(s1 + i, y1)
    tl.store(m2 + i, x2); tl.store(s2 + i, y2)

inf = math.inf
values = [-inf, -30.0, -3.0, 0.0, 2.5, 80.0, inf, math.nan]
pairs = [(a, b) for a in values for b in values]
n = 64
lhs_max = torch.tensor([a for a, _ in pairs])
lhs_sum = torch.tensor([0.0 if a == -inf else 1.5 for a, _ in pairs])
rhs = torch.tensor([b for _, b in pairs])
out = [torch.empty(n) for _ in range(4)]
both[(1,)](lhs_max, lhs_sum, rhs, *out, N=n, EXTRA=EXTRA)
print(json.dumps([pairs, [o.tolist() for o in out]]))
"""


@unittest.skipIf(importlib.util.find_spec("triton") is None, "needs triton")
class TestLeanCombine(TestCase):
    def combine_both(self, fast):
        env = {**os.environ, "TRITON_INTERPRET": "1"}
        code = _COMBINE_BOTH.replace("FAST", str(fast))
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True
        )
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        pairs, (max1, sum1, max2, sum2) = json.loads(run.stdout.splitlines()[-1])
        return pairs, max1, sum1, max2, sum2

    def test_the_lean_combine_equals_upstreams_but_on_rows_of_minus_inf(self):
        def same(a, b):
            return (math.isnan(a) and math.isnan(b)) or a == b

        # The approximate exp only: the interpreter has no libdevice; the
        # helpers differ in nothing else with the accurate one.
        pairs, max1, sum1, max2, sum2 = self.combine_both(fast=True)
        for j, (lhs, rhs) in enumerate(pairs):
            with self.subTest(lhs=lhs, rhs=rhs):
                self.assertTrue(same(max1[j], max2[j]), (max1[j], max2[j]))
                if lhs == rhs == -math.inf:
                    # Nothing finite yet: upstream counts, the lean sum
                    # stays 0; the final reduction makes both rows NaN
                    # (softmax) or -inf (logsumexp).
                    self.assertEqual((sum1[j], sum2[j]), (1.0, 0.0))
                else:
                    self.assertTrue(same(sum1[j], sum2[j]), (sum1[j], sum2[j]))


if __name__ == "__main__":
    run_tests()
