# Owner(s): ["module: inductor"]
"""The FX fusion arm: ``torch.compile(model, backend="fx_fusion")``.

Real compiles on the CPU (C++ kernels from ``fx_fusion.codegen``): which ops
the pass fuses, the boundaries it leaves and their reasons (in the fusion
report's schema, so one report holds Inductor's graphs and these), training,
mutation, and an OpInfo sweep of the ops it fuses against eager.
"""

import copy
import sys
import unittest
from pathlib import Path

import fx_fusion
import torch
import torch._dynamo
from fx_fusion import codegen
from fx_fusion.ir import Level
from torch._inductor import fusion_report
from torch._inductor.fusion_remarks import analysis as fusion_analysis
from torch._inductor.test_case import run_tests, TestCase
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.inductor_utils import HAS_CUDA_AND_TRITON
from torch.testing._internal.logging_utils import LoggingTestCase, make_logging_test


# The benchmark models of the repository this package lives in
# (packages/fx_fusion/test/ is three levels below its root).
BENCHMARKS = str(Path(__file__).resolve().parents[3] / "benchmarks" / "fusion")


def sin_plus_cos(x):
    return torch.sin(x) + torch.cos(x)


def layer_norm_gelu(x, w, b):
    y = torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)
    return torch.nn.functional.gelu(y)


def softmax(x):
    return torch.softmax(x, -1)


def broadcast_chain(x, bias, scale, gate):
    # bias [C], scale [N, 1]: loaded with stride 0; gate.sigmoid() [C] is only
    # read here, so it is recomputed in the [N, C] kernel.
    return (x + bias).relu() * scale * gate.sigmoid()


def sin_mm_cos(x, w):
    return (x.sin() @ w).cos()


def would_be_cycle(x, w):
    a = x.sin()
    b = a @ w  # a -> mm -> add and a -> add: fusing a with add is a cycle
    return a + b


def add_in_place(x):
    x.add_(1)
    return x.sin() * 2


def two_reductions(x):
    return (x.sum(1, keepdim=True) * x).sum(0)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.norm(self.fc1(x))))


def compile_fx(fn, **options):
    return torch.compile(fn, backend="fx_fusion", dynamic=False, options=options)


class FxFusionTestCase(TestCase):
    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def capture(self, fn, *args, **options):
        """Compile and run ``fn`` under a fusion report capture; check it against eager."""
        torch._dynamo.reset()
        eager_args = copy.deepcopy(args)
        with fusion_report.capture() as rep:
            actual = compile_fx(fn, **options)(*args)
        expected = fn(*eager_args)
        self.assertEqual(actual, expected, atol=1e-5, rtol=1e-5)
        self.assertEqual(args, eager_args)  # mutated inputs too
        for a, e in zip(_flat(actual), _flat(expected)):
            self.assertEqual(a.stride(), e.stride())
            self.assertEqual(a.dtype, e.dtype)
        data = rep.to_json()
        fusion_report.validate(data)
        for graph in data["graphs"]:
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])
        return data["graphs"]

    def generated(self, graph):
        return [k for k in graph["kernels"] if k["kind"] == "cpp"]

    def boundary(self, graph, producer, consumer):
        found = [
            b
            for b in graph["boundaries"]
            if b["producer"] == producer and b["consumer"] == consumer
        ]
        self.assertEqual(len(found), 1, graph["boundaries"])
        return found[0]


def _flat(value):
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in _flat(v)]


class TestFxFusion(FxFusionTestCase):
    def test_backend_is_registered(self):
        self.assertIn("fx_fusion", torch._dynamo.list_backends())

    def test_sin_cos_is_one_kernel(self):
        (graph,) = self.capture(sin_plus_cos, torch.randn(64))
        self.assertEqual(len(graph["kernels"]), 1)
        (kernel,) = graph["kernels"]
        self.assertEqual((kernel["kind"], kernel["generated_kernels"]), ("cpp", 1))
        self.assertEqual(sorted(kernel["ops"]), ["add", "cos", "sin"])
        self.assertEqual(graph["boundaries"], [])
        fused = {r["reason"] for r in graph["remarks"] if r["kind"] == "fused"}
        self.assertEqual(fused, {"fx_fused"})
        self.assertEqual(graph["generated_kernel_count"], 1)

    def test_layer_norm_gelu_is_one_kernel(self):
        (graph,) = self.capture(
            layer_norm_gelu, torch.randn(6, 32), torch.randn(32), torch.randn(32)
        )
        (kernel,) = self.generated(graph)
        computing = [op["name"] for op in graph["ops"] if op["computes"]]
        self.assertEqual(sorted(kernel["ops"]), sorted(computing))
        self.assertIn("erf", kernel["ops"])
        self.assertEqual(graph["boundaries"], [])

    def test_softmax_is_one_group_with_two_reductions(self):
        x = torch.randn(6, 32)
        (graph,) = self.capture(softmax, x)
        (kernel,) = graph["kernels"]
        targets = {op["name"]: op["target"] for op in graph["ops"]}
        reductions = sorted(
            targets[n]
            for n in kernel["ops"]
            if "amax" in targets[n] or "sum" in targets[n]
        )
        self.assertEqual(reductions, ["aten.amax.default", "aten.sum.dim_IntList"])
        # The same through the public partition() on a make_fx graph.
        gm = make_fx(softmax, decomposition_table=fx_fusion.decomposition_table())(x)
        (group,) = fx_fusion.partition(gm)
        self.assertEqual(len(group.reduce_axes), 1)
        part = fx_fusion.partition_graph(gm.graph)
        plan = fx_fusion.build_kernel_plan(part, part.groups[0])
        self.assertEqual((plan.spec.outer_shape, plan.spec.reduce_shape), ((6,), (32,)))
        reduce_ops = [s.op for s in plan.spec.stmts if s.level == Level.OUTER]
        self.assertIn("amax", reduce_ops)
        self.assertIn("sum", reduce_ops)

    def test_broadcast_chain_is_one_kernel(self):
        (graph,) = self.capture(
            broadcast_chain,
            torch.randn(4, 8),
            torch.randn(8),
            torch.randn(4, 1),
            torch.randn(8),
        )
        self.assertEqual(len(graph["kernels"]), 1)
        self.assertEqual(graph["boundaries"], [])

    def test_matmul_stays_eager(self):
        (graph,) = self.capture(sin_mm_cos, torch.randn(4, 8), torch.randn(8, 3))
        kinds = {k["name"]: k["kind"] for k in graph["kernels"]}
        self.assertEqual(kinds["mm:aten.mm.default"], "extern")
        for producer, consumer in (("sin", "mm"), ("mm", "cos")):
            b = self.boundary(graph, producer, consumer)
            self.assertEqual(
                (b["reason"], b["category"], b["stage"]),
                ("extern_kernel", "backend", "fx_fusion"),
            )
            self.assertEqual(b["args"]["bytes"], 4 * (32 if producer == "sin" else 12))

    def test_mutated_input_stays_out(self):
        (graph,) = self.capture(add_in_place, torch.randn(16))
        copy_kernel = next(k for k in graph["kernels"] if k["kind"] == "extern")
        self.assertTrue(copy_kernel["name"].startswith("copy_:"))
        self.assertEqual(sorted(self.generated(graph)[0]["ops"]), ["add", "mul", "sin"])
        b = self.boundary(graph, "add", "copy_")
        self.assertEqual(
            (b["reason"], b["category"], b["fusible"]), ("mutation", "legality", False)
        )

    def test_in_place_op_keeps_its_order(self):
        # make_fx without functionalization: add_ is in the graph; y must be
        # computed before it and z after it.
        def f(x):
            y = x * 2 + 1
            x.add_(1)
            z = x.sin() + 1
            return y, z

        x = torch.randn(16)
        fused = fx_fusion.compile_module(f, [x.clone()], publish=False)
        gm_targets = [n.target for n in fused.graph.nodes if n.op == "call_function"]
        self.assertIn(torch.ops.aten.add_.Tensor, gm_targets)
        a, b = x.clone(), x.clone()
        self.assertEqual(fused(a), f(b))
        self.assertEqual(a, b)
        report = fused.meta["fx_fusion"].report
        reasons = {
            (b["producer"], b["consumer"]): b["reason"] for b in report["boundaries"]
        }
        self.assertIn("mutation", reasons.values())

    def test_would_be_cycle_is_refused(self):
        (graph,) = self.capture(would_be_cycle, torch.randn(4, 4), torch.randn(4, 4))
        b = self.boundary(graph, "sin", "add")
        self.assertEqual(
            (b["reason"], b["category"], b["fusible"]),
            ("would_create_cycle", "legality", False),
        )
        pairs = [p for p in graph["evaluated_pairs"] if p["second"] == "add"]
        self.assertEqual([p["reason"] for p in pairs], ["would_create_cycle"])

    def test_reduction_over_other_dims_is_a_boundary(self):
        (graph,) = self.capture(two_reductions, torch.randn(6, 8))
        b = self.boundary(graph, "mul", "sum_2")
        self.assertEqual(
            (b["reason"], b["category"]), ("fx_reduction_mismatch", "backend")
        )

    def test_views_inside_and_across_groups(self):
        # unsqueeze of a reduction result is followed inside the group.
        (graph,) = self.capture(lambda x: x - x.sum(-1)[:, None], torch.randn(6, 8))
        self.assertEqual(len(graph["kernels"]), 1)
        # A reshape that merges dims is a boundary.
        (graph,) = self.capture(lambda x: x.sin().reshape(48).cos(), torch.randn(6, 8))
        b = self.boundary(graph, "sin", "cos")
        self.assertEqual(b["reason"], "fx_view_not_folded")
        # A view of a graph input is read through its strides.
        (graph,) = self.capture(lambda x: x.t().sin() * 2, torch.randn(6, 8))
        self.assertEqual(len(graph["kernels"]), 1)

    def test_output_strides_match_eager(self):
        # softmax over dim 0 iterates transposed: its output is copied back to
        # eager's strides; a permuted computation keeps eager's layout.
        self.capture(lambda x: torch.softmax(x, 0), torch.randn(6, 8))
        self.capture(lambda x: x.permute(1, 0).exp() + 1, torch.randn(6, 8))
        self.capture(lambda x: torch.var_mean(x, 0), torch.randn(6, 8))

    def test_siblings_share_a_kernel(self):
        (graph,) = self.capture(lambda x: (x.sum(-1), x.amax(-1)), torch.randn(6, 8))
        self.assertEqual(len(graph["kernels"]), 1)

    def test_training_matches_eager_gradients(self):
        torch.manual_seed(0)
        model = MLP()
        reference = copy.deepcopy(model)
        x = torch.randn(4, 8)
        with fusion_report.capture() as rep:
            compile_fx(model)(x).square().sum().backward()
        reference(x).square().sum().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            self.assertEqual(p.grad, q.grad, atol=1e-5, rtol=1e-5)
        data = rep.to_json()
        fusion_report.validate(data)
        ids = [g["compile_id"] for g in data["graphs"]]
        self.assertEqual(ids, ["0/0", "0/0 backward"])
        for graph in data["graphs"]:
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])
            self.assertTrue(self.generated(graph))
        forward = data["graphs"][0]
        fused = max(self.generated(forward), key=lambda k: len(k["ops"]))
        self.assertIn("erf", fused["ops"])  # layer norm and gelu in one kernel

    def test_report_compares_with_inductor(self):
        x, w = torch.randn(8, 8), torch.randn(8, 8)
        with fusion_report.capture() as rep:
            torch._dynamo.reset()
            torch.compile(sin_mm_cos)(x, w)
            torch._dynamo.reset()
            compile_fx(sin_mm_cos)(x, w)
        data = rep.to_json()
        fusion_report.validate(data)
        inductor, fx = data["graphs"]
        # The same boundaries, decided by Inductor's lowering and by the FX pass.
        self.assertEqual({b["stage"] for b in inductor["boundaries"]}, {"lowering"})
        self.assertEqual({b["stage"] for b in fx["boundaries"]}, {"fx_fusion"})
        for graph in (inductor, fx):
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])
            self.assertEqual(len(graph["boundaries"]), 2)
            self.assertEqual(
                {b["reason"] for b in graph["boundaries"]}, {"extern_kernel"}
            )
            computing = {op["name"] for op in graph["ops"] if op["computes"]}
            self.assertEqual(computing, {"sin", "mm", "cos"})
        self.assertIn("fx_fusion", rep.summary())

    def test_codegen_refusal_falls_back_to_aten(self):
        def refuse(spec, device):
            raise NotImplementedError("not today")

        (graph,) = self.capture(sin_plus_cos, torch.randn(8), runner=refuse)
        self.assertEqual({k["kind"] for k in graph["kernels"]}, {"extern"})
        b = self.boundary(graph, "sin", "add")
        self.assertEqual(b["reason"], "fx_unsupported_op")
        self.assertIn("not today", b["detail"])

    def test_reference_runner_matches_codegen(self):
        x = torch.randn(6, 32)
        gm = make_fx(
            layer_norm_gelu, decomposition_table=fx_fusion.decomposition_table()
        )(x, torch.randn(32), torch.randn(32))
        part = fx_fusion.partition_graph(gm.graph)
        (group,) = part.groups
        plan = fx_fusion.build_kernel_plan(part, group)
        inputs = [torch.randn(s) for s, _ in plan.input_layouts]
        expected = fx_fusion.reference_runner(plan.spec, "cpu")(*inputs)
        actual = codegen.compile_kernel(plan.spec, "cpu")(*inputs)
        self.assertEqual(actual, expected, atol=1e-5, rtol=1e-5)
        self.assertIn("fx_kernel", codegen.generated_source(plan.spec, "cpu"))

    def test_single_op_groups_stay_aten_unless_asked(self):
        (graph,) = self.capture(lambda x: x.sin(), torch.randn(8))
        self.assertEqual([k["kind"] for k in graph["kernels"]], ["extern"])
        (graph,) = self.capture(
            lambda x: x.sin(), torch.randn(8), single_op_kernels=True
        )
        self.assertEqual([k["kind"] for k in graph["kernels"]], ["cpp"])

    def test_compile_module_of_symbolic_trace(self):
        torch.manual_seed(0)
        model = torch.fx.symbolic_trace(MLP().eval())
        x = torch.randn(4, 8)
        with fusion_report.capture() as rep:
            compiled = fx_fusion.compile_module(model, [x])
        self.assertEqual(compiled(x), model(x), atol=1e-5, rtol=1e-5)
        (graph,) = rep.graphs
        fusion_report.validate(rep.to_json())
        self.assertTrue(graph["compile_id"].startswith("fx_fusion/"))
        self.assertEqual(len(self.generated(graph)), 1)
        # Parameters are graph inputs: an update is seen.
        with torch.no_grad():
            model.fc2.bias.add_(1)
        self.assertEqual(compiled(x), model(x), atol=1e-5, rtol=1e-5)

    def test_partition_respects_dependencies(self):
        gm = make_fx(would_be_cycle)(torch.randn(4, 4), torch.randn(4, 4))
        groups = fx_fusion.partition(gm)
        self.assertEqual(
            [[m.name for m in g.members] for g in groups], [["sin"], ["add"]]
        )


class TestFxFusionModels(FxFusionTestCase):
    def test_gpt2_causal_mask_is_correct(self):
        # GPT-2's causal mask compares two dims of one size: a group pairing
        # both with one loop axis would compute only the diagonal; such a
        # group is left as aten ops, and the model matches eager.
        sys.path.insert(0, BENCHMARKS)
        from models import build

        model, inputs = build("gpt2", "cpu", "ci")
        with torch.no_grad():
            graphs = self.capture(model, *inputs)
        details = [r["detail"] for g in graphs for r in g["remarks"]]
        self.assertTrue(any("onto one loop axis" in d for d in details))
        self.assertTrue(any(self.generated(g) for g in graphs))


class TestFxFusionLog(LoggingTestCase):
    @make_logging_test(fusion=True)
    def test_fusion_log_prints_the_fx_graph(self, records):
        torch._dynamo.reset()
        compile_fx(sin_mm_cos)(torch.randn(4, 8), torch.randn(8, 3))
        summaries = [
            r.getMessage()
            for r in records
            if r.name.endswith("__fusion") and " ops -> " in r.getMessage()
        ]
        self.assertEqual(len(summaries), 1)
        lines = summaries[0].split("\n")
        self.assertEqual(
            lines[0], "graph 0/0 (cpu): 3 ops -> 3 kernels (0 generated, 3 extern)"
        )
        self.assertIn("sin -> mm: extern_kernel (backend, fx_fusion)", summaries[0])


# -- OpInfo sweep ------------------------------------------------------------

# The OpInfo entries whose ops the pass fuses (after the backend's
# decompositions), each compiled with single_op_kernels so that even a lone op
# goes through the C++ code generator.
FUSED_OPINFOS = frozenset(
    [
        "abs",
        "neg",
        "reciprocal",
        "sqrt",
        "rsqrt",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log1p",
        "sin",
        "cos",
        "tan",
        "tanh",
        "sigmoid",
        "nn.functional.relu",
        "erf",
        "floor",
        "ceil",
        "round",
        "trunc",
        "sign",
        "sgn",
        "logical_not",
        "bitwise_not",
        "isnan",
        "add",
        "sub",
        "mul",
        "div",
        "floor_divide",
        "remainder",
        "pow",
        "maximum",
        "minimum",
        "atan2",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "where",
        "clamp",
        "clamp_min",
        "clamp_max",
        "masked_fill",
        "sum",
        "amax",
        "amin",
        "prod",
        "mean",
        "var",
        "var_mean",
        "std",
        "softmax",
        "log_softmax",
        "nn.functional.layer_norm",
        "nn.functional.gelu",
        "nn.functional.silu",
        "nn.functional.hardswish",
        "nn.functional.leaky_relu",
        "nn.functional.elu",
        "nn.functional.hardtanh",
        "clone",
        "full_like",
        "zeros_like",
    ]
)


def fused_opinfos():
    return [
        op
        for op in sorted(op_db, key=lambda o: (o.name, o.variant_test_name))
        if op.name in FUSED_OPINFOS
    ]


class TestFxFusionOpInfo(TestCase):
    @ops(fused_opinfos(), allowed_dtypes=(torch.float32,))
    def test_matches_eager(self, device, dtype, op):
        samples = list(op.sample_inputs(device, dtype, requires_grad=False))
        if not samples:
            self.skipTest("no sample inputs")
        sample = samples[0]

        def fn(*args, **kwargs):
            return op(*args, **kwargs)

        def arguments():
            return [
                copy.deepcopy(a) for a in (sample.input, *sample.args)
            ], copy.deepcopy(sample.kwargs)

        args, kwargs = arguments()
        try:
            expected = fn(*args, **kwargs)
        except Exception as e:
            self.skipTest(f"eager fails: {type(e).__name__}")
        torch._dynamo.reset()
        args, kwargs = arguments()
        with fusion_report.capture() as rep:
            actual = compile_fx(fn, single_op_kernels=True)(*args, **kwargs)
        self.assertEqual(actual, expected, atol=1e-4, rtol=1e-4, equal_nan=True)
        data = rep.to_json()
        fusion_report.validate(data)
        for graph in data["graphs"]:
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])


instantiate_device_type_tests(
    TestFxFusionOpInfo, globals(), only_for=("cpu", "cuda"), allow_xpu=False
)


@unittest.skipUnless(HAS_CUDA_AND_TRITON, "needs a CUDA GPU")
class TestFxFusionCuda(FxFusionTestCase):
    """The arm's Triton path on a real GPU: the default model set against eager,
    reduced-precision dtypes, and gradients of a training step."""

    def generated(self, graph):
        return [k for k in graph["kernels"] if k["kind"] == "triton"]

    def test_default_model_set_matches_eager(self):
        sys.path.insert(0, BENCHMARKS)
        from harness import matches
        from models import build, compile_config, MODELS

        for name in MODELS:
            with self.subTest(model=name):
                torch._dynamo.reset()
                model, inputs = build(name, "cuda", "ci")
                with torch.no_grad():
                    expected = model(*inputs)
                    with compile_config(name), fusion_report.capture() as rep:
                        actual = compile_fx(model)(*inputs)
                same, diff = matches(actual, expected)
                self.assertTrue(same, f"{name}: max abs diff {diff}")
                graphs = rep.to_json()["graphs"]
                self.assertTrue(any(self.generated(g) for g in graphs), name)
                for graph in graphs:
                    self.assertEqual(fusion_analysis.coverage_violations(graph), [])

    def test_reduced_precision_layer_norm_gelu(self):
        for dtype in (torch.float16, torch.bfloat16):
            with self.subTest(dtype=dtype):
                torch._dynamo.reset()
                x, w, b = (
                    torch.randn(s, device="cuda", dtype=dtype)
                    for s in ((64, 1024), (1024,), (1024,))
                )

                def fn(x, w, b):
                    return torch.nn.functional.gelu(
                        torch.nn.functional.layer_norm(x, (1024,), w, b)
                    )

                with fusion_report.capture() as rep:
                    actual = compile_fx(fn)(x, w, b)
                self.assertEqual(actual, fn(x, w, b), atol=2e-2, rtol=2e-2)
                (graph,) = rep.to_json()["graphs"]
                self.assertEqual(len(self.generated(graph)), 1)

    def test_training_step_gradients(self):
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(
            256, 4, 512, dropout=0.0, batch_first=True, activation="gelu"
        )
        model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        model = model.cuda()
        reference = copy.deepcopy(model)
        x = torch.randn(4, 64, 256, device="cuda")
        with fusion_report.capture() as rep:
            out = torch.compile(model, backend="fx_fusion")(x)
            out.square().mean().backward()
        expected = reference(x)
        expected.square().mean().backward()
        self.assertEqual(out, expected, atol=1e-3, rtol=1e-3)
        for p, q in zip(model.parameters(), reference.parameters()):
            self.assertEqual(p.grad, q.grad, atol=1e-3, rtol=1e-3)
        graphs = rep.to_json()["graphs"]
        self.assertGreaterEqual(len(graphs), 2)  # forward and backward
        self.assertTrue(all(self.generated(g) for g in graphs))


if __name__ == "__main__":
    run_tests()
