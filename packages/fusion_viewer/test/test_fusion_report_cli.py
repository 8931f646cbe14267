# Owner(s): ["module: inductor"]
"""``python -m fusion_viewer``: ``render``, ``diff`` and ``study``.

Real captures of a small conv net (conv, batch norm, ReLU, a residual add, a
mean) compiled through the fork under three configs (default,
``fusion_only``, ``no_fusion``), once for the class, and a real
``TORCH_TRACE`` directory written by a subprocess that compiles a function
with a graph break; ``tlparse`` (requirements/common.txt) reads that trace.

Without ``tlparse`` the trace test is skipped, except when the environment
variable ``CI`` is set: then it fails, so that CI cannot pass by skipping it.
"""

import collections
import contextlib
import copy
import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

import fusion_viewer.page
import torch
import torch._dynamo
from fusion_viewer import cli, diff as render_diff, html, store, study
from torch._inductor import fusion_report
from torch._inductor.fusion_remarks import summary as fusion_summary
from torch._inductor.test_case import run_tests, TestCase


TLPARSE = next(
    filter(
        os.path.exists,
        [os.path.join(os.path.dirname(sys.executable), "tlparse")],
    ),
    shutil.which("tlparse"),
)
ERROR_PREFIX = "fusion_viewer: error: "


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv1(x)))
        return torch.relu(self.conv2(h) + h).mean((2, 3))


# Compiled in a subprocess under TORCH_TRACE: two graphs (a graph break).
TRACED = textwrap.dedent(
    """
    import json, sys
    import torch
    from torch._inductor import fusion_report

    def f(x):
        y = torch.softmax(x * 2, -1)
        torch._dynamo.graph_break()
        return (y.sin() + 1).sum(-1)

    with fusion_report.capture() as rep:
        torch.compile(f)(torch.randn(8, 8))
    with open(sys.argv[1], "w") as out:
        json.dump(rep.to_json(), out)
    """
)


def compile_captured(**config):
    """The capture of Net compiled under ``config``, as saved JSON reads back."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Net().eval()
    with torch._inductor.config.patch(**config), fusion_report.capture() as rep:
        with torch.no_grad():
            torch.compile(model)(torch.randn(1, 3, 16, 16))
    return rep, json.loads(json.dumps(rep.to_json()))


def ends(graph, boundary):
    """The key the diff matches boundaries by, computed here on its own."""
    ops = {op["name"]: op for op in graph["ops"]}
    p, c = ops[boundary["producer"]], ops[boundary["consumer"]]
    return (
        p["target"],
        p["source"],
        c["target"],
        c["source"],
        boundary["relation"],
    )


def run_cli(*argv):
    """``cli.main`` in this process: ``(exit status, stdout, stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def run_module(*argv, module="fusion_viewer", env=None):
    return subprocess.run(
        [sys.executable, "-m", module, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


class TestFusionReportCli(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.rep, cls.default = compile_captured()
        _, cls.no_fusion = compile_captured(no_fusion=True)
        _, cls.fusion_only = compile_captured(fusion_only=True)

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def save(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(data, f)
        return path

    def assert_error(self, argv, *needles):
        rc, out, err = run_cli(*argv)
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(err.count("\n"), 1, err)
        self.assertTrue(err.startswith(ERROR_PREFIX), err)
        for needle in needles:
            self.assertIn(needle, err)
        return err

    # ------------------------------------------------------------ render

    def test_render_json_writes_the_page_save_html_writes(self):
        """``render --measure`` prices the graphs as ``save_html`` does (one
        measurement per process: the same numbers); without it a graph
        captured under "measure" says it is still to be measured."""
        path = self.save("default.json", self.default)
        unpriced = os.path.join(self.tmp, "unpriced.html")
        self.assertEqual(run_cli("render", path, "-o", unpriced)[0], 0)
        with open(unpriced) as f:
            self.assertIn("to be measured", f.read())
        out = os.path.join(self.tmp, "page.html")
        rc, stdout, err = run_cli("render", path, "--measure", "-o", out)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(stdout, f"wrote {out}: 1 graph\n")
        # save_html titles the page with its file's name, render with its
        # input's: both "default" here.
        expected = os.path.join(self.tmp, "default.html")
        fusion_viewer.page.save_html(self.rep, expected)
        with open(out) as f, open(expected) as g:
            page = f.read()
            self.assertEqual(page, g.read())
        self.assertIn("<title>default \u00b7 fusion report</title>", page)
        self.assertIn('id="graph-0-0"', page)
        for b in self.default["graphs"][0]["boundaries"]:
            self.assertIn(b["reason"], page)

    def test_trace_dir_tlparse_and_render(self):
        if TLPARSE is None:
            if os.environ.get("CI"):
                self.fail("tlparse is not installed (requirements/common.txt)")
            self.skipTest("tlparse is not installed")
        trace = os.path.join(self.tmp, "trace")
        script = os.path.join(self.tmp, "traced.py")
        saved = os.path.join(self.tmp, "capture.json")
        with open(script, "w") as f:
            f.write(TRACED)
        env = dict(
            os.environ, TORCH_TRACE=trace, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1"
        )
        proc = subprocess.run(
            [sys.executable, script, saved],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        with open(saved) as f:
            captured = json.load(f)
        self.assertEqual([g["compile_id"] for g in captured["graphs"]], ["0/0", "1/0"])

        # tlparse reads the trace, by the command the docs give for a
        # TORCH_TRACE folder (its newest log), and lists the fusion artifacts
        # of each graph.
        logs = glob.glob(os.path.join(trace, "*.log"))
        self.assertEqual(len(logs), 1, os.listdir(trace))
        tl_out = os.path.join(self.tmp, "tl_out")
        proc = subprocess.run(
            [
                "sh",
                "-c",
                'tlparse "$(ls -t "$TORCH_TRACE"/*.log | head -n 1)" -o tl_out '
                "--no-browser",
            ],
            cwd=self.tmp,
            env=dict(
                os.environ,
                TORCH_TRACE=trace,
                PATH=os.pathsep.join([os.path.dirname(TLPARSE), os.environ["PATH"]]),
            ),
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(tl_out, "compile_directory.json")) as f:
            directory = json.load(f)
        # "[0/0_1]": compile 0/0, attempt 1 (the graph break restarts it)
        listed = collections.defaultdict(list)
        for cid, entry in directory.items():
            for artifact in entry["artifacts"]:
                if artifact["name"].startswith("inductor_fusion_remarks"):
                    listed[re.sub(r"_\d+(?=\]$)", "", cid)].append(artifact["url"])
        self.assertEqual(sorted(listed), ["[0/0]", "[1/0]"], directory)
        self.assertEqual([len(urls) for urls in listed.values()], [1, 1])
        # ... and beside each, the log's summary as a text file
        texts = {
            re.sub(r"_\d+(?=\]$)", "", cid): artifact["url"]
            for cid, entry in directory.items()
            for artifact in entry["artifacts"]
            if artifact["name"].startswith("inductor_fusion_summary")
        }
        self.assertEqual(sorted(texts), ["[0/0]", "[1/0]"], directory)
        for cid, graph in zip(("[0/0]", "[1/0]"), captured["graphs"]):
            self.assertTrue(texts[cid].endswith(".txt"), texts[cid])
            with open(os.path.join(tl_out, texts[cid])) as f:
                text = f.read()
            self.assertEqual(
                text,
                f"{fusion_summary.render_graph(graph, costs=True)}\n"
                f"{fusion_summary.render_evaluated_pairs(graph)}\n",
            )
            self.assertTrue(text.startswith(f"graph {graph['compile_id']} (cpu): "))
        with open(os.path.join(tl_out, "index.html")) as f:
            self.assertIn("inductor_fusion_remarks", f.read())

        # The trace reads back as the capture the same run saved.
        loaded = store.load(trace)
        self.assertEqual(loaded["graphs"], captured["graphs"])
        self.assertEqual(loaded["graph_breaks"], [])
        self.assertRegex(loaded["producer"], r"^torch \d+\.\d+\.\d+")
        self.assertIn(torch.__version__, loaded["producer"])
        fusion_report.validate(loaded)
        # ... and so does each artifact tlparse extracted.
        for cid, graph in zip(("[0/0]", "[1/0]"), captured["graphs"]):
            extracted = os.path.join(tl_out, listed[cid][0])
            self.assertEqual(store.load(extracted)["graphs"], [graph])

        out = os.path.join(self.tmp, "trace.html")
        rc, stdout, err = run_cli("render", trace, "-o", out)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(stdout, f"wrote {out}: 2 graphs\n")
        with open(out) as f:
            page = f.read()
        self.assertIn('id="graph-0-0"', page)
        self.assertIn('id="graph-1-0"', page)
        # titled with the TORCH_TRACE directory's name
        self.assertEqual(page, html.render_html(loaded, "trace"))

        # A trace compared with the capture of the same run: nothing differs.
        rc, stdout, _ = run_cli("diff", saved, trace)
        self.assertEqual(rc, 0)
        self.assertIn("graphs: 2 matched by compile id", stdout)
        self.assertTrue(stdout.endswith("no differences\n"), stdout)

    def test_the_module_runs_as_a_program(self):
        for module in ("fusion_viewer",):
            with self.subTest(module):
                path = self.save("default.json", self.default)
                out = os.path.join(self.tmp, "page.html")
                proc = run_module("render", path, "-o", out, module=module)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertTrue(os.path.getsize(out) > 0)
                missing = os.path.join(self.tmp, "missing.json")
                proc = run_module("render", missing, "-o", out, module=module)
                self.assertEqual(proc.returncode, 2)
                self.assertNotIn("Traceback", proc.stderr)
                self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
                proc = run_module("--help", module=module)
                self.assertEqual(proc.returncode, 0)
                for command in ("render", "diff", "study"):
                    self.assertIn(command, proc.stdout)

    # ------------------------------------------------------------ diff

    def test_no_fusion_adds_boundaries_with_its_reason(self):
        a, b = self.default, self.no_fusion
        d = render_diff.diff(a, b)
        self.assertEqual(len(d.graphs), 1)
        g = d.graphs[0]
        ga, gb = a["graphs"][0], b["graphs"][0]
        self.assertIs(g.a, ga)
        self.assertIs(g.b, gb)
        # Each boundary of no_fusion whose ops (by target and source line)
        # had no boundary in the default compile appeared, with no_fusion.
        keys_a = {ends(ga, x) for x in ga["boundaries"]}
        new = [x for x in gb["boundaries"] if ends(gb, x) not in keys_a]
        self.assertGreater(len(new), 3)
        appeared = [c.b for c in g.changes if c.status == "appeared"]
        self.assertEqual([id(x) for x in appeared], [id(x) for x in new])
        self.assertEqual({x["reason"] for x in appeared}, {"no_fusion"})
        self.assertEqual(g.count("disappeared"), 0)
        # Default's boundaries stay; any whose reason changed now says no_fusion.
        for c in g.changes:
            if c.status == "changed":
                self.assertEqual(c.a_ends, c.b_ends)
                self.assertEqual(c.reasons[1], "no_fusion")
                self.assertNotEqual(c.reasons[0], "no_fusion")
        self.assertEqual(g.same + g.count("changed"), len(ga["boundaries"]))
        (gen_a, ext_a), (gen_b, ext_b) = g.kernels("a"), g.kernels("b")
        # on the CPU the loop nests split; the C++ functions holding them need not
        self.assertGreater(g.loop_nests("b"), g.loop_nests("a"))
        self.assertGreaterEqual(gen_b, gen_a)
        self.assertEqual(ext_b, ext_a)

        # The command line prints the same, and writes a page with -o.
        pa, pb = self.save("default.json", a), self.save("no_fusion.json", b)
        out = os.path.join(self.tmp, "diff.html")
        rc, text, err = run_cli("diff", pa, pb, "-o", out)
        self.assertEqual((rc, err), (0, ""))
        expected = render_diff.render_text(render_diff.diff(a, b, pa, pb))
        self.assertEqual(text, expected + f"wrote {out}\n")
        lines = text.splitlines()
        self.assertIn(
            "graphs: 1 matched by compile id, 0 only in A, 0 only in B", lines
        )
        self.assertEqual(
            sum(1 for line in lines if line.startswith("  + appeared")), len(new)
        )
        self.assertIn(
            f"kernels in all graphs: {gen_a + ext_a} -> {gen_b + ext_b} "
            f"({gen_b + ext_b - gen_a - ext_a:+d})",
            lines,
        )
        self.assertTrue(
            any(
                re.fullmatch(rf"  no_fusion +0 +{len(new) + g.count('changed')}", x)
                for x in lines
            ),
            text,
        )
        self.assertEqual(lines[-1], f"wrote {out}")
        with open(out) as f:
            page = f.read()
        self.assertEqual(page.count('data-status="appeared"'), len(new))
        self.assertEqual(
            page.count('data-reason-b="no_fusion"'), len(new) + g.count("changed")
        )

        # Backwards, the same boundaries disappear.
        back = render_diff.diff(b, a).graphs[0]
        self.assertEqual(back.count("disappeared"), len(new))
        self.assertEqual(back.count("appeared"), 0)
        self.assertEqual(back.count("changed"), g.count("changed"))

    def test_fusion_only_keeps_the_boundaries_between_the_same_ops(self):
        a, b = self.default, self.fusion_only
        gb = b["graphs"][0]
        # the switch did act: it left its remarks ...
        self.assertTrue(any(r["reason"] == "config_held_off" for r in gb["remarks"]))
        d = render_diff.diff(a, b)
        g = d.graphs[0]
        ga = a["graphs"][0]
        # without layout optimization the layout copies go, and with them the
        # buffers they write for the convolution: those boundaries alone go
        copies = {k["name"] for k in ga["kernels"] if k.get("copy_for")}
        of_copies = [x for x in ga["boundaries"] if x["kernels"][0] in copies]
        self.assertTrue(of_copies)
        self.assertEqual(g.count("appeared"), 0)
        self.assertEqual(g.count("disappeared"), len(of_copies))
        self.assertEqual(len(gb["boundaries"]), len(ga["boundaries"]) - len(of_copies))
        for c in g.changes:  # else at most reasons change, between the same ops
            if c.status == "disappeared":
                continue
            self.assertEqual(c.status, "changed")
            self.assertEqual(c.a_ends, c.b_ends)
            self.assertNotEqual(*c.reasons)
        # ... and without layout optimization there are no layout copies.
        self.assertLess(g.loop_nests("b"), g.loop_nests("a"))
        self.assertLessEqual(sum(g.kernels("b")), sum(g.kernels("a")))
        self.assertFalse(d.empty)
        text = render_diff.render_text(d)
        ka, kb = sum(g.kernels("a")), sum(g.kernels("b"))
        self.assertIn(f"graph 0/0: kernels {ka} -> {kb} ({kb - ka:+d};", text)

    def test_diff_of_a_capture_with_itself_is_empty(self):
        path = self.save("default.json", self.default)
        rc, text, err = run_cli("diff", path, path)
        self.assertEqual((rc, err), (0, ""))
        n = len(self.default["graphs"][0]["boundaries"])
        self.assertIn(
            f"boundaries in matched graphs: {n} -> {n}: 0 appeared, 0 disappeared, "
            f"0 changed, 0 moved, {n} the same",
            text,
        )
        self.assertTrue(text.endswith("\nno differences\n"), text)
        self.assertTrue(render_diff.diff(self.no_fusion, self.no_fusion).empty)

    def test_diff_of_captures_of_different_programs_is_an_error(self):
        """Captures whose ops come from no common source file are not two
        captures of one program: the command says so in one line and exits
        2; the API's diff says so in its text."""
        b = copy.deepcopy(self.default)
        for graph in b["graphs"]:
            for op in graph["ops"]:
                if op["source"]:
                    _, _, line = op["source"].rpartition(":")
                    op["source"] = f"/elsewhere/other_model.py:{line}"
        a_path, b_path = self.save("a.json", self.default), self.save("b.json", b)
        err = self.assert_error(
            ["diff", a_path, b_path], "share no source file", "other_model.py"
        )
        self.assertIn(os.path.basename(__file__), err)
        d = render_diff.diff(self.default, b)
        self.assertTrue(d.unrelated)
        self.assertEqual(d.b_files, ("/elsewhere/other_model.py",))
        self.assertIn("share no source file", render_diff.render_text(d))
        # one file in common is enough to compare
        b["graphs"][0]["ops"][0]["source"] = self.default["graphs"][0]["ops"][0][
            "source"
        ] or next(
            op["source"] for op in self.default["graphs"][0]["ops"] if op["source"]
        )
        self.assertFalse(render_diff.diff(self.default, b).unrelated)
        rc, _, _ = run_cli("diff", a_path, self.save("b2.json", b))
        self.assertEqual(rc, 0)

    def test_ops_are_matched_by_target_and_line_not_by_name(self):
        b = copy.deepcopy(self.no_fusion)
        graph = b["graphs"][0]
        renamed = {op["name"]: f"renamed_{i}" for i, op in enumerate(graph["ops"])}
        for op in graph["ops"]:
            op["name"] = renamed[op["name"]]
        for x in graph["boundaries"]:
            x["producer"], x["consumer"] = (
                renamed[x["producer"]],
                renamed[x["consumer"]],
            )
        self.assertTrue(render_diff.diff(self.no_fusion, b).empty)
        # By name alone, the same ops would have looked all new.
        d = render_diff.diff(self.default, b).graphs[0]
        ref = render_diff.diff(self.default, self.no_fusion).graphs[0]
        self.assertEqual(
            [(c.status, c.reasons) for c in d.changes],
            [(c.status, c.reasons) for c in ref.changes],
        )

    def test_moved_code_is_matched_by_file(self):
        # Every line of the model moved down by 10 lines (an edit above it).
        b = copy.deepcopy(self.no_fusion)
        graph = b["graphs"][0]
        for op in graph["ops"]:
            if op["source"]:
                path, _, line = op["source"].rpartition(":")
                op["source"] = f"{path}:{int(line) + 10}"
        graph["boundaries"][0]["reason"] = "extern_kernel_changed"
        g = render_diff.diff(self.no_fusion, b).graphs[0]
        n = len(graph["boundaries"])
        self.assertEqual(g.count("moved"), n - 1)
        self.assertEqual(g.count("changed"), 1)
        self.assertEqual(g.count("appeared") + g.count("disappeared"), 0)
        changed = next(c for c in g.changes if c.status == "changed")
        self.assertEqual(changed.reasons[1], "extern_kernel_changed")
        self.assertIn(
            "(was ", render_diff.render_text(render_diff.diff(self.no_fusion, b))
        )

    def test_graphs_are_matched_by_compile_id(self):
        b = copy.deepcopy(self.default)
        extra = copy.deepcopy(b["graphs"][0])
        extra["compile_id"] = "1/0"
        b["graphs"].append(extra)
        d = render_diff.diff(self.default, b)
        self.assertEqual(
            [(g.compile_id, g.a is None) for g in d.graphs],
            [("0/0", False), ("1/0", True)],
        )
        text = render_diff.render_text(d)
        self.assertIn(
            "graphs: 1 matched by compile id, 0 only in A, 1 only in B (1/0)", text
        )
        self.assertIn("graph 1/0 (only in B)", text)
        # Two captures taken in one process number their compiles on: the
        # graphs left over on both sides are matched in order.
        c = copy.deepcopy(self.no_fusion)
        c["graphs"][0]["compile_id"] = "3/0"
        d = render_diff.diff(self.default, c)
        self.assertEqual(d.matched_by_order, 1)
        self.assertEqual(d.graphs[0].compile_id, "0/0 | 3/0")
        self.assertGreater(d.graphs[0].count("appeared"), 0)

    # ------------------------------------------------------------ study

    def write_study(self, cases):
        """A study directory as ``benchmarks/fusion/study.py`` leaves it:
        ``study.json`` and ``captures/<case>.json``, each case ``ok`` with
        its capture or, given None, failed."""
        directory = os.path.join(self.tmp, "study")
        os.makedirs(os.path.join(directory, "captures"))
        rows = []
        for case, data in cases.items():
            if data is None:
                rows.append(
                    {"case": case, "family": "cnn", "status": "failed", "error": "boom"}
                )
                continue
            self.save(os.path.join(directory, "captures", f"{case}.json"), data)
            graph = data["graphs"][0]
            by_reason = collections.defaultdict(
                lambda: {"category": "", "count": 0, "bytes": 0}
            )
            for b in graph["boundaries"]:
                by_reason[b["reason"]]["category"] = b["category"]
                by_reason[b["reason"]]["count"] += 1
            rows.append(
                {
                    "case": case,
                    "family": "cnn",
                    "status": "ok",
                    "graphs": 1,
                    "graph_breaks": 0,
                    "ops": len(graph["ops"]),
                    "unfused_ops": 0,
                    "kernels_generated": len(graph["kernels"]),
                    "kernels_extern": 0,
                    "boundaries": len(graph["boundaries"]),
                    "heuristic_boundaries": 0,
                    "fusible": {"true": 0, "false": 0, "unknown": 0},
                    "boundary_bytes": 0,
                    "by_reason": dict(by_reason),
                    "eager_ms": 2.0,
                    "compiled_ms": 1.0,
                    "speedup": 2.0,
                }
            )
        settings = {
            "device_name": "cpu",
            "torch": torch.__version__,
            "fork": "test",
            "shapes": "ci",
            "timing": "perf_counter per step, median",
            "command": "study.py --out study",
        }
        suite = {"by_count": [], "by_bytes": [], "by_family": {}, "unexplained": 0}
        study_json = {"settings": settings, "rows": rows, "suite": suite}
        self.save(os.path.join(directory, "study.json"), study_json)
        return directory, study_json

    def test_study_writes_the_index_and_a_page_per_case(self):
        directory, data = self.write_study(
            {"net-default": self.default, "net-no_fusion": self.no_fusion, "bad": None}
        )
        rc, stdout, err = run_cli("study", directory)
        self.assertEqual((rc, err), (0, ""))
        index = os.path.join(directory, "index.html")
        self.assertEqual(stdout, f"wrote {index} and 2 case pages\n")
        with open(index, encoding="utf-8") as f:
            self.assertEqual(
                f.read(),
                study.index_html(data["settings"], data["rows"], data["suite"]),
            )
        self.assertEqual(
            sorted(os.listdir(os.path.join(directory, "cases"))),
            ["net-default.html", "net-no_fusion.html"],
        )
        for case, capture in (
            ("net-default", self.default),
            ("net-no_fusion", self.no_fusion),
        ):
            with open(os.path.join(directory, "cases", f"{case}.html")) as f:
                self.assertEqual(
                    f.read(), html.render_html(capture, case, "../index.html")
                )

    def test_study_without_a_study_says_so(self):
        self.assert_error(["study", self.tmp], "no study.json")
        self.assert_error(["study", self.save("study.json", [1])], "no study.json")
        bad = os.path.join(self.tmp, "bad")
        os.mkdir(bad)
        self.save(os.path.join(bad, "study.json"), {"rows": []})
        self.assert_error(["study", bad], "not a study")

    def test_the_viewer_reads_the_schema_version_torch_writes(self):
        self.assertEqual(store.SCHEMA_VERSION, fusion_report.SCHEMA_VERSION)

    # ------------------------------------------------------------ errors

    def test_errors_are_one_line_and_exit_status_2(self):
        out = os.path.join(self.tmp, "out.html")
        missing = os.path.join(self.tmp, "missing.json")
        self.assert_error(["render", missing, "-o", out], "no such file")
        self.assert_error(["diff", self.save("a.json", self.default), missing], missing)
        self.assert_error(
            ["render", self.save("list.json", [1, 2]), "-o", out],
            "not a fusion capture",
        )
        self.assert_error(
            ["render", self.save("other.json", {"graphs": []}), "-o", out],
            "no schema_version",
        )
        newer = dict(self.default, schema_version=999)
        self.assert_error(
            ["render", self.save("newer.json", newer), "-o", out], "newer"
        )
        text = os.path.join(self.tmp, "notes.txt")
        with open(text, "w") as f:
            f.write("hello\n")
        self.assert_error(["render", text, "-o", out], "not JSON")
        self.assertFalse(os.path.exists(out))

    def test_trace_without_fusion_artifacts_says_how_to_make_one(self):
        out = os.path.join(self.tmp, "out.html")
        empty = os.path.join(self.tmp, "empty_trace")
        os.mkdir(empty)
        err = self.assert_error(
            ["render", empty, "-o", out],
            "no inductor_fusion_remarks artifact in 0 files",
        )
        self.assertIn("TORCH_TRACE=<dir>", err)
        # A log with records of other kinds, one of them our artifact damaged.
        graph = self.default["graphs"][0]
        payload = json.dumps({"schema_version": 2, "graph": graph})

        def record(name, text, digest=None):
            meta = {"artifact": {"name": name, "encoding": "json"}}
            meta["has_payload"] = digest or hashlib.md5(text.encode()).hexdigest()
            return (
                f"V1124 05:49:51.172000 26461 x.py:64] {json.dumps(meta)}\n\t{text}\n"
            )

        log = os.path.join(empty, "dedicated_log_torch_trace_x.log")
        with open(log, "w") as f:
            f.write(record("other", "{}"))
            f.write(record("inductor_fusion_remarks", payload, digest="0" * 32))
        self.assert_error(
            ["render", empty, "-o", out], "in 1 file (1 damaged record)", "TORCH_TRACE="
        )
        # The same record intact is read, from the directory or the file.
        with open(log, "a") as f:
            f.write(record("inductor_fusion_remarks", payload))
        self.assertEqual(store.load(empty)["graphs"], [graph])
        self.assertEqual(store.load(log)["graphs"], [graph])

    def test_unwritable_output(self):
        path = self.save("default.json", self.default)
        self.assert_error(
            ["render", path, "-o", os.path.join(self.tmp, "no", "such", "x.html")],
            "cannot write",
            "no directory",
        )
        self.assert_error(["render", path, "-o", self.tmp], "is a directory")
        self.assert_error(
            ["diff", path, path, "-o", os.path.join(path, "x.html")], "cannot write"
        )

    def test_save_html_names_the_path_it_cannot_write(self):
        """``fusion_viewer.page.save_html`` of a capture to a
        missing folder or onto a folder: an OSError of the right kind whose one
        line names the path and what is in the way, before any work."""
        with fusion_report.capture() as rep:
            torch.compile(lambda x: x.sin() + x.cos())(torch.randn(8))
        missing = os.path.join(self.tmp, "no", "such")
        target = os.path.join(missing, "x.html")
        with self.assertRaises(FileNotFoundError) as caught:
            fusion_viewer.page.save_html(rep, target)
        self.assertEqual(
            str(caught.exception), f"cannot write {target}: no directory {missing}"
        )
        with self.assertRaises(IsADirectoryError) as caught:
            fusion_viewer.page.save_html(rep, self.tmp)
        self.assertEqual(
            str(caught.exception), f"cannot write {self.tmp}: is a directory"
        )
        self.assertFalse(os.path.exists(missing))


if __name__ == "__main__":
    run_tests()
