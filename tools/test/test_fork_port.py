"""Tests of ``tools/fork.py port`` (tools/fork_port.py): the three-way merge of
the newest patch series onto a new torch release.

Each test stages a fake release pair (a fake pristine torch 2.14.1 and 2.15.0)
and a fake fork repository with a ``patches/2.14.1`` series in a temporary
directory, and runs the command line in-process.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path


TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import fork  # noqa: E402
import fork_port  # noqa: E402
import patchset  # noqa: E402


OLD, NEW = "2.14.1", "2.15.0"
# The Makefile's virtualenv of OLD: .venv for the default release.
OLD_VENV = ".venv" if OLD == fork.DEFAULT_RELEASE else f".venv-{OLD}"
LINES = "".join(f"# line {i}\n" for i in range(1, 41))
SCHEDULER = LINES + "def hook():\n    return 'stock'\n"
IR = "".join(f"# ir {i}\n" for i in range(1, 10)) + "x = 1\n" + "# tail\n" * 5
UTILS = (
    "def old_helper():\n    pass\n\n\ndef kept():\n    pass\n\n\n"
    "class Kernel:\n    def __init__(self):\n"
    "        self.old_attr = 1\n        self.kept_attr = 2\n        self.shadowed = 3\n"
)
FORK_MODULE = """\
import torch._inductor.removed_mod
from torch._inductor.utils import old_helper, kept
from .utils import Kernel
from . import fork_helpers


def f(k: Kernel) -> int:
    return k.old_attr + k.kept_attr + k.shadowed + fork_helpers.X


def g(k: Kernel) -> int:
    return k.old_attr
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class PortTestCase(unittest.TestCase):
    """OLD and NEW fake torches, and a repository with OLD's patch series:

    * scheduler.py: NEW inserts lines between the fork's two hunks -> clean;
    * ir.py: NEW changes the very line the fork changes -> conflict;
    * same.py: NEW already has the fork's change -> nothing to write;
    * gone.py: NEW removed the file.
    """

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="fork-port-test-")
        root = Path(self._tmp.name)
        self.root = root
        self.old = root / "old" / "torch"
        self.new = root / "new" / "torch"
        self.repo = root / "repo"
        self.out = root / "out"
        self.work = root / "work"
        ind = "_inductor"
        for torch, version in ((self.old, OLD), (self.new, NEW)):
            write(torch / "version.py", f"__version__ = '{version}+cpu'\n")
            write(torch / "__init__.py", "")
            write(torch / ind / "__init__.py", "")
            write(torch / ind / "same.py", "a = 1\nb = 2\nc = 3\n")
        write(self.old / ind / "scheduler.py", SCHEDULER)
        write(
            self.new / ind / "scheduler.py",
            SCHEDULER.replace("# line 30\n", "# line 30\nupstream = 1\nmore = 2\n"),
        )
        write(self.old / ind / "ir.py", IR)
        write(self.new / ind / "ir.py", IR.replace("x = 1\n", "x = 2\n"))
        write(self.new / ind / "same.py", "a = 1\nb = 'fork'\nc = 3\n")
        write(self.old / ind / "gone.py", "g = 1\n")
        write(self.old / ind / "utils.py", UTILS)
        write(
            self.new / ind / "utils.py",
            UTILS.replace("def old_helper", "def new_helper")
            .replace("self.old_attr", "self.new_attr")
            .replace("self.shadowed = 3\n", ""),
        )
        write(self.old / ind / "removed_mod.py", "R = 1\n")
        self.fork_texts = {
            "scheduler.py": SCHEDULER.replace(
                "# line 20\n", "# line 20\nhooked = 1\n"
            ).replace("'stock'", "'fork'"),
            "ir.py": IR.replace("x = 1\n", "x = fork(1)\n"),
            "same.py": "a = 1\nb = 'fork'\nc = 3\n",
            "gone.py": "g = 1\nhooked = 1\n",
        }
        for name, text in self.fork_texts.items():
            rel = f"torch/{ind}/{name}"
            diff = patchset.make_patch(rel, (self.old / ind / name).read_text(), text)
            write(self.repo / "patches" / OLD / "remarks" / f"{rel}.patch", diff)
        write(self.repo / "torch" / ind / "fork_mod.py", FORK_MODULE)
        write(self.repo / "torch" / ind / "fork_helpers.py", "X = 1\nshadowed = 2\n")

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def cli(self, *args: str, explicit: bool = True) -> tuple[int, str]:
        """Run ``tools/fork.py port`` in-process; return (exit code, output)."""
        argv = ["--repo", str(self.repo), "port", NEW, *args]
        if explicit:
            argv += ["--old-torch", str(self.old), "--new-torch", str(self.new)]
        argv += ["--out", str(self.out), "--work", str(self.work)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = fork.main(argv)
        return code, out.getvalue()

    def report(self) -> dict:
        return json.loads((self.work / "report.json").read_text())

    def file_report(self, name: str) -> dict:
        (entry,) = [
            f
            for f in self.report()["files"]
            if f["file"] == f"remarks/torch/_inductor/{name}"
        ]
        return entry


class TestMerge(PortTestCase):
    def test_clean_merge_writes_a_patch_that_applies_strictly_to_new(self) -> None:
        code, out = self.cli()
        self.assertEqual(code, 1, out)  # ir.py conflicts, gone.py was removed
        rel = "torch/_inductor/scheduler.py"
        patch = (self.out / "remarks" / f"{rel}.patch").read_text()
        new_text = (self.new / "_inductor/scheduler.py").read_text()
        applied = patchset.apply_patch(new_text, patch, "scheduler.patch", rel)
        self.assertEqual(applied.offsets, {})
        self.assertIn("upstream = 1\nmore = 2\n", applied.text)  # upstream's change
        self.assertIn("# line 20\nhooked = 1\n", applied.text)  # the fork's
        self.assertIn("return 'fork'", applied.text)
        self.assertEqual(self.file_report("scheduler.py")["status"], "clean")
        self.assertFalse((self.work / "remarks" / rel).exists())

    def test_conflict_leaves_markers_and_reports_both_sides(self) -> None:
        code, out = self.cli()
        self.assertEqual(code, 1, out)
        rel = "torch/_inductor/ir.py"
        self.assertFalse((self.out / "remarks" / f"{rel}.patch").exists())
        merged = (self.work / "remarks" / rel).read_text()
        lines = merged.splitlines()
        self.assertIn(f"<<<<<<< fork-{OLD}", lines)
        self.assertIn(f"||||||| {OLD}", lines)
        self.assertIn(f">>>>>>> {NEW}", lines)
        entry = self.file_report("ir.py")
        self.assertEqual(entry["status"], "conflict")
        (conflict,) = entry["conflicts"]
        self.assertEqual(conflict["fork"], ["x = fork(1)"])
        self.assertEqual(conflict["base"], ["x = 1"])
        self.assertEqual(conflict["new"], ["x = 2"])
        self.assertEqual(lines[conflict["line"] - 1], f"<<<<<<< fork-{OLD}")
        self.assertIn(f"CONFLICT {self.work / 'remarks' / rel}:{conflict['line']}", out)
        self.assertIn("| x = fork(1)", out)
        self.assertIn("| x = 2", out)

    def test_already_upstream_and_removed_upstream(self) -> None:
        code, out = self.cli()
        self.assertEqual(code, 1, out)
        self.assertEqual(self.file_report("same.py")["status"], "upstream")
        self.assertFalse((self.out / "remarks/torch/_inductor/same.py.patch").exists())
        self.assertIn(
            "already upstream (no patch written): remarks/torch/_inductor/same.py", out
        )
        self.assertEqual(self.file_report("gone.py")["status"], "removed")
        self.assertFalse((self.out / "remarks/torch/_inductor/gone.py.patch").exists())
        self.assertIn("REMOVED UPSTREAM remarks/torch/_inductor/gone.py", out)
        self.assertIn(
            "1 files clean (patches in", out
        )  # scheduler.py only; the rest are not
        self.assertIn("1 conflicting", out)

    def test_all_clean_exits_zero(self) -> None:
        for name in ("ir.py", "gone.py"):
            (self.repo / f"patches/{OLD}/remarks/torch/_inductor/{name}.patch").unlink()
        code, out = self.cli()
        self.assertEqual(code, 0, out)
        self.assertEqual(
            sorted(p.name for p in self.out.rglob("*.patch")), ["scheduler.py.patch"]
        )

    def test_hunks_before_merging(self) -> None:
        self.cli()
        counts = {
            f["file"].rsplit("/", 1)[1]: f["hunk_counts"]
            for f in self.report()["files"]
        }
        self.assertEqual(counts["scheduler.py"], {"exact": 1, "offset": 1, "fail": 0})
        self.assertEqual(counts["ir.py"], {"exact": 0, "offset": 0, "fail": 1})
        self.assertEqual(counts["same.py"], {"exact": 0, "offset": 0, "fail": 1})
        self.assertEqual(counts["gone.py"], {"exact": 0, "offset": 0, "fail": 1})
        self.assertEqual(self.report()["hunks"], {"exact": 1, "offset": 1, "fail": 3})

    def test_measure_hunks_goes_on_after_a_failing_hunk(self) -> None:
        def text(changes: dict[int, str], head: str = "") -> str:
            return head + "".join(f"{changes.get(i, i)}\n" for i in range(40))

        diff = patchset.make_patch("x", text({}), text({5: "a", 30: "b"}))
        # hunk 1's context (lines 3-9) changed, hunk 2's moved down a line
        moved = text({6: "six"}, head="head\n")
        self.assertEqual(fork_port.measure_hunks(moved, diff, "x"), ["fail", "offset"])
        self.assertEqual(
            fork_port.measure_hunks(text({}), diff, "x"), ["exact", "exact"]
        )


class TestResolved(PortTestCase):
    def test_resolved_writes_the_patch(self) -> None:
        self.cli()
        rel = "torch/_inductor/ir.py"
        work = self.work / "remarks" / rel
        resolved = IR.replace("x = 1\n", "x = fork(2)\n")
        work.write_text(resolved)
        code, out = self.cli("--resolved")
        self.assertEqual(code, 0, out)
        patch = (self.out / "remarks" / f"{rel}.patch").read_text()
        new_text = (self.new / "_inductor/ir.py").read_text()
        self.assertEqual(patchset.apply_patch(new_text, patch, "p", rel).text, resolved)

    def test_resolved_refuses_files_with_markers(self) -> None:
        self.cli()
        marked = self.work / "remarks/torch/_inductor/ir.py"
        fixed = write(
            self.work / "remarks/torch/_inductor/scheduler.py",
            (self.new / "_inductor/scheduler.py").read_text() + "tail = 1\n",
        )
        code, out = self.cli("--resolved")
        self.assertEqual(code, 1, out)
        refused = [line for line in out.splitlines() if line.startswith("refused")]
        self.assertEqual(
            refused,
            [f"refused {marked}: it still has conflict markers; resolve them first"],
        )
        self.assertFalse((self.out / "remarks/torch/_inductor/ir.py.patch").exists())
        patch = (self.out / "remarks/torch/_inductor/scheduler.py.patch").read_text()
        self.assertIn("+tail = 1", patch)
        self.assertTrue(fixed.exists())

    def test_resolved_with_nothing_to_do(self) -> None:
        code, out = self.cli("--resolved")
        self.assertEqual(code, 2)
        self.assertEqual(len(out.strip().splitlines()), 1, out)
        self.assertIn("run `tools/fork.py port 2.15.0` first", out)


class TestNames(PortTestCase):
    def test_lacking_names_and_modules(self) -> None:
        code, out = self.cli()
        self.assertEqual(code, 1, out)  # the names report does not decide it
        report = self.report()
        # old_helper is imported, old_attr used as an attribute: both gone in NEW.
        self.assertEqual(sorted(report["names"]), ["old_attr", "old_helper"])
        self.assertEqual(
            report["names"]["old_attr"],
            ["torch/_inductor/fork_mod.py:8", "torch/_inductor/fork_mod.py:12"],
        )
        self.assertEqual(
            report["names"]["old_helper"], ["torch/_inductor/fork_mod.py:2"]
        )
        # kept/kept_attr/Kernel are in NEW; shadowed is gone from NEW but the
        # fork defines it itself; fork_helpers is the fork's own module.
        self.assertEqual(list(report["modules"]), ["torch._inductor.removed_mod"])
        self.assertIn(f"upstream names the fork's modules use that {NEW} lacks: 2", out)
        self.assertIn("  old_helper: torch/_inductor/fork_mod.py:2", out)
        self.assertIn("module torch._inductor.removed_mod", out)

    def test_relative_imports_resolve_against_the_package(self) -> None:
        write(
            self.repo / "torch/_inductor/sub/__init__.py",
            "from ..utils import old_helper\nfrom .. import removed_mod\n"
            "from ..fork_helpers import X\n",
        )
        uses = fork_port.fork_uses(self.repo)
        self.assertIn("torch/_inductor/sub/__init__.py:1", uses.names["old_helper"])
        self.assertIn("torch._inductor.utils", uses.modules)
        self.assertIn("removed_mod", uses.names)  # a module name of OLD's
        # the fork's own modules are no upstream modules, their names no upstream names
        self.assertNotIn("torch._inductor.fork_helpers", uses.modules)
        self.assertNotIn("torch/_inductor/sub/__init__.py:3", uses.names.get("X", []))

    def test_release_tags_that_would_switch_off(self) -> None:
        write(
            self.repo / "test" / "programs.py",
            "from torch._inductor.fusion_remarks.releases import ReleaseRange, since, until\n"
            "A = Rule('a', releases=since('2.14.1'))\n"
            "B = Rule('b', releases=until('2.15.0'))\n"
            "C = Rule('c', releases=('2.14.1',))\n"
            "D = Rule('d', releases=('2.14.1', '2.15.0'))\n"
            "E = ReleaseRange(since='2.11.0', until='2.15.0')\n"
            "F = until('2.14.1')\n",
        )
        lines = fork_port.release_tag_report(self.repo, OLD, NEW)
        self.assertEqual(
            [line.split(":")[1] for line in lines], ["3", "4", "6"], "\n".join(lines)
        )
        self.assertIn("until 2.15.0", lines[0])
        self.assertIn("use a range", lines[1])
        _, out = self.cli()
        self.assertIn(f"release tags that would switch off on {NEW}:", out)
        self.assertEqual(self.report()["release_tags"], lines)

    def test_a_rerun_keeps_a_resolution_in_progress(self) -> None:
        rel = "torch/_inductor/ir.py"
        write(
            self.out / "remarks" / f"{rel}.patch", "stale\n"
        )  # an earlier port's patch
        self.cli()
        self.assertFalse((self.out / "remarks" / f"{rel}.patch").exists())
        work = self.work / "remarks" / rel
        work.write_text("half resolved\n")
        code, _ = self.cli()
        self.assertEqual(code, 1)
        self.assertEqual(work.read_text(), "half resolved\n")
        merged = work.with_name(work.name + ".merged").read_text()
        self.assertIn("<<<<<<< fork-2.14.1", merged)
        # --resolved reads the developer's file, never the .merged one
        work.write_text(IR.replace("x = 1\n", "x = fork(2)\n"))
        code, out = self.cli("--resolved")
        self.assertEqual(code, 0, out)
        self.assertNotIn(".merged", out)


class TestErrors(PortTestCase):
    def test_missing_old_virtualenv(self) -> None:
        code, out = self.cli("--new-torch", str(self.new), explicit=False)
        self.assertEqual(code, 2)
        self.assertEqual(len(out.strip().splitlines()), 1, out)
        self.assertIn("TORCH=2.14.1 make develop", out)
        self.assertIn(str(self.repo / OLD_VENV), out)
        self.assertFalse(self.out.exists())

    def test_old_virtualenv_by_the_makefile_convention(self) -> None:
        site = self.repo / OLD_VENV / "lib/python3.11/site-packages"
        site.mkdir(parents=True)
        (site / "torch").symlink_to(self.old)
        code, out = self.cli("--new-torch", str(self.new), explicit=False)
        self.assertEqual(code, 1, out)
        self.assertEqual(self.report()["old_torch"], str(self.old.resolve()))

    def test_new_version_mismatch(self) -> None:
        write(self.new / "version.py", "__version__ = '2.14.1+cpu'\n")
        code, out = self.cli()
        self.assertEqual(code, 2)
        self.assertEqual(len(out.strip().splitlines()), 1, out)
        self.assertIn("is torch 2.14.1+cpu, not 2.15.0", out)

    def test_error_is_one_line_when_run_as_a_script(self) -> None:
        # Run as a script, fork.py is __main__: its ForkError is another class.
        result = subprocess.run(
            [
                sys.executable,
                str(TOOLS / "fork.py"),
                "--repo",
                str(self.repo),
                "port",
                NEW,
                "--new-torch",
                str(self.old),
            ],
            capture_output=True,
            text=True,
        )
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        self.assertIn("not 2.15.0", result.stderr)

    def test_default_old_is_the_newest_older_supported_release(self) -> None:
        self.assertEqual(fork_port.default_old("2.15.0"), "2.14.1")
        self.assertEqual(fork_port.default_old("2.16.0"), "2.15.0")
        self.assertEqual(fork_port.default_old("2.14.10"), "2.14.1")
        with self.assertRaises(fork.ForkError):
            fork_port.default_old("2.12.0")


if __name__ == "__main__":
    unittest.main()
