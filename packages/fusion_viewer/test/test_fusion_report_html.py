# Owner(s): ["module: inductor"]
"""The HTML page of a fusion capture, opened in a real browser.

The page (``fusion_viewer.page.save_html``, ``fusion_viewer.html``) is the
product, so each test renders real captures and opens the page in headless
Chromium: ``--dump-dom`` gives the DOM the browser built (an unescaped ``<`` in
an op name or a stray tag in dot's SVG would show up as a missing or misplaced
element), and ``--screenshot`` shows whether the graph picture is drawn.  The
captures are compiled once for the class: sin+cos, a softmax, a function with a
graph break (``print``) and a small MLP training step (forward and backward).

Without Chromium or Graphviz the browser and picture tests are skipped, except
when the environment variable ``CI`` is set: then they fail, so that CI cannot
pass by skipping them (``make test`` installs both).
"""

import collections
import copy
import html
import inspect
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from html.parser import HTMLParser
from typing import Any
from unittest import mock

import fusion_viewer.page
import torch
import torch._dynamo
from fusion_viewer import (
    common as render_common,
    graphviz as render_graphviz,
    html as render_html,
)
from torch._inductor import fusion_report
from torch._inductor.test_case import run_tests, TestCase


try:
    from PIL import Image
except ImportError:  # pinned in requirements/common.txt; without it, screenshots skip
    Image = None

CHROMIUM = next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))),
    None,
)
DOT = shutil.which("dot")


def sin_plus_cos(x):
    return torch.sin(x) + torch.cos(x)


def softmax(x):
    return torch.softmax(x, -1)


def with_print(x):
    y = torch.sin(x) * 2
    print("test_fusion_report_html: a graph break")
    return torch.relu(y) + 1


MLP = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
)


def mlp_train_step(x, y):
    loss = torch.nn.functional.mse_loss(MLP(x), y)
    loss.backward()
    return loss


def line_of(fn, text: str) -> int:
    """The line number of the first line of ``fn`` that contains ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


class Elements(HTMLParser):
    """Every start tag of a document, with its attributes (a dumped DOM)."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.feed(document)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def with_class(self, name: str) -> list[dict[str, str]]:
        return [a for _, a in self.elements if name in a.get("class", "").split()]


def text_of(fragment: str) -> str:
    """The text of an HTML fragment, tags removed and whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def boundary_keys(data: dict[str, Any]) -> collections.Counter:
    return collections.Counter(
        (g["compile_id"], b["producer"], b["consumer"], b["reason"], b["category"])
        for g in data["graphs"]
        for b in g["boundaries"]
    )


def dom_boundary_keys(dom: Elements, cls: str = "boundary") -> collections.Counter:
    return collections.Counter(
        (
            a.get("data-graph"),
            a.get("data-producer"),
            a.get("data-consumer"),
            a.get("data-reason"),
            a.get("data-category"),
        )
        for a in dom.with_class(cls)
    )


def large_graph(graph: dict[str, Any], copies: int) -> dict[str, Any]:
    """``copies`` renamed copies of a real graph, chained into one graph.

    Copy ``i`` reads copy ``i - 1``: an edge and an ``extern_kernel`` boundary
    join the last computing op of one copy to the first of the next, so dot
    lays out one connected graph, as it would a deep model's.
    """
    out = copy.deepcopy(graph)
    out.update(ops=[], edges=[], kernels=[], boundaries=[], compile_id="7/0")
    computing = [op["name"] for op in graph["ops"] if op["computes"]]
    first_kernel = {
        op["name"]: op["kernels"][0] for op in graph["ops"] if op.get("kernels")
    }
    for i in range(copies):

        def rename(name: str, i: int = i) -> str:
            return f"{name}_c{i}"

        for op in graph["ops"]:
            out["ops"].append(
                dict(
                    op,
                    name=rename(op["name"]),
                    kernels=[rename(k) for k in op.get("kernels") or []],
                )
            )
        out["edges"] += [
            {"producer": rename(e["producer"]), "consumer": rename(e["consumer"])}
            for e in graph["edges"]
        ]
        out["kernels"] += [
            dict(k, name=rename(k["name"]), ops=[rename(n) for n in k["ops"]])
            for k in graph["kernels"]
        ]
        out["boundaries"] += [
            dict(
                b,
                producer=rename(b["producer"]),
                consumer=rename(b["consumer"]),
                kernels=[rename(k) for k in b["kernels"]],
            )
            for b in graph["boundaries"]
        ]
        if i:
            p, c = f"{computing[-1]}_c{i - 1}", rename(computing[0])
            out["edges"].append({"producer": p, "consumer": c})
            out["boundaries"].append(
                {
                    "producer": p,
                    "consumer": c,
                    "relation": "dependency",
                    "reason": "extern_kernel",
                    "category": "backend",
                    "stage": "lowering",
                    "fusible": None,
                    "detail": "a chained copy",
                    "kernels": [
                        f"{first_kernel[computing[-1]]}_c{i - 1}",
                        rename(first_kernel[computing[0]]),
                    ],
                    "args": {"bytes": 4096},
                }
            )
    return out


def colour_pixels(png: str, colours: set[str], tolerance: int = 3) -> tuple[int, int]:
    """(pixels of the screenshot within ``tolerance`` of one of ``colours``, all)."""
    rgb = [tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in colours]
    with Image.open(png) as im:
        counts = im.convert("RGB").getcolors(maxcolors=1 << 24)
    hits = sum(
        n
        for n, px in counts
        if any(all(abs(a - b) <= tolerance for a, b in zip(px, c)) for c in rgb)
    )
    return hits, sum(n for n, _ in counts)


class PageTestCase(TestCase):
    """Opening pages in headless Chromium; ``cls.tmp`` holds the files."""

    tmp: tempfile.TemporaryDirectory

    # ------------------------------------------------------------ helpers

    def require(self, ok: object, what: str) -> None:
        """Skip without ``what``, but fail under CI, which must run everything."""
        if not ok:
            if os.environ.get("CI"):
                self.fail(f"{what} is required under CI (make system-deps)")
            self.skipTest(f"{what} is not installed")

    def chromium(self, *args: str) -> subprocess.CompletedProcess:
        self.require(CHROMIUM, "chromium")
        with tempfile.TemporaryDirectory(dir=self.tmp.name) as profile:
            return subprocess.run(
                [
                    CHROMIUM,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    "--no-first-run",
                    f"--user-data-dir={profile}",
                    *args,
                ],
                capture_output=True,
                timeout=120,
                check=True,
            )

    def dump_dom(self, path: str, fragment: str = "", size: str = "1400,1000") -> str:
        url = "file://" + os.path.abspath(path) + fragment
        return self.chromium(f"--window-size={size}", "--dump-dom", url).stdout.decode(
            "utf-8"
        )

    def screenshot(self, path: str, size: str, fragment: str = "") -> str:
        self.require(Image, "Pillow")
        png = path + ".png"
        self.chromium(
            f"--screenshot={png}", f"--window-size={size}", "file://" + path + fragment
        )
        self.assertTrue(os.path.getsize(png) > 0)
        return png


class TestFusionReportHtml(PageTestCase):
    data: dict[str, Any]  # the capture's JSON
    page: str  # the path of its page
    html: str  # the page
    tmp: tempfile.TemporaryDirectory

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.tmp = tempfile.TemporaryDirectory(prefix="fusion_page_")
        torch._dynamo.reset()
        torch.manual_seed(0)
        with fusion_report.capture() as rep:
            torch.compile(sin_plus_cos)(torch.randn(8, 8))
            torch.compile(softmax)(torch.randn(8, 32))
            torch.compile(with_print)(torch.randn(8))
            torch.compile(mlp_train_step)(torch.randn(8, 16), torch.randn(8, 4))
        torch._dynamo.reset()
        cls.data = json.loads(json.dumps(rep.to_json(), default=str))
        cls.page = os.path.join(cls.tmp.name, "capture.html")
        fusion_viewer.page.save_html(rep, cls.page)
        with open(cls.page, encoding="utf-8") as f:
            cls.html = f.read()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()
        super().tearDownClass()

    def graph(self, compile_id: str) -> dict[str, Any]:
        return next(g for g in self.data["graphs"] if g["compile_id"] == compile_id)

    # ------------------------------------------------------------ tests

    def test_capture_has_what_the_page_must_show(self):
        ids = [g["compile_id"] for g in self.data["graphs"]]
        self.assertEqual(ids, ["0/0", "1/0", "2/0", "3/0", "4/0", "4/0 backward"])
        self.assertGreater(sum(boundary_keys(self.data).values()), 5)
        self.assertEqual(
            [b["gb_type"] for b in self.data["graph_breaks"]],
            ["Failed to trace builtin operator", "Unsupported Tensor.backward() call"],
        )
        # Self-contained: nothing is fetched (the namespaces of the SVG and
        # the link in Dynamo's message are text, not fetches).
        for fetch in ("<script src", "<link", "<img", "@import", "url(", "<iframe"):
            self.assertNotIn(fetch, self.html)

    def test_dom_holds_every_boundary(self):
        dom = Elements(self.dump_dom(self.page))
        self.assertEqual(dom_boundary_keys(dom), boundary_keys(self.data))
        # The rows are table rows in the browser's DOM: dot's SVG did not
        # break the page's structure.
        rows = [t for t, a in dom.elements if "boundary" in a.get("class", "").split()]
        self.assertEqual(set(rows), {"tr"})
        # Each graph has a section with its picture drawn from ops.
        self.require(DOT, "Graphviz dot")
        pictures = {a["data-graph"]: a for a in dom.with_class("picture")}
        self.assertEqual(set(pictures), {g["compile_id"] for g in self.data["graphs"]})
        self.assertEqual({a["data-mode"] for a in pictures.values()}, {"ops"})
        # Every boundary is an edge of the picture, linked to its table row.
        edges = dom.with_class("boundary-edge")
        self.assertEqual(len(edges), sum(boundary_keys(self.data).values()))
        # Reasons and categories are counted with the bytes that cross them.
        reasons = collections.Counter()
        moved = collections.Counter()
        priced = set()  # reasons with a boundary whose bytes are known
        for g in self.data["graphs"]:
            for b in g["boundaries"]:
                reasons[b["reason"]] += 1
                moved[b["reason"]] += b["args"].get("bytes", 0)
                if "bytes" in b["args"]:
                    priced.add(b["reason"])
        reasons["graph_break"] = len(self.data["graph_breaks"])
        rows = {a["data-reason"]: a for a in dom.with_class("reason-row")}
        self.assertEqual({r: int(a["data-count"]) for r, a in rows.items()}, reasons)
        for reason, nbytes in moved.items():
            cell = rows[reason]["data-bytes"]
            if reason in priced:
                self.assertEqual(float(cell), nbytes, reason)
            else:  # e.g. only shared-input boundaries: no buffer crosses them
                self.assertEqual(cell, "", reason)
        categories = {a["data-category"]: a for a in dom.with_class("category-row")}
        self.assertEqual(
            sum(int(a["data-count"]) for a in categories.values()),
            sum(reasons.values()),
        )
        self.assertIn("legality", categories)

    def test_graph_breaks_with_reason_line_and_graphs(self):
        dom = self.dump_dom(self.page)
        entries = re.findall(r'<li class="graph-break".*?</li>', dom, re.DOTALL)
        self.assertEqual(len(entries), len(self.data["graph_breaks"]))
        print_line = line_of(with_print, 'print("')
        backward_line = line_of(mlp_train_step, "backward()")
        name = os.path.basename(__file__)
        for brk, entry, line in zip(
            self.data["graph_breaks"], entries, (print_line, backward_line)
        ):
            self.assertEqual(brk["source"], f"{__file__}:{line}")
            self.assertIn(f'data-source="{brk["source"]}"', entry)
            text = text_of(entry)
            self.assertIn(brk["gb_type"], text)
            self.assertIn(f"{name}:{line}", text)
            # Dynamo's explanation is the reason shown; the whole message is
            # kept, folded.
            explanation = re.search(r"Explanation: (.*)", brk["detail"]).group(1)
            self.assertIn(explanation.strip(), text)
            # Linked to the graphs before and after, and to the source line.
            for cid in brk["graphs_before"] + brk["graphs_after"]:
                self.assertIn(f'href="#{render_common.graph_anchor(cid)}"', entry)
            anchor = render_common.source_anchor(brk["source"])
            self.assertIn(f'href="#{anchor}"', entry)
            self.assertIn(f'id="{anchor}"', dom)
        self.assertIn('href="#graph-2-0"', entries[0])  # before print
        self.assertIn('href="#graph-3-0"', entries[0])  # after it

    def test_annotated_source_lines(self):
        dom = self.dump_dom(self.page)
        graph = self.graph("0/0")
        (kernel,) = graph["kernels"]
        line = line_of(sin_plus_cos, "torch.sin(x) + torch.cos(x)")
        source = f"{__file__}:{line}"
        self.assertEqual({op["source"] for op in graph["ops"]}, {source})
        match = re.search(
            rf'<div class="line annotated" id="{render_common.source_anchor(source)}"'
            rf'[^>]*>(.*?)</div>\s*<ul class="remarks">(.*?)</ul>',
            dom,
            re.DOTALL,
        )
        self.assertIsNotNone(match, "the line and its remarks")
        code, remarks = match.groups()
        self.assertIn("return torch.sin(x) + torch.cos(x)", text_of(code))
        self.assertIn(str(line), text_of(code))
        self.assertEqual(
            text_of(remarks),
            f"fused graph 0/0: kernel {kernel['name']} "
            f"({kernel['kind']}, {kernel['function']}) computes sin, cos, add",
        )
        # Each boundary of the training step is a missed remark on the lines
        # of its producer and consumer.
        dom_elements = Elements(dom)
        remarks = dom_boundary_keys(dom_elements, "boundary-remark")
        for cid in ("4/0", "4/0 backward"):
            for b in self.graph(cid)["boundaries"]:
                key = (cid, b["producer"], b["consumer"], b["reason"], b["category"])
                self.assertIn(key, remarks)
        mlp_line = line_of(mlp_train_step, "mse_loss(")
        self.assertIn(
            f'id="{render_common.source_anchor(f"{__file__}:{mlp_line}")}"', dom
        )

    def test_screenshot_shows_the_graph(self):
        self.require(DOT, "Graphviz dot")
        # The pictures are folded under the tables; #pictures=open opens them.
        png = self.screenshot(self.page, "1400,5000", "#pictures=open")
        # The clusters of the kernels are drawn in their tinted colours, and
        # the boundaries of the training step in red.
        tints = {
            render_graphviz._tint(c)
            for g in self.data["graphs"]
            for c in render_graphviz.kernel_colours(g).values()
        }
        clusters, total = colour_pixels(png, tints)
        self.assertGreater(clusters / total, 0.01, f"{clusters} of {total} pixels")
        red, _ = colour_pixels(png, {render_graphviz.BOUNDARY_COLOUR}, tolerance=10)
        self.assertGreater(red, 300)

    def test_large_graph_collapses_to_kernels(self):
        self.require(DOT, "Graphviz dot")
        backward = self.graph("4/0 backward")
        big = large_graph(backward, 300)
        n_ops = sum(op["computes"] for op in big["ops"])
        self.assertGreater(n_ops, 2500)
        data = dict(self.data, graphs=[big], graph_breaks=[])
        start = time.perf_counter()
        page = render_html.render_html(data)
        elapsed = time.perf_counter() - start
        # Seconds, not minutes (about 2 s on a 2-core machine).
        self.assertLess(elapsed, 30, f"rendering took {elapsed:.1f} s")
        path = os.path.join(self.tmp.name, "large.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        # Opened at a boundary's row: the script opens the folded table.
        last = len(big["boundaries"]) - 1
        row = f"b-{render_common.graph_anchor('7/0')}-{last}"
        dump = self.dump_dom(path, "#" + row)
        dom = Elements(dump)
        self.assertEqual(dom_boundary_keys(dom), boundary_keys(data))
        (picture,) = dom.with_class("picture")
        self.assertEqual(picture["data-mode"], "kernels")
        (note,) = re.findall(
            r'<p class="note picture-note kernel-level">(.*?)</p>', dump
        )
        self.assertIn(
            f"{n_ops} computing ops, more than {render_graphviz.MAX_OP_NODES}", note
        )
        self.assertEqual(
            len(dom.with_class("node")), len(big["kernels"]), "one node per kernel"
        )
        self.assertRegex(dump, r'<details class="boundary-list" open="">')
        # The picture is drawn: kernel nodes in their fill colours.
        # Opened, with a search that hides every table row, so that the
        # picture is on the first screen.
        png = self.screenshot(path, "1400,3000", "#pictures=open&q=no-such-op")
        fills, total = colour_pixels(
            png, set(render_graphviz.kernel_colours(big).values())
        )
        self.assertGreater(fills / total, 0.01, f"{fills} of {total} pixels")

    def test_without_dot_the_page_has_tables_and_source(self):
        empty = os.path.join(self.tmp.name, "no-dot-bin")
        os.makedirs(empty, exist_ok=True)
        with mock.patch.dict(os.environ, {"PATH": empty}):
            self.assertIsNone(shutil.which("dot"))
            page = render_html.render_html(self.data)
        self.assertNotIn("<svg", page)
        path = os.path.join(self.tmp.name, "no-dot.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        dump = self.dump_dom(path)
        dom = Elements(dump)
        notes = re.findall(r'<p class="note picture-note">(.*?)</p>', dump)
        self.assertEqual(len(notes), len(self.data["graphs"]))
        self.assertIn("Graphviz's dot was not found", notes[0])
        self.assertEqual(dom.with_class("picture"), [])
        self.assertEqual(dom_boundary_keys(dom), boundary_keys(self.data))
        self.assertEqual(len(dom.with_class("graph-break")), 2)
        self.assertTrue(dom.with_class("annotated"))

    def test_failing_or_slow_dot_is_a_note(self):
        # A dot that fails, then one that hangs: each picture becomes a note
        # and rendering stays within DOT_TIMEOUT_S per graph.
        bin_dir = os.path.join(self.tmp.name, "bad-dot-bin")
        os.makedirs(bin_dir, exist_ok=True)
        dot = os.path.join(bin_dir, "dot")
        graph = self.graph("4/0")
        data = dict(self.data, graphs=[graph])
        for script, expected in (
            ("echo 'Error: lost edge' >&2; exit 1", "exit status 1: Error: lost edge"),
            (f"exec {shutil.which('sleep')} 20", "did not finish"),
        ):
            with open(dot, "w") as f:
                f.write(f"#!/bin/sh\n{script}\n")
            os.chmod(dot, 0o755)
            with (
                mock.patch.dict(os.environ, {"PATH": bin_dir}),
                mock.patch.object(render_graphviz, "DOT_TIMEOUT_S", 1.0),
            ):
                start = time.perf_counter()
                page = render_html.render_html(data)
            self.assertLess(time.perf_counter() - start, 5)
            self.assertNotIn("<svg", page)
            self.assertIn(expected, page)
            self.assertEqual(page.count('class="boundary '), len(graph["boundaries"]))


def shown(dom: Elements, cls: str) -> list[dict[str, str]]:
    """The elements of class ``cls`` that the page's filter left visible."""
    return [a for a in dom.with_class(cls) if "hidden" not in a]


def html_attrs(dump: str) -> dict[str, str]:
    """The attributes of the dumped document's <html> element."""
    return next(a for t, a in Elements(dump).elements if t == "html")


class TestFusionReportModelPage(PageTestCase):
    """The page of a real model (torchvision resnet18, CPU), as a user meets it.

    Compiled once for the class: inference, batch 1, 3x64x64.  On the CPU
    several kernel records (loop nests) share one generated C++ function, so
    the kernel table has fewer rows than the capture has kernels.  A second
    page renders the same JSON with the optional fields another layer adds
    (``kernel_sources``, and kernels' ``how`` and ``copy_for``) filled in by
    hand.
    """

    data: dict[str, Any]
    page: str
    full_page: str  # with kernel_sources, how and copy_for
    full: dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        import torchvision

        cls.tmp = tempfile.TemporaryDirectory(prefix="fusion_model_page_")
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = torchvision.models.resnet18().eval()
        with torch.no_grad(), fusion_report.capture() as rep:
            torch.compile(model)(torch.randn(1, 3, 64, 64))
        torch._dynamo.reset()
        cls.data = json.loads(json.dumps(rep.to_json(), default=str))
        cls.page = os.path.join(cls.tmp.name, "resnet18.html")
        render_html.save_html(cls.data, cls.page)
        cls.full = copy.deepcopy(cls.data)
        (graph,) = cls.full["graphs"]
        ops = {op["name"]: op for op in graph["ops"]}
        functions = {k["function"] for k in graph["kernels"] if k.get("function")}
        graph["kernel_sources"] = {
            f: f'// generated code of {f}\nextern "C" void {f}() {{}}\n'
            for f in sorted(functions)
        }
        for k in graph["kernels"]:
            computing = [n for n in k["ops"] if ops[n]["computes"]]
            if (
                k["kind"] == "cpp"
                and len(computing) == 1
                and ops[computing[0]]["target"].startswith("aten.convolution")
            ):
                k["copy_for"] = computing  # a layout copy before a convolution
            elif k["kind"] == "cpp":
                k["how"] = ["inlined", "scheduler"]
        cls.full_page = os.path.join(cls.tmp.name, "resnet18-full.html")
        render_html.save_html(cls.full, cls.full_page)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()
        super().tearDownClass()

    def groups(self) -> list[dict[str, Any]]:
        (graph,) = self.data["graphs"]
        return render_common.kernel_groups(graph)

    def test_default_view_is_the_kernel_overview(self):
        (graph,) = self.data["graphs"]
        self.assertGreater(sum(op["computes"] for op in graph["ops"]), 150)
        dump = self.dump_dom(self.page)
        dom = Elements(dump)
        rows = dom.with_class("kernel-row")
        functions = {k["function"] for k in graph["kernels"] if k.get("function")}
        no_function = [k for k in graph["kernels"] if not k.get("function")]
        # One row per generated function (several loop nests each), one per
        # extern kernel: fewer rows than kernel records.
        self.assertEqual(len(rows), len(functions) + len(no_function))
        self.assertLess(len(rows), len(graph["kernels"]))
        self.assertEqual(
            sorted(k for r in rows for k in r["data-kernels"].split()),
            sorted(k["name"] for k in graph["kernels"]),
        )
        self.assertEqual(shown(dom, "kernel-row"), rows)  # no filter: all shown
        # The table comes first; the picture is there, folded (no "open").
        self.assertLess(
            dump.index('<tr class="kernel-row'),
            dump.index('<details class="picture-box'),
        )
        (box,) = dom.with_class("picture-box")
        self.assertNotIn("open", box)
        # Every computing op can be found from its row (drill-down and search).
        searchable = " ".join(r["data-search"] for r in rows).split()
        for op in graph["ops"]:
            if op["computes"] and op["kernels"]:
                self.assertIn(op["name"].lower(), searchable)
        # Each row links to its generated code when the capture holds it
        # (``kernel_sources``, written by newer captures), else says why not.
        sources = render_common.kernel_sources(graph, self.data) or {}
        linked = [
            r
            for r, g in zip(rows, self.groups())
            if g["function"] and g["function"] in sources
        ]
        self.assertEqual(len(dom.with_class("code-link")), len(linked))
        self.assertEqual(len(dom.with_class("no-code")), len(rows) - len(linked))
        if len(linked) < len(rows):
            self.assertIn("not in the capture", text_of(dump))

    def test_filter_by_reason_and_kind_from_the_url(self):
        (graph,) = self.data["graphs"]
        bounds = graph["boundaries"]
        # the rarest reason: every kernel of the CNN touches a convolution's
        # buffers (extern_kernel), so that filter would hide none
        reason = min(
            collections.Counter(b["reason"] for b in bounds).items(),
            key=lambda item: (item[1], item[0]),
        )[0]
        matching = [b for b in bounds if b["reason"] == reason]
        self.assertTrue(0 < len(matching) < len(bounds))
        dump = self.dump_dom(self.page, f"#filter=reason:{reason}")
        dom = Elements(dump)
        rows = dom.with_class("kernel-row")
        visible = shown(dom, "kernel-row")
        expected = [r for r in rows if reason in r["data-reasons"].split()]
        self.assertEqual(visible, expected)
        self.assertTrue(0 < len(visible) < len(rows))
        self.assertEqual(
            collections.Counter(b["data-reason"] for b in shown(dom, "boundary")),
            {reason: len(matching)},
        )
        (body,) = [a for t, a in dom.elements if t == "body"]
        self.assertEqual(body["data-kernels-shown"], str(len(visible)))
        self.assertEqual(body["data-boundaries-shown"], str(len(matching)))
        # The filter bar shows the filter it applied.
        (status,) = re.findall(r'id="filter-status"[^>]*>(.*?)<', dump)
        self.assertIn(f"showing {len(visible)} of {len(rows)} kernels", status)
        # By kind, with the query-style key; categories combine with it.
        dom = Elements(self.dump_dom(self.page, "#kind=extern&category=backend"))
        visible = shown(dom, "kernel-row")
        self.assertEqual(
            {k for r in visible for k in r["data-kernels"].split()},
            {
                k["name"]
                for k in graph["kernels"]
                if k["kind"] == "extern"
                and any(
                    b["category"] == "backend" and k["name"] in b["kernels"]
                    for b in bounds
                )
            },
        )
        self.assertTrue(all(r["data-kinds"] == "extern" for r in visible))

    def test_search_by_op_name_and_source_line(self):
        (graph,) = self.data["graphs"]
        ops = {op["name"]: op for op in graph["ops"]}
        rows = {
            r["id"]: r
            for r in Elements(self.dump_dom(self.page)).with_class("kernel-row")
        }

        def expected(pred) -> set[str]:
            out = set()
            for gi, group in enumerate(self.groups()):
                names = [n for k in group["records"] for n in k["ops"]]
                if any(ops[n]["computes"] and pred(ops[n]) for n in names):
                    out.add(render_common.kernel_row_id("graph-0-0", gi))
            return out

        # An op name: the rows that hold it (convolution_3 has no longer
        # namesake in resnet18: there are 20 convolutions).
        dom = Elements(self.dump_dom(self.page, "#q=convolution_3"))
        hits = {r["id"] for r in shown(dom, "kernel-row")}
        self.assertEqual(hits, expected(lambda op: "convolution_3" in op["name"]))
        self.assertTrue(0 < len(hits) < len(rows))
        self.assertTrue(
            all(
                "convolution_3" in (b["data-producer"], b["data-consumer"])
                for b in shown(dom, "boundary")
            )
        )
        # A source line, as file.py:line: the rows of ops traced from it.
        source = ops["relu"]["source"]
        short = render_common.short_source(source)
        dom = Elements(self.dump_dom(self.page, f"#q={short}"))
        hits = {r["id"] for r in shown(dom, "kernel-row")}
        self.assertEqual(hits, expected(lambda op: op.get("source") == source))
        self.assertTrue(0 < len(hits) < len(rows))
        # A line number that is a prefix of another matches only itself.
        path, line = render_common.split_source(source)
        dom = Elements(self.dump_dom(self.page, f"#q={short[:-1]}"))
        self.assertEqual(
            {r["id"] for r in shown(dom, "kernel-row")},
            expected(
                lambda op: (op.get("source") or "").endswith(
                    f"{os.path.basename(path)}:{str(line)[:-1]}"
                )
            ),
        )

    def test_kernels_link_to_their_generated_code(self):
        (graph,) = self.full["graphs"]
        sources = graph["kernel_sources"]
        first = sorted(sources)[0]
        dom = Elements(self.dump_dom(self.full_page))
        links = [
            a["href"] for t, a in dom.elements if "code-link" in a.get("class", "")
        ]
        blocks = {a["id"]: a for a in dom.with_class("kernel-code")}
        self.assertEqual(len(links), len(sources))  # one row per function
        for href in links:
            self.assertTrue(href.startswith("#"))
            self.assertIn(href[1:], blocks)  # the anchor resolves
        self.assertEqual({a["data-function"] for a in blocks.values()}, set(sources))
        # Folded by default; following a link opens the block.
        self.assertTrue(all("open" not in a for a in blocks.values()))
        anchor = next(i for i, a in blocks.items() if a["data-function"] == first)
        dump = self.dump_dom(self.full_page, f"#{anchor}")
        opened = {a["id"]: a for a in Elements(dump).with_class("kernel-code")}
        self.assertIn("open", opened[anchor])
        self.assertIn(f"// generated code of {first}", html.unescape(dump))
        # Extern kernels have no generated code, and say so.
        extern_rows = [
            r
            for r in Elements(dump).with_class("kernel-row")
            if r["data-kinds"] == "extern"
        ]
        self.assertEqual(
            len(re.findall(r"not in the capture \(a library call\)", dump)),
            len(extern_rows),
        )
        # how and copy_for: a layout copy is not shown as computing the op.
        copies = [k["name"] for k in graph["kernels"] if k.get("copy_for")]
        self.assertTrue(copies)
        rows = re.findall(r'<tr class="kernel-row".*?</tr>', dump, re.DOTALL)
        for row in rows:
            kernels = re.search(r'data-kernels="([^"]*)"', row).group(1).split()
            text = text_of(row)
            if set(kernels) <= set(copies):
                # Not counted as computing the convolution.
                self.assertIn("layout copy for convolution", text)
                self.assertNotRegex(text, r"\b1 op\b")
            if any(k["name"] in kernels and k.get("how") for k in graph["kernels"]):
                self.assertIn("fused by the scheduler", text)
        self.assertTrue(
            any(
                set(re.search(r'data-kernels="([^"]*)"', r).group(1).split())
                <= set(copies)
                for r in rows
            )
        )

    def test_nothing_is_wider_than_the_window(self):
        for path, fragment in (
            (self.page, ""),
            (self.full_page, "#expand=all"),  # every block and picture open
        ):
            attrs = html_attrs(self.dump_dom(path, fragment, size="1400,1000"))
            self.assertEqual(attrs["data-client-width"], "1400")
            self.assertLessEqual(int(attrs["data-scroll-width"]), 1400, fragment)
        # The measurement sees an element that is too wide.
        with open(self.page, encoding="utf-8") as f:
            page = f.read()
        wide = os.path.join(self.tmp.name, "wide.html")
        with open(wide, "w", encoding="utf-8") as f:
            f.write(
                page.replace("<body>", '<body><div style="width:2000px">x</div>', 1)
            )
        attrs = html_attrs(self.dump_dom(wide))
        self.assertGreater(int(attrs["data-scroll-width"]), 1900)

    def test_empty_capture_says_so_once(self):
        page = render_html.render_html({"graphs": [], "graph_breaks": []})
        text = text_of(re.sub(r"<(style|script)>.*?</\1>", "", page, flags=re.DOTALL))
        self.assertEqual(text.count("The capture is empty"), 1)
        for odd in ("every dependent pair", "No op has a source line", "kernel table"):
            self.assertNotIn(odd, text)
        self.assertNotIn('id="controls"', page)
        self.assertNotIn('href="#reasons"', page)  # no links to absent sections


if __name__ == "__main__":
    run_tests()
