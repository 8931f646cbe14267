"""Which wheels a torch release needs on the GPU machine (``gpu_env.py pack``).

Requirements are resolved against the machine's own packages (its ``pip
freeze``, ``requirements/gpu-machine.txt``) under its environment markers and
wheel tags, not this machine's: only what is missing there, or there at a
version the pins refuse, travels.  ``packaging`` is imported inside the
functions that need it: ``gpu_env.py`` imports this module (through the
packing half) on the GPU machine too, where only the standard library is.
"""

from __future__ import annotations

import email.parser
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from gpu_env_common import normalize, REPO, UserError


PROJECT_CONSTRAINTS = REPO / "requirements" / "constraints.txt"
# The GPU machine's environment markers (PEP 508).
GPU_MARKERS = {
    "implementation_name": "cpython",
    "implementation_version": "3.12.3",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_system": "Linux",
    "platform_version": "",
    "python_full_version": "3.12.3",
    "python_version": "3.12",
    "sys_platform": "linux",
}
# glibc 2.39 runs every manylinux wheel up to manylinux_2_39 (and the legacy aliases).
PLATFORMS = (
    [f"manylinux_2_{v}_x86_64" for v in range(39, 4, -1)]
    + [f"manylinux{alias}_x86_64" for alias in ("2014", "2010", "1")]
    + ["linux_x86_64"]
)


def requirement_lines(path: Path) -> list[str]:
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            lines.append(line)
    return lines


def read_inventory(path: Path) -> dict[str, tuple[str, str]]:
    """``normalized name -> (name, version)`` of a ``pip freeze`` file."""
    if not path.is_file():
        raise UserError(f"no inventory of the GPU machine at {path}")
    inventory = {}
    for line in requirement_lines(path):
        name, sep, version = line.partition("==")
        if sep:
            inventory[normalize(name.strip())] = (name.strip(), version.strip())
    return inventory


def marker_holds(req, extras: set[str]) -> bool:
    """Whether REQ applies on the GPU machine for a dependant asking EXTRAS."""
    if req.marker is None:
        return True
    return any(
        req.marker.evaluate({**GPU_MARKERS, "extra": extra})
        for extra in (sorted(extras) or [""])
    )


def requires_dist(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of WHEEL's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        names = [
            n
            for n in zf.namelist()
            if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
        ]
        if not names:
            raise UserError(f"{wheel.name} has no .dist-info/METADATA")
        text = zf.read(names[0]).decode("utf-8", "replace")
    return email.parser.Parser().parsestr(text).get_all("Requires-Dist") or []


def supported_tags() -> frozenset:
    from packaging import tags

    return frozenset(
        [
            *tags.cpython_tags((3, 12), abis=["cp312"], platforms=PLATFORMS),
            *tags.compatible_tags((3, 12), "cp312", platforms=PLATFORMS),
        ]
    )


class WheelSource:
    """Wheels from a fixed folder (``--wheel-dir``) or from pip into a cache."""

    def __init__(self, cache: Path, wheel_dir: Path | None) -> None:
        self.folder = wheel_dir or cache
        self.offline = wheel_dir is not None
        self.tags = supported_tags()
        if not self.folder.is_dir():
            if self.offline:
                raise UserError(f"no wheel folder {wheel_dir}")
            self.folder.mkdir(parents=True)

    def find(self, name: str, spec):
        """The newest wheel in the folder for NAME satisfying SPEC, or None."""
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        best = None
        for path in self.folder.glob("*.whl"):
            try:
                wname, version, _, wtags = parse_wheel_filename(path.name)
            except InvalidWheelFilename:
                continue
            if (
                normalize(wname) == normalize(name)
                and spec.contains(version)
                and self.tags & wtags
                and (best is None or version > best[0])
            ):
                best = (version, path)
        return best

    def get(self, name: str, extras: set[str], spec):
        found = self.find(name, spec)
        if found or self.offline:
            if not found:
                raise UserError(f"no wheel for {name}{spec} in {self.folder}")
            return found
        self.download(
            name + (f"[{','.join(sorted(extras))}]" if extras else "") + str(spec)
        )
        found = self.find(name, spec)
        if not found:
            raise UserError(f"pip downloaded no usable wheel for {name}{spec}")
        return found

    def download(self, requirement: str) -> None:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps"]
        cmd += ["--only-binary=:all:", "--python-version", "3.12"]
        cmd += ["--implementation", "cp", "--abi", "cp312", "--abi", "abi3"]
        cmd += ["--abi", "none", "--disable-pip-version-check", "--quiet"]
        for platform in [*PLATFORMS, "any"]:
            cmd += ["--platform", platform]
        cmd += ["-d", str(self.folder), requirement]
        print(f"  downloading {requirement} ...", flush=True)
        # The project's constraints (none) replace this machine's cap on torch,
        # as in the Makefile.
        env = {**os.environ, "PIP_CONSTRAINT": str(PROJECT_CONSTRAINTS)}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode:
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            last = lines[-1] if lines else f"exit status {proc.returncode}"
            raise UserError(f"pip download {requirement} failed: {last}")


class Entry:
    def __init__(self, name, version, wheel: Path, why: str, spec, extras) -> None:
        self.name, self.version, self.wheel, self.why = name, version, wheel, why
        self.spec, self.extras = spec, set(extras)


def same_minor(spec, have: str) -> bool:
    """Whether every ``==`` pin of SPEC names HAVE's major.minor release (and SPEC
    pins something): ``==13.0.3`` against 13.0.2."""
    from packaging.version import InvalidVersion, Version

    pins = [s.version for s in spec if s.operator == "=="]
    try:
        mine = Version(have).release[:2]
        return bool(pins) and all(
            Version(pin.rstrip(".*")).release[:2] == mine for pin in pins
        )
    except InvalidVersion:
        return False


def resolve(
    roots: list[str],
    inventory,
    source: WheelSource,
    keep=frozenset(),
    compatible=frozenset(),
):
    """What travels (``[Entry]``, in order) and what the machine keeps.

    The machine's own version of a package named in KEEP is kept whatever the pins;
    that of a package named in COMPATIBLE wherever the pins name its major.minor.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    plan: dict[str, Entry] = {}
    kept: dict[str, list] = {}  # normalized name -> [name, version, SpecifierSet]
    queue = []  # (requirement, who needs it); markers already evaluated
    for line in roots:
        try:
            req = Requirement(line)
        except InvalidRequirement as e:
            raise UserError(f"bad requirement {line!r}: {e}") from None
        if marker_holds(req, set()):
            queue.append((req, "the requirements"))

    def add_dependencies(entry: Entry, extras: set[str]) -> None:
        for line in requires_dist(entry.wheel):
            dep = Requirement(line)
            if marker_holds(dep, extras):
                queue.append((dep, f"{entry.name} {entry.version}"))

    while queue:
        req, needed_by = queue.pop(0)
        key, spec = normalize(req.name), req.specifier
        extras = set(req.extras)
        if key in plan:
            entry = plan[key]
            if not spec.contains(entry.version, prereleases=True):
                raise UserError(
                    f"conflicting requirements: {needed_by} needs {req.name}{spec}, "
                    f"but {entry.name} {entry.version} was chosen for {entry.spec}"
                )
            entry.spec &= spec
            if extras - entry.extras:
                entry.extras |= extras
                add_dependencies(entry, extras)
            continue
        if key in kept:
            spec = kept[key][2] & spec
        for other, _ in queue:  # pins already known for it (no backtracking later)
            if normalize(other.name) == key:
                spec, extras = spec & other.specifier, extras | set(other.extras)
        if key in inventory:
            have = inventory[key][1]
            if (
                key in keep
                or spec.contains(have, prereleases=True)
                or (key in compatible and same_minor(spec, have))
            ):
                kept[key] = [inventory[key][0], have, spec]
                continue
            kept.pop(key, None)
            why = f"GPU machine has {have}, needs {spec}"
        else:
            why = "missing on the GPU machine"
        version, wheel = source.get(req.name, extras, spec)
        entry = plan[key] = Entry(req.name, version, wheel, why, spec, extras)
        add_dependencies(entry, extras)
    return list(plan.values()), kept
