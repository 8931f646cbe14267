"""The whole project keeps its modules small and its imports pointing one way.

Over every ``.py`` file of the project (``torch/``, ``packages/``, ``tools/``,
``benchmarks/``, ``test/``; not ``build/``, ``.venv*`` or ``.upstream*``),
discovered, never listed:

* no module is over 800 lines;
* no import cycle, counting imports inside functions (not those under
  ``if TYPE_CHECKING:``), across the roots: the fork's ``torch/`` files by
  their ``torch.`` names, ``packages/<project>/<package>/`` by their installed
  names, and the scripts of ``benchmarks/``, ``tools/`` and ``test/`` by the
  bare names they import each other with once their folder is on ``sys.path``.

Packages count as Python runs them: ``import a.b.c`` runs ``a/__init__.py`` and
``a/b/__init__.py`` first, so the importer depends on those too, except on its
own enclosing packages.  Python imports those before the importer's first
line, so importing them loads nothing, and a package whose ``__init__.py``
re-exports its submodules (``pkg -> pkg.sub -> pkg``) is no cycle.  A module
that imports another package whose ``__init__.py`` re-exports a module that
comes back to the importer is a real cycle, and is reported.  The walker,
its rules spelled out, is ``tools/import_graph.py`` (``python3
tools/import_graph.py`` prints the same findings);
``test/inductor/test_fusion_remarks_layers.py`` checks the layers inside the
fork's ``torch/`` files with its own walker, since it travels upstream without
``tools/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import import_graph  # noqa: E402


def test_no_module_is_over_the_size_limit():
    big = import_graph.oversized()
    assert big == {}, "\n".join(
        f"{path}: {lines} lines (limit {import_graph.MAX_LINES})"
        for path, lines in sorted(big.items())
    )


def test_no_import_cycle_anywhere_in_the_project():
    cycles = import_graph.find_cycles(import_graph.import_graph())
    assert cycles == [], "\n".join("import cycle: " + " -> ".join(c) for c in cycles)


def test_the_walk_covers_every_root():
    files = import_graph.project_files()
    for root in import_graph.ROOTS:
        if (import_graph.REPO / root).is_dir():
            assert any(f.relative_to(import_graph.REPO).parts[0] == root for f in files)
    assert not any(
        part == "build" or part.startswith(".")
        for f in files
        for part in f.relative_to(import_graph.REPO).parts
    )
    # A test importing a tool by bare name through sys.path: this file.
    graph = import_graph.import_graph()
    assert "tools/import_graph.py" in graph["tools/test/test_project_layout.py"]


# A small project made here: every rule of the walker on a few lines each.
FAKE = {
    # torch/: named from the repository's root, packages or not.
    "torch/_inductor/feature.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from torch._inductor.remarks import hooks  # never runs\n"
        "def late():\n"
        "    from torch._inductor import helper  # inside a function: counted\n"
    ),
    "torch/_inductor/helper.py": "import os\nfrom torch._inductor import config\n",
    # A package re-exporting its submodules, which import it back: no cycle.
    "torch/_inductor/remarks/__init__.py": "from .hooks import record\n",
    "torch/_inductor/remarks/hooks.py": (
        "from torch._inductor.remarks import model\n"
        "from . import model as again\n"
        "from .. import helper\n"
        "from torch._inductor.remarks import record\n"
        "def record():\n    pass\n"
    ),
    "torch/_inductor/remarks/model.py": "from ..remarks.render import text\n",
    "torch/_inductor/remarks/render/__init__.py": "",
    "torch/_inductor/remarks/render/text.py": "from ... import helper\n",
    # An installed package.
    "packages/viewer/viewer/__init__.py": "",
    "packages/viewer/viewer/cli.py": (
        "import viewer.store\nfrom torch._inductor.remarks import hooks\n"
    ),
    "packages/viewer/viewer/store.py": "import json\n",
    "packages/viewer/test/test_cli.py": "from viewer import cli\nimport cases\n",
    "packages/viewer/test/cases.py": "",
    # Scripts importing neighbours, and other folders' scripts, by bare name;
    # ``profile`` shadows the standard library only for its own neighbours.
    "benchmarks/fusion/study.py": "import harness\nimport profile\n",
    "benchmarks/fusion/harness.py": "import viewer.cli\n",
    "benchmarks/fusion/profile.py": "",
    "tools/tool.py": "import profile\nimport tool_parts\n",
    "tools/tool_parts.py": "",
    "tools/test/test_tool.py": "import tool\nimport harness\n",
    # Never walked.
    "build/overlay/torch/_inductor/feature.py": "import x\n",
    "tools/.venv/lib/site.py": "import tool\n",
    "packages/viewer/build/lib/viewer/cli.py": "import viewer\n",
}


def make_project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    return make_project(tmp_path, FAKE)


def test_walked_files_and_their_module_names(fake):
    names = {
        p.relative_to(fake).as_posix(): import_graph.module_for(p, fake).name
        for p in import_graph.project_files(fake)
    }
    assert names == {
        "benchmarks/fusion/harness.py": "harness",
        "benchmarks/fusion/profile.py": "profile",
        "benchmarks/fusion/study.py": "study",
        "packages/viewer/test/cases.py": "cases",
        "packages/viewer/test/test_cli.py": "test_cli",
        "packages/viewer/viewer/__init__.py": "viewer",
        "packages/viewer/viewer/cli.py": "viewer.cli",
        "packages/viewer/viewer/store.py": "viewer.store",
        "tools/test/test_tool.py": "test_tool",
        "tools/tool.py": "tool",
        "tools/tool_parts.py": "tool_parts",
        "torch/_inductor/feature.py": "torch._inductor.feature",
        "torch/_inductor/helper.py": "torch._inductor.helper",
        "torch/_inductor/remarks/__init__.py": "torch._inductor.remarks",
        "torch/_inductor/remarks/hooks.py": "torch._inductor.remarks.hooks",
        "torch/_inductor/remarks/model.py": "torch._inductor.remarks.model",
        "torch/_inductor/remarks/render/__init__.py": "torch._inductor.remarks.render",
        "torch/_inductor/remarks/render/text.py": "torch._inductor.remarks.render.text",
    }


def test_imports_resolve_as_python_would(fake):
    graph = import_graph.import_graph(fake)
    remarks = "torch/_inductor/remarks/"
    assert graph == {
        "benchmarks/fusion/harness.py": {
            "packages/viewer/viewer/__init__.py",
            "packages/viewer/viewer/cli.py",
        },
        "benchmarks/fusion/profile.py": set(),
        "benchmarks/fusion/study.py": {
            "benchmarks/fusion/harness.py",
            "benchmarks/fusion/profile.py",
        },
        "packages/viewer/test/cases.py": set(),
        "packages/viewer/test/test_cli.py": {
            "packages/viewer/test/cases.py",
            "packages/viewer/viewer/__init__.py",
            "packages/viewer/viewer/cli.py",
        },
        "packages/viewer/viewer/__init__.py": set(),
        # its own package ``viewer`` is not counted; the other one is
        "packages/viewer/viewer/cli.py": {
            "packages/viewer/viewer/store.py",
            remarks + "__init__.py",
            remarks + "hooks.py",
        },
        "packages/viewer/viewer/store.py": set(),
        # ``harness`` from another folder; ``tool`` from tools/
        "tools/test/test_tool.py": {"benchmarks/fusion/harness.py", "tools/tool.py"},
        # ``profile`` is the standard library's here
        "tools/tool.py": {"tools/tool_parts.py"},
        "tools/tool_parts.py": set(),
        # inside a function counted; under TYPE_CHECKING not
        "torch/_inductor/feature.py": {"torch/_inductor/helper.py"},
        "torch/_inductor/helper.py": set(),
        remarks + "__init__.py": {remarks + "hooks.py"},
        remarks + "hooks.py": {remarks + "model.py", "torch/_inductor/helper.py"},
        remarks + "model.py": {
            remarks + "render/__init__.py",
            remarks + "render/text.py",
        },
        remarks + "render/__init__.py": set(),
        remarks + "render/text.py": {"torch/_inductor/helper.py"},
    }
    # Every package re-exports its submodules, which import it back: no cycle.
    assert import_graph.find_cycles(graph) == []


def test_a_cycle_through_another_packages_init_is_reported(fake):
    """Importing ``viewer.store`` runs ``viewer/__init__.py``; when that
    re-exports ``viewer.cli``, which imports the importer, the cycle is real."""
    make_project(
        fake,
        {
            "packages/viewer/viewer/__init__.py": "from .cli import main\n",
            "torch/_inductor/remarks/render/text.py": (
                "def save():\n    from viewer.store import write\n"
            ),
        },
    )
    assert import_graph.find_cycles(import_graph.import_graph(fake)) == [
        [
            "packages/viewer/viewer/__init__.py",
            "packages/viewer/viewer/cli.py",
            "torch/_inductor/remarks/hooks.py",
            "torch/_inductor/remarks/model.py",
            "torch/_inductor/remarks/render/text.py",
            "packages/viewer/viewer/__init__.py",
        ]
    ]


def test_cycles_are_reported_once_each_as_a_shortest_path():
    graph = {
        "a": {"b"},
        "b": {"c", "a"},
        "c": {"a"},
        "d": {"e"},
        "e": {"d", "f"},
        "f": set(),
    }
    assert import_graph.find_cycles(graph) == [["a", "b", "a"], ["d", "e", "d"]]


def test_oversized_counts_lines(fake):
    (fake / "tools" / "tool.py").write_text("x = 1\n" * 801)
    (fake / "build" / "overlay" / "big.py").write_text("x = 1\n" * 900)
    assert import_graph.oversized(fake) == {"tools/tool.py": 801}
