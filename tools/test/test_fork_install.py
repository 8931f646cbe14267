"""``python tools/fork.py install`` in virtualenvs of a user's own.

Two fresh virtualenvs, each with the fork installed by the documented command,
run with that environment's Python from the repository's root.  A installs
this test's torch release with pip, its own copy in its own site-packages (the
wheel alone: its dependencies, the CUDA libraries among them, come from the
repository's virtualenv by a ``.pth`` path line, which keeps the test to one
download of about 540 MB); B reaches the repository's torch by such a line
alone.  Each gets an overlay of its own; a user script under
``TORCH_LOGS=fusion`` prints the summary; removing one environment leaves the
other working; an overlay built for another torch is named by ``check`` and
never rebuilt from here; a missing or broken overlay is one line at start and
stock torch; ``uninstall`` restores stock torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
SITE = Path(sysconfig.get_paths()["purelib"])
USER_SCRIPT = """\
import torch

@torch.compile
def f(x):
    return torch.sin(x) + torch.cos(x)

f(torch.randn(8))
"""


def torch_release() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.__version__.split("+")[0]


@unittest.skipUnless(
    sys.prefix != sys.base_prefix and (SITE / "torch").is_dir(),
    "needs a virtualenv with torch installed (make develop)",
)
class TestInstallIntoYourOwnVirtualenv(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = Path(self._tmp.name)
        self.release = torch_release()

    def make_env(self, name: str, *, install_torch: bool = False) -> Path:
        """A fresh virtualenv that reaches the repository's site-packages;
        with ``install_torch``, torch of this test's release installed by pip
        into its own site-packages first, so that copy is the one it imports."""
        env = self.tmp / name
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(env)], check=True
        )
        site = self.site_of(env)
        if install_torch:
            installed = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "--python",
                    str(env / "bin" / "python"),
                    "install",
                    "--quiet",
                    "--no-cache-dir",
                    "--no-deps",
                    f"torch=={self.release}",
                ],
                capture_output=True,
                text=True,
                timeout=1200,
                # as the Makefile: a machine-wide constraints file (one that
                # caps torch) does not apply, the project's adds nothing
                env={
                    **os.environ,
                    "PIP_CONSTRAINT": str(REPO / "requirements" / "constraints.txt"),
                },
            )
            self.assertEqual(installed.returncode, 0, installed.stderr[-3000:])
            self.assertTrue((site / "torch" / "__init__.py").is_file())
        (site / "shared-packages.pth").write_text(f"{SITE}\n")
        return env

    @staticmethod
    def site_of(env: Path) -> Path:
        return Path(
            subprocess.check_output(
                [
                    str(env / "bin" / "python"),
                    "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                ],
                text=True,
            ).strip()
        )

    def run_in(
        self, env: Path, *args: str, **extra_env: str
    ) -> subprocess.CompletedProcess:
        environ = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "FUSION_FORK_DISABLE", "TORCH_LOGS")
        }
        return subprocess.run(
            [str(env / "bin" / "python"), *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", **extra_env},
            timeout=600,
        )

    def torch_file(self, env: Path) -> subprocess.CompletedProcess:
        return self.run_in(env, "-c", "import torch; print(torch.__file__)")

    def test_two_environments_each_with_its_own_overlay(self) -> None:
        a, b = self.make_env("a", install_torch=True), self.make_env("b")
        # A's own torch, installed by pip; B's, the repository's
        own_torch = self.site_of(a) / "torch"
        self.assertEqual(
            self.run_in(a, "-c", "import torch; print(torch.__version__)").stdout,
            self.run_in(b, "-c", "import torch; print(torch.__version__)").stdout,
        )
        overlays = {}
        for env in (a, b):
            result = self.run_in(env, "tools/fork.py", "install")
            self.assertEqual(result.returncode, 0, result.stderr)
            overlay = env / "fusion-fork" / f"overlay-{self.release}"
            self.assertIn(f"overlay {overlay}", result.stdout)
            overlays[env] = overlay
            torch_file = self.torch_file(env)
            self.assertEqual(torch_file.stderr, "")
            self.assertEqual(
                torch_file.stdout.strip(), str(overlay / "torch" / "__init__.py")
            )
        self.assertNotEqual(overlays[a], overlays[b])
        # A's overlay is built on A's own torch, B's on the repository's
        for env, torch_dir in ((a, own_torch), (b, SITE / "torch")):
            manifest = json.loads(
                (overlays[env] / ".fork" / "manifest.json").read_text()
            )
            self.assertEqual(Path(manifest["torch_dir"]), torch_dir)

        # the user's script under TORCH_LOGS=fusion, in A: the fork's summary
        (self.tmp / "user.py").write_text(USER_SCRIPT)
        script = self.run_in(a, str(self.tmp / "user.py"), TORCH_LOGS="fusion")
        self.assertEqual(script.returncode, 0, script.stderr[-3000:])
        self.assertIn(
            "[__fusion] graph 0/0 (cpu): 3 ops -> 1 kernel (1 generated, 0 extern)",
            script.stderr,
        )
        self.assertIn("sin, cos and add, inlined into one loop nest", script.stderr)
        check = self.run_in(a, "tools/fork.py", "check")
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

        # B removed: A is untouched
        shutil.rmtree(b)
        torch_file = self.torch_file(a)
        self.assertEqual(torch_file.stderr, "")
        self.assertTrue(torch_file.stdout.startswith(str(overlays[a])))

        # an overlay built for another torch: named by check and info, never
        # rebuilt from here
        manifest = overlays[a] / ".fork" / "manifest.json"
        saved = manifest.read_text()
        manifest.write_text(
            json.dumps({**json.loads(saved), "torch_dir": "/elsewhere/torch"})
        )
        for command, status in (("check", 1), ("info", 1), ("build", 2)):
            result = self.run_in(a, "tools/fork.py", command)
            self.assertEqual(result.returncode, status, command)
            self.assertIn(
                f"overlay {overlays[a]} is built for the torch at /elsewhere/torch, "
                f"not this Python's ({own_torch})",
                result.stdout + result.stderr,
            )
        manifest.write_text(saved)

        # its links leading nowhere (the torch it was built for moved away):
        # one line at start, stock torch
        entry = overlays[a] / "torch" / "__init__.py"
        entry.unlink()
        entry.symlink_to(self.tmp / "gone" / "torch" / "__init__.py")
        torch_file = self.torch_file(a)
        self.assertEqual(torch_file.stdout.strip(), str(own_torch / "__init__.py"))
        self.assertEqual(
            torch_file.stderr.splitlines(),
            [
                f"fusion fork: not activated, stock torch: the overlay {overlays[a]} "
                f"leads to {self.tmp / 'gone' / 'torch' / '__init__.py'}, which is "
                "gone; reinstall it with this environment's Python: python "
                "tools/fork.py install"
            ],
        )

        # uninstall: stock torch, nothing said, the overlay gone
        result = self.run_in(a, "tools/fork.py", "uninstall")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"removed {overlays[a]}", result.stdout)
        self.assertFalse(overlays[a].exists())
        torch_file = self.torch_file(a)
        self.assertEqual(torch_file.stderr, "")
        self.assertEqual(torch_file.stdout.strip(), str(own_torch / "__init__.py"))

    @unittest.skipUnless(
        getattr(sys, "_base_executable", sys.executable) != sys.executable,
        "needs the interpreter this virtualenv was made from",
    )
    def test_outside_a_virtualenv_install_refuses(self) -> None:
        result = subprocess.run(
            [
                sys._base_executable,
                "tools/fork.py",
                "--torch",
                str(SITE / "torch"),
                "install",
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertIn("is not a virtualenv's interpreter", result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 2, result.stderr)


if __name__ == "__main__":
    unittest.main()
