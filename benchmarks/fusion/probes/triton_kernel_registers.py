"""How many blocks of a generated Triton kernel does a multiprocessor hold at once?

Reads Inductor's output code saved on the GPU machine (a probe's
``--save-code`` file: each kernel as ``async_compile.triton('name', '''...''')``),
compiles each Triton kernel for the GPU its code was generated for, here,
without a GPU (Triton's own ptxas and cuobjdump; ``TRITON_PTXAS_PATH`` is
honoured), and prints per config its registers, spills and shared memory a
block, the blocks a multiprocessor holds at once, the rows in flight and
the waves its grid takes.  A grid whose last wave holds few blocks leaves
memory idle at its end: the layer norm backward at 524 x 256000 in steps
of 4096 over 16 warps (benchmarks/results/one_pass/on_by_default_2.15.0_h200.md).

    python3 benchmarks/fusion/probes/triton_kernel_registers.py CODE.py [CODE.py ...] \\
        [--configs 1/4096/16,1/2048/16] [--kernel backward] [--loops] [--json OUT.json]

``--loops`` also prints, per loop of the kernel's SASS, its instructions an
iteration and an element of the row (a thread's share of a step): what two
kernels that move the same bytes differ by.  A loop whose body branches
(aligned steps) counts both sides.

A config is XBLOCK/R0_BLOCK/num_warps[/num_stages]; without ``--configs``
each kernel's own fixed config (the one-pass pass's kernels) is compiled.
The device's limits (multiprocessors, registers and threads a
multiprocessor) come from the code's ``DeviceProperties``; the limits of
blocks and shared memory a multiprocessor are the Hopper ones
(:data:`HOPPER`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


# Kernel sources in Inductor's output code.
KERNEL_SOURCE = re.compile(
    r"async_compile\.triton\(\s*'(?P<name>\w+)',\s*'''(?P<code>.*?)''',\s*"
    r"device_str='cuda'\)",
    re.S,
)
# Limits not in DeviceProperties: sm_90's blocks and shared memory a
# multiprocessor (the 1 KB a block reserves is in the cubin's static shared
# memory, which cuobjdump reports), and the registers a warp is given in
# units of.
HOPPER = {
    "max_blocks": 32,
    "shared_bytes": 233472,
    "register_unit": 256,
}


class _Recorder:
    """Stands in for ``triton_heuristics`` while a kernel's module runs:
    each decorator records its arguments (size hints, ``triton_meta``, a
    fixed config) and leaves the function as ``@triton.jit`` made it."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __getattr__(self, kind: str) -> Any:
        if kind.startswith("__"):
            raise AttributeError(kind)

        def decorator(*args: Any, **kwargs: Any) -> Any:
            self.calls.append({"kind": kind, **kwargs})
            return lambda fn: fn

        return decorator


def kernel_sources(code: str) -> list[tuple[str, str]]:
    """(name, source) of each Triton kernel of an output code file."""
    return [(m["name"], m["code"]) for m in KERNEL_SOURCE.finditer(code)]


def load_kernel(name: str, source: str, folder: Path) -> tuple[Any, dict[str, Any]]:
    """The ``@triton.jit`` function of a kernel source and what its
    heuristics decorator was given.  The source's own import of
    ``triton_heuristics`` and its call that picks the GPU driver (there is
    none here) are taken out; the recorder takes the decorator's place."""
    source = source.replace(
        "from torch._inductor.runtime import triton_helpers, triton_heuristics",
        "from torch._inductor.runtime import triton_helpers",
    ).replace("triton_helpers.set_driver_to_gpu()", "")
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    recorder = _Recorder()
    module.triton_heuristics = recorder  # type: ignore[attr-defined]
    spec.loader.exec_module(module)
    if not recorder.calls:
        raise ValueError(f"{name}: no triton_heuristics decorator in its source")
    return getattr(module, name), recorder.calls[-1]


def parse_config(text: str) -> dict[str, int]:
    """``XBLOCK/R0_BLOCK/num_warps[/num_stages]`` as a config."""
    parts = [int(v) for v in text.split("/")]
    if len(parts) not in (3, 4) or min(parts) < 1:
        raise ValueError(
            f"config {text!r}: expected XBLOCK/R0_BLOCK/num_warps[/num_stages], "
            "positive integers"
        )
    xblock, r0, warps, *stages = parts
    return {
        "XBLOCK": xblock,
        "R0_BLOCK": r0,
        "num_warps": warps,
        "num_stages": stages[0] if stages else 1,
    }


def cuobjdump(cubin: bytes, flag: str) -> str:
    """What Triton's own ``cuobjdump FLAG`` prints of ``cubin``."""
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([str(tool), flag, f.name], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"cuobjdump {flag} failed: {out.stderr.strip()}")
    return out.stdout


def resource_usage(cubin: bytes) -> dict[str, int]:
    """Registers, stack (spills) and shared memory a thread block of the
    one kernel of ``cubin`` uses, from ``cuobjdump -res-usage``."""
    text = cuobjdump(cubin, "-res-usage")
    usage = {}
    for key in ("REG", "STACK", "SHARED", "LOCAL"):
        m = re.search(rf"\b{key}:(\d+)", text)
        if m is None:
            raise RuntimeError(f"cuobjdump -res-usage gave no {key}: {text!r}")
        usage[key.lower()] = int(m.group(1))
    return usage


# an instruction of cuobjdump's SASS listing: its address and its text
SASS_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);")


def loop_instructions(cubin: bytes) -> list[dict[str, Any]]:
    """The loops of the one kernel of ``cubin`` in its SASS (``cuobjdump
    -sass``): for each backward branch, the instructions from its target to
    it (one iteration's, a block's thread) and their count by opcode (the
    name before the first dot, a predicate left off).  A kernel's loop over
    a row is where its time goes: two kernels moving the same bytes differ
    here by their arithmetic and their address work.  The count is of the
    loop's whole span: where its body branches (the one-pass pass's aligned
    steps write it once for steps inside the row and once for the row's
    ends) both sides count, though an iteration runs one."""
    sass = cuobjdump(cubin, "-sass")
    listing = [(int(a, 16), text.strip()) for a, text in SASS_INSTRUCTION.findall(sass)]
    loops = []
    for address, text in listing:
        words = text.split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if not words or not words[0].startswith("BRA"):
            continue
        target = re.search(r"0x([0-9a-f]+)", text)
        if target is None or int(target.group(1), 16) >= address:
            continue
        start = int(target.group(1), 16)
        ops: dict[str, int] = {}
        for a, t in listing:
            if start <= a <= address:
                w = t.split()
                op = (w[1] if w[0].startswith("@") else w[0]).split(".")[0]
                ops[op] = ops.get(op, 0) + 1
        loops.append({"instructions": sum(ops.values()), "ops": ops})
    return loops


def blocks_per_multiprocessor(
    registers: int,
    warps: int,
    shared: int,
    *,
    registers_per_sm: int = 65536,
    threads_per_sm: int = 2048,
    limits: dict[str, int] = HOPPER,
) -> dict[str, int]:
    """The blocks of ``warps`` warps, each thread using ``registers``
    registers and the block ``shared`` bytes of shared memory (static and
    dynamic), that one multiprocessor holds at once, and what limits
    them."""
    unit = limits["register_unit"]
    warp_registers = math.ceil(registers * 32 / unit) * unit
    by = {
        "registers": (registers_per_sm // warp_registers) // warps,
        "threads": threads_per_sm // (warps * 32),
        "shared": limits["shared_bytes"] // max(1, shared),
        "blocks": limits["max_blocks"],
    }
    limit = min(by, key=lambda k: by[k])
    return {"blocks": by[limit], "limited_by": limit}  # type: ignore[dict-item]


def waves(grid: int, in_flight: int) -> dict[str, float]:
    """The waves a grid of ``grid`` blocks takes at ``in_flight`` blocks at
    once, and how full its last is."""
    count = math.ceil(grid / in_flight)
    last = grid - (count - 1) * in_flight
    return {"waves": count, "last_wave_fill": round(last / in_flight, 3)}


def compile_kernel(
    fn: Any, meta: dict[str, Any], config: dict[str, int], arch: int
) -> tuple[bytes, int]:
    """The cubin of ``fn`` at ``config`` for sm_``arch``, and the dynamic
    shared memory a block of it is launched with."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    triton_meta = meta["triton_meta"]
    constexprs = {
        k: v for k, v in config.items() if k not in ("num_warps", "num_stages")
    }
    constexprs.update(triton_meta.get("constants") or {})
    signature = dict(triton_meta["signature"])
    attrs = (triton_meta.get("configs") or [{}])[0]
    options = {
        "num_warps": config["num_warps"],
        "num_stages": config["num_stages"],
        "enable_fp_fusion": triton_meta.get("enable_fp_fusion", True),
    }
    compiled = triton.compile(
        ASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs),
        target=GPUTarget("cuda", arch, 32),
        options=options,
    )
    return compiled.asm["cubin"], int(compiled.metadata.shared)


def measure(
    name: str, source: str, configs: list[dict[str, int]], folder: Path
) -> list[dict[str, Any]]:
    """Each config of one kernel: its resources, blocks a multiprocessor,
    rows in flight and waves."""
    fn, meta = load_kernel(name, source, folder)
    device = meta["triton_meta"]["device"]
    own = meta.get("config")
    if not configs:
        if own is None:
            raise ValueError(
                f"{name}: autotuned ({meta['kind']}), no fixed config: give --configs"
            )
        configs = [
            {"num_stages": 1, **{k: int(v) for k, v in own.items()}}  # type: ignore[dict-item]
        ]
    m = re.search(r"\bxnumel = (\d+)\b", source)
    xnumel = int(m.group(1)) if m else None
    rows = []
    for config in configs:
        cubin, dynamic_shared = compile_kernel(fn, meta, config, device.cc)
        usage = resource_usage(cubin)
        usage["shared"] += dynamic_shared
        fit = blocks_per_multiprocessor(
            usage["reg"],
            config["num_warps"],
            usage["shared"],
            registers_per_sm=device.regs_per_multiprocessor,
            threads_per_sm=device.max_threads_per_multi_processor,
        )
        in_flight = fit["blocks"] * device.multi_processor_count
        # elements of the row one thread takes in an iteration of a loop
        per_thread = (
            config["XBLOCK"] * config.get("R0_BLOCK", 1) / (32 * config["num_warps"])
        )
        loops = loop_instructions(cubin)
        for loop in loops:
            loop["per_element"] = loop["instructions"] / per_thread
        row: dict[str, Any] = {
            "kernel": name,
            "config": config,
            **usage,
            **fit,
            "in_flight": in_flight,
            "xnumel": xnumel,
            "loops": loops,
        }
        if xnumel is not None:
            row.update(waves(math.ceil(xnumel / config["XBLOCK"]), in_flight))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("code", nargs="+", help="Inductor output code files")
    p.add_argument(
        "--configs",
        type=lambda s: [parse_config(v) for v in s.split(",") if v],
        default=[],
        help="XBLOCK/R0_BLOCK/num_warps[/num_stages], comma-separated",
    )
    p.add_argument("--kernel", default="", help="only kernels whose name has this")
    p.add_argument(
        "--loops",
        action="store_true",
        help="also print each loop's SASS instructions an iteration and an element",
    )
    p.add_argument("--json")
    args = p.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.code:
            code = Path(path).read_text()
            kernels = [k for k in kernel_sources(code) if args.kernel in k[0]]
            if not kernels:
                print(f"error: {path}: no Triton kernel matches", file=sys.stderr)
                return 2
            for name, source in kernels:
                for row in measure(name, source, args.configs, Path(tmp)):
                    row["file"] = os.path.basename(path)
                    results.append(row)
                    c = row["config"]
                    print(
                        f"{row['file']} {name} {c['XBLOCK']}/{c['R0_BLOCK']}/"
                        f"{c['num_warps']}w/{c['num_stages']}s: {row['reg']} registers, "
                        f"stack {row['stack']}, shared {row['shared']}; "
                        f"{row['blocks']} blocks a multiprocessor ({row['limited_by']}), "
                        f"{row['in_flight']} in flight"
                        + (
                            f"; {row['waves']} waves over {row['xnumel']} rows, "
                            f"the last {row['last_wave_fill']:.0%} full"
                            if "waves" in row
                            else ""
                        ),
                        flush=True,
                    )
                    if args.loops:
                        for loop in row["loops"]:
                            top = sorted(loop["ops"].items(), key=lambda kv: -kv[1])[:6]
                            print(
                                f"  loop: {loop['instructions']} instructions an "
                                f"iteration, {loop['per_element']:.1f} an element ("
                                + ", ".join(f"{op} {n}" for op, n in top)
                                + ")"
                            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
