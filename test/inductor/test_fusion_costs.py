# Owner(s): ["module: inductor"]
"""What a missed fusion costs: each boundary's predicted gain, from real
compiles through the fork, in the JSON, the ``+fusion`` log and the pages;
the cost model ``config.fusion_cost_model`` names (no device is timed during
a compile: the measurement is the fusion viewer's, tested in
``packages/fusion_viewer/test/test_measured_costs.py``); the join of kernel
times."""

import os
from unittest import mock

import torch
from fusion_viewer.html import render_html
from torch._inductor import config, fusion_report
from torch._inductor.fusion_remarks import costs
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.logging_utils import LoggingTestCase, make_logging_test


MODEL = costs.CostModel(
    device="cpu", bandwidth_bytes_per_s=1e9, launch_s=1e-6, source="given"
)


def _report(fn, *args, **patches):
    torch._dynamo.reset()
    with config.patch(patches), fusion_report.capture() as rep:
        torch.compile(fn)(*args)
    return rep.to_json()


def sin_cos(t):
    return t.sin().cos()


class TestPredictedGain(TestCase):
    def test_a_chain_without_fusion_saves_a_read_and_a_write(self):
        """no_fusion puts sin and cos in kernels of their own: fusing them
        saves the consumer's read and the producer's write of sin's buffer
        (nothing else reads it), and a launch where the two are separate
        functions (on the CPU they are loop nests of one function)."""
        x = torch.randn(1024, 256)
        data = _report(sin_cos, x, no_fusion=True)
        (graph,) = data["graphs"]
        (boundary,) = [b for b in graph["boundaries"] if b["consumer"] == "cos"]
        size = boundary["args"]["bytes"]
        self.assertEqual(size, x.numel() * 4)
        gain = costs.predicted_gain(boundary, graph, MODEL)
        self.assertEqual(gain["read_saved"], size)
        self.assertEqual(gain["write_saved"], size)
        functions = {k["name"]: k["function"] for k in graph["kernels"]}
        producer, consumer = boundary["kernels"]
        launches = 0 if functions[producer] == functions[consumer] else 1
        self.assertEqual(gain["launches_saved"], launches)
        self.assertAlmostEqual(gain["gain_s"], 2 * size / 1e9 + launches * 1e-6)

    def test_a_buffer_read_by_two_kernels_is_still_written(self):
        x = torch.randn(1024, 256)

        def f(t):
            s = t.sin()
            return s.cos(), s.exp()

        data = _report(f, x, no_fusion=True)
        (graph,) = data["graphs"]
        readers = [
            b
            for b in graph["boundaries"]
            if b["producer"] == "sin" and b["relation"] == "dependency"
        ]
        self.assertEqual({b["consumer"] for b in readers}, {"cos", "exp"})
        for b in readers:
            gain = costs.predicted_gain(b, graph, MODEL)
            self.assertEqual(gain["write_saved"], 0, b)
            self.assertEqual(gain["read_saved"], b["args"]["bytes"])

    def test_a_library_call_on_either_side_saves_nothing(self):
        """mm runs as a library call (an extern kernel): it reads sin's buffer
        and writes its output in memory however the generated code around it
        is fused, so neither boundary of it has a predicted gain, even at a
        model that prices time (the page showed 62.5 us for each conv ->
        batch-norm boundary of resnet18).  Counterfactual: sin -> relu between
        two generated kernels, kept apart by no_fusion, saves bytes."""
        a, b = torch.randn(64, 64), torch.randn(64, 64)
        data = _report(
            lambda p, q: (p.sin() @ q).relu(), a, b, fusion_cost_model="3000,2.5"
        )
        (graph,) = data["graphs"]
        kinds = {k["name"]: k["kind"] for k in graph["kernels"]}
        around = [
            b for b in graph["boundaries"] if "mm" in (b["producer"], b["consumer"])
        ]
        # the call's input and its output: a library call on each side in turn
        self.assertEqual(
            sorted((b["producer"], b["consumer"]) for b in around),
            [("mm", "relu"), ("sin", "mm")],
        )
        for b in around:
            self.assertEqual(
                [kinds[k] == "extern" for k in b["kernels"]],
                [b["producer"] == "mm", b["consumer"] == "mm"],
            )
            self.assertIsNotNone(costs.library_side(b, kinds))
            p = b["predicted"]
            self.assertEqual(
                (p["bytes_saved"], p["launches_saved"], p["gain_s"]), (0, 0, None)
            )
            self.assertIn("no fusion can remove this boundary", p["note"])
            self.assertIn("library call", p["note"])
            self.assertEqual(costs.predicted_gain(b, graph, MODEL), p)
        fusion_report.validate(data)
        data = _report(lambda t: t.sin().relu(), a, no_fusion=True)
        (b,) = data["graphs"][0]["boundaries"]
        self.assertIsNone(costs.library_side(b, {}))
        self.assertGreater(
            costs.predicted_gain(b, data["graphs"][0], MODEL)["gain_s"], 0
        )

    def test_no_shared_data_saves_no_bytes_but_a_shared_read_does(self):
        """The halves of x are read at different indices: upstream's
        no_shared_data fires because nothing is accessed at the same index on
        both sides, so fusing them would not read x once instead of twice.
        Counterfactual: sin(x) and cos(x) read x at the same index; kept
        apart by max_fusion_size=1, fusing them saves one read of x."""
        x = torch.randn(8, 4096)
        data = _report(lambda t: (t[:4] * 2, t[4:] * 3), x, aggressive_fusion=False)
        (halves,) = data["graphs"][0]["boundaries"]
        self.assertEqual(halves["reason"], "no_shared_data")
        self.assertEqual(halves["args"]["shared_buffers"], ["arg0_1"])
        self.assertEqual(halves["args"]["bytes"], x.numel() * 4)
        gain = costs.predicted_gain(halves, data["graphs"][0], MODEL)
        self.assertEqual(gain["bytes_saved"], 0)
        self.assertIn("no_shared_data: no buffer is accessed", gain["note"])
        self.assertAlmostEqual(gain["gain_s"], gain["launches_saved"] * 1e-6)
        fusion_report.validate(data)

        data = _report(lambda t: (t.sin(), t.cos()), x, max_fusion_size=1)
        (shared,) = data["graphs"][0]["boundaries"]
        self.assertEqual(shared["reason"], "exceeds_max_fusion_size")
        gain = costs.predicted_gain(shared, data["graphs"][0], MODEL)
        self.assertEqual(gain["read_saved"], x.numel() * 4)
        self.assertNotIn("note", gain)

    def test_annotate_joins_kernel_times_by_generated_name(self):
        x = torch.randn(1024, 256)
        data = _report(sin_cos, x, no_fusion=True)
        (graph,) = data["graphs"]
        functions = sorted({k["function"] for k in graph["kernels"]})
        times = {f: 1e-3 * (i + 1) for i, f in enumerate(functions)}
        costs.annotate(data, MODEL, times)
        self.assertEqual(graph["cost_model"]["source"], "given")
        for kernel in graph["kernels"]:
            self.assertEqual(kernel["hotness_s"], times[kernel["function"]])
        (boundary,) = [b for b in graph["boundaries"] if b["consumer"] == "cos"]
        # Each generated function on either side counted once.
        self.assertAlmostEqual(boundary["hotness_s"], sum(times.values()))
        self.assertAlmostEqual(
            boundary["predicted"]["gain_s"],
            costs.predicted_gain(boundary, graph, MODEL)["gain_s"],
        )


class TestPricedReports(TestCase):
    """The published report carries the cost model and every boundary's gain."""

    def test_every_boundary_of_a_capture_is_priced_at_the_given_model(self):
        x = torch.randn(512, 64)
        data = _report(sin_cos, x, no_fusion=True, fusion_cost_model="3000,2.5")
        (graph,) = data["graphs"]
        self.assertEqual(graph["cost_model"]["bandwidth_bytes_per_s"], 3000e9)
        self.assertEqual(graph["cost_model"]["launch_s"], 2.5e-6)
        self.assertTrue(graph["boundaries"])
        for b in graph["boundaries"]:
            p = b["predicted"]
            expected = p["launches_saved"] * 2.5e-6 + p["bytes_saved"] / 3000e9
            self.assertAlmostEqual(p["gain_s"], expected)
        fusion_report.validate(data)  # raises on a violation

    def test_measure_leaves_the_time_to_the_report_s_reader(self):
        """The default, "measure", times no device during a compile: the
        report keeps bytes and launches, and its cost model says it awaits the
        measurement that fusion_viewer.costs makes where the report is read."""
        self.assertFalse(hasattr(costs, "measure_cost_model"))
        x = torch.randn(512, 64)
        data = _report(sin_cos, x, no_fusion=True, fusion_cost_model="measure")
        (graph,) = data["graphs"]
        model = graph["cost_model"]
        self.assertEqual(
            (model["device"], model["bandwidth_bytes_per_s"], model["launch_s"]),
            ("cpu", None, None),
        )
        self.assertTrue(costs.awaits_measurement(model), model)
        self.assertIn("config.fusion_cost_model='measure'", model["source"])
        (b,) = graph["boundaries"]
        self.assertIsNone(b["predicted"]["gain_s"])
        self.assertEqual(b["predicted"]["bytes_saved"], 2 * b["args"]["bytes"])
        fusion_report.validate(data)
        for spec in ("off", "3000,2.5", "fast"):
            given = costs.cost_model_for("cpu", spec).to_json()
            self.assertFalse(costs.awaits_measurement(given), spec)

    def test_off_keeps_bytes_and_launches_without_time(self):
        data = _report(
            sin_cos, torch.randn(512, 64), no_fusion=True, fusion_cost_model="off"
        )
        (b,) = data["graphs"][0]["boundaries"]
        self.assertIsNone(b["predicted"]["gain_s"])
        self.assertEqual(b["predicted"]["bytes_saved"], 2 * b["args"]["bytes"])

    def test_a_bad_config_value_never_breaks_a_compile(self):
        x = torch.randn(512, 64)
        data = _report(sin_cos, x, no_fusion=True, fusion_cost_model="fast")
        model = data["graphs"][0]["cost_model"]
        self.assertIn("is not a cost model", model["source"])
        self.assertIn("config.fusion_cost_model='fast'", model["source"])
        self.assertIsNone(data["graphs"][0]["boundaries"][0]["predicted"]["gain_s"])

    def test_pricing_never_changes_the_generated_code(self):
        x = torch.randn(512, 64)
        codes = []
        for spec in ("measure", "off"):
            torch._dynamo.reset()
            with config.patch(no_fusion=True, fusion_cost_model=spec):
                with fusion_report.capture():
                    _, (code,) = run_and_get_code(torch.compile(sin_cos), x)
            # (the first line names the AOT graph, numbered per process)
            codes.append(code.split("\n", 1)[1])
        self.assertIn("cpp_fused", codes[0])
        self.assertEqual(codes[0], codes[1])

    def test_the_pages_show_the_gain_and_the_model(self):
        data = _report(
            sin_cos, torch.randn(512, 64), no_fusion=True, fusion_cost_model="3000,2.5"
        )
        (b,) = data["graphs"][0]["boundaries"]
        page = render_html(data)
        self.assertIn("predicted gain</th>", page)
        self.assertIn(f'data-gain="{b["predicted"]["gain_s"]}"', page)
        self.assertIn("cost model: 3000 GB/s copy bandwidth, 2.5 us per launch", page)
        self.assertNotIn('<th title="measured time per step">time</th>', page)
        costs.annotate(
            data,
            costs.cost_model_for("cpu", "3000,2.5"),
            {k["function"]: 1e-3 for k in data["graphs"][0]["kernels"]},
        )
        self.assertIn('<th title="measured time per step">time</th>', render_html(data))


class TestCostLog(LoggingTestCase):
    @make_logging_test(fusion=True)
    def test_the_verbose_log_shows_each_boundary_s_predicted_gain(self, records):
        torch._dynamo.reset()
        x = torch.randn(512, 64)
        with mock.patch.dict(os.environ, {"TORCH_LOGS": "+fusion"}):
            with config.patch(no_fusion=True, fusion_cost_model="3000,2.5"):
                torch.compile(sin_cos)(x)
        text = "\n".join(r.getMessage() for r in records if r.name.endswith("__fusion"))
        self.assertIn("(cost model: 3000 GB/s copy bandwidth, 2.5 us per launch", text)
        # 2 x 128 KiB at 3000 GB/s, and a launch only where the two loop nests
        # are separate functions
        self.assertRegex(
            text, r"sin -> cos \(buf0, .*\): no_fusion .*; predicted: saves 256\.0 KiB"
        )

    @make_logging_test(fusion=True)
    def test_the_verbose_log_predicts_nothing_next_to_a_library_call(self, records):
        """As on the page: a boundary with an extern kernel on one side saves
        nothing, and the log says so rather than price its buffer."""
        torch._dynamo.reset()
        a, b = torch.randn(64, 64), torch.randn(64, 64)
        with mock.patch.dict(os.environ, {"TORCH_LOGS": "+fusion"}):
            with config.patch(fusion_cost_model="3000,2.5"):
                torch.compile(lambda p, q: (p @ q).relu())(a, b)
        text = "\n".join(r.getMessage() for r in records if r.name.endswith("__fusion"))
        self.assertRegex(
            text, r"mm -> relu \(buf0, .*\): extern_kernel .*; predicted: saves nothing"
        )
        self.assertNotRegex(text, r"mm -> relu: .*; predicted: saves \d")

    @make_logging_test(fusion=True)
    def test_the_plain_log_keeps_its_few_lines(self, records):
        torch._dynamo.reset()
        with mock.patch.dict(os.environ, {"TORCH_LOGS": "fusion"}):
            with config.patch(no_fusion=True, fusion_cost_model="3000,2.5"):
                torch.compile(sin_cos)(torch.randn(512, 64))
        text = "\n".join(r.getMessage() for r in records if r.name.endswith("__fusion"))
        self.assertRegex(text, r"sin -> cos \(buf0, [^)]*\): no_fusion")
        self.assertNotIn("predicted", text)
        self.assertNotIn("cost model", text)


class TestCostModelSwitch(TestCase):
    def test_values(self):
        from torch._inductor import fusion_switches as s

        name = s.COST_MODEL_SWITCH
        self.assertEqual(s.env_cost_model(environ={}), "measure")
        self.assertEqual(s.env_cost_model(environ={name: " OFF "}), "off")
        self.assertEqual(s.env_cost_model(environ={name: "3000, 2.50"}), "3000,2.5")
        for bad in ("fast", "3000", "0,1", "3000,-1", "a,b", "inf,1"):
            with self.assertRaisesRegex(ValueError, f"^{name}=.* is not a cost model"):
                s.env_cost_model(environ={name: bad})


if __name__ == "__main__":
    run_tests()
