# Owner(s): ["module: inductor"]
"""Aligned loads in the one-pass pass's loops
(torch/_inductor/one_pass_reduction_aligned_loops.py).

On the CPU: the vector a row gets, which loop an online softmax gets, and
the element-accumulators hook in ``TritonKernel.use_scalar_accumulators``.
On CUDA (skipped without a GPU): rows that start off a 16-byte boundary are
walked in aligned steps (the rule fires: ``tl.multiple_of`` on the row's
index, the unaligned head and tail under the row's bounds, and the
``aligned_vector`` remark), and not where the row is a multiple of the
vector or the option is off (the counterfactual); with 2.15.0's scalar
accumulators those steps keep an accumulator per element
(``element_accumulators``), and upstream's scalar loop comes back with the
aligned steps off; the results equal upstream's kernel and eager over ragged
widths, row strides, offsets into a larger buffer, every dtype, forward and
backward; a backward's loop over two row-long inputs gets wider aligned
steps at such rows, not with the option off or on a boundary.  Speed is measured by benchmarks/fusion/reductions.py, not here.
"""

import dataclasses
import itertools
import os
import re
import sys
import unittest

import torch
import torch.nn.functional as F
from torch._inductor import config, fusion_report
from torch._inductor.one_pass_reduction_aligned_loops import (
    keeps_element_accumulators,
    online_loop,
    two_input_loop,
    vector_for_row,
    warps_for_vector,
)
from torch._inductor.one_pass_reduction_decision import Decision
from torch._inductor.fusion_remarks.taxonomy import Reason
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_cuda import TEST_CUDA


HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from one_pass_reductions_compile import compile_with_remarks, pass_remarks  # noqa: E402


class TestVector(TestCase):
    def test_sixteen_bytes_of_the_smallest_element(self):
        self.assertEqual(vector_for_row(50257, [2, 2]), 8)
        self.assertEqual(vector_for_row(50257, [2, 4]), 8)  # bf16 in, fp32 out
        self.assertEqual(vector_for_row(50257, [4]), 4)
        self.assertEqual(vector_for_row(50258, [2]), 8)
        self.assertEqual(vector_for_row(50258, [4]), 4)

    def test_warps_give_each_thread_a_whole_vector(self):
        self.assertEqual(warps_for_vector(4096, 32, 8), 16)
        self.assertEqual(warps_for_vector(8192, 32, 8), 32)
        self.assertEqual(warps_for_vector(2048, 16, 8), 8)
        self.assertEqual(warps_for_vector(4096, 16, 4), 16)

    def test_none_where_triton_sees_the_alignment_or_nothing_is_known(self):
        self.assertEqual(vector_for_row(65536, [2]), 0)
        self.assertEqual(vector_for_row(50260, [4]), 0)
        self.assertEqual(vector_for_row(50257, [16]), 0)  # one element a vector
        self.assertEqual(vector_for_row(None, [2]), 0)
        self.assertEqual(vector_for_row(50257, []), 0)


class TestOnlineLoop(TestCase):
    """Which loop a looped online softmax gets (pure: the rule itself)."""

    def looped(self, row: int, online: bool = True) -> Decision:
        return Decision(
            Reason.ONE_PASS_ROW_TOO_LONG,
            2,
            row,
            264,
            loop_block=4096,
            loop_warps=32,
            online=online,
            fast_exp=True,
        )

    def test_rows_off_a_boundary_get_aligned_steps(self):
        for scalar in (False, True):
            got = online_loop(
                self.looped(50257), [2], aligned=True, scalar_accumulators=scalar
            )
            self.assertEqual((got.aligned_vector, got.loop_warps), (8, 16))
            self.assertEqual(got.loop_block, 4096)
            self.assertFalse(got.upstream_scalar_loop)
            # per-element accumulators only where the release would fold
            # each step to per-row scalars
            self.assertEqual(got.element_accumulators, scalar)

    def test_a_row_read_once_keeps_the_releases_scalars(self):
        # cross-entropy's logsumexp: one phase, aligned steps, no
        # element accumulators
        once = dataclasses.replace(self.looped(50257), phases=1)
        got = online_loop(once, [2], aligned=True, scalar_accumulators=True)
        self.assertEqual(got.aligned_vector, 8)
        self.assertFalse(got.element_accumulators)

    def test_no_element_accumulators_without_aligned_steps(self):
        # The rule's counterfactual: aligned steps off, the release's
        # scalar loop (upstream's), not the pass's accumulators.
        got = online_loop(
            self.looped(50257), [2], aligned=False, scalar_accumulators=True
        )
        self.assertFalse(got.element_accumulators)
        self.assertTrue(got.upstream_scalar_loop)

    def test_rows_on_a_boundary_keep_upstreams_loop_with_scalar_accumulators(self):
        for row, aligned in ((131072, True), (50257, False)):
            got = online_loop(
                self.looped(row), [2], aligned=aligned, scalar_accumulators=True
            )
            self.assertTrue(got.upstream_scalar_loop)
            self.assertIsNone(got.loop_block)
            self.assertFalse(got.fast_exp)
            self.assertFalse(got.fused)
            # counterfactual: a release without scalar accumulators
            got = online_loop(
                self.looped(row), [2], aligned=aligned, scalar_accumulators=False
            )
            self.assertEqual(got, self.looped(row))

    def test_other_decisions_are_left_as_they_are(self):
        norm = self.looped(131072, online=False)
        self.assertIs(
            online_loop(norm, [2], aligned=True, scalar_accumulators=True), norm
        )
        upstream = dataclasses.replace(self.looped(131072), loop_block=None)
        self.assertIs(
            online_loop(upstream, [2], aligned=True, scalar_accumulators=True),
            upstream,
        )


class TestTwoInputLoop(TestCase):
    """Which loop a looped backward of two row-long inputs gets (pure)."""

    def looped(self, row: int, row_inputs: int = 2, **kw) -> Decision:
        return Decision(
            Reason.ONE_PASS_ROW_TOO_LONG,
            2,
            row,
            2670,
            loop_block=4096,
            loop_warps=16,
            row_inputs=row_inputs,
            **kw,
        )

    def test_rows_off_a_boundary_get_wider_aligned_steps(self):
        for itemsize, vector in ((4, 4), (2, 8)):
            with self.subTest(itemsize=itemsize):
                got = two_input_loop(self.looped(50257), [itemsize], aligned=True)
                self.assertEqual(
                    (got.aligned_vector, got.loop_block, got.loop_warps),
                    (vector, 8192, 32),
                )
                self.assertFalse(got.element_accumulators)
                self.assertFalse(got.fused)
        # a norm's backward: the gradient, the input and the weight
        got = two_input_loop(self.looped(50257, 3), [2, 2], aligned=True)
        self.assertEqual(got.aligned_vector, 8)

    def test_counterfactuals_keep_the_masked_loop(self):
        cases = {
            "option off": (self.looped(50257), [4], False),
            "row on a boundary": (self.looped(50256), [4], True),
            "one input": (self.looped(50257, 1), [4], True),
            "online softmax": (self.looped(50257, online=True), [4], True),
            "not looped": (
                dataclasses.replace(self.looped(50257), loop_block=None),
                [4],
                True,
            ),
            "split rows": (self.looped(50257, rsplit=4), [4], True),
        }
        for name, (decision, sizes, aligned) in cases.items():
            with self.subTest(name):
                self.assertIs(
                    two_input_loop(decision, sizes, aligned=aligned), decision
                )


class _Reached(Exception):
    """Raised by a fake kernel's attribute that the hook should or should
    not let ``use_scalar_accumulators`` reach."""


class _FakeKernel:
    """What ``TritonKernel.use_scalar_accumulators`` reads up to the hook,
    and an attribute it reads after it (``is_combo_kernel``) that raises."""

    features = None

    def __init__(self, fixed_config: object) -> None:
        self.fixed_config = fixed_config

    @property
    def is_combo_kernel(self) -> bool:
        raise _Reached


@unittest.skipUnless(
    hasattr(config.triton, "scalar_accumulators"),
    "torch before 2.15.0 has no scalar accumulators",
)
class TestElementAccumulatorsHook(TestCase):
    """The hook in ``TritonKernel.use_scalar_accumulators`` (CPU: the
    property itself, on a stand-in kernel)."""

    def use_scalar_accumulators(self, element_accumulators: bool) -> bool:
        from torch._inductor.codegen.triton import TritonKernel
        from torch._inductor.one_pass_reductions import _config_class

        fixed = _config_class()(
            {"XBLOCK": 1, "R0_BLOCK": 4096, "num_warps": 16, "num_stages": 1},
            aligned_vector=8,
            element_accumulators=element_accumulators,
        )
        prop = TritonKernel.__dict__["use_scalar_accumulators"]
        return prop.func(_FakeKernel(fixed))

    def test_a_kernel_with_element_accumulators_keeps_them(self):
        with config.patch(
            {"one_pass_reductions": True, "triton.scalar_accumulators": True}
        ):
            self.assertFalse(keeps_element_accumulators(_FakeKernel(None)))
            self.assertFalse(self.use_scalar_accumulators(True))
            # Counterfactual: no element accumulators, upstream's checks go
            # on past the hook.
            with self.assertRaises(_Reached):
                self.use_scalar_accumulators(False)
        # the pass off: the hook gives way whatever the kernel carries
        with config.patch(
            {"one_pass_reductions": False, "triton.scalar_accumulators": True}
        ):
            with self.assertRaises(_Reached):
                self.use_scalar_accumulators(True)


def ops(target: torch.Tensor, weight: torch.Tensor) -> dict:
    n = weight.numel()
    return {
        "softmax": lambda t: torch.softmax(t, -1),
        "log_softmax": lambda t: torch.log_softmax(t, -1),
        "layer_norm": lambda t: F.layer_norm(t, (n,), weight, weight * 0.5),
        "rms_norm": lambda t: F.rms_norm(t, (n,), weight),
        "cross_entropy": lambda t: F.cross_entropy(t.float(), target),
    }


@unittest.skipIf(not TEST_CUDA, "needs a CUDA device")
class TestAlignedLoadsCuda(TestCase):
    ROWS = 264  # two rows per multiprocessor of an H100: looped in wide steps

    def compile(self, fn, *args, **patch):
        return compile_with_remarks(fn, *args, **{"one_pass_reductions": True, **patch})

    def test_rows_off_a_boundary_are_walked_in_aligned_steps(self):
        x = torch.randn(self.ROWS, 50257, device="cuda", dtype=torch.bfloat16) * 4

        def fn(t):
            return torch.softmax(t, -1)

        out, code, remarks = self.compile(fn, x)
        self.assertEqual(out, fn(x), atol=2e-3, rtol=2e-2)
        self.assertIn("r0_lead = (", code)
        self.assertIn("tl.multiple_of(", code)
        self.assertRegex(code, r"tl\.load\(in_ptr0 \+ \(r0_row\)")
        self.assertRegex(code, r"tl\.store\(out_ptr\d \+ \(r0_row\)")
        vectors = [r["args"].get("aligned_vector") for r in remarks]
        self.assertIn(8, vectors)
        self.assertIn("aligned to 8 elements", remarks[0]["detail"])
        # Counterfactuals: the option off; a row that is a multiple of the
        # vector; the pass off: upstream's loop, no aligned vector.
        for patch, t in (
            ({"one_pass_reductions_aligned_loads": False}, x),
            ({}, x[:, :50256].contiguous()),
            ({"one_pass_reductions": False}, x),
        ):
            with self.subTest(patch=patch, row=t.shape[1]):
                out, code, remarks = self.compile(fn, t, **patch)
                self.assertEqual(out, fn(t), atol=2e-3, rtol=2e-2)
                self.assertNotIn("r0_lead", code)
                self.assertNotIn("r0_row", code)
                self.assertTrue(all("aligned_vector" not in r["args"] for r in remarks))

    @unittest.skipUnless(
        hasattr(config.triton, "scalar_accumulators"),
        "torch before 2.15.0 has no scalar accumulators",
    )
    def test_rows_on_a_boundary_keep_upstreams_scalar_loop(self):
        # 2.15.0's scalar accumulators: a looped online softmax whose rows
        # start on a 16-byte boundary keeps upstream's loop, unfixed.
        x = torch.randn(self.ROWS, 131072, device="cuda", dtype=torch.bfloat16) * 4
        target = torch.randint(0, 131072, (self.ROWS,), device="cuda")
        cases = {
            "softmax": lambda t: torch.softmax(t, -1),
            "cross_entropy": lambda t: F.cross_entropy(t, target),
        }
        for name, fn in cases.items():
            with self.subTest(op=name):
                out, code, remarks = self.compile(
                    fn, x, **{"triton.scalar_accumulators": True}
                )
                self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
                kept = [r for r in remarks if r["args"].get("upstream_scalar_loop")]
                self.assertEqual(len(kept), 1)
                self.assertIn("upstream's own loop", kept[0]["detail"])
                self.assertNotIn("exp", kept[0]["args"])
                self.assertNotIn("triton_heuristics.fixed_config", code)
                _, ref_code, _ = self.compile(
                    fn,
                    x,
                    one_pass_reductions=False,
                    **{"triton.scalar_accumulators": True},
                )
                # the same code as upstream's but for comments (kernel paths)
                self.assertEqual(re.sub(r"#.*", "", code), re.sub(r"#.*", "", ref_code))
                # Counterfactual: scalar accumulators off, the pass's loop.
                out, code, remarks = self.compile(
                    fn, x, **{"triton.scalar_accumulators": False}
                )
                self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
                self.assertTrue(
                    all("upstream_scalar_loop" not in r["args"] for r in remarks)
                )
                self.assertIn("triton_heuristics.fixed_config", code)

    @unittest.skipUnless(
        hasattr(config.triton, "scalar_accumulators"),
        "torch before 2.15.0 has no scalar accumulators",
    )
    def test_aligned_steps_keep_an_accumulator_per_element(self):
        # 2.15.0's scalar accumulators on: the aligned loop of an online
        # softmax that reads its row again keeps upstream's per-element
        # combine, not its per-row scalars, and its remark says so.
        x = torch.randn(self.ROWS, 50257, device="cuda", dtype=torch.bfloat16) * 4
        cases = {
            "softmax": lambda t: torch.softmax(t, -1),
            "log_softmax": lambda t: torch.log_softmax(t, -1),
        }
        scalar = {"triton.scalar_accumulators": True}
        for name, fn in cases.items():
            with self.subTest(op=name):
                out, code, remarks = self.compile(fn, x, **scalar)
                self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
                self.assertIn("r0_lead", code)
                self.assertIn("triton_helpers.online_softmax_combine(", code)
                self.assertNotIn("online_softmax_reduce_scalar_combine(", code)
                kept = [r for r in remarks if r["args"].get("element_accumulators")]
                self.assertEqual(len(kept), 1)
                self.assertEqual(kept[0]["args"]["aligned_vector"], 8)
                self.assertIn("an accumulator per element", kept[0]["detail"])
                # Counterfactual: aligned steps off, upstream's scalar loop.
                out, code, remarks = self.compile(
                    fn, x, one_pass_reductions_aligned_loads=False, **scalar
                )
                self.assertEqual(out, fn(x), atol=2e-2, rtol=2e-2)
                self.assertNotIn("r0_lead", code)
                self.assertIn("online_softmax_reduce_scalar_combine(", code)
                self.assertTrue(
                    all("element_accumulators" not in r["args"] for r in remarks)
                )
        # Cross-entropy's logsumexp reads its row once: aligned steps, the
        # release's scalars.
        target = torch.randint(0, 50257, (self.ROWS,), device="cuda")

        def cross_entropy(t):
            return F.cross_entropy(t, target)

        out, code, remarks = self.compile(cross_entropy, x, **scalar)
        self.assertEqual(out, cross_entropy(x), atol=2e-2, rtol=2e-2)
        self.assertIn("r0_lead", code)
        self.assertIn("online_softmax_reduce_scalar_combine(", code)
        self.assertTrue(all("element_accumulators" not in r["args"] for r in remarks))

    def test_a_backward_off_a_boundary_is_walked_in_wider_aligned_steps(self):
        # A softmax's and log-softmax's backward (the gradient and the
        # output, two row-long inputs) at 50257: aligned steps of 8192 over
        # 32 warps (two_input_loop), float32 and bfloat16.
        def gradient(fn, t, g, **patch):
            torch._dynamo.reset()
            with (
                config.patch(
                    {"fx_graph_cache": False, "one_pass_reductions": True, **patch}
                ),
                fusion_report.capture() as rep,
            ):
                compiled = torch.compile(lambda a: fn(a, -1))
                out, codes = run_and_get_code(
                    lambda: torch.autograd.grad(compiled(t), t, g)[0]
                )
            return out, "\n".join(codes), pass_remarks(rep)

        for dtype, name in itertools.product(
            (torch.float32, torch.bfloat16), ("softmax", "log_softmax")
        ):
            fn = getattr(torch, name)
            x = (torch.randn(self.ROWS, 50257, device="cuda") * 4).to(dtype)
            for patch, width, aligned in (
                ({}, 50257, True),
                # counterfactuals: the option off; a row on a boundary
                ({"one_pass_reductions_aligned_loads": False}, 50257, False),
                ({}, 50256, False),
            ):
                with self.subTest(dtype=dtype, op=name, patch=patch, row=width):
                    t = x[:, :width].contiguous().requires_grad_()
                    # a fixed incoming gradient: the kernel's second input
                    g = torch.randn_like(t)
                    out, code, remarks = gradient(fn, t, g, **patch)
                    tf = t.detach().float().requires_grad_()
                    (ref,) = torch.autograd.grad(fn(tf, -1), tf, g.float())
                    # bfloat16: the saved output's rounding, times the row's
                    # sum of the gradient (hundreds), on the aligned and the
                    # masked loop alike
                    atol, rtol = (
                        (1e-4, 1e-4) if dtype == torch.float32 else (8e-2, 2e-2)
                    )
                    torch.testing.assert_close(out.float(), ref, atol=atol, rtol=rtol)
                    backward = [
                        r
                        for r in remarks
                        if r["args"].get("row_inputs", 1) >= 2
                        and r["args"].get("loop_block")
                    ]
                    self.assertEqual(len(backward), 1)
                    args = backward[0]["args"]
                    if aligned:
                        self.assertEqual(
                            args.get("aligned_vector"), 16 // x.element_size()
                        )
                        self.assertEqual(
                            (args["loop_block"], args["loop_warps"]), (8192, 32)
                        )
                        self.assertIn("r0_lead", code)
                    else:
                        self.assertNotIn("aligned_vector", args)
                        self.assertEqual(args["loop_block"], 4096)
                        if dtype == torch.float32:
                            # float32's forward keeps upstream's loop
                            self.assertNotIn("r0_lead", code)

    def rows(self, width: int, layout: str, dtype: torch.dtype) -> torch.Tensor:
        """Rows of ``width`` in ``layout``: contiguous; one row in, rows 3
        elements apart (``row_stride``); or 7 elements into each row of a
        larger buffer (``offset``)."""
        pad = {"contiguous": 0, "row_stride": 3, "offset": 7}[layout]
        storage = (torch.randn(self.ROWS + 1, width + pad, device="cuda") * 4).to(dtype)
        if layout == "contiguous":
            return storage[: self.ROWS]
        start = pad if layout == "offset" else 0
        return storage[1:, start : start + width]

    def check(self, name: str, x: torch.Tensor) -> str:
        width = x.shape[1]
        target = torch.randint(0, width, (self.ROWS,), device="cuda")
        weight = torch.rand(width, device="cuda", dtype=x.dtype) + 0.5
        out, code, _ = self.compile(ops(target, weight)[name], x)
        ref = ops(target, weight.float())[name](x.float())
        tol = 1e-4 if x.dtype == torch.float32 else 2e-2
        torch.testing.assert_close(out.float(), ref, atol=tol, rtol=tol)
        return code

    def test_ragged_widths_strides_offsets_and_dtypes_equal_eager(self):
        layouts = ("contiguous", "row_stride", "offset")
        dtypes = (torch.bfloat16, torch.float16, torch.float32)
        for width, layout, dtype in itertools.product((32771, 50262), layouts, dtypes):
            with self.subTest(width=width, layout=layout, dtype=dtype):
                code = self.check("softmax", self.rows(width, layout, dtype))
                # 16-bit rows this long are looped by the pass, with aligned
                # steps; float32 ones keep upstream's configuration (its
                # online softmax's tail at 8192 is too long:
                # one_pass_reductions.loop_block_for_row)
                self.assertEqual("r0_row" in code, dtype != torch.float32)
        for name in ("log_softmax", "layer_norm", "rms_norm", "cross_entropy"):
            for layout, dtype in (
                ("offset", torch.bfloat16),
                ("row_stride", torch.float16),
            ):
                with self.subTest(op=name, layout=layout, dtype=dtype):
                    self.check(name, self.rows(50257, layout, dtype))

    def test_forward_and_backward_equal_upstream_and_eager(self):
        width = 50257
        target = torch.randint(0, width, (self.ROWS,), device="cuda")
        weight = torch.rand(width, device="cuda", dtype=torch.bfloat16) + 0.5
        for name, fn in ops(target, weight).items():
            with self.subTest(op=name):
                x = torch.randn(
                    self.ROWS, width, device="cuda", dtype=torch.bfloat16
                ).requires_grad_()

                def step(t, fn=fn):
                    return fn(t).float().square().mean()

                def grads(x=x, **patch):
                    torch._dynamo.reset()
                    with config.patch(
                        {"fx_graph_cache": False, "one_pass_reductions": True, **patch}
                    ):
                        (grad,) = torch.autograd.grad(torch.compile(step)(x), x)
                    return grad.float()

                aligned = grads()
                upstream = grads(one_pass_reductions=False)
                xf = x.float().detach().requires_grad_()
                eager_fn = ops(target, weight.float())[name]
                (eager,) = torch.autograd.grad(step(xf, eager_fn), xf)
                torch.testing.assert_close(aligned, upstream, atol=2e-3, rtol=5e-2)
                torch.testing.assert_close(aligned, eager.float(), atol=2e-3, rtol=5e-2)


if __name__ == "__main__":
    run_tests()
