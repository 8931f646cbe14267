# Owner(s): ["module: inductor"]
"""Fusion remarks over upstream's OpInfo database (CPU, float32).

For each op, its first sample input is compiled with a
``fusion_report.capture()`` active; the test asserts the coverage invariant on
every captured graph and that the compiled result equals eager.  When the
compile or the comparison fails, the same op is compiled again without the
capture: a failure that happens without remarks too is upstream's (skipped),
one that happens only with remarks is ours (fails).

CI runs a deterministic subset (every k-th op, ``FUSION_OPINFO_OPS`` ops,
default 120); ``FUSION_OPINFO_OPS=all`` runs the whole database.
"""

import copy
import os

import torch
import torch._dynamo
from torch._inductor import fusion_report, metrics
from torch._inductor.fusion_remarks import analysis as fusion_analysis
from torch._inductor.test_case import run_tests, TestCase
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db


# Ops whose result is random or depends on memory layout/allocation, so eager
# and compiled results can differ without any bug.
NONDETERMINISTIC = ("rand", "normal", "bernoulli", "dropout", "multinomial", "empty")


def opinfo_subset(env: str, default: str, offset: float = 0.0) -> list:
    """A deterministic subset of op_db (CPU float32): every k-th op.

    ``env`` names the variable that sets its size (or ``all``); ``offset``
    (a fraction of the step) lets two sweeps cover different ops.
    """
    candidates = [
        op
        for op in sorted(op_db, key=lambda o: (o.name, o.variant_test_name))
        if torch.float32 in op.supported_dtypes("cpu")
        and not any(word in op.name for word in NONDETERMINISTIC)
    ]
    wanted = os.environ.get(env, default)
    if wanted == "all":
        return candidates
    n = max(1, int(wanted))
    step = max(1, len(candidates) // n)
    return candidates[int(step * offset) :: step][:n]


def first_sample_call(test, op, device, dtype):
    """``(fn, arguments)``: the op as a function, and fresh copies of its first sample."""
    samples = list(op.sample_inputs(device, dtype, requires_grad=False))
    if not samples:
        test.skipTest("no sample inputs")
    sample = samples[0]

    def fn(*args, **kwargs):
        return op(*args, **kwargs)

    def arguments():
        return (
            [_clone(sample.input), *[_clone(a) for a in sample.args]],
            {k: _clone(v) for k, v in sample.kwargs.items()},
        )

    return fn, arguments


def _clone(value):
    return (
        copy.deepcopy(value) if not isinstance(value, torch.Tensor) else value.clone()
    )


class TestFusionRemarksOpInfo(TestCase):
    @ops(opinfo_subset("FUSION_OPINFO_OPS", "120"), allowed_dtypes=(torch.float32,))
    def test_coverage_and_correctness(self, device, dtype, op):
        fn, arguments = first_sample_call(self, op, device, dtype)

        try:
            args, kwargs = arguments()
            expected = fn(*args, **kwargs)
        except Exception as e:
            self.skipTest(f"eager fails: {type(e).__name__}")

        torch._dynamo.reset()
        metrics.reset()
        try:
            with fusion_report.capture() as rep:
                args, kwargs = arguments()
                actual = torch.compile(fn)(*args, **kwargs)
            self.assertEqual(actual, expected, atol=1e-3, rtol=1e-3, equal_nan=True)
        except Exception as with_remarks:
            self._fails_without_remarks(fn, arguments, expected, with_remarks)
            return
        for graph in rep.graphs:
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])
        generated = sum(
            k["generated_kernels"] for g in rep.graphs for k in g["kernels"]
        )
        self.assertEqual(generated, metrics.generated_kernel_count)

    def _fails_without_remarks(self, fn, arguments, expected, with_remarks):
        torch._dynamo.reset()
        try:
            with torch._inductor.config.patch(fx_graph_cache=False):
                args, kwargs = arguments()
                actual = torch.compile(fn)(*args, **kwargs)
            self.assertEqual(actual, expected, atol=1e-3, rtol=1e-3, equal_nan=True)
        except Exception as without_remarks:
            self.skipTest(
                f"fails in stock Inductor too: {type(without_remarks).__name__}"
            )
        raise AssertionError("fails only with fusion remarks on") from with_remarks


instantiate_device_type_tests(
    TestFusionRemarksOpInfo, globals(), only_for="cpu", allow_xpu=False
)


if __name__ == "__main__":
    run_tests()
