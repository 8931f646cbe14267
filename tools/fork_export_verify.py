"""Verify exported stacks as a reviewer takes them (``fork.py export``).

A stack is verified on a tree made from the pristine installed release plus
only the stacks it needs, never through the fork's overlay:

* ``git am`` of the needed stacks, then of the stack one commit at a time;
* at every commit of the stack, one fresh interpreter imports
  ``torch._inductor.scheduler``, every upstream module the tree patches and
  every module of the stack present so far, from that tree (an import root of
  links: the tree's files over the pristine package);
* after the stack's last commit, every file the tree holds equals its state
  in the fork's layers, and the stack's own tests run against that tree.

:func:`stack_needs` works out what a stack needs from the stack itself: the
stacks whose layers of an upstream file its hunks were made on, and the
stacks owning a module its files import.  A stack that needs fork plumbing,
which is never exported, is an error.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path


class VerifyError(Exception):
    """One line: which stack and commit failed, and why."""


GIT_IDENTITY = [
    "-c",
    "user.name=fork",
    "-c",
    "user.email=fork@localhost",
    "-c",
    "commit.gpgsign=false",
]


def module_name(rel: str) -> str:
    """``torch/_inductor/fusion_remarks/__init__.py`` -> ``torch._inductor.fusion_remarks``."""
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


_IMPORT_LINE = re.compile(r"^\+\s*(?:from\s+(\S+)\s+import\s+(.+)|import\s+(.+))$")


def imported_by_diff(diff: str, upstream: str) -> set[str]:
    """Dotted modules the added lines of ``diff`` (of ``upstream``) import, with
    relative imports resolved against ``upstream``'s package; for ``from X
    import a, b`` both ``X`` and ``X.a``, ``X.b`` (a name may be a module)."""
    package = module_name(upstream).rsplit(".", 1)[0]
    found: set[str] = set()
    for line in diff.splitlines():
        match = _IMPORT_LINE.match(line)
        if not match:
            continue
        source, names, plain = match.groups()
        if plain is not None:
            found.update(n.split(" as ")[0].strip() for n in plain.split(","))
            continue
        dots = len(source) - len(source.lstrip("."))
        if dots:
            base = package.split(".")
            base = base[: len(base) - dots + 1] if dots > 1 else base
            source = ".".join(
                base + ([source.lstrip(".")] if source.strip(".") else [])
            )
        found.add(source)
        for name in names.strip("()").split(","):
            name = name.split(" as ")[0].strip()
            if name and name != "*":
                found.add(f"{source}.{name}")
    return found


def stack_needs(
    order: list[str],
    owned: Mapping[str, list[str]],
    hooks: Mapping[str, list[tuple[str, str]]],
    graph: Mapping[str, set[str]],
    owner_of,
    never_exported: Iterable[str],
) -> dict[str, tuple[str, ...]]:
    """Each exported feature's needs, in stack order, closed under needing.

    ``order`` is the features in stack order, ``owned`` each feature's new
    files, ``hooks`` each feature's (upstream path, diff) layers, ``graph``
    the repository's import graph (path -> paths it imports).  A feature needs
    every earlier feature with a layer of a file it hooks (its diff was made
    on top of that layer) and the owner of every repository file one of its
    files or added hook lines imports.  Raises :class:`VerifyError` when one
    of those owners is never exported."""
    never = set(never_exported)
    modules = {
        module_name(p): p
        for files in owned.values()
        for p in files
        if p.endswith(".py")
    }
    needs: dict[str, set[str]] = {}
    for i, feature in enumerate(order):
        want: set[str] = set()
        hooked = {rel for rel, _ in hooks.get(feature, [])}
        for earlier in order[:i]:
            if hooked & {rel for rel, _ in hooks.get(earlier, [])}:
                want.add(earlier)
        imported: list[tuple[str, str]] = []
        for path in owned.get(feature, []):
            imported += [(path, target) for target in graph.get(path, set())]
        for rel, diff in hooks.get(feature, []):
            imported += [
                (rel, modules[m]) for m in imported_by_diff(diff, rel) if m in modules
            ]
        for source, target in imported:
            owner = owner_of(target)
            if owner is None or owner == feature:
                continue
            if owner not in never and owner not in order:
                # a package of the fork installed beside torch (the viewer,
                # the FX arm), not a stack: no tree of a stack holds it
                continue
            if owner in never:
                raise VerifyError(
                    f"stack {feature}: {source} imports {target}, which is fork "
                    f"plumbing ({owner}) and never exported"
                )
            if owner not in order or order.index(owner) > i:
                raise VerifyError(
                    f"stack {feature}: {source} imports {target} of {owner}, "
                    "which is not a stack before it"
                )
            want.add(owner)
        for need in list(want):
            want |= needs.get(need, set())
        needs[feature] = want
    return {f: tuple(n for n in order if n in needs[f]) for f in order}


def make_import_root(tree: Path, pristine_site: Path, root: Path) -> None:
    """``root/torch``: the pristine package with the tree's files over it
    (links both ways; directories holding none of the tree's files linked
    whole)."""
    if root.exists():
        shutil.rmtree(root)
    files = [
        p.relative_to(tree).as_posix()
        for p in (tree / "torch").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    touched = {"torch"}
    for rel in files:
        parts = rel.split("/")[:-1]
        touched.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    for d in sorted(touched):
        (root / d).mkdir(parents=True, exist_ok=True)
        pristine_dir = pristine_site / d
        if pristine_dir.is_dir():
            for name in os.listdir(pristine_dir):
                rel = f"{d}/{name}"
                if rel in touched or name == "__pycache__":
                    continue
                (root / rel).symlink_to(pristine_dir / name)
    for rel in files:
        link = root / rel
        if link.is_symlink():
            link.unlink()
        link.symlink_to(tree / rel)


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(root), env.get("PYTHONPATH")])
    )
    # the virtualenv's .pth would put the fork's overlay first: keep it off
    env["FUSION_FORK_DISABLE"] = "1"
    env.pop("FUSION_FORK_OVERLAY", None)
    return env


def check_imports(tree: Path, root: Path, modules: list[str]) -> str | None:
    """Import ``modules`` from ``root`` in a fresh interpreter; the last line
    of the error, or None."""
    probe = f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)\n"
    result = subprocess.run(
        # -P: the tree's partial torch/ (cwd) never shadows the import root's
        [sys.executable, "-P", "-c", probe],
        cwd=tree,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode == 0:
        return None
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit status {result.returncode}"


def run_tests(tree: Path, root: Path, tests: list[str]) -> str | None:
    """The stack's tests against the tree (in two processes where
    pytest-xdist is installed); on a failure, pytest's summary line and the
    first failing tests, or None."""
    import importlib.util

    workers = ["-n", "2"] if importlib.util.find_spec("xdist") else []
    result = subprocess.run(
        [
            sys.executable,
            "-P",  # as above: the import root's torch, not the cwd's partial one
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *workers,
            *tests,
        ],
        cwd=tree,
        env=_env(root),
        capture_output=True,
        text=True,
    )
    if result.returncode == 0:
        return None
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    failed = [
        line.split(" - ")[0] for line in lines if line.startswith(("FAILED", "ERROR"))
    ]
    summary = lines[-1].strip("= ") if lines else f"exit status {result.returncode}"
    shown = "; ".join(failed[:FAILURES_SHOWN])
    more = (
        f" and {len(failed) - FAILURES_SHOWN} more"
        if len(failed) > FAILURES_SHOWN
        else ""
    )
    return f"{summary}: {shown}{more}" if failed else summary


FAILURES_SHOWN = 8


def git(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(tree), *GIT_IDENTITY, *args], capture_output=True, text=True
    )
