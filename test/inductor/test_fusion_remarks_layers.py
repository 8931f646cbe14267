# Owner(s): ["module: inductor"]
"""The fusion-remarks package is layered, and observes decisions only explicitly.

Read from the sources (the fork's new files under ``torch/``), not imported:

* every import between the package's modules, at module level or inside a
  function, points down the layer order of ``fusion_remarks/__init__.py``, so
  there is no import cycle, hidden or not;
* no module of the package, the FX fusion package or ``fusion_report`` is over
  about 800 lines;
* no fork file under ``torch/`` reads stack frames, holds upstream's fusion
  message texts, or replaces methods of upstream objects at run time
  (``DESIGN.md`` section 3a).
"""

import ast
import os
import re
import tempfile
import unittest
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


ROOT = Path(__file__).resolve().parents[2]
INDUCTOR = ROOT / "torch" / "_inductor"
PACKAGE = INDUCTOR / "fusion_remarks"

# The layer of each module, lowest first: a module may import only modules of
# a lower layer (fusion_report, the public face, sits above them all).
LAYERS = {
    "releases": 0,  # which releases have a code (plain data)
    "taxonomy": 1,
    "model": 2,
    "recorder": 3,
    "kernels": 4,  # the kernels and their ops (recorder for its types only)
    "backend_check": 4,  # the backend's check, asked after a heuristic refused
    "analysis": 5,
    "costs": 2,  # pricing boundaries (imports nothing of the package)
    "summary": 5,  # the text summary (the pages are the fusion viewer's)
    "graph_breaks": 7,
    "sinks": 8,
    "publish": 9,  # analyse a graph's records and publish its report
    "hooks": 10,  # record only; hand a generated graph to publish
    "": 11,  # the package __init__ (imports nothing)
}

MAX_LINES = 800


def package_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        yield ".".join(parts), path


def imported_package_modules(name, path):
    """The package modules ``name`` imports, anywhere in its source."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    here = name.split(".") if name else []
    base = here if is_package else here[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = (
                    base[: len(base) - (node.level - 1)] if node.level > 1 else base
                )
                if node.level - 1 > len(base):
                    continue  # above the package (torch._inductor)
                target = anchor + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith(
                "torch._inductor.fusion_remarks"
            ):
                target = node.module.split(".")[3:]
            else:
                continue
            for alias in node.names:
                candidate = ".".join([*target, alias.name])
                if candidate in LAYERS:
                    out.add(candidate)
                else:
                    out.add(".".join(target))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("torch._inductor.fusion_remarks."):
                    out.add(alias.name[len("torch._inductor.fusion_remarks.") :])
    out.discard(name)
    return out


def installed_torch():
    """The installed torch under the links of the fork's overlay (or of a
    tree with the exported stacks): where upstream's own files are."""
    import torch

    return Path(os.path.realpath(torch.__file__)).parent


def fork_files():
    """The files the fork adds under ``torch/`` (in a tree with the exported
    stacks, ``torch/`` holds upstream's patched files too: those are not)."""
    upstream = installed_torch()
    for path in sorted((ROOT / "torch").rglob("*.py")):
        if not (upstream / path.relative_to(ROOT / "torch")).exists():
            yield path


def fork_modules():
    """Every module the fork adds under ``torch/``, by dotted name."""
    out = {}
    for path in fork_files():
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_only(tree):
    """The import nodes under ``if TYPE_CHECKING:``: they never run."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                skipped.update(id(n) for n in ast.walk(sub))
    return skipped


def fork_imports(name, path, modules):
    """The fork modules ``name`` imports at run time, at module level or
    inside a function (not those imported for type checking only)."""
    tree = ast.parse(path.read_text())
    skipped = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = (
                    package.rsplit(".", node.level - 1)[0]
                    if node.level > 1
                    else package
                )
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                if candidate in modules:
                    out.add(candidate)
                elif base in modules:
                    out.add(base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
    out.discard(name)
    return out


class TestFusionRemarksLayers(TestCase):
    def test_every_module_has_a_layer(self):
        self.assertEqual(sorted(name for name, _ in package_modules()), sorted(LAYERS))

    def test_imports_point_down_the_layers(self):
        problems = []
        for name, path in package_modules():
            for target in imported_package_modules(name, path):
                if LAYERS.get(target, 99) >= LAYERS[name]:
                    problems.append(f"{name or '__init__'} imports {target}")
        self.assertEqual(problems, [])

    def test_no_import_cycle(self):
        graph = {
            name: imported_package_modules(name, path)
            for name, path in package_modules()
        }
        state = {}

        def visit(node, stack):
            state[node] = "open"
            for succ in graph.get(node, ()):
                if state.get(succ) == "open":
                    self.fail(f"import cycle: {' -> '.join([*stack, succ])}")
                if succ not in state:
                    visit(succ, [*stack, succ])
            state[node] = "done"

        for node in graph:
            if node not in state:
                visit(node, [node])

    def test_no_import_cycle_among_the_forks_modules(self):
        """Over every module the fork adds (the remarks, the ablation switches,
        the passes, the FX fusion arm, the plumbing): no cycle, counting
        imports inside functions; a feature registers with the remarks core,
        which imports no feature."""
        modules = fork_modules()
        self.assertIn("torch._inductor.fusion_remarks.hooks", modules)
        graph = {
            name: fork_imports(name, path, modules) for name, path in modules.items()
        }
        state = {}

        def visit(node, stack):
            state[node] = "open"
            for succ in sorted(graph.get(node, ())):
                if state.get(succ) == "open":
                    self.fail(f"import cycle: {' -> '.join([*stack, succ])}")
                if succ not in state:
                    visit(succ, [*stack, succ])
            state[node] = "done"

        for node in sorted(graph):
            if node not in state:
                visit(node, [node])
        core = [m for m in modules if m.startswith("torch._inductor.fusion_remarks")]
        features = {
            "torch._inductor.fusion_ablation",
            "torch._inductor.one_pass_reductions",
            "torch._inductor.launch_bound_combo",
        }
        self.assertEqual(
            {m: sorted(graph[m] & features) for m in core if graph[m] & features}, {}
        )

    def test_patched_modules_load_only_the_emitter(self):
        """Importing the patched upstream modules loads the taxonomy (and the
        release ranges it tags codes with), the records and the hooks; the analysis, the costs, the renderers and the
        sinks load only when a compile is recorded."""
        import subprocess
        import sys

        probe = (
            "import sys\n"
            "import torch._inductor.ir, torch._inductor.scheduler\n"
            "import torch._inductor.graph, torch._inductor.compile_fx\n"
            "import torch._inductor.codegen.simd, torch._inductor.codegen.cpp\n"
            "print(' '.join(sorted(m for m in sys.modules\n"
            "    if m.startswith('torch._inductor.fusion_remarks'))))\n"
        )
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("TORCH_LOGS", "TORCH_TRACE")
        }
        loaded = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=300,
        ).stdout.split()
        self.assertEqual(
            sorted(m.rsplit("fusion_remarks", 1)[1].lstrip(".") for m in loaded),
            ["", "hooks", "model", "recorder", "releases", "taxonomy"],
        )

    def test_the_checker_sees_imports_inside_functions(self):
        # The rule above must catch what the old design hid in functions.
        with tempfile.TemporaryDirectory() as tmp:
            module = Path(tmp) / "taxonomy.py"
            module.write_text(
                "def late():\n"
                "    from .hooks import why_no_fuse\n"
                "    from torch._inductor.fusion_remarks import sinks\n"
                "    from .. import config\n"
            )
            self.assertEqual(
                imported_package_modules("taxonomy", module), {"hooks", "sinks"}
            )

    def test_no_device_timing_in_the_remarks(self):
        # What a compile records is priced from given numbers only: timing the
        # device (the "measure" cost model, the fusible check) is the fusion
        # viewer's (packages/fusion_viewer), outside torch/.
        pattern = re.compile(r"perf_counter|synchronize\(|do_bench|CUDAGraph\(")
        files = [*PACKAGE.rglob("*.py"), INDUCTOR / "fusion_report.py"]
        hits = [
            str(f.relative_to(ROOT)) for f in files if pattern.search(f.read_text())
        ]
        self.assertEqual(hits, [])

    def test_modules_are_small(self):
        files = [*list(PACKAGE.rglob("*.py")), INDUCTOR / "fusion_report.py"]
        big = {
            str(f.relative_to(ROOT)): n
            for f in files
            if (n := len(f.read_text().splitlines())) > MAX_LINES
        }
        self.assertEqual(big, {})

    def fork_sources(self):
        for path in fork_files():
            yield path, path.read_text()

    def test_no_stack_frame_reading(self):
        pattern = re.compile(
            r"sys\._getframe|\.f_back\b|\.f_locals\b|inspect\.(currentframe|stack)\("
        )
        hits = [
            str(p.relative_to(ROOT))
            for p, text in self.fork_sources()
            if pattern.search(text)
        ]
        self.assertEqual(hits, [])

    def test_no_table_of_upstream_messages(self):
        # Texts of upstream's WhyNoFuse calls: the code comes from the call
        # site, so none of them may appear in the fork's own modules.
        texts = [
            "memory deps did not match",
            "no shared data",
            "exceeds max fusion",
            "node1 must go before node2",
            'score_fusion_memory_threshold"',
            "Nodes are too far away",
        ]
        hits = [
            f"{p.relative_to(ROOT)}: {t}"
            for p, text in self.fork_sources()
            for t in texts
            if t in text
        ]
        self.assertEqual(hits, [])

    def test_no_methods_replaced_at_run_time(self):
        pattern = re.compile(r"method-assign|setattr\(\s*(scheduler|backend)\b")
        hits = [
            str(p.relative_to(ROOT))
            for p, text in self.fork_sources()
            if pattern.search(text)
        ]
        self.assertEqual(hits, [])

    @unittest.skipUnless(os.path.isdir(ROOT / "patches"), "needs the patch series")
    def test_why_no_fuse_calls_carry_codes(self):
        # Every WhyNoFuse message the patches touch is given a reason code.
        for patch in (ROOT / "patches").rglob("*.patch"):
            added = [
                line[1:]
                for line in patch.read_text().splitlines()
                if line.startswith("+") and not line.startswith("+++")
            ]
            for i, line in enumerate(added):
                if re.search(r"\bwhy\(\s*$", line) or re.search(r"\bwhy\(\"", line):
                    window = "\n".join(added[i : i + 8])
                    self.assertIn("code=", window, f"{patch.name}: {line}")


if __name__ == "__main__":
    run_tests()
