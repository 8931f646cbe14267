# Owner(s): ["module: inductor"]
"""The fusion study harness (benchmarks/fusion/study.py) end to end.

The harness runs each case in a child process, so these tests run it as a
user does, as a command, on micro-benchmarks of the default set and on models
of a user's file (``--extra-models``): a model that fails to compile and one
with a Dynamo graph break.

A test of the fork's benchmarks, beside them: it travels in no pull-request
stack (``make export``), since the benchmarks do not either.
"""

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from fusion_viewer.study import (
    fmt_inputs,
    index_html,
    slower_cases,
    summary_markdown,
)
from torch._inductor.test_case import run_tests, TestCase


REPO = Path(__file__).resolve().parents[3]
STUDY = REPO / "benchmarks" / "fusion" / "study.py"
sys.path.insert(0, str(STUDY.parent))

import study  # noqa: E402


def run_study(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(STUDY), "--device", "cpu", "--repeats", "1", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )


EXTRA_MODELS = textwrap.dedent(
    """
    import torch
    from torch import nn
    from models import ModelSpec


    @torch.library.custom_op("fusion_study_test::no_fake", mutates_args=())
    def no_fake(x: torch.Tensor) -> torch.Tensor:
        return x.clone()


    class FailsToCompile(nn.Module):
        def forward(self, x):
            # A custom op without a fake (meta) kernel: Dynamo cannot trace it.
            return no_fake(x.sin()) + 1


    class GraphBreak(nn.Module):
        def forward(self, x):
            y = torch.sin(x) * 2
            torch._dynamo.graph_break()  # BREAK_LINE
            return torch.relu(y).sum(0) + 1


    MODELS = {
        "fails_to_compile": ModelSpec(
            "fails_to_compile", "micro",
            lambda full: (FailsToCompile(), (torch.randn(8, 8),)), "no fake kernel"
        ),
        "graph_break": ModelSpec(
            "graph_break", "micro",
            lambda full: (GraphBreak(), (torch.randn(8, 16),)), "a graph break"
        ),
    }
    """
)


class TestStudyHarness(TestCase):
    def test_shard_and_merge_equal_a_single_run(self):
        models = "sin_cos,two_axis_reductions"
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            runs = {
                "single": ["--out", str(tmp / "single")],
                "s1": ["--shard", "1/2", "--out", str(tmp / "s1")],
                "s2": ["--shard", "2/2", "--out", str(tmp / "s2")],
            }
            for extra in runs.values():
                proc = run_study("--models", models, *extra)
                self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
            shard_cases = [
                [
                    r["case"]
                    for r in json.loads((tmp / s / "study.json").read_text())["rows"]
                ]
                for s in ("s1", "s2")
            ]
            # Each shard ran one case, a different one.
            self.assertEqual([len(c) for c in shard_cases], [1, 1])
            self.assertNotEqual(shard_cases[0], shard_cases[1])
            merged = study.main(
                ["merge", str(tmp / "s1"), str(tmp / "s2"), "--out", str(tmp / "m")]
            )
            self.assertEqual(merged, 0)
            single = json.loads((tmp / "single" / "study.json").read_text())
            combined = json.loads((tmp / "m" / "study.json").read_text())
            self.assertEqual(study.structural(combined), study.structural(single))
            self.assertEqual(
                [r["case"] for r in single["rows"]],
                ["sin_cos-inference-default", "two_axis_reductions-inference-default"],
            )
            rows = {r["case"]: r for r in single["rows"]}
            # sin and cos share one kernel; the two-axis reductions do not.
            self.assertEqual(rows["sin_cos-inference-default"]["kernels"], 1)
            self.assertEqual(rows["sin_cos-inference-default"]["boundaries"], 0)
            reductions = rows["two_axis_reductions-inference-default"]
            self.assertGreater(reductions["boundaries"], 0)
            # No op of sin_cos is left alone; some reductions are.
            self.assertEqual(rows["sin_cos-inference-default"]["unfused_ops"], 0)
            self.assertGreater(reductions["unfused_ops"], 0)
            self.assertLessEqual(reductions["unfused_ops"], reductions["ops"])
            self.assertEqual(
                reductions["boundaries"],
                sum(e["count"] for e in reductions["by_reason"].values()),
            )
            self.assertEqual(single["suite"]["unexplained"], 0)
            for out in ("single", "m"):
                for case in rows:
                    page = tmp / out / "cases" / f"{case}.html"
                    self.assertTrue(page.exists(), page)
                index = (tmp / out / "index.html").read_text()
                self.assertIn(f'href="cases/{case}.html"', index)
            # Timings were measured in every run.
            for r in combined["rows"]:
                self.assertGreater(r["eager_ms"], 0)
                self.assertGreater(r["compiled_ms"], 0)
            self.check_answers_lead(tmp / "single", single)

    def check_answers_lead(self, out: Path, single: dict) -> None:
        """The index and summary.md open on the fusion answers, counted from
        the rows; a compiled-slower note comes last, with the study's numbers."""
        index = (out / "index.html").read_text()
        found = {
            k: html.unescape(v)
            for k, v in re.findall(
                r'<li data-answer="(\w+)"><b>\w+</b>: ([^<]*)</li>', index
            )
        }
        self.assertEqual(list(found), ["kernels", "boundaries", "reasons", "coverage"])
        ok = single["rows"]
        self.assertIn(
            f"compiled {sum(r['ops'] for r in ok)} computing aten ops into "
            f"{sum(r['kernels'] for r in ok)} kernels",
            found["kernels"],
        )
        self.assertIn(
            f"{sum(r['boundaries'] for r in ok)} kernel boundaries", found["boundaries"]
        )
        top = single["suite"]["by_count"][0]
        self.assertIn(
            f"Most frequent: {top['reason']} {top['count']}", found["reasons"]
        )
        self.assertIn("0 unexplained", found["coverage"])
        self.assertLess(index.index('id="answers"'), index.index('class="cases"'))
        summary = (out / "summary.md").read_text()
        self.assertLess(summary.index("## Answers"), summary.index("## Cases"))
        # What the note on timings says is recorded: inputs, threads, cores.
        rows = {r["case"]: dict(r) for r in ok}
        self.assertEqual(rows["sin_cos-inference-default"]["inputs"], [[64, 64]])
        settings = single["settings"]
        self.assertGreater(settings["threads"], 0)
        self.assertEqual(settings["cpu_count"], os.cpu_count())
        if not slower_cases(ok):  # a measurement: make one case slower
            slow = rows["sin_cos-inference-default"]
            slow.update(compiled_ms=2 * slow["eager_ms"], speedup=0.5)
        timed = list(rows.values())
        page = index_html(settings, timed, study.suite_tables(timed))
        (note,) = re.findall(r'<div class="caveat" id="slower">(.*?)</div>', page, re.S)
        self.assertLess(
            page.index("Top reasons, suite-wide"), page.index('id="slower"')
        )
        threads = settings["threads"]
        self.assertIn(
            f"on cpu with {threads} thread{'s' * (threads != 1)} on a machine of "
            f"{os.cpu_count()} core",
            html.unescape(note),
        )
        self.assertIn("at the ci shapes", note)
        for r in slower_cases(timed):
            (cells,) = re.findall(rf'<tr data-case="{r["case"]}">(.*?)</tr>', note)
            self.assertIn(f"<td>{fmt_inputs(r)}</td>", cells)
            self.assertIn(f"{r['eager_ms']:.3f}", cells)
            self.assertIn(f"{r['compiled_ms']:.3f}", cells)
        text = summary_markdown(settings, timed, study.suite_tables(timed))
        self.assertLess(text.index("## Top reasons"), text.index("## Timings"))

    def test_failing_model_is_reported_and_the_study_goes_on(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            extra = tmp / "extra_models.py"
            extra.write_text(EXTRA_MODELS)
            proc = run_study(
                "--extra-models",
                str(extra),
                "--models",
                "fails_to_compile,graph_break",
                "--out",
                str(tmp / "out"),
            )
            self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
            data = json.loads((tmp / "out" / "study.json").read_text())
            rows = {r["model"]: r for r in data["rows"]}
            failed = rows["fails_to_compile"]
            self.assertEqual(failed["status"], "failed")
            self.assertIn("no_fake", failed["error"])
            self.assertEqual(data["suite"]["failed"], [failed["case"]])
            self.assertIn("FAILED", proc.stdout)
            self.assertIn(failed["case"], (tmp / "out" / "index.html").read_text())

            # The model after it ran, and its graph break is a boundary.
            broken = rows["graph_break"]
            self.assertEqual(broken["status"], "ok")
            self.assertEqual(broken["graphs"], 2)
            self.assertEqual(broken["graph_breaks"], 1)
            self.assertEqual(broken["by_reason"]["graph_break"]["count"], 1)
            self.assertEqual(broken["by_reason"]["graph_break"]["category"], "legality")
            line = next(
                i
                for i, text in enumerate(EXTRA_MODELS.splitlines(), 1)
                if "BREAK_LINE" in text
            )
            capture = json.loads(
                (tmp / "out" / "captures" / f"{broken['case']}.json").read_text()
            )
            (brk,) = capture["graph_breaks"]
            self.assertEqual(brk["source"], f"{extra}:{line}")
            counted = {m["reason"]: m["count"] for m in data["suite"]["by_count"]}
            self.assertEqual(counted["graph_break"], 1)

    def test_bad_arguments_fail_with_a_message(self):
        for args, message in (
            (["--models", "no_such_model"], "unknown models"),
            (["--modes", "fastest"], "--modes"),
            (["--shard", "3/2"], "--shard"),
            (["--steps", "backward"], "--steps"),
            (["--out", "/proc/fusion-study"], "cannot write"),
        ):
            proc = run_study(*args)
            self.assertNotEqual(proc.returncode, 0, args)
            self.assertIn(message, proc.stderr, args)


class TestStudyTables(TestCase):
    def test_shards_partition_the_plan(self):
        cases = study.plan(["a", "b", "c"], ["inference", "training"], ["default"])
        for n in (1, 2, 3, 4, 7):
            parts = [study.shard(cases, f"{i}/{n}") for i in range(1, n + 1)]
            self.assertEqual(
                sorted(c.id for p in parts for c in p), sorted(c.id for c in cases)
            )
            self.assertEqual(sum(len(p) for p in parts), len(cases))

    def test_bytes_count_each_crossing_once(self):
        boundary = {
            "producer": "sum_1",
            "consumer": "add",
            "relation": "dependency",
            "category": "backend",
            "reason": "reduction_output",
            "kernels": ["op0", "op1"],
            "args": {"buffer": "buf0", "bytes": 400},
        }
        graph = {
            "compile_id": "0/0",
            "ops": [],
            "edges": [],
            "kernels": [],
            "boundaries": [
                boundary,
                # A second op of the same consumer kernel reads the same buffer.
                dict(boundary),
                # Another consumer kernel reads it again.
                dict(boundary, kernels=["op0", "op2"], reason="extern_kernel"),
                # Shared inputs move no intermediate buffer.
                dict(
                    boundary,
                    relation="shared_input",
                    reason="no_shared_data",
                    category="heuristic",
                    args={},
                ),
            ],
        }
        summary = study.summarize({"graphs": [graph], "graph_breaks": []})
        self.assertEqual(summary["boundaries"], 4)
        self.assertEqual(summary["boundary_bytes"], 800)
        self.assertEqual(summary["by_reason"]["reduction_output"]["bytes"], 400)
        self.assertEqual(summary["by_reason"]["extern_kernel"]["bytes"], 400)
        self.assertEqual(summary["heuristic_boundaries"], 1)

    def test_merge_refuses_shards_of_different_studies(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            for name, shapes in (("a", "ci"), ("b", "full")):
                (tmp / name).mkdir()
                settings = {
                    "study_version": 1,
                    "device": "cpu",
                    "shapes": shapes,
                    "models": "sin_cos",
                    "steps": "inference",
                    "modes": "default",
                }
                (tmp / name / "study.json").write_text(
                    json.dumps({"settings": settings, "rows": []})
                )
            with self.assertRaisesRegex(SystemExit, "shapes"):
                study.merge([tmp / "a", tmp / "b"], tmp / "out")


CHROMIUM = next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))),
    None,
)


def study_row(case: str, speedup: float, **extra) -> dict:
    """A synthetic ok row of the study, as run_case and summarize write it."""
    row = {
        "case": case,
        "model": case.split("-")[0],
        "family": "cnn",
        "status": "ok",
        "graphs": 1,
        "graph_breaks": 0,
        "ops": 208,
        "unfused_ops": 10,
        "kernels": 57,
        "kernels_generated": 36,
        "kernels_extern": 21,
        "boundaries": 34,
        "heuristic_boundaries": 1,
        "fusible": {"true": 0, "false": 4, "unknown": 30},
        "boundary_bytes": 2723840,
        "by_reason": {
            "extern_kernel": {"category": "backend", "count": 29, "bytes": 2347008},
            "intermediate_node_between": {
                "category": "legality",
                "count": 4,
                "bytes": 360448,
            },
            "no_shared_data": {"category": "heuristic", "count": 1, "bytes": 16384},
        },
        "by_category": {"backend": 29, "heuristic": 1, "legality": 4},
        "violations": 0,
        "eager_ms": 29.3,
        "compiled_ms": 29.3 / speedup,
        "speedup": speedup,
        "launches_eager": None,
        "launches_compiled": None,
    }
    row.update(extra)
    return row


SETTINGS = {
    "device_name": "cpu",
    "torch": "2.x",
    "fork": "fusion-fork test",
    "shapes": "ci",
    "timing": "perf_counter per step, median",
    "command": "study.py --shapes ci",
}


class TestStudyIndex(TestCase):
    """The index page: every column explained, a caveat where compiled is slower."""

    def index(self, rows: list[dict]) -> str:
        return index_html(SETTINGS, rows, study.suite_tables(rows))

    def test_every_column_has_a_legend(self):
        page = self.index([study_row("resnet18-inference-default", 1.5)])
        heads = re.findall(r"<th><abbr title=\"([^\"]+)\">([^<]+)</abbr></th>", page)
        legends = [
            dict(re.findall(r'<dt data-column="([^"]+)">[^<]*</dt><dd>([^<]+)', dl))
            for dl in re.findall(r'<dl class="columns">(.*?)</dl>', page, re.S)
        ]
        self.assertEqual(len(legends), 2)  # the case table, the reason tables
        self.assertGreater(len(heads), 10)
        for title, name in heads:
            # Explained under the table, in the words of its tooltip.
            self.assertIn((name, title), [i for d in legends for i in d.items()])
        (cases,) = re.findall(r'<table class="cases">(.*?)</tr>', page, re.S)
        self.assertEqual(
            re.findall(r"<abbr[^>]*>([^<]+)</abbr>", cases), list(legends[0])
        )
        # fusible counts what is known, not what was checked.
        self.assertIn("0 yes \u00b7 4 no", page)
        self.assertIn("30 not tried", page)
        # No launches were counted (CPU): the column is left out.
        self.assertNotIn(">launches<", page)

    def test_slower_than_eager_has_a_caveat(self):
        rows = [
            study_row("resnet18-inference-default", 0.5),
            study_row("gru-inference-default", 2.0),
            {
                "case": "bad-inference-default",
                "family": "micro",
                "status": "failed",
                "error": "RuntimeError: boom",
            },
        ]
        page = self.index(rows)
        (caveat,) = re.findall(
            r'<div class="caveat" id="slower">(.*?)</div>', page, re.S
        )
        self.assertIn("slower than eager in 1 of 2 timed cases", caveat)
        # Said after the fusion answers and the case table, not before them.
        self.assertLess(page.index('id="answers"'), page.index('class="cases"'))
        self.assertLess(page.index('class="cases"'), page.index('id="slower"'))
        # The slower case with its numbers: eager and compiled ms, speed-up.
        (row,) = re.findall(r'<tr data-case="([^"]+)">(.*?)</tr>', caveat, re.S)
        self.assertEqual(row[0], "resnet18-inference-default")
        self.assertIn("29.300", row[1])
        self.assertIn("58.600", row[1])
        self.assertIn("0.50\u00d7", row[1])
        self.assertNotIn("gru-inference-default", caveat)
        self.assertIn("at the ci shapes (small inputs", caveat)
        cells = re.findall(r'<td class="num slower">(.*?)</td>', page)
        self.assertEqual(len(cells), 1)
        self.assertIn('href="#slower"', cells[0])
        self.assertIn("FAILED: RuntimeError: boom", page)
        # No caveat when every case is faster compiled.
        self.assertNotIn('id="slower"', self.index(rows[1:]))

    def test_empty_study_says_so_once(self):
        page = self.index([])
        self.assertEqual(page.count("No case ran"), 1)
        self.assertNotIn("<table", page)

    def test_no_horizontal_overflow_at_1400(self):
        if not CHROMIUM:
            if os.environ.get("CI"):
                self.fail("chromium is required under CI")
            self.skipTest("chromium is not installed")
        rows = [
            study_row(f"mobilenet_v3_small-{step}-max-autotune-no-cudagraphs", s)
            for step, s in (("inference", 0.57), ("training", 1.2))
        ]
        rows[0]["launches_eager"], rows[0]["launches_compiled"] = 210.0, 95.0
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "index.html"
            path.write_text(self.index(rows))
            dump = subprocess.run(
                [
                    CHROMIUM,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    f"--user-data-dir={tmp}/profile",
                    "--window-size=1400,1000",
                    "--dump-dom",
                    path.as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            ).stdout
        attrs = dict(re.findall(r'(data-[a-z-]+)="(\d+)"', dump.split(">", 2)[1]))
        self.assertEqual(attrs["data-client-width"], "1400")
        self.assertLessEqual(int(attrs["data-scroll-width"]), 1400)


if __name__ == "__main__":
    run_tests()
