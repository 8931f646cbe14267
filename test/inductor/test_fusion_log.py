# Owner(s): ["module: inductor"]
"""The ``fusion`` log as a user reads it.

``TORCH_LOGS=fusion`` is the fork's per-graph summary and nothing else;
``TORCH_LOGS=+fusion`` adds the detail (each evaluated pair once, and
upstream's own scheduler dumps).  The summary names kernels as the generated
code does: on the CPU one line per generated C++ function with the loop nests
it holds, layout copies named as copies.  Each test compiles real functions
through the fork and compares with the generated code; the README's log
example is run and compared line by line.
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import torch
import torch._dynamo
from torch._inductor import fusion_report
from torch._inductor.fusion_remarks import recorder as fusion_recorder
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import fresh_cache, run_and_get_code
from torch.testing._internal.logging_utils import LoggingTestCase, make_logging_test


REPO = Path(__file__).resolve().parents[2]


def two_axis_reductions_and_mm_relu(x):
    return x.sum(0).sum() + x.sum(1).sum(), torch.relu(x @ x) * 2


def add_mul_relu_sin_sum(x):
    return torch.sin(torch.relu(x + 1) * 2).sum()


def two_convs(x, w1, w2):
    conv2d = torch.nn.functional.conv2d
    return conv2d(torch.relu(conv2d(x, w1, padding=1)), w2, padding=1)


def fusion_messages(records, level=None):
    return [
        r.getMessage()
        for r in records
        if r.name.endswith("__fusion") and (level is None or r.levelno == level)
    ]


def summaries(records):
    return [m for m in fusion_messages(records) if re.match(r"graph \S+ \(", m)]


def generated_functions(code):
    """The C++ kernel functions an output module defines, by name."""
    return re.findall(r"^(cpp_fused_\w+) = async_compile\.cpp_pybinding", code, re.M)


class TestFusionLogLevels(LoggingTestCase):
    """Which records ``fusion`` and ``+fusion`` show."""

    @make_logging_test(fusion=True)
    def test_plain_log_is_the_fork_summary_only(self, records):
        with mock.patch.dict(os.environ, {"TORCH_LOGS": "fusion"}):
            torch.compile(two_axis_reductions_and_mm_relu)(torch.randn(16, 16))
        names = {r.name for r in records}
        # upstream's scheduler logs nothing at DEBUG without '+'
        self.assertFalse(
            [r for r in records if r.name.startswith("torch._inductor.scheduler")],
            names,
        )
        self.assertEqual(len(summaries(records)), 1)
        self.assertNotIn("evaluated pairs", "\n".join(fusion_messages(records)))

    @make_logging_test(fusion=True)
    def test_verbose_log_adds_upstream_dumps_and_each_pair_once(self, records):
        with mock.patch.dict(os.environ, {"TORCH_LOGS": "+fusion"}):
            with fusion_report.capture() as rep:
                torch.compile(two_axis_reductions_and_mm_relu)(torch.randn(16, 16))
        upstream = [
            r for r in records if r.name == "torch._inductor.scheduler.__fusion"
        ]
        self.assertTrue(upstream)  # the counterfactual of the test above
        self.assertTrue(all(r.levelno == 10 for r in upstream))
        (pairs,) = [m for m in fusion_messages(records) if "evaluated pairs" in m]
        evaluated = rep.graphs[0]["evaluated_pairs"]
        distinct = {(p["first"], p["second"]) for p in evaluated}
        # the scheduler evaluates each pair in two passes: the JSON keeps both
        self.assertGreater(len(evaluated), len(distinct))
        lines = pairs.splitlines()
        self.assertEqual(lines[0], f"graph 0/0: {len(distinct)} evaluated pairs")
        listed = [tuple(line.split(":")[0].strip().split(" + ")) for line in lines[1:]]
        self.assertEqual(sorted(listed), sorted(distinct))
        self.assertIn("op0 + op1: rejected, cpp_reduction_producer", pairs)

    @make_logging_test(fusion=True)
    def test_verbose_log_after_a_cache_hit_says_what_needs_a_fresh_compile(
        self, records
    ):
        """A graph replayed from the FX graph cache skipped the scheduler, so
        upstream's dumps are missing: the pairs' line says so and how to get
        them; a graph of one scheduler node says why there is no pair."""
        x = torch.randn(64)
        with (
            mock.patch.dict(os.environ, {"TORCH_LOGS": "+fusion"}),
            fresh_cache(),
            torch._inductor.config.patch(fx_graph_cache=True),
        ):
            for _ in range(2):
                torch._dynamo.reset()
                torch.compile(lambda x: torch.sin(x) + torch.cos(x))(x)
        first, replayed = [
            m for m in fusion_messages(records) if "evaluated pairs" in m
        ]
        why = "0 evaluated pairs: the scheduler had 1 node, nothing to pair"
        self.assertEqual(first, f"graph 0/0: {why}")
        self.assertEqual(
            replayed.splitlines(),
            [
                f"graph 0/0: {why}",
                "  replayed from the FX graph cache: the pairs recorded when it was "
                "compiled; upstream's scheduler dumps of +fusion need a fresh "
                "compile (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1)",
            ],
        )
        # the scheduler dumped its rounds for the first compile only
        rounds = [r for r in records if "attempting fusion" in r.getMessage()]
        self.assertEqual(len(rounds), 1)


class TestFusionLogSummary(TestCase):
    """The summary's names and counts against the generated code."""

    def compile_with_summary(self, fn, *args):
        torch._dynamo.reset()
        with fusion_report.capture() as rep:
            _, (code,) = run_and_get_code(torch.compile(fn), *args)
        return rep, code

    def test_cpu_kernels_are_the_generated_functions(self):
        rep, code = self.compile_with_summary(
            two_axis_reductions_and_mm_relu, torch.randn(16, 16)
        )
        functions = generated_functions(code)
        summary = rep.summary()
        header = summary.splitlines()[0]
        externs = len(re.findall(r"extern_kernels\.mm\(", code))
        self.assertIn(
            f"-> {len(functions) + externs} kernels "
            f"({len(functions)} generated, {externs} extern)",
            header,
        )
        for function in functions:  # one line each, named as in the code
            self.assertEqual(summary.count(f"  {function} "), 1, summary)
        # the reductions' function holds five loop nests the scheduler did not fuse
        self.assertRegex(
            summary, r"cpp_fused_add_sum_0 \(cpp, one function of 5 loop nests"
        )

    def test_no_fusion_lists_one_function_with_its_loop_nests(self):
        with torch._inductor.config.patch(no_fusion=True):
            rep, code = self.compile_with_summary(add_mul_relu_sin_sum, torch.randn(64))
        (function,) = generated_functions(code)
        lines = rep.summary().splitlines()
        (line,) = [line for line in lines if function in line]
        nests = len(rep.graphs[0]["kernels"])
        self.assertGreater(nests, 1)
        self.assertIn(f"one function of {nests} loop nests", line)
        self.assertIn("-> 1 kernel (1 generated, 0 extern)", lines[0])

    def test_sin_cos_add_say_inlined_at_lowering(self):
        rep, _ = self.compile_with_summary(
            lambda x: torch.sin(x) + torch.cos(x), torch.randn(64)
        )
        self.assertIn(
            "sin, cos and add, inlined into one loop nest at lowering", rep.summary()
        )

    def test_layout_copies_are_named_copies(self):
        # Two convolutions turn on layout optimization: the C++ backend copies
        # the first convolution's input and weight to channels-last.
        args = (
            torch.randn(1, 3, 16, 16),
            torch.randn(8, 3, 3, 3),
            torch.randn(8, 8, 3, 3),
        )
        rep, _ = self.compile_with_summary(two_convs, *args)
        graph = rep.graphs[0]
        summary = rep.summary()
        copies = [k for k in graph["kernels"] if k.get("copy_for")]
        self.assertTrue(copies, summary)
        self.assertIn("convolution", {n for k in copies for n in k["copy_for"]})
        self.assertIn("layout copy for convolution", summary)
        # the convolution is in three kernels (two copies and the extern call)
        (conv,) = [op for op in graph["ops"] if op["name"] == "convolution"]
        self.assertGreater(len(conv["kernels"]), 1)
        # but computed in one: a copy does not compute it again
        recomputed = {
            op
            for r in graph["remarks"]
            if r["reason"] == "recomputed"
            for op in r["ops"]
        }
        self.assertFalse(recomputed & {"convolution", "convolution_1"}, recomputed)
        # a kernel that computes relu and copies it for the next convolution
        # still computes relu
        self.assertTrue(
            all(
                "relu" not in k["copy_for"]
                for k in graph["kernels"]
                if "relu" in k["ops"]
            )
        )

    def test_empty_capture_says_so(self):
        with fusion_report.capture() as rep:
            pass
        self.assertIn("no compiled graph", rep.summary())


class TestReadmeLogExample(TestCase):
    """The README's log example is what the fork prints."""

    def readme_blocks(self):
        text = (REPO / "README.md").read_text()
        section = text[text.index("## Quick start") :]
        program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        output = re.search(r"```text\n(.*?)```", section, re.S).group(1)
        return program, output

    def test_quick_start_reaches_the_log_within_60_lines(self):
        """The README starts with the answer: install (both routes), the
        command, and the log's output, all within its first 60 lines; the
        commands are the ones tests run (this class runs the example;
        tools/test/test_fork_install.py runs ``tools/fork.py install``)."""
        head = (REPO / "README.md").read_text().splitlines()[:60]
        text = "\n".join(head)
        self.assertIn("## Quick start", text)
        self.assertIn("make develop", text)
        self.assertIn("bin/python tools/fork.py install", text)
        self.assertIn("TORCH_LOGS=fusion python example.py", text)
        self.assertTrue(any(line.startswith("[__fusion] graph ") for line in head))

    def test_readme_example_output(self):
        program, expected = self.readme_blocks()
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "example.py").write_text(program)
            env = dict(
                os.environ,
                TORCH_LOGS="fusion",
                TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
                TORCHINDUCTOR_CACHE_DIR=tmp,
            )
            env.pop("TORCH_TRACE", None)
            result = subprocess.run(
                [sys.executable, "example.py"],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        printed = []
        in_record = False
        for line in result.stderr.splitlines():
            if line.startswith("[__fusion] "):
                in_record = True
            elif not line.startswith("  "):
                in_record = False
            if in_record:
                printed.append(line)
        self.assertEqual("\n".join(printed) + "\n", expected)
        # the summary is nearly all the log prints
        self.assertGreaterEqual(len(printed), 0.8 * len(result.stderr.splitlines()))


class TestVerboseSetting(TestCase):
    def test_plus_fusion_is_read_from_torch_logs(self):
        for settings, verbose in [
            ("fusion", False),
            ("+fusion", True),
            ("dynamo,+fusion", True),
            ("+fusion_other", False),
            ("+inductor,fusion", False),
        ]:
            with mock.patch.dict(os.environ, {"TORCH_LOGS": settings}):
                self.assertEqual(
                    fusion_recorder.verbose_log_requested(), verbose, settings
                )


if __name__ == "__main__":
    run_tests()
