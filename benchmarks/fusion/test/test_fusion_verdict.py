# Owner(s): ["module: inductor"]
"""The whole-model verdict of benchmarks/fusion/verdict.py: the op eager
spends most time in, what the compile did with it (a library call, generated
kernels, traced into other ops), the one-line verdict from hand numbers, the
config options suspected of a slower compile, and real CPU compiles measured
(CUDA's launch counts skipped without a GPU).  The calibration of predicted
gains, whose cases carry this verdict, is tested in
test_fusion_predictions.py.

A test of the fork's benchmarks, beside them: it travels in no pull-request
stack (``make export``), since the benchmarks do not either."""

import sys
import unittest
from pathlib import Path
from types import SimpleNamespace

from torch._inductor.test_case import run_tests, TestCase

# Imported before benchmarks/fusion goes onto sys.path: common_cuda imports
# numba where it is installed (the GPU machine), numba imports the coverage
# package, and benchmarks/fusion/coverage.py would shadow it.
from torch.testing._internal.common_cuda import TEST_CUDA


REPO = Path(__file__).resolve().parents[3]
BENCHMARKS = REPO / "benchmarks" / "fusion"
sys.path.insert(0, str(BENCHMARKS))

import torch  # noqa: E402
import verdict  # noqa: E402


def _report(kernels: list[dict], ops: list[dict]) -> dict:
    return {"graphs": [{"compile_id": "0/0", "ops": ops, "kernels": kernels}]}


# A graph with a library convolution, a generated relu+add and a view.
CONV_RELU = _report(
    kernels=[
        {
            "name": "extern_kernels.convolution",
            "kind": "extern",
            "ops": ["convolution"],
        },
        {
            "name": "buf1",
            "kind": "pointwise",
            "ops": ["relu", "add"],
            "function": "triton_poi_fused_add_relu_0",
        },
        {
            "name": "buf2",
            "kind": "pointwise",
            "ops": ["mul"],
            "function": "triton_poi_fused_mul_1",
        },
    ],
    ops=[
        {"name": "convolution", "target": "aten.convolution.default", "computes": True},
        {"name": "relu", "target": "aten.relu.default", "computes": True},
        {"name": "add", "target": "aten.add.Tensor", "computes": True},
        {"name": "mul", "target": "aten.mul.Tensor", "computes": True},
        {"name": "view", "target": "aten.view.default", "computes": False},
    ],
)


class TestVerdict(TestCase):
    def test_dominant_op_is_the_aten_op_with_most_self_time(self):
        def event(key, cpu_us, device_us, count):
            return SimpleNamespace(
                key=key,
                self_cpu_time_total=cpu_us,
                self_device_time_total=device_us,
                count=count,
            )

        events = [
            event("aten::sin", 30.0, 1.0, 3),
            event("aten::cos", 10.0, 9.0, 3),
            event("cpp_fused_sin_0", 500.0, 500.0, 1),  # not an aten op
        ]
        self.assertEqual(
            verdict.dominant_op(events, "cpu"),
            {"op": "aten::sin", "share": 0.75, "calls": 3},
        )
        self.assertEqual(verdict.dominant_op(events, "cuda")["op"], "aten::cos")
        self.assertIsNone(verdict.dominant_op([event("aten::sin", 0, 0, 1)], "cpu"))

    def test_what_compile_did_with_a_library_a_generated_and_a_traced_op(self):
        # mkldnn_convolution is eager's backend for the graphs' convolution.
        self.assertEqual(
            verdict.what_compile_did("aten::mkldnn_convolution", CONV_RELU),
            {
                "library_calls": 1,
                "in_generated_kernels": 0,
                "ops": 4,
                "kernels": 3,
                "generated": 2,
            },
        )
        self.assertEqual(
            verdict.what_compile_did("aten::relu", CONV_RELU)["in_generated_kernels"],
            1,
        )
        traced = verdict.what_compile_did("aten::_cudnn_rnn", CONV_RELU)
        self.assertEqual(
            (traced["library_calls"], traced["in_generated_kernels"]), (0, 0)
        )

    def test_verdict_lines_from_hand_numbers(self):
        base = {"eager_s": 2e-3, "compiled_s": 1e-3, "profiled_steps": 3}
        self.assertEqual(
            verdict.verdict_line(base),
            "compiled 2.00x eager (1.00 against 2.00 ms per step)",
        )
        traced = {
            **base,
            "dominant": {"op": "aten::_cudnn_rnn", "share": 0.8, "calls": 6},
            "compile": verdict.what_compile_did("aten::_cudnn_rnn", CONV_RELU),
        }
        self.assertEqual(
            verdict.verdict_line(traced),
            "compiled 2.00x eager (1.00 against 2.00 ms per step); eager spends "
            "80% of its host op time in aten::_cudnn_rnn (2 per step), which the "
            "compiled graphs do not call: Inductor traced it into 4 ops in 3 "
            "kernels (2 generated)",
        )
        library = {
            **base,
            "eager_s": 1e-3,
            "compiled_s": 4e-3,
            "gpu": {
                "eager_s": 0.5e-3,
                "compiled_s": 1.5e-3,
                "eager_launches": 120,
                "compiled_launches": 30,
            },
            "dominant": {"op": "aten::mkldnn_convolution", "share": 0.5, "calls": 3},
            "compile": verdict.what_compile_did("aten::mkldnn_convolution", CONV_RELU),
        }
        self.assertEqual(
            verdict.verdict_line(library),
            "compiled 0.25x eager (4.00 against 1.00 ms per step); GPU time 1.50 "
            "against 0.50 ms, launches 30 against 120, host beyond the GPU 2.50 "
            "against 0.50 ms; eager spends 50% of its GPU op time in "
            "aten::mkldnn_convolution (1 per step), which the compiled graphs "
            "still call (1 library calls among 3 kernels)",
        )

    def test_measure_verdict_of_a_real_cpu_compile(self):
        """sin(x) + cos(x) compiled: one generated kernel computes the op
        eager spends most time in."""
        from models import build

        from torch._inductor import fusion_report

        model, inputs = build("sin_cos", "cpu", "ci")
        torch._dynamo.reset()
        compiled = torch.compile(model)

        def eager_step():
            with torch.no_grad():
                return model(*inputs)

        def compiled_step():
            with torch.no_grad():
                return compiled(*inputs)

        with fusion_report.capture() as rep:
            compiled_step()
        data = rep.to_json()
        m = verdict.measure_verdict(
            "sin_cos",
            "inference",
            "cpu",
            eager_step,
            compiled_step,
            data,
            rounds=2,
            per_round=3,
        )
        self.assertGreater(m["eager_s"], 0)
        self.assertGreater(m["compiled_s"], 0)
        self.assertEqual(len(m["wall_rounds_s"]["eager"]), 2)
        self.assertNotIn("gpu", m)  # no kernel time on the CPU
        self.assertIn(m["dominant"]["op"], ("aten::sin", "aten::cos", "aten::add"))
        self.assertEqual(m["compile"]["library_calls"], 0)
        self.assertGreaterEqual(m["compile"]["in_generated_kernels"], 1)
        self.assertEqual(m["slower"], m["compiled_s"] > m["eager_s"])
        line = m["line"]
        self.assertTrue(
            line.startswith(f"compiled {m['eager_s'] / m['compiled_s']:.2f}x eager ("),
            line,
        )
        self.assertIn("eager spends", line)
        self.assertIn("host op time", line)
        self.assertIn("which the compiled graphs compute in generated kernels", line)

    def test_suspects_apply_to_the_ops_of_the_graphs(self):
        self.assertEqual(
            [s.option for s in verdict.suspects_for(CONV_RELU)],
            ["layout_optimization"],
        )
        no_conv = {
            "graphs": [
                {**g, "ops": [o for o in g["ops"] if o["name"] != "convolution"]}
                for g in CONV_RELU["graphs"]
            ]
        }
        self.assertEqual(verdict.suspects_for(no_conv), [])

    def test_verdict_line_says_where_the_library_op_time_went_and_the_suspects(self):
        m = {
            "eager_s": 10e-3,
            "compiled_s": 25e-3,
            "profiled_steps": 3,
            "dominant": {"op": "aten::mkldnn_convolution", "share": 0.8, "calls": 3},
            "compile": verdict.what_compile_did("aten::mkldnn_convolution", CONV_RELU),
            "dominant_s": {"eager": 8e-3, "compiled": 15e-3},
            "suspects": [
                {
                    "option": "layout_optimization",
                    "value": False,
                    "why": "because",
                    "eager_s": 11e-3,
                    "stock_s": 24e-3,
                    "compiled_s": 10e-3,
                }
            ],
        }
        self.assertEqual(
            verdict.verdict_line(m),
            "compiled 0.40x eager (25.00 against 10.00 ms per step); eager spends "
            "80% of its host op time in aten::mkldnn_convolution (1 per step), "
            "which the compiled graphs still call (1 library calls among 3 "
            "kernels); it takes 15.00 ms per step compiled against 8.00 ms eager, "
            "the rest of the step 10.00 against 2.00 ms; with "
            "layout_optimization=False compiled takes 10.00 ms, 1.10x eager, "
            "against 24.00 ms with it on, in the same rounds (because)",
        )

    def test_a_slower_conv_step_is_timed_without_its_suspect(self):
        """Two convolutions at batch 2 on the CPU: the compile lays them out
        channels-last and converts the weights on every step.  The verdict
        recompiles without layout optimization, and that compile's
        convolutions keep the contiguous layout."""
        from torch._inductor import fusion_report
        from torch._inductor.utils import run_and_get_code

        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(128, 128, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(128, 128, 3, padding=1),
        ).eval()
        x = torch.randn(2, 128, 16, 16)
        torch._dynamo.reset()
        compiled = torch.compile(model)
        with torch.no_grad(), fusion_report.capture() as rep:
            _, (stock_code,) = run_and_get_code(compiled, x)
        codes = {}

        def recompile(config):
            alt = torch.compile(model, options=config)
            with torch.no_grad():
                _, (codes[tuple(config.items())],) = run_and_get_code(alt, x)

            def step():
                with torch.no_grad():
                    return alt(x)

            return step

        def eager_step():
            with torch.no_grad():
                return model(x)

        def compiled_step():
            with torch.no_grad():
                return compiled(x)

        m = verdict.measure_verdict(
            "two_convs",
            "inference",
            "cpu",
            eager_step,
            compiled_step,
            rep.to_json(),
            rounds=2,
            per_round=3,
            recompile=recompile,
        )
        # The stock compile's convolutions write channels-last outputs.
        channels_last = str(
            tuple(x.contiguous(memory_format=torch.channels_last).stride())
        )
        self.assertIn(channels_last, stock_code)
        self.assertEqual(m["compile"]["library_calls"], 2, msg=str(m["dominant"]))
        self.assertGreater(m["dominant_s"]["compiled"], 0)
        self.assertGreater(m["dominant_s"]["eager"], 0)
        if not m["slower"]:
            self.assertNotIn("suspects", m)
            self.skipTest("compiled was not slower on this machine")
        self.assertEqual(list(codes), [(("layout_optimization", False),)])
        self.assertNotIn(channels_last, codes[(("layout_optimization", False),)])
        (suspect,) = m["suspects"]
        self.assertEqual(suspect["option"], "layout_optimization")
        self.assertGreater(suspect["compiled_s"], 0)
        self.assertIn("with layout_optimization=False compiled takes", m["line"])

    @unittest.skipIf(not TEST_CUDA, "needs a CUDA device")
    def test_measure_verdict_on_cuda_counts_launches(self):
        """On a GPU, eager launches sin, cos and add; the compile one kernel."""
        x = torch.randn(1024, 1024, device="cuda")
        compiled = torch.compile(lambda t: t.sin() + t.cos())
        from torch._inductor import fusion_report

        with fusion_report.capture() as rep:
            compiled(x)
        m = verdict.measure_verdict(
            "sin_cos",
            "inference",
            "cuda",
            lambda: x.sin() + x.cos(),
            lambda: compiled(x),
            rep.to_json(),
            rounds=2,
            per_round=3,
        )
        self.assertEqual(m["gpu"]["eager_launches"], 3)
        self.assertEqual(m["gpu"]["compiled_launches"], 1)
        self.assertIn("GPU time", m["line"])
        self.assertIn("GPU op time", m["line"])


if __name__ == "__main__":
    run_tests()
