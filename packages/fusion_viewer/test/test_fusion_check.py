# Owner(s): ["module: inductor"]
"""The fusion check: force one boundary that a heuristic refused, and judge it.

Each test compiles real functions on the CPU.  A boundary the report gives a
``heuristic`` reason is forced through by ``fusion_check.force_fusion``, which
installs a ``ForcingChoices`` (upstream's ``InductorChoices`` extension point)
for the one compile; the forced compile's capture and generated code show
whether the two ops ended up in one kernel, and ``check_fusible`` compares the
result with eager and times both compiles.  Pairs that cannot be forced (the
backend refuses them, a stale node name, a legality or lowering reason, a
heuristic decided outside ``InductorChoices``) leave ``fusible`` as it was,
and the previous choices handler is back once the check ends.
"""

import copy
import functools
import json
import math
import statistics
import time
from unittest import mock

import torch
import torch._dynamo
from fusion_viewer import check as fusion_check
from fusion_viewer.check import harness as fusion_check_harness
from torch._inductor import config, fusion_report
from torch._inductor.choices import InductorChoices
from torch._inductor.fusion_remarks.taxonomy import Category, Reason
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch._inductor.virtualized import V


def halves(x):
    # Two reductions over the two halves of one input: they read the same
    # buffer at different indices (no_shared_data), over the same ranges, so
    # the C++ backend can put them in one loop nest.
    n = x.shape[1] // 2
    return x[:, :n].sum(1), x[:, n:].sum(1)


def rows_and_columns(x):
    # no_shared_data too, but over different ranges: the C++ backend refuses.
    return x.sum(0), x.sum(1)


def sum_and_max(x):
    # Same reads, fused by default; refused with config.max_fusion_size = 1.
    return x.sum(1), x.amax(1)


class HalvesOfWeights(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(32, 64))

    def forward(self, x):
        n = x.shape[1] // 2
        return (x[:, :n] * self.w[:, :n]).sum(1), (x[:, n:] * self.w[:, n:]).sum(1)


def inputs():
    torch.manual_seed(0)
    return (torch.randn(32, 64),)


def capture(fn, args, **compile_kwargs):
    torch._dynamo.reset()
    with fusion_report.capture() as rep:
        torch.compile(fn, **compile_kwargs)(*args)
    return rep.to_json()


@functools.cache
def _halves_json():
    return json.dumps(capture(halves, inputs()))


def halves_data():
    """A stock capture of ``halves`` (compiled once; a fresh copy each call)."""
    return json.loads(_halves_json())


def heuristic_boundaries(data):
    return [
        b
        for g in data["graphs"]
        for b in g["boundaries"]
        if b["category"] == Category.HEURISTIC.value
    ]


def compiled_code(fn, args):
    """The generated code, less its first line (the AOT ID counts compiles)."""
    torch._dynamo.reset()
    _, (code,) = run_and_get_code(torch.compile(fn), *args)
    return code.split("\n", 1)[1]


class FusionCheckTest(TestCase):
    def assertFusible(self, check, kernels):
        self.assertTrue(check["forced"], check["detail"])
        self.assertTrue(check["correct"], check["detail"])
        self.assertEqual(check["device"], "cpu")
        for key in ("stock_ms", "forced_ms", "speedup"):
            self.assertGreater(check[key], 0, key)
        self.assertEqual(check["faster"], check["forced_ms"] < check["stock_ms"])
        self.assertEqual(check["kernels"], kernels)

    def test_forced_pair_is_fusible(self):
        data = halves_data()
        (boundary,) = heuristic_boundaries(data)
        self.assertEqual(boundary["reason"], Reason.NO_SHARED_DATA.value)
        self.assertEqual(boundary["relation"], "shared_input")
        self.assertIsNone(boundary["fusible"])
        args = boundary["args"]
        self.assertEqual(
            (args["producer_nodes"], args["consumer_nodes"]), (["op0"], ["op1"])
        )

        (check,) = fusion_check.check_fusible(halves, inputs(), data, repeats=3)
        self.assertFusible(check, {"stock": 2, "forced": 1})
        self.assertEqual(
            (check["graph"], check["producer"], check["consumer"], check["reason"]),
            ("0/0", boundary["producer"], boundary["consumer"], "no_shared_data"),
        )
        self.assertIn("forced op0 + op1 past no_shared_data", check["detail"])
        self.assertIs(boundary["fusible"], True)
        self.assertEqual(
            boundary["fusible_check"],
            {k: check[k] for k in boundary["fusible_check"]},
        )
        self.assertEqual(
            set(boundary["fusible_check"]),
            {"forced", "correct", "faster", "stock_ms", "forced_ms", "speedup"}
            | {"device", "detail", "fused_into"},
        )
        # the generated function holding both ops in the forced compile
        self.assertRegex(check["fused_into"], r"^cpp_fused_")
        fusion_report.validate(json.loads(json.dumps(data)))

    def test_a_step_timer_times_stock_against_forced(self):
        """With a timer, the stock step is prepared once right after its
        compile, each forced step after its own, and ``compare`` decides the
        times and whether the forced compile is faster."""

        class MedianTimer:
            def __init__(self):
                self.prepared = []

            def prepare(self, step):
                step()  # the compiled code is valid now: it runs
                self.prepared.append(step)
                return len(self.prepared)

            def compare(self, stock, forced):
                def ms(i):
                    step = self.prepared[i - 1]
                    times = []
                    for _ in range(5):
                        start = time.perf_counter()
                        step()
                        times.append(time.perf_counter() - start)
                    return statistics.median(times) * 1e3

                return {
                    "stock_ms": ms(stock),
                    "forced_ms": ms(forced),
                    "faster": None,  # this timer claims no resolution
                    "order": [stock, forced],
                }

        timer = MedianTimer()
        data = halves_data()
        (check,) = fusion_check.check_fusible(halves, inputs(), data, timer=timer)
        self.assertTrue(check["forced"] and check["correct"], check["detail"])
        self.assertEqual(check["timing"], {"order": [1, 2]})
        self.assertIsNone(check["faster"])  # the timer's, not forced < stock
        self.assertAlmostEqual(check["speedup"], check["stock_ms"] / check["forced_ms"])
        self.assertEqual(len(timer.prepared), 2)
        fusion_report.validate(json.loads(json.dumps(data)))

    def test_targets_are_taken_by_predicted_gain_then_bytes(self):
        from fusion_viewer.check.harness import _targets

        def boundary(name, nbytes, gain):
            return {
                "producer": name,
                "consumer": name + "_c",
                "reason": Reason.NO_SHARED_DATA.value,
                "category": Category.HEURISTIC.value,
                "args": {
                    "bytes": nbytes,
                    "producer_nodes": [name],
                    "consumer_nodes": [name + "_c"],
                },
                "predicted": {"gain_s": gain},
            }

        graph = {
            "compile_id": "0/0",
            "boundaries": [
                boundary("big_but_cheap", 1 << 20, 1e-6),
                boundary("small_but_dear", 1 << 10, 5e-6),
                boundary("unpriced", 1 << 30, None),
            ],
        }
        names = [t.boundaries[0]["producer"] for t in _targets({"graphs": [graph]}, 3)]
        self.assertEqual(names, ["small_but_dear", "big_but_cheap", "unpriced"])
        for b in graph["boundaries"]:
            b["predicted"]["gain_s"] = None  # priced without time: by bytes
        names = [t.boundaries[0]["producer"] for t in _targets({"graphs": [graph]}, 3)]
        self.assertEqual(names, ["unpriced", "big_but_cheap", "small_but_dear"])

    def test_force_fusion_puts_the_pair_in_one_loop_nest(self):
        (x,) = inputs()
        previous = V.choices
        with config.patch(force_disable_caches=True):
            stock = compiled_code(halves, (x,))
            torch._dynamo.reset()
            with fusion_check.force_fusion(
                "0/0", ["op0"], ["op1"], "no_shared_data"
            ) as forced:
                self.assertIsInstance(V.choices, fusion_check.ForcingChoices)
                out, (code,) = run_and_get_code(torch.compile(halves), x)
        self.assertEqual(out, halves(x))
        # Stock: one C++ function with two loop nests; forced: one loop nest.
        self.assertEqual(stock.count("#pragma omp for"), 2)
        self.assertEqual(code.count("#pragma omp for"), 1)
        self.assertEqual(forced.overturned, ["op0 + op1"])
        graph = forced.graph_report()
        self.assertEqual([k["name"] for k in graph["kernels"]], ["op0_op1"])
        self.assertEqual(graph["boundaries"], [])
        self.assertIn(
            {
                "first": "op0",
                "second": "op1",
                "fused": True,
                "reason": None,
                "detail": "",
            },
            graph["evaluated_pairs"],
        )
        self.assertEqual(forced.let_through, ["op0 + op1"])
        self.assertIs(V.choices, previous)

    def test_max_fusion_size_is_bypassed(self):
        options = {"options": {"max_fusion_size": 1}}
        data = capture(sum_and_max, inputs(), **options)
        (boundary,) = heuristic_boundaries(data)
        self.assertEqual(boundary["reason"], Reason.EXCEEDS_MAX_FUSION_SIZE.value)
        (check,) = fusion_check.check_fusible(
            sum_and_max, inputs(), data, compile_kwargs=options, repeats=3
        )
        self.assertFusible(check, {"stock": 2, "forced": 1})
        self.assertIs(boundary["fusible"], True)

    def test_training_compares_gradients(self):
        torch.manual_seed(0)
        model = HalvesOfWeights()
        (x,) = inputs()
        torch._dynamo.reset()
        with fusion_report.capture() as rep:
            out = torch.compile(model)(x)
            sum(o.sum() for o in out).backward()
        data = rep.to_json()
        self.assertEqual(
            [g["compile_id"] for g in data["graphs"]], ["0/0", "0/0 backward"]
        )
        (boundary,) = heuristic_boundaries(data)
        real_compare = fusion_check_harness._compare
        compared = []

        def compare(actual, expected, stock):
            compared.append(len(expected))
            return real_compare(actual, expected, stock)

        with mock.patch.object(fusion_check_harness, "_compare", compare):
            (check,) = fusion_check.check_fusible(
                model, (x,), data, training=True, repeats=3
            )
        self.assertFusible(check, {"stock": 2, "forced": 1})
        self.assertEqual(compared, [3])  # two outputs and the weight's gradient
        self.assertIs(boundary["fusible"], True)

    def test_backend_refuses_forced_pair(self):
        data = capture(rows_and_columns, inputs())
        (boundary,) = heuristic_boundaries(data)
        self.assertEqual(boundary["reason"], Reason.NO_SHARED_DATA.value)
        (check,) = fusion_check.check_fusible(
            rows_and_columns, inputs(), data, repeats=3
        )
        self.assertFalse(check["forced"])
        self.assertIsNone(check["correct"])
        self.assertIsNone(check["forced_ms"])
        self.assertIn(
            "with no_shared_data bypassed, refused by cpp_ranges_incompatible (backend)",
            check["detail"],
        )
        self.assertIsNone(boundary["fusible"])
        self.assertFalse(boundary["fusible_check"]["forced"])
        fusion_report.validate(data)

    def test_legality_past_the_heuristic_is_not_fusible(self):
        # In the backward of layer_norm + gelu, pairs scored at no shared data
        # read each other's buffers at other indices: with the score bypassed,
        # dep_mismatch (legality) refuses them, so they cannot be fused.
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.LayerNorm(64), torch.nn.GELU())
        x = torch.randn(4, 8, 64)
        torch._dynamo.reset()
        with fusion_report.capture() as rep:
            torch.compile(model)(x).sum().backward()
        data = rep.to_json()
        boundaries = heuristic_boundaries(data)
        self.assertTrue(boundaries)
        checks = fusion_check.check_fusible(model, (x,), data, training=True, repeats=3)
        legality = [c for c in checks if "dep_mismatch (legality)" in c["detail"]]
        self.assertTrue(legality, [c["detail"] for c in checks])
        for check in legality:
            self.assertFalse(check["forced"])
            self.assertIsNone(check["correct"])
        refused = [
            b
            for b in boundaries
            if "dep_mismatch (legality)" in b["fusible_check"]["detail"]
        ]
        self.assertTrue(refused)
        self.assertTrue(all(b["fusible"] is False for b in refused))
        fusion_report.validate(data)

    def test_stale_node_names_are_not_forced(self):
        data = halves_data()
        (boundary,) = heuristic_boundaries(data)
        boundary["args"]["producer_nodes"] = ["op9"]
        (check,) = fusion_check.check_fusible(halves, inputs(), data, repeats=3)
        self.assertFalse(check["forced"])
        self.assertIsNone(boundary["fusible"])
        self.assertIn("never refused a pair of op9 and op1", check["detail"])
        self.assertEqual(check["kernels"], {"stock": 2, "forced": 2})

    def test_wrong_forced_result_is_not_fusible(self):
        data = halves_data()
        (boundary,) = heuristic_boundaries(data)
        with mock.patch.object(
            fusion_check_harness, "_compare", return_value=(False, 1.0)
        ):
            (check,) = fusion_check.check_fusible(halves, inputs(), data, repeats=3)
        self.assertTrue(check["forced"])
        self.assertFalse(check["correct"])
        self.assertIs(boundary["fusible"], False)
        self.assertIn("max |forced - eager| = 1", check["detail"])

    def test_failing_check_does_not_raise(self):
        data = halves_data()
        (boundary,) = heuristic_boundaries(data)

        def broken(x):
            raise RuntimeError("boom")

        (check,) = fusion_check.check_fusible(broken, inputs(), data)
        self.assertFalse(check["forced"])
        self.assertIn("RuntimeError: boom", check["detail"])
        self.assertIsNone(boundary["fusible"])

    def test_legality_and_lowering_reasons_are_not_forced(self):
        legality = {
            "producer": "a",
            "consumer": "b",
            "relation": "dependency",
            "reason": Reason.DEP_MISMATCH.value,
            "category": Category.LEGALITY.value,
            "fusible": False,
            "args": {"producer_nodes": ["op0"], "consumer_nodes": ["op1"]},
        }
        lowering = {
            "producer": "c",
            "consumer": "d",
            "relation": "dependency",
            "reason": Reason.REUSE_CPU_HEAVY_OP.value,
            "category": Category.HEURISTIC.value,
            "fusible": None,
            "args": {"buffer": "buf0", "bytes": 4096},
        }
        data = {
            "graphs": [
                {"compile_id": "0/0", "kernels": [], "boundaries": [legality, lowering]}
            ]
        }
        before = copy.deepcopy(legality)
        with mock.patch.object(torch, "compile", side_effect=AssertionError):
            checks = fusion_check.check_fusible(halves, inputs(), data)
        self.assertEqual(legality, before)
        self.assertEqual([(c["producer"], c["forced"]) for c in checks], [("c", False)])
        self.assertIn("decided during lowering", checks[0]["detail"])
        self.assertIsNone(lowering["fusible"])
        previous = V.choices
        for reason in ("dep_mismatch", "reuse_cpu_heavy_op", "no_fusion"):
            with self.assertRaisesRegex(ValueError, "cannot be forced"):
                with fusion_check.force_fusion("0/0", ["op0"], ["op1"], reason):
                    pass
        self.assertIs(V.choices, previous)

    def test_heuristics_outside_inductor_choices_are_not_forced(self):
        """The prologue heuristics, benchmarked fusion and the backends'
        config flags are decided outside InductorChoices: not forced, and the
        detail says where they are decided."""
        self.assertIn("prologue_increases_reads", fusion_check.OUT_OF_REACH)
        for code, where in fusion_check.OUT_OF_REACH.items():
            self.assertIs(Reason(code).category, Category.HEURISTIC, code)
            self.assertFalse(fusion_check.can_force(code), code)
            self.assertIn("InductorChoices", where)
            with self.assertRaisesRegex(ValueError, f"^{code} cannot be forced: it is"):
                with fusion_check.force_fusion("0/0", ["op0"], ["op1"], code):
                    pass
        prologue = {
            "producer": "a",
            "consumer": "b",
            "relation": "dependency",
            "reason": Reason.PROLOGUE_INCREASES_READS.value,
            "category": Category.HEURISTIC.value,
            "fusible": None,
            "args": {"producer_nodes": ["op0"], "consumer_nodes": ["op1"]},
        }
        data = {
            "graphs": [{"compile_id": "0/0", "kernels": [], "boundaries": [prologue]}]
        }
        with mock.patch.object(torch, "compile", side_effect=AssertionError):
            (check,) = fusion_check.check_fusible(halves, inputs(), data)
        self.assertFalse(check["forced"])
        self.assertIn("check_prologue_fusion_heuristics_fusable", check["detail"])
        self.assertIsNone(prologue["fusible"])

    def test_bypasses_are_heuristics(self):
        for code in fusion_check.BYPASSES:
            self.assertIs(Reason(code).category, Category.HEURISTIC, code)
        self.assertFalse(set(fusion_check.BYPASSES) & set(fusion_check.OUT_OF_REACH))

    def test_forcing_choices_answer_for_the_forced_pair_only(self):
        """For the forced pair every fusion hook says yes; every other pair,
        and every other hook, gets the previous handler's answer."""

        class Node:
            def __init__(self, *names):
                self.names = names

            def get_name(self):
                return "_".join(self.names)

            def get_nodes(self):
                return [Node(n) for n in self.names]

        class Refusing(InductorChoices):
            def __init__(self):
                super().__init__()
                self.asked = []

            def can_fuse(self, scheduler, node1, node2, shared_data_score):
                self.asked.append(("can_fuse", node1.get_name(), node2.get_name()))
                return False

            def can_fuse_vertical(self, scheduler, node1, node2, shared_data_score):
                self.asked.append(("vertical", node1.get_name(), node2.get_name()))
                return False

            def can_fuse_horizontal(self, scheduler, node1, node2, shared_data_score):
                self.asked.append(("horizontal", node1.get_name(), node2.get_name()))
                return False

            def customize_fused_kernel_name(self, fused_name, src_code):
                return "previous's " + fused_name

        previous = Refusing()
        # outside a compile the graph label is "<no compile id>"
        forced = fusion_check.ForcedFusion(
            "<no compile id>",
            frozenset({"op1"}),
            frozenset({"op2"}),
            Reason.NO_SHARED_DATA,
        )
        choices = fusion_check.ForcingChoices(forced, previous)
        self.assertIsInstance(choices, InductorChoices)
        fused, other = (Node("op0", "op1"), Node("op2")), (Node("op1"), Node("op3"))
        for hook in ("can_fuse", "can_fuse_vertical", "can_fuse_horizontal"):
            self.assertTrue(getattr(choices, hook)(None, *fused, 0), hook)
            self.assertTrue(getattr(choices, hook)(None, *reversed(fused), 0), hook)
            self.assertFalse(getattr(choices, hook)(None, *other, 0), hook)
        self.assertEqual(
            previous.asked,
            [(hook, "op1", "op3") for hook in ("can_fuse", "vertical", "horizontal")],
        )
        self.assertEqual(forced.let_through, ["op0_op1 + op2", "op2 + op0_op1"])
        self.assertEqual(choices.customize_fused_kernel_name("k", ""), "previous's k")
        # another graph: nothing is forced
        forced.graph = "0/0"
        self.assertFalse(choices.can_fuse(None, *fused, 0))
        # one forced compile at a time
        with V.set_choices_handler(choices):
            with self.assertRaisesRegex(RuntimeError, "does not nest"):
                with fusion_check.force_fusion(
                    "0/0", ["op0"], ["op1"], "no_shared_data"
                ):
                    pass
            self.assertIs(V.choices, choices)

    def test_compare_tolerances(self):
        e = torch.ones(4)
        compare = fusion_check_harness._compare
        self.assertTrue(compare([e + 1e-5], [e], [e])[0])
        self.assertFalse(compare([e + 1e-2], [e], [e])[0])
        # No more than twice as far from eager as the stock compile is.
        self.assertTrue(compare([e + 1e-2], [e], [e + 6e-3])[0])
        self.assertTrue(compare([e.half() + 5e-3], [e.half()], [e.half()])[0])
        self.assertFalse(compare([e[:3]], [e], [e])[0])
        self.assertFalse(compare([torch.arange(3)], [torch.arange(1, 4)], [None])[0])
        nan = torch.tensor([math.nan, 1.0])
        self.assertEqual(compare([nan], [nan.clone()], [nan]), (True, 0.0))

    def test_nothing_changes_without_an_active_check(self):
        (x,) = inputs()
        previous = V.choices
        with config.patch(force_disable_caches=True):
            plain = compiled_code(halves, (x,))
            with fusion_report.capture():  # hooks installed, nothing forced
                captured = compiled_code(halves, (x,))
            # Forcing a graph that is not compiled changes nothing either.
            with fusion_check.force_fusion("7/0", ["op0"], ["op1"], "no_shared_data"):
                other_graph = compiled_code(halves, (x,))
            with self.assertRaises(RuntimeError):
                with fusion_check.force_fusion(
                    "0/0", ["op0"], ["op1"], "no_shared_data"
                ):
                    raise RuntimeError
        self.assertIs(V.choices, previous)  # restored, also after the error
        self.assertEqual(plain.count("#pragma omp for"), 2)
        self.assertEqual(captured, plain)
        self.assertEqual(other_graph, plain)


if __name__ == "__main__":
    run_tests()
