# Owner(s): ["module: inductor"]
"""The benchmarks' default model set (benchmarks/fusion/models.py) under the
fork's switches, each against eager: ``no_fusion`` and ``fusion_only`` one at
a time (on the CPU, and on a GPU where there is one), and the launch-bound
combo kernels on CUDA, with no kernel boundary left without a reason.

A test of the fork's benchmarks, beside them: it travels in no pull-request
stack (``make export``), since the model set does not either.  The switches'
own tests are test/inductor/test_fusion_ablation.py and
test_launch_bound_combo.py.
"""

import sys
import unittest
from pathlib import Path

import torch
import torch._dynamo
from torch._inductor import config, fusion_report
from torch._inductor.fusion_remarks import analysis as fusion_analysis
from torch._inductor.test_case import run_tests, TestCase
from torch.testing._internal.inductor_utils import (
    GPU_TYPE,
    HAS_CUDA_AND_TRITON,
    HAS_GPU,
)


# benchmarks/fusion: the model set and the harness's comparison
FUSION = Path(__file__).resolve().parents[1]
if str(FUSION) not in sys.path:
    sys.path.insert(0, str(FUSION))

from harness import matches  # noqa: E402
from models import build, compile_config, MODELS  # noqa: E402


# Whole models run each switch alone; the two together run over the OpInfo
# ops (test_fusion_ablation.py's TestAblationOpInfo).  The 13 models' three
# compiles each took 420 of the 2,062 s of a fresh clone's suite on the
# 2-core CPU (2026-11-27), run once per release inside CI's 90 minutes.
MODEL_SWITCHES = {
    "no_fusion": {"no_fusion": True},
    "fusion_only": {"fusion_only": True},
}


class AblationModelsMixin:
    """The default model set, each switch, against eager."""

    device = "cpu"
    shapes = "ci"

    def check_model(self, name):
        model, inputs = build(name, self.device, self.shapes)
        with torch.no_grad(), compile_config(name):
            expected = model(*inputs)
            for switches in MODEL_SWITCHES.values():
                torch._dynamo.reset()
                with config.patch(switches):
                    actual = torch.compile(model)(*inputs)
                self.assertEqual(actual, expected, atol=2e-3, rtol=2e-3)


def _add_model_tests(cls):
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


@unittest.skipUnless(HAS_CUDA_AND_TRITON, "needs a CUDA GPU")
class TestLaunchBoundComboModelsCuda(TestCase):
    def test_default_model_set_matches_eager(self):
        """Every model equals eager with the launch-bound combo kernels on,
        every boundary has its reason, and some kernels were combined."""
        combined = 0
        for name in MODELS:
            with self.subTest(model=name):
                torch._dynamo.reset()
                model, inputs = build(name, "cuda", "ci")
                with torch.no_grad():
                    expected = model(*inputs)
                    with (
                        compile_config(name),
                        config.patch(launch_bound_combo_kernels=True),
                        fusion_report.capture() as rep,
                    ):
                        actual = torch.compile(model)(*inputs)
                same, diff = matches(actual, expected)
                self.assertTrue(same, f"{name}: max abs diff {diff}")
                graphs = rep.to_json()["graphs"]
                for graph in graphs:
                    self.assertEqual(fusion_analysis.coverage_violations(graph), [])
                combined += sum(
                    r["reason"] == "combined_launch_bound"
                    for graph in graphs
                    for r in graph["remarks"]
                )
        self.assertGreater(combined, 0)


if __name__ == "__main__":
    run_tests()
