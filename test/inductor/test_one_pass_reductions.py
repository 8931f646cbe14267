# Owner(s): ["module: inductor"]
"""The one-pass reduction pass (torch/_inductor/one_pass_reductions.py) in
real compiles.

On CUDA (skipped without a GPU): every reason code made to fire by a real
compile and gone under the counterfactual config, the generated kernel's
form, and results equal to eager.  On the CPU: the pass leaves C++ code
alone.  The bandwidth sweep's own tests are beside it, in the fork's
benchmarks (benchmarks/fusion/test/test_reductions_sweep.py).

What the pass reads off a kernel is tested in
test_one_pass_reductions_analysis.py, its decision in
test_one_pass_reductions_decision.py, the rules that keep upstream's loop in
real compiles in test_one_pass_reductions_kept_loops.py, its results over
OpInfo samples and drawn inputs in test_one_pass_reductions_correctness.py.
"""

import contextlib
import os
import re
import sys
import unittest

import torch
import torch.nn.functional as F
from torch._inductor import (
    config,
    one_pass_reduction_decision as rules,
)
from torch._inductor.fusion_remarks.taxonomy import Reason
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_cuda import TEST_CUDA


HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from one_pass_reductions_compile import compile_with_remarks  # noqa: E402


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


@unittest.skipIf(not TEST_CUDA, "needs a CUDA device")
class TestCuda(TestCase):
    def compile(self, fn, *args, dynamic=False, **patch):
        return compile_with_remarks(fn, *args, dynamic=dynamic, **patch)

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

        # Without aligned steps, 2.15.0's scalar accumulators keep upstream's
        # loop (test_one_pass_reductions_aligned.py): the pass's loops here
        # are those of a release without them.
        stack = contextlib.ExitStack()
        self.addCleanup(stack.close)
        if hasattr(config.triton, "scalar_accumulators"):
            stack.enter_context(config.patch({"triton.scalar_accumulators": False}))

        # A softmax (its row read twice): the wide loop at 4096, 32 warps
        # (16 with its aligned steps, a whole vector a thread:
        # test_one_pass_reductions_aligned.py).
        for aligned, warps in ((False, 32), (True, 16)):
            out, code, remarks = self.compile(
                softmax,
                x,
                one_pass_reductions=True,
                one_pass_reductions_aligned_loads=aligned,
            )
            self.assertEqual(out, softmax(x), atol=2e-3, rtol=2e-2)
            (remark,) = remarks
            self.assertEqual(remark["reason"], "one_pass_row_too_long")
            self.assertEqual(
                (remark["args"]["loop_block"], remark["args"]["loop_warps"]),
                (4096, warps),
            )
            self.assertIn(f"'R0_BLOCK': 4096, 'num_warps': {warps}", code)
        self.assertEqual(remark["args"]["exp"], "approximate")
        self.assertIn("tl_math.exp(", code)
        self.assertNotIn("libdevice.exp(", code)
        # Cross-entropy's logsumexp (read once): upstream's loop, fixed (the
        # warps of upstream's loop: without aligned steps).
        out, code, remarks = self.compile(
            cross_entropy,
            x,
            one_pass_reductions=True,
            one_pass_reductions_aligned_loads=False,
        )
        self.assertEqual(out, cross_entropy(x), atol=2e-2, rtol=2e-2)
        looped = [r for r in remarks if r["args"].get("upstream_loop")]
        self.assertEqual(len(looped), 1)
        self.assertEqual(looped[0]["args"]["exp"], "approximate")
        self.assertIn(f"'R0_BLOCK': {rules.UPSTREAM_LOOP_BLOCK}, 'num_warps': 16", code)
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
        # At 64 elements a thread the row of 65536 takes a block of 32 warps,
        # where an online softmax keeps the scalar loop of a release that has
        # one (one_pass_scalar_loop_faster, test_an_online_softmax_in_a_full_
        # block_keeps_the_scalar_loop): the counterfactual turns them off.
        without_scalars = (
            {"triton.scalar_accumulators": False}
            if hasattr(config.triton, "scalar_accumulators")
            else {}
        )
        cases = [
            (
                Reason.ONE_PASS_ROW_TOO_LONG,
                softmax_last,
                (512, 65536),
                {},
                {"one_pass_reductions_elements_per_thread": 64, **without_scalars},
            ),
            (Reason.ONE_PASS_TOO_FEW_ROWS, softmax_last, (8, 4096), {}, None),
            # float32 rows of 4096: upstream's loop is at copy speed (the
            # option holds them on chip; bfloat16 rows of 4096 on chip are
            # test_softmax_row_goes_on_chip_and_equals_eager).
            (
                Reason.ONE_PASS_ROW_AT_COPY_SPEED,
                softmax_last,
                (512, 4096),
                {},
                {"one_pass_reductions_wide_rows_on_chip": True},
            ),
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
        row of 4096 go on chip, the norms' saved statistics (one value per
        row) included, and equal eager; the kernels that only sum go on chip
        where ``one_pass_reductions_sums_on_chip`` asks for it (by default
        they keep upstream's loop: test_kernels_of_sums_keep_upstreams_loop),
        In float32 the same steps keep upstream's loops, which run at a
        copy's speed at that length: no remark and no fixed configuration.
        (At 8192 a layer norm's forward and, with the release's scalar
        accumulators, a softmax's keep upstream's loop:
        test_a_layer_norms_forward_goes_on_chip_only_up_to_4096,
        test_an_online_softmax_at_a_folded_row_keeps_the_scalar_loop.)"""
        x32 = torch.randn(2048, 4096, device="cuda", requires_grad=True)
        x = x32.detach().bfloat16().requires_grad_(True)
        g = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16)
        cases = (
            ("softmax", lambda t: torch.softmax(t, -1)),
            ("layer_norm", lambda t: F.layer_norm(t, (4096,))),
            ("rms_norm", lambda t: F.rms_norm(t, (4096,))),
        )
        for name, fn in cases:
            with self.subTest(op=name):

                def step(t, fn=fn):
                    out = fn(t)
                    (grad,) = torch.autograd.grad(out, t, g)
                    return out, grad

                expected = step(x)
                got, code, remarks = self.compile(
                    step,
                    x,
                    one_pass_reductions=True,
                    one_pass_reductions_sums_on_chip=True,
                )
                self.assertEqual(got, expected, atol=3e-2, rtol=3e-2)
                reasons = [r["reason"] for r in remarks]
                self.assertGreaterEqual(len(reasons), 2, reasons)
                self.assertEqual(set(reasons), {"one_pass_row_on_chip"})
                self.assertEqual(
                    len(re.findall(r"R0_BLOCK: tl.constexpr = 4096", code)),
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
                self.assertNotIn("R0_BLOCK: tl.constexpr = 4096", code)

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

    def test_a_backward_over_one_waves_rows_takes_narrower_steps(self):
        """A layer norm's backward (two sums over two row-long inputs) over
        four rows a multiprocessor less one, of 256000: steps of 2048 over
        16 warps, so that four blocks fit on each multiprocessor and every
        row runs in one wave (``one_wave``; in steps of 4096 it takes 40
        registers a thread on sm_90, and three blocks fit).  Counterfactual:
        three rows a multiprocessor run in one wave in steps of 4096 too,
        and keep them.  Both equal upstream's result."""
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        for rows, block in ((4 * sms - 4, 2048), (3 * sms, 4096)):
            with self.subTest(rows=rows):
                x = torch.randn(
                    rows, 256000, device="cuda", dtype=torch.bfloat16
                ).requires_grad_()
                g = torch.randn(rows, 256000, device="cuda", dtype=torch.bfloat16)

                def grad(t, g=g):
                    return torch.autograd.grad(F.layer_norm(t, (256000,)), t, g)[0]

                got, code, remarks = self.compile(grad, x, one_pass_reductions=True)
                ref, _, _ = self.compile(grad, x, one_pass_reductions=False)
                self.assertEqual(got, ref, atol=2e-2, rtol=2e-2)
                looped = [
                    r
                    for r in remarks
                    if r["args"].get("row_inputs", 1) >= 2
                    and r["args"].get("loop_block")
                ]
                self.assertEqual(len(looped), 1, str(remarks))
                self.assertEqual(looped[0]["args"]["loop_block"], block)
                self.assertEqual(
                    looped[0]["args"].get("one_wave", False), block == 2048
                )
                self.assertIn(f"'R0_BLOCK': {block}, 'num_warps': 16", code)
                del x, g, got, ref


if __name__ == "__main__":
    run_tests()
