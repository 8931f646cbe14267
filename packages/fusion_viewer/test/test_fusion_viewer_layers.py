# Owner(s): ["module: inductor"]
"""The fusion viewer is layered, and apart from torch.

Read from the sources, not imported:

* the package ``__init__``'s docstring names every module, in layer order, and
  every import between the package's modules (at module level or inside a
  function) points up that list, so there is no import cycle;
* the formatters the viewer shares with torch's text summary (torch cannot
  import the viewer) are torch's, not copies.
"""

import ast
import re
from pathlib import Path

import fusion_viewer
from fusion_viewer import common
from torch._inductor.fusion_remarks import summary
from torch._inductor.test_case import run_tests, TestCase


PACKAGE = Path(fusion_viewer.__file__).resolve().parent

# The formatters fusion_viewer.common takes from torch's summary.
SHARED_FORMATTERS = (
    "fmt_bytes",
    "fmt_seconds",
    "fmt_predicted",
    "fmt_cost_model",
    "kernel_groups",
    "fold_names",
    "extern_inputs",
    "eliminated_words",
)


def package_modules() -> dict[str, Path]:
    """Dotted name (relative to the package, "" for its ``__init__``) -> path."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def documented_layers() -> dict[str, int]:
    """Each module the ``__init__`` docstring names (a line starting with
    ````name```` or ````a```` / ````b````) -> its position in the list."""
    layers = {}
    for line in (fusion_viewer.__doc__ or "").splitlines():
        if re.match(r"``[\w.]+``( / ``[\w.]+``)*$", line):
            for name in re.findall(r"``([\w.]+)``", line):
                layers[name] = len(set(layers.values()))
    return layers


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    """The layer of ``module``: its own entry, else its subpackage's."""
    while module:
        if module in layers:
            return layers[module]
        module = module.rpartition(".")[0]
    return None


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            elif (node.module or "").split(".")[0] == "fusion_viewer":
                base = node.module.partition(".")[2]
            else:
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}" if base else alias.name
                out.add(candidate if candidate in modules else base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fusion_viewer."):
                    out.add(alias.name.partition(".")[2])
    out.discard(name)
    return out


class TestFusionViewerLayers(TestCase):
    def test_every_module_is_named_in_the_package_docstring(self):
        layers = documented_layers()
        self.assertIn("html", layers)
        modules = [m for m in package_modules() if m]
        self.assertEqual([m for m in modules if layer_of(m, layers) is None], [])

    def test_imports_point_up_the_docstring_list(self):
        layers = documented_layers()
        modules = package_modules()
        problems = []
        for name, path in modules.items():
            for target in imported_modules(name, path, modules):
                own, theirs = layer_of(name, layers), layer_of(target, layers)
                if not name or own is None or theirs is None or theirs > own:
                    problems.append(f"{name or '__init__'} imports {target}")
                elif theirs == own and target.split(".")[0] != name.split(".")[0]:
                    problems.append(f"{name} imports {target} of its own layer")
        self.assertEqual(problems, [])

    def test_no_import_cycle(self):
        modules = package_modules()
        graph = {n: imported_modules(n, p, modules) for n, p in modules.items()}
        state: dict[str, str] = {}

        def visit(node: str, stack: list[str]) -> None:
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

    def test_the_shared_formatters_are_torchs(self):
        source = (PACKAGE / "common.py").read_text()
        for name in SHARED_FORMATTERS:
            with self.subTest(name):
                self.assertIs(getattr(common, name), getattr(summary, name))
                self.assertNotIn(f"def {name}(", source)


if __name__ == "__main__":
    run_tests()
