"""The differences between the torch releases the fusion fork supports.

The fork's new modules are shared by every supported release (2.11.0, the GPU
machine's, and 2.14.1, the current one); each release has its own patch series
(``patches/<release>/`` in the fork's repository).  Where the shared modules
must behave differently on the two releases, the difference lives here, named
after what changed, and the rest of the code asks this module rather than
comparing version strings of its own.
"""

from __future__ import annotations

from typing import Any

import torch

from .release_range import release_key, ReleaseRange


__all__ = [
    "COMBO_GROUPS_MEMORY_GATED",
    "RELEASE",
    "SUPPORTED_RELEASES",
    "applies_here",
    "combo_context",
    "combo_step_gates",
    "release_at_least",
    "scalar_accumulators_on",
    "size_hint",
]

# Releases with a patch series, oldest first.  tools/fork.py, the Makefile and
# requirements/ name them too; tools/test/test_fork.py checks they agree.
SUPPORTED_RELEASES: tuple[str, ...] = ("2.14.1", "2.15.0")


def _release_of(version: str) -> str:
    """``"2.14.1+cu130"`` -> ``"2.14.1"``."""
    return version.split("+")[0]


# The release this process runs on.
RELEASE: str = _release_of(str(torch.__version__))


def release_at_least(release: str) -> bool:
    """True on ``release`` and later ones: the test of every difference below."""
    return release_key(RELEASE) >= release_key(release)


def applies_here(releases: ReleaseRange) -> bool:
    """Whether an entry tagged with ``releases`` applies to the running release."""
    return RELEASE in releases


def size_hint(sizevars: Any, expr: Any, fallback: int = 0) -> int:
    """A concrete size for ``expr`` for estimates that add no guard:
    ``SizeVarAllocator.size_hint`` on 2.11.0, renamed ``optimization_hint`` in
    2.14.1."""
    if hasattr(sizevars, "size_hint"):  # 2.11.0
        return int(sizevars.size_hint(expr, fallback=fallback))
    return int(sizevars.optimization_hint(expr, fallback=fallback))


def combo_context(scheduler: Any, node: Any) -> tuple[object, ...]:
    """What the kernels of one combo kernel must share besides their device:
    2.14.1 places scheduler nodes on CUDA streams and memory pools
    (``Scheduler.get_node_stream``, ``Scheduler.node_to_mempool``) and
    combines only nodes of one stream and one pool; 2.11.0 has neither."""
    if not hasattr(scheduler, "node_to_mempool"):  # 2.11.0
        return ()
    return (scheduler.get_node_stream(node), scheduler.node_to_mempool.get(node))


# Options of upstream's combo-kernel step (Scheduler.create_combo_kernel_nodes)
# that may split or refuse a group, and the value at which each is off.
# 2.14.1 added the distance window and the peak-memory gate; 2.11.0 has the
# benchmark alone.
_COMBO_STEP_GATES_OFF: dict[str, object] = {
    "benchmark_combo_kernel": False,
    "combo_kernel_max_distance": -1,
    "combo_kernel_peak_memory_pct_threshold": None,
    "combo_kernel_peak_memory_increase_gb": None,
}


# 2.15.0 rewrote the combo-kernel step: groups handed to it (the launch-bound
# combo pass's, as a custom grouping callback's) take its path without the
# distance window and the peak-memory gate, which only its own grouping has.
COMBO_GROUPS_MEMORY_GATED: bool = not release_at_least("2.15.0")


def combo_step_gates() -> dict[str, object]:
    """The gates of upstream's combo-kernel step that are on for the pass's
    groups, by option name, with their values: what may have left a group's
    kernels apart."""
    from . import config

    gates: dict[str, object] = {}
    for name, off in _COMBO_STEP_GATES_OFF.items():
        if not COMBO_GROUPS_MEMORY_GATED and name != "benchmark_combo_kernel":
            continue
        value = getattr(config, name, off)
        if name == "combo_kernel_max_distance" and value < 0:
            continue
        if value != off:
            gates[name] = value
    return gates


def scalar_accumulators_on() -> bool:
    """2.15.0's ``config.triton.scalar_accumulators`` (on by default): a
    large looped online softmax reduces each block to per-row scalars before
    it combines them (``online_softmax_reduce_scalar_combine``), so the
    per-element combine that the one-pass pass's lean helper replaces is not
    emitted.  Strict signed zeros keep upstream's vector path."""
    from . import config

    on = bool(getattr(config.triton, "scalar_accumulators", False))
    return on and not config.strict_signed_zero
