# Owner(s): ["module: inductor"]
"""What a missed fusion costs (issue 17, in progress): the predicted gain of
each boundary from a real compile's report, and the join of kernel times."""

import torch
from torch._inductor import config, fusion_report
from torch._inductor.fusion_remarks import costs
from torch._inductor.test_case import run_tests, TestCase


MODEL = costs.CostModel(
    device="cpu", bandwidth_bytes_per_s=1e9, launch_s=1e-6, source="given"
)


def _report(fn, *args, **patches):
    torch._dynamo.reset()
    with config.patch(patches), fusion_report.capture() as rep:
        torch.compile(fn)(*args)
    return rep.to_json()


class TestPredictedGain(TestCase):
    def test_a_chain_without_fusion_saves_a_read_and_a_write(self):
        """no_fusion puts sin and cos in kernels of their own: fusing them
        saves the consumer's read and the producer's write of sin's buffer
        (nothing else reads it), and a launch where the two are separate
        functions (on the CPU they are loop nests of one function)."""
        x = torch.randn(1024, 256)
        data = _report(lambda t: t.sin().cos(), x, no_fusion=True)
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

    def test_a_library_kernel_saves_no_launch(self):
        a, b = torch.randn(64, 64), torch.randn(64, 64)
        data = _report(lambda p, q: (p @ q).relu(), a, b)
        (graph,) = data["graphs"]
        (boundary,) = [b for b in graph["boundaries"] if b["producer"] == "mm"]
        self.assertEqual(
            costs.predicted_gain(boundary, graph, MODEL)["launches_saved"], 0
        )

    def test_annotate_joins_kernel_times_by_generated_name(self):
        x = torch.randn(1024, 256)
        data = _report(lambda t: t.sin().cos(), x, no_fusion=True)
        (graph,) = data["graphs"]
        functions = sorted({k["function"] for k in graph["kernels"]})
        times = {f: 1e-3 * (i + 1) for i, f in enumerate(functions)}
        costs.annotate(data, MODEL, times)
        self.assertEqual(data["cost_model"]["source"], "given")
        for kernel in graph["kernels"]:
            self.assertEqual(kernel["hotness_s"], times[kernel["function"]])
        (boundary,) = [b for b in graph["boundaries"] if b["consumer"] == "cos"]
        # Each generated function on either side counted once.
        self.assertAlmostEqual(boundary["hotness_s"], sum(times.values()))
        self.assertIn("gain_s", boundary["predicted"])

    def test_the_measured_cost_model_is_plausible(self):
        model = costs.measure_cost_model("cpu", nbytes=16 * 2**20, launches=50)
        self.assertGreater(model.bandwidth_bytes_per_s, 1e8)  # above 0.1 GB/s
        self.assertGreater(model.launch_s, 0)
        self.assertIn("measured", model.source)


if __name__ == "__main__":
    run_tests()
