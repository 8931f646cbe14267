# Owner(s): ["module: inductor"]
"""The device's cost model, measured where a fusion report is read.

torch times no device during a compile: under ``config.fusion_cost_model =
"measure"`` (the default) a report keeps bytes and launches and awaits its
measurement.  ``fusion_viewer.costs`` measures the device once per process and
prices such reports from their JSON; a report priced at a given model is left
as it is, and a failed measurement gives a model without time."""

import functools
import json
from unittest import mock

import torch
from fusion_viewer import costs
from torch._inductor import config, fusion_report
from torch._inductor.fusion_remarks import costs as report_costs
from torch._inductor.test_case import run_tests, TestCase


def sin_cos(t):
    return t.sin().cos()


def exp_neg(t):
    return t.exp().neg()


@functools.cache
def _report_json(fn, spec):
    torch._dynamo.reset()
    with config.patch(no_fusion=True, fusion_cost_model=spec):
        with fusion_report.capture() as rep:
            torch.compile(fn)(torch.randn(512, 64))
    return json.dumps(rep.to_json())


def report(fn, spec="measure"):
    """A capture of ``fn`` without fusion (compiled once; a fresh copy each call)."""
    return json.loads(_report_json(fn, spec))


class MeasuredCostsTest(TestCase):
    def setUp(self):
        super().setUp()
        costs._measured.pop("cpu", None)
        self.addCleanup(costs._measured.pop, "cpu", None)

    def test_the_measured_cost_model_is_plausible(self):
        model = costs.measure_cost_model("cpu", nbytes=16 * 2**20, launches=50)
        self.assertGreater(model.bandwidth_bytes_per_s, 1e8)  # above 0.1 GB/s
        self.assertGreater(model.launch_s, 0)
        self.assertIn("measured", model.source)

    def test_reports_awaiting_measurement_are_priced_once_per_device(self):
        first, second = report(sin_cos), report(exp_neg)
        for data in (first, second):
            self.assertTrue(
                report_costs.awaits_measurement(data["graphs"][0]["cost_model"])
            )
        with mock.patch.object(
            costs, "measure_cost_model", wraps=costs.measure_cost_model
        ) as measured:
            self.assertIs(costs.price_measured(first), first)
            costs.price_measured(second)
        self.assertEqual(measured.call_count, 1)
        models = [d["graphs"][0]["cost_model"] for d in (first, second)]
        self.assertEqual(models[0], models[1])
        # the sizes the compile-time measurement had: a page reads as before
        self.assertEqual(
            models[0]["source"],
            "measured: 2 copies of 16 MiB and 200 one-element kernels back to "
            "back, median of 5",
        )
        self.assertGreater(models[0]["bandwidth_bytes_per_s"], 0)
        self.assertFalse(report_costs.awaits_measurement(models[0]))
        graph = first["graphs"][0]
        model = costs.CostModel(**graph["cost_model"])
        for b in graph["boundaries"]:
            self.assertIsNotNone(b["predicted"]["gain_s"])
            self.assertEqual(
                b["predicted"], costs.predicted_gain(b, graph, model), b["consumer"]
            )
        fusion_report.validate(first)

    def test_a_given_model_is_left_as_it_is(self):
        for spec in ("3000,2.5", "off"):
            data = report(sin_cos, spec)
            before = json.dumps(data)
            with mock.patch.object(
                costs, "measure_cost_model", side_effect=AssertionError
            ):
                costs.price_measured(data)
            self.assertEqual(json.dumps(data), before, spec)

    def test_a_model_can_be_given_to_price_with(self):
        data = report(sin_cos)
        model = costs.CostModel("cpu", 3000e9, 2.5e-6, "given")
        with mock.patch.object(costs, "measure_cost_model", side_effect=AssertionError):
            costs.price_measured(data, model)
        self.assertEqual(data["graphs"][0]["cost_model"], model.to_json())

    def test_a_failed_measurement_gives_a_model_without_time(self):
        data = report(sin_cos)
        with mock.patch.object(
            costs, "measure_cost_model", side_effect=RuntimeError("no device")
        ):
            costs.price_measured(data)
        (graph,) = data["graphs"]
        self.assertEqual(
            graph["cost_model"]["source"], "not measured: RuntimeError: no device"
        )
        self.assertIsNone(graph["boundaries"][0]["predicted"]["gain_s"])
        fusion_report.validate(data)


if __name__ == "__main__":
    run_tests()
