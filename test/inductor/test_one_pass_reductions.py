# Owner(s): ["module: inductor"]
"""The one-pass reduction pass (torch/_inductor/one_pass_reductions.py).

On the CPU: the phases of real fused scheduler nodes (softmax, two-pass
softmax, layer norm, a plain sum), the pure decision, the warps per row, the
config check, that the pass leaves C++ code alone, and the lean online-softmax
combine against upstream's under Triton's interpreter.  On CUDA (skipped
without a GPU): every reason code made to fire by a real compile and gone
under the counterfactual config, the generated kernel's form, and results
equal to eager.  Bandwidth is measured by benchmarks/fusion/reductions.py,
not here.
"""

import contextlib
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._inductor import config, one_pass_reductions as opr
from torch._inductor.fusion_remarks.taxonomy import Reason
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code, sympy_product
from torch.testing._internal.common_cuda import TEST_CUDA


def _fused_nodes_of(fn, *args):
    """The scheduler nodes after fusion of ``fn`` compiled on the CPU."""
    seen = []

    def keep(nodes):
        seen.extend(nodes)
        return nodes

    torch._dynamo.reset()
    with config.patch(_post_fusion_custom_pass=keep, fx_graph_cache=False):
        torch.compile(fn)(*args)
    return seen


def _reduction_kernels(nodes):
    return [n for n in nodes if n.is_reduction()]


def _of_each_reduction_kernel(analysis, fn, *args):
    """``analysis(nodes, numel, row)`` of each reduction kernel of ``fn``
    compiled on the CPU, with the kernel's fused nodes, its elements (rows
    times row length) and its row length."""
    found = []

    def keep(nodes):
        for node in _reduction_kernels(nodes):
            # CPU groups are (sizes, reduction sizes).
            numel, rnumel = map(sympy_product, node.group[1])
            found.append(analysis(node.get_nodes(), numel * rnumel, rnumel))
        return nodes

    torch._dynamo.reset()
    with config.patch(_post_fusion_custom_pass=keep, fx_graph_cache=False):
        torch.compile(fn)(*args)
    return found


class TestPhases(TestCase):
    def phases_of(self, fn, *args):
        kernels = _reduction_kernels(_fused_nodes_of(fn, *args))
        self.assertEqual(len(kernels), 1, [k.get_name() for k in kernels])
        return opr.phases(kernels[0].get_nodes())

    def test_softmax_reads_a_row_three_times(self):
        # max, sum of exp, normalization; the online rewrite (max and sum in
        # one phase: 2, see TestCuda) applies to GPU graphs only.
        x = torch.randn(8, 64)
        self.assertEqual(self.phases_of(lambda t: torch.softmax(t, -1), x), 3)

    def test_layer_norm_reads_a_row_twice_by_welford(self):
        # Rows longer than use_two_step_variance_threshold (2.14.1) take
        # Welford's one-pass statistics; shorter ones two steps, mean first.
        x = torch.randn(8, 2048)
        self.assertEqual(
            self.phases_of(lambda t: torch.nn.functional.layer_norm(t, (2048,)), x), 2
        )
        short = torch.randn(8, 64)
        self.assertIn(
            self.phases_of(lambda t: torch.nn.functional.layer_norm(t, (64,)), short),
            (2, 3),
        )

    def test_a_sum_reads_a_row_once(self):
        x = torch.randn(8, 64)
        self.assertEqual(self.phases_of(lambda t: t.sin().sum(-1), x), 1)

    def test_memory_passes_count_only_phases_that_read_the_row(self):
        """Cross-entropy's backward sums its one-hot gradient from indices in
        a phase of its own, then reads the logits once: two phases, one pass
        over memory (on the H100 a wide loop made GPT-2's such kernel 13%
        slower, reductions_h100_ce_backward_one_read.md).  Softmax reads the
        row in each of its three phases."""
        row = 2048

        def passes_of(fn, *args):
            return _of_each_reduction_kernel(
                lambda nodes, numel, row: (
                    opr.phases(nodes),
                    opr.memory_passes(nodes, numel, row),
                ),
                fn,
                *args,
            )

        x = torch.randn(8, row)
        self.assertEqual(
            [p[:2] for p in passes_of(lambda t: torch.softmax(t, -1), x)], [(3, 3)]
        )
        logits = torch.randn(8, row, requires_grad=True)
        target = torch.randint(0, row, (8,))

        def loss_grad(t, y):
            return torch.autograd.grad(F.cross_entropy(t, y), t)[0]

        found = passes_of(loss_grad, logits, target)
        # The backward's kernel: two phases, the first without a row read.
        self.assertIn((2, 1), [p[:2] for p in found], found)

    def test_a_gather_from_another_buffer_is_seen_and_a_target_logit_is_not(self):
        """A softmax adding a bias looked up per element (T5's position
        bias) gathers from a table; a loss gathering its target logit from
        its own rows does not, nor does a plain softmax."""
        row = 64
        x, table = torch.randn(8, row), torch.randn(32)
        idx = torch.randint(0, 32, (row,))
        target = torch.randint(0, row, (8,))
        cases = (
            (
                "bias_lookup",
                lambda t, tb, i: torch.softmax(t + tb[i], -1),
                (x, table, idx),
                True,
            ),
            ("softmax", lambda t: torch.softmax(t, -1), (x,), False),
            (
                "nll",
                lambda t, y: F.cross_entropy(t, y, reduction="none"),
                (x, target),
                False,
            ),
        )
        for name, fn, args, expected in cases:
            with self.subTest(op=name):
                found = _of_each_reduction_kernel(opr._gathers, fn, *args)
                self.assertTrue(found)
                self.assertEqual(any(found), expected, found)

    def test_row_inputs_count_row_long_loads_not_row_values(self):
        """Softmax holds its input; RMS norm its input and weight; layer
        norm with weight and bias three; a loss gathering one target per row
        holds only the logits."""
        row = 64
        x, w, b = torch.randn(8, row), torch.randn(row), torch.randn(row)
        target = torch.randint(0, row, (8,))
        cases = (
            ("softmax", lambda t: torch.softmax(t, -1), (x,), 1),
            ("rms_norm", lambda t, w: F.rms_norm(t, (row,), w), (x, w), 2),
            ("layer_norm", lambda t, w, b: F.layer_norm(t, (row,), w, b), (x, w, b), 3),
            (
                "nll",
                lambda t, y: F.cross_entropy(t, y, reduction="none"),
                (x, target),
                1,
            ),
        )
        for name, fn, args, expected in cases:
            with self.subTest(op=name):
                counts = _of_each_reduction_kernel(opr._row_inputs, fn, *args)
                self.assertEqual(max(counts), expected)


class TestRowsContiguous(TestCase):
    def rows_contiguous(self, fn, *args):
        """``_rows_contiguous`` of the kernel with the longest rows."""
        found = _of_each_reduction_kernel(
            lambda nodes, numel, row: (
                int(row),
                opr._rows_contiguous(nodes, numel, int(row)),
            ),
            fn,
            *args,
        )
        return max(found)[1]

    def test_a_cross_entropy_backward_reads_rows_contiguously(self):
        """Its row sum has no load of its own (upstream's hint: DEFAULT);
        the logits it reads and the gradient it writes are rows."""
        x = torch.randn(64, 4000, requires_grad=True)
        y = torch.randint(0, 4000, (64,))

        def step(t):
            return torch.autograd.grad(F.cross_entropy(t, y), t)[0]

        self.assertTrue(self.rows_contiguous(step, x))

    def test_a_softmax_over_the_outer_dim_does_not(self):
        x = torch.randn(4000, 64)
        self.assertFalse(self.rows_contiguous(lambda t: torch.softmax(t, 0), x))


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
        return opr.decide(**kwargs)

    def test_one_phase_is_not_its_business(self):
        self.assertIsNone(self.decide(phases=1))
        # An online softmax is one pass over memory, rescaled at every element.
        self.assertTrue(self.decide(phases=1, online=True).fused)

    def test_row_long_inputs_share_the_registers(self):
        # A norm's backward holds the gradient, the input and the weight.
        self.assertEqual(self.decide(row=4096, row_inputs=3).num_warps, 16)
        self.assertTrue(self.decide(row=8192, row_inputs=4).fused)
        self.assertFalse(self.decide(row=8192, row_inputs=5).fused)

    def test_too_long_rows_are_looped_in_wide_steps_where_rows_fill_the_gpu(self):
        self.assertEqual(self.decide(row=65536).loop_block, 8192)
        self.assertEqual(self.decide(row=50257).loop_block, 4096)
        self.assertIsNone(self.decide(row=65536, rows=64).loop_block)
        self.assertIsNone(self.decide(row=4096).loop_block)
        self.assertEqual(
            [opr.loop_block_for_row(r) for r in (32768, 128256, 36000, 33000)],
            # 36000: a tail of 13.8% at 8192, 2.4% at 4096; 33000: over 5%
            # at both, the smaller block.
            [8192, 8192, 4096, 4096],
        )
        # An online softmax only at the widest block, where its tail is short.
        self.assertEqual(opr.loop_block_for_row(128256, online=True), 8192)
        self.assertIsNone(opr.loop_block_for_row(50257, online=True))
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
            (self.decide(row=131072, row_inputs=3).loop_block), opr.TWO_INPUT_LOOP_BLOCK
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

    def test_rows_of_four_byte_elements_at_copy_speed_keep_upstreams_loop(self):
        for row, element_bytes in ((4096, 4), (16384, 8)):
            kept = self.decide(row=row, element_bytes=element_bytes)
            self.assertEqual(kept.reason, Reason.ONE_PASS_ROW_AT_COPY_SPEED)
            self.assertFalse(kept.fused)
            self.assertIsNone(kept.loop_block)
            self.assertFalse(opr.uses_fast_exp(kept, element_bytes, True))
        # Counterfactuals: a longer row, two-byte elements, a kernel that
        # gathers per element (which upstream's loop repeats every pass).
        self.assertEqual(self.decide(row=32768, element_bytes=4).num_warps, 32)
        self.assertTrue(self.decide(row=4096, element_bytes=2).fused)
        self.assertTrue(self.decide(row=2048, element_bytes=4, gathers=True).fused)
        # A row too long for the block is decided as before.
        self.assertEqual(
            self.decide(row=65536, element_bytes=4).reason,
            Reason.ONE_PASS_ROW_TOO_LONG,
        )

    def test_a_row_read_once_goes_on_chip_below_a_full_block(self):
        # It saves no memory traffic: at 32 warps (alone on its SM) a
        # cross-entropy backward was 18% slower on chip, at 16 or fewer
        # 1.03-1.28x faster.
        self.assertEqual(self.decide(row=16384, memory_passes=1).num_warps, 16)
        kept = self.decide(row=32000, memory_passes=1)
        self.assertEqual(kept.reason, Reason.ONE_PASS_ROW_READ_ONCE)
        self.assertEqual((kept.fused, kept.loop_block, kept.limit), (False, None, 32))
        # Counterfactuals: a re-read to save, or an online softmax.
        self.assertEqual(self.decide(row=32000, memory_passes=2).num_warps, 32)
        self.assertTrue(self.decide(row=32000, memory_passes=1, online=True).fused)

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
            (4096, opr.MAX_WARPS, True, False),
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
            (opr.UPSTREAM_LOOP_BLOCK, opr.UPSTREAM_LOOP_WARPS, True, True),
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
        ]
        for overrides, reason in cases:
            with self.subTest(**{k: str(v) for k, v in overrides.items()}):
                decision = self.decide(**overrides)
                self.assertEqual(decision.reason, reason)
                self.assertEqual(decision.fused, reason == Reason.ONE_PASS_ROW_ON_CHIP)

    def test_the_longest_row_follows_elements_per_thread(self):
        self.assertTrue(self.decide(row=32768).fused)
        self.assertFalse(self.decide(row=32768, elements_per_thread=16).fused)
        self.assertTrue(self.decide(row=65536, elements_per_thread=64).fused)

    def test_warps_hold_the_row_at_elements_per_thread(self):
        self.assertEqual(
            [opr.warps_for_row(r, 32) for r in (2048, 4096, 8192, 16384, 32768)],
            [4, 4, 8, 16, 32],
        )
        self.assertEqual(opr.warps_for_row(50257, 32), opr.MAX_WARPS)
        self.assertEqual(self.decide(row=8192).num_warps, 8)

    def test_bad_elements_per_thread_is_named(self):
        for bad in (0, -3, 2.5, True):
            with config.patch(one_pass_reductions_elements_per_thread=bad):
                with self.assertRaisesRegex(
                    ValueError, "one_pass_reductions_elements_per_thread"
                ):
                    opr.check_config()


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
        with self.assertLogs(opr.log, level="WARNING") as logs:
            self.assertIs(
                opr.triton_kernel_kwargs(
                    Unreadable(), [{"x": 4096, "r0_": 4096}], kwargs
                ),
                kwargs,
            )
        self.assertIn("could not analyse", logs.output[0])
        with config.patch(one_pass_reductions_elements_per_thread=0):
            with self.assertRaisesRegex(
                ValueError, "one_pass_reductions_elements_per_thread"
            ):
                opr.triton_kernel_kwargs(Unreadable(), [], kwargs)


class TestCpu(TestCase):
    def test_cpu_code_is_unchanged(self):
        """The pass decides Triton kernels only: C++ code is the same with it on."""
        x = torch.randn(64, 2048)

        def fn(t):
            return torch.softmax(t, -1)

        codes = []
        for on in (False, True):
            torch._dynamo.reset()
            with config.patch(one_pass_reductions=on, fx_graph_cache=False):
                out, (code,) = run_and_get_code(torch.compile(fn), x)
            codes.append(code.split("\n", 1)[1])  # past the "# AOT ID" line
            self.assertEqual(out, fn(x))
        self.assertEqual(codes[0], codes[1])


class TestSweep(TestCase):
    """benchmarks/fusion/reductions.py: the bytes it counts and a real CPU case."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        sys.path.insert(
            0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "fusion")
        )
        import reductions

        cls.reductions = reductions

    def test_least_bytes_read_once_and_write_once(self):
        r = self.reductions
        self.assertEqual(r.least_bytes("softmax", 4, 8, 2, False), 2 * 4 * 8 * 2)
        self.assertEqual(r.least_bytes("rms_norm", 4, 8, 2, True), 5 * 4 * 8 * 2)
        # cross-entropy reads the logits and the targets, writes a scalar.
        self.assertEqual(r.least_bytes("cross_entropy", 4, 8, 2, False), 64 + 32)
        self.assertEqual(r.rows_for(4096, 1 << 20), 256)

    def test_a_real_case_on_the_cpu(self):
        case = self.reductions.run_case(
            "cpu",
            "log_softmax",
            256,
            16,
            "float32",
            True,
            ["eager", "default", "one_pass", "one_pass_two_pass"],
        )
        self.assertEqual(case["bytes"], 5 * 16 * 256 * 4)
        for arm in ("eager", "default", "one_pass", "one_pass_two_pass"):
            entry = case["arms"][arm]
            self.assertNotIn("error", entry)
            self.assertGreater(entry["s"], 0)
            self.assertAlmostEqual(
                entry["fraction_of_copy"],
                (case["bytes"] / entry["s"]) / (2 * 16 * 256 * 4 / case["copy_s"]),
            )
            self.assertLess(entry["max_abs_diff"], 1e-4)
        # The pass decides Triton kernels only: no remark on the CPU, and
        # the code of the forward and backward graphs is default's.
        # The online softmax rewrite is Triton's only, so on the CPU the
        # pass over the two-pass form has default's code too.
        for arm in ("one_pass", "one_pass_two_pass"):
            self.assertEqual(case["arms"][arm]["remarks"], [])
            self.assertTrue(case["arms"][arm]["same_code_as_default"])
        self.assertNotIn("code_sha", case["arms"]["eager"])
        table = self.reductions.markdown({"cases": [case]})
        self.assertIn("| log_softmax | 16x256 |", table)
        self.assertIn("(default's code)", table)

    def test_merge_keeps_the_latest_measurement_of_each_case(self):
        def case(op, row, s):
            return {
                "op": op,
                "rows": 8,
                "row": row,
                "dtype": "bfloat16",
                "pass": "forward",
                "arms": {"one_pass": {"s": s}},
            }

        merged = self.reductions.merge(
            [
                {"cases": [case("softmax", 4096, 1.0), case("rms_norm", 4096, 2.0)]},
                {"cases": [case("softmax", 4096, 3.0), case("softmax", 8192, 4.0)]},
            ]
        )
        self.assertEqual(
            [(c["op"], c["row"], c["arms"]["one_pass"]["s"]) for c in merged["cases"]],
            [("softmax", 4096, 3.0), ("rms_norm", 4096, 2.0), ("softmax", 8192, 4.0)],
        )

    def test_code_hash_ignores_the_numbering_of_graphs_only(self):
        sha = self.reductions.code_sha
        code = "# AOT ID: ['0_inference']\nimport torch\nkernel(XBLOCK=1)\n"
        renumbered = code.replace("0_inference", "3_inference")
        self.assertEqual(sha([code]), sha([renumbered]))
        self.assertNotEqual(sha([code]), sha([code.replace("XBLOCK=1", "XBLOCK=2")]))

    def test_model_kernel_changes_match_the_two_forms_of_a_kernel(self):
        import reductions_models

        def kernels(**us):
            return [{"name": n, "launches": 1, "s": t / 1e6} for n, t in us.items()]

        changes = reductions_models.kernel_changes(
            kernels(
                triton_red_fused__log_softmax_0=30.0,
                triton_poi_fused_add_1=5.0,
                triton_red_fused_sum_2=8.0,
            ),
            kernels(
                triton_per_fused__log_softmax_0=20.0,
                triton_poi_fused_add_1=5.0,
                triton_unk_fused_sum_2=9.0,
                triton_poi_fused_new_3=2.0,
            ),
        )
        self.assertEqual(
            [(c["name"], c["off_us"], c["on_us"]) for c in changes],
            [
                ("triton_*_fused__log_softmax_0", 30.0, 20.0),
                ("triton_poi_fused_new_3", None, 2.0),
                ("triton_*_fused_sum_2", 8.0, 9.0),
            ],
        )


@unittest.skipIf(not TEST_CUDA, "needs a CUDA device")
class TestCuda(TestCase):
    def compile(self, fn, *args, dynamic=False, **patch):
        from torch._inductor import fusion_report

        torch._dynamo.reset()
        with (
            config.patch({"fx_graph_cache": False, **patch}),
            fusion_report.capture() as rep,
        ):
            out, codes = run_and_get_code(
                torch.compile(fn, dynamic=dynamic or None), *args
            )
        remarks = [
            r
            for g in rep.to_json()["graphs"]
            for r in g["remarks"]
            if r["stage"] == "one_pass_reduction"
        ]
        return out, "\n".join(codes), remarks

    def test_softmax_row_goes_on_chip_and_equals_eager(self):
        x = torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16) * 8

        def fn(t):
            return torch.softmax(t, -1)

        out, code, remarks = self.compile(fn, x, one_pass_reductions=True)
        self.assertEqual(out, fn(x), atol=2e-3, rtol=2e-2)
        self.assertEqual([r["reason"] for r in remarks], ["one_pass_row_on_chip"])
        self.assertEqual(remarks[0]["kind"], "fused")
        self.assertEqual(remarks[0]["args"]["num_warps"], 4)
        self.assertEqual(remarks[0]["args"]["phases"], 2)
        self.assertIn("triton_heuristics.fixed_config", code)
        self.assertRegex(code, r"R0_BLOCK: tl.constexpr = 4096")
        # Counterfactual: the pass off, the row is looped over and no remark.
        out, code, remarks = self.compile(fn, x, one_pass_reductions=False)
        self.assertEqual(remarks, [])
        self.assertNotIn("triton_heuristics.fixed_config", code)
        self.assertIn("triton_heuristics.reduction", code)

    def test_16_bit_rows_on_chip_use_the_approximate_exp(self):
        x = torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16) * 8

        def fn(t):
            return torch.softmax(t, -1)

        def exps(code):
            # the body's exp, and the exp form the online-softmax helpers
            # are passed (their use_fast_math argument)
            helpers = re.findall(r"online_softmax_\w+\([^)]*?(True|False)", code)
            return "tl_math.exp(" in code, "libdevice.exp(" in code, set(helpers)

        out, code, remarks = self.compile(fn, x, one_pass_reductions=True)
        self.assertEqual(out, fn(x), atol=2e-3, rtol=2e-2)
        self.assertEqual(remarks[0]["args"]["exp"], "approximate")
        fast, accurate, helpers = exps(code)
        self.assertEqual((fast, accurate), (True, False))
        self.assertNotIn("False", helpers)  # on chip: max and sum, no helper
        # Counterfactuals: the option off, float32 rows (upstream's loop at
        # this length), the pass off: the accurate exp everywhere.
        for patch, t in (
            ({"one_pass_reductions_fast_exp": False}, x),
            ({}, x.float()),
            ({"one_pass_reductions": False}, x),
        ):
            with self.subTest(patch=patch, dtype=t.dtype):
                on = {"one_pass_reductions": True, **patch}
                out, code, remarks = self.compile(fn, t, **on)
                self.assertEqual(out, fn(t), atol=2e-3, rtol=2e-2)
                fast, accurate, helpers = exps(code)
                self.assertEqual((fast, accurate), (False, True))
                self.assertNotIn("True", helpers)
                self.assertTrue(all("exp" not in r["args"] for r in remarks))

    def test_online_softmaxes_too_long_for_upstream_get_the_fast_exp(self):
        x = torch.randn(264, 50257, device="cuda", dtype=torch.bfloat16) * 8
        target = torch.randint(0, 50257, (264,), device="cuda")

        def softmax(t):
            return torch.softmax(t, -1)

        def cross_entropy(t):
            return F.cross_entropy(t, target)

        def helpers_fast_math(code):
            # the use_fast_math argument the online-softmax helpers get
            return set(re.findall(r"online_softmax_\w+\([^)]*?(True|False)", code))

        # A softmax (its row read twice): the wide loop at 4096, 32 warps.
        out, code, remarks = self.compile(softmax, x, one_pass_reductions=True)
        self.assertEqual(out, softmax(x), atol=2e-3, rtol=2e-2)
        (remark,) = remarks
        self.assertEqual(remark["reason"], "one_pass_row_too_long")
        self.assertEqual(
            (remark["args"]["loop_block"], remark["args"]["loop_warps"]), (4096, 32)
        )
        self.assertEqual(remark["args"]["exp"], "approximate")
        self.assertIn("'R0_BLOCK': 4096, 'num_warps': 32", code)
        self.assertIn("tl_math.exp(", code)
        self.assertNotIn("libdevice.exp(", code)
        # Cross-entropy's logsumexp (read once): upstream's loop, fixed.
        out, code, remarks = self.compile(cross_entropy, x, one_pass_reductions=True)
        self.assertEqual(out, cross_entropy(x), atol=2e-2, rtol=2e-2)
        looped = [r for r in remarks if r["args"].get("upstream_loop")]
        self.assertEqual(len(looped), 1)
        self.assertEqual(looped[0]["args"]["exp"], "approximate")
        self.assertIn(f"'R0_BLOCK': {opr.UPSTREAM_LOOP_BLOCK}, 'num_warps': 16", code)
        self.assertEqual(helpers_fast_math(code), {"True"})
        # Counterfactual: the option off, upstream's kernels as they were.
        for fn in (softmax, cross_entropy):
            with self.subTest(fn=fn.__name__):
                out, code, remarks = self.compile(
                    fn, x, one_pass_reductions=True, one_pass_reductions_fast_exp=False
                )
                self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
                self.assertTrue(
                    all(
                        "upstream_loop" not in r["args"]
                        and "loop_block" not in r["args"]
                        for r in remarks
                    )
                )
                self.assertNotIn("triton_heuristics.fixed_config", code)
                self.assertEqual(helpers_fast_math(code), {"False"})

    def test_a_looped_online_softmax_combines_with_the_lean_helper(self):
        # In the wide loop (softmax, log-softmax at 131072) and in upstream's
        # loop when the row is read once (cross-entropy's forward).
        x = torch.randn(264, 131072, device="cuda", dtype=torch.bfloat16) * 8
        # Rows of special values: some -inf, all -inf, a +inf, a NaN.
        x[1, ::3] = float("-inf")
        x[2] = float("-inf")
        x[3, 7] = float("inf")
        x[4, 11] = float("nan")
        target = torch.randint(0, 131072, (264,), device="cuda")
        cases = {
            "softmax": lambda t: torch.softmax(t, -1),
            "log_softmax": lambda t: torch.log_softmax(t, -1),
            "cross_entropy": lambda t: F.cross_entropy(t, target, reduction="none"),
        }
        # 2.15.0's scalar accumulators combine once per block, leaving no
        # per-element combine to replace (test_scalar_accumulators_leave_...)
        scalar = "triton.scalar_accumulators"
        stack = contextlib.ExitStack()
        self.addCleanup(stack.close)
        if hasattr(config.triton, "scalar_accumulators"):
            stack.enter_context(config.patch({scalar: False}))
        for name, fn in cases.items():
            with self.subTest(op=name):
                out, code, remarks = self.compile(fn, x, one_pass_reductions=True)
                self.assertIn("triton_helpers.online_softmax_combine_lean(", code)
                combines = [r["args"].get("online_combine") for r in remarks]
                self.assertIn("lean", combines)
                # Counterfactuals: the option off, the pass off: upstream's helper.
                _, off_code, off_remarks = self.compile(
                    fn,
                    x,
                    one_pass_reductions=True,
                    one_pass_reductions_lean_combine=False,
                )
                self.assertIn("triton_helpers.online_softmax_combine(", off_code)
                self.assertNotIn("online_softmax_combine_lean", off_code)
                self.assertTrue(
                    all("online_combine" not in r["args"] for r in off_remarks)
                )
                ref, ref_code, _ = self.compile(fn, x, one_pass_reductions=False)
                self.assertIn("triton_helpers.online_softmax_combine(", ref_code)
                self.assertNotIn("online_softmax_combine_lean", ref_code)
                # Equal to upstream's kernel and to eager, NaN where they are.
                torch.testing.assert_close(
                    out, ref, atol=2e-2, rtol=2e-2, equal_nan=True
                )
                # and to eager where the rows are finite or partly -inf.
                rows = [1, *range(5, 264)]
                torch.testing.assert_close(
                    out[rows], fn(x)[rows], atol=2e-2, rtol=2e-2, equal_nan=True
                )

    @unittest.skipUnless(
        hasattr(config.triton, "scalar_accumulators"),
        "torch before 2.15.0 has no scalar accumulators",
    )
    def test_scalar_accumulators_leave_upstreams_block_combine(self):
        # With 2.15.0's default, a looped online softmax reduces each block to
        # per-row scalars before combining: the pass keeps upstream's helper
        # and its remark does not claim the lean one.
        x = torch.randn(264, 131072, device="cuda", dtype=torch.bfloat16)
        with config.patch({"triton.scalar_accumulators": True}):
            out, code, remarks = self.compile(
                lambda t: torch.softmax(t, -1), x, one_pass_reductions=True
            )
        self.assertIn("online_softmax_reduce_scalar_combine(", code)
        self.assertNotIn("online_softmax_combine_lean", code)
        self.assertTrue(all("online_combine" not in r["args"] for r in remarks))
        torch.testing.assert_close(out, torch.softmax(x, -1), atol=2e-2, rtol=2e-2)

    def test_each_missed_reason_and_its_counterfactual(self):
        def softmax_last(t):
            return torch.softmax(t, -1)

        on = {"one_pass_reductions": True}
        cases = [
            (
                Reason.ONE_PASS_ROW_TOO_LONG,
                softmax_last,
                (512, 65536),
                {},
                {"one_pass_reductions_elements_per_thread": 64},
            ),
            (Reason.ONE_PASS_TOO_FEW_ROWS, softmax_last, (8, 4096), {}, None),
            # float32 rows of 4096: upstream's loop is at copy speed (the
            # counterfactual, bfloat16 rows of 4096 on chip, is
            # test_softmax_row_goes_on_chip_and_equals_eager).
            (Reason.ONE_PASS_ROW_AT_COPY_SPEED, softmax_last, (512, 4096), {}, None),
        ]
        for reason, fn, shape, patch, fix in cases:
            with self.subTest(reason=reason.value):
                x = torch.randn(shape, device="cuda")
                out, _, remarks = self.compile(fn, x, **on, **patch)
                self.assertEqual(out, fn(x), atol=1e-5, rtol=1e-4)
                self.assertIn(reason.value, [r["reason"] for r in remarks])
                self.assertTrue(all(r["kind"] == "missed" for r in remarks))
                if fix is not None:
                    _, _, remarks = self.compile(fn, x, **on, **fix)
                    self.assertEqual(
                        [r["reason"] for r in remarks], ["one_pass_row_on_chip"]
                    )

    def test_dynamic_row_is_missed_and_dynamic_rows_are_not(self):
        def fn(t):
            return torch.log_softmax(t, -1)

        for dim, reason in ((1, "one_pass_dynamic_row"), (0, "one_pass_row_on_chip")):
            with self.subTest(dynamic_dim=dim):
                x = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)
                torch._dynamo.mark_dynamic(x, dim)
                out, _, remarks = self.compile(fn, x, one_pass_reductions=True)
                self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
                self.assertEqual([r["reason"] for r in remarks], [reason])

    def test_training_steps_go_on_chip_with_their_row_values(self):
        """Softmax, layer norm and RMS norm forward and backward at a bfloat16
        row of 8192 go on chip, the norms' saved statistics (one value per
        row) included, and equal eager.  In float32 the same steps keep
        upstream's loops, which run at a copy's speed at that length: no
        remark and no fixed configuration."""
        x32 = torch.randn(2048, 8192, device="cuda", requires_grad=True)
        x = x32.detach().bfloat16().requires_grad_(True)
        g = torch.randn(2048, 8192, device="cuda", dtype=torch.bfloat16)
        cases = (
            ("softmax", lambda t: torch.softmax(t, -1)),
            ("layer_norm", lambda t: F.layer_norm(t, (8192,))),
            ("rms_norm", lambda t: F.rms_norm(t, (8192,))),
        )
        for name, fn in cases:
            with self.subTest(op=name):

                def step(t, fn=fn):
                    out = fn(t)
                    (grad,) = torch.autograd.grad(out, t, g)
                    return out, grad

                expected = step(x)
                got, code, remarks = self.compile(step, x, one_pass_reductions=True)
                self.assertEqual(got, expected, atol=3e-2, rtol=3e-2)
                reasons = [r["reason"] for r in remarks]
                self.assertGreaterEqual(len(reasons), 2, reasons)
                self.assertEqual(set(reasons), {"one_pass_row_on_chip"})
                self.assertEqual(
                    len(re.findall(r"R0_BLOCK: tl.constexpr = 8192", code)),
                    len(reasons),
                )

                # Counterfactual: float32 elements keep upstream's loops.
                def step32(t, fn=fn):
                    out = fn(t)
                    (grad,) = torch.autograd.grad(out, t, g.float())
                    return out, grad

                got, code, remarks = self.compile(step32, x32, one_pass_reductions=True)
                self.assertEqual(got, step32(x32), atol=1e-4, rtol=1e-3)
                self.assertGreaterEqual(len(remarks), 1)
                self.assertEqual(
                    {(r["reason"], r["kind"]) for r in remarks},
                    {("one_pass_row_at_copy_speed", "missed")},
                )
                self.assertNotIn("triton_heuristics.fixed_config", code)
                # Counterfactual: off, every kernel loops over its row.
                _, code, remarks = self.compile(step, x, one_pass_reductions=False)
                self.assertEqual(remarks, [])
                self.assertNotIn("R0_BLOCK: tl.constexpr = 8192", code)

    def test_a_backward_reading_its_row_once_keeps_upstreams_loop(self):
        """A cross-entropy backward at 50257 sums its one-hot gradient from
        indices, then reads the logits once: no re-read for a wide loop to
        take from L2 (GPT-2's was 13% slower looped), so it keeps upstream's
        configuration.  Counterfactual: a softmax backward of the same shape
        from a saved output ``p``, ``p * (g - sum(g * p))``, reads its rows
        in both phases and is looped."""
        x = torch.randn(512, 50257, device="cuda", requires_grad=True)
        y = torch.randint(0, 50257, (512,), device="cuda")
        g = torch.randn(512, 50257, device="cuda")
        probs = torch.softmax(torch.randn(512, 50257, device="cuda"), -1)

        def loss_grad(t):
            return torch.autograd.grad(F.cross_entropy(t, y), t)[0]

        def softmax_grad(p):
            return p * (g - (g * p).sum(-1, keepdim=True))

        for fn, arg, passes, looped in (
            (loss_grad, x, 1, False),
            (softmax_grad, probs, 2, True),
        ):
            with self.subTest(fn=fn.__name__):
                got, code, remarks = self.compile(fn, arg, one_pass_reductions=True)
                self.assertEqual(got, fn(arg), atol=1e-5, rtol=1e-4)
                backward = [
                    r
                    for r in remarks
                    if r["reason"] == "one_pass_row_too_long"
                    and r["args"].get("memory_passes", r["args"]["phases"]) == passes
                    and not r["args"].get("online_softmax")
                ]
                self.assertEqual(len(backward), 1, str(remarks))
                self.assertEqual("loop_block" in backward[0]["args"], looped)
                # Two row-long inputs (g and p): 16 warps in steps of 4096.
                self.assertEqual("'R0_BLOCK': 4096, 'num_warps': 16" in code, looped)

    def test_a_backward_reading_its_row_once_needs_a_block_of_fewer_warps(self):
        """A cross-entropy backward reads its row once: at 16384 (16 warps)
        it goes on chip; at 32000 (32 warps, alone on its SM) it keeps
        upstream's loop (``one_pass_row_read_once``), while its forward's
        online logsumexp still goes on chip."""
        for row, on_chip in ((16384, True), (32000, False)):
            with self.subTest(row=row):
                x = torch.randn(
                    512, row, device="cuda", dtype=torch.bfloat16, requires_grad=True
                )
                y = torch.randint(0, row, (512,), device="cuda")

                def loss_grad(t, y=y):
                    return torch.autograd.grad(F.cross_entropy(t, y), t)[0]

                got, _, remarks = self.compile(loss_grad, x, one_pass_reductions=True)
                self.assertEqual(got, loss_grad(x), atol=1e-5, rtol=2e-2)
                one_read = [
                    r
                    for r in remarks
                    if r["args"].get("memory_passes") == 1
                    and not r["args"].get("online_softmax")
                ]
                self.assertEqual(len(one_read), 1, str(remarks))
                if on_chip:
                    self.assertEqual(one_read[0]["reason"], "one_pass_row_on_chip")
                    self.assertEqual(one_read[0]["args"]["num_warps"], 16)
                else:
                    self.assertEqual(one_read[0]["reason"], "one_pass_row_read_once")
                    self.assertEqual(one_read[0]["kind"], "missed")
                    self.assertEqual(one_read[0]["args"]["num_warps_on_chip"], 32)
                online = [r for r in remarks if r["args"].get("online_softmax")]
                self.assertEqual(
                    [r["reason"] for r in online], ["one_pass_row_on_chip"]
                )

    def test_row_inputs_make_a_norm_backward_too_long(self):
        """A layer norm backward at a row of 16384 holds the gradient, the
        input and the weight: 49152 elements, over one block's 32768.  The
        row alone fits one block, so it keeps upstream's loop (no wide
        steps) and equals eager.  With 64 elements per thread it goes on
        chip."""
        x = torch.randn(512, 16384, device="cuda", requires_grad=True)
        w = torch.randn(16384, device="cuda", requires_grad=True)
        g = torch.randn(512, 16384, device="cuda")

        def step(t, w):
            out = F.layer_norm(t, (16384,), w)
            return torch.autograd.grad(out, (t, w), g)

        expected = step(x, w)
        got, code, remarks = self.compile(step, x, w, one_pass_reductions=True)
        self.assertEqual(got, expected, atol=1e-3, rtol=1e-3)
        long = [r for r in remarks if r["reason"] == "one_pass_row_too_long"]
        self.assertEqual(len(long), 1, remarks)
        self.assertEqual(long[0]["args"]["row_inputs"], 3)
        self.assertNotIn("loop_block", long[0]["args"])
        self.assertNotIn("triton_heuristics.fixed_config", code)
        _, _, remarks = self.compile(
            step,
            x,
            w,
            one_pass_reductions=True,
            one_pass_reductions_elements_per_thread=64,
        )
        self.assertNotIn("one_pass_row_too_long", [r["reason"] for r in remarks])

    def test_cross_entropy_online_logsumexp_goes_on_chip(self):
        """Cross-entropy's forward is one online-softmax pass (max and sum
        rescaled at every element) with a target gathered per row: on chip
        it is a plain max and sum.  With online_softmax off it is two
        passes, and the remark no longer says online."""
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) * 8
        y = torch.randint(0, 4096, (4096,), device="cuda")

        def fn(t, y):
            return F.cross_entropy(t, y)

        for online in (True, False):
            with self.subTest(online_softmax=online):
                out, code, remarks = self.compile(
                    fn, x, y, one_pass_reductions=True, online_softmax=online
                )
                self.assertEqual(out.float(), fn(x.float(), y), atol=2e-2, rtol=1e-2)
                on_chip = [r for r in remarks if r["reason"] == "one_pass_row_on_chip"]
                self.assertEqual(len(on_chip), 1, remarks)
                self.assertEqual(
                    on_chip[0]["args"].get("online_softmax", False), online
                )
                self.assertNotIn("online_softmax_combine", code)


if __name__ == "__main__":
    run_tests()
