# Owner(s): ["module: inductor"]
"""Split rows in the one-pass pass (torch/_inductor/one_pass_reduction_split_rows.py,
``one_pass_reductions.splits_rows`` and the split decision).

On the CPU: how many blocks a row gets (the rule and its limits), the
decision and its counterfactuals, and a CPU compile that the option leaves
alone.  On CUDA (skipped without a GPU): a few long rows become one
cooperative kernel with a fixed ``RSPLIT`` (the rule fires: ``rsplit_id``
in the code, one kernel where upstream's split makes several, the
``one_pass_row_split`` remark); the option off, or rows for more than half
the multiprocessors, keep upstream's form (the counterfactuals); the results
equal upstream's and eager's over widths, row counts, dtypes, forward and
backward, and under CUDA graphs.  Speed is measured by
benchmarks/fusion/reductions.py (``--row-counts``), not here.
"""

import itertools
import re
import unittest

import sympy

import torch
from torch._inductor import (
    config,
    fusion_report,
    one_pass_reduction_decision as rules,
    one_pass_reductions as opr,
)
from torch._inductor.fusion_remarks.taxonomy import Reason
from torch._inductor.one_pass_reduction_split_rows import (
    keeps_row_whole,
    MIN_SPLIT_CHUNK,
    row_split,
)
from torch._inductor.runtime.hints import TRITON_MAX_RSPLIT
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_cuda import TEST_CUDA

from test_one_pass_reductions_aligned import ops as row_ops


H100_SMS = 132
LIMIT = rules.max_row_elements(32)


class TestRowSplit(TestCase):
    def test_one_block_per_multiprocessor_at_most(self):
        self.assertEqual(row_split(262144, 8, H100_SMS), 16)
        self.assertEqual(row_split(262144, 32, H100_SMS), 4)
        self.assertEqual(row_split(131072, 66, H100_SMS), 2)
        for row, rows, sms in itertools.product(
            (8192, 50257, 131072, 262144, 1 << 22), (1, 3, 8, 33, 66), (16, 108, 132)
        ):
            split = row_split(row, rows, sms)
            self.assertTrue(split == 1 or split * rows <= sms, (row, rows, sms))
            self.assertEqual(split & (split - 1), 0)  # a power of two

    def test_no_split_with_rows_for_half_the_multiprocessors(self):
        self.assertEqual(row_split(131072, 67, H100_SMS), 1)
        self.assertEqual(row_split(131072, 0, H100_SMS), 1)

    def test_each_block_gets_a_chunk_of_min_chunk_or_more(self):
        self.assertEqual(row_split(2 * MIN_SPLIT_CHUNK, 1, H100_SMS), 2)
        self.assertEqual(row_split(2 * MIN_SPLIT_CHUNK - 1, 1, H100_SMS), 1)
        self.assertEqual(row_split(50257, 1, H100_SMS), 8)  # 6283 elements each
        self.assertEqual(row_split(4096, 8, H100_SMS), 1)

    def test_at_most_upstreams_largest_rsplit(self):
        self.assertEqual(row_split(1 << 22, 1, H100_SMS), TRITON_MAX_RSPLIT)
        self.assertEqual(row_split(1 << 22, 1, 1024), TRITON_MAX_RSPLIT)

    def test_lowering_keeps_the_row_whole_where_a_part_fits_on_chip(self):
        self.assertTrue(keeps_row_whole(262144, 8, H100_SMS, LIMIT))
        self.assertTrue(keeps_row_whole(50257, 1, H100_SMS, LIMIT))
        # Counterfactuals: a part longer than a block holds; no split; rows
        # enough; a GPU of fewer multiprocessors gives fewer parts.
        self.assertFalse(keeps_row_whole(1 << 22, 1, H100_SMS, LIMIT))
        self.assertFalse(keeps_row_whole(4096, 8, H100_SMS, LIMIT))
        self.assertFalse(keeps_row_whole(262144, 67, H100_SMS, LIMIT))
        self.assertTrue(keeps_row_whole(262144, 8, 64, LIMIT))  # 8 parts of 32768
        self.assertFalse(keeps_row_whole(262144, 8, 32, LIMIT))  # 4 parts of 65536


class TestSplitDecision(TestCase):
    def decide(self, **kwargs):
        base = {
            "phases": 2,
            "inner": True,
            "row": 262144,
            "rows": 8,
            "multiprocessors": H100_SMS,
            "elements_per_thread": 32,
            "online": True,
        }
        return rules.decide(**{**base, **kwargs})

    def test_a_split_row_on_chip(self):
        got = self.decide(rsplit=16)
        self.assertEqual(got.reason, Reason.ONE_PASS_ROW_SPLIT)
        self.assertEqual((got.rsplit, got.num_warps, got.loop_block), (16, 16, None))
        self.assertTrue(got.fused)
        self.assertFalse(opr.uses_lean_combine(got, True))
        self.assertTrue(opr.uses_fast_exp(got, 2, True))

    def test_a_split_row_of_several_inputs_is_walked_in_steps(self):
        got = self.decide(rsplit=4, row_inputs=3, online=False)
        self.assertEqual(got.reason, Reason.ONE_PASS_ROW_SPLIT)
        self.assertIsNone(got.num_warps)
        self.assertEqual(
            (got.loop_block, got.loop_warps),
            (rules.TWO_INPUT_LOOP_BLOCK, rules.TWO_INPUT_LOOP_WARPS),
        )
        self.assertTrue(got.fused)
        self.assertFalse(opr.uses_lean_combine(got, True))

    def test_a_kernel_of_one_phase_is_split_too(self):
        # lowering left its row whole, so the kernel must split it
        got = self.decide(phases=1, online=False, rsplit=16)
        self.assertEqual(got.reason, Reason.ONE_PASS_ROW_SPLIT)
        self.assertIsNone(self.decide(phases=1, online=False))

    def test_counterfactuals_keep_the_other_reasons(self):
        self.assertEqual(self.decide().reason, Reason.ONE_PASS_ROW_TOO_LONG)
        self.assertEqual(self.decide(row=8192).reason, Reason.ONE_PASS_TOO_FEW_ROWS)
        self.assertEqual(
            self.decide(rsplit=16, inner=False).reason,
            Reason.ONE_PASS_ROWS_NOT_CONTIGUOUS,
        )
        self.assertEqual(
            self.decide(rsplit=16, row=None).reason, Reason.ONE_PASS_DYNAMIC_ROW
        )


class TestSplitsRowsHook(TestCase):
    """``InductorChoices.should_use_cooperative_reduction``'s hook: what it
    says without reading a GPU."""

    def test_off_without_the_options_or_off_cuda(self):
        cuda = torch.device("cuda")
        self.assertFalse(opr.splits_rows(cuda, 8, 262144))  # the pass is off
        with config.patch(one_pass_reductions=True):
            # split rows are off by default: measured no better (the docs)
            self.assertFalse(opr.splits_rows_enabled())
            self.assertFalse(opr.splits_rows(cuda, 8, 262144))
        with config.patch(
            one_pass_reductions=True, one_pass_reductions_split_rows=True
        ):
            self.assertTrue(opr.splits_rows_enabled())
            self.assertFalse(opr.splits_rows(torch.device("cpu"), 8, 262144))
            self.assertFalse(opr.splits_rows(cuda, sympy.Symbol("s0"), 262144))
            self.assertFalse(opr.splits_rows(cuda, 8, sympy.Symbol("s1")))
            with config.patch({"triton.multi_kernel": 1}):
                self.assertFalse(opr.splits_rows(cuda, 8, 262144))

    def test_a_cpu_compile_is_left_alone(self):
        # Triton's backend feature changes nothing on the CPU: same code.
        def fn(t):
            return torch.softmax(t, -1)

        x = torch.randn(4, 65536)
        codes = []
        for on in (False, True):
            torch._dynamo.reset()
            with config.patch(
                fx_graph_cache=False,
                one_pass_reductions=on,
                one_pass_reductions_split_rows=on,
            ):
                out, code = run_and_get_code(torch.compile(fn), x)
            self.assertEqual(out, fn(x))
            codes.append(re.sub(r"#.*", "", "\n".join(code)))
        self.assertEqual(codes[0], codes[1])


def ops(target: torch.Tensor, weight: torch.Tensor) -> dict:
    """The aligned steps' five row ops, and a plain sum (one phase: split
    too, as lowering left its row whole)."""
    return {**row_ops(target, weight), "sum": lambda t: t.float().sum(-1)}


def kernels(code: str) -> int:
    return len(re.findall(r"^def triton_", code, flags=re.M))


@unittest.skipIf(not TEST_CUDA, "needs a CUDA device")
class TestSplitRowsCuda(TestCase):
    def compile(self, fn, *args, mode=None, **patch):
        torch._dynamo.reset()
        with (
            config.patch(
                {
                    "fx_graph_cache": False,
                    "one_pass_reductions": True,
                    "one_pass_reductions_split_rows": True,
                    **patch,
                }
            ),
            fusion_report.capture() as rep,
        ):
            out, codes = run_and_get_code(torch.compile(fn, mode=mode), *args)
        remarks = [
            r
            for g in rep.to_json()["graphs"]
            for r in g["remarks"]
            if r["stage"] == "one_pass_reduction"
        ]
        return out, "\n".join(codes), remarks

    def inputs(self, rows: int, width: int, dtype: torch.dtype):
        x = (torch.randn(rows, width, device="cuda") * 4).to(dtype)
        target = torch.randint(0, width, (rows,), device="cuda")
        weight = (torch.rand(width, device="cuda") + 0.5).to(dtype)
        return x, target, weight

    def test_few_long_rows_are_split_in_one_kernel(self):
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        x, target, weight = self.inputs(8, 131072, torch.bfloat16)
        expected = row_split(131072, 8, sms)
        self.assertGreater(expected, 1)
        for name, fn in ops(target, weight).items():
            with self.subTest(op=name):
                out, code, remarks = self.compile(fn, x)
                ref = ops(target, weight.float())[name](x.float())
                torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)
                self.assertIn("rsplit_id = tl.program_id(0)", code)
                self.assertIn(f"'RSPLIT': {expected}", code)
                split = [r for r in remarks if r["reason"] == "one_pass_row_split"]
                self.assertTrue(split)
                self.assertEqual(split[0]["kind"], "fused")
                self.assertEqual(split[0]["args"]["rsplit"], expected)
                self.assertIn(f"split over {expected} blocks", split[0]["detail"])
                # Counterfactual: the option off: upstream's split at
                # lowering, more kernels, no RSPLIT and no such remark.
                out, off_code, off_remarks = self.compile(
                    fn, x, one_pass_reductions_split_rows=False
                )
                torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)
                self.assertNotIn("rsplit_id", off_code)
                self.assertGreater(kernels(off_code), kernels(code))
                self.assertFalse(
                    [r for r in off_remarks if r["reason"] == "one_pass_row_split"]
                )

    def test_rows_for_half_the_multiprocessors_are_not_split(self):
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        x, _, _ = self.inputs(sms // 2 + 1, 65536, torch.bfloat16)
        out, code, remarks = self.compile(torch.softmax, x, -1)
        self.assertEqual(out, torch.softmax(x, -1), atol=2e-3, rtol=2e-2)
        self.assertNotIn("rsplit_id", code)
        self.assertFalse([r for r in remarks if r["reason"] == "one_pass_row_split"])

    def test_widths_row_counts_and_dtypes_equal_eager(self):
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        dtypes = (torch.bfloat16, torch.float16, torch.float32)
        for width, rows, dtype in itertools.product(
            (50257, 262144), (1, 5, 32), dtypes
        ):
            x, target, weight = self.inputs(rows, width, dtype)
            for name in ("softmax", "layer_norm", "cross_entropy"):
                with self.subTest(width=width, rows=rows, dtype=dtype, op=name):
                    out, code, _ = self.compile(ops(target, weight)[name], x)
                    ref = ops(target, weight.float())[name](x.float())
                    tol = 1e-4 if dtype == torch.float32 else 2e-2
                    torch.testing.assert_close(out.float(), ref, atol=tol, rtol=tol)
                    # split where a part fits on chip (32 x 262144 has parts
                    # of 65536: upstream's split at lowering)
                    split = keeps_row_whole(width, rows, sms, LIMIT)
                    self.assertEqual("rsplit_id" in code, split)

    def test_forward_and_backward_equal_upstream_and_eager(self):
        rows, width = 8, 131072
        x0, target, weight = self.inputs(rows, width, torch.bfloat16)
        for name, fn in ops(target, weight).items():
            with self.subTest(op=name):
                x = x0.clone().requires_grad_()

                def step(t, fn=fn):
                    return fn(t).float().square().mean()

                def grads(x=x, step=step, **patch):
                    torch._dynamo.reset()
                    with config.patch(
                        {
                            "fx_graph_cache": False,
                            "one_pass_reductions": True,
                            "one_pass_reductions_split_rows": True,
                            **patch,
                        }
                    ):
                        out, codes = run_and_get_code(
                            lambda: torch.autograd.grad(torch.compile(step)(x), x)
                        )
                    return out[0].float(), "\n".join(codes)

                split, code = grads()
                self.assertIn("rsplit_id", code)
                upstream, _ = grads(one_pass_reductions=False)
                xf = x0.float().requires_grad_()
                (eager,) = torch.autograd.grad(
                    step(xf, ops(target, weight.float())[name]), xf
                )
                torch.testing.assert_close(split, upstream, atol=2e-3, rtol=5e-2)
                torch.testing.assert_close(split, eager, atol=2e-3, rtol=5e-2)

    def test_cuda_graph_replays_equal_eager(self):
        # a cooperative launch captured in a CUDA graph, replayed
        x, _, _ = self.inputs(4, 262144, torch.bfloat16)

        def fn(t):
            return torch.softmax(t, -1)

        _, code, _ = self.compile(fn, x, mode="reduce-overhead")
        self.assertIn("rsplit_id", code)
        with config.patch(
            one_pass_reductions=True, one_pass_reductions_split_rows=True
        ):
            compiled = torch.compile(fn, mode="reduce-overhead")
            for _ in range(3):
                y = x * 0.5 + 1
                torch.testing.assert_close(
                    compiled(y).float(), fn(y).float(), atol=2e-3, rtol=2e-2
                )


if __name__ == "__main__":
    run_tests()
