# Owner(s): ["module: inductor"]
"""The JSON Schema of fusion reports: real captures match it, broken ones do not.

``torch/_inductor/fusion_report_schema.json`` describes what
``fusion_report.capture().to_json()`` returns (schema version 3).  Real captures
of a pointwise+reduction function, a training step and a function with a graph
break must validate; corrupted documents must be rejected with a message that
names the path of each violation; and the schema's closed sets (reason codes,
categories, stages, kinds) must equal the enums in ``fusion_remarks.taxonomy``.
"""

import contextlib
import copy
import functools
import inspect
import io
import json
import os
import re
import sys
from unittest import mock

import torch
import torch._dynamo
from torch._inductor import fusion_report
from torch._inductor.fusion_remarks.taxonomy import Category, Kind, Reason, Stage
from torch._inductor.test_case import run_tests, TestCase


# the repository's root (this file is test/inductor/ in it)


def pointwise_and_reduction(x):
    y = torch.sin(x) * 2 + 1
    return y.sum(-1) / y.amax()


def prints_in_the_middle(x):
    y = torch.cos(x) + 1
    print("fusion report schema test")  # the graph break
    return torch.relu(y) * 3


class SmallMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.norm(self.fc1(x))))


def _capture(run):
    torch._dynamo.reset()
    with fusion_report.capture() as rep:
        run()
    return rep.to_json()


# Each capture compiles once per process; tests get deep copies.
@functools.cache
def _pointwise_and_reduction_report():
    return _capture(lambda: torch.compile(pointwise_and_reduction)(torch.randn(8, 32)))


@functools.cache
def _training_step_report():
    torch.manual_seed(0)
    model = SmallMLP()
    compiled = torch.compile(model)

    def step():
        x, target = torch.randn(4, 8), torch.randn(4, 4)
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        loss.backward()
        assert all(p.grad is not None for p in model.parameters())

    return _capture(step)


@functools.cache
def _graph_break_report():
    with contextlib.redirect_stdout(io.StringIO()):
        return _capture(lambda: torch.compile(prints_in_the_middle)(torch.randn(16)))


def report(name):
    return copy.deepcopy(
        {
            "pointwise_and_reduction": _pointwise_and_reduction_report,
            "training_step": _training_step_report,
            "graph_break": _graph_break_report,
        }[name]()
    )


def load_schema():
    with open(fusion_report.SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)


def line_of(fn, text):
    """The file line of the first line of ``fn`` that contains ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


class TestFusionReportSchema(TestCase):
    def assertValid(self, data):
        fusion_report.validate(data)
        # And after a trip through JSON text, as a file on disk would be read.
        fusion_report.validate(json.loads(json.dumps(data)))

    def assertRejected(self, data, *paths):
        """``validate`` raises, naming every one of ``paths`` (JSON paths)."""
        with self.assertRaises(ValueError) as ctx:
            fusion_report.validate(data)
        message = str(ctx.exception)
        self.assertIn("not a valid fusion report", message)
        self.assertIn(f"{len(paths)} violation(s)", message)
        for path in paths:
            self.assertRegex(message, rf"(?m)^  {re.escape(path)}: ")
        return message

    # -- real captures -------------------------------------------------------

    def test_pointwise_and_reduction_capture_validates(self):
        data = report("pointwise_and_reduction")
        self.assertEqual(len(data["graphs"]), 1)
        self.assertEqual(data["graph_breaks"], [])
        self.assertValid(data)

    def test_training_step_capture_validates(self):
        data = report("training_step")
        ids = [g["compile_id"] for g in data["graphs"]]
        self.assertEqual(ids, ["0/0", "0/0 backward"])
        self.assertTrue(any(g["boundaries"] for g in data["graphs"]))
        self.assertValid(data)

    def test_graph_break_capture_validates(self):
        data = report("graph_break")
        self.assertValid(data)
        self.assertEqual(len(data["graph_breaks"]), 1)
        entry = data["graph_breaks"][0]
        self.assertEqual(
            (entry["kind"], entry["reason"], entry["category"], entry["stage"]),
            ("missed", "graph_break", "legality", "dynamo"),
        )
        code = prints_in_the_middle.__code__
        self.assertEqual(
            entry["source"],
            f"{code.co_filename}:{line_of(prints_in_the_middle, 'print(')}",
        )
        ids = {g["compile_id"] for g in data["graphs"]}
        self.assertTrue(entry["graphs_before"])
        self.assertTrue(entry["graphs_after"])
        self.assertLessEqual(set(entry["graphs_before"] + entry["graphs_after"]), ids)
        # The entry on its own, in an otherwise empty report.
        alone = dict(data, graphs=[], graph_breaks=[entry])
        fusion_report.validate(alone)
        entry["stage"] = "scheduler"
        self.assertRejected(alone, "$.graph_breaks[0].stage")

    def test_fusible_check_validates(self):
        data = report("training_step")
        graph = next(i for i, g in enumerate(data["graphs"]) if g["boundaries"])
        boundaries = data["graphs"][graph]["boundaries"]
        boundaries[0]["fusible_check"] = {
            "forced": True,
            "correct": True,
            "faster": False,
            "stock_ms": 0.021,
            "forced_ms": 0.025,
            "speedup": 0.84,
            "device": "cpu",
            "detail": "forced op0 + op1 with the heuristic off",
        }
        if len(boundaries) > 1:
            # A check that could not force the pair measures nothing.
            boundaries[1]["fusible_check"] = {
                "forced": False,
                "correct": None,
                "faster": None,
                "stock_ms": None,
                "forced_ms": None,
                "speedup": None,
                "device": "cpu",
                "detail": "the scheduler still refused the pair",
            }
        self.assertValid(data)
        check = boundaries[0]["fusible_check"]
        check["faster"] = "yes"
        del check["device"]
        path = f"$.graphs[{graph}].boundaries[0].fusible_check"
        message = self.assertRejected(data, path, f"{path}.faster")
        self.assertIn("'device' is a required property", message)

    # -- corrupted documents -------------------------------------------------

    def test_extern_input_ops_are_described(self):
        # the MLP's matmuls read values generated kernels compute (the
        # layer norm, the gelu): the calls name them as inputs, not as ops
        data = report("training_step")
        found = [
            (g, k)
            for g, graph in enumerate(data["graphs"])
            for k, kernel in enumerate(graph["kernels"])
            if kernel.get("input_ops")
        ]
        self.assertTrue(found)
        for g, k in found:
            kernel = data["graphs"][g]["kernels"][k]
            self.assertIn(kernel["kind"], ("extern", "fallback"))
            self.assertFalse(set(kernel["input_ops"]) & set(kernel["ops"]))
        g, k = found[0]
        data["graphs"][g]["kernels"][k]["input_ops"] = "addmm"
        self.assertRejected(data, f"$.graphs[{g}].kernels[{k}].input_ops")

    def test_wrong_category_is_rejected(self):
        data = report("training_step")
        graph = next(i for i, g in enumerate(data["graphs"]) if g["boundaries"])
        data["graphs"][graph]["boundaries"][0]["category"] = "fused"
        data["reasons"]["inlined"]["category"] = "fusedd"
        message = self.assertRejected(
            data,
            f"$.graphs[{graph}].boundaries[0].category",
            "$.reasons.inlined.category",
        )
        self.assertIn("'fused' is not one of", message)

    def test_unknown_reason_is_rejected(self):
        data = report("pointwise_and_reduction")
        data["graphs"][0]["remarks"][0]["reason"] = "fused_by_magic"
        message = self.assertRejected(data, "$.graphs[0].remarks[0].reason")
        self.assertIn(
            f"'fused_by_magic' is not one of the {len(Reason)} allowed values", message
        )

    def test_missing_key_is_rejected(self):
        data = report("pointwise_and_reduction")
        del data["graphs"][0]["cache"]
        del data["graphs"][0]["ops"][0]["target"]
        message = self.assertRejected(data, "$.graphs[0]", "$.graphs[0].ops[0]")
        self.assertIn("'cache' is a required property", message)
        self.assertIn("'target' is a required property", message)

    def test_wrong_schema_version_is_rejected(self):
        data = report("pointwise_and_reduction")
        data["schema_version"] = 1
        self.assertRejected(data, "$.schema_version")

    def test_unknown_key_is_rejected(self):
        data = report("pointwise_and_reduction")
        data["graphs"][0]["kernels"][0]["colour"] = "red"
        message = self.assertRejected(data, "$.graphs[0].kernels[0]")
        self.assertIn("'colour' was unexpected", message)

    def test_fused_pair_with_reason_is_rejected(self):
        data = report("training_step")
        graph, pair = next(
            (i, j)
            for i, g in enumerate(data["graphs"])
            for j, p in enumerate(g["evaluated_pairs"])
            if not p["fused"]
        )
        data["graphs"][graph]["evaluated_pairs"][pair]["reason"] = None
        self.assertRejected(data, f"$.graphs[{graph}].evaluated_pairs[{pair}].reason")

    def test_replayed_graph_needs_compiled_as(self):
        data = report("pointwise_and_reduction")
        graph = data["graphs"][0]
        graph["cache"] = "replayed"
        message = self.assertRejected(data, "$.graphs[0]")
        self.assertIn("'compiled_as' is a required property", message)
        graph["compiled_as"] = "3/0"
        fusion_report.validate(data)
        graph["cache"] = "miss"  # compiled_as only comes with a replay
        self.assertRejected(data, "$.graphs[0].cache")

    def test_missing_jsonschema_raises_import_error(self):
        with mock.patch.dict(sys.modules, {"jsonschema": None}):
            with self.assertRaises(ImportError) as caught:
                fusion_report.validate({})
        message = str(caught.exception)
        self.assertIn("pip install jsonschema", message)
        self.assertIsNone(caught.exception.__cause__)  # one message, no chain

    # -- the schema itself ---------------------------------------------------

    def test_schema_is_reachable_through_the_overlay(self):
        path = fusion_report.SCHEMA_PATH
        self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(os.path.dirname(path), os.path.dirname(fusion_report.__file__))

    def test_schema_is_a_draft_2020_12_schema(self):
        import jsonschema

        schema = load_schema()
        jsonschema.Draft202012Validator.check_schema(schema)
        self.assertEqual(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema"
        )
        for key in ("$id", "title", "description"):
            self.assertTrue(schema[key], key)
        self.assertEqual(
            schema["properties"]["schema_version"]["const"],
            fusion_report.SCHEMA_VERSION,
        )

    def test_schema_reason_codes_equal_reason_enum(self):
        enum = load_schema()["$defs"]["reason_code"]["enum"]
        self.assertEqual(len(enum), len(set(enum)))
        self.assertEqual(sorted(enum), sorted(r.value for r in Reason))

    def test_schema_enums_equal_remark_enums(self):
        defs = load_schema()["$defs"]
        for name, enum in (
            ("category", Category),
            ("stage", Stage),
            ("kind", Kind),
        ):
            self.assertEqual(sorted(defs[name]["enum"]), sorted(e.value for e in enum))
        self.assertEqual(
            set(defs["boundary_category"]["enum"]),
            {c.value for c in Category} - {"fused", "analysis"},
        )
        self.assertEqual(
            defs["graph_break"]["properties"]["category"]["const"],
            Reason.GRAPH_BREAK.category.value,
        )


if __name__ == "__main__":
    run_tests()
