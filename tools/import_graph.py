"""The project's Python modules, their sizes, and the imports between them.

Read from the sources with :mod:`ast`, never imported, so a module that needs
a GPU, a newer torch or a missing package is walked all the same.  The rules,
chosen so that a reported cycle is one Python could really run into:

Which files.  Every ``.py`` file under :data:`ROOTS`, except in folders named
``build`` or starting with a dot (``.venv*``, ``.upstream*``): built or
installed copies, not sources.

Module names.  A file is named as Python imports it.  Under ``torch/`` the
repository holds only the fork's new files (``tools/fork.py build`` overlays
them on the installed torch), so ``torch/_inductor/x.py`` is
``torch._inductor.x``, from the repository's root.  Anywhere else a file
climbs the folders that hold an ``__init__.py``; the first folder without one
is what goes on ``sys.path``: ``packages/fx_fusion/fx_fusion/ir.py`` is
``fx_fusion.ir`` (its installed name) and ``benchmarks/fusion/study.py`` is
``study``, as the scripts there import each other by bare name once
``sys.path`` holds their folder (as tools/ and test/ scripts do too).

Which imports.  Every ``import`` and ``from ... import`` statement, at module
level or inside a function or class (a cycle hidden in a function is a cycle
of the design all the same), but not those under ``if TYPE_CHECKING:``, which
never run.  Relative imports are resolved against the importer's package.
``importlib`` calls with computed names are not followed.

Where a name points.  An imported name is looked up first among the
importer's own neighbours (the folder on ``sys.path`` it shares with them:
Python puts a script's own folder first), then among the other folders'
modules, unless its first part names a standard library module: a bare name
there means the standard library, not a project script that happens to share
it.

Packages.  ``import a.b.c`` and ``from a.b import c`` run ``a/__init__.py``
and ``a/b/__init__.py`` before ``c``: the importer depends on those package
modules too, so the edges to them are counted, with one exception: a
module's own enclosing packages.  Python imports those before the module's
first line runs, so an import of them never loads anything; and since a
package's ``__init__.py`` often re-exports its submodules, counting the edge
back to it would make every such package look like a cycle
(``pkg -> pkg.sub -> pkg``) that no import order can trip over.  An
``__init__.py`` that re-exports a module importing another package whose
``__init__.py`` comes back is a real cycle, and is reported.
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
ROOTS = ("torch", "packages", "tools", "benchmarks", "test")
MAX_LINES = 800
# The roots whose files are named from the repository's root (overlaid on an
# installed package), not from the first folder without an __init__.py.
OVERLAID = ("torch",)


@dataclasses.dataclass(frozen=True)
class Module:
    name: str  # dotted, as imported
    path: Path
    search_root: Path  # the sys.path entry that makes ``name`` importable
    is_package: bool  # an __init__.py

    def label(self, repo: Path) -> str:
        return self.path.relative_to(repo).as_posix()


def project_files(repo: Path = REPO) -> list[Path]:
    """Every source ``.py`` file of the project, sorted."""
    out = []
    for root in ROOTS:
        base = repo / root
        if not base.is_dir():
            continue
        for path in base.rglob("*.py"):
            folders = path.relative_to(repo).parts[:-1]
            if not any(p == "build" or p.startswith(".") for p in folders):
                out.append(path)
    return sorted(out)


def module_for(path: Path, repo: Path = REPO) -> Module:
    rel = path.relative_to(repo)
    is_package = path.name == "__init__.py"
    if rel.parts[0] in OVERLAID:
        parts = list(rel.with_suffix("").parts)
        search_root = repo
    else:
        parts = [path.stem]
        folder = path.parent
        while (folder / "__init__.py").is_file() and folder != repo:
            parts.insert(0, folder.name)
            folder = folder.parent
        search_root = folder
    if is_package:
        parts.pop()
    return Module(".".join(parts), path, search_root, is_package)


class Index:
    """The project's modules, by the ``sys.path`` entry and name that find them."""

    def __init__(self, modules: list[Module]) -> None:
        self.modules = modules
        self.by_root: dict[Path, dict[str, Module]] = collections.defaultdict(dict)
        for module in modules:
            self.by_root[module.search_root][module.name] = module

    @classmethod
    def of(cls, repo: Path = REPO) -> Index:
        return cls([module_for(p, repo) for p in project_files(repo)])

    def root_for(self, importer: Module, dotted: str) -> dict[str, Module]:
        """The modules of the ``sys.path`` entry that ``dotted`` comes from,
        seen from ``importer`` (empty when no project module has that name)."""
        top = dotted.split(".", 1)[0]
        own = self.by_root[importer.search_root]
        if any(n == top or n.startswith(top + ".") for n in own):
            return own
        if top in sys.stdlib_module_names:
            return {}
        for root in sorted(self.by_root):
            names = self.by_root[root]
            if any(n == top or n.startswith(top + ".") for n in names):
                return names
        return {}

    def loaded(self, importer: Module, dotted: str) -> list[Module]:
        """The project modules that importing ``dotted`` runs: it and every
        package above it that is a project module."""
        names = self.root_for(importer, dotted)
        parts = dotted.split(".")
        return [
            names[prefix]
            for i in range(1, len(parts) + 1)
            if (prefix := ".".join(parts[:i])) in names
        ]


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:``: they never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                skipped.update(id(n) for n in ast.walk(sub))
    return skipped


def _absolute(importer: Module, node: ast.ImportFrom) -> str | None:
    """The module a ``from`` import names, relative ones resolved (None when
    it climbs above the importer's top-level package)."""
    if not node.level:
        return node.module or ""
    package = importer.name.split(".")
    if not importer.is_package:
        package.pop()
    keep = len(package) - (node.level - 1)
    if keep <= 0:
        return None
    return ".".join([*package[:keep], *([node.module] if node.module else [])])


def imports_of(module: Module, index: Index) -> set[Module]:
    """The project modules ``module`` loads at run time (see the module's doc)."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
    skipped = _type_checking_only(tree)
    out: set[Module] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.update(index.loaded(module, alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            if not base:
                continue
            out.update(index.loaded(module, base))
            for alias in node.names:
                out.update(
                    m
                    for m in index.loaded(module, f"{base}.{alias.name}")
                    if m.name == f"{base}.{alias.name}"
                )
    own_packages = {
        ".".join(module.name.split(".")[:i])
        for i in range(1, module.name.count(".") + 1)
    }
    return {
        m
        for m in out
        if m != module
        and not (m.search_root == module.search_root and m.name in own_packages)
    }


def import_graph(repo: Path = REPO) -> dict[str, set[str]]:
    """Each project file (relative path) -> the project files it imports."""
    index = Index.of(repo)
    return {
        m.label(repo): {t.label(repo) for t in imports_of(m, index)}
        for m in index.modules
    }


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle through each group of mutually importing modules
    (a strongly connected component of more than one), each as a path that
    ends where it starts."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in order:
            continue
        # Tarjan's algorithm, iterative: the project may outgrow the recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in order:
                    order[succ] = low[succ] = len(order)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], order[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
    return sorted(_shortest_cycle(graph, c) for c in components)


def _shortest_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    start = min(component)
    came_from: dict[str, str] = {}
    queue = collections.deque([start])
    while queue:
        node = queue.popleft()
        for succ in sorted(graph[node] & component):
            if succ == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if succ not in came_from:
                came_from[succ] = node
                queue.append(succ)
    raise AssertionError(f"no cycle through {start}")  # a component has one


def oversized(repo: Path = REPO, limit: int = MAX_LINES) -> dict[str, int]:
    """Relative path -> line count of each project file over ``limit`` lines."""
    return {
        p.relative_to(repo).as_posix(): n
        for p in project_files(repo)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > limit
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="List the project's modules over the size limit and its "
        "import cycles; exit 1 when there is any."
    )
    parser.add_argument("--max-lines", type=int, default=MAX_LINES)
    args = parser.parse_args(argv)
    big = oversized(REPO, args.max_lines)
    cycles = find_cycles(import_graph(REPO))
    for path, lines in sorted(big.items()):
        print(f"{path}: {lines} lines (over {args.max_lines})")
    for cycle in cycles:
        print("import cycle: " + " -> ".join(cycle))
    if not big and not cycles:
        print(
            f"{len(project_files(REPO))} modules: none over {args.max_lines} lines, no cycle"
        )
    return 1 if big or cycles else 0


if __name__ == "__main__":
    sys.exit(main())
