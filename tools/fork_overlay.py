"""The fusion fork's overlay: locate, build, check, edit and refresh (the
library under ``tools/fork.py``, its command line).

The fork is a patch set over an installed torch wheel of one of the supported
releases (``SUPPORTED_RELEASES``; see ``DESIGN.md`` section 2 and README.md).
The release is worked out from the installed torch: its patches are
``patches/<release>/<feature>/<upstream path>.patch``, one stack per feature
applied in feature order (``tools/patch_stack.py``), its overlay
``build/overlay-<release>``; the new files under ``torch/`` are shared.
``build`` assembles an *overlay*: a directory that shadows the installed
``torch`` package when it comes first on ``sys.path``.  In it

* every directory that holds nothing of ours is one symlink to the installed
  directory (``lib/``, ``include/``, and most of the Python tree),
* every unmodified upstream file in a directory we touch is a symlink to the
  installed file,
* every patched upstream file is a real copy with its features' patches
  ``patches/<release>/<feature>/<path>.patch`` applied in feature order
  (strictly, no fuzz), and
* every new file of ours (``torch/**`` in this repository) is a symlink into
  the repository, so edits to it are live without rebuilding.

``.fork/manifest.json`` in the overlay records what was written, so that an
edit made in the overlay is never overwritten by a later build.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
from patch_stack import apply_layers, Layer, layer_path, layers, relayer, STACK_ORDER
from patchset import make_patch, PatchError


REPO = Path(__file__).resolve().parent.parent
# Releases the fork has a patch series for, the default (current) one first.
SUPPORTED_RELEASES = ("2.15.0", "2.14.1")
DEFAULT_RELEASE = SUPPORTED_RELEASES[0]
MANIFEST = Path(".fork") / "manifest.json"
# Directories of ours that exist upstream at the same paths and go into an
# upstream pull request.  tools/ is the fork's own tooling and stays here.
IGNORED_NAMES = frozenset({"__pycache__", ".pytest_cache", ".ruff_cache"})


def install_hint() -> str:
    """How to get a virtualenv with a supported torch, one line per release."""
    lines = []
    for release in SUPPORTED_RELEASES:
        make = (
            "make develop"
            if release == DEFAULT_RELEASE
            else f"TORCH={release} make develop"
        )
        lines.append(
            f"    torch {release}: `{make}` (or python -m pip install -r "
            f"requirements/torch-{release}.txt)"
        )
    return "\n".join(lines)


class ForkError(Exception):
    """A problem the user must fix; printed without a traceback."""


# ---------------------------------------------------------------------------
# Locations


@dataclasses.dataclass
class Fork:
    repo: Path
    pristine: Path  # the installed upstream ``torch`` package directory
    overlay: Path  # the directory to put first on sys.path
    release: str  # the installed torch's release, one of SUPPORTED_RELEASES

    @property
    def patches_dir(self) -> Path:
        return self.repo / "patches" / self.release

    @property
    def manifest_path(self) -> Path:
        return self.overlay / MANIFEST

    def patched_files(self) -> dict[str, list[Layer]]:
        """Upstream path -> its features' patches in stack order."""
        try:
            return layers(self.patches_dir)
        except PatchError as e:
            raise ForkError(str(e)) from None

    def patch_count(self) -> int:
        return sum(len(file_layers) for file_layers in self.patched_files().values())

    def new_files(self) -> list[str]:
        """Our new files under ``torch/``, as upstream paths."""
        root = self.repo / "torch"
        if not root.is_dir():
            return []
        return sorted(
            p.relative_to(self.repo).as_posix()
            for p in root.rglob("*")
            if p.is_file() and not ignored(p.relative_to(root))
        )

    def pristine_file(self, rel: str) -> Path:
        return self.pristine.parent / rel

    def read_pristine(self, rel: str) -> str:
        path = self.pristine_file(rel)
        if not path.is_file():
            raise ForkError(
                f"{rel}: there is no such file in the installed torch ({self.pristine}); "
                "a patch can only modify an existing upstream file"
            )
        return path.read_text(encoding="utf-8")


def ignored(rel: Path) -> bool:
    return any(part in IGNORED_NAMES for part in rel.parts) or rel.suffix == ".pyc"


def locate_pristine_torch(explicit: str | None) -> tuple[Path, str]:
    """The installed upstream torch package directory and its release, checked
    against SUPPORTED_RELEASES."""
    if explicit:
        torch_dir = Path(explicit).resolve()
        if torch_dir.name != "torch":
            torch_dir = torch_dir / "torch"
    else:
        try:
            dist = importlib.metadata.distribution("torch")
        except importlib.metadata.PackageNotFoundError:
            raise ForkError(
                f"torch is not installed for {sys.executable}.\n"
                f"  The fork is a patch set over torch "
                f"{' or '.join(SUPPORTED_RELEASES)}; install one with:\n{install_hint()}"
            ) from None
        torch_dir = Path(str(dist.locate_file("torch"))).resolve()
    version_file = torch_dir / "version.py"
    if not version_file.is_file():
        raise ForkError(
            f"{torch_dir} is not a torch package (no version.py).\n"
            f"  Install a supported torch with:\n{install_hint()}"
        )
    match = re.search(
        r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", version_file.read_text(), re.M
    )
    found = match.group(1) if match else "an unknown version"
    release = found.split("+")[0]
    if release not in SUPPORTED_RELEASES:
        raise ForkError(
            f"found torch {found} at {torch_dir}, but the fork's patches are made for "
            f"torch {' and '.join(SUPPORTED_RELEASES)} only.\n"
            f"  Fix: install a supported release:\n{install_hint()}\n"
            "  Supporting another release is a deliberate step (rebase every patch "
            "into patches/<release>/), done in an issue of its own."
        )
    return torch_dir, release


# ---------------------------------------------------------------------------
# Identity


def git_revision(repo: Path) -> str:
    """``<sha>`` or ``<sha>-dirty`` of the fork's repository.

    ``FORK_REVISION`` overrides it: the GPU machine's copy of the tree has a
    .git without its refs.  A .git owned by another user is accepted
    (``safe.directory``), and without git the refs are read by hand.
    """
    if os.environ.get("FORK_REVISION"):
        return os.environ["FORK_REVISION"]  # set by hand where .git is unusable
    git = ["git", "-c", f"safe.directory={repo}", "-C", str(repo)]
    try:
        sha = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return sha[:12] + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    return _read_git_head(repo / ".git") or "unknown"


def _read_git_head(git_dir: Path) -> str | None:
    """The commit .git/HEAD points to, from loose or packed refs."""
    try:
        head = (git_dir / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[len("ref: ") :]
        loose = git_dir / ref
        if loose.is_file():
            return loose.read_text().strip()[:12]
        for line in (git_dir / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:12]
    except OSError:
        return None
    return None


def source_digest(fork: Fork) -> str:
    """A hash of everything the fork adds: the patches and the new files."""
    h = hashlib.sha256()
    for rel, file_layers in fork.patched_files().items():
        for layer in file_layers:
            h.update(f"patch {layer.feature} {rel}\0".encode())
            h.update(layer.path.read_bytes())
    for rel in fork.new_files():
        h.update(f"new {rel}\0".encode())
        h.update((fork.repo / rel).read_bytes())
    return h.hexdigest()[:12]


# ---------------------------------------------------------------------------
# Build


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_manifest(fork: Fork) -> dict:
    try:
        return json.loads(fork.manifest_path.read_text())
    except FileNotFoundError:
        return {"patched": {}}
    except json.JSONDecodeError as e:
        raise ForkError(
            f"{fork.manifest_path} is corrupt ({e}); delete the overlay and rebuild"
        ) from None


def unrefreshed_edits(fork: Fork, manifest: dict) -> list[str]:
    """Overlay files that differ from what the last build or refresh wrote."""
    edited = []
    for rel, digest in sorted(manifest.get("patched", {}).items()):
        path = fork.overlay / rel
        if path.is_symlink() or not path.exists():
            continue  # replaced or removed by hand: nothing of the user's to lose
        if _sha(path.read_bytes()) != digest:
            edited.append(rel)
    return edited


def _stray_copies(
    fork: Fork, desired: dict[str, tuple[str, object]], manifest: dict
) -> list[str]:
    """Regular files in the overlay that no build wrote (an edited symlink target copy)."""
    known = set(manifest.get("patched", {}))
    stray = []
    for rel, (kind, _) in desired.items():
        path = fork.overlay / rel
        if (
            kind == "link"
            and not path.is_symlink()
            and path.is_file()
            and rel not in known
            and inside(path, fork.overlay)  # not seen through a linked directory
        ):
            stray.append(rel)
    return stray


def desired_tree(
    fork: Fork,
) -> tuple[dict[str, tuple[str, object]], dict[str, str], dict[str, dict[int, int]]]:
    """What the overlay must hold.

    Returns (entries, patched contents, hunk offsets).  ``entries`` maps an
    overlay-relative path to ("dir", None) | ("link", target) | ("patched", None).
    """
    patched = fork.patched_files()
    new = fork.new_files()
    for rel in new:
        if fork.pristine_file(rel).exists() or os.path.lexists(fork.pristine_file(rel)):
            raise ForkError(
                f"torch/{rel[len('torch/') :]} is a new file in the repository but the installed "
                f"torch already has {rel}.\n  To modify an upstream file, make it a patch: "
                f"`tools/fork.py edit {rel}`, edit {fork.overlay / rel}, then `tools/fork.py refresh`."
            )
    contents: dict[str, str] = {}
    offsets: dict[str, dict[int, int]] = {}
    for rel, file_layers in patched.items():
        try:
            states, layer_offsets = apply_layers(
                fork.read_pristine(rel),
                file_layers,
                str(fork.pristine_file(rel)),
                fork.repo,
            )
        except PatchError as e:
            raise ForkError(str(e)) from None
        contents[rel] = states[-1]
        offsets.update(layer_offsets)

    touched_dirs = {"torch"}
    for rel in list(patched) + new:
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            touched_dirs.add("/".join(parts[:i]))
    new_set = set(new)
    entries: dict[str, tuple[str, object]] = {}
    for d in sorted(touched_dirs):
        entries[d] = ("dir", None)
        pristine_dir = fork.pristine.parent / d
        names = set()
        if pristine_dir.is_dir():
            names.update(n for n in os.listdir(pristine_dir) if n not in IGNORED_NAMES)
        names.update(r.split("/")[-1] for r in new_set if r.rsplit("/", 1)[0] == d)
        names.update(
            r.split("/")[-1]
            for r in touched_dirs
            if r.count("/") and r.rsplit("/", 1)[0] == d
        )
        for n in sorted(names):
            rel = f"{d}/{n}"
            if rel in touched_dirs:
                continue  # described by its own iteration
            if rel in patched:
                entries[rel] = ("patched", None)
            elif rel in new_set:
                entries[rel] = ("link", str(fork.repo / rel))
            else:
                entries[rel] = ("link", str(pristine_dir / n))
    return entries, contents, offsets


def build(fork: Fork, discard_edits: bool = False, quiet: bool = False) -> dict:
    """Make the overlay match the repository; return a summary of changes."""
    manifest = load_manifest(fork)
    entries, contents, offsets = desired_tree(fork)
    if not discard_edits:
        edited = unrefreshed_edits(fork, manifest) + _stray_copies(
            fork, entries, manifest
        )
        if edited:
            listing = "\n".join(f"    {fork.overlay / rel}" for rel in edited)
            raise ForkError(
                "these overlay files were edited but their patches were not refreshed:\n"
                f"{listing}\n"
                "  The build stopped so that the edits are not overwritten.  Keep them with\n"
                "    tools/fork.py refresh " + " ".join(edited) + "\n"
                "  or throw them away with `tools/fork.py build --discard-edits`."
            )
    changes = {"linked": 0, "patched": 0, "removed": 0, "dirs": 0}
    fork.overlay.mkdir(parents=True, exist_ok=True)
    # Real directories first (parents before children), then their entries.
    for rel, (kind, _) in entries.items():
        if kind == "dir":
            path = fork.overlay / rel
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                path.unlink()
            if not path.is_dir():
                path.mkdir(parents=True)
                changes["dirs"] += 1
    for rel, (kind, target) in entries.items():
        path = fork.overlay / rel
        if kind == "link":
            if path.is_symlink() and os.readlink(path) == target:
                continue
            _remove(path)
            path.symlink_to(target)
            changes["linked"] += 1
        elif kind == "patched":
            data = contents[rel].encode("utf-8")
            if not path.is_symlink() and path.is_file() and path.read_bytes() == data:
                continue
            _remove(path)
            tmp = path.with_name(path.name + ".fork-tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            changes["patched"] += 1
    # Remove what no longer belongs in the real directories.
    for rel, (kind, _) in entries.items():
        if kind != "dir":
            continue
        for child in os.listdir(fork.overlay / rel):
            if child in IGNORED_NAMES or f"{rel}/{child}" in entries:
                continue
            _remove(fork.overlay / rel / child)
            changes["removed"] += 1
    for child in os.listdir(fork.overlay):
        if child not in ("torch", ".fork"):
            _remove(fork.overlay / child)
            changes["removed"] += 1

    new_manifest = {
        "torch_dir": str(fork.pristine),
        "torch_version": fork.release,
        "repo": str(fork.repo),
        "revision": git_revision(fork.repo),
        "source_digest": source_digest(fork),
        "patches": sorted(contents),
        "new_files": fork.new_files(),
        "patched": {
            rel: _sha(text.encode("utf-8")) for rel, text in sorted(contents.items())
        },
    }
    if new_manifest != manifest:
        fork.manifest_path.parent.mkdir(parents=True, exist_ok=True)
        fork.manifest_path.write_text(json.dumps(new_manifest, indent=2) + "\n")
    changes["compiled"] = _compile_bytecode(fork, entries)
    if not quiet:
        for rel, offs in offsets.items():
            hunks = ", ".join(f"#{i} by {o:+d} lines" for i, o in offs.items())
            print(
                f"warning: {rel}: hunks applied at an offset ({hunks}); refresh the patch",
                file=sys.stderr,
            )
    changes["offsets"] = offsets
    return changes


def _compile_bytecode(fork: Fork, entries: dict) -> int:
    """Write the bytecode of every module in the overlay's real directories.

    Files there (patched copies, links to unmodified and to new files) are
    imported by their overlay path, so their bytecode lives in the overlay's
    own ``__pycache__``; under ``PYTHONDONTWRITEBYTECODE`` (set on some CI
    machines) Python would never write it and would compile them from source
    in every process, making ``import torch`` about 15% slower than stock.
    Linked directories share the installed package's bytecode.  Up-to-date
    files are skipped, so a rebuild stays quick.
    """
    import importlib.util
    import py_compile

    compiled = 0
    for rel, (kind, _) in entries.items():
        if kind == "dir" or not rel.endswith(".py"):
            continue
        source = fork.overlay / rel
        cached = Path(importlib.util.cache_from_source(str(source)))
        try:
            if cached.stat().st_mtime >= source.stat().st_mtime:
                continue
            py_compile.compile(str(source), cfile=str(cached), doraise=True)
        except FileNotFoundError:
            py_compile.compile(str(source), cfile=str(cached), doraise=False)
        except py_compile.PyCompileError:
            continue  # a syntax error shows itself at import, with context
        compiled += 1
    return compiled


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


# ---------------------------------------------------------------------------
# Edit, refresh, check


def normalize(fork: Fork, name: str) -> str:
    """Accept ``torch/x.py``, an overlay path or a patch path; return ``torch/x.py``."""
    absolute = Path(os.path.abspath(name))
    rel = Path(name).as_posix()
    for base in (fork.overlay, *(fork.patches_dir / f for f in STACK_ORDER)):
        if _inside_lexically(absolute, base):
            rel = absolute.relative_to(os.path.abspath(base)).as_posix()
            break
    else:
        if _inside_lexically(absolute, fork.repo):
            rel = absolute.relative_to(os.path.abspath(fork.repo)).as_posix()
        rel = re.sub(r"^(patches/[^/]+/[^/]+/|build/overlay[^/]*/)", "", rel)
    if rel.endswith(".patch"):
        rel = rel[: -len(".patch")]
    if not rel.startswith("torch/"):
        raise ForkError(
            f"{name}: expected a file of the torch package, like torch/_inductor/scheduler.py"
        )
    return rel


def _inside_lexically(path: Path, root: Path) -> bool:
    """Like inside, without resolving symlinks (overlay files point elsewhere)."""
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
        return True
    except ValueError:
        return False


def edit(fork: Fork, names: list[str]) -> None:
    """Turn overlay symlinks of upstream files into editable copies."""
    manifest = load_manifest(fork)
    for name in names:
        rel = normalize(fork, name)
        text = fork.read_pristine(rel)
        path = fork.overlay / rel
        if not (fork.overlay / "torch").is_dir():
            raise ForkError(
                f"no overlay at {fork.overlay}; run `tools/fork.py build` first"
            )
        # A directory linked whole must become a real one holding links.
        _materialize_parents(fork, rel)
        if path.is_file() and not path.is_symlink():
            print(f"{rel} is already an editable copy: {path}")
            continue
        _remove(path)
        path.write_text(text, encoding="utf-8")
        manifest.setdefault("patched", {})[rel] = _sha(text.encode("utf-8"))
        print(f"edit {path}, then run: tools/fork.py refresh {rel}")
    fork.manifest_path.parent.mkdir(parents=True, exist_ok=True)
    fork.manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


def _materialize_parents(fork: Fork, rel: str) -> None:
    parts = rel.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        path = fork.overlay / d
        if path.is_symlink():
            path.unlink()
            path.mkdir()
            src = fork.pristine.parent / d
            for n in os.listdir(src):
                if n not in IGNORED_NAMES:
                    (path / n).symlink_to(src / n)


def refresh(fork: Fork, names: list[str], feature: str | None = None) -> list[str]:
    """Regenerate patches from edited overlay files; return the refreshed paths.

    The change goes to ``feature``'s patch of each file; by default to the
    last feature that patches the file (the only one, for most files)."""
    manifest = load_manifest(fork)
    if names:
        targets = [normalize(fork, n) for n in names]
    else:
        targets = unrefreshed_edits(fork, manifest)
        if not targets:
            print("nothing to refresh: no overlay file was edited since the last build")
    done = []
    for rel in targets:
        path = fork.overlay / rel
        if path.is_symlink() or not path.is_file():
            raise ForkError(
                f"{rel} is not an editable copy in the overlay ({path}); "
                f"run `tools/fork.py edit {rel}` first"
            )
        current = path.read_text(encoding="utf-8")
        file_layers = fork.patched_files().get(rel, [])
        owner = feature or (file_layers[-1].feature if file_layers else None)
        if owner is None:
            raise ForkError(
                f"{rel} has no patch yet: name the feature the edit belongs to, "
                f"`tools/fork.py refresh --feature FEATURE {rel}` "
                f"({', '.join(STACK_ORDER)})"
            )
        try:
            new_layers = relayer(
                rel,
                fork.read_pristine(rel),
                [(x.feature, x.path.read_text(encoding="utf-8")) for x in file_layers],
                current,
                owner,
            )
        except PatchError as e:
            raise ForkError(str(e)) from None
        for name, diff in new_layers:
            patch = layer_path(fork.patches_dir, name, rel)
            if diff:
                patch.parent.mkdir(parents=True, exist_ok=True)
                if not patch.exists() or patch.read_text(encoding="utf-8") != diff:
                    patch.write_text(diff, encoding="utf-8")
                    print(f"refreshed {patch.relative_to(fork.repo)}")
            elif patch.exists():
                patch.unlink()
                print(f"removed {patch.relative_to(fork.repo)}: it changes nothing")
        if any(diff for _, diff in new_layers):
            manifest.setdefault("patched", {})[rel] = _sha(current.encode("utf-8"))
        else:
            manifest.get("patched", {}).pop(rel, None)
            path.unlink()
            path.symlink_to(fork.pristine_file(rel))
            print(f"{rel} equals upstream again: removed its patches")
        done.append(rel)
    fork.manifest_path.parent.mkdir(parents=True, exist_ok=True)
    fork.manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return done


def check(fork: Fork) -> list[str]:
    """Every problem found (an empty list means the fork is consistent)."""
    problems = []
    try:
        _, contents, offsets = desired_tree(fork)
    except ForkError as e:
        return [str(e)]
    for name, offs in offsets.items():
        hunks = ", ".join(f"#{i} ({o:+d} lines)" for i, o in offs.items())
        problems.append(f"{name}: hunks {hunks} apply only at an offset; refresh it")
    for rel, file_layers in fork.patched_files().items():
        states, _ = apply_layers(fork.read_pristine(rel), file_layers, rel, fork.repo)
        for layer, before, after in zip(file_layers, states, states[1:]):
            if make_patch(rel, before, after) != layer.path.read_text(encoding="utf-8"):
                problems.append(
                    f"{layer.path.relative_to(fork.repo)} is not in canonical form; "
                    f"run tools/fork.py refresh --feature {layer.feature} {rel}"
                )
    if not fork.overlay.is_dir():
        problems.append(f"no overlay at {fork.overlay}; run tools/fork.py build")
        return problems
    manifest = load_manifest(fork)
    for rel in unrefreshed_edits(fork, manifest):
        problems.append(
            f"{fork.overlay / rel} was edited but its patches were not refreshed"
        )
    for rel, text in contents.items():
        path = fork.overlay / rel
        if (
            rel in manifest.get("patched", {})
            and path.is_file()
            and not path.is_symlink()
        ):
            if (
                _sha(path.read_bytes()) == manifest["patched"][rel]
                and path.read_text(encoding="utf-8") != text
            ):
                problems.append(
                    f"{path} is out of date with its patch; run tools/fork.py build"
                )
        elif path.is_symlink() or not path.is_file():
            # Missing, or still the upstream file: the patch is newer than the build.
            problems.append(f"{path} is missing or unpatched; run tools/fork.py build")
    for rel in fork.new_files():
        path = fork.overlay / rel
        if not path.is_symlink() or Path(os.readlink(path)) != fork.repo / rel:
            problems.append(
                f"{rel} is not linked into the overlay; run tools/fork.py build"
            )
    return problems


# ---------------------------------------------------------------------------
# Paths


def inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------
# Running (activating in a virtualenv is fork_install's)


def run_under_overlay(fork: Fork, command: list[str]) -> int:
    build(fork)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(fork.overlay), env.get("PYTHONPATH")])
    )
    # Benchmarks comparing against stock torch drop this entry from PYTHONPATH.
    env["FUSION_FORK_OVERLAY"] = str(fork.overlay)
    # A virtualenv's activated overlay (.pth, see `activate`) would come before
    # PYTHONPATH and shadow the overlay just built, perhaps an older one.
    env["FUSION_FORK_DISABLE"] = "1"
    print(
        f"fork: overlay {fork.overlay} (torch {fork.release} at {fork.pristine}, "
        f"revision {git_revision(fork.repo)})",
        file=sys.stderr,
        flush=True,
    )
    if not command:
        raise ForkError(
            "run needs a command, e.g. `tools/fork.py run -- python3 script.py`"
        )
    return subprocess.call(command, env=env)


# ---------------------------------------------------------------------------
# Command line
