# Owner(s): ["module: inductor"]
"""The layering of the ``fx_fusion`` package: imports point one way.

Each module of the package may import only modules below it, so no chain of
imports between its modules comes back to where it started.  Imports inside
functions count (a cycle hidden in a function is still one: neither module
can be understood, tested or moved without the other); imports under
``if TYPE_CHECKING:`` do not, since they never run.  The check reads
the sources with :mod:`ast`, so it sees imports that a run would not reach.
"""

from __future__ import annotations

import ast
import re
import tempfile
from pathlib import Path

import fx_fusion
from fx_fusion import codegen_triton
from torch._inductor.test_case import run_tests, TestCase


PACKAGE_DIR = Path(fx_fusion.__file__).resolve().parent
PACKAGE = "fx_fusion"
# The package's facade: it re-exports the public names and is imported by
# nothing inside the package.
FACADE = "__init__"
# The module of one generated Triton kernel (codegen_triton writes and loads it).
GENERATED = "<generated triton kernel>"
FUSION_REMARKS = ("torch._inductor.fusion_remarks", "torch._inductor.fusion_report")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in ``tree``, at any depth (functions, classes,
    try blocks), except those guarded by ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imported_modules(tree: ast.AST, modules: set[str]) -> set[str]:
    """The modules of the package (names in ``modules``, ``__init__`` for the
    package itself) that the module parsed as ``tree`` imports at run time."""
    found: set[str] = set()

    def target(dotted: str) -> str | None:
        # "fx_fusion.codegen.x" -> "codegen"; "fx_fusion" -> the facade
        parts = dotted.split(".")
        if parts[0] != PACKAGE:
            return None
        if len(parts) > 1 and parts[1] in modules:
            return parts[1]
        return FACADE

    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            found.update(m for a in node.names if (m := target(a.name)))
            continue
        if node.level > 1:
            continue  # above the package: not one of its modules
        if node.level == 1:
            base = PACKAGE + (f".{node.module}" if node.module else "")
        else:
            base = node.module or ""
        if base == PACKAGE:
            # "from . import codegen" names a module; "from . import fuse"
            # a name of the facade
            for alias in node.names:
                found.add(alias.name if alias.name in modules else FACADE)
        elif m := target(base):
            found.add(m)
    return found


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (itself excluded)."""
    files = {p.stem: p for p in package_dir.glob("*.py")}
    names = set(files) - {FACADE}
    return {
        name: imported_modules(ast.parse(path.read_text(), str(path)), names) - {name}
        for name, path in files.items()
    }


def documented_layers() -> list[str]:
    """The package's modules in the order its docstring lists them (the
    "**Modules**" bullets), lowest layer first."""
    doc = fx_fusion.__doc__ or ""
    section = doc[doc.index("**Modules**") :]
    bullets = re.findall(r"^\* (.*(?:\n  .*)*)", section, flags=re.MULTILINE)
    return [
        name
        for bullet in bullets
        for name in re.findall(r"``(\w+)``", bullet.split(":")[0])
    ]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path (first node repeated at the end), or
    None if there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


class TestFxFusionImports(TestCase):
    def test_no_import_cycle(self):
        graph = import_graph(PACKAGE_DIR)
        # A generated Triton kernel is a module too: codegen_triton loads it,
        # and it must not import codegen_triton (or anything above) back.
        prelude = ast.parse(codegen_triton._TRITON_PRELUDE)
        graph[GENERATED] = imported_modules(prelude, set(graph) - {FACADE})
        graph["codegen_triton"].add(GENERATED)
        self.assertEqual(graph[GENERATED], {"triton_support"})
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, f"import cycle: {' -> '.join(cycle or ())}")

    def test_imports_follow_the_documented_layers(self):
        # The package docstring lists the modules lowest first; each may
        # import only modules listed before it.
        layers = documented_layers()
        graph = import_graph(PACKAGE_DIR)
        self.assertEqual(sorted(layers), sorted(set(graph) - {FACADE}))
        upward = {
            name: sorted(d for d in deps if layers.index(d) > layers.index(name))
            for name, deps in graph.items()
            if name != FACADE and FACADE not in deps
        }
        self.assertEqual({k: v for k, v in upward.items() if v}, {})

    def test_only_report_imports_the_fusion_remarks(self):
        # One module speaks to torch._inductor's fusion remarks, so a change
        # there has one place to land here.
        users = set()
        for path in PACKAGE_DIR.glob("*.py"):
            for node in _runtime_imports(ast.parse(path.read_text())):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                if any(n.startswith(FUSION_REMARKS) for n in names):
                    users.add(path.stem)
        self.assertEqual(users, {"report"})

    def test_modules_do_not_import_the_facade(self):
        # The facade imports every layer; a module importing it would sit
        # below and above the others at once.
        graph = import_graph(PACKAGE_DIR)
        users = sorted(m for m, deps in graph.items() if FACADE in deps)
        self.assertEqual(users, [])

    def test_the_checker_sees_what_it_must(self):
        # Function-level, absolute and relative imports count;
        # TYPE_CHECKING imports and other packages do not.
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "__init__.py").write_text("from .a import f\n")
            (root / "a.py").write_text(
                "from typing import TYPE_CHECKING\n"
                "import torch\n"
                "from .b import g\n"
                "if TYPE_CHECKING:\n"
                "    from .c import C\n"
                "def f():\n"
                "    import fx_fusion.d\n"
            )
            (root / "b.py").write_text(
                "def g():\n    from . import a\n    from fx_fusion import fuse\n"
            )
            (root / "c.py").write_text("")
            (root / "d.py").write_text("")
            graph = import_graph(root)
        self.assertEqual(
            graph,
            {
                "__init__": {"a"},
                "a": {"b", "d"},
                "b": {"a", FACADE},
                "c": set(),
                "d": set(),
            },
        )
        self.assertEqual(find_cycle(graph), ["__init__", "a", "b", "__init__"])
        del graph["b"]
        self.assertIsNone(find_cycle(graph))


if __name__ == "__main__":
    run_tests()
