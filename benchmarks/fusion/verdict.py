"""A whole model's verdict: is the compiled step faster than eager, and why not.

:func:`measure_verdict` times eager against compiled in interleaved rounds
(wall-clock per step; on a GPU also kernel time and launches from the
profiler), finds the aten op that takes most of eager's time (its self time:
device time on a GPU, host time on the CPU) and what the compile did with it
(kept it as a library call, or traced it into ops of its own) and how long
that op takes in both steps.  Where the compiled step is slower, each
:data:`SUSPECTS` entry that applies to the graphs is compiled away and timed
(a counterfactual: the option that makes the loss, measured, not guessed).
It says all this in one line with numbers.  :func:`verdict_line` is the pure
part.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _op_key(name: str) -> str:
    """``aten::_cudnn_rnn`` and ``aten._cudnn_rnn.default`` -> ``_cudnn_rnn``."""
    name = name.replace("aten::", "").replace("aten.", "")
    return name.split(".")[0]


def dominant_op(events: Any, device: str) -> dict[str, Any] | None:
    """The aten op with the most self time in a profile of eager steps
    (``prof.key_averages()``), its share of all aten self time and calls."""
    rows = []
    for e in events:
        if not e.key.startswith("aten::"):
            continue
        self_us = (
            getattr(e, "self_device_time_total", None)
            if device != "cpu"
            else e.self_cpu_time_total
        )
        if self_us is None:  # older profilers
            self_us = getattr(e, "self_cuda_time_total", 0)
        rows.append((float(self_us or 0.0), e.key, int(e.count)))
    total = sum(r[0] for r in rows)
    if not rows or total <= 0:
        return None
    us, key, count = max(rows)
    return {"op": key, "share": us / total, "calls": count}


@dataclass(frozen=True)
class Suspect:
    """An Inductor option that can make a compiled step slower than eager,
    and when it is worth timing the step without it."""

    option: str
    value: Any
    applies_to: str  # an aten op (``_op_key``) the graphs must contain
    why: str


SUSPECTS: tuple[Suspect, ...] = (
    Suspect(
        "layout_optimization",
        False,
        "convolution",
        "Inductor lays out convolutions channels-last; the weights and inputs "
        "are converted in generated kernels on every step and the library "
        "runs the convolution in that layout",
    ),
)


def suspects_for(data: dict[str, Any]) -> list[Suspect]:
    """The :data:`SUSPECTS` whose op the report's graphs contain."""
    ops = {
        _op_key(str(o.get("target")))
        for graph in data["graphs"]
        for o in graph["ops"]
        if o.get("target")
    }
    return [s for s in SUSPECTS if s.applies_to in ops]


def op_time_per_step(events: Any, op: str, device: str, steps: int) -> float:
    """Self time (host on the CPU, device on a GPU) in seconds per step of
    the aten op ``op`` in a profile of ``steps`` steps."""
    key = _op_key(op)
    total = 0.0
    for e in events:
        if not e.key.startswith("aten::") or _op_key(e.key) != key:
            continue
        us = (
            getattr(e, "self_device_time_total", None)
            if device != "cpu"
            else e.self_cpu_time_total
        )
        total += float(us or 0.0)
    return total / 1e6 / max(1, steps)


def _computes(eager_key: str, compiled_key: str) -> bool:
    """Whether a compiled graph's op is eager's op: the same aten op, or the
    generic op eager ran as a backend's (``mkldnn_convolution`` is a
    ``convolution``)."""
    return eager_key == compiled_key or eager_key.endswith("_" + compiled_key)


def what_compile_did(op: str, data: dict[str, Any]) -> dict[str, Any]:
    """How the compiled graphs compute eager's op: as library calls, inside
    generated kernels, or not at all (traced into other ops), with the
    graphs' op and kernel counts."""
    key = _op_key(op)
    library = in_generated = 0
    ops = kernels = generated = 0
    for graph in data["graphs"]:
        targets = {o["name"]: _op_key(str(o.get("target"))) for o in graph["ops"]}
        ops += sum(1 for o in graph["ops"] if o["computes"])
        functions = set()
        for k in graph["kernels"]:
            hits = sum(_computes(key, targets.get(n, "")) for n in k["ops"])
            if k["kind"] in ("extern", "fallback"):
                kernels += 1
                library += bool(hits)
            else:
                functions.add(k.get("function") or k["name"])
                in_generated += hits
        kernels += len(functions)
        generated += len(functions)
    return {
        "library_calls": library,
        "in_generated_kernels": in_generated,
        "ops": ops,
        "kernels": kernels,
        "generated": generated,
    }


def verdict_line(m: dict[str, Any]) -> str:
    """One line from the measured numbers of :func:`measure_verdict`."""
    ratio = m["eager_s"] / m["compiled_s"]
    parts = [
        f"compiled {ratio:.2f}x eager ({m['compiled_s'] * 1e3:.2f} against "
        f"{m['eager_s'] * 1e3:.2f} ms per step)"
    ]
    gpu = m.get("gpu")
    if gpu:
        parts.append(
            f"GPU time {gpu['compiled_s'] * 1e3:.2f} against {gpu['eager_s'] * 1e3:.2f} ms, "
            f"launches {gpu['compiled_launches']:.0f} against {gpu['eager_launches']:.0f}, "
            f"host beyond the GPU {max(0.0, m['compiled_s'] - gpu['compiled_s']) * 1e3:.2f} "
            f"against {max(0.0, m['eager_s'] - gpu['eager_s']) * 1e3:.2f} ms"
        )
    dom, did = m.get("dominant"), m.get("compile")
    if dom and did:
        where = "GPU" if gpu else "host"
        text = (
            f"eager spends {dom['share']:.0%} of its {where} op time in {dom['op']} "
            f"({dom['calls'] / m['profiled_steps']:g} per step)"
        )
        if did["library_calls"]:
            text += (
                f", which the compiled graphs still call ({did['library_calls']} "
                f"library calls among {did['kernels']} kernels)"
            )
            times = m.get("dominant_s")
            if times:
                text += (
                    f"; it takes {times['compiled'] * 1e3:.2f} ms per step compiled "
                    f"against {times['eager'] * 1e3:.2f} ms eager, the rest of the "
                    f"step {max(0.0, m['compiled_s'] - times['compiled']) * 1e3:.2f} "
                    f"against {max(0.0, m['eager_s'] - times['eager']) * 1e3:.2f} ms"
                )
        elif did["in_generated_kernels"]:
            text += (
                f", which the compiled graphs compute in generated kernels "
                f"({did['generated']} of {did['kernels']} kernels)"
            )
        else:
            text += (
                ", which the compiled graphs do not call: Inductor traced it into "
                f"{did['ops']} ops in {did['kernels']} kernels ({did['generated']} generated)"
            )
        parts.append(text)
    for s in m.get("suspects", ()):
        parts.append(
            f"with {s['option']}={s['value']!r} compiled takes "
            f"{s['compiled_s'] * 1e3:.2f} ms, {s['eager_s'] / s['compiled_s']:.2f}x "
            f"eager, against {s['stock_s'] * 1e3:.2f} ms with it on, in the same "
            f"rounds ({s['why']})"
        )
    return "; ".join(parts)


def measure_verdict(
    name: str,
    step: str,
    device: str,
    eager_step: Callable[[], Any],
    compiled_step: Callable[[], Any],
    data: dict[str, Any],
    lock: str | None = None,
    rounds: int = 3,
    per_round: int = 10,
    recompile: Callable[[dict[str, Any]], Callable[[], Any]] | None = None,
) -> dict[str, Any]:
    """Measure eager against compiled and give the verdict (``line``).

    ``recompile(config)`` returns the compiled step built under an Inductor
    config patch; with it, a slower compiled step is timed again without each
    suspect that applies (:func:`suspects_for`), interleaved with eager.
    """
    import torch
    from harness import (
        exclusive_device,
        interleaved_rounds,
        kernel_time_rounds,
        step_timer,
    )
    from torch.profiler import profile, ProfilerActivity

    steps = {"eager": eager_step, "compiled": compiled_step}
    wall = interleaved_rounds(steps, step_timer(device), rounds, per_round, lock)
    m: dict[str, Any] = {
        "eager_s": statistics.median(wall["eager"]),
        "compiled_s": statistics.median(wall["compiled"]),
        "wall_rounds_s": wall,
    }
    if device == "cuda":
        prof = kernel_time_rounds(steps, rounds=rounds, per_round=3, lock=lock)
        m["gpu"] = {
            "eager_s": prof["eager"]["gpu_s"]["median"],
            "compiled_s": prof["compiled"]["gpu_s"]["median"],
            "eager_launches": prof["eager"]["launches"],
            "compiled_launches": prof["compiled"]["launches"],
        }
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    m["profiled_steps"] = 3
    with exclusive_device(lock), profile(activities=activities) as p:
        for _ in range(m["profiled_steps"]):
            eager_step()
        if device == "cuda":
            torch.cuda.synchronize()
    m["dominant"] = dominant_op(p.key_averages(), device)
    if m["dominant"]:
        m["compile"] = what_compile_did(m["dominant"]["op"], data)
        if m["compile"]["library_calls"]:
            with exclusive_device(lock), profile(activities=activities) as pc:
                for _ in range(m["profiled_steps"]):
                    compiled_step()
                if device == "cuda":
                    torch.cuda.synchronize()
            op, n = m["dominant"]["op"], m["profiled_steps"]
            m["dominant_s"] = {
                "eager": op_time_per_step(p.key_averages(), op, device, n),
                "compiled": op_time_per_step(pc.key_averages(), op, device, n),
            }
    m["slower"] = m["compiled_s"] > m["eager_s"] or bool(
        m.get("gpu") and m["gpu"]["compiled_s"] > m["gpu"]["eager_s"]
    )
    if m["slower"] and recompile is not None:
        m["suspects"] = []
        for s in suspects_for(data):
            alt = recompile({s.option: s.value})
            timed = interleaved_rounds(
                {"eager": eager_step, "compiled": compiled_step, "suspect": alt},
                step_timer(device),
                rounds,
                per_round,
                lock,
            )
            m["suspects"].append(
                {
                    "option": s.option,
                    "value": s.value,
                    "why": s.why,
                    "eager_s": statistics.median(timed["eager"]),
                    "stock_s": statistics.median(timed["compiled"]),
                    "compiled_s": statistics.median(timed["suspect"]),
                }
            )
    m["line"] = verdict_line(m)
    return m
