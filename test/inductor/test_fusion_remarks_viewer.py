# Owner(s): ["module: inductor"]
"""torch without the fusion viewer.

The pages, pictures and diffs are the fusion viewer's, a package outside
torch (``packages/fusion_viewer``).  torch imports it in two places only,
``FusionCapture.save_html`` and ``python -m torch._inductor.fusion_report``,
each lazily, and each says in one line how to install it when it is missing;
no renderer is left under ``torch/``.
"""

import ast
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

from torch._inductor import fusion_report
from torch._inductor.test_case import run_tests, TestCase


ROOT = Path(__file__).resolve().parents[2]
INSTALL = "pip install ./packages/fusion_viewer"

# The only functions of torch/ that may import the viewer ("" for a module's
# top level, such as its ``if __name__ == "__main__":`` block).
VIEWER_IMPORTERS = {
    ("torch/_inductor/fusion_report.py", "save_html"),
    ("torch/_inductor/fusion_report.py", ""),
}


def viewer_imports(path: Path) -> set[tuple[str, str]]:
    """``(file, enclosing function)`` of each import of ``fusion_viewer`` in ``path``."""
    tree = ast.parse(path.read_text())
    out = set()

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            names = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and not child.level:
                names = [child.module or ""]
            if any(n.split(".")[0] == "fusion_viewer" for n in names):
                out.add((path.relative_to(ROOT).as_posix(), function))
            visit(child, function)

    visit(tree, "")
    return out


class TestWithoutTheViewer(TestCase):
    def test_save_html_says_how_to_install_the_viewer(self):
        rep = fusion_report.FusionCapture()  # an empty capture has a page too
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "page.html"
            # None in sys.modules: "import fusion_viewer" fails as if missing.
            with mock.patch.dict(sys.modules, {"fusion_viewer": None}):
                with self.assertRaises(ImportError) as raised:
                    rep.save_html(page)
            self.assertFalse(page.exists())
        message = str(raised.exception)
        self.assertNotIn("\n", message)
        self.assertIn("not installed", message)
        self.assertIn(INSTALL, message)
        self.assertIsNone(raised.exception.__cause__)

    def test_the_module_says_how_to_install_the_viewer(self):
        probe = (
            "import runpy, sys\n"
            "sys.modules['fusion_viewer'] = None\n"
            "sys.argv = ['fusion_report', 'render', 'in.json', '-o', 'out.html']\n"
            "runpy.run_module('torch._inductor.fusion_report', run_name='__main__')\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
        )
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
        self.assertIn(INSTALL, proc.stderr)

    def test_only_fusion_report_imports_the_viewer(self):
        found = set()
        for path in sorted((ROOT / "torch").rglob("*.py")):
            found |= viewer_imports(path)
        self.assertEqual(found, VIEWER_IMPORTERS)

    def test_no_renderer_under_torch(self):
        remarks = ROOT / "torch" / "_inductor" / "fusion_remarks"
        self.assertFalse((remarks / "render").exists())
        leftovers = [
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / "torch").rglob("*")
            if p.suffix in (".html", ".css", ".js")
        ]
        self.assertEqual(leftovers, [])


if __name__ == "__main__":
    run_tests()
