"""Pack a release's wheels into parts a remote command can carry (``gpu_env.py pack``).

The wheels :func:`gpu_env_resolve.resolve` chose (optionally shrunk) go into
one uncompressed tar stream, cut into ``part-NNN`` files beside a
``manifest.json`` that records every part's and the whole stream's digest;
the GPU machine checks them all before extracting anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from gpu_env_common import normalize, REPO, sha256_file, UserError
from gpu_env_resolve import read_inventory, requirement_lines, resolve, WheelSource


MAX_PART_BYTES = 60_000_000
# A remote command carries at most 64 MiB (67,108,864 bytes) together with the
# working tree.  The tree grew to about 11 MB, and 56,000,000-byte parts were
# refused with it ("working tree is larger than 64 MiB"): parts of 52,000,000
# bytes (49.6 MiB) leave the tree about 15 MB.
DEFAULT_PART_BYTES = 52_000_000
DEFAULT_CACHE = Path.home() / ".cache" / "fusion-fork" / "gpu-wheels"
# What --shrink keeps of torch's tools (the rest of torch/bin/ and torch/share/
# go).  Headers stay: Inductor's C++ code generation for the CPU includes them
# (torch/csrc/inductor/cpp_prefix.h); so does Triton's ptxas-blackwell, whose
# path Triton 3.9 resolves on a Hopper GPU too (both dropped, 2.15.0's CPU
# kernels and every Triton compile failed on the H100).
SHRINK_KEEP_TORCH_BIN = "torch/bin/torch_shm_manager"
# The cache folder of shrunk wheels, named after these rules: a change of the
# rules must not reuse wheels shrunk by the old ones.
SHRINK_CACHE = "shrunk-v2"


def display(path: Path) -> str:
    """PATH relative to the repository when it lies inside it."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


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
