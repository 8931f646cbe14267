# Owner(s): ["module: inductor"]
"""torch without the fusion viewer.

The pages, pictures and diffs are the fusion viewer's, a package outside
torch (``packages/fusion_viewer``) that reads only the report's JSON: no file
of torch imports it (a capture's page is ``fusion_viewer.page.save_html(rep,
path)``, the command line ``python -m fusion_viewer``), and no renderer is
left under ``torch/``.
"""

import ast
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


ROOT = Path(__file__).resolve().parents[2]


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
    def test_no_file_of_torch_imports_the_viewer(self):
        found = set()
        for path in sorted((ROOT / "torch").rglob("*.py")):
            found |= viewer_imports(path)
        self.assertEqual(found, set())
        # the check finds one where there is one
        viewer_page = ROOT / "packages" / "fusion_viewer" / "fusion_viewer" / "page.py"
        self.assertFalse(viewer_imports(viewer_page))  # relative imports only
        cli = ROOT / "benchmarks" / "fusion" / "golden_boundaries.py"
        self.assertTrue(viewer_imports(cli), cli)

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
