# Owner(s): ["module: inductor"]
"""Fusion remarks: every kernel boundary of a compiled graph has one reason.

Each test compiles a real function through ``torch.compile`` with a
``fusion_report.capture()`` active and checks the report against what Inductor
generated: the coverage invariant (every producer->consumer edge between ops in
different kernels has exactly one boundary remark), the kernel count against
``torch._inductor.metrics.generated_kernel_count``, the result against eager,
and, where the text is the product, the ``fusion`` log summary verbatim.
"""

import inspect
import json
import logging
import os
import re
import tempfile
import unittest
from unittest import mock

import torch
import torch._dynamo
import torch._logging
from torch._dynamo.utils import counters
from torch._inductor import fusion_report, metrics
from torch._inductor.fusion_remarks import (
    analysis as fusion_analysis,
    hooks as fusion_hooks,
    recorder as fusion_recorder,
    sinks,
    taxonomy,
)
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import fresh_cache, run_and_get_code
from torch.testing._internal.inductor_utils import GPU_TYPE, HAS_GPU
from torch.testing._internal.logging_utils import LoggingTestCase, make_logging_test


def sin_plus_cos(x):
    return torch.sin(x) + torch.cos(x)


def two_axis_reductions_and_mm_relu(x):
    return x.sum(0).sum() + x.sum(1).sum(), torch.relu(x @ x) * 2


def sums_named_by_kernel(summary):
    """``sum_<n>`` -> ``sum@op<k>``: the FX node number of a sum varies with the
    release, the kernel that computes it does not."""
    names = {
        m.group(2): f"sum@{m.group(1)}"
        for m in re.finditer(r"\[(op\d+)\] (sum_\d+)(?= \| |  \[)", summary)
    }
    return re.sub(r"\bsum_\d+\b", lambda m: names.get(m.group(0), m.group(0)), summary)


def sort_plus_one(x):
    return torch.sort(x).values + 1


def mutate_input(x):
    x.add_(1)
    return x * 2


def cat_sin_cos(x):
    return torch.cat([x.sin(), x.cos()]) * 2


def softmax(x):
    return torch.softmax(x, -1)


def with_graph_break(x):
    y = torch.sin(x) * 2
    torch._dynamo.graph_break()
    return torch.relu(y) + 1


def addmm_through_views(x, w, b):
    y = (x.t().t() @ w) + b
    return torch.relu(y.view(-1).view(y.shape))


def mm_relu(a, b):
    return torch.relu(a @ b) * 2


def capture_compiled(test, fn, *args, **compile_kwargs):
    """Compile ``fn`` under a capture, check it against eager and the invariants."""
    torch._dynamo.reset()
    metrics.reset()
    eager_args = [a.clone() for a in args]
    with fusion_report.capture() as rep:
        out = torch.compile(fn, **compile_kwargs)(*args)
    test.assertEqual(out, fn(*eager_args), atol=1e-2, rtol=1e-2)
    data = rep.to_json()
    json.dumps(data)  # plain JSON
    test.assertGreaterEqual(len(data["graphs"]), 1)
    for graph in data["graphs"]:
        test.assertEqual(fusion_analysis.coverage_violations(graph), [])
    for graph in data["graphs"]:
        test.assertEqual(
            sum(k["generated_kernels"] for k in graph["kernels"]),
            graph["generated_kernel_count"],
        )
    if "max-autotune" not in (compile_kwargs.get("mode") or ""):
        # Without autotuning, nothing but codegen generates kernels.
        test.assertEqual(
            sum(g["generated_kernel_count"] for g in data["graphs"]),
            metrics.generated_kernel_count,
        )
    return rep


def source_lines(text):
    """Name the lines of this file's functions, so edits above them keep the text."""
    for fn in (sin_plus_cos, two_axis_reductions_and_mm_relu):
        line = inspect.getsourcelines(fn)[1] + 1
        text = text.replace(f"test_fusion_remarks.py:{line}]", f"<{fn.__name__}>]")
        text = text.replace(f"test_fusion_remarks.py:{line} ", f"<{fn.__name__}> ")
    return text


def normalize_aot_id(sources):
    return [re.sub(r"# AOT ID: \['\d+_", "# AOT ID: ['N_", src) for src in sources]


def boundaries(rep):
    return [
        (b["producer"], b["consumer"], b["reason"], b["category"])
        for g in rep.graphs
        for b in g["boundaries"]
    ]


class TestFusionRemarks(TestCase):
    def test_sin_cos_are_fused_in_one_kernel(self):
        rep = capture_compiled(self, sin_plus_cos, torch.randn(64))
        self.assertExpectedInline(
            source_lines(rep.summary()),
            """\
graph 0/0 (cpu): 3 ops -> 1 kernel (1 generated, 0 extern)
  cpp_fused_add_cos_sin_0 [op0] (cpp): sin, cos and add, inlined into one loop nest at lowering  [<sin_plus_cos>]
  no boundaries: every dependent pair of ops shares a kernel""",
        )
        fused = {
            (r["ops"][0], r["ops"][1]): r["reason"]
            for r in rep.graphs[0]["remarks"]
            if r["kind"] == "fused"
        }
        self.assertEqual(fused, {("sin", "add"): "inlined", ("cos", "add"): "inlined"})

    def test_two_axis_reductions_and_mm_relu(self):
        rep = capture_compiled(
            self, two_axis_reductions_and_mm_relu, torch.randn(32, 32)
        )
        # The FX graph numbers the four sums in a different order on 2.14.1
        # than on 2.11.0 (sum_2 and sum_3 swap): name each by its kernel.
        self.assertExpectedInline(
            sums_named_by_kernel(source_lines(rep.summary())),
            """\
graph 0/0 (cpu): 8 ops -> 7 kernels (6 generated in 2 functions, 1 extern)
  cpp_fused_add_sum_0 (cpp, one function of 5 loop nests, not fused with each other): [op0] sum@op0 | [op1] sum@op1 | [op2] sum@op2 | [op3] sum@op3 | [op6] add  [<two_axis_reductions_and_mm_relu>]
  extern_kernels.mm [op4] (extern call): mm  [<two_axis_reductions_and_mm_relu>]
  cpp_fused_mul_relu_1 [op5] (cpp): relu and mul, inlined into one loop nest at lowering  [<two_axis_reductions_and_mm_relu>]
  6 boundaries:
    sum@op0 -> sum@op1 (buf0, 128 B, op0 -> op1): cpp_reduction_producer (backend, scheduler) [<two_axis_reductions_and_mm_relu>]: op0 + op1: CppScheduling.can_fuse_vertical: reduction producer with ranges ((32,), (32,)), consumer ranges ((), (32,))
    sum@op2 -> sum@op3 (buf2, 128 B, op2 -> op3): cpp_reduction_producer (backend, scheduler) [<two_axis_reductions_and_mm_relu>]: op2 + op3: CppScheduling.can_fuse_vertical: reduction producer with ranges ((32,), (32,)), consumer ranges ((), (32,))
    sum@op1 -> add (buf1, 4 B, op1 -> op6): cpp_reduction_producer (backend, scheduler) [<two_axis_reductions_and_mm_relu>]: op1 + op6: CppScheduling.can_fuse_vertical: reduction producer with ranges ((), (32,)), consumer ranges ((), ())
    sum@op3 -> add (buf3, 4 B, op3 -> op6): cpp_reduction_producer (backend, scheduler) [<two_axis_reductions_and_mm_relu>]: op3 + op6: CppScheduling.can_fuse_vertical: reduction producer with ranges ((), (32,)), consumer ranges ((), ())
    mm -> relu (buf4, 4.0 KiB, op4 -> op5): extern_kernel (backend, lowering) [<two_axis_reductions_and_mm_relu>]: op4:extern_kernels.mm is an extern kernel
    sum@op0 || sum@op2: no_shared_data (heuristic, scheduler) [<two_axis_reductions_and_mm_relu>]: op0 + op2: no shared data: both access arg0_1, but no memory access of one matches one of the other""",
        )
        graph = rep.graphs[0]
        realized = {
            r["buffers"][0]: r["reason"]
            for r in graph["remarks"]
            if r["stage"] == "lowering" and r["kind"] == "analysis" and r["buffers"]
        }
        self.assertEqual(realized["buf0"], "reduction_output")
        mm_relu = next(b for b in graph["boundaries"] if b["producer"] == "mm")
        self.assertEqual(mm_relu["stage"], "lowering")

    def test_sort_is_a_fallback_kernel(self):
        rep = capture_compiled(self, sort_plus_one, torch.randn(8, 16))
        self.assertEqual(
            boundaries(rep), [("sort", "add", "fallback_kernel", "backend")]
        )
        kinds = sorted(k["kind"] for k in rep.graphs[0]["kernels"])
        self.assertEqual(kinds, ["cpp", "fallback"])

    def test_input_mutation_fuses(self):
        rep = capture_compiled(self, mutate_input, torch.randn(8, 16))
        graph = rep.graphs[0]
        self.assertEqual(graph["boundaries"], [])
        self.assertEqual(len(graph["kernels"]), 1)
        self.assertIn("copy_", graph["kernels"][0]["ops"])

    def test_cat_written_in_place(self):
        rep = capture_compiled(self, cat_sin_cos, torch.randn(8, 16))
        graph = rep.graphs[0]
        cat = next(op for op in graph["ops"] if op["name"] == "cat")
        self.assertEqual(cat["eliminated"], "cat_in_place")
        # sin and cos write slices of the cat's buffer, which mul reads: that
        # buffer crosses (once per kernel writing it), under a name the
        # scheduler does not see the writers share
        self.assertEqual(
            {b[1:] for b in boundaries(rep)},
            {("mul", "no_common_buffer", "not_considered")},
        )
        crossing = graph["boundaries"]
        self.assertEqual(len({b["buffer"] for b in crossing}), 1)
        self.assertEqual(
            {op for b in crossing for op in b["producer_ops"]}, {"sin", "cos"}
        )

    def test_softmax_is_one_kernel(self):
        rep = capture_compiled(self, softmax, torch.randn(8, 16))
        graph = rep.graphs[0]
        self.assertEqual(len(graph["kernels"]), 1)
        self.assertEqual(graph["boundaries"], [])
        self.assertEqual(
            sorted(graph["kernels"][0]["ops"]), ["amax", "div", "exp", "sub", "sum_1"]
        )

    def test_graph_break_gives_one_report_per_graph(self):
        rep = capture_compiled(self, with_graph_break, torch.randn(8, 16))
        self.assertEqual([g["compile_id"] for g in rep.graphs], ["0/0", "1/0"])
        self.assertEqual(
            [[op["name"] for op in g["ops"]] for g in rep.graphs],
            [["sin", "mul"], ["relu", "add"]],
        )

    def test_training_reports_forward_and_backward(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)
        )
        torch._dynamo.reset()
        metrics.reset()
        with fusion_report.capture() as rep:
            torch.compile(model)(torch.randn(8, 16)).sum().backward()
        self.assertEqual([g["compile_id"] for g in rep.graphs], ["0/0", "0/0 backward"])
        for graph in rep.graphs:
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])
        forward = boundaries(rep)[:2]
        self.assertEqual(
            forward,
            [
                ("addmm", "relu", "extern_kernel", "backend"),
                ("relu", "addmm_1", "extern_kernel", "backend"),
            ],
        )
        self.assertEqual(
            sum(k["generated_kernels"] for g in rep.graphs for k in g["kernels"]),
            metrics.generated_kernel_count,
        )

    def test_warm_cache_is_bypassed_while_capturing(self):
        x = torch.randn(64)
        with torch._inductor.config.patch(fx_graph_cache=True):
            for _ in range(2):
                torch._dynamo.reset()
                counters.clear()
                torch.compile(sin_plus_cos)(x)
            # The cache is warm: the second compile skipped the scheduler.
            self.assertEqual(counters["inductor"]["fxgraph_cache_hit"], 1)
            torch._dynamo.reset()
            counters.clear()
            with fusion_report.capture() as rep:
                torch.compile(sin_plus_cos)(x)
            self.assertEqual(counters["inductor"]["fxgraph_cache_hit"], 0)
        self.assertEqual(len(rep.graphs), 1)
        self.assertEqual(rep.graphs[0]["cache"], "bypassed")
        self.assertIn(
            ("analysis", "cache_bypassed", "cache"),
            [(r["kind"], r["reason"], r["stage"]) for r in rep.graphs[0]["remarks"]],
        )
        self.assertEqual(len(rep.graphs[0]["kernels"]), 1)

    def test_generated_code_is_identical_with_remarks_on(self):
        cases = [
            (sin_plus_cos, torch.randn(64)),
            (two_axis_reductions_and_mm_relu, torch.randn(16, 16)),
            (softmax, torch.randn(8, 16)),
            (cat_sin_cos, torch.randn(8, 16)),
        ]
        for fn, x in cases:
            with self.subTest(fn=fn.__name__):
                torch._dynamo.reset()
                with torch._inductor.config.patch(fx_graph_cache=False):
                    _, plain = run_and_get_code(torch.compile(fn), x)
                torch._dynamo.reset()
                with fusion_report.capture() as rep:
                    _, remarked = run_and_get_code(torch.compile(fn), x)
                self.assertEqual(len(rep.graphs), 1)
                # Only the AOT graph counter in the header differs between compiles.
                self.assertEqual(normalize_aot_id(plain), normalize_aot_id(remarked))

    def test_instrumentation_fault_does_not_fail_the_compile(self):
        def broken(*args, **kwargs):
            raise RuntimeError("injected fault")

        self.addCleanup(setattr, fusion_recorder, "_reported_failure", False)
        fusion_recorder._reported_failure = False
        torch._dynamo.reset()
        x = torch.randn(64)
        with (
            mock.patch.object(fusion_analysis, "analyze_graph", broken),
            self.assertLogs(fusion_recorder.log, level="WARNING") as logs,
            fusion_report.capture() as rep,
        ):
            out = torch.compile(sin_plus_cos)(x)
            torch._dynamo.reset()
            torch.compile(softmax)(x.view(8, 8))
        self.assertEqual(out, sin_plus_cos(x))
        self.assertEqual(rep.graphs, [])
        # Reported once, not once per graph.
        self.assertEqual(len(logs.records), 1)
        self.assertIn("injected fault", logs.output[0])

    def test_remarks_cost_nothing_when_off(self):
        # With no capture and no fusion log, the hooks record nothing and no
        # graph reaches the sinks; under a capture the same compile's does.
        self.assertFalse(fusion_recorder.is_enabled())
        with mock.patch.object(sinks, "publish", wraps=sinks.publish) as published:
            torch._dynamo.reset()
            torch.compile(sin_plus_cos)(torch.randn(64))
            self.assertEqual(published.call_count, 0)
            torch._dynamo.reset()
            with fusion_report.capture() as rep:
                torch.compile(sin_plus_cos)(torch.randn(64))
            self.assertEqual(published.call_count, 1)
            self.assertEqual(len(rep.graphs), 1)

    def test_hooks_do_nothing_more_than_one_check_when_off(self):
        # Off: a realize rule tags nothing, a realizing helper runs bare, and
        # the epilogue rule's callables are never called.  On (a capture),
        # the same calls tag and decide.
        self.assertFalse(fusion_recorder.is_enabled())

        def never():
            raise AssertionError("evaluated while nothing listens")

        @fusion_hooks.realizes_for(taxonomy.Reason.GRAPH_OUTPUT, rule=True)
        def helper():
            return list(fusion_hooks._realize_tags)

        node = mock.Mock()
        node.has_aliasing_or_mutation.return_value = False
        node.is_reduction.return_value = True
        fusion_hooks.begin_realize_rule(taxonomy.Reason.GRAPH_OUTPUT)
        self.assertEqual(fusion_hooks._realize_tags, [])
        fusion_hooks.end_realize_rule()
        self.assertEqual(helper(), [])
        self.assertIsNone(
            fusion_hooks.epilogue_code(node, reduction_allowed=never, enabled=never)
        )
        with fusion_report.capture():
            fusion_hooks.begin_realize_rule(taxonomy.Reason.GRAPH_OUTPUT)
            self.assertEqual(len(fusion_hooks._realize_tags), 1)
            fusion_hooks.end_realize_rule()
            self.assertEqual(len(helper()), 1)
            self.assertEqual(
                fusion_hooks.epilogue_code(node, reduction_allowed=lambda: False),
                taxonomy.Reason.EPILOGUE_REDUCTION,
            )
        self.assertEqual(fusion_hooks._realize_tags, [])

    def test_json_schema(self):
        rep = capture_compiled(self, two_axis_reductions_and_mm_relu, torch.randn(8, 8))
        data = rep.to_json()
        self.assertEqual(data["schema_version"], fusion_report.SCHEMA_VERSION)
        self.assertEqual(data["reasons"]["would_create_cycle"]["category"], "legality")
        graph = data["graphs"][0]
        self.assertTrue(
            {"compile_id", "device", "ops", "edges", "kernels", "boundaries", "remarks"}
            <= set(graph)
        )
        self.assertEqual(
            set(graph["ops"][0]) - {"eliminated"},
            {"name", "target", "computes", "kernels", "source"},
        )
        for kernel in graph["kernels"]:
            self.assertIn(
                kernel["kind"],
                {"cpp", "triton", "template", "foreach", "extern", "fallback"},
            )
        for boundary in graph["boundaries"]:
            self.assertIn(boundary["reason"], data["reasons"])
            self.assertEqual(
                boundary["category"], data["reasons"][boundary["reason"]]["category"]
            )
            self.assertIn(boundary["relation"], {"dependency", "shared_input"})
        ops = {op["name"] for op in graph["ops"]}
        for edge in graph["edges"]:
            self.assertIn(edge["producer"], ops)
            self.assertIn(edge["consumer"], ops)

    def test_trace_structured_artifact(self):
        payloads = []

        class Collect(logging.Handler):
            def emit(self, record):
                metadata = record.metadata
                if (
                    metadata.get("artifact", {}).get("name")
                    == "inductor_fusion_remarks"
                ):
                    payloads.append(json.loads(record.payload))

        trace_log = torch._logging._internal.trace_log
        handler = Collect()
        trace_log.addHandler(handler)
        self.addCleanup(trace_log.removeHandler, handler)
        # TORCH_TRACE alone (no capture, no fusion log) turns the remarks on.
        with (
            tempfile.TemporaryDirectory() as trace_dir,
            mock.patch.dict(os.environ, {"TORCH_TRACE": trace_dir}),
            mock.patch.object(trace_log, "level", logging.DEBUG),
        ):
            self.assertTrue(fusion_recorder.is_enabled())
            torch.compile(sin_plus_cos)(torch.randn(64))
        self.assertEqual(len(payloads), 1)
        self.assertEqual(payloads[0]["schema_version"], fusion_report.SCHEMA_VERSION)
        self.assertEqual(
            payloads[0]["graph"]["kernels"][0]["ops"], ["add", "sin", "cos"]
        )

    def test_fx_pass_remarks(self):
        rep = capture_compiled(
            self,
            addmm_through_views,
            torch.randn(8, 8),
            torch.randn(8, 8),
            torch.randn(8),
        )
        passes = [r for r in rep.graphs[0]["remarks"] if r["stage"] == "fx_pass"]
        self.assertTrue(passes)
        matched = [r for r in passes if r["args"].get("matches")]
        self.assertTrue(matched, passes)
        for remark in passes:
            self.assertEqual(remark["reason"], "fx_pass_rewrote_graph")
            self.assertNotEqual(
                (remark["args"]["erased"], remark["args"]["created"]), (0, 0)
            )
        self.assertIn("fx passes: pattern_matcher", rep.summary())
        kinds = sorted(k["kind"] for k in rep.graphs[0]["kernels"])
        self.assertEqual(kinds, ["cpp", "extern"])

    def test_dynamic_shapes(self):
        rep = capture_compiled(
            self, two_axis_reductions_and_mm_relu, torch.randn(16, 16), dynamic=True
        )
        self.assertEqual(len(rep.graphs), 1)
        self.assertEqual(len(rep.graphs[0]["boundaries"]), 6)


@unittest.skipUnless(HAS_GPU, "needs a GPU")
class TestFusionRemarksGPU(TestCase):
    def test_sin_cos_one_triton_kernel(self):
        rep = capture_compiled(self, sin_plus_cos, torch.randn(1024, device=GPU_TYPE))
        (kernel,) = rep.graphs[0]["kernels"]
        self.assertEqual(kernel["kind"], "triton")
        self.assertTrue(kernel["function"].startswith("triton_"), kernel["function"])
        self.assertEqual(sorted(kernel["ops"]), ["add", "cos", "sin"])

    def test_two_axis_reductions_and_mm_relu(self):
        rep = capture_compiled(
            self,
            two_axis_reductions_and_mm_relu,
            torch.randn(256, 256, device=GPU_TYPE),
        )
        reasons = {b["reason"] for b in rep.graphs[0]["boundaries"]}
        self.assertIn("extern_kernel", reasons)

    def test_max_autotune_template_epilogue(self):
        a = torch.randn(256, 256, device=GPU_TYPE)
        b = torch.randn(256, 256, device=GPU_TYPE)
        # Decide the epilogue by Inductor's rules, not by a noisy benchmark
        # (2.15.0 renamed the option; the old name is a deprecated alias).
        config = torch._inductor.config
        benchmark = (
            "benchmark_template_fusion"
            if hasattr(config, "benchmark_template_fusion")
            else "benchmark_epilogue_fusion"
        )
        with config.patch({"max_autotune_gemm_backends": "TRITON", benchmark: False}):
            rep = capture_compiled(
                self, mm_relu, a, b, mode="max-autotune-no-cudagraphs"
            )
        graph = rep.graphs[0]
        templates = [k for k in graph["kernels"] if k["kind"] == "template"]
        self.assertEqual(len(templates), 1)
        self.assertEqual(sorted(templates[0]["ops"]), ["mm", "mul", "relu"])
        fused = {r["reason"] for r in graph["remarks"] if r["kind"] == "fused"}
        self.assertIn("fused_template_epilogue", fused)

    def test_reduce_overhead_mode(self):
        rep = capture_compiled(
            self, softmax, torch.randn(64, 128, device=GPU_TYPE), mode="reduce-overhead"
        )
        self.assertEqual(len(rep.graphs[0]["kernels"]), 1)


class TestFusionLog(LoggingTestCase):
    @make_logging_test(fusion=True)
    def test_fusion_log_answers_does_inductor_fuse_sin_and_cos(self, records):
        torch.compile(sin_plus_cos)(torch.randn(64))
        summaries = [
            r.getMessage()
            for r in records
            if r.name.endswith("__fusion") and r.getMessage().startswith("graph ")
        ]
        self.assertEqual(len(summaries), 1)
        self.assertExpectedInline(
            source_lines(summaries[0]),
            """\
graph 0/0 (cpu): 3 ops -> 1 kernel (1 generated, 0 extern)
  cpp_fused_add_cos_sin_0 [op0] (cpp): sin, cos and add, inlined into one loop nest at lowering  [<sin_plus_cos>]
  no boundaries: every dependent pair of ops shares a kernel""",
        )

    def fusion_summaries(self, records):
        return [
            source_lines(r.getMessage())
            for r in records
            if r.name.endswith("__fusion") and " ops -> " in r.getMessage()
        ]

    @make_logging_test(fusion=True)
    def test_warm_cache_replays_the_stored_remarks(self, records):
        x = torch.randn(64)
        with fresh_cache(), torch._inductor.config.patch(fx_graph_cache=True):
            for _ in range(2):
                torch._dynamo.reset()
                counters.clear()
                torch.compile(sin_plus_cos)(x)
            hits = counters["inductor"]["fxgraph_cache_hit"]
        self.assertEqual(hits, 1)  # the second compile skipped the scheduler
        first, replayed = self.fusion_summaries(records)
        self.assertExpectedInline(
            replayed,
            """\
graph 0/0 (cpu, replayed from the FX graph cache (compiled as 0/0)): 3 ops -> 1 kernel (1 generated, 0 extern)
  cpp_fused_add_cos_sin_0 [op0] (cpp): sin, cos and add, inlined into one loop nest at lowering  [<sin_plus_cos>]
  no boundaries: every dependent pair of ops shares a kernel""",
        )
        self.assertEqual(replayed.split("\n")[1:], first.split("\n")[1:])

    @make_logging_test(fusion=True)
    def test_warm_cache_written_with_remarks_off_says_so(self, records):
        x = torch.randn(64)
        with fresh_cache(), torch._inductor.config.patch(fx_graph_cache=True):
            with mock.patch.object(fusion_recorder, "is_enabled", return_value=False):
                torch.compile(sin_plus_cos)(x)
            torch._dynamo.reset()
            torch.compile(sin_plus_cos)(x)
        self.assertEqual(self.fusion_summaries(records), [])
        notices = [
            r.getMessage() for r in records if "FX graph cache" in r.getMessage()
        ]
        self.assertEqual(len(notices), 1)
        self.assertIn(
            "written with fusion remarks off: cache_hit_without_remarks", notices[0]
        )
        self.assertIn("TORCHINDUCTOR_FORCE_DISABLE_CACHES=1", notices[0])


class TestEnablement(TestCase):
    def test_set_logs_turns_the_remarks_on_and_off(self):
        self.addCleanup(torch._logging.set_logs)
        with mock.patch.dict(os.environ):
            os.environ.pop("TORCH_TRACE", None)
            os.environ.pop("TORCH_DTRACE", None)
            torch._logging.set_logs(fusion=True)
            self.assertTrue(fusion_recorder.is_enabled())
            torch._logging.set_logs()
            self.assertFalse(fusion_recorder.is_enabled())


class TestTaxonomy(TestCase):
    def test_every_reason_has_category_and_description(self):
        for reason in taxonomy.Reason:
            self.assertIn(reason, taxonomy.REASON_INFO)
            self.assertTrue(reason.description)
            self.assertRegex(reason.value, r"^[a-z][a-z0-9_]*$")

    def test_docs_table_matches_the_enum(self):
        docs = os.path.join(
            os.path.dirname(__file__),
            "..",
            "..",
            "docs",
            "source",
            "torch.compiler_fusion_remarks.md",
        )
        with open(docs) as f:
            rows = [
                line.split("|")
                for line in f
                if line.startswith("| `") and line.count("|") >= 4
            ]
        table = {row[1].strip().strip("`"): row[2].strip() for row in rows}
        expected = {r.value: r.category.value for r in taxonomy.Reason}
        self.assertEqual(table, expected)


if __name__ == "__main__":
    run_tests()
