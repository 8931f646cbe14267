"""Export the fork as a ``git am`` series (``fork.py export``).

The whole change, new files and patched upstream files, written as one commit
per file against the release's pristine sources, verified with ``git apply
--check`` and ``git am`` on a tree of those sources, with the pull request's
text beside it.  Fork plumbing (:data:`FORK_ONLY`) is never exported.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fork as fork_tool
from patchset import make_patch


EXPORT_ROOTS = ("torch", "test", "benchmarks", "docs")
# Files that only make sense in the fork (its identity); never exported.
FORK_ONLY = frozenset(
    {"torch/_fork.py", "torch/version.py", "test/inductor/test_fork_overlay.py"}
)
# Directories of measured results: evidence for this fork, not upstream code.
FORK_ONLY_DIRS = ("benchmarks/results/",)


def export_series(fork: fork_tool.Fork, out: Path) -> list[Path]:
    """Write the change as a ``git am`` series and verify it applies to pristine sources."""
    out = out.resolve()
    if fork_tool.inside(out, fork.repo) and not fork_tool.inside(
        out, fork.repo / "build"
    ):
        raise fork_tool.ForkError(
            f"{out} is inside the repository; the exported series is an output and is "
            "committed nowhere: write it under build/ or outside the repository"
        )
    _, contents, _ = fork_tool.desired_tree(fork)
    patches: list[tuple[str, str]] = []  # (subject, diff)
    new_by_root: dict[str, list[str]] = {}
    for root in EXPORT_ROOTS:
        base = fork.repo / root
        if base.is_dir():
            for p in sorted(base.rglob("*")):
                rel = p.relative_to(fork.repo).as_posix()
                if (
                    p.is_file()
                    and not fork_tool.ignored(p.relative_to(base))
                    and rel not in FORK_ONLY
                    and not rel.startswith(FORK_ONLY_DIRS)
                ):
                    new_by_root.setdefault(root, []).append(rel)
    for rel in new_by_root.get("torch", []):
        patches.append(
            (
                f"[inductor] Add {rel}",
                _new_file_diff(rel, (fork.repo / rel).read_text(encoding="utf-8")),
            )
        )
    for rel in sorted(contents):
        if rel in FORK_ONLY:
            continue
        diff = make_patch(rel, fork.read_pristine(rel), contents[rel])
        patches.append((f"[inductor] Hook fusion instrumentation into {rel}", diff))
    for root in ("test", "benchmarks", "docs"):
        for rel in new_by_root.get(root, []):
            patches.append(
                (
                    f"[inductor] Add {rel}",
                    _new_file_diff(rel, (fork.repo / rel).read_text(encoding="utf-8")),
                )
            )
    if not patches:
        raise fork_tool.ForkError("nothing to export: no new files and no patches")

    if out.exists():
        for old in out.glob("*.patch"):
            old.unlink()
    out.mkdir(parents=True, exist_ok=True)
    author = "Fusion Fork <fusion-fork@users.noreply.github.com>"
    revision = fork_tool.git_revision(fork.repo)
    written = []
    total = len(patches)
    for i, (subject, diff) in enumerate(patches, 1):
        slug = re.sub(r"[^A-Za-z0-9]+", "-", subject.split("] ", 1)[-1]).strip("-")[:52]
        path = out / f"{i:04d}-{slug}.patch"
        path.write_text(
            f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: {author}\n"
            f"Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
            f"Subject: [PATCH {i}/{total}] {subject}\n\n"
            f"Exported from the fusion fork at revision {revision} by tools/fork.py export.\n"
            f"---\n{diff}\n",
            encoding="utf-8",
        )
        written.append(path)
    verify_series(fork, written, contents)
    (out / "PULL_REQUEST.md").write_text(
        pull_request_text(fork, patches), encoding="utf-8"
    )
    return written


def pull_request_text(fork: fork_tool.Fork, patches: list[tuple[str, str]]) -> str:
    """The pull request's description: the release the series is against and
    its size, counted from the series itself."""
    hooked = [(s, d) for s, d in patches if "Hook fusion instrumentation" in s]
    added = [(s, d) for s, d in patches if s.startswith("[inductor] Add ")]

    def changed_lines(diff: str) -> int:
        return sum(
            1
            for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )

    patch_lines = sum(len(d.splitlines()) for _, d in hooked)
    return (
        f"# [inductor] Fusion remarks: every kernel boundary with its reason\n\n"
        f"Against `v{fork.release}` (`git am` on a checkout of that tag). "
        f"{len(patches)} commits: {len(added)} new files and hooks in "
        f"{len(hooked)} upstream files, whose patches are {patch_lines} lines "
        f"({sum(changed_lines(d) for _, d in hooked)} changed lines).\n\n"
        "Inductor decides at many sites which ops share a kernel; this series "
        "makes every such rule report its decision with a reason code "
        "(`TORCH_LOGS=fusion`, `torch._inductor.fusion_report`), so that each "
        "kernel boundary of a compiled graph is explained. The upstream files "
        "change only by one-line calls into `torch/_inductor/fusion_remarks/` "
        "and a reason code at each `WhyNoFuse` call; nothing changes when the "
        "log is off.\n\n"
        f"Exported from the fusion fork at revision {fork_tool.git_revision(fork.repo)}.\n"
    )


def _new_file_diff(rel: str, text: str) -> str:
    diff = make_patch(rel, "", text)
    if not diff:  # an empty new file
        return f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n"
    head, rest = diff.split("\n", 1)
    rest = rest.replace(f"--- a/{rel}\n", "--- /dev/null\n", 1)
    return f"{head}\nnew file mode 100644\n{rest}"


def verify_series(
    fork: fork_tool.Fork, series: list[Path], contents: dict[str, str]
) -> None:
    """``git apply --check`` then ``git am`` the series on a tree of pristine sources."""
    with tempfile.TemporaryDirectory(prefix="fork-export-") as tmp:
        tree = Path(tmp)
        for rel in contents:
            dst = tree / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fork.pristine_file(rel), dst)
        # Put the rest of the touched packages' pristine modules beside them, so
        # the tree looks like a checkout and new files prove they collide with nothing.
        git = [
            "git",
            "-C",
            str(tree),
            "-c",
            "user.name=fork",
            "-c",
            "user.email=fork@localhost",
            "-c",
            "commit.gpgsign=false",
        ]
        _git([*git, "init", "-q"])
        _git([*git, "add", "-A"])
        _git(
            [
                *git,
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                f"pristine torch {fork.release} sources",
            ]
        )
        for patch in series:
            result = subprocess.run(
                [*git, "apply", "--check", str(patch)], capture_output=True, text=True
            )
            if result.returncode:
                raise fork_tool.ForkError(
                    f"exported {patch.name} does not apply to pristine sources:\n{result.stderr}"
                )
        result = subprocess.run(
            [*git, "am", "-q", *map(str, series)], capture_output=True, text=True
        )
        if result.returncode:
            raise fork_tool.ForkError(
                f"`git am` of the exported series failed:\n{result.stdout}{result.stderr}"
            )
        for rel, text in contents.items():
            if (
                rel not in FORK_ONLY
                and (tree / rel).read_text(encoding="utf-8") != text
            ):
                raise fork_tool.ForkError(
                    f"after `git am`, {rel} differs from the overlay's patched copy"
                )


def _git(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode:
        raise fork_tool.ForkError(f"{' '.join(cmd)} failed:\n{result.stderr}")


def export_command(fork: fork_tool.Fork, out: Path) -> int:
    """``tools/fork.py export``: errors are one line and exit status 2.

    The errors are caught here, not in fork.main: run as a script, fork.py is
    ``__main__`` and its ForkError is not the class this module imports."""
    try:
        series = export_series(fork, out)
    except fork_tool.ForkError as e:
        print(f"tools/fork.py: error: {e}", file=sys.stderr)
        return 2
    print(
        f"wrote {len(series)} patches to {out.resolve()}; "
        "`git apply --check` and `git am` succeeded on a tree of the pristine sources"
    )
    return 0
