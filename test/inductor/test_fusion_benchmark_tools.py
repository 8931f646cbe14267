# Owner(s): ["module: inductor"]
"""The benchmark tools around the fusion reports: the GPU lock that lets
processes compile side by side but time one at a time, the bandwidth
benchmark, and the side-by-side reports of Inductor and the FX fusion arm.
Real compiles on the CPU; the GPU runs are in benchmarks/results/."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks" / "fusion"
sys.path.insert(0, str(BENCHMARKS))

import bandwidth  # noqa: E402
import fx_compare  # noqa: E402
from measure import exclusive_device  # noqa: E402


class TestGpuLock(TestCase):
    def test_a_held_lock_excludes_another_process(self):
        probe = textwrap.dedent(
            """
            import fcntl, sys
            with open(sys.argv[1], "a") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    print("held")
                else:
                    print("free")
            """
        )
        with tempfile.TemporaryDirectory() as tmp:
            lock = os.path.join(tmp, "gpu.lock")

            def other_process() -> str:
                return subprocess.run(
                    [sys.executable, "-c", probe, lock],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()

            with exclusive_device(lock):
                self.assertEqual(other_process(), "held")
            self.assertEqual(other_process(), "free")

    def test_ablation_jobs_need_the_lock(self):
        result = subprocess.run(
            [
                sys.executable,
                str(BENCHMARKS / "ablation.py"),
                *("--device", "cpu", "--models", "sin_cos", "--jobs", "2"),
            ],
            capture_output=True,
            text=True,
        )
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--jobs N needs --gpu-lock", result.stderr)


class TestBandwidth(TestCase):
    def test_every_arm_matches_eager_and_is_priced(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bw.json"
            code = bandwidth.main(
                [
                    *("--device", "cpu", "--arms", "eager,fusion_only,fx_fusion"),
                    *("--json", str(out)),
                ]
            )
            self.assertEqual(code, 0)
            result = json.loads(out.read_text())
            table = out.with_suffix(".md").read_text()
        rows = result["rows"]
        self.assertEqual(
            {(r["case"], r["arm"]) for r in rows},
            {
                (c, a)
                for c in bandwidth.CASES
                for a in ("eager", "fusion_only", "fx_fusion")
            },
        )
        self.assertGreater(result["copy_bandwidth_gbs"], 0)
        for r in rows:
            self.assertTrue(r["matches_eager"], r)
            # inputs + outputs (+ layer norm's weight and bias), each once
            numel = 1
            for n in r["shape"]:
                numel *= n
            extra = 2 * 1024 * 4 if r["case"] == "layer_norm_gelu" else 0
            self.assertEqual(r["bytes"], 2 * numel * 4 + extra)
            if r["arm"] == "fusion_only":
                self.assertEqual(r["throughput_vs_fusion_only"], 1.0)
            self.assertIn(f"| {r['case']} |", table)

    def test_unknown_arm_is_refused(self):
        with self.assertRaises(SystemExit) as e:
            bandwidth.main(["--device", "cpu", "--arms", "eager,fusion_everything"])
        self.assertIn("fusion_everything", str(e.exception))


class TestFxCompare(TestCase):
    def test_both_arms_fuse_layer_norm_gelu_into_one_kernel(self):
        rows = fx_compare.compare("layer_norm_gelu", "cpu", "ci")
        self.assertEqual([r["arm"] for r in rows], ["fusion_only", "fx_fusion"])
        for r in rows:
            self.assertEqual(r["kernels_generated"], 1, r)
            self.assertEqual(r["unfused_ops"], 0, r)
            self.assertEqual(r["violations"], 0, r)

    def test_a_library_kernel_is_a_boundary_in_both_reports(self):
        rows = fx_compare.compare("resnet18", "cpu", "ci")
        for r in rows:
            self.assertGreater(r["by_reason"]["extern_kernel"]["count"], 0, r)
            self.assertEqual(r["violations"], 0, r)


if __name__ == "__main__":
    run_tests()
