# Owner(s): ["module: inductor"]
"""Fusion remarks at the level of memory: every buffer that one kernel writes
and another reads has exactly one boundary.

One test for each kind of crossing the op-level invariant missed (loop nests
that recompute the same ops, a layout copy feeding an extern call, a buffer
updated in place, a mutated graph input, a fallback's tuple outputs, a
generated kernel feeding the attention backward's fallback), each compiled for
real and checked against the buffers of the generated code
(``fusion_code_crossings``: the wrapper's calls and the C++ functions' loop
nests, read without the fork's analysis); and a test that the records the
analysis reads hold plain data, no scheduler or IR object.
"""

import dataclasses
import os
import sys
import unittest
from unittest import mock

import torch
import torch._dynamo
import torch.nn.functional as F
from torch._inductor import fusion_report, ir, scheduler
from torch._inductor.fusion_remarks import analysis, hooks
from torch._inductor.fusion_remarks.summary import render_graph
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.inductor_utils import GPU_TYPE, HAS_GPU


HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from fusion_code_crossings import (  # noqa: E402
    code_crossing_problems,
    cpp_crossing_problems,
    cpp_function_crossings,
    run_and_get_graph_codes,
    WrapperCrossings,
)


def label_smoothing_cross_entropy(logits, target):
    logp = F.log_softmax(logits.float(), -1)
    nll = -logp.gather(1, target[:, None]).mean()
    p = logp.exp()
    entropy = -(p * logp).sum(-1).mean()
    return nll * 0.9 + 0.1 * entropy


def add_then_mm(x, w):
    x.add_(1)
    return x @ w


def sort_values_plus_indices(x):
    values, indices = torch.sort(x)
    return values + indices


def scaled_attention(q, k, v):
    return F.scaled_dot_product_attention(q * 2, k, v).sum()


def compile_checked(test, fn, *args, backward=False, module=None, mode=None):
    """Compile ``fn`` under a capture; check every graph's crossings against
    the analysis's invariant and the generated code.  Returns the graphs and
    their wrappers' code."""
    torch._dynamo.reset()

    def run():
        out = torch.compile(module or fn, mode=mode)(*args)
        if backward:
            (out.sum() if out.dim() else out).backward()
        return out

    with fusion_report.capture() as rep:
        _, codes = run_and_get_graph_codes(run)
    graphs = rep.to_json()["graphs"]
    test.assertEqual(len(codes), len(graphs))
    test.assertTrue(any(graph["crossings"] for graph in graphs))
    for graph, code in zip(graphs, codes):
        test.assertEqual(analysis.coverage_violations(graph), [])
        test.assertEqual(
            code_crossing_problems(graph, code) + cpp_crossing_problems(graph, code),
            [],
        )
    return graphs, codes


_COMPILED: dict[str, tuple[list, list]] = {}


def cross_entropy_training(test):
    """The label-smoothing cross-entropy's training step on the CPU, compiled
    and checked once for the tests that read it."""
    if "cross_entropy" not in _COMPILED:
        _COMPILED["cross_entropy"] = compile_checked(
            test,
            label_smoothing_cross_entropy,
            torch.randn(64, 1000, requires_grad=True),
            torch.randint(0, 1000, (64,)),
            backward=True,
        )
    return _COMPILED["cross_entropy"]


def dependencies(graph):
    return [b for b in graph["boundaries"] if b["relation"] == "dependency"]


def kernels_by_name(graph):
    return {k["name"]: k for k in graph["kernels"]}


class TestCrossings(TestCase):
    def test_loop_nests_that_recompute_the_same_ops(self):
        """log_softmax's loop nests recompute ``sub``; buffers still cross
        between them, each with its boundary, stored by one loop nest of the
        C++ function and loaded by a later one."""
        graphs, codes = cross_entropy_training(self)
        forward, code = graphs[0], codes[0]
        kernels = kernels_by_name(forward)
        recomputing = [
            b
            for b in dependencies(forward)
            if set(kernels[b["kernels"][0]]["ops"])
            & set(kernels[b["kernels"][1]]["ops"])
        ]
        self.assertTrue(recomputing)  # the op-level invariant skipped these
        (function,) = {kernels[k]["function"] for k in recomputing[0]["kernels"]}
        call = next(
            line
            for line in code.splitlines()
            if line.strip().startswith(function + "(")
        )
        args = [a.strip() for a in call.strip()[len(function) + 1 : -1].split(",")]
        stored_then_loaded = {
            WrapperCrossings(code, {function}).root(b)
            for b in cpp_function_crossings(forward["kernel_sources"][function], args)
        }
        wrapper = WrapperCrossings(code, {function})
        for b in recomputing:
            self.assertIn(wrapper.root(b["buffer"]), stored_then_loaded)
            self.assertTrue(b["producer_ops"] and b["consumer_ops"], b)
            self.assertGreater(b["args"]["bytes"], 0)
        # the log says it, and counts the graph's boundaries with a plural
        text = render_graph(forward)
        self.assertIn(
            f" ({recomputing[0]['buffer']}, {recomputing[0]['args']['bytes']} B, ", text
        )
        self.assertIn(f"  {len(forward['boundaries'])} boundaries:", text)

    def test_batch_norm_statistics_feed_the_normalizing_loop_nest(self):
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU()
        )
        graphs, _ = compile_checked(
            self, None, torch.randn(2, 3, 16, 16), backward=True, module=model
        )
        forward = graphs[0]
        statistics = [
            b for b in dependencies(forward) if "var_mean" in b["producer_ops"]
        ]
        # the mean and the variance both cross into the normalizing loop nest
        self.assertGreaterEqual(len({b["buffer"] for b in statistics}), 2)
        for b in statistics:
            self.assertNotIn("var_mean", b["consumer_ops"])
            self.assertEqual(b["reason"], "no_shared_data")
            # the heuristic decided first; the C++ backend's own check, asked
            # afterwards, refuses a reduction producer over other ranges too
            self.assertEqual(
                b["args"]["backend_also_refuses"], ["cpp_reduction_producer"]
            )
            self.assertIn("the backend would refuse it too", b["detail"])

    def test_layout_copy_feeding_an_extern_convolution(self):
        conv = torch.nn.Conv2d(3, 8, 3)
        graphs, codes = compile_checked(
            self, None, torch.randn(2, 3, 16, 16), module=conv
        )
        graph, code = graphs[0], codes[0]
        kernels = kernels_by_name(graph)
        copies = [
            b
            for b in dependencies(graph)
            if kernels[b["kernels"][0]]["copy_for"] == ["convolution"]
        ]
        self.assertTrue(copies)
        for b in copies:
            self.assertEqual(b["reason"], "extern_kernel")
            self.assertEqual(b["consumer"], "convolution")
            required = b["args"]["layout_required"]
            self.assertIn(f"stride {required['stride']}", b["detail"])
            self.assertIn("the layout the call requires", b["detail"])
            # channels-last: the channel stride is 1
            self.assertEqual(required["stride"][1], 1)
            self.assertRegex(
                code, rf"extern_kernels\.convolution\([^)]*\b{b['buffer']}\b"
            )

    def test_buffer_updated_in_place_by_a_library_call(self):
        """The backward's scatter_add updates a buffer in place: the buffer
        crosses into the call and out of it again, two boundaries naming it."""
        graphs, codes = cross_entropy_training(self)
        backward, code = graphs[1], codes[1]
        kernels = kernels_by_name(backward)
        (scatter,) = [k for k in kernels if "scatter" in k]
        into = {
            b["buffer"] for b in dependencies(backward) if b["kernels"][1] == scatter
        }
        out_of = {
            b["buffer"] for b in dependencies(backward) if b["kernels"][0] == scatter
        }
        self.assertTrue(into & out_of)
        (updated,) = into & out_of
        self.assertRegex(code, rf"scatter_reduce_\.two\({updated},")

    def test_mutated_graph_input(self):
        x, w = torch.randn(8, 8), torch.randn(8, 8)
        graphs, code = compile_checked(self, add_then_mm, x, w)
        graph = graphs[0]
        (into_mm,) = [
            b
            for b in dependencies(graph)
            if b["kernels"][1].endswith("extern_kernels.mm")
        ]
        # the buffer is the graph input itself, as the code names it
        self.assertIn(into_mm["buffer"], code[0])
        self.assertRegex(code[0], rf"extern_kernels\.mm\({into_mm['buffer']},")
        self.assertEqual(into_mm["producer_ops"], ["add"])
        self.assertEqual(into_mm["reason"], "extern_kernel")

    def test_fallback_tuple_outputs(self):
        graphs, codes = compile_checked(
            self, sort_values_plus_indices, torch.randn(8, 16)
        )
        graph = graphs[0]
        (sort,) = [k for k in graph["kernels"] if k["kind"] == "fallback"]
        out = [b for b in dependencies(graph) if b["kernels"][0] == sort["name"]]
        # values and indices: two outputs selected from the call's tuple, two
        # buffers, each one boundary
        self.assertEqual(len({b["buffer"] for b in out}), 2)
        for b in out:
            self.assertEqual(b["reason"], "fallback_kernel")
            self.assertRegex(codes[0], rf"\b{b['buffer']} = buf\d+\[\d\]")

    def test_generated_kernel_feeding_the_attention_backward(self):
        q, k, v = (torch.randn(2, 2, 16, 8, requires_grad=True) for _ in range(3))
        graphs, _ = compile_checked(self, scaled_attention, q, k, v, backward=True)
        backward = next(g for g in graphs if g["compile_id"].endswith("backward"))
        kernels = kernels_by_name(backward)
        into_call = [
            b
            for b in dependencies(backward)
            if kernels[b["kernels"][1]]["kind"] == "fallback"
            and kernels[b["kernels"][0]]["kind"] == "cpp"
        ]
        self.assertTrue(into_call)
        for b in into_call:
            self.assertEqual(b["reason"], "fallback_kernel")

    def test_inputs_from_names_the_kernel_that_wrote_the_buffer(self):
        conv = torch.nn.Conv2d(3, 8, 3)
        graphs, _ = compile_checked(self, None, torch.randn(2, 3, 16, 16), module=conv)
        (line,) = [
            line
            for line in render_graph(graphs[0]).splitlines()
            if "extern_kernels.convolution [" in line
        ]
        copies = [k for k in graphs[0]["kernels"] if k["copy_for"]]
        buffers = sorted(
            b["buffer"]
            for b in dependencies(graphs[0])
            if b["kernels"][1].endswith("convolution")
        )
        self.assertIn(
            f"inputs from {copies[0]['function']}: {' and '.join(buffers)}", line
        )


@unittest.skipUnless(HAS_GPU, "needs a GPU")
class TestCrossingsGPU(TestCase):
    """The same invariant over Triton kernels and library calls, checked
    against the wrapper's kernel launches."""

    def test_label_smoothing_cross_entropy_training(self):
        graphs, _ = compile_checked(
            self,
            label_smoothing_cross_entropy,
            torch.randn(64, 1000, device=GPU_TYPE, requires_grad=True),
            torch.randint(0, 1000, (64,), device=GPU_TYPE),
            backward=True,
        )
        self.assertTrue(
            any(k["kind"] == "triton" for g in graphs for k in g["kernels"])
        )

    def test_linear_layer_norm_gelu_training(self):
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.GELU()
        ).to(GPU_TYPE)
        graphs, _ = compile_checked(
            self,
            None,
            torch.randn(32, 64, device=GPU_TYPE),
            backward=True,
            module=model,
        )
        into_mm = [
            b
            for g in graphs
            for b in dependencies(g)
            if b["kernels"][1].partition(":")[2].startswith("extern_kernels.")
        ]
        self.assertTrue(into_mm)

    def test_recurrent_steps_of_autotuned_templates_are_not_shared_inputs(self):
        """Under max-autotune each step's matmul is a Triton template that
        reads the same weights, and the scheduler tries a template pair in
        both orders: steps a chain of kernels apart are dependent, never a
        shared-input boundary, and no boundary is the reversed try's
        ``wrong_order`` (the H200's GRU had 4032 such boundaries before)."""

        w = torch.randn(64, 64, device=GPU_TYPE)
        u = torch.randn(64, 64, device=GPU_TYPE)

        def steps(x, h):
            for t in range(4):
                h = torch.tanh(x[t] @ w + h @ u)
            return h

        graphs, _ = compile_checked(
            self,
            steps,
            torch.randn(4, 64, 64, device=GPU_TYPE),
            torch.zeros(64, 64, device=GPU_TYPE),
            mode="max-autotune-no-cudagraphs",
        )
        self.assertTrue(
            any(k["kind"] == "template" for g in graphs for k in g["kernels"])
        )
        for graph in graphs:
            self.assertNotIn("wrong_order", {b["reason"] for b in graph["boundaries"]})
            later = {}  # kernel -> the kernels its buffers reach
            for c in graph["crossings"]:
                later.setdefault(c["producer"], set()).add(c["consumer"])

            def reaches(a, b, later=later):
                seen, todo = set(), [a]
                while todo:
                    for n in later.get(todo.pop(), ()):
                        if n == b:
                            return True
                        if n not in seen:
                            seen.add(n)
                            todo.append(n)
                return False

            for b in graph["boundaries"]:
                if b["relation"] == "shared_input":
                    first, second = b["kernels"]
                    self.assertFalse(
                        reaches(first, second) or reaches(second, first), b
                    )

    def test_autotuned_split_k_candidates_are_no_graphs(self):
        """Max-autotune times a GEMM whose K is far larger than M and N as a
        subgraph split along K, compiling a module of its own for each split
        (``benchmark_*`` lowerings): ``run_and_get_code`` returns those too
        (ConvNeXt-T's training step on the H200: 22 wrappers for 2 graphs),
        so the code check could not pair wrappers with graphs.  The graphs'
        own wrappers are one per graph, and each agrees with its report."""
        a = torch.randn(32, 8192, device=GPU_TYPE)
        b = torch.randn(8192, 32, device=GPU_TYPE)

        def mm_relu(a, b):
            return torch.relu(a @ b)

        def run():
            return torch.compile(mm_relu, mode="max-autotune-no-cudagraphs")(a, b)

        _, every_module = run_and_get_code(run)
        self.assertGreater(len(every_module), 1)
        graphs, codes = compile_checked(
            self, mm_relu, a, b, mode="max-autotune-no-cudagraphs"
        )
        self.assertEqual((len(graphs), len(codes)), (1, 1))


class MmReluSum(torch.nn.Module):
    def forward(self, x, w):
        return torch.relu(x @ w).sum(0) * 2


class TestAheadOfTime(TestCase):
    def test_an_aot_inductor_graph_is_reported(self):
        """AOT Inductor builds no CompiledFxGraph: its graph is analysed and
        published from compile_fx all the same."""
        ep = torch.export.export(MmReluSum(), (torch.randn(8, 8), torch.randn(8, 8)))
        with fusion_report.capture() as rep:
            torch._inductor.aoti_compile_and_package(ep)
        (graph,) = rep.to_json()["graphs"]
        self.assertEqual(analysis.coverage_violations(graph), [])
        (crossing,) = dependencies(graph)
        self.assertEqual(
            (crossing["producer"], crossing["consumer"], crossing["reason"]),
            ("mm", "relu", "extern_kernel"),
        )


class TestViolationsAreSaid(TestCase):
    def test_a_crossing_without_a_boundary_is_a_violation_and_the_log_says_so(self):
        graphs, _ = compile_checked(self, sort_values_plus_indices, torch.randn(8, 16))
        graph = dict(graphs[0])
        dropped = dependencies(graph)[0]
        graph["boundaries"] = [b for b in graph["boundaries"] if b is not dropped]
        problems = analysis.coverage_violations(graph)
        self.assertEqual(len(problems), 1)
        self.assertIn(dropped["buffer"], problems[0])
        graph["coverage_violations"] = problems
        self.assertIn(
            f"coverage: 1 crossing without exactly one boundary: {problems[0]}",
            render_graph(graph),
        )


def break_then_nothing(x):
    y = (x * 2).sum()
    torch._dynamo.graph_break()
    return y


def two_axis_sums(x):
    return x.sum(0).sum() + x.sum(1).sum()


class TestTrueWords(TestCase):
    def test_a_break_names_only_compiled_graphs(self):
        torch._dynamo.reset()
        with fusion_report.capture() as rep:
            torch.compile(break_then_nothing)(torch.randn(8))
        (graph,) = rep.graphs
        text = rep.summary()
        self.assertIn("with no graph compiled after it", text)
        # Dynamo started a frame after the break, which compiled nothing
        self.assertNotIn("before 1/0", text)
        self.assertIn(f"after graph {graph['compile_id']}", text)

    def test_no_shared_data_says_what_both_access_and_claims_no_more(self):
        graphs, _ = compile_checked(self, two_axis_sums, torch.randn(16, 16))
        (shared,) = [
            b for b in graphs[0]["boundaries"] if b["relation"] == "shared_input"
        ]
        self.assertEqual(shared["reason"], "no_shared_data")
        self.assertIn("both access arg0_1", shared["detail"])
        self.assertNotIn("would be saved", shared["detail"])
        # 16 sums of 16 each way: the C++ backend would take both in one loop
        self.assertNotIn("backend_also_refuses", shared["args"])
        # 32 sums of 16 and 16 of 32: the backend's own check would refuse too
        graphs, _ = compile_checked(self, two_axis_sums, torch.randn(16, 32))
        (shared,) = [
            b for b in graphs[0]["boundaries"] if b["relation"] == "shared_input"
        ]
        self.assertEqual(shared["reason"], "no_shared_data")
        self.assertEqual(
            shared["args"]["backend_also_refuses"], ["cpp_ranges_incompatible"]
        )
        self.assertIn(
            "the backend would refuse it too: cpp_ranges_incompatible", shared["detail"]
        )

    def test_a_heuristic_refusal_the_backend_would_accept_says_nothing_more(self):
        """x.sin() and x.cos() share x over the same ranges: refused only by
        the score threshold, which the C++ backend would have fused past."""
        from torch._inductor import config

        torch._dynamo.reset()
        with config.patch(score_fusion_memory_threshold=10**9):
            with fusion_report.capture() as rep:
                torch.compile(lambda x: (x.sin(), x.cos()))(torch.randn(64))
        (graph,) = rep.to_json()["graphs"]
        self.assertEqual(analysis.coverage_violations(graph), [])
        (shared,) = [b for b in graph["boundaries"] if b["relation"] == "shared_input"]
        self.assertEqual(shared["reason"], "score_below_threshold")
        self.assertNotIn("backend_also_refuses", shared["args"])
        self.assertNotIn("would refuse it too", shared["detail"])
        self.assertEqual(shared["args"]["threshold"], 10**9)

    def test_one_boundary_is_one_boundary(self):
        graphs, _ = compile_checked(
            self, lambda a, b: torch.relu(a @ b), torch.randn(8, 8), torch.randn(8, 8)
        )
        text = render_graph(graphs[0])
        self.assertIn("  1 boundary:", text)
        self.assertNotIn("boundaries:", text)


_LIVE = (scheduler.BaseSchedulerNode, scheduler.Scheduler, ir.IRNode, torch.fx.Node)


def live_objects(value, path="records", seen=None):
    """Paths inside ``value`` that hold a scheduler, IR or FX object."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, _LIVE):
        return [path]
    found = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            found += live_objects(
                getattr(value, field.name), f"{path}.{field.name}", seen
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            found += live_objects(key, f"{path}[key]", seen)
            found += live_objects(item, f"{path}[{key!r}]", seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            found += live_objects(item, f"{path}[{i}]", seen)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        for key, item in vars(value).items():
            found += live_objects(item, f"{path}.{key}", seen)
    return found


class TestPlainRecords(TestCase):
    def test_the_records_hold_no_scheduler_object(self):
        recorders = []
        compiled = hooks.graph_compiled

        def keep(graph):
            recorders.append(graph._fusion_recorder)
            return compiled(graph)

        with mock.patch.object(hooks, "graph_compiled", side_effect=keep):
            compile_checked(
                self,
                label_smoothing_cross_entropy,
                torch.randn(16, 100, requires_grad=True),
                torch.randint(0, 100, (16,)),
                backward=True,
            )
        self.assertEqual(len(recorders), 2)  # forward and backward
        for recorder in recorders:
            self.assertIsNotNone(recorder.kernel_map)
            self.assertTrue(recorder.verdicts)
            self.assertEqual(live_objects(recorder), [])
        # the check finds one where there is one
        self.assertEqual(
            live_objects({"a": [torch.fx.Graph().placeholder("x")]}),
            ["records['a'][0]"],
        )

    def test_an_extern_kernel_whose_origins_name_a_graph_input(self):
        """On the H200, one extern kernel of max-autotune's MobileNetV3
        training step had a graph input among its origins, and the analysis
        stopped with a KeyError on it (the compile went on, that graph
        unreported).  The records of a relu feeding a matmul, that kernel's
        origins given the weight's graph input too, analyse to one boundary
        a crossing, naming no graph input among its ops."""
        recorders = []
        compiled = hooks.graph_compiled

        def keep(graph):
            recorders.append(graph._fusion_recorder)
            return compiled(graph)

        w = torch.randn(32, 32)
        with mock.patch.object(hooks, "graph_compiled", side_effect=keep):
            compile_checked(self, lambda x: torch.relu(x) @ w, torch.randn(32, 32))
        (recorder,) = recorders
        kmap = recorder.kernel_map
        written = {b for k in kmap.kernels for b in k.writes}
        (extern,) = [k for k in kmap.kernels if k.kind == "extern"]
        graph_inputs = sorted(extern.reads - written)
        self.assertTrue(graph_inputs)
        extern.origins = [*extern.origins, *graph_inputs]
        report = analysis.analyze_graph(kmap, recorder, recorder.label)
        self.assertEqual(analysis.coverage_violations(report), [])
        (into_mm,) = [b for b in dependencies(report) if b["kernels"][1] == extern.name]
        self.assertFalse(set(graph_inputs) & set(into_mm["consumer_ops"]))


if __name__ == "__main__":
    run_tests()
