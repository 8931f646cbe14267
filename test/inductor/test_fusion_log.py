# Owner(s): ["module: inductor"]
"""The ``fusion`` log as a user reads it.

``TORCH_LOGS=fusion`` is the fork's per-graph summary and nothing else;
``TORCH_LOGS=+fusion`` adds the detail (each evaluated pair once, and
upstream's own scheduler dumps).  The summary names kernels as the generated
code does: on the CPU one line per generated C++ function with the loop nests
it holds, layout copies named as copies.  Each test compiles real functions
through the fork and compares with the generated code (the README's log
example: tools/test/test_readme_quick_start.py).
"""

import copy
import functools
import os
import re
from pathlib import Path
from unittest import mock

import torch
import torch._dynamo
from torch._inductor import fusion_report
from torch._inductor.fusion_remarks import recorder as fusion_recorder
from torch._inductor.fusion_remarks.analysis import coverage_violations
from torch._inductor.fusion_remarks.summary import render_graph
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


def masked_attention(x, w):
    """GPT-2's attention, small: q, k and v are three slices of one matmul."""
    q, k, v = (x @ w).split(16, dim=2)
    q, k, v = (t.view(2, 8, 2, 8).transpose(1, 2) for t in (q, k, v))
    mask = torch.tril(torch.ones(8, 8)) == 0
    att = (q @ k.transpose(-2, -1)).masked_fill(mask, float("-inf")).softmax(-1)
    return att @ v


def rows_twice(x):
    return x.new_ones(x.shape[0] * 2, 4).sum(0) + torch.cat([x, x]).mean(0)


def twelve_pointwise_ops(x):
    for i in range(12):
        x = x.sin() if i % 2 else x.cos()
    return x


@functools.cache
def conv_training_step():
    """The capture of a convolution's forward and backward graphs (the
    backward computes convolution_backward's gradient input in a generated
    kernel) and their summary, compiled once."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3)
    with fusion_report.capture() as rep:
        torch.compile(lambda x: torch.relu(conv(x)).div(3).sum())(
            torch.randn(2, 3, 8, 8)
        ).backward()
    return rep.to_json(), rep.summary()


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
        # a kernel is a loop nest: the functions that hold them are counted apart
        nests = sum(1 for k in rep.graphs[0]["kernels"] if k["kind"] == "cpp")
        self.assertGreater(nests, len(functions))
        self.assertIn(
            f"-> {nests + externs} kernels "
            f"({nests} generated in {len(functions)} functions, {externs} extern)",
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
        # the header counts what was generated: each loop nest, in one function
        self.assertIn(
            f"-> {nests} kernels ({nests} generated in 1 function, 0 extern)", lines[0]
        )

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


class TestFusionLogLabels(TestCase):
    """Each label says what the generated code does."""

    def capture(self, fn, *args, **compile_kwargs):
        torch._dynamo.reset()
        with fusion_report.capture() as rep:
            torch.compile(fn, **compile_kwargs)(*args)
        return rep

    def test_extern_call_lists_what_it_computes_and_names_its_inputs(self):
        data, summary = conv_training_step()
        (backward,) = [
            g for g in data["graphs"] if g["compile_id"].endswith(" backward")
        ]
        (call,) = [k for k in backward["kernels"] if k["kind"] == "fallback"]
        # Inductor's origins of the call also name the ops of its unrealized
        # input (the relu gradient), which a generated kernel computes
        self.assertEqual(call["ops"], ["convolution_backward"])
        ops = {op["name"]: op for op in backward["ops"]}
        inputs = [n for n in call["input_ops"] if ops[n]["computes"]]
        self.assertIn("where", inputs)
        makers = {k for n in inputs for k in ops[n]["kernels"]}
        self.assertEqual(
            {k["kind"] for k in backward["kernels"] if k["name"] in makers}, {"cpp"}
        )
        (function,) = {
            k["function"] for k in backward["kernels"] if k["name"] in makers
        }
        self.assertIn(function, backward["kernel_sources"])
        (line,) = [x for x in summary.splitlines() if "(fallback call)" in x]
        computed, _, rest = line.partition("(fallback call): ")[2].partition("; ")
        self.assertEqual(computed, "convolution_backward")
        self.assertTrue(rest.startswith(f"inputs from {function}: "), line)
        for name in inputs:
            self.assertIn(name, rest)
        # the buffer crosses from that kernel into the call: a boundary, also
        # where the kernel computes part of convolution_backward too (2.14.1
        # lowers its bias gradient into the kernel that computes `where`)
        kinds = {k["name"]: k["kind"] for k in backward["kernels"]}
        generated_too = any(
            kinds[k] == "cpp" for k in ops["convolution_backward"]["kernels"]
        )
        into_call = [
            b
            for b in backward["boundaries"]
            if b["relation"] == "dependency"
            and b["kernels"][1] == call["name"]
            and b["kernels"][0] in makers
        ]
        self.assertTrue(into_call)
        self.assertEqual({b["reason"] for b in into_call}, {"fallback_kernel"})
        self.assertTrue(any("where" in b["producer_ops"] for b in into_call))
        # the call's op is the call's, not a side op of the kernel feeding it
        self.assertFalse(
            any("convolution_backward" in b["producer_ops"] for b in into_call)
        )
        self.assertEqual(coverage_violations(backward), [])
        # `where` is computed once; convolution_backward twice only where a
        # generated kernel does part of it
        recomputed = [
            op
            for r in backward["remarks"]
            if r["reason"] == "recomputed"
            for op in r["ops"]
        ]
        self.assertEqual(recomputed, ["convolution_backward"] if generated_too else [])

    def test_copies_of_graph_inputs_are_named_copies(self):
        data, summary = conv_training_step()
        forward = data["graphs"][0]
        ops = {op["name"] for op in forward["ops"]}
        # the loop nests that copy the input and weight to channels-last:
        # Inductor's origins name only the graph input each copies
        copies = [k for k in forward["kernels"] if k["copy_for"] == ["convolution"]]
        self.assertEqual(len(copies), 2, summary)
        for k in copies:
            self.assertEqual([n for n in k["ops"] if n in ops], ["convolution"])
            self.assertIn(k["function"], forward["kernel_sources"])
        self.assertIn(
            "[op0] layout copy for convolution | [op1] layout copy for convolution",
            summary,
        )
        self.assertNotRegex(summary, r"\] -( |$)")

    def test_shared_input_pairs_are_named_by_the_ops_they_compute(self):
        rep = self.capture(masked_attention, torch.randn(2, 8, 16), torch.randn(16, 48))
        graph = rep.graphs[0]
        ops = {op["name"]: op for op in graph["ops"]}
        kernels = {k["name"]: k for k in graph["kernels"]}
        shared = [b for b in graph["boundaries"] if b["relation"] == "shared_input"]
        # the three copies of q, k and v all read the matmul's output
        # through its view: each pair is named by the copies, not the view
        self.assertEqual(
            sorted((b["producer"], b["consumer"]) for b in shared),
            [("clone", "clone_1"), ("clone", "clone_2"), ("clone_1", "clone_2")],
        )
        for b in shared:
            for op, kernel in zip((b["producer"], b["consumer"]), b["kernels"]):
                self.assertTrue(ops[op]["computes"])
                self.assertIn(op, kernels[kernel]["ops"])

    def test_shared_input_pairs_alike_are_one_line(self):
        rep = self.capture(masked_attention, torch.randn(2, 8, 16), torch.randn(16, 48))
        graph = copy.deepcopy(rep.graphs[0])
        # as if two more pairs of loop nests were refused between the same
        # two ops (a kernel computing an op another also computes)
        (first, *_) = [
            b for b in graph["boundaries"] if b["relation"] == "shared_input"
        ]
        for kernels in (["opA", "opB"], ["opC", "opD"]):
            graph["boundaries"].append(dict(first, kernels=kernels))
        lines = [x for x in render_graph(graph).splitlines() if " || " in x]
        self.assertEqual(len(lines), 3)
        self.assertTrue(
            lines[0].endswith(
                "(and 2 more pairs of kernels alike: opA + opB and opC + opD)"
            ),
            lines[0],
        )

    def test_a_size_computed_by_its_users_is_said_in_words(self):
        rep = self.capture(rows_twice, torch.randn(5, 4), dynamic=True)
        graph = rep.graphs[0]
        (mul,) = [op for op in graph["ops"] if op["name"] == "mul"]
        self.assertEqual((mul["eliminated"], mul["kernels"]), ("symbolic_scalar", []))
        self.assertIn(
            "\n  mul: no kernel: a size (a scalar of symbolic shapes), not a tensor: "
            "each kernel or wrapper line that uses it computes its expression",
            rep.summary(),
        )
        # the kernel's loop runs to twice the rows: it computes x.shape[0] * 2
        (source,) = graph["kernel_sources"].values()
        self.assertRegex(source, r"x\d+<static_cast<int64_t>\(2L\*ks0\)")

    def test_long_lists_fold(self):
        rep = self.capture(twelve_pointwise_ops, torch.randn(16))
        (kernel,) = rep.graphs[0]["kernels"]
        self.assertEqual(len(kernel["ops"]), 12)  # the JSON names every op
        self.assertIn(
            "[op0] (cpp): cos, sin, cos_1, sin_1, cos_2, sin_2, cos_3, sin_3 and 4 "
            "more, inlined into one loop nest at lowering",
            rep.summary(),
        )


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
