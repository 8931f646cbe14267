"""Tests of tools/fork.py: the overlay build, patches, refresh, check and export.

Most tests run the tool on a small fake "installed torch" so that every case
(a wrong version, a patch whose context moved, an edit left unrefreshed) can be
staged in a temporary directory.  The last class runs it on the real installed
torch (2.15.0 or 2.14.1, whichever this virtualenv has) and the repository's
real patches for that release.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path
from unittest import mock


TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import fork  # noqa: E402
import patchset  # noqa: E402


ACTIVATION = TOOLS / "fork_activation.py"
SCHEDULER = "".join(f"# line {i}\n" for i in range(1, 41))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class FakeForkTestCase(unittest.TestCase):
    """A fake installed torch, a fake fork repository and an overlay to build."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="fork-test-")
        root = Path(self._tmp.name)
        self.site = root / "site"
        self.repo = root / "repo"
        self.overlay = root / "overlay"
        torch = self.site / "torch"
        write(torch / "__init__.py", "from torch._inductor.scheduler import hook\n")
        write(torch / "version.py", "__version__ = '2.14.1+cpu'\n")
        write(torch / "_inductor" / "__init__.py", "")
        write(
            torch / "_inductor" / "scheduler.py",
            SCHEDULER + "def hook():\n    return 'stock'\n",
        )
        write(torch / "_inductor" / "ir.py", "IR = 1\n")
        write(torch / "_dynamo" / "eval_frame.py", "X = 1\n")
        write(torch / "lib" / "libtorch.so", "binary")
        patched = SCHEDULER.replace("# line 20\n", "# line 20\nhooked = True\n") + (
            "def hook():\n    return 'fork'\n"
        )
        self.patch_text = patchset.make_patch(
            "torch/_inductor/scheduler.py",
            (torch / "_inductor" / "scheduler.py").read_text(),
            patched,
        )
        write(
            self.repo / "patches/2.14.1/remarks/torch/_inductor/scheduler.py.patch",
            self.patch_text,
        )
        write(self.repo / "torch/_inductor/fusion_remarks.py", "REMARKS = 1\n")
        write(self.repo / "test/inductor/test_new.py", "def test():\n    pass\n")

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def fork(self) -> fork.Fork:
        return fork.Fork(self.repo, self.site / "torch", self.overlay, "2.14.1")

    def cli(self, *args: str) -> tuple[int, str]:
        """Run the command line in-process; return (exit code, stdout + stderr)."""
        out = io.StringIO()
        argv = ["--repo", str(self.repo), "--torch", str(self.site / "torch")]
        argv += ["--overlay", str(self.overlay), *args]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = fork.main(argv)
        return code, out.getvalue()

    def overlay_file(self, rel: str) -> Path:
        return self.overlay / rel


class TestBuild(FakeForkTestCase):
    def test_overlay_layout(self) -> None:
        code, out = self.cli("build")
        self.assertEqual(code, 0, out)
        torch = self.overlay / "torch"
        # Untouched directories are linked whole, touched ones are real.
        self.assertTrue((torch / "lib").is_symlink())
        self.assertEqual(os.readlink(torch / "lib"), str(self.site / "torch" / "lib"))
        self.assertTrue((torch / "_dynamo").is_symlink())
        self.assertFalse((torch / "_inductor").is_symlink())
        # Unmodified upstream file: a link; patched file: a real copy.
        self.assertEqual(
            os.readlink(torch / "_inductor" / "ir.py"),
            str(self.site / "torch" / "_inductor" / "ir.py"),
        )
        scheduler = torch / "_inductor" / "scheduler.py"
        self.assertFalse(scheduler.is_symlink())
        self.assertIn("hooked = True", scheduler.read_text())
        # Our new file: a link into the repository, so edits are live.
        self.assertEqual(
            os.readlink(torch / "_inductor" / "fusion_remarks.py"),
            str(self.repo / "torch" / "_inductor" / "fusion_remarks.py"),
        )
        # The pristine install is untouched.
        self.assertNotIn(
            "hooked", (self.site / "torch" / "_inductor" / "scheduler.py").read_text()
        )

    def test_overlay_shadows_installed_torch(self) -> None:
        self.assertEqual(self.cli("build")[0], 0)
        probe = (
            "import torch, torch._inductor.fusion_remarks as r; "
            "print(torch.hook(), r.REMARKS, torch.__file__)"
        )
        env = dict(os.environ, PYTHONPATH=f"{self.overlay}{os.pathsep}{self.site}")
        result = subprocess.run(
            [sys.executable, "-S", "-c", probe],
            capture_output=True,
            text=True,
            env=env,
            cwd=self._tmp.name,
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(
            result.stdout.split(),
            ["fork", "1", str(self.overlay / "torch" / "__init__.py")],
        )

    def test_run_is_not_shadowed_by_an_activated_overlay(self) -> None:
        # A virtualenv's .pth (``activate``) puts its overlay before PYTHONPATH;
        # `run` must still run the overlay it built.
        stale = Path(self._tmp.name) / "stale"
        write(stale / "torch" / "__init__.py", "def hook():\n    return 'stale'\n")
        answer = Path(self._tmp.name) / "answer"
        probe = (
            fork.pth_line(stale).strip()
            + "; import torch; open(sys.argv[1], 'w').write(torch.hook())"
        )
        code, out = self.cli(
            "run", "--", sys.executable, "-S", "-c", probe, str(answer)
        )
        self.assertEqual(code, 0, out)
        self.assertEqual(answer.read_text(), "fork")

    def pth(self, probe: str, **env: str) -> subprocess.CompletedProcess:
        """Run ``probe`` after the .pth line of this test's overlay, with the
        fake installed torch as the stock one."""
        self.assertEqual(self.cli("build")[0], 0)
        return subprocess.run(
            [
                sys.executable,
                "-S",
                "-c",
                fork.pth_line(self.overlay).strip() + "; " + probe,
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(self.site), **env},
            cwd=self._tmp.name,
        )

    def test_pth_disable_switch_spellings(self) -> None:
        probe = "import torch; print(torch.hook())"
        for value, expected in [
            ("", "fork"),
            ("0", "fork"),
            ("false", "fork"),
            ("FALSE", "fork"),
            ("1", "stock"),
            ("true", "stock"),
            ("True", "stock"),
        ]:
            with self.subTest(value=value):
                result = self.pth(probe, FUSION_FORK_DISABLE=value)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.split(), [expected])
                self.assertEqual(result.stderr, "")

    def test_pth_disabled_fork_module_import_says_why(self) -> None:
        result = self.pth(
            "import torch._inductor.fusion_remarks", FUSION_FORK_DISABLE="1"
        )
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(
            result.stderr.splitlines()[-1],
            "ImportError: torch._inductor.fusion_remarks is part of the fusion "
            "fork, which is off in this process: FUSION_FORK_DISABLE='1' "
            "(unset it or set it to 0 to use the fork)",
        )

    def test_pth_disabled_leaves_pythonpath_overlay_alone(self) -> None:
        # `tools/fork.py run`: FUSION_FORK_DISABLE=1 and the overlay on PYTHONPATH
        result = self.pth(
            "import torch._inductor.fusion_remarks as r; print(r.REMARKS)",
            FUSION_FORK_DISABLE="1",
            PYTHONPATH=f"{self.overlay}{os.pathsep}{self.site}",
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["1"])

    def test_pth_bad_disable_value_leaves_the_fork_on(self) -> None:
        # Python starts, with one line that names the value
        result = self.pth(
            "import torch; print(torch.hook())", FUSION_FORK_DISABLE="maybe"
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["fork"])
        self.assertEqual(
            result.stderr,
            "fusion fork: FUSION_FORK_DISABLE='maybe' is not a boolean: use 0, 1, "
            "true or false (any case), or leave it empty or unset; the fork stays on\n",
        )

    def test_pth_broken_overlay_is_one_line_and_stock_torch(self) -> None:
        missing = Path(self._tmp.name) / "removed-overlay"
        result = subprocess.run(
            [
                sys.executable,
                "-S",
                "-c",
                fork.pth_line(missing).strip() + "; import torch; print(torch.hook())",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(self.site)},
            cwd=self._tmp.name,
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["stock"])
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertRegex(
            lines[0],
            r"^fusion fork: not activated, stock torch: no overlay at .*"
            r"removed-overlay; reinstall it with this environment's Python: "
            r"python tools/fork\.py install$",
        )

    def test_rebuild_is_idempotent(self) -> None:
        self.assertEqual(self.cli("build")[0], 0)
        manifest = self.overlay / ".fork" / "manifest.json"
        before = {
            p: (p.lstat().st_mtime_ns, p.lstat().st_ino)
            for p in self.overlay.rglob("*")
        }
        code, out = self.cli("build")
        self.assertEqual(code, 0)
        self.assertIn("up to date", out)
        after = {
            p: (p.lstat().st_mtime_ns, p.lstat().st_ino)
            for p in self.overlay.rglob("*")
        }
        self.assertEqual(before, after)
        self.assertIn(manifest, after)

    def test_new_and_removed_files_follow_the_repository(self) -> None:
        self.assertEqual(self.cli("build")[0], 0)
        # A new file in a directory that was linked whole turns it into a real one.
        write(self.repo / "torch/_dynamo/fusion_hooks.py", "H = 1\n")
        (self.repo / "torch/_inductor/fusion_remarks.py").unlink()
        self.assertEqual(self.cli("build")[0], 0)
        dynamo = self.overlay / "torch" / "_dynamo"
        self.assertFalse(dynamo.is_symlink())
        self.assertTrue((dynamo / "eval_frame.py").is_symlink())
        self.assertTrue((dynamo / "fusion_hooks.py").is_symlink())
        self.assertFalse(
            os.path.lexists(self.overlay / "torch/_inductor/fusion_remarks.py")
        )
        # Removing the last patch of _inductor/ links the directory whole again.
        (
            self.repo / "patches/2.14.1/remarks/torch/_inductor/scheduler.py.patch"
        ).unlink()
        self.assertEqual(self.cli("build")[0], 0)
        self.assertTrue((self.overlay / "torch/_inductor").is_symlink())
        self.assertNotIn(
            "hooked", (self.overlay / "torch/_inductor/scheduler.py").read_text()
        )

    def test_new_file_may_not_shadow_an_upstream_file(self) -> None:
        write(self.repo / "torch/_inductor/ir.py", "IR = 2\n")
        code, out = self.cli("build")
        self.assertEqual(code, 2)
        self.assertIn("torch/_inductor/ir.py", out)
        self.assertIn("tools/fork.py edit", out)


class TestPatches(FakeForkTestCase):
    def test_patch_with_moved_context_fails_naming_file_and_hunk(self) -> None:
        pristine = self.site / "torch" / "_inductor" / "scheduler.py"
        pristine.write_text(pristine.read_text().replace("# line 19\n", "# LINE 19\n"))
        code, out = self.cli("build")
        self.assertEqual(code, 2)
        self.assertIn("patches/2.14.1/remarks/torch/_inductor/scheduler.py.patch", out)
        self.assertIn("hunk #1", out)
        self.assertIn("'# line 19'", out)
        self.assertIn("No fuzz", out)
        code, out = self.cli("check")
        self.assertEqual(code, 1)
        self.assertIn("hunk #1", out)

    def test_offset_builds_with_a_warning_and_check_fails(self) -> None:
        pristine = self.site / "torch" / "_inductor" / "scheduler.py"
        pristine.write_text("# new header\n# another\n" + pristine.read_text())
        code, out = self.cli("build")
        self.assertEqual(code, 0, out)
        self.assertIn("offset", out)
        self.assertIn(
            "hooked = True",
            self.overlay_file("torch/_inductor/scheduler.py").read_text(),
        )
        code, out = self.cli("check")
        self.assertEqual(code, 1)
        self.assertIn("+2 lines", out)

    def test_make_and_apply_round_trip(self) -> None:
        cases = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc", "a\nb\nc\nd\n"),  # no newline at end, then one
            ("a\nb\nc\n", "a\nb\nc"),
            ("", "x\ny\n"),
            (
                "".join(f"{i}\n" for i in range(100)),
                "".join(f"{i}\n" for i in range(100) if i % 17),
            ),
        ]
        for old, new in cases:
            with self.subTest(old=old[:10], new=new[:10]):
                diff = patchset.make_patch("torch/x.py", old, new)
                applied = patchset.apply_patch(old, diff, "x.patch", "torch/x.py")
                self.assertEqual(applied.text, new)
                self.assertEqual(applied.offsets, {})

    def test_corrupt_patch_is_reported(self) -> None:
        broken = self.patch_text.replace("+hooked = True\n", "")
        write(
            self.repo / "patches/2.14.1/remarks/torch/_inductor/scheduler.py.patch",
            broken,
        )
        code, out = self.cli("build")
        self.assertEqual(code, 2)
        self.assertIn("corrupt", out)

    def test_patch_for_a_missing_upstream_file(self) -> None:
        write(
            self.repo / "patches/2.14.1/remarks/torch/_inductor/nonexistent.py.patch",
            self.patch_text,
        )
        code, out = self.cli("build")
        self.assertEqual(code, 2)
        self.assertIn("torch/_inductor/nonexistent.py", out)


class TestEditRefresh(FakeForkTestCase):
    def test_feature_layers(self) -> None:
        """A later feature's layer applies on the earlier one's file; an edit
        goes to the feature named, the later layer re-derived on top of it;
        an edit of the later layer's lines under the earlier feature fails."""
        self.assertEqual(self.cli("build")[0], 0)
        self.assertEqual(self.cli("edit", "torch/_inductor/ir.py")[0], 0)
        ir = self.overlay_file("torch/_inductor/ir.py")
        ir.write_text("IR = 1\nREMARKS = 1\n")
        self.assertEqual(self.cli("refresh", "--feature", "remarks")[0], 0)
        ir.write_text("IR = 1\nREMARKS = 1\nABLATION = 1\n")
        self.assertEqual(self.cli("refresh", "--feature", "ablation")[0], 0)
        base = self.repo / "patches/2.14.1"
        ablation = base / "ablation/torch/_inductor/ir.py.patch"
        self.assertIn("+ABLATION = 1", ablation.read_text())
        self.assertIn(" REMARKS = 1", ablation.read_text())  # context: remarks' line
        ir.write_text("NOTE = 0\nIR = 1\nREMARKS = 1\nABLATION = 1\n")
        code, out = self.cli("refresh", "--feature", "remarks")
        self.assertEqual(code, 0, out)
        remarks = (base / "remarks/torch/_inductor/ir.py.patch").read_text()
        self.assertIn("+NOTE = 0", remarks)
        self.assertNotIn("ABLATION", remarks)
        self.assertEqual(self.cli("check")[0], 0)
        ir.write_text("NOTE = 0\nIR = 1\nREMARKS = 1\nABLATION = 2\n")
        code, out = self.cli("refresh", "--feature", "remarks")
        self.assertEqual(code, 2, out)
        self.assertIn("refresh it with --feature ablation", out)
        # A patch directory named after no feature is refused.
        (base / "misc").mkdir()
        code, out = self.cli("check")
        self.assertEqual(code, 1, out)
        self.assertIn("must be named after a feature", out)

    def test_edit_refresh_round_trip(self) -> None:
        self.assertEqual(self.cli("build")[0], 0)
        code, out = self.cli("edit", "torch/_inductor/ir.py")
        self.assertEqual(code, 0, out)
        ir = self.overlay_file("torch/_inductor/ir.py")
        self.assertFalse(ir.is_symlink())
        ir.write_text("IR = 1\nFUSED = True\n")
        # Building now would lose the edit: it stops instead.
        code, out = self.cli("build")
        self.assertEqual(code, 2)
        self.assertIn(str(ir), out)
        self.assertIn("refresh", out)
        self.assertEqual(ir.read_text(), "IR = 1\nFUSED = True\n")
        # A file with no patch yet needs the feature its edit belongs to.
        code, out = self.cli("refresh")
        self.assertEqual(code, 2, out)
        self.assertIn("--feature", out)
        # Refresh writes the patch; rebuilding keeps the edit and check passes.
        code, out = self.cli("refresh", "--feature", "remarks")
        self.assertEqual(code, 0, out)
        patch = self.repo / "patches/2.14.1/remarks/torch/_inductor/ir.py.patch"
        self.assertEqual(
            patch.read_text(),
            textwrap.dedent(
                """\
                diff --git a/torch/_inductor/ir.py b/torch/_inductor/ir.py
                --- a/torch/_inductor/ir.py
                +++ b/torch/_inductor/ir.py
                @@ -1 +1,2 @@
                 IR = 1
                +FUSED = True
                """
            ),
        )
        self.assertEqual(self.cli("build")[0], 0)
        self.assertEqual(ir.read_text(), "IR = 1\nFUSED = True\n")
        code, out = self.cli("check")
        self.assertEqual(code, 0, out)
        # Editing a patched file and refreshing updates its patch.
        scheduler = self.overlay_file("torch/_inductor/scheduler.py")
        scheduler.write_text(scheduler.read_text().replace("'fork'", "'fork v2'"))
        code, out = self.cli("check")
        self.assertEqual(code, 1)
        self.assertIn("not refreshed", out)
        self.assertEqual(self.cli("refresh", str(scheduler))[0], 0)
        self.assertIn(
            "+    return 'fork v2'",
            (
                self.repo / "patches/2.14.1/remarks/torch/_inductor/scheduler.py.patch"
            ).read_text(),
        )
        # Reverting an edit and refreshing removes the patch again.
        ir.write_text("IR = 1\n")
        self.assertEqual(self.cli("refresh", "torch/_inductor/ir.py")[0], 0)
        self.assertFalse(patch.exists())
        self.assertTrue(ir.is_symlink())
        self.assertEqual(self.cli("check")[0], 0)

    def test_discard_edits(self) -> None:
        self.assertEqual(self.cli("build")[0], 0)
        scheduler = self.overlay_file("torch/_inductor/scheduler.py")
        scheduler.write_text("garbage\n")
        self.assertEqual(self.cli("build")[0], 2)
        self.assertEqual(scheduler.read_text(), "garbage\n")
        self.assertEqual(self.cli("build", "--discard-edits")[0], 0)
        self.assertIn("hooked = True", scheduler.read_text())

    def test_symlink_replaced_by_a_copy_is_protected(self) -> None:
        self.assertEqual(self.cli("build")[0], 0)
        ir = self.overlay_file("torch/_inductor/ir.py")
        ir.unlink()
        ir.write_text("IR = 'edited in place'\n")
        code, out = self.cli("build")
        self.assertEqual(code, 2)
        self.assertIn("torch/_inductor/ir.py", out)
        self.assertEqual(ir.read_text(), "IR = 'edited in place'\n")


class TestVersionAndInstall(FakeForkTestCase):
    def test_wrong_torch_version(self) -> None:
        write(self.site / "torch" / "version.py", "__version__ = '2.10.0+cu128'\n")
        code, out = self.cli("build")
        self.assertEqual(code, 2)
        self.assertIn("found torch 2.10.0+cu128", out)
        # The message lists every supported release and how to set each up.
        self.assertIn("made for torch 2.15.0 and 2.14.1 only", out)
        self.assertIn("torch 2.15.0: `make develop`", out)
        self.assertIn("torch 2.14.1: `TORCH=2.14.1 make develop`", out)
        self.assertIn("requirements/torch-2.14.1.txt", out)
        self.assertFalse(self.overlay.exists())

    def test_release_selects_its_patch_series(self) -> None:
        # The same repository on a 2.15.0 install uses patches/2.15.0/ only:
        # the 2.14.1 series is never applied to it.
        write(self.site / "torch" / "version.py", "__version__ = '2.15.0+cu132'\n")
        self.assertEqual(self.cli("build")[0], 0)
        scheduler = self.overlay_file("torch/_inductor/scheduler.py")
        self.assertTrue(scheduler.is_symlink())  # no 2.15.0 patch for it
        write(
            self.repo / "patches/2.15.0/remarks/torch/_inductor/scheduler.py.patch",
            self.patch_text,
        )
        code, out = self.cli("check")
        self.assertEqual(code, 1, out)  # the overlay predates the new patch
        self.assertEqual(self.cli("build")[0], 0)
        self.assertIn("hooked = True", scheduler.read_text())
        manifest = json.loads((self.overlay / ".fork/manifest.json").read_text())
        self.assertEqual(manifest["torch_version"], "2.15.0")
        code, out = self.cli("check")
        self.assertEqual(code, 0, out)
        self.assertIn("ok: torch 2.15.0", out)

    def test_default_overlay_is_per_release(self) -> None:
        # Two virtualenvs (one per release) never share an overlay.
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = fork.main(
                ["--repo", str(self.repo), "--torch", str(self.site / "torch"), "build"]
            )
        self.assertEqual(code, 0, out.getvalue())
        self.assertTrue((self.repo / "build/overlay-2.14.1/torch").is_dir())

    def test_missing_torch(self) -> None:
        with mock.patch.object(
            fork.importlib.metadata,
            "distribution",
            side_effect=fork.importlib.metadata.PackageNotFoundError("torch"),
        ):
            with self.assertRaises(fork.ForkError) as ctx:
                fork.locate_pristine_torch(None)
        self.assertIn("torch is not installed", str(ctx.exception))
        self.assertIn("requirements/torch-2.15.0.txt", str(ctx.exception))
        self.assertIn("TORCH=2.14.1 make develop", str(ctx.exception))

    def test_not_a_torch_directory(self) -> None:
        with self.assertRaises(fork.ForkError) as ctx:
            fork.locate_pristine_torch(str(self.repo))
        self.assertIn("not a torch package", str(ctx.exception))


class TestCheck(FakeForkTestCase):
    def test_check_detects_unlinked_new_file(self) -> None:
        self.assertEqual(self.cli("build")[0], 0)
        self.assertEqual(self.cli("check")[0], 0)
        write(self.repo / "torch/_inductor/another.py", "A = 1\n")
        code, out = self.cli("check")
        self.assertEqual(code, 1)
        self.assertIn("torch/_inductor/another.py is not linked", out)

    def test_check_detects_non_canonical_patch(self) -> None:
        # A hand-written patch with an extra context line still applies but is
        # not what refresh would write.
        patch = self.repo / "patches/2.14.1/remarks/torch/_inductor/scheduler.py.patch"
        patch.write_text(
            patch.read_text().replace("@@ -18,6 +18,7 @@", "@@ -18,6 +18,7 @@ def f():")
        )
        self.assertEqual(self.cli("build")[0], 0)
        code, out = self.cli("check")
        self.assertEqual(code, 1)
        self.assertIn("canonical", out)


class TestReleaseLists(unittest.TestCase):
    """The supported releases are named in four places that cannot import one
    another (the tool runs before torch is found, make before Python); they
    must agree."""

    def test_fork_make_compat_and_requirements_agree(self) -> None:
        import ast
        import re

        repo = TOOLS.parent
        expected = set(fork.SUPPORTED_RELEASES)
        compat = ast.parse(
            (repo / "torch/_inductor/fusion_remarks/releases.py").read_text()
        )
        values = [
            ast.literal_eval(node.value)
            for node in ast.walk(compat)
            if isinstance(node, ast.AnnAssign)
            and getattr(node.target, "id", None) == "DESCRIBED_RELEASES"
        ]
        self.assertEqual([set(v) for v in values], [expected])
        make = re.search(
            r"^SUPPORTED_RELEASES := (.+)$", (repo / "Makefile").read_text(), re.M
        )
        self.assertIsNotNone(make)
        self.assertEqual(make.group(1).split()[0], fork.DEFAULT_RELEASE)
        self.assertEqual(set(make.group(1).split()), expected)
        for release in expected:
            pins = (repo / f"requirements/torch-{release}.txt").read_text()
            self.assertIn(f"torch=={release}\n", pins)
            self.assertTrue((repo / "patches" / release / "remarks" / "torch").is_dir())


def activated_overlay() -> str | None:
    """The overlay this virtualenv's .pth (``make develop``) activates."""
    import re
    import sysconfig

    pth = Path(sysconfig.get_paths()["purelib"]) / fork.PTH_NAME
    if sys.prefix == sys.base_prefix or not pth.exists():
        return None
    found = re.search(r"m\.activate\((['\"])(.+?)\1[,)]", pth.read_text())
    return found.group(2) if found else None


@unittest.skipUnless(activated_overlay(), "needs a virtualenv set up by make develop")
class TestActivatedVirtualenv(unittest.TestCase):
    """FUSION_FORK_DISABLE in this virtualenv's Python, through its real .pth."""

    def python(self, code: str, value: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**env, "FUSION_FORK_DISABLE": value},
            cwd=tempfile.gettempdir(),
        )

    def test_zero_keeps_the_fork(self) -> None:
        code = "import torch, torch._inductor.fusion_remarks; print(torch.__file__)"
        for value in ("0", "false", ""):
            with self.subTest(value=value):
                result = self.python(code, value)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertTrue(
                    result.stdout.strip().startswith(str(activated_overlay())),
                    result.stdout,
                )

    def test_one_gives_stock_torch_and_says_so_on_fork_imports(self) -> None:
        code = textwrap.dedent(
            """
            import importlib, os, torch
            assert not os.path.exists(
                os.path.join(os.path.dirname(torch.__file__), "_fork.py")
            ), torch.__file__
            import torch._inductor.config  # stock: imports fine
            import importlib.util as u
            spec = u.spec_from_file_location("switches", ACTIVATION)
            switches = u.module_from_spec(spec)
            spec.loader.exec_module(switches)
            print(len(switches.FORK_MODULES))
            for name in switches.FORK_MODULES:
                try:
                    importlib.import_module(name)
                except ImportError as e:
                    print(e)
            """
        ).replace("ACTIVATION", repr(str(ACTIVATION)))
        result = self.python(code, "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        count, *lines = result.stdout.splitlines()
        self.assertEqual(len(lines), int(count), result.stdout)
        self.assertGreaterEqual(len(lines), 10)
        for line in lines:
            self.assertRegex(
                line,
                r"^torch\.[\w.]+ is part of the fusion fork, which is off in this "
                r"process: FUSION_FORK_DISABLE='1' \(unset it or set it to 0 to "
                r"use the fork\)$",
            )
        # the line users write: a from-import is not swallowed as "cannot import name"
        result = self.python("from torch._inductor import fusion_report", "1")
        self.assertEqual(
            result.stderr.splitlines()[-1],
            "ImportError: torch._inductor.fusion_report is part of the fusion fork, "
            "which is off in this process: FUSION_FORK_DISABLE='1' (unset it or "
            "set it to 0 to use the fork)",
        )


class TestRealTorch(unittest.TestCase):
    """The repository's real patches against the installed torch's release."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="fork-real-")
        self.overlay = Path(self._tmp.name) / "overlay"
        self.base = ["--overlay", str(self.overlay)]

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def run_tool(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(TOOLS / "fork.py"), *self.base, *args],
            capture_output=True,
            text=True,
        )

    def test_build_check_and_timing(self) -> None:
        result = self.run_tool("build")
        self.assertEqual(result.returncode, 0, result.stderr)
        result = self.run_tool("check")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        manifest = json.loads((self.overlay / ".fork/manifest.json").read_text())
        self.assertIn("torch/_inductor/scheduler.py", manifest["patches"])
        # A rebuild of a set-up tree changes nothing (the speed itself is a
        # benchmark, reported in docs/source/torch.compiler_fusion_status.md, not asserted here).
        start = time.perf_counter()
        result = self.run_tool("build")
        self.assertLess(time.perf_counter() - start, 30)
        self.assertIn("up to date", result.stdout)

    def test_export_round_trip(self) -> None:
        self.assertEqual(self.run_tool("build").returncode, 0)
        out_dir = Path(self._tmp.name) / "series"
        # (the stacks' tests on the pristine tree take most of the suite's
        # time: `make export` runs them, this test the commits' imports)
        result = self.run_tool("export", "--no-tests", str(out_dir))
        self.assertEqual(result.returncode, 0, result.stderr)
        stacks = sorted(p for p in out_dir.iterdir() if p.is_dir())
        self.assertEqual(stacks[0].name, "01-remarks")
        series = sorted(out_dir.glob("*/*.patch"))
        text = "".join(p.read_text() for p in series)
        self.assertIn("diff --git a/torch/_inductor/scheduler.py", text)
        self.assertNotIn("diff --git a/torch/version.py", text)
        self.assertNotIn("diff --git a/torch/_fork.py", text)
        # Each stack's pull request names the release and counts its commits.
        manifest = json.loads((self.overlay / ".fork/manifest.json").read_text())
        release = manifest["torch_version"]
        for stack in stacks:
            pr = (stack / "PULL_REQUEST.md").read_text()
            self.assertIn(f"Against `v{release}`", pr)
            self.assertIn(f"{len(list(stack.glob('*.patch')))} commits", pr)
            self.assertIn("When it is off:", pr)
            # an optional pass left off by default says why (issue 39)
            self.assertEqual(
                "On by default? The pass stays off" in pr,
                stack.name.endswith("-one_pass"),
            )
            for patch in stack.glob("*.patch"):
                self.assertIn("] [inductor] ", patch.read_text().split("\n", 4)[3])


class TestActivation(unittest.TestCase):
    """``tools/fork_activation.py``, what the .pth line loads: plumbing out of
    ``torch/``, the standard library only, and a list of the fork's modules
    that covers every module the fork adds."""

    def load(self):
        import importlib.util

        spec = importlib.util.spec_from_file_location("fork_activation_", ACTIVATION)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def test_fork_modules_cover_the_forks_new_modules(self) -> None:
        repo_torch = TOOLS.parent / "torch"
        found = set()
        for path in repo_torch.rglob("*.py"):
            parts = path.relative_to(repo_torch.parent).with_suffix("").parts
            found.add(".".join(p for p in parts if p != "__init__"))
        self.assertIn("torch._inductor.fusion_remarks.hooks", found)
        modules = self.load().FORK_MODULES
        for name in sorted(found):
            self.assertTrue(
                any(name == m or name.startswith(m + ".") for m in modules), name
            )
        for m in modules:
            self.assertIn(m, found)

    def test_no_import_beyond_the_standard_library(self) -> None:
        code = (
            "import sys, importlib.util as u;"
            f"s = u.spec_from_file_location('s', {str(ACTIVATION)!r});"
            "m = u.module_from_spec(s); s.loader.exec_module(m);"
            "print(sorted(k for k in sys.modules if k.split('.')[0] == 'torch'))"
        )
        result = subprocess.run(
            [sys.executable, "-S", "-c", code], capture_output=True, text=True
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "[]")

    def test_disable_spellings(self) -> None:
        fork_disabled = self.load().fork_disabled
        for value, off in (
            ("", False),
            ("0", False),
            ("False", False),
            (" 1 ", True),
            ("TRUE", True),
        ):
            self.assertIs(fork_disabled({"FUSION_FORK_DISABLE": value}), off, value)
        self.assertIs(fork_disabled({}), False)
        with self.assertRaisesRegex(
            ValueError, "FUSION_FORK_DISABLE='maybe' is not a boolean"
        ):
            fork_disabled({"FUSION_FORK_DISABLE": "maybe"})


if __name__ == "__main__":
    unittest.main()
