"""tools/fork_features.py: every part of the fork has an owning feature."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path


TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import fork  # noqa: E402
import fork_features  # noqa: E402


def _pristine(release: str, rel: str) -> str | None:
    """``rel`` of the installed torch ``release`` (this virtualenv's, or the
    other release's virtualenv beside it), None where it is not installed."""
    for venv in (".venv", f".venv-{release}"):
        for site in sorted(
            (fork_features.REPO / venv).glob("lib/python3*/site-packages")
        ):
            version = site / "torch" / "version.py"
            if version.is_file() and f"'{release}" in version.read_text():
                path = site / rel
                return path.read_text(encoding="utf-8") if path.is_file() else None
    return None


class TestOwners(unittest.TestCase):
    def test_every_new_file_has_an_owner(self) -> None:
        files = fork_features.new_files()
        self.assertTrue(any(f.startswith("torch/_inductor/") for f in files))
        self.assertEqual([f for f in files if fork_features.owner_of(f) is None], [])

    def test_more_specific_patterns_come_first(self) -> None:
        self.assertEqual(
            fork_features.owner_of(
                "packages/fusion_viewer/fusion_viewer/check/policy.py"
            ),
            "fusible_check",
        )
        self.assertEqual(
            fork_features.owner_of("packages/fusion_viewer/fusion_viewer/html.py"),
            "viewer",
        )
        self.assertEqual(
            fork_features.owner_of("torch/_inductor/fusion_remarks/hooks.py"),
            "remarks",
        )

    def test_every_hunk_of_every_release_has_an_owner(self) -> None:
        for release in fork.SUPPORTED_RELEASES:
            with self.subTest(release):
                data = fork_features.report(release)
                self.assertEqual(data["unowned_hunks"], [])
                self.assertTrue(data["features"]["remarks"]["hunks"])

    def test_no_layer_uses_a_later_feature(self) -> None:
        """The file a feature's layer leaves (its layer and the earlier ones
        applied) compiles and names nothing of a feature later in the stack:
        each stack stands on the ones before it."""
        import re

        from patch_stack import apply_layers, layers, STACK_ORDER

        markers = {f.name: f.markers for f in fork_features.FEATURES}
        for release in fork.SUPPORTED_RELEASES:
            base = fork_features.REPO / "patches" / release
            for rel, file_layers in layers(base).items():
                pristine = _pristine(release, rel)
                if pristine is None:
                    continue  # that release's torch is not installed here
                states, _ = apply_layers(pristine, file_layers, rel, fork_features.REPO)
                for layer, text in zip(file_layers, states[1:]):
                    with self.subTest(release=release, file=rel, layer=layer.feature):
                        compile(text, rel, "exec")
                        later = STACK_ORDER[STACK_ORDER.index(layer.feature) + 1 :]
                        used = [
                            name
                            for name in later
                            for marker in markers[name]
                            if re.search(marker, text)
                        ]
                        self.assertEqual(used, [])

    def test_a_hunk_using_two_features_is_mixed(self) -> None:
        hunk = fork_features.PatchHunk(
            "torch/_inductor/scheduler.py",
            "@@ -1,2 +1,3 @@",
            [
                "+from .fusion_remarks import hooks as fusion_hooks",
                "+from . import launch_bound_combo",
            ],
        )
        self.assertEqual(hunk.owners(), ["remarks", "launch_bound_combo"])
        self.assertEqual(
            fork_features.PatchHunk("torch/_inductor/ir.py", "@@", ["+x = 1"]).owners(),
            [],
        )

    def test_command_line(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "features.json"
            result = subprocess.run(
                [sys.executable, str(TOOLS / "fork_features.py"), "--json", str(out)],
                capture_output=True,
                text=True,
            )
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("hunks serve several features", result.stdout)
            self.assertEqual(json.loads(out.read_text())["release"], "2.15.0")
        result = subprocess.run(
            [sys.executable, str(TOOLS / "fork_features.py"), "--release", "1.0"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr, "error: no patch series for torch 1.0\n")


if __name__ == "__main__":
    unittest.main()
