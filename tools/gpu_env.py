#!/usr/bin/env python3
"""Carry a torch release newer than the GPU machine's own (2.11.0) there as wheels.

The GPU machine (Python 3.12, manylinux x86_64, glibc 2.39) has no network; each
remote command carries at most 64 MiB with the working tree.  So:

* ``pack RELEASE`` (here, with network) resolves ``requirements/torch-RELEASE.txt``
  and ``requirements/gpu-extra.txt`` against the machine's own packages
  (``requirements/gpu-machine.txt``), downloads with pip the wheels of what is
  missing there or there at an incompatible version, and splits one uncompressed
  tar stream of them into ``.gpu-parts/RELEASE/part-NNN`` of at most 60,000,000
  bytes beside a ``manifest.json`` (``--shrink`` drops torch's tools and CMake files and
  Triton's static libraries, about 3%; ``--keep NAME`` keeps the machine's NAME whatever the
  pins; the packages of ``requirements/gpu-compatible.txt`` are kept wherever the
  pins name the machine's major.minor release, e.g. its cuda-toolkit 13.0.2, which
  served 2.14.1 though 2.14.1 pins 13.0.3);
* ``receive`` (GPU machine, one command per part) moves the part that command
  carried out of the checkout copy into ``/tmp/gpu-env-parts/RELEASE/``;
* ``unpack RELEASE`` (GPU machine) checks every digest, extracts the wheels into
  ``/tmp/torch-RELEASE`` with their execute bits and prints ``PYTHONPATH=...`` last;
* ``inventory`` prints the running Python's packages (to refresh gpu-machine.txt).

``receive``, ``unpack`` and ``inventory`` need the standard library only;
``pack`` needs ``packaging`` too.  User errors are one ``error: ...`` line, exit 2.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
PROJECT_CONSTRAINTS = REPO / "requirements" / "constraints.txt"
MAX_PART_BYTES = 60_000_000
# A remote command carries at most 64 MiB with the working tree (about 8 MB):
# parts of 56,000,000 bytes (53.4 MiB) leave it room to grow.
DEFAULT_PART_BYTES = 56_000_000
DEFAULT_CACHE = Path.home() / ".cache" / "fusion-fork" / "gpu-wheels"
STAGE_ROOT = Path("/tmp/gpu-env-parts")
UNPACKED_MARKER = ".gpu-env-unpacked.json"
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
# What --shrink keeps of torch's tools (the rest of torch/bin/ and torch/share/
# go).  Headers stay: Inductor's C++ code generation for the CPU includes them
# (torch/csrc/inductor/cpp_prefix.h); so does Triton's ptxas-blackwell, whose
# path Triton 3.9 resolves on a Hopper GPU too (both dropped, 2.15.0's CPU
# kernels and every Triton compile failed on the H100).
SHRINK_KEEP_TORCH_BIN = "torch/bin/torch_shm_manager"
# The cache folder of shrunk wheels, named after these rules: a change of the
# rules must not reuse wheels shrunk by the old ones.
SHRINK_CACHE = "shrunk-v2"


class UserError(Exception):
    """A mistake of the caller's, reported as one ``error:`` line and exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(message)


def normalize(name: str) -> str:
    """A package name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def display(path: Path) -> str:
    """PATH relative to the repository when it lies inside it."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------- resolve


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


# ------------------------------------------------------------------------ pack


def shrink(wheel: Path, cache: Path) -> Path:
    """WHEEL without what the GPU machine never uses (torch and triton only)."""
    package = normalize(wheel.name.split("-", 1)[0])
    if package == "torch":

        def drop(name: str) -> bool:
            return name.startswith("torch/share/") or (
                name.startswith("torch/bin/") and name != SHRINK_KEEP_TORCH_BIN
            )
    elif package == "triton":

        def drop(name: str) -> bool:
            return name.endswith(".a")  # static libraries: nothing links them
    else:
        return wheel
    target = cache / SHRINK_CACHE / wheel.name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"  shrinking {wheel.name} ...", flush=True)
    partial = target.with_name(target.name + ".partial")
    with (
        zipfile.ZipFile(wheel) as zin,
        zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zout,
    ):
        dropped = {i.filename for i in zin.infolist() if drop(i.filename)}
        for info in zin.infolist():
            if info.filename in dropped:
                continue
            new = zipfile.ZipInfo(info.filename, info.date_time)
            new.external_attr, new.file_size = info.external_attr, info.file_size
            new.compress_type = zipfile.ZIP_DEFLATED
            # zlib's default level 6, as the wheels were built: at level 1 the shrunk
            # torch 2.14.1 was 567 MB, 12 MB more than the original (6: 540 MB, 35 s).
            new._compresslevel = 6
            if info.filename.endswith(".dist-info/RECORD"):
                lines = zin.read(info).decode().splitlines(keepends=True)
                kept = [ln for ln in lines if ln.split(",", 1)[0] not in dropped]
                zout.writestr(new, "".join(kept))
                continue
            with zin.open(info) as src, zout.open(new, "w") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    if partial.stat().st_size >= wheel.stat().st_size:
        partial.unlink()  # nothing gained: carry the original
        return wheel
    os.replace(partial, target)
    return target


class PartWriter:
    """A write-only stream cut into ``part-NNN`` files of at most LIMIT bytes."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.folder, self.limit = folder, limit
        self.parts: list[dict] = []
        self.total = hashlib.sha256()
        self.size = 0
        self._file = None

    def _roll(self) -> None:
        self._close_part()
        name = f"part-{len(self.parts):03d}"
        self._file = open(self.folder / name, "wb")  # noqa: SIM115
        self._hash, self._bytes = hashlib.sha256(), 0
        self.parts.append({"name": name})

    def _close_part(self) -> None:
        if self._file is not None:
            self._file.close()
            self.parts[-1].update(bytes=self._bytes, sha256=self._hash.hexdigest())
            self._file = None

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            if self._file is None or self._bytes == self.limit:
                self._roll()
            chunk = view[: self.limit - self._bytes]
            self._file.write(chunk)
            self._hash.update(chunk)
            self.total.update(chunk)
            self._bytes += len(chunk)
            self.size += len(chunk)
            view = view[len(chunk) :]
        return len(data)

    def close(self) -> None:
        self._close_part()


def existing_manifest(out: Path, wheels: list[dict], part_bytes: int) -> dict | None:
    """The manifest in OUT when it holds exactly these wheels, parts intact."""
    try:
        manifest = json.loads((out / "manifest.json").read_text())
        same = [(w["filename"], w["sha256"]) for w in manifest["wheels"]] == [
            (w["filename"], w["sha256"]) for w in wheels
        ] and manifest["part_bytes"] == part_bytes
        if same and all(
            (out / p["name"]).is_file()
            and (out / p["name"]).stat().st_size == p["bytes"]
            and sha256_file(out / p["name"]) == p["sha256"]
            for p in manifest["parts"]
        ):
            return manifest
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def write_parts(release: str, out: Path, wheels: list[dict], part_bytes: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for stale in [*out.glob("part-*"), out / "manifest.json", out / "bundle.tar"]:
        stale.unlink(missing_ok=True)
    writer = PartWriter(out, part_bytes)
    with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for wheel in wheels:
            info = tarfile.TarInfo(wheel["filename"])
            info.size, info.mode, info.mtime = wheel["bytes"], 0o644, 0
            with open(wheel["path"], "rb") as f:
                tar.addfile(info, f)
    writer.close()
    manifest = {
        "release": release,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "part_bytes": part_bytes,
        "pythonpath_dir": f"/tmp/torch-{release}",
        "wheels": [{k: v for k, v in w.items() if k != "path"} for w in wheels],
        "parts": writer.parts,
        "stream_bytes": writer.size,
        "stream_sha256": writer.total.hexdigest(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def cmd_pack(args) -> int:
    if not 1 <= args.part_bytes <= MAX_PART_BYTES:
        raise UserError(
            f"--part-bytes must lie between 1 and {MAX_PART_BYTES:,}, "
            f"not {args.part_bytes:,}"
        )
    req_dir = Path(args.requirements_dir)
    req_file = req_dir / f"torch-{args.release}.txt"
    if not req_file.is_file():
        known = sorted(p.stem[len("torch-") :] for p in req_dir.glob("torch-*.txt"))
        raise UserError(
            f"no release {args.release} (no {req_file}); "
            f"available: {', '.join(known) or 'none'}"
        )
    roots = requirement_lines(req_file)
    if (req_dir / "gpu-extra.txt").is_file():
        roots += requirement_lines(req_dir / "gpu-extra.txt")
    inventory = read_inventory(Path(args.inventory))
    cache = Path(args.cache).expanduser()
    wheel_dir = Path(args.wheel_dir) if args.wheel_dir else None
    print(f"torch {args.release}: resolving {len(roots)} requirements", flush=True)
    keep = {normalize(n) for n in args.keep}
    compatible_file = Path(args.compatible)
    compatible = (
        {normalize(n) for n in requirement_lines(compatible_file)}
        if compatible_file.is_file()
        else set()
    )
    plan, kept = resolve(
        roots, inventory, WheelSource(cache, wheel_dir), keep, compatible
    )

    wheels = []
    for entry in plan:
        path = shrink(entry.wheel, cache) if args.shrink else entry.wheel
        wheels.append(
            {
                "filename": path.name,
                "bytes": path.stat().st_size,
                "sha256": sha256_file(path),
                "shrunk": path != entry.wheel,
                "path": path,
            }
        )
    width = max([len(e.name) for e in plan] + [7])
    print(f"\n{'package':<{width}}  {'version':<12} {'MB':>7}  why")
    for entry, wheel in zip(plan, wheels):
        size = f"{wheel['bytes'] / 1e6:.1f}"
        print(f"{entry.name:<{width}}  {entry.version!s:<12} {size:>7}  {entry.why}")
    if kept:

        def how(name: str, version: str, spec) -> str:
            if spec.contains(version, prereleases=True):
                return ""
            if normalize(name) in keep:
                return f" (--keep; {spec})"
            return f" (same minor release as {spec})"

        used = ", ".join(f"{n} {v}{how(n, v, s)}" for n, v, s in sorted(kept.values()))
        print(f"kept from the GPU machine: {used}")
    total = sum(w["bytes"] for w in wheels)
    print(f"{len(plan)} wheels, {total:,} bytes")
    if args.plan_only or not plan:
        return 0

    out = Path(args.out) if args.out else REPO / ".gpu-parts" / args.release
    manifest = existing_manifest(out, wheels, args.part_bytes)
    if manifest:
        print(f"{display(out)}: up to date")
    else:
        manifest = write_parts(args.release, out, wheels, args.part_bytes)
    parts = manifest["parts"]
    print(
        f"{len(parts)} parts, {manifest['stream_bytes']:,} bytes in {display(out)}/ "
        f"(stream sha256 {manifest['stream_sha256'][:16]})"
    )
    print("\nSend one remote command per part, back to back, each carrying two paths:")
    for part in parts:
        print(
            f"  carry {display(out / part['name'])} {display(out / 'manifest.json')}"
            "  run: python3 tools/gpu_env.py receive"
        )
    print(f"then: python3 tools/gpu_env.py unpack {args.release}")
    return 0


# ---------------------------------------------------- receive, unpack (stdlib)


def part_names(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("part-*") if p.is_file())


def cmd_receive(args) -> int:
    source = Path(args.source) if args.source else REPO / ".gpu-parts"
    found: dict[Path, list[Path]] = {}
    if source.is_dir():
        for path in sorted(source.rglob("*")):
            if path.is_file() and (
                path.name == "manifest.json" or path.name.startswith("part-")
            ):
                found.setdefault(path.parent, []).append(path)
    if not found:
        raise UserError(f"no part-* or manifest.json under {source}")
    for folder, paths in found.items():
        incoming = folder / "manifest.json"
        if incoming.is_file():
            release = json.loads(incoming.read_text())["release"]
        else:
            release = folder.name
        stage = Path(args.stage) if args.stage else STAGE_ROOT / release
        stage.mkdir(parents=True, exist_ok=True)
        if incoming.is_file():
            new = json.loads(incoming.read_text())
            old_file = stage / "manifest.json"
            old = json.loads(old_file.read_text()) if old_file.is_file() else None
            if old and old.get("stream_sha256") != new.get("stream_sha256"):
                for stale in part_names(stage):  # parts of an older pack
                    stale.unlink()
            shutil.move(str(incoming), str(old_file))
        manifest_file = stage / "manifest.json"
        manifest = (
            json.loads(manifest_file.read_text()) if manifest_file.is_file() else {}
        )
        expected = {p["name"]: p for p in manifest.get("parts", [])}
        parts = [p for p in paths if p.name != "manifest.json"]
        for part in parts:
            want = expected.get(part.name)
            if want and sha256_file(part) != want["sha256"]:
                part.unlink()
                raise UserError(
                    f"{part.name} arrived corrupt (sha256 differs from the manifest); "
                    "send it again"
                )
            size = part.stat().st_size
            shutil.move(str(part), str(stage / part.name))
            staged = sum(
                (stage / n).is_file() and (stage / n).stat().st_size == p["bytes"]
                for n, p in expected.items()
            )
            of = f"{staged} of {len(expected)}" if expected else "? of ?"
            print(
                f"received {part.name} ({size} bytes); {of} parts staged for {release}"
            )
        if not parts:
            print(
                f"received manifest.json; {len(expected)} parts expected for {release}"
            )
    return 0


class ConcatReader:
    """One read-only stream over several files, for ``tarfile`` in ``r|`` mode."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths, self._file = list(paths), None

    def read(self, size: int = -1) -> bytes:
        chunks = []
        while size != 0:
            if self._file is None:
                if not self.paths:
                    break
                self._file = open(self.paths.pop(0), "rb")  # noqa: SIM115
            data = self._file.read(size)
            if not data:
                self._file.close()
                self._file = None
                continue
            chunks.append(data)
            if size > 0:
                size -= len(data)
        return b"".join(chunks)


def extract_wheel(wheel: Path, dest: Path) -> int:
    """Extract WHEEL into DEST with the Unix mode bits its entries record."""
    count = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if len(parts) > 2 and parts[0].endswith(".data"):
                if parts[1] not in ("purelib", "platlib"):
                    continue  # scripts, headers, data: not importable
                parts = parts[2:]
            parts = [p for p in parts if p]
            if not parts or info.filename.startswith("/") or ".." in parts:
                raise UserError(f"{wheel.name}: unsafe path {info.filename!r}")
            target = dest.joinpath(*parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            mode = (info.external_attr >> 16) & 0o7777
            if mode:
                os.chmod(target, mode)
            count += 1
    return count


def cmd_unpack(args) -> int:
    release = args.release
    stage = Path(args.stage) if args.stage else STAGE_ROOT / release
    manifest_file = stage / "manifest.json"
    if not manifest_file.is_file():
        raise UserError(
            f"no manifest for {release} in {stage}; run `gpu_env.py receive` first"
        )
    manifest = json.loads(manifest_file.read_text())
    if manifest.get("release") != release:
        raise UserError(
            f"{manifest_file} is for {manifest.get('release')}, not {release}"
        )
    into = Path(args.into or manifest.get("pythonpath_dir") or f"/tmp/torch-{release}")
    parts = [stage / p["name"] for p in manifest["parts"]]
    marker = into / UNPACKED_MARKER
    if (
        marker.is_file()
        and json.loads(marker.read_text()).get("stream_sha256")
        == manifest["stream_sha256"]
    ):
        print(f"{into}: up to date ({len(manifest['wheels'])} wheels of {release})")
    else:
        missing = [p.name for p in parts if not p.is_file()]
        if missing:
            raise UserError(
                f"{len(missing)} of {len(parts)} parts of {release} missing in "
                f"{stage}: {', '.join(missing)}"
            )
        total = hashlib.sha256()
        for path, want in zip(parts, manifest["parts"]):
            h = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
                    total.update(chunk)
            if h.hexdigest() != want["sha256"]:
                raise UserError(
                    f"{path.name} of {release} is corrupt: sha256 expected "
                    f"{want['sha256'][:12]}..., got {h.hexdigest()[:12]}...; send it again"
                )
        if total.hexdigest() != manifest["stream_sha256"]:
            raise UserError(
                f"the stream of {release} does not match its manifest: sha256 "
                f"expected {manifest['stream_sha256'][:12]}..., "
                f"got {total.hexdigest()[:12]}..."
            )
        if into.exists() and not marker.is_file() and any(into.iterdir()):
            raise UserError(f"{into} exists and was not made by unpack; pass --into")
        partial = into.with_name(f".{into.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        wheels = {w["filename"]: w for w in manifest["wheels"]}
        files = 0
        with tarfile.open(fileobj=ConcatReader(parts), mode="r|") as tar:
            for member in tar:
                if not member.isfile() or member.name not in wheels:
                    raise UserError(f"unexpected {member.name!r} in the stream")
                scratch = partial / ".wheel"
                with tar.extractfile(member) as src, open(scratch, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                files += extract_wheel(scratch, partial)
                scratch.unlink()
        record = {"release": release, "stream_sha256": manifest["stream_sha256"]}
        record.update(manifest_sha256=sha256_file(manifest_file), wheels=sorted(wheels))
        (partial / UNPACKED_MARKER).write_text(json.dumps(record, indent=2) + "\n")
        if into.exists():
            shutil.rmtree(into)
        os.replace(partial, into)
        print(f"unpacked {len(wheels)} wheels ({files} files) of {release} into {into}")
    if args.drop_parts:
        for path in parts:
            path.unlink(missing_ok=True)
    print(f"PYTHONPATH={into}")
    return 0


def cmd_inventory(args) -> int:
    cmd = [sys.executable, "-m", "pip", "list", "--format=freeze"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        lines = proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"]
        raise UserError(f"pip list failed: {lines[-1]}")
    sys.stdout.write(proc.stdout)
    return 0


def cmd_hide(args) -> int:
    """A virtualenv with the running Python's packages but NAME...: symlinks.

    The GPU machine's packages built against its own torch can break a
    carried one: its torchaudio (CUDA 13.0) refuses torch 2.15.0 (CUDA 13.2)
    at import, and transformers imports torchaudio whenever it is installed.
    The fork uses no hidden package; everything else stays as the machine has
    it.  Prints ``PATH=...`` last, the virtualenv's bin first.
    """
    hidden = {normalize(name) for name in args.names}
    site = Path(args.site or sysconfig.get_paths()["purelib"])
    venv = Path(args.venv)
    if not (venv / "bin" / "python3").exists():
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True
        )
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    target = venv / "lib" / ver / "site-packages"
    target.mkdir(parents=True, exist_ok=True)
    linked, skipped = 0, []
    for entry in sorted(site.iterdir()):
        package = normalize(entry.name.split("-", 1)[0].split(".", 1)[0])
        link = target / entry.name
        if package in hidden:
            skipped.append(entry.name)
            if link.is_symlink():
                link.unlink()
            continue
        if not link.exists() and not link.is_symlink():
            link.symlink_to(entry)
        linked += 1
    print(f"{venv}: {linked} entries of {site}; hidden: {', '.join(skipped) or 'none'}")
    print(f"PATH={venv / 'bin'}:{os.environ.get('PATH', '')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="gpu_env.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="resolve, download and split a release")
    p.set_defaults(func=cmd_pack)
    p.add_argument("release")
    p.add_argument(
        "--shrink",
        action="store_true",
        help="drop torch's tools and CMake files, Triton's static libraries",
    )
    p.add_argument("--part-bytes", type=int, default=DEFAULT_PART_BYTES)
    p.add_argument("--out", help="default: .gpu-parts/RELEASE in the repository")
    p.add_argument("--cache", default=str(DEFAULT_CACHE))
    p.add_argument("--wheel-dir", help="resolve against these wheels only (no pip)")
    p.add_argument("--plan-only", action="store_true", help="resolve and stop")
    p.add_argument("--keep", action="append", default=[], metavar="NAME")
    p.add_argument(
        "--compatible",
        default=str(REPO / "requirements/gpu-compatible.txt"),
        help="packages whose machine version serves pins of its major.minor",
    )
    p.add_argument("--inventory", default=str(REPO / "requirements/gpu-machine.txt"))
    p.add_argument("--requirements-dir", default=str(REPO / "requirements"))
    p = sub.add_parser("receive", help="stage the parts a command carried")
    p.set_defaults(func=cmd_receive)
    p.add_argument("--from", dest="source", help="default: .gpu-parts")
    p.add_argument("--stage", help=f"default: {STAGE_ROOT}/RELEASE")
    p = sub.add_parser("unpack", help="check and extract the staged parts")
    p.set_defaults(func=cmd_unpack)
    p.add_argument("release")
    p.add_argument("--stage", help=f"default: {STAGE_ROOT}/RELEASE")
    p.add_argument("--into", help="default: /tmp/torch-RELEASE")
    p.add_argument("--drop-parts", action="store_true", help="delete them after")
    p = sub.add_parser(
        "hide", help="a virtualenv of this Python's packages but NAME..."
    )
    p.set_defaults(func=cmd_hide)
    p.add_argument("names", nargs="+", metavar="NAME")
    p.add_argument("--venv", default="/tmp/gpu-env-venv")
    p.add_argument("--site", help="default: this Python's site-packages")
    p = sub.add_parser("inventory", help="print `pip list --format=freeze`")
    p.set_defaults(func=cmd_inventory)
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except (UserError, OSError, ValueError, zipfile.BadZipFile, tarfile.TarError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
