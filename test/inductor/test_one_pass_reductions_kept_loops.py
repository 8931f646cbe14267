# Owner(s): ["module: inductor"]
"""The rules that keep upstream's loop for a kernel the one-pass reduction
pass could take (torch/_inductor/one_pass_reduction_decision.py), in real
compiles on CUDA (skipped without a GPU): kernels that only sum
(``one_pass_sums_at_copy_speed``), a layer norm's forward above rows of
4096 (``one_pass_loop_at_copy_speed``), a backward that reads its row once
(``one_pass_row_read_once``), and an online softmax at a row the release
folds to per-row scalars (``one_pass_scalar_loop_faster``).  Each rule is
made to fire and checked in the generated code (upstream's, where it keeps
upstream's loop), and its counterfactual goes on chip.  The rules
themselves, as functions of plain numbers, are tested in
test_one_pass_reductions_decision.py.
"""

import os
import re
import sys
import unittest

import torch
import torch.nn.functional as F
from torch._inductor import config
from torch._inductor.test_case import run_tests, TestCase
from torch.testing._internal.common_cuda import TEST_CUDA


HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from one_pass_reductions_compile import compile_with_remarks  # noqa: E402


@unittest.skipIf(not TEST_CUDA, "needs a CUDA device")
class TestKeptLoopsCuda(TestCase):
    def compile(self, fn, *args, **patch):
        return compile_with_remarks(fn, *args, **patch)

    def test_kernels_of_sums_keep_upstreams_loop(self):
        """At a bfloat16 row of 4096, the kernels whose reductions are all
        sums and which read the row twice keep upstream's loop, unfixed
        (``one_pass_sums_at_copy_speed``): an RMS norm's forward and the
        backward of all three, so an RMS norm's training step has the
        default's code.  A softmax's forward (an online softmax) and a
        layer norm's (three reads: the mean, the variance, the scale) still
        go on chip (at 4096, a row the release's scalar accumulators do not
        fold).  Counterfactual (test_training_steps_go_on_chip_with_
        their_row_values): with ``one_pass_reductions_sums_on_chip`` every
        kernel goes on chip."""
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        x.requires_grad_(True)
        g = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        cases = (
            ("softmax", lambda t: torch.softmax(t, -1), 1),
            ("layer_norm", lambda t: F.layer_norm(t, (4096,)), 1),
            ("rms_norm", lambda t: F.rms_norm(t, (4096,)), 0),
        )
        for name, fn, on_chip in cases:
            with self.subTest(op=name):

                def step(t, fn=fn):
                    out = fn(t)
                    (grad,) = torch.autograd.grad(out, t, g)
                    return out, grad

                got, code, remarks = self.compile(step, x, one_pass_reductions=True)
                self.assertEqual(got, step(x), atol=3e-2, rtol=3e-2)
                kept = [
                    r for r in remarks if r["reason"] == "one_pass_sums_at_copy_speed"
                ]
                self.assertGreaterEqual(len(kept), 1, remarks)
                self.assertTrue(all(r["kind"] == "missed" for r in kept))
                self.assertTrue(all(r["args"]["phases"] == 2 for r in kept), kept)
                fused = [r for r in remarks if r["reason"] == "one_pass_row_on_chip"]
                self.assertEqual(len(fused), on_chip, remarks)
                self.assertEqual(len(kept) + len(fused), len(remarks), remarks)
                self.assertEqual(
                    len(re.findall(r"R0_BLOCK: tl.constexpr = 4096", code)), on_chip
                )
                if not on_chip:
                    _, ref_code, _ = self.compile(step, x, one_pass_reductions=False)
                    # upstream's code but for comments (kernel paths)
                    self.assertEqual(
                        re.sub(r"#.*", "", code), re.sub(r"#.*", "", ref_code)
                    )

    def test_a_layer_norms_forward_goes_on_chip_only_up_to_4096(self):
        """A bfloat16 layer norm's forward (a Welford reduction, then the
        scale: two reads of the row) goes on chip at 4096 and keeps
        upstream's loop at 8192 (``one_pass_loop_at_copy_speed``), with the
        default's code.  The row of 4096 is the rule's counterfactual."""
        for row, on_chip in ((4096, True), (8192, False)):
            with self.subTest(row=row):
                x = torch.randn(1024, row, device="cuda", dtype=torch.bfloat16)

                def fn(t, row=row):
                    return F.layer_norm(t, (row,))

                got, code, remarks = self.compile(fn, x, one_pass_reductions=True)
                self.assertEqual(got, fn(x), atol=3e-2, rtol=3e-2)
                self.assertEqual(len(remarks), 1, remarks)
                (remark,) = remarks
                self.assertEqual(remark["args"]["phases"], 2)
                if on_chip:
                    self.assertEqual(remark["reason"], "one_pass_row_on_chip")
                    self.assertIn("triton_heuristics.fixed_config", code)
                else:
                    self.assertEqual(remark["reason"], "one_pass_loop_at_copy_speed")
                    self.assertEqual(remark["kind"], "missed")
                    self.assertEqual(remark["args"]["num_warps_on_chip"], 8)
                    _, ref_code, _ = self.compile(fn, x, one_pass_reductions=False)
                    # upstream's code but for comments (kernel paths)
                    self.assertEqual(
                        re.sub(r"#.*", "", code), re.sub(r"#.*", "", ref_code)
                    )

    def test_a_backward_reading_its_row_once_keeps_upstreams_loop(self):
        """A cross-entropy backward at 50257 sums its one-hot gradient from
        indices, then reads the logits once: no re-read for a wide loop to
        take from L2 (GPT-2's was 13% slower looped), so it keeps upstream's
        configuration.  Counterfactual: a softmax backward of the same shape
        from a saved output ``p``, ``p * (g - sum(g * p))``, reads its rows
        in both phases and is looped, at a row off a 16-byte boundary in
        aligned steps of 8192 over 32 warps
        (``one_pass_reduction_aligned_loops.two_input_loop``)."""
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
                # Two row-long inputs (g and p), rows off a 16-byte boundary:
                # 32 warps in aligned steps of 8192.
                self.assertEqual("'R0_BLOCK': 8192, 'num_warps': 32" in code, looped)
                self.assertEqual("r0_lead" in code, looped)

    def test_a_backward_reading_its_row_once_needs_a_small_block(self):
        """A cross-entropy backward reads its row once: at 8192 (8 warps)
        it goes on chip; at 16384 (16 warps, one block a multiprocessor) it
        keeps upstream's loop (``one_pass_row_read_once``), while its
        forward's online logsumexp still goes on chip."""
        for row, on_chip in ((8192, True), (16384, False)):
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
                    self.assertEqual(one_read[0]["args"]["num_warps"], 8)
                else:
                    self.assertEqual(one_read[0]["reason"], "one_pass_row_read_once")
                    self.assertEqual(one_read[0]["kind"], "missed")
                    self.assertEqual(one_read[0]["args"]["num_warps_on_chip"], 16)
                # Its forward's online logsumexp goes on chip in fewer than 32
                # warps, also where the release folds its loop to per-row
                # scalars (test_an_online_softmax_at_a_folded_row_keeps_the_
                # scalar_loop).
                online = [r for r in remarks if r["args"].get("online_softmax")]
                self.assertEqual(
                    [r["reason"] for r in online], ["one_pass_row_on_chip"]
                )

    @unittest.skipUnless(
        hasattr(config.triton, "scalar_accumulators"),
        "torch before 2.15.0 has no scalar accumulators",
    )
    def test_an_online_softmax_at_a_folded_row_keeps_the_scalar_loop(self):
        """With 2.15.0's scalar accumulators, an online softmax at a row the
        release folds to per-row scalars (over 4096 elements) keeps
        upstream's loop, unfixed (``one_pass_scalar_loop_faster``): a
        log-softmax (two reads of the row) at 8 warps on chip as at 32,
        cross-entropy's logsumexp (one read) at 32 warps; without them it
        goes on chip.  Cross-entropy's forward at 8192 goes on chip
        (test_a_backward_reading_its_row_once_needs_a_small_block
        shows it at 16384)."""
        for rows, row, warps in ((2048, 8192, 8), (264, 32768, 32)):
            x = torch.randn(rows, row, device="cuda", dtype=torch.bfloat16) * 4
            target = torch.randint(0, row, (rows,), device="cuda")
            cases = {"log_softmax": lambda t: torch.log_softmax(t, -1)}
            if warps == 32:
                cases["cross_entropy"] = lambda t, y=target: F.cross_entropy(t, y)
            for name, fn in cases.items():
                with self.subTest(op=name, row=row):
                    self.check_scalar_loop_kept(fn, x, warps)

    def check_scalar_loop_kept(self, fn, x, warps):
        scalar = {"triton.scalar_accumulators": True}
        out, code, remarks = self.compile(fn, x, one_pass_reductions=True, **scalar)
        self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
        kept = [r for r in remarks if r["reason"] == "one_pass_scalar_loop_faster"]
        self.assertEqual(len(kept), 1, remarks)
        self.assertEqual(kept[0]["kind"], "missed")
        self.assertEqual(kept[0]["args"]["num_warps_on_chip"], warps)
        self.assertTrue(kept[0]["args"]["upstream_scalar_loop"])
        self.assertNotIn("triton_heuristics.fixed_config", code)
        _, ref_code, _ = self.compile(fn, x, one_pass_reductions=False, **scalar)
        # upstream's code but for comments (kernel paths)
        self.assertEqual(re.sub(r"#.*", "", code), re.sub(r"#.*", "", ref_code))
        # Counterfactual: no scalar accumulators, on chip.
        out, code, remarks = self.compile(
            fn,
            x,
            one_pass_reductions=True,
            **{"triton.scalar_accumulators": False},
        )
        self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
        self.assertIn("one_pass_row_on_chip", [r["reason"] for r in remarks])
        self.assertNotIn("one_pass_scalar_loop_faster", [r["reason"] for r in remarks])
        self.assertIn("triton_heuristics.fixed_config", code)


if __name__ == "__main__":
    run_tests()
