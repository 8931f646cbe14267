"""Receive, check and unpack the parts on the GPU machine (standard library only).

``receive`` moves the parts one remote command carried out of the checkout
copy into a staging folder that outlives the command; ``unpack`` checks every
digest of the manifest and extracts the wheels into a folder for
``PYTHONPATH``; ``hide`` and ``inventory`` adapt to, and describe, the
machine's own packages.  The GPU machine has no network and no ``packaging``:
nothing here may need more than the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

from gpu_env_common import normalize, REPO, sha256_file, UserError


STAGE_ROOT = Path("/tmp/gpu-env-parts")
UNPACKED_MARKER = ".gpu-env-unpacked.json"


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
