# Owner(s): ["module: inductor"]
"""config.launch_bound_combo_kernels: combo kernels decided per kernel by a cost model.

On the CPU: the cost model's decisions on real scheduler nodes (which kernels
are grouped, which are kept apart, the remarks), the config and its
environment override, and that a CPU compile is unchanged (C++ kernels are
called, not launched).  On a CUDA GPU: one kernel where there were several,
a large kernel kept out, property tests over random shapes, strides and
dtypes, the default model set, and an OpInfo sweep (CPU and CUDA) of several
independent calls of each op in one graph.
"""

import copy
import os
import re
import subprocess
import sys
import unittest
from unittest import mock

import torch
import torch._dynamo
from torch._inductor import config, fusion_report, launch_bound_combo
from torch._inductor.fusion_remarks import analysis as fusion_analysis
from torch._inductor import metrics
from torch._inductor.scheduler import ForeachKernelSchedulerNode, Scheduler
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.inductor_utils import HAS_CUDA_AND_TRITON


try:
    from hypothesis import given, settings, strategies as st

    HAS_HYPOTHESIS = True
except ImportError:
    HAS_HYPOTHESIS = False


PASS_ON = {"launch_bound_combo_kernels": True}


def small_branch_inputs():
    """Inputs of :func:`independent_branches` whose four kernels are all
    launch-bound under the default limit."""
    return torch.randn(64), torch.randn(65), torch.randn(6, 11), torch.randn(8)


def independent_branches(a, b, c, big):
    # Four independent kernels: no data shared, so stock Inductor keeps all
    # four apart (no_shared_data); a, b and c are small, big is not.
    return a.sin() * 2, b.cos() + 1, c.sum(-1), big.exp()


def remarks(graphs, reason):
    return [r for g in graphs for r in g["remarks"] if r["reason"] == reason]


def capture(fn, *args):
    torch._dynamo.reset()
    with fusion_report.capture() as rep:
        out = torch.compile(fn)(*args)
    data = rep.to_json()
    fusion_report.validate(data)
    return out, data["graphs"]


class TestLaunchBoundComboCostModel(TestCase):
    """The decisions, on scheduler nodes of real CPU compiles.

    The pass skips CPU kernels; here it is made to consider them and to stop
    before creating combo kernels, so what is checked is the cost model.
    """

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()
        self.groups = []
        self.reads_writes = []

        group_nodes = launch_bound_combo.group_nodes

        def record_groups(scheduler):
            groups = group_nodes(scheduler)
            self.groups.append([[n.get_name() for n in g] for g in groups])
            for group in groups:
                self.reads_writes.append(
                    [
                        (
                            {d.name for d in n.read_writes.reads},
                            set(n.get_buffer_names()),
                        )
                        for n in group
                    ]
                )
            return groups

        patches = [
            mock.patch.object(launch_bound_combo, "_NO_LAUNCH_DEVICES", ()),
            mock.patch.object(launch_bound_combo, "group_nodes", record_groups),
            # upstream's combo-kernel code generation is Triton's
            mock.patch.object(
                Scheduler, "create_combo_kernel_nodes", lambda self, **kw: None
            ),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def inputs(self):
        return (
            torch.randn(64),
            torch.randn(65),
            torch.randn(6, 11),
            torch.randn(64, 64),  # 16 KiB read, 16 KiB written
        )

    def test_launch_bound_kernels_grouped_large_kept_apart(self):
        inputs = self.inputs()
        with config.patch({**PASS_ON, "launch_bound_combo_max_bytes": 4096}):
            out, graphs = capture(independent_branches, *inputs)
        self.assertEqual(out, independent_branches(*inputs))
        (groups,) = self.groups
        self.assertEqual(len(groups), 1)
        self.assertEqual(len(groups[0]), 3)
        # the combo-kernel step (stubbed) combined nothing: the group is
        # reported as left apart by it, not as combined
        self.assertEqual(remarks(graphs, "combined_launch_bound"), [])
        (refused,) = remarks(graphs, "launch_bound_group_refused")
        self.assertEqual(refused["kind"], "missed")
        self.assertEqual(refused["stage"], "launch_bound_combo")
        self.assertEqual(refused["args"]["kernels"], 3)
        self.assertEqual(refused["args"]["group"], 3)
        self.assertEqual(sorted(refused["nodes"]), sorted(groups[0]))
        (apart,) = remarks(graphs, "combo_not_launch_bound")
        self.assertEqual(apart["kind"], "missed")
        self.assertEqual(apart["category"], "heuristic")
        self.assertGreater(apart["args"]["bytes"], 4096)
        self.assertEqual(apart["args"]["partners"], 3)
        self.assertNotIn(apart["nodes"][0], groups[0])
        self.assertIn("exp", " ".join(apart["ops"]))

    def test_limit_decides(self):
        # With a limit above the large kernel's bytes, all four are grouped.
        with config.patch({**PASS_ON, "launch_bound_combo_max_bytes": 1 << 20}):
            _, graphs = capture(independent_branches, *self.inputs())
        (groups,) = self.groups
        self.assertEqual([len(g) for g in groups], [4])
        self.assertEqual(remarks(graphs, "combo_not_launch_bound"), [])

    def test_groups_hold_at_most_max_nodes(self):
        def five(*xs):
            return tuple(x.sin() + i for i, x in enumerate(xs))

        xs = [torch.randn(60 + i) for i in range(5)]
        with config.patch({**PASS_ON, "launch_bound_combo_max_nodes": 2}):
            capture(five, *xs)
        (groups,) = self.groups
        self.assertEqual([len(g) for g in groups], [2, 2])

    def test_dependent_kernels_never_grouped(self):
        def chain(x, y):
            a = x.sin().sum()  # reduction, then a kernel that reads it
            return (y * a).cos(), x.cos() * 3

        with config.patch(PASS_ON):
            capture(chain, torch.randn(64), torch.randn(64))
        (groups,) = self.groups
        self.assertTrue(groups)  # the independent sin/cos kernels are grouped
        for members in self.reads_writes:
            # no member reads what another member writes
            for i, (reads, _) in enumerate(members):
                for j, (_, writes) in enumerate(members):
                    if i != j:
                        self.assertFalse(reads & writes, (i, j))

    def test_no_remarks_without_the_flag(self):
        _, graphs = capture(independent_branches, *self.inputs())
        self.assertEqual(self.groups, [])
        for code in ("combined_launch_bound", "launch_bound_group_refused"):
            self.assertEqual(remarks(graphs, code), [])


class TestLaunchBoundComboCpu(TestCase):
    def test_cpu_code_unchanged(self):
        inputs = (
            torch.randn(64),
            torch.randn(65),
            torch.randn(6, 11),
            torch.randn(8, 8),
        )
        codes = []
        for on in (False, True):
            torch._dynamo.reset()
            with config.patch(launch_bound_combo_kernels=on):
                out, code = run_and_get_code(
                    torch.compile(independent_branches), *inputs
                )
            self.assertEqual(out, independent_branches(*inputs))
            # the AOT id counts compiles; everything else must be identical
            codes.append([re.sub(r"# AOT ID: .*", "", src) for src in code])
        self.assertEqual(codes[0], codes[1])

    def test_env_override(self):
        script = (
            "from torch._inductor import config;"
            "print(config.launch_bound_combo_kernels, config.launch_bound_combo_max_bytes)"
        )
        env = dict(
            os.environ,
            TORCHINDUCTOR_LAUNCH_BOUND_COMBO_KERNELS="1",
            TORCHINDUCTOR_LAUNCH_BOUND_COMBO_MAX_BYTES="12345",
        )
        out = subprocess.check_output(
            [sys.executable, "-c", script], env=env, text=True
        )
        self.assertEqual(out.split()[-2:], ["True", "12345"])
        self.assertFalse(config.launch_bound_combo_kernels)  # off by default

    def test_grouping_failure_leaves_the_schedule(self):
        """A graph the pass cannot group compiles as without the pass, with a
        warning and a remark that names the error."""

        def fail(node):
            raise RuntimeError(f"no estimate for {node.get_name()}")

        inputs = small_branch_inputs()
        torch._dynamo.reset()
        _, stock = run_and_get_code(torch.compile(independent_branches), *inputs)
        torch._dynamo.reset()
        with (
            mock.patch.object(launch_bound_combo, "_NO_LAUNCH_DEVICES", ()),
            mock.patch.object(launch_bound_combo, "estimated_bytes", fail),
            config.patch(PASS_ON),
            self.assertLogs(launch_bound_combo.log, "WARNING") as logs,
            fusion_report.capture() as rep,
        ):
            out, code = run_and_get_code(torch.compile(independent_branches), *inputs)
        self.assertEqual(out, independent_branches(*inputs))
        strip = lambda src: re.sub(r"# AOT ID: .*", "", src)  # noqa: E731
        self.assertEqual([strip(c) for c in code], [strip(c) for c in stock])
        self.assertIn("not applied", "".join(logs.output))
        (remark,) = remarks(rep.to_json()["graphs"], "launch_bound_combo_not_applied")
        self.assertEqual(remark["kind"], "analysis")
        self.assertEqual(remark["args"]["error"], "RuntimeError")
        self.assertEqual(remark["args"]["fallback"], "no combo kernel")
        self.assertIn("no estimate for", remark["detail"])

    def step_seen(self):
        """Stub upstream's combo-kernel step (its code generation is
        Triton's) with one that records what it would combine: the groups of
        upstream's grouping callback, and the peak-memory gate it runs under."""
        seen = []

        def step(scheduler, num_ck_nodes=None):
            groups = ForeachKernelSchedulerNode.group_nodes_for_combo_kernels(scheduler)
            seen.append(
                (
                    [[n.get_name() for n in g] for g in groups],
                    config.combo_kernel_peak_memory_pct_threshold,
                )
            )

        for patch in (
            mock.patch.object(launch_bound_combo, "_NO_LAUNCH_DEVICES", ()),
            mock.patch.object(Scheduler, "create_combo_kernel_nodes", step),
        ):
            patch.start()
            self.addCleanup(patch.stop)
        return seen

    def test_groups_reach_the_step_through_upstreams_grouping_callback(self):
        """The pass hands its groups to upstream's step through upstream's
        extension point (set_group_algorithm_for_combo_kernels) for that one
        call, with the memory gate off where the gate ignores a callback
        (2.15.0), and puts the default grouping back after it."""
        registered = vars(ForeachKernelSchedulerNode)[
            "group_algorithm_for_combo_kernels"
        ]
        made = []
        group_nodes = launch_bound_combo.group_nodes

        def record(scheduler):
            groups = group_nodes(scheduler)
            made.append([[n.get_name() for n in g] for g in groups])
            return groups

        seen = self.step_seen()
        torch._dynamo.reset()
        with (
            mock.patch.object(launch_bound_combo, "group_nodes", record),
            config.patch({**PASS_ON, "combo_kernel_peak_memory_pct_threshold": 0.05}),
        ):
            capture(independent_branches, *small_branch_inputs())
        ((groups, gate),) = seen
        self.assertEqual([groups], made)
        self.assertEqual([len(g) for g in groups], [4])
        self.assertEqual(
            gate, 0.05 if launch_bound_combo.COMBO_GROUPS_MEMORY_GATED else None
        )
        self.assertIs(
            vars(ForeachKernelSchedulerNode)["group_algorithm_for_combo_kernels"],
            registered,
        )
        # off, the step runs as upstream's: its own grouping, its own gate
        seen.clear()
        torch._dynamo.reset()
        with config.patch(
            combo_kernels=True, combo_kernel_peak_memory_pct_threshold=0.05
        ):
            capture(independent_branches, *small_branch_inputs())
        ((_, gate),) = seen
        self.assertEqual(gate, 0.05)

    def test_a_registered_grouping_callback_stays_in_charge(self):
        """A grouping the user registered with upstream's
        set_group_algorithm_for_combo_kernels is not overridden: the step
        combines its groups, and the pass says it did not apply."""
        mine_calls = []

        def mine(scheduler):
            mine_calls.append(scheduler)
            return []

        registered = vars(ForeachKernelSchedulerNode)[
            "group_algorithm_for_combo_kernels"
        ]
        ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels(mine)
        self.addCleanup(
            ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels,
            registered,
        )
        seen = self.step_seen()
        torch._dynamo.reset()
        with config.patch({**PASS_ON, "combo_kernels": True}):
            _, graphs = capture(independent_branches, *small_branch_inputs())
        self.assertEqual([groups for groups, _ in seen], [[]])
        self.assertEqual(len(mine_calls), 1)
        self.assertIs(
            ForeachKernelSchedulerNode.group_algorithm_for_combo_kernels, mine
        )
        (remark,) = remarks(graphs, "launch_bound_combo_not_applied")
        self.assertEqual(remark["args"]["error"], "CustomGrouping")
        self.assertEqual(remark["args"]["fallback"], "upstream's combo kernels")
        self.assertIn("set_group_algorithm_for_combo_kernels", remark["detail"])

    def test_bad_limit_is_a_clear_error(self):
        with config.patch({**PASS_ON, "launch_bound_combo_max_bytes": -1}):
            with self.assertRaisesRegex(ValueError, "launch_bound_combo_max_bytes"):
                launch_bound_combo.check_config()


def _triton_kernel_defs(code):
    return sum(src.count("@triton.jit") for src in code)


@unittest.skipUnless(HAS_CUDA_AND_TRITON, "needs a CUDA GPU")
class TestLaunchBoundComboCuda(TestCase):
    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def compile_both(self, fn, *args):
        """(stock code, pass code, pass graphs), each result checked against eager."""
        expected = fn(*copy.deepcopy(args))
        torch._dynamo.reset()
        stock_out, stock_code = run_and_get_code(torch.compile(fn), *args)
        self.assertEqual(stock_out, expected)
        torch._dynamo.reset()
        with config.patch(PASS_ON), fusion_report.capture() as rep:
            out, code = run_and_get_code(torch.compile(fn), *args)
        self.assertEqual(out, expected)
        data = rep.to_json()
        fusion_report.validate(data)
        for graph in data["graphs"]:
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])
        return stock_code, code, data["graphs"]

    def test_one_kernel_where_there_were_four(self):
        def four(a, b, c, d):
            # pointwise kernels of different sizes (upstream's code generation
            # keeps reductions and pointwise kernels in separate combo kernels)
            return a.sin() * 2, b.cos() + 1, c.relu() - 1, d * d

        args = [
            torch.randn(s, device="cuda")
            for s in ((1000,), (3000,), (64, 50), (128, 96))
        ]
        stock, code, graphs = self.compile_both(four, *args)
        self.assertEqual(_triton_kernel_defs(stock), 4)
        self.assertEqual(_triton_kernel_defs(code), 1)
        (kernel,) = [k for g in graphs for k in g["kernels"] if k["kind"] == "foreach"]
        self.assertEqual(len(kernel["ops"]), len(set(kernel["ops"])))
        (combined,) = remarks(graphs, "combined_launch_bound")
        self.assertEqual(combined["args"]["kernels"], 4)
        # one launch in the wrapper where there were four
        self.assertEqual(sum(src.count(".run(") for src in code), 1)

    def test_kernels_reading_intermediates(self):
        """Combined kernels that read buffers other kernels wrote: upstream's
        memory timeline must know the combo kernel, not its members (on
        2.14.1 the wrapper's peak estimate failed with a KeyError when it
        did not).  2.14.1's combo step also refuses a group that raises the
        simulated peak memory by more than
        ``combo_kernel_peak_memory_pct_threshold`` (5%), as combining these
        three would in so small a graph: the gate is moved out of the way."""

        def two_heads(x, w1, w2, w3):
            return (x @ w1).relu() * 2, (x @ w2).sigmoid() + 1, (x @ w3).tanh()

        args = [torch.randn(16, 32, device="cuda")] + [
            torch.randn(32, n, device="cuda") for n in (24, 40, 8)
        ]
        gate = "combo_kernel_peak_memory_pct_threshold"  # 2.14.1 on
        with config.patch({gate: None} if hasattr(config, gate) else {}):
            stock, code, graphs = self.compile_both(two_heads, *args)
        self.assertEqual(_triton_kernel_defs(stock), 3)
        self.assertEqual(_triton_kernel_defs(code), 1)
        (combined,) = remarks(graphs, "combined_launch_bound")
        self.assertEqual(combined["args"]["kernels"], 3)

    @unittest.skipUnless(
        launch_bound_combo.COMBO_GROUPS_MEMORY_GATED
        and hasattr(config, "combo_kernel_peak_memory_pct_threshold"),
        "the peak-memory gate of upstream's combo-kernel step does not apply to "
        "the pass's groups (before 2.14.1 there is none; from 2.15.0 given "
        "groups take the path without it)",
    )
    def test_peak_memory_gate_refuses(self):
        """2.14.1's combo-kernel step refuses a group that raises the simulated
        peak memory by more than ``combo_kernel_peak_memory_pct_threshold``;
        the remarks say so, and with the gate off the group is combined."""

        def two_heads(x, w1, w2, w3):
            return (x @ w1).relu() * 2, (x @ w2).sigmoid() + 1, (x @ w3).tanh()

        args = [torch.randn(16, 32, device="cuda")] + [
            torch.randn(32, n, device="cuda") for n in (24, 40, 8)
        ]
        gate = "combo_kernel_peak_memory_pct_threshold"
        with config.patch({gate: 0.05}):
            _, code, graphs = self.compile_both(two_heads, *args)
        refused = remarks(graphs, "launch_bound_group_refused")
        self.assertTrue(refused)
        self.assertEqual({r["args"][gate] for r in refused}, {0.05})
        # the remarks account for every kernel of the group, and for the code:
        # the gate may halve a group and accept a half
        combined = remarks(graphs, "combined_launch_bound")
        in_combos = sum(r["args"]["kernels"] for r in combined)
        self.assertEqual(in_combos + sum(r["args"]["kernels"] for r in refused), 3)
        self.assertEqual(_triton_kernel_defs(code), 3 - in_combos + len(combined))
        torch._dynamo.reset()
        with config.patch({gate: None}):
            _, code, graphs = self.compile_both(two_heads, *args)
        self.assertEqual(_triton_kernel_defs(code), 1)
        self.assertEqual(remarks(graphs, "launch_bound_group_refused"), [])
        (combined,) = remarks(graphs, "combined_launch_bound")
        self.assertEqual(combined["args"]["kernels"], 3)

    def test_large_kernel_keeps_its_own_launch(self):
        big = torch.randn(2048, 2048, device="cuda")  # 32 MiB moved, above 4 MiB
        small = [torch.randn(n, device="cuda") for n in (500, 700)]
        stock, code, graphs = self.compile_both(
            lambda a, b, c: (a.sin(), b.cos(), c.exp()), *small, big
        )
        self.assertEqual(_triton_kernel_defs(stock), 3)
        self.assertEqual(_triton_kernel_defs(code), 2)
        (apart,) = remarks(graphs, "combo_not_launch_bound")
        self.assertGreater(apart["args"]["bytes"], config.launch_bound_combo_max_bytes)

    def test_training_step_gradients(self):
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(
            128, 4, 256, dropout=0.0, batch_first=True, activation="gelu"
        )
        model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).cuda()
        reference = copy.deepcopy(model)
        x = torch.randn(4, 32, 128, device="cuda")
        with config.patch(PASS_ON), fusion_report.capture() as rep:
            out = torch.compile(model)(x)
            out.square().mean().backward()
        expected = reference(x)
        expected.square().mean().backward()
        self.assertEqual(out, expected, atol=1e-4, rtol=1e-4)
        for p, q in zip(model.parameters(), reference.parameters()):
            self.assertEqual(p.grad, q.grad, atol=1e-4, rtol=1e-4)
        self.assertTrue(remarks(rep.to_json()["graphs"], "combined_launch_bound"))

    if HAS_HYPOTHESIS:

        @settings(max_examples=30, deadline=None)
        @given(st.data())
        def test_property_random_independent_branches(self, data):
            """Any set of independent branches: same values as eager, and no
            more Triton kernels than stock Inductor generates."""
            n = data.draw(st.integers(2, 5))
            dtype = data.draw(
                st.sampled_from([torch.float32, torch.float16, torch.bfloat16])
            )
            args, kinds = [], []
            for _ in range(n):
                rank = data.draw(st.integers(1, 3))
                shape = data.draw(
                    st.lists(st.integers(1, 96), min_size=rank, max_size=rank)
                )
                layout = data.draw(
                    st.sampled_from(["contiguous", "transposed", "strided"])
                )
                t = torch.randn(shape, device="cuda", dtype=dtype)
                if layout == "transposed" and rank > 1:
                    t = torch.randn(shape[::-1], device="cuda", dtype=dtype).transpose(
                        0, -1
                    )
                elif layout == "strided":
                    t = torch.randn(
                        [*shape[:-1], 2 * shape[-1]], device="cuda", dtype=dtype
                    )[..., ::2]
                args.append(t)
                kinds.append(
                    data.draw(
                        st.sampled_from(["sin", "muladd", "relu", "sum", "amax0"])
                    )
                )

            def branches(*xs):
                out = []
                for x, kind in zip(xs, kinds):
                    if kind == "sin":
                        out.append(x.sin())
                    elif kind == "muladd":
                        out.append(x * 3 + 1)
                    elif kind == "relu":
                        out.append(torch.relu(x) - 0.5)
                    elif kind == "sum":
                        out.append(x.float().sum(-1))
                    else:
                        out.append(x.amax(0))
                return tuple(out)

            expected = branches(*args)
            tol = {"atol": 1e-2, "rtol": 1e-2} if dtype != torch.float32 else {}
            torch._dynamo.reset()
            metrics.reset()
            stock = torch.compile(branches)(*args)
            stock_kernels = metrics.generated_kernel_count
            torch._dynamo.reset()
            metrics.reset()
            with config.patch(PASS_ON):
                actual = torch.compile(branches)(*args)
            self.assertEqual(actual, expected, **tol)
            self.assertEqual(stock, expected, **tol)
            self.assertLessEqual(metrics.generated_kernel_count, stock_kernels)


# Ops with a Triton lowering, each called on several of its sample inputs in
# one graph: the calls are independent, so the pass has kernels to combine.
SWEEP_OPS = {
    "abs",
    "acos",
    "add",
    "addcmul",
    "amax",
    "amin",
    "argmax",
    "asin",
    "atan2",
    "clamp",
    "cos",
    "cumsum",
    "div",
    "erf",
    "exp",
    "expm1",
    "floor",
    "fmod",
    "log",
    "log1p",
    "log_softmax",
    "logsumexp",
    "maximum",
    "mean",
    "minimum",
    "mul",
    "neg",
    "nn.functional.gelu",
    "nn.functional.layer_norm",
    "nn.functional.relu",
    "nn.functional.silu",
    "pow",
    "prod",
    "reciprocal",
    "remainder",
    "round",
    "rsqrt",
    "sigmoid",
    "sin",
    "softmax",
    "sqrt",
    "std",
    "sub",
    "sum",
    "tanh",
    "var_mean",
    "where",
}


def sweep_opinfos():
    return [
        op
        for op in sorted(op_db, key=lambda o: (o.name, o.variant_test_name))
        if op.name in SWEEP_OPS and op.variant_test_name == ""
    ]


class TestLaunchBoundComboOpInfo(TestCase):
    @ops(sweep_opinfos(), allowed_dtypes=(torch.float32,))
    def test_independent_calls_match_eager(self, device, dtype, op):
        samples = list(op.sample_inputs(device, dtype, requires_grad=False))[:4]
        if len(samples) < 2:
            self.skipTest("fewer than two sample inputs")

        def arguments():
            return copy.deepcopy([((s.input, *s.args), s.kwargs) for s in samples])

        def fn(*flat):
            out, i = [], 0
            for args, kwargs in structure:
                out.append(op(*flat[i : i + len(args)], **kwargs))
                i += len(args)
            return out

        structure = arguments()
        flat = [a for args, _ in structure for a in args]
        try:
            expected = fn(*copy.deepcopy(flat))
        except Exception as e:
            self.skipTest(f"eager fails: {type(e).__name__}")
        torch._dynamo.reset()
        with config.patch(PASS_ON), fusion_report.capture() as rep:
            actual = torch.compile(fn)(*copy.deepcopy(flat))
        self.assertEqual(actual, expected, atol=1e-4, rtol=1e-4, equal_nan=True)
        data = rep.to_json()
        fusion_report.validate(data)
        for graph in data["graphs"]:
            self.assertEqual(fusion_analysis.coverage_violations(graph), [])


instantiate_device_type_tests(
    TestLaunchBoundComboOpInfo, globals(), only_for=("cpu", "cuda"), allow_xpu=False
)


if __name__ == "__main__":
    run_tests()
