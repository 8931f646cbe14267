# Owner(s): ["module: inductor"]
"""The ablation switches: config.fusion_only and config.no_fusion.

Each test compiles real functions through ``torch.compile`` with a switch on
and checks what Inductor generated: with ``no_fusion`` every computing op has
a kernel of its own (from the fusion report, whose kernels equal what Inductor
generated) and every boundary between them says ``no_fusion``; with
``fusion_only`` the held-off optimizations are absent from the generated code
(no OpenMP, no vector ISA in C++ kernels) and listed as ``config`` remarks.
Results equal eager in every combination, over upstream's OpInfo database and
over the benchmarks' default model set.
"""

import inspect
import os
import re
import subprocess
import sys
import unittest

import torch
import torch._dynamo
from torch._inductor import fusion_ablation, fusion_report, metrics
from torch._inductor.fusion_remarks import analysis as fusion_analysis
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.inductor_utils import GPU_TYPE, HAS_GPU
from torch.testing._internal.logging_utils import LoggingTestCase, make_logging_test

from test_fusion_remarks_opinfo import first_sample_call, opinfo_subset


REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "benchmarks", "fusion"))

SWITCHES = {
    "no_fusion": {"no_fusion": True},
    "fusion_only": {"fusion_only": True},
    "both": {"no_fusion": True, "fusion_only": True},
}


def sin_plus_cos(x):
    return torch.sin(x) + torch.cos(x)


def softmax_and_reductions(x):
    return torch.softmax(x, -1) * 2, x.sum(0).sum() + x.sum(1).sum()


def compiled_under(test, switches, fn, *args, **compile_kwargs):
    """Compile ``fn`` with ``switches`` under a capture; check against eager."""
    torch._dynamo.reset()
    metrics.reset()
    expected = fn(*[a.clone() for a in args])
    with torch._inductor.config.patch(switches), fusion_report.capture() as rep:
        actual = torch.compile(fn, **compile_kwargs)(*args)
    test.assertEqual(actual, expected, atol=1e-4, rtol=1e-4)
    for graph in rep.graphs:
        test.assertEqual(fusion_analysis.coverage_violations(graph), [])
    return rep


def ops_per_kernel(rep):
    out = []
    for graph in rep.graphs:
        computes = {op["name"] for op in graph["ops"] if op["computes"]}
        out += [
            [name for name in kernel["ops"] if name in computes]
            for kernel in graph["kernels"]
        ]
    return out


class TestNoFusion(TestCase):
    def test_sin_cos_add_each_in_a_kernel(self):
        rep = compiled_under(self, SWITCHES["no_fusion"], sin_plus_cos, torch.randn(64))
        self.assertEqual(sorted(ops_per_kernel(rep)), [["add"], ["cos"], ["sin"]])
        self.assertEqual(metrics.generated_kernel_count, 3)
        self.assertEqual(
            sorted(
                (b["producer"], b["consumer"], b["reason"])
                for b in rep.graphs[0]["boundaries"]
            ),
            [
                ("cos", "add", "no_fusion"),
                ("sin", "add", "no_fusion"),
                ("sin", "cos", "no_fusion"),  # both read x: a shared input
            ],
        )
        self.assertEqual(
            {b["category"] for b in rep.graphs[0]["boundaries"]}, {"config"}
        )

    def test_every_computing_op_alone(self):
        for switches in (SWITCHES["no_fusion"], SWITCHES["both"]):
            rep = compiled_under(
                self, switches, softmax_and_reductions, torch.randn(16, 32)
            )
            kernels = ops_per_kernel(rep)
            self.assertTrue(all(len(ops) <= 1 for ops in kernels), kernels)
            computing = [
                op["name"] for g in rep.graphs for op in g["ops"] if op["computes"]
            ]
            in_kernels = sorted(name for ops in kernels for name in ops)
            self.assertEqual(in_kernels, sorted(computing))

    def test_default_fuses_what_no_fusion_splits(self):
        rep = compiled_under(self, {}, sin_plus_cos, torch.randn(64))
        self.assertEqual(ops_per_kernel(rep), [["add", "sin", "cos"]])

    def test_generated_code_has_one_loop_nest_per_op(self):
        # The C++ backend emits a graph's consecutive kernels into one C++
        # function; with no_fusion each op is a loop nest of its own there.
        def loop_nests(switches):
            torch._dynamo.reset()
            with torch._inductor.config.patch(switches):
                _, (code,) = run_and_get_code(
                    torch.compile(sin_plus_cos), torch.randn(64)
                )
            return len(re.findall(r"for\(int64_t x0=", code))

        self.assertEqual(loop_nests({}), 1)
        self.assertEqual(loop_nests({"no_fusion": True}), 3)


class TestFusionOnly(TestCase):
    def test_cpp_kernels_without_threads_or_vectors(self):
        x = torch.randn(512, 1024)
        torch._dynamo.reset()
        _, (default,) = run_and_get_code(torch.compile(sin_plus_cos), x)
        torch._dynamo.reset()
        with torch._inductor.config.patch(fusion_only=True):
            _, (held,) = run_and_get_code(torch.compile(sin_plus_cos), x)
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        # What the default generates here, so that the switch has something
        # to hold off (a machine without SIMD or with one thread has less).
        if torch.get_num_threads() > 1:
            self.assertIn("#pragma omp", default)
        if pick_vec_isa():
            self.assertIn("at::vec::Vectorized", default)
        self.assertNotIn("#pragma omp parallel", held)
        self.assertNotIn("at::vec::Vectorized", held)
        self.assertIn("cpp_fused_add_cos_sin_0", held)  # still fused

    def test_held_options_become_config_remarks(self):
        rep = compiled_under(
            self, SWITCHES["fusion_only"], sin_plus_cos, torch.randn(64)
        )
        held = [r for r in rep.graphs[0]["remarks"] if r["reason"] == "config_held_off"]
        self.assertEqual(
            [r["args"]["option"] for r in held],
            [h.option for h in fusion_ablation.FUSION_ONLY],
        )
        self.assertEqual({r["category"] for r in held}, {"config"})
        self.assertIn(
            "held off by config.fusion_only: pattern_matcher=False", rep.summary()
        )

    def test_options_hold_in_forward_and_backward(self):
        from torch._inductor.scheduler import Scheduler

        seen = []
        original = Scheduler.__init__

        def spy(self, *args, **kwargs):
            seen.append(
                (
                    torch._inductor.config.pattern_matcher,
                    torch._inductor.config.cpp.threads,
                    torch._functorch.config.cse,
                )
            )
            original(self, *args, **kwargs)

        x = torch.randn(8, 8, requires_grad=True)
        torch._dynamo.reset()
        with unittest.mock.patch.object(Scheduler, "__init__", spy):
            with torch._inductor.config.patch(fusion_only=True):
                out = torch.compile(lambda t: (t.sin() * 2).sum())(x)
            # The backward graph compiles here, outside the config patch.
            out.backward()
        self.assertEqual(len(seen), 2)
        self.assertEqual(set(seen), {(False, 1, False)})
        self.assertEqual(x.grad, 2 * x.detach().cos())

    def test_mode_conflict_warns_and_the_switch_wins(self):
        fusion_ablation._warned.clear()
        torch._dynamo.reset()
        x = torch.randn(64)
        with (
            torch._inductor.config.patch(fusion_only=True),
            self.assertLogs(fusion_ablation.log, "WARNING") as logs,
        ):
            out = torch.compile(sin_plus_cos, mode="max-autotune-no-cudagraphs")(x)
        self.assertEqual(out, sin_plus_cos(x))
        self.assertTrue(
            any("holds max_autotune=False" in line for line in logs.output), logs.output
        )

    def test_reduce_overhead_keeps_no_cuda_graphs(self):
        fusion_ablation._warned.clear()
        torch._dynamo.reset()
        x = torch.randn(64)
        with (
            torch._inductor.config.patch(fusion_only=True, no_fusion=True),
            self.assertLogs(fusion_ablation.log, "WARNING") as logs,
        ):
            out = torch.compile(sin_plus_cos, mode="reduce-overhead")(x)
        self.assertEqual(out, sin_plus_cos(x))
        self.assertTrue(
            any("holds triton.cudagraphs=False" in line for line in logs.output),
            logs.output,
        )

    def test_bad_env_value_is_a_clear_error(self):
        script = "import torch; torch.compile(lambda x: x.sin())(torch.randn(4))"
        env = dict(os.environ, TORCHINDUCTOR_FUSION_ONLY="yes")
        result = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True
        )
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(
            "torch._inductor.config.fusion_only must be a bool "
            "(from TORCHINDUCTOR_FUSION_ONLY: 0 or 1), got 'yes'",
            result.stderr,
        )


class TestAblationLog(LoggingTestCase):
    @make_logging_test(fusion=True)
    def test_no_fusion_log(self, records):
        with torch._inductor.config.patch(no_fusion=True):
            torch.compile(sin_plus_cos)(torch.randn(64))
        summary = next(r.getMessage() for r in records if " ops -> " in r.getMessage())
        line = inspect.getsourcelines(sin_plus_cos)[1] + 1
        self.assertExpectedInline(
            summary.replace(f"test_fusion_ablation.py:{line}", "<sin_plus_cos>"),
            """\
graph 0/0 (cpu): 3 ops -> 3 kernels (3 generated, 0 extern)
  kernel op0 = cpp_fused_add_cos_sin_0 (cpp, alone): sin  [<sin_plus_cos>]
  kernel op1 = cpp_fused_add_cos_sin_0 (cpp, alone): cos  [<sin_plus_cos>]
  kernel op2 = cpp_fused_add_cos_sin_0 (cpp, alone): add  [<sin_plus_cos>]
  held off by config.no_fusion: epilogue_fusion=False, prologue_fusion=False, combo_kernels=False, benchmark_epilogue_fusion=False, triton.mix_order_reduction=False
  3 boundaries:
    sin -> add: no_fusion (config, scheduler) [<sin_plus_cos> / <sin_plus_cos>]: op0 + op2: fusion is off (config.no_fusion)
    cos -> add: no_fusion (config, scheduler) [<sin_plus_cos> / <sin_plus_cos>]: op1 + op2: fusion is off (config.no_fusion)
    sin || cos: no_fusion (config, scheduler) [<sin_plus_cos> / <sin_plus_cos>]: op0 + op1: fusion is off (config.no_fusion)""",
        )


class TestAblationDocs(TestCase):
    def test_docs_tables_match_the_code(self):
        sys.path.insert(0, os.path.join(REPO, "tools"))
        import update_fusion_docs

        for filename, tables in update_fusion_docs.TABLES.items():
            with open(os.path.join(REPO, "docs", "source", filename)) as f:
                text = f.read()
            self.assertEqual(update_fusion_docs.render(text, tables), text, filename)
        ablation_doc = os.path.join(
            REPO, "docs", "source", "torch.compiler_fusion_ablation.md"
        )
        with open(ablation_doc) as f:
            text = f.read()
        for held in fusion_ablation.FUSION_ONLY + fusion_ablation.NO_FUSION:
            self.assertIn(f"| `{held.option}` |", text)


class TestAblationOpInfo(TestCase):
    # Offset by half a step: other ops than the fusion-remarks sweep's.
    @ops(
        opinfo_subset("FUSION_ABLATION_OPINFO_OPS", "40", offset=0.5),
        allowed_dtypes=(torch.float32,),
    )
    def test_switches_match_eager(self, device, dtype, op):
        fn, arguments = first_sample_call(self, op, device, dtype)

        def compiled(switches):
            torch._dynamo.reset()
            args, kwargs = arguments()
            with torch._inductor.config.patch(switches):
                return torch.compile(fn)(*args, **kwargs)

        try:
            args, kwargs = arguments()
            expected = fn(*args, **kwargs)
            default = compiled({})
            self.assertEqual(default, expected, atol=1e-3, rtol=1e-3, equal_nan=True)
        except Exception as e:
            self.skipTest(f"fails without the switches: {type(e).__name__}")
        for name, switches in SWITCHES.items():
            with self.subTest(switches=name):
                actual = compiled(switches)
                self.assertEqual(actual, expected, atol=1e-3, rtol=1e-3, equal_nan=True)


instantiate_device_type_tests(
    TestAblationOpInfo, globals(), only_for="cpu", allow_xpu=False
)


class AblationModelsMixin:
    """The benchmarks' default model set, every switch, against eager."""

    device = "cpu"
    shapes = "ci"

    def check_model(self, name):
        from models import build, compile_config

        model, inputs = build(name, self.device, self.shapes)
        with torch.no_grad(), compile_config(name):
            expected = model(*inputs)
            for switches in SWITCHES.values():
                torch._dynamo.reset()
                with torch._inductor.config.patch(switches):
                    actual = torch.compile(model)(*inputs)
                self.assertEqual(actual, expected, atol=2e-3, rtol=2e-3)


def _add_model_tests(cls):
    from models import MODELS

    for name in MODELS:
        setattr(cls, f"test_{name}", lambda self, name=name: self.check_model(name))
    return cls


@_add_model_tests
class TestAblationModels(AblationModelsMixin, TestCase):
    pass


@unittest.skipUnless(HAS_GPU, "needs a GPU")
@_add_model_tests
class TestAblationModelsGPU(AblationModelsMixin, TestCase):
    device = GPU_TYPE


if __name__ == "__main__":
    run_tests()
