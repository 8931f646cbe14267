"""Port the fork's newest patch series to a new torch release (``fork.py port``).

Why this exists: every torch release moves the code our hooks sit in, and the
strict patch engine (no fuzz, on purpose) refuses any hunk whose context
changed.  Rebasing each patch by hand loses the information a merge has: the
old pristine file is the common ancestor of the fork's file and the new
upstream file.  ``port NEW`` therefore does, for each upstream file of
``patches/OLD/<feature>/``, a three-way merge (``git merge-file``) of each
feature's state of the file (ours: that feature's layer and the earlier ones
applied) and NEW's file (theirs) over OLD's file (base), writes each feature's
new layer (the difference between consecutive merged states) when every merge
is clean, leaves every state under ``work/<feature>/<path>`` otherwise, and
says how many hunks would have applied without the merge.  ``port NEW
--resolved`` turns the hand-resolved states into layers.  The names report lists upstream names our
new modules use that NEW no longer defines (a static, approximate check: it
finds renames early, it proves nothing).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.metadata
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fork_overlay
import patch_stack
import patchset


MARKER = re.compile(r"^(?:<{7}|\|{7}|>{7})(?: |$)")
SIDE_LINES = 6  # lines of each side of a conflict shown in the summary
USES_SHOWN = 4  # fork file:line locations shown per lacking name


def release_tag_report(repo: Path, old: str, new: str) -> list[str]:
    """Release tags of the fork that hold on OLD and would switch off on NEW.

    Read from the sources of the fork's files under ``torch/`` and ``test/``:
    a range (``torch/_inductor/fusion_remarks/releases.py``) that ends (``until``)
    after OLD and at or before NEW, which says upstream removed the rule and
    is worth a second look; and a tag that lists releases
    (``releases=("2.14.1",)``), which switches off on every release it does
    not name, the trap ranges replace.  One line each, with file:line.
    """
    lines = []
    for root in ("torch", "test"):
        for path in sorted((repo / root).rglob("*.py")):
            tree = _parse(path)
            if tree is None:
                continue
            where = path.relative_to(repo).as_posix()
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                until = _range_end(node, "until")
                if until and _key(old) < _key(until) <= _key(new):
                    lines.append(
                        f"{where}:{node.lineno}: until {until}: holds on {old}, "
                        f"not on {new}"
                    )
                for keyword in node.keywords:
                    listed = _literal_strings(keyword.value)
                    if keyword.arg == "releases" and listed is not None:
                        if old in listed and new not in listed:
                            lines.append(
                                f"{where}:{node.lineno}: releases={tuple(listed)} "
                                f"names {old} and not {new}: use a range "
                                "(fusion_remarks.releases.since)"
                            )
    return sorted(lines, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def _range_end(call: ast.Call, end: str) -> str | None:
    """The release of ``until("X")`` / ``ReleaseRange(until="X")`` (or since)."""
    name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
    if name == end and call.args and isinstance(call.args[0], ast.Constant):
        return str(call.args[0].value)
    if name == "ReleaseRange":
        for keyword in call.keywords:
            if keyword.arg == end and isinstance(keyword.value, ast.Constant):
                return str(keyword.value.value)
    return None


def _literal_strings(node: ast.AST) -> list[str] | None:
    if isinstance(node, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


# ---------------------------------------------------------------------------
# Locating the two torch packages


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split(".")[:3] if p.isdigit())


def _torch_dir(path: str | Path) -> Path:
    torch_dir = Path(path).resolve()
    return torch_dir if torch_dir.name == "torch" else torch_dir / "torch"


def torch_release(torch_dir: Path) -> str:
    """The full version (``2.15.0+cpu``) of the torch package at ``torch_dir``."""
    version_file = torch_dir / "version.py"
    if not version_file.is_file():
        raise fork_overlay.ForkError(
            f"{torch_dir} is not a torch package (no version.py)"
        )
    match = re.search(
        r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", version_file.read_text(), re.M
    )
    if match is None:
        raise fork_overlay.ForkError(f"{version_file} has no __version__")
    return match.group(1)


def locate_new(new: str, explicit: str | None) -> Path:
    """NEW's pristine torch: ``explicit`` or the torch this Python imports."""
    if explicit:
        torch_dir = _torch_dir(explicit)
    else:
        try:
            dist = importlib.metadata.distribution("torch")
        except importlib.metadata.PackageNotFoundError:
            raise fork_overlay.ForkError(
                f"torch is not installed for {sys.executable}: pass --new-torch "
                f"with the torch {new} package directory"
            ) from None
        torch_dir = Path(str(dist.locate_file("torch"))).resolve()
    found = torch_release(torch_dir)
    if found.split("+")[0] != new:
        raise fork_overlay.ForkError(
            f"{torch_dir} is torch {found}, not {new}: pass --new-torch with "
            f"a torch {new} package (e.g. .venv-{new}/lib/python3.*/site-packages/torch)"
        )
    return torch_dir


def default_old(new: str) -> str:
    older = [r for r in fork_overlay.SUPPORTED_RELEASES if _key(r) < _key(new)]
    if not older:
        raise fork_overlay.ForkError(
            f"no supported release ({', '.join(fork_overlay.SUPPORTED_RELEASES)}) is older "
            f"than {new}; name the series to port with --from"
        )
    return max(older, key=_key)


def locate_old(repo: Path, old: str, explicit: str | None) -> Path:
    """OLD's pristine torch: ``explicit`` or the project's virtualenv of OLD."""
    if explicit:
        torch_dir = _torch_dir(explicit)
    else:
        venv = repo / (
            ".venv" if old == fork_overlay.DEFAULT_RELEASE else f".venv-{old}"
        )
        found = sorted(venv.glob("lib/python*/site-packages/torch"))
        if not found:
            raise fork_overlay.ForkError(
                f"no torch {old} to port from: {venv} has no "
                f"lib/python*/site-packages/torch; set it up with "
                f"`TORCH={old} make develop` or pass --old-torch"
            )
        torch_dir = found[-1].resolve()
    version = torch_release(torch_dir)
    if version.split("+")[0] != old:
        raise fork_overlay.ForkError(f"{torch_dir} is torch {version}, not {old}")
    return torch_dir


# ---------------------------------------------------------------------------
# Hunks and merges


def measure_hunks(text: str, patch_text: str, name: str) -> list[str]:
    """How each hunk of ``patch_text`` applies to ``text`` with the strict engine:
    "exact", "offset" or "fail", one per hunk (a failing hunk does not stop
    the later ones, unlike ``apply_patch``)."""
    src = text.splitlines(keepends=True)
    pos = 0
    out = []
    for hunk in patchset.parse_patch(patch_text, name):
        want = hunk.old_start - 1 if hunk.old_lines else hunk.old_start
        found = patchset._find(src, hunk.old_lines, want, pos)
        if found is None:
            out.append("fail")
            continue
        out.append("exact" if found == want else "offset")
        pos = found + len(hunk.old_lines)
    return out


@dataclasses.dataclass
class Conflict:
    line: int  # of the ``<<<<<<<`` marker in the merged file, 1-based
    fork: list[str]
    base: list[str]
    new: list[str]


@dataclasses.dataclass
class FileResult:
    file: str
    status: (
        str  # "clean", "upstream" (already contains the change), "conflict", "removed"
    )
    hunks: list[str]
    patch: str | None = None
    work: str | None = None
    conflicts: list[Conflict] = dataclasses.field(default_factory=list)


def merge_file(
    ours: str, base: str, theirs: str, old: str, new: str
) -> tuple[str, int]:
    """``git merge-file -p --diff3``: the merged text and the number of conflicts."""
    with tempfile.TemporaryDirectory(prefix="fork-port-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(text.encode("utf-8"))
            paths.append(str(path))
        labels = ["-L", f"fork-{old}", "-L", old, "-L", new]
        try:
            result = subprocess.run(
                ["git", "merge-file", "-p", "--diff3", *labels, *paths],
                capture_output=True,
            )
        except OSError as e:
            raise fork_overlay.ForkError(f"cannot run git merge-file: {e}") from None
    if result.returncode < 0 or result.returncode > 127:
        err = result.stderr.decode(errors="replace").strip().replace("\n", "; ")
        raise fork_overlay.ForkError(
            f"git merge-file failed ({result.returncode}): {err}"
        )
    return result.stdout.decode("utf-8"), result.returncode


def parse_conflicts(merged: str, old: str, new: str) -> list[Conflict]:
    """The conflict blocks of a ``--diff3`` merge labelled as ``merge_file`` does."""
    start, mid, end = f"<<<<<<< fork-{old}", f"||||||| {old}", f">>>>>>> {new}"
    conflicts: list[Conflict] = []
    side: list[str] | None = None
    for number, raw in enumerate(merged.splitlines(), 1):
        line = raw.rstrip("\r")
        if side is None:
            if line == start:
                conflicts.append(Conflict(number, [], [], []))
                side = conflicts[-1].fork
            continue
        current = conflicts[-1]
        if line == mid and side is current.fork:
            side = current.base
        elif line == "=======" and side is current.base:
            side = current.new
        elif line == end and side is current.new:
            side = None
        else:
            side.append(raw)
    return conflicts


def port_layers(
    rel: str,
    file_layers: list[patch_stack.Layer],
    old_dir: Path,
    new_dir: Path,
    ctx: PortContext,
) -> list[FileResult]:
    """Port one upstream file's feature layers.  Each feature's state of the
    file (its layer and the earlier ones applied) is merged with NEW on its
    own, so that the layers of NEW are the differences between consecutive
    merged states: the stacks keep their shape.  When any state conflicts,
    every state goes under ``work/<feature>/<rel>`` for ``--resolved``."""
    base_path, new_path = old_dir.parent / rel, new_dir.parent / rel
    if not base_path.is_file():
        raise fork_overlay.ForkError(
            f"{rel}: torch {ctx.old} at {old_dir} has no such file"
        )
    base = base_path.read_text(encoding="utf-8")
    texts = [layer.path.read_text(encoding="utf-8") for layer in file_layers]
    names = [f"patches/{ctx.old}/{layer.feature}/{rel}.patch" for layer in file_layers]
    if not new_path.is_file():
        return [
            FileResult(
                f"{layer.feature}/{rel}",
                "removed",
                ["fail"] * len(patchset.parse_patch(text, name)),
            )
            for layer, text, name in zip(file_layers, texts, names)
        ]
    try:
        states, _ = patch_stack.apply_layers(
            base, file_layers, str(base_path), ctx.repo
        )
    except patchset.PatchError as e:
        raise fork_overlay.ForkError(str(e).splitlines()[0]) from None
    theirs = new_path.read_text(encoding="utf-8")
    merged_states, results = [theirs], []
    for layer, text, name, ours in zip(file_layers, texts, names, states[1:]):
        hunks = measure_hunks(merged_states[-1], text, name)
        merged, _ = merge_file(ours, base, theirs, ctx.old, ctx.new)
        conflicts = parse_conflicts(merged, ctx.old, ctx.new)
        merged_states.append(merged)
        results.append(
            FileResult(
                f"{layer.feature}/{rel}",
                "conflict" if conflicts else "clean",
                hunks,
                conflicts=conflicts,
            )
        )
    for layer in file_layers:  # an earlier port's patches for this file
        stale = ctx.out / layer.feature / f"{rel}.patch"
        if stale.is_file():
            stale.unlink()
    if any(r.status == "conflict" for r in results):
        for layer, merged, result in zip(file_layers, merged_states[1:], results):
            work = ctx.work / layer.feature / rel
            work.parent.mkdir(parents=True, exist_ok=True)
            if work.is_file() and work.read_bytes() != merged.encode("utf-8"):
                # a resolution in progress: the fresh merge goes beside it
                work = work.with_name(work.name + ".merged")
            work.write_bytes(merged.encode("utf-8"))
            result.work = str(work)
        return results
    for layer, before, after, result in zip(
        file_layers, merged_states, merged_states[1:], results
    ):
        if before == after:
            result.status = "upstream"
        else:
            result.patch = str(write_patch(rel, before, after, ctx.out / layer.feature))
    return results


def write_patch(rel: str, theirs: str, text: str, out: Path) -> Path:
    """Write ``out/<rel>.patch`` from NEW's file to ``text``; check it applies."""
    diff = patchset.make_patch(rel, theirs, text)
    if patchset.apply_patch(theirs, diff, rel, rel).text != text:  # pragma: no cover
        raise fork_overlay.ForkError(
            f"{rel}: the new patch does not reproduce the file"
        )
    path = out / f"{rel}.patch"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(diff, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# Names report


def _targets(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, ast.Name):
        names.add(node.id)
    elif isinstance(node, ast.Attribute):
        names.add(node.attr)
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            _targets(elt, names)
    elif isinstance(node, ast.Starred):
        _targets(node.value, names)


def defined_names(tree: ast.AST, imports: bool = True) -> set[str]:
    """Identifiers a module defines anywhere: defs, classes, assignment targets
    (``self.x`` included), loop/with/walrus targets, globals and (unless
    ``imports`` is false) import aliases."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                _targets(target, names)
        elif isinstance(
            node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)
        ):
            _targets(node.target, names)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _targets(node.optional_vars, names)
        elif imports and isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Global):
            names.update(node.names)
    return names


def _parse(path: Path) -> ast.AST | None:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return None


def module_file(torch_dir: Path, module: str) -> Path | None:
    """The source (``.py``, else a ``.pyi`` stub) of ``torch.a.b`` in a torch package."""
    base = torch_dir.joinpath(*module.split(".")[1:])
    for candidate in (
        base.parent / f"{base.name}.py",
        base / "__init__.py",
        base.parent / f"{base.name}.pyi",
        base / "__init__.pyi",
    ):
        if candidate.is_file():
            return candidate
    return None


def module_exists(torch_dir: Path, module: str) -> bool:
    base = torch_dir.joinpath(*module.split(".")[1:])
    return (
        module_file(torch_dir, module) is not None
        or base.is_dir()
        or any(base.parent.glob(f"{base.name}.*.so"))
    )


@dataclasses.dataclass
class ForkUses:
    names: dict[str, list[str]]  # upstream name -> "torch/x.py:12" uses
    modules: dict[str, list[str]]  # imported upstream module -> uses
    defined: set[str]  # names the fork's own modules define (module names included)


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def fork_uses(repo: Path) -> ForkUses:
    """What the fork's new modules (``torch/**/*.py`` of the repository) use."""
    files = sorted((repo / "torch").rglob("*.py")) if (repo / "torch").is_dir() else []
    own: dict[str, Path] = {}
    for path in files:
        parts = path.relative_to(repo).with_suffix("").parts
        own[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    uses = ForkUses({}, {}, {m.rsplit(".", 1)[-1] for m in own})
    for module, path in own.items():
        tree = _parse(path)
        if tree is None:
            continue
        rel = path.relative_to(repo).as_posix()
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        # an upstream name the fork imports is no name of its own
        uses.defined |= defined_names(tree, imports=False)
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")[
                        : len(package.split(".")) - node.level + 1
                    ]
                    target = ".".join(parts + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not _is_torch(target) or target in own:
                    continue
                uses.modules.setdefault(target, []).append(where)
                for alias in node.names:
                    if alias.name != "*" and f"{target}.{alias.name}" not in own:
                        uses.names.setdefault(alias.name, []).append(where)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if _is_torch(alias.name) and alias.name not in own:
                        uses.modules.setdefault(alias.name, []).append(where)
            elif isinstance(node, ast.Attribute):
                uses.names.setdefault(node.attr, []).append(where)
    return uses


def release_names(torch_dir: Path, modules: list[str]) -> set[str]:
    """Def(R): names defined in R's torch/_inductor/** and the given modules,
    with the names of their modules and of imported packages' children."""
    files = set((torch_dir / "_inductor").rglob("*.py"))
    names: set[str] = set()
    for module in modules:
        path = module_file(torch_dir, module)
        if path is None:
            continue
        files.add(path)
        if path.stem == "__init__":
            names.update(p.name.split(".")[0] for p in path.parent.iterdir())
    for path in files:
        names.add(path.parent.name if path.stem == "__init__" else path.stem)
        tree = _parse(path)
        if tree is not None:
            names |= defined_names(tree)
    return names


def _locations(where: list[str]) -> list[str]:
    """``file:line`` uses, each once, in file and line order."""
    return sorted(
        set(where), key=lambda w: (w.rpartition(":")[0], int(w.rpartition(":")[2]))
    )


def names_report(repo: Path, old_dir: Path, new_dir: Path) -> dict:
    uses = fork_uses(repo)
    modules = sorted(uses.modules)
    def_old = release_names(old_dir, modules)
    def_new = release_names(new_dir, modules)
    lacking = {
        name: _locations(where)
        for name, where in sorted(uses.names.items())
        if name in def_old and name not in def_new and name not in uses.defined
    }
    missing = {
        m: _locations(uses.modules[m])
        for m in modules
        if module_exists(old_dir, m) and not module_exists(new_dir, m)
    }
    unverifiable = [
        m
        for m in modules
        if not module_exists(old_dir, m) and not module_exists(new_dir, m)
    ]
    return {"names": lacking, "modules": missing, "unverifiable_modules": unverifiable}


# ---------------------------------------------------------------------------
# The command


@dataclasses.dataclass
class PortContext:
    repo: Path
    old: str
    new: str
    out: Path
    work: Path


def _short(lines: list[str]) -> list[str]:
    shown = [
        line if len(line) <= 100 else line[:97] + "..." for line in lines[:SIDE_LINES]
    ]
    if len(lines) > SIDE_LINES:
        shown.append(f"... ({len(lines) - SIDE_LINES} more lines)")
    return shown or ["(nothing)"]


def _count(hunks: list[str]) -> dict[str, int]:
    return {kind: hunks.count(kind) for kind in ("exact", "offset", "fail")}


def summary(
    ctx: PortContext, results: list[FileResult], names: dict, tags: list[str]
) -> list[str]:
    by = {
        s: [r for r in results if r.status == s]
        for s in ("clean", "upstream", "conflict", "removed")
    }
    total = _count([h for r in results for h in r.hunks])
    lines = [
        f"before merging, the {ctx.old} series on {ctx.new}: {total['exact']} hunks exact, "
        f"{total['offset']} at an offset, {total['fail']} failing"
    ]
    for r in results:
        c = _count(r.hunks)
        lines.append(
            f"  {r.file}: {c['exact']} exact, {c['offset']} offset, {c['fail']} fail"
        )
    lines.append(
        f"merge: {len(by['clean'])} files clean (patches in {ctx.out}), "
        f"{len(by['conflict'])} conflicting (merged text with markers in {ctx.work}), "
        f"{len(by['upstream'])} already upstream, {len(by['removed'])} removed upstream"
    )
    lines += [f"already upstream (no patch written): {r.file}" for r in by["upstream"]]
    lines += [
        f"REMOVED UPSTREAM {r.file}: {ctx.new} has no such file; move its hooks by hand"
        for r in by["removed"]
    ]
    for r in by["conflict"]:
        for i, c in enumerate(r.conflicts, 1):
            lines.append(
                f"CONFLICT {r.work}:{c.line} ({i} of {len(r.conflicts)} in {r.file})"
            )
            for label, side in (
                (f"fork-{ctx.old}", c.fork),
                (ctx.old, c.base),
                (ctx.new, c.new),
            ):
                lines.extend(f"  {label:>12} | {text}" for text in _short(side))
    lacking = names["names"]
    lines.append(
        f"upstream names the fork's modules use that {ctx.new} lacks: {len(lacking)}"
    )
    for name, where in lacking.items():
        more = f" (+{len(where) - USES_SHOWN} more)" if len(where) > USES_SHOWN else ""
        lines.append(f"  {name}: {', '.join(where[:USES_SHOWN])}{more}")
    for module, where in names["modules"].items():
        lines.append(
            f"  module {module} (imported at {', '.join(where[:USES_SHOWN])}) is gone in {ctx.new}"
        )
    if tags:
        lines.append(f"release tags that would switch off on {ctx.new}:")
        lines.extend(f"  {t}" for t in tags)
    return lines


def port(ctx: PortContext, old_dir: Path, new_dir: Path) -> int:
    started = time.perf_counter()
    series = ctx.repo / "patches" / ctx.old
    try:
        layered = patch_stack.layers(series)
    except patchset.PatchError as e:
        raise fork_overlay.ForkError(str(e)) from None
    if not layered:
        raise fork_overlay.ForkError(
            f"no patch series to port: {series} has no patches"
        )
    results = []
    for rel, file_layers in layered.items():
        results.extend(port_layers(rel, file_layers, old_dir, new_dir, ctx))
    names = names_report(ctx.repo, old_dir, new_dir)
    tags = release_tag_report(ctx.repo, ctx.old, ctx.new)
    seconds = time.perf_counter() - started
    print(
        f"port patches/{ctx.old} (torch at {old_dir}) to torch {ctx.new} at {new_dir}"
    )
    for line in summary(ctx, results, names, tags):
        print(line)
    ctx.work.mkdir(parents=True, exist_ok=True)
    report = {
        "old": ctx.old,
        "new": ctx.new,
        "old_torch": str(old_dir),
        "new_torch": str(new_dir),
        "out": str(ctx.out),
        "work": str(ctx.work),
        "hunks": _count([h for r in results for h in r.hunks]),
        "files": [
            {**dataclasses.asdict(r), "hunk_counts": _count(r.hunks)} for r in results
        ],
        **names,
        "release_tags": tags,
        "seconds": round(seconds, 2),
    }
    (ctx.work / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"full report: {ctx.work / 'report.json'} ({seconds:.1f} s)")
    return 0 if all(r.status in ("clean", "upstream") for r in results) else 1


def has_markers(text: str, pristine: str) -> bool:
    """Conflict markers left in ``text`` (a bare ``=======`` counts unless NEW has one)."""
    upstream = set(pristine.splitlines())
    return any(
        MARKER.match(line) or (line == "=======" and line not in upstream)
        for line in text.splitlines()
    )


def resolved(ctx: PortContext, new_dir: Path) -> int:
    """Write the layers of every file whose states were resolved by hand under
    ``ctx.work/<feature>/<rel>`` (each state: that feature and the earlier
    ones applied to NEW)."""
    files = [p for p in sorted(ctx.work.rglob("*")) if p.is_file()]
    files = [
        p for p in files if p != ctx.work / "report.json" and p.suffix != ".merged"
    ]
    if not files:
        raise fork_overlay.ForkError(
            f"no merged files under {ctx.work}; run `tools/fork.py port {ctx.new}` first"
        )
    states: dict[str, dict[str, Path]] = {}
    for path in files:
        feature, _, rel = path.relative_to(ctx.work).as_posix().partition("/")
        if feature not in patch_stack.STACK_ORDER or not rel:
            print(f"refused {path}: expected {ctx.work}/<feature>/<upstream path>")
            return 1
        states.setdefault(rel, {})[feature] = path
    status = 0
    for rel, by_feature in sorted(states.items()):
        pristine_path = new_dir.parent / rel
        if not pristine_path.is_file():
            print(f"refused {rel}: torch {ctx.new} has no {rel}")
            status = 1
            continue
        before = pristine_path.read_text(encoding="utf-8")
        texts = {f: p.read_text(encoding="utf-8") for f, p in by_feature.items()}
        unresolved = [p for f, p in by_feature.items() if has_markers(texts[f], before)]
        if unresolved:
            for path in unresolved:
                print(
                    f"refused {path}: it still has conflict markers; resolve them first"
                )
            status = 1
            continue
        for feature in patch_stack.STACK_ORDER:
            if feature not in texts:
                continue
            if texts[feature] == before:
                print(
                    f"{feature}/{rel} changes nothing on upstream {ctx.new}: no patch needed"
                )
            else:
                path = write_patch(rel, before, texts[feature], ctx.out / feature)
                print(f"wrote {path}")
            before = texts[feature]
    return status


def port_command(args: argparse.Namespace, repo: Path) -> int:
    """``tools/fork.py port``: errors are one line and exit status 2.

    The errors are caught here, not in fork.main: run as a script, fork.py is
    ``__main__`` and its ForkError is not the class this module imports."""
    try:
        new = args.new
        if not re.fullmatch(r"\d+\.\d+\.\d+", new):
            raise fork_overlay.ForkError(f"{new!r} is not a torch release like 2.15.0")
        new_dir = locate_new(new, args.new_torch or args.pristine)
        old = args.old or default_old(new)
        if _key(old) >= _key(new):
            raise fork_overlay.ForkError(f"--from {old} is not older than {new}")
        out = Path(args.out).resolve() if args.out else repo / "patches" / new
        work = (
            Path(args.work).resolve() if args.work else repo / "build" / f"port-{new}"
        )
        ctx = PortContext(repo, old, new, out, work)
        if args.resolved:
            return resolved(ctx, new_dir)
        return port(ctx, locate_old(repo, old, args.old_torch), new_dir)
    except fork_overlay.ForkError as e:
        print(f"tools/fork.py: error: {e}", file=sys.stderr)
        return 2
