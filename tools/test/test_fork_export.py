"""Tests of ``tools/fork.py export``: one ``git am`` stack per feature.

They stage the fake installed torch and fork repository of ``test_fork.py``
(its :class:`FakeForkTestCase`) and check the stacks' commits, pull-request
texts, the verification with ``git am`` and what is never exported.
"""

from __future__ import annotations

import subprocess
import sys
import unittest
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import patchset
from test_fork import FakeForkTestCase, write


class TestExport(FakeForkTestCase):
    def add_ablation_layer(self) -> None:
        """The ablation feature's own layer of scheduler.py: ``ablation = True``."""
        rel = "torch/_inductor/scheduler.py"
        self.assertEqual(self.cli("build")[0], 0)
        self.assertEqual(self.cli("edit", rel)[0], 0)
        path = self.overlay_file(rel)
        path.write_text(path.read_text() + "ablation = True\n")
        self.assertEqual(self.cli("refresh", "--feature", "ablation", rel)[0], 0)

    def test_export_series_applies_to_pristine_sources(self) -> None:
        write(self.repo / "torch/_inductor/fusion_remarks/core.py", "REMARKS = 1\n")
        write(
            self.repo / "test/inductor/test_fusion_remarks_core.py",
            "def test():\n    pass\n",
        )
        self.assertEqual(self.cli("build")[0], 0)
        out_dir = Path(self._tmp.name) / "series"
        code, out = self.cli("export", str(out_dir))
        self.assertEqual(code, 0, out)
        self.assertIn("stack 01-remarks: 3 commits", out)
        series = sorted((out_dir / "01-remarks").glob("*.patch"))
        self.assertEqual(len(series), 3, series)
        texts = [p.read_text() for p in series]
        self.assertIn(
            "Subject: [PATCH 1/3] [inductor] fusion remarks: add core.py", texts[0]
        )
        self.assertIn("new file mode 100644", texts[0])
        self.assertIn("+hooked = True", texts[1])
        self.assertIn("hooks in scheduler.py", texts[1])
        self.assertIn("Test Plan:", texts[1])
        self.assertIn("python test/inductor/test_fusion_remarks_core.py", texts[1])
        self.assertIn("test/inductor/test_fusion_remarks_core.py", texts[2])
        pr = (out_dir / "01-remarks/PULL_REQUEST.md").read_text()
        self.assertIn("Against `v2.14.1`", pr)
        self.assertIn("When it is off:", pr)
        self.assertIn("| 01-remarks | none | 3 |", (out_dir / "INDEX.md").read_text())
        # Independently of the tool's own verification: git am on a fresh tree.
        tree = Path(self._tmp.name) / "upstream"
        write(
            tree / "torch/_inductor/scheduler.py",
            (self.site / "torch/_inductor/scheduler.py").read_text(),
        )
        git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
        for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
            subprocess.run(git + cmd, check=True)
        subprocess.run([*git, "am", "-q", *map(str, series)], check=True)
        self.assertEqual(
            (tree / "torch/_inductor/scheduler.py").read_text(),
            self.overlay_file("torch/_inductor/scheduler.py").read_text(),
        )
        self.assertEqual(
            (tree / "torch/_inductor/fusion_remarks/core.py").read_text(),
            "REMARKS = 1\n",
        )

    def test_later_stack_applies_on_the_earlier(self) -> None:
        """A second feature's layer of the same file is a stack of its own,
        verified on top of the first."""
        self.add_ablation_layer()
        out_dir = Path(self._tmp.name) / "series"
        code, out = self.cli("export", str(out_dir))
        self.assertEqual(code, 0, out)
        self.assertIn("stack 02-ablation: 1 commits", out)
        (hooks,) = sorted((out_dir / "02-ablation").glob("*.patch"))
        self.assertIn("+ablation = True", hooks.read_text())
        self.assertNotIn("+hooked = True", hooks.read_text())

    def test_fork_only_files_are_not_exported(self) -> None:
        write(self.repo / "torch/_fork.py", "FORK_INFO = None\n")
        version_patch = patchset.make_patch(
            "torch/version.py",
            "__version__ = '2.14.1+cpu'\n",
            "__version__ = '2.14.1+cpu'\nfork = 1\n",
        )
        write(
            self.repo / "patches/2.14.1/plumbing/torch/version.py.patch", version_patch
        )
        self.assertEqual(self.cli("build")[0], 0)
        out_dir = Path(self._tmp.name) / "series"
        self.assertEqual(self.cli("export", str(out_dir))[0], 0)
        joined = "".join(p.read_text() for p in out_dir.glob("*/*.patch"))
        self.assertIn("scheduler.py", joined)
        self.assertNotIn("torch/_fork.py", joined)
        self.assertNotIn("torch/version.py", joined)

    def export(self) -> tuple[int, str]:
        self.assertEqual(self.cli("build")[0], 0)
        return self.cli("export", str(Path(self._tmp.name) / "series"))

    def test_a_stack_importing_fork_plumbing_is_refused(self) -> None:
        """The export of 91989bd: the remarks imported the fork's release
        plumbing, which is never exported, so its stack broke torch."""
        write(self.repo / "torch/_fork.py", "FORK_INFO = None\n")
        write(
            self.repo / "torch/_inductor/fusion_remarks/core.py",
            "from torch import _fork\n",
        )
        code, out = self.export()
        self.assertEqual(code, 2, out)
        self.assertIn(
            "stack remarks: torch/_inductor/fusion_remarks/core.py imports "
            "torch/_fork.py, which is fork plumbing",
            out,
        )

    def test_every_commit_imports_on_the_pristine_release(self) -> None:
        """A module the overlay imports but the pristine release with the
        stack's commits cannot (it needs a name a later stack's layer adds)
        fails the export at the commit that adds it."""
        self.add_ablation_layer()
        write(
            self.repo / "torch/_inductor/fusion_report.py",
            "from torch._inductor.scheduler import ablation\n",
        )
        code, out = self.cli(
            "run", "--", sys.executable, "-c", "import torch._inductor.fusion_report"
        )
        self.assertEqual(code, 0, out)  # the overlay has every layer
        code, out = self.export()
        self.assertEqual(code, 2, out)
        self.assertIn("stack 01-remarks, commit 1 (", out)
        self.assertIn("an import fails on the pristine release", out)
        self.assertIn("cannot import name 'ablation'", out)

    def test_the_stacks_tests_run_against_its_tree(self) -> None:
        write(
            self.repo / "test/inductor/test_fusion_remarks_core.py",
            "import torch._inductor.scheduler as s\n\n"
            "def test_hooked():\n    assert s.hooked\n\n"
            "def test_stock():\n    assert s.hook() == 'stock'\n",
        )
        code, out = self.export()
        self.assertEqual(code, 2, out)
        self.assertIn("stack 01-remarks: its tests fail on the pristine release", out)
        self.assertIn("test_stock", out)
        self.assertEqual(
            self.cli("export", "--no-tests", str(Path(self._tmp.name) / "s"))[0], 0
        )

    def test_needs_come_from_hunks_and_imports(self) -> None:
        """A stack needs the stacks whose layers its hunks were made on, and
        those owning what it imports; it is verified on those alone."""
        write(self.repo / "torch/_inductor/fusion_remarks/core.py", "REMARKS = 1\n")
        write(
            self.repo / "torch/_inductor/launch_bound_combo.py",
            "from torch._inductor.fusion_remarks import core\n",
        )
        write(self.repo / "torch/_inductor/one_pass_reductions.py", "ONE = 1\n")
        code, out = self.export()
        self.assertEqual(code, 0, out)
        self.assertIn("stack 02-one_pass: 1 commits", out)
        self.assertIn(
            "needs nothing", out.split("stack 02-one_pass")[1].splitlines()[0]
        )
        combo = out.split("stack 03-launch_bound_combo")[1].splitlines()[0]
        self.assertIn("needs remarks", combo)
        series = Path(self._tmp.name) / "series"
        self.assertIn(
            "Applies on top of stacks remarks, and needs no other.",
            (series / "03-launch_bound_combo/PULL_REQUEST.md").read_text(),
        )

    def test_export_refuses_a_tracked_location(self) -> None:
        code, out = self.cli("export", str(self.repo / "patches-out"))
        self.assertEqual(code, 2)
        self.assertIn("committed nowhere", out)


if __name__ == "__main__":
    unittest.main()
