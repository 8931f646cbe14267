"""The one-pass reductions' bandwidth sweep (benchmarks/fusion/reductions.py)
and its model steps (reductions_models.py): the bytes a case counts, a real
case compiled and run on the CPU, the interleaved rounds, the merging of
sweeps, and the copy baseline's refiguring (probes/copy_baseline.py).
Bandwidth itself is measured by the sweep on a GPU, not here.

A test of the fork's benchmarks, beside them: it travels in no pull-request
stack (``make export``), since the sweep does not either.
"""

import os
import sys
import tempfile
import unittest
import unittest.mock
from pathlib import Path

import torch
from torch._inductor.test_case import run_tests, TestCase


# benchmarks/fusion: the sweep, its model steps and its probes/
FUSION = Path(__file__).resolve().parents[1]


class TestSweep(TestCase):
    """benchmarks/fusion/reductions.py: the bytes it counts and a real CPU case."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for path in (FUSION, FUSION / "probes"):
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        import reductions

        cls.reductions = reductions

    def test_least_bytes_read_once_and_write_once(self):
        r = self.reductions
        self.assertEqual(r.least_bytes("softmax", 4, 8, 2, False), 2 * 4 * 8 * 2)
        self.assertEqual(r.least_bytes("rms_norm", 4, 8, 2, True), 5 * 4 * 8 * 2)
        # cross-entropy reads the logits and the targets, writes a scalar.
        self.assertEqual(r.least_bytes("cross_entropy", 4, 8, 2, False), 64 + 32)
        self.assertEqual(r.rows_for(4096, 1 << 20), 256)

    def test_the_copy_ways_move_the_input_unchanged(self):
        x = torch.randn(8, 32)
        ways = self.reductions.copy_ways(x)
        self.assertEqual(set(ways), {"clone", "elementwise"})
        for call in ways.values():
            self.assertTrue(torch.equal(call(), x))

    def test_a_sweep_refigured_against_the_elementwise_copy(self):
        import copy_baseline

        # the probe's elementwise copy: 2 TB/s for 2-byte elements (the median
        # of 1, 2 and 3), 4 for 4-byte ones
        baseline = {
            "cases": [
                {
                    "rows": 4,
                    "row": 8,
                    "bytes": 4 * 8 * size,
                    "ways": {"elementwise": {"graph_tb_s": tb}},
                }
                for size, tb in ((2, 1.0), (2, 2.0), (2, 3.0), (4, 4.0))
            ]
        }

        def case(op, us, recorded):
            return {
                "op": op,
                "rows": 4,
                "row": 8,
                "dtype": "bfloat16",
                "pass": "forward",
                "bytes": 1_000_000,
                "arms": {
                    "eager": {"s": 1e-6},
                    "one_pass": {"s": us * 1e-6, "fraction_of_copy": recorded},
                },
            }

        earlier = {"cases": [case("softmax", 1.0, 0.9), case("layer_norm", 2.0, 0.3)]}
        later = {
            "cases": [
                case("softmax", 2.0, 0.8),
                {**case("softmax", 1.0, 0.1), "dtype": "float32"},
            ]
        }
        table = copy_baseline.refigure(baseline, [earlier, later])
        rows = table.splitlines()[2:]
        # 1e6 bytes in 2 us at 2 TB/s is 25%; the later file's softmax
        # replaces the earlier one's; float32 is left out; no default arm
        self.assertEqual(
            rows,
            [
                "| layer_norm | 4 x 8 | bfloat16 | forward | 50% | - | 25% (30%) |",
                "| softmax | 4 x 8 | bfloat16 | forward | 50% | - | 25% (80%) |",
            ],
        )
        with self.assertRaises(SystemExit):
            copy_baseline.refigure({"cases": baseline["cases"][3:]}, [earlier])

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
        # the copy is the faster of the clone and the elementwise copy
        self.assertEqual(set(case["copy_ways_s"]), {"clone", "elementwise"})
        self.assertEqual(case["copy_s"], min(case["copy_ways_s"].values()))
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

    def test_a_case_keeps_its_compiled_code(self):
        with tempfile.TemporaryDirectory() as folder:
            case = self.reductions.run_case(
                "cpu",
                "softmax",
                64,
                8,
                "float32",
                False,
                ["eager", "default"],
                code_dir=folder,
            )
            kept = os.listdir(folder)
            # the compiled arm's code, under its case's name; eager has none
            self.assertEqual(kept, ["softmax_8x64_float32_forward_default.py"])
            text = Path(folder, kept[0]).read_text()
        self.assertEqual(
            self.reductions.code_sha([text]), case["arms"]["default"]["code_sha"]
        )

    def test_rounds_time_the_arms_interleaved(self):
        # time_interleaved as run_case calls it on a GPU, here with CPU steps:
        # one arm's call runs two steps, another compiles in the rounds
        x = torch.randn(64, 32)
        expected = torch.softmax(x, -1)
        compiled_late = torch.compile(lambda t: torch.softmax(t, -1) + 0)
        steps = {
            "eager": (lambda: torch.softmax(x, -1), 1),
            "twice": (lambda: [torch.softmax(x, -1) for _ in range(2)][-1], 2),
            "compiled_late": (lambda: compiled_late(x), 1),
        }
        case = {"arms": {arm: {} for arm in steps}}
        import harness

        def fixed_clock(device):
            # every call runs its step and takes 4 ms, whatever it runs, so
            # that the division by the steps a call runs is exact
            return lambda call, repeats: [call() is None or 0.004] * repeats

        torch._dynamo.reset()
        with unittest.mock.patch.object(harness, "step_timer", fixed_clock):
            self.reductions.time_interleaved(case, steps, expected, "cpu", 3, None)
        for entry in case["arms"].values():
            self.assertEqual(len(entry["round_s"]), 3)
            self.assertEqual(entry["spread"], 0)
            self.assertLess(entry["max_abs_diff_after_rounds"], 1e-5)
        # a call of two steps is timed per step
        self.assertEqual(case["arms"]["eager"]["s"], 0.004)
        self.assertEqual(case["arms"]["twice"]["s"], 0.002)
        self.assertEqual(case["graphs_compiled_in_rounds"], 1)
        for entry in case["arms"].values():
            entry["fraction_of_copy"] = 0.5
        case.update(op="softmax", rows=64, row=32, dtype="float32", copy_s=1e-6)
        case["pass"] = "forward"
        self.assertIn("spread", self.reductions.summary_line(case))

    def test_rounds_need_a_gpu_and_cuda_graphs(self):
        with self.assertRaisesRegex(ValueError, "CUDA graph replays"):
            self.reductions.run_case(
                "cpu", "softmax", 64, 8, "float32", False, ["eager"], rounds=3
            )

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

    def test_model_vocabularies_for_all_or_by_model(self):
        import argparse

        import reductions_models

        vocab = reductions_models.vocabularies
        self.assertEqual(vocab("128256"), {"*": 128256})
        self.assertEqual(
            vocab("llama_lm=128256,gpt2_lm=50257"),
            {"llama_lm": 128256, "gpt2_lm": 50257},
        )
        for bad in ("llama_lm=", "0", "x=-3", "big"):
            with self.subTest(bad=bad), self.assertRaises(argparse.ArgumentTypeError):
                vocab(bad)

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


if __name__ == "__main__":
    run_tests()
