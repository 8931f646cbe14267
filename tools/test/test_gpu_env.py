"""Tests of tools/gpu_env.py (and its gpu_env_* modules): resolve, pack, receive
and unpack a fake release.

Everything runs on small wheels made here with zipfile (``--wheel-dir``), a fake
inventory of the GPU machine and fake requirement files: no network, no pip.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import gpu_env  # noqa: E402
import gpu_env_common  # noqa: E402
import gpu_env_pack  # noqa: E402
import gpu_env_resolve  # noqa: E402


INVENTORY = """\
# the fake GPU machine
filelock==3.32.5
sympy==1.14.0
oldlib==1.0
torch==2.11.0
"""

# filename -> (Requires-Dist lines, {path: (text, mode)})
WHEELS = {
    "torch-9.1.0-cp312-cp312-manylinux_2_28_x86_64.whl": (
        [
            'triton==9.2.0; platform_system == "Linux"',
            "filelock",
            "sympy>=1.13",
            "oldlib>=2",
            'winonly==1.0; sys_platform == "win32"',
            "fakecuda[blas]==13.2",
        ],
        {
            "torch/__init__.py": ("VERSION = '9.1.0'\n", 0o644),
            "torch/bin/torch_shm_manager": ("#!/bin/sh\necho shm\n", 0o755),
            "torch/bin/test_api": ("#!/bin/sh\n", 0o755),
            "torch/include/torch.h": ("// header\n", 0o644),
            "torch/share/cmake/Torch.cmake": ("# cmake\n", 0o644),
        },
    ),
    "triton-9.2.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl": (
        [],
        {
            "triton/__init__.py": ("", 0o644),
            "triton/backends/nvidia/bin/ptxas": ("ptxas\n", 0o755),
            "triton/backends/nvidia/bin/ptxas-blackwell": ("big\n", 0o755),
            "triton/backends/nvidia/lib/libcupti_static.a": ("archive\n", 0o644),
            "triton/experimental/gluon/nvidia/blackwell.py": ("", 0o644),
        },
    ),
    "fakecuda-13.2-py3-none-any.whl": (
        ['fakeblas==1.0; extra == "blas"', 'fakefft==1.0; extra == "fft"'],
        {"fakecuda/__init__.py": ("", 0o644)},
    ),
    "fakeblas-1.0-py3-none-manylinux_2_17_x86_64.whl": (
        [],
        {"nvidia/blas/lib/libblas.so": ("elf\n", 0o755)},
    ),
    "fakefft-1.0-py3-none-any.whl": ([], {"fakefft/__init__.py": ("", 0o644)}),
    "oldlib-2.1-py3-none-any.whl": ([], {"oldlib.py": ("X = 2\n", 0o644)}),
    # Newer, but not for the GPU machine's platform: never chosen.
    "oldlib-3.0-cp312-cp312-win_amd64.whl": ([], {"oldlib.py": ("X = 3\n", 0o644)}),
    "sympy-1.15.0-py3-none-any.whl": ([], {"sympy/__init__.py": ("", 0o644)}),
    "vision-0.5.0-cp312-cp312-manylinux_2_28_x86_64.whl": (
        ["torch==9.1.0"],
        {"vision/__init__.py": ("", 0o644)},
    ),
    "expecttest-0.3.0-py3-none-any.whl": ([], {"expecttest/__init__.py": ("", 0o644)}),
    "pinner-1.0-py3-none-any.whl": (["oldlib<2"], {"pinner.py": ("", 0o644)}),
}


def make_wheel(folder: Path, filename: str, requires: list[str], files: dict) -> None:
    name, version = filename.split("-")[:2]
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    entries = {**files, f"{info}/METADATA": (metadata, 0o644)}
    record = "".join(f"{path},,\n" for path in entries) + f"{info}/RECORD,,\n"
    entries[f"{info}/RECORD"] = (record, 0o644)
    with zipfile.ZipFile(folder / filename, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, (text, mode) in entries.items():
            zi = zipfile.ZipInfo(path, (2026, 1, 1, 0, 0, 0))
            zi.external_attr = (stat.S_IFREG | mode) << 16
            zf.writestr(zi, text)


@pytest.fixture
def env(tmp_path: Path) -> dict:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for filename, (requires, files) in WHEELS.items():
        make_wheel(wheels, filename, requires, files)
    reqs = tmp_path / "requirements"
    reqs.mkdir()
    (reqs / "torch-9.1.0.txt").write_text(
        "# fake release\ntorch==9.1.0\nvision==0.5.0  # with torch\n-r common.txt\n"
    )
    (reqs / "torch-bad.txt").write_text("oldlib==2.1\npinner==1.0\n")
    (reqs / "gpu-extra.txt").write_text("expecttest==0.3.0\n")
    inventory = tmp_path / "gpu-machine.txt"
    inventory.write_text(INVENTORY)
    checkout = tmp_path / "checkout"
    return {
        "tmp": tmp_path,
        "wheels": wheels,
        "out": checkout / ".gpu-parts" / "9.1.0",
        "from": checkout / ".gpu-parts",
        "stage": tmp_path / "stage",
        "into": tmp_path / "into",
        "common": [
            "--wheel-dir",
            str(wheels),
            "--inventory",
            str(inventory),
            "--requirements-dir",
            str(reqs),
            "--cache",
            str(tmp_path / "cache"),
        ],
    }


def run(capsys, *argv) -> tuple[int, str, str]:
    code = gpu_env.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def pack(env, capsys, *extra, release="9.1.0"):
    return run(capsys, "pack", release, "--out", env["out"], *env["common"], *extra)


def plan_rows(out: str) -> dict[str, str]:
    """package -> the rest of its row in the plan table."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("package"))
    rows = {}
    for line in lines[start + 1 :]:
        if not line or line.startswith("kept"):
            break
        name, rest = line.split(None, 1)
        rows[name] = rest
    return rows


def test_resolution_carries_what_the_machine_lacks(env, capsys):
    code, out, err = pack(env, capsys, "--plan-only")
    assert code == 0, err
    rows = plan_rows(out)
    assert list(rows) == [
        "torch",
        "vision",
        "expecttest",
        "triton",
        "oldlib",
        "fakecuda",
        "fakeblas",
    ]
    assert "GPU machine has 2.11.0, needs ==9.1.0" in rows["torch"]
    assert "GPU machine has 1.0, needs >=2" in rows["oldlib"]
    assert rows["oldlib"].startswith("2.1 ")  # not the win_amd64 3.0
    assert "missing on the GPU machine" in rows["expecttest"]
    # Satisfied by the inventory (sympy, filelock), a false marker (winonly),
    # an extra nobody asked for (fakefft): none of them travels.
    assert "kept from the GPU machine: filelock 3.32.5, sympy 1.14.0" in out
    assert not (env["out"] / "manifest.json").exists()


def test_keep_trusts_the_machine_whatever_the_pins(env, capsys):
    code, out, err = pack(env, capsys, "--plan-only", "--keep", "OldLib")
    assert code == 0, err
    assert "oldlib" not in plan_rows(out)
    assert "oldlib 1.0 (--keep; >=2)" in out


def test_conflicting_pins_are_one_line(env, capsys):
    code, _, err = pack(env, capsys, "--plan-only", release="bad")
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: conflicting")
    assert "pinner 1.0 needs oldlib<2" in err


def test_pack_splits_into_parts_and_is_up_to_date_twice(env, capsys):
    code, out, err = pack(env, capsys, "--part-bytes", 7000)
    assert code == 0, err
    manifest = json.loads((env["out"] / "manifest.json").read_text())
    parts = sorted(env["out"].glob("part-*"))
    assert len(parts) == len(manifest["parts"]) >= 3
    assert all(p.stat().st_size <= 7000 for p in parts)
    for part, entry in zip(parts, manifest["parts"]):
        assert entry["name"] == part.name
        assert entry["sha256"] == gpu_env_common.sha256_file(part)
    stream = b"".join(p.read_bytes() for p in parts)
    assert len(stream) == manifest["stream_bytes"]
    assert hashlib.sha256(stream).hexdigest() == manifest["stream_sha256"]
    assert {w["filename"] for w in manifest["wheels"]} >= {
        "torch-9.1.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "fakeblas-1.0-py3-none-manylinux_2_17_x86_64.whl",
    }
    assert manifest["pythonpath_dir"] == "/tmp/torch-9.1.0"
    assert not (env["out"] / "bundle.tar").exists()
    assert "receive" in out and "unpack 9.1.0" in out
    mtimes = [p.stat().st_mtime_ns for p in parts]

    code, out, err = pack(env, capsys, "--part-bytes", 7000)
    assert code == 0 and "up to date" in out
    assert [p.stat().st_mtime_ns for p in parts] == mtimes

    # Another part size rewrites every part, stale ones removed.
    code, out, err = pack(env, capsys, "--part-bytes", 60000)
    assert code == 0 and "up to date" not in out
    assert [p.name for p in env["out"].glob("part-*")] == ["part-000"]


def test_shrink_drops_tools_and_static_libraries(env, capsys):
    code, _, err = pack(env, capsys, "--shrink")
    assert code == 0, err
    shrunk = env["tmp"] / "cache" / gpu_env_pack.SHRINK_CACHE
    with zipfile.ZipFile(next(shrunk.glob("torch-*.whl"))) as zf:
        names = set(zf.namelist())
        record = zf.read("torch-9.1.0.dist-info/RECORD").decode()
    assert "torch/bin/torch_shm_manager" in names
    assert "torch/bin/test_api" not in names
    # Inductor's CPU code generation includes torch's headers
    assert "torch/include/torch.h" in names
    assert "torch/share/cmake/Torch.cmake" not in names | set(record.split(",,\n"))
    with zipfile.ZipFile(next(shrunk.glob("triton-*.whl"))) as zf:
        names = set(zf.namelist())
    # Triton 3.9 resolves ptxas-blackwell on Hopper too
    assert {
        "triton/backends/nvidia/bin/ptxas",
        "triton/backends/nvidia/bin/ptxas-blackwell",
        "triton/experimental/gluon/nvidia/blackwell.py",
    } <= names
    assert not any(n.endswith(".a") for n in names)
    manifest = json.loads((env["out"] / "manifest.json").read_text())
    assert sum(w["shrunk"] for w in manifest["wheels"]) == 2


def receive_one_by_one(env, capsys) -> list[str]:
    """Receive each part as its own remote command would: one part at a time."""
    lines = []
    parts = sorted(env["out"].glob("part-*"))
    hold = env["tmp"] / "hold"
    shutil.copytree(env["out"], hold)
    shutil.rmtree(env["from"])
    for part in parts:
        env["out"].mkdir(parents=True)
        shutil.copy(hold / part.name, env["out"])
        shutil.copy(hold / "manifest.json", env["out"])
        code, out, err = run(
            capsys, "receive", "--from", env["from"], "--stage", env["stage"]
        )
        assert code == 0, err
        assert not list(env["out"].iterdir())  # moved out of the checkout
        shutil.rmtree(env["from"])
        lines += out.splitlines()
    return lines


def test_receive_then_unpack(env, capsys):
    assert pack(env, capsys, "--part-bytes", 7000)[0] == 0
    n = len(list(env["out"].glob("part-*")))
    lines = receive_one_by_one(env, capsys)
    assert (
        lines[0] == f"received part-000 ({7000} bytes); 1 of {n} parts staged for 9.1.0"
    )
    assert lines[-1].endswith(f"; {n} of {n} parts staged for 9.1.0")

    unpack = ("unpack", "9.1.0", "--stage", env["stage"], "--into", env["into"])
    code, out, err = run(capsys, *unpack)
    assert code == 0, err
    assert out.splitlines()[-1] == f"PYTHONPATH={env['into']}"
    into = env["into"]
    shm = into / "torch" / "bin" / "torch_shm_manager"
    assert os.access(shm, os.X_OK)
    assert not os.access(into / "torch" / "__init__.py", os.X_OK)
    assert (into / "nvidia" / "blas" / "lib" / "libblas.so").is_file()
    assert (into / "oldlib.py").read_text() == "X = 2\n"
    assert not (into / "fakefft").exists()
    assert len(list(env["stage"].glob("part-*"))) == n  # kept until --drop-parts

    shm.write_text("touched\n")
    code, out, err = run(capsys, *unpack, "--drop-parts")
    assert code == 0 and "up to date" in out
    assert out.splitlines()[-1] == f"PYTHONPATH={env['into']}"
    assert shm.read_text() == "touched\n"  # a no-op
    assert not list(env["stage"].glob("part-*"))


def staged(env, capsys) -> tuple:
    assert pack(env, capsys, "--part-bytes", 7000)[0] == 0
    code, _, err = run(
        capsys, "receive", "--from", env["from"], "--stage", env["stage"]
    )
    assert code == 0, err
    return ("unpack", "9.1.0", "--stage", env["stage"], "--into", env["into"])


def test_unpack_refuses_a_flipped_byte(env, capsys):
    unpack = staged(env, capsys)
    part = env["stage"] / "part-001"
    data = bytearray(part.read_bytes())
    data[100] ^= 0x01
    part.write_bytes(bytes(data))
    code, _, err = run(capsys, *unpack)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: part-001 ")
    assert "expected" in err and "got" in err
    assert not env["into"].exists()


def test_unpack_refuses_a_missing_part(env, capsys):
    unpack = staged(env, capsys)
    (env["stage"] / "part-002").unlink()
    code, _, err = run(capsys, *unpack)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "part-002" in err and "missing" in err


def test_receive_refuses_a_corrupt_part(env, capsys):
    assert pack(env, capsys, "--part-bytes", 7000)[0] == 0
    (env["out"] / "part-000").write_bytes(b"x" * 7000)
    code, _, err = run(
        capsys, "receive", "--from", env["from"], "--stage", env["stage"]
    )
    assert code == 2 and err.startswith("error: part-000 ")


@pytest.mark.parametrize("size", ["60000001", "0"])
def test_part_bytes_out_of_range(env, capsys, size):
    code, _, err = pack(env, capsys, "--part-bytes", size)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: --part-bytes")


def test_unknown_release_from_the_command_line(env):
    proc = subprocess.run(
        [sys.executable, str(TOOLS / "gpu_env.py"), "pack", "7.7.7", *env["common"]],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("error: no release 7.7.7")
    assert "9.1.0" in proc.stderr and "Traceback" not in proc.stderr


def test_the_gpu_machines_side_needs_the_standard_library_only(tmp_path):
    """The GPU machine has no ``packaging``: the command line must start and
    receive there without it (``pack`` imports it only when it runs)."""
    probe = (
        "import sys\n"
        "sys.modules['packaging'] = None  # importing it now fails\n"
        f"sys.path.insert(0, {str(TOOLS)!r})\n"
        "import gpu_env\n"
        f"sys.exit(gpu_env.main(['receive', '--from', {str(tmp_path)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: no part-* or manifest.json under")


def test_marker_evaluation_is_the_gpu_machines():
    from packaging.requirements import Requirement

    assert gpu_env_resolve.marker_holds(
        Requirement('a; python_version < "3.13"'), set()
    )
    assert not gpu_env_resolve.marker_holds(
        Requirement('a; python_version < "3.12"'), set()
    )
    assert gpu_env_resolve.marker_holds(Requirement('a; extra == "x"'), {"y", "x"})
    assert not gpu_env_resolve.marker_holds(Requirement('a; extra == "x"'), set())
    assert gpu_env_common.normalize("Typing_Extensions") == "typing-extensions"


@pytest.mark.parametrize(
    ("machine", "carried"), [("13.2.5", False), ("13.1.0", True), ("12.2.0", True)]
)
def test_compatible_packages_serve_their_minor_release(env, capsys, machine, carried):
    """A package of gpu-compatible.txt at the pinned major.minor stays on the
    machine, with its own dependencies; another minor release travels."""
    inventory = env["tmp"] / "gpu-machine.txt"
    inventory.write_text(INVENTORY + f"fakecuda=={machine}\n")
    compatible = env["tmp"] / "compatible.txt"
    compatible.write_text("# CUDA-like\nFakeCuda\n")
    code, out, err = pack(env, capsys, "--plan-only", "--compatible", compatible)
    assert code == 0, err
    rows = plan_rows(out)
    assert ("fakecuda" in rows) == carried
    assert ("fakeblas" in rows) == carried
    if carried:
        assert f"GPU machine has {machine}, needs ==13.2" in rows["fakecuda"]
    else:
        assert f"fakecuda {machine} (same minor release as ==13.2)" in out
    # Without the file, the exact pin decides.
    code, out, err = pack(env, capsys, "--plan-only", "--compatible", env["tmp"] / "no")
    assert code == 0, err
    assert "fakecuda" in plan_rows(out)


def test_hide_makes_a_virtualenv_without_the_named_packages(tmp_path, capsys):
    site = tmp_path / "site"
    for name in ("keptmod", "torchaudio", "torchaudio.libs"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("X = 1\n")
    (site / "torchaudio-2.11.0.dist-info").mkdir()
    (site / "keptmod-1.0.dist-info").mkdir()
    venv = tmp_path / "venv"
    argv = ["hide", "torchaudio", "--venv", str(venv), "--site", str(site)]
    assert gpu_env.main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith(f"PATH={venv / 'bin'}:")
    assert "torchaudio, torchaudio-2.11.0.dist-info, torchaudio.libs" in out[0]
    python = venv / "bin" / "python3"
    code = "import keptmod, importlib.util as u; print(u.find_spec('torchaudio'))"
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"
    # again: idempotent
    assert gpu_env.main(argv) == 0
