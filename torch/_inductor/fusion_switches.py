"""The fusion fork's environment switches, read by one parser.

Every environment variable the fork reads as a switch is listed here:

* booleans (:data:`BOOL_SWITCHES`) take ``0``, ``1``, ``true`` or ``false``
  in any case; empty or unset means the default;
* integers (:data:`INT_SWITCHES`) take a whole number; empty or unset means
  the default;
* the cost model of the fusion remarks (:data:`COST_MODEL_SWITCH`) takes
  ``measure``, ``off`` or ``<GB/s>,<us per launch>`` (:func:`parse_cost_model`).

Any other value is an error, raised as a ``ValueError`` whose message is one
line naming the variable, the value and what is accepted.
``torch._inductor.config`` calls :func:`stop_on_bad_environ` when it is
imported, so a bad value stops the first import, not a compile, with that one
line on stderr and no traceback through torch's imports.

``FUSION_FORK_DISABLE`` turns the whole fork off.  The fork's ``.pth`` line
(``tools/fork.py``'s ``pth_line``) loads this file by its path, before torch
can be imported, and calls :func:`activate`; this module therefore imports
nothing from torch, and nothing but the standard library.
"""

from __future__ import annotations

import os
import sys


# Read at every interpreter start of the fork's virtualenv (the .pth): no
# import beyond what Python has already loaded by then.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


__all__ = [
    "BOOL_SWITCHES",
    "COST_MODEL_SWITCH",
    "FORK_DISABLE",
    "FORK_MODULES",
    "INT_SWITCHES",
    "ForkDisabledFinder",
    "activate",
    "check_environ",
    "env_bool",
    "env_cost_model",
    "env_int",
    "fork_disabled",
    "parse_bool",
    "parse_cost_model",
    "parse_int",
    "stop_on_bad_environ",
]

FORK_DISABLE = "FUSION_FORK_DISABLE"

# variable -> what it switches (for the docs and the tests)
BOOL_SWITCHES: dict[str, str] = {
    "TORCHINDUCTOR_FUSION_ONLY": "torch._inductor.config.fusion_only",
    "TORCHINDUCTOR_NO_FUSION": "torch._inductor.config.no_fusion",
    "TORCHINDUCTOR_LAUNCH_BOUND_COMBO_KERNELS": (
        "torch._inductor.config.launch_bound_combo_kernels"
    ),
    "TORCHINDUCTOR_ONE_PASS_REDUCTIONS": "torch._inductor.config.one_pass_reductions",
    "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_FAST_EXP": (
        "torch._inductor.config.one_pass_reductions_fast_exp"
    ),
    "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_LEAN_COMBINE": (
        "torch._inductor.config.one_pass_reductions_lean_combine"
    ),
    "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_ALIGNED_LOADS": (
        "torch._inductor.config.one_pass_reductions_aligned_loads"
    ),
    "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_SPLIT_ROWS": (
        "torch._inductor.config.one_pass_reductions_split_rows"
    ),
    FORK_DISABLE: "the fusion fork itself (1: stock torch)",
}

# variable -> (what it sets, lowest accepted value)
INT_SWITCHES: dict[str, tuple[str, int]] = {
    "TORCHINDUCTOR_LAUNCH_BOUND_COMBO_MAX_BYTES": (
        "torch._inductor.config.launch_bound_combo_max_bytes",
        0,
    ),
    "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_ELEMENTS_PER_THREAD": (
        "torch._inductor.config.one_pass_reductions_elements_per_thread",
        1,
    ),
}

# what the fusion remarks price a missed fusion at (fusion_remarks/costs.py)
COST_MODEL_SWITCH = "TORCHINDUCTOR_FUSION_COST_MODEL"

# The modules (and packages) the fork adds to torch: with the fork off, an
# import of one of them says so (ForkDisabledFinder).
FORK_MODULES: tuple[str, ...] = (
    "torch._fork",
    "torch._inductor.fusion_ablation",
    "torch._inductor.fusion_ablation_options",
    "torch._inductor.fusion_remarks",
    "torch._inductor.fusion_report",
    "torch._inductor.fusion_switches",
    "torch._inductor.launch_bound_combo",
    "torch._inductor.one_pass_reductions",
    "torch._inductor.one_pass_reduction_aligned_loops",
    "torch._inductor.one_pass_reduction_decision",
    "torch._inductor.one_pass_reduction_remarks",
    "torch._inductor.one_pass_reduction_rows",
    "torch._inductor.one_pass_reduction_split_rows",
)

_TRUE = ("1", "true")
_FALSE = ("0", "false")
_ACCEPTED_BOOL = "use 0, 1, true or false (any case), or leave it empty or unset"


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def parse_bool(name: str, value: str | None) -> bool | None:
    """``value`` of the variable ``name`` as a bool; None if empty or unset."""
    if value is None or not value.strip():
        return None
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{name}={value!r} is not a boolean: {_ACCEPTED_BOOL}")


def parse_int(name: str, value: str | None, lowest: int = 0) -> int | None:
    """``value`` of the variable ``name`` as an int >= ``lowest``; None if
    empty or unset."""
    if value is None or not value.strip():
        return None
    try:
        number: int | None = int(value.strip())
    except ValueError:
        number = None
    if number is None or number < lowest:
        raise ValueError(
            f"{name}={value!r} is not an integer >= {lowest}: use a whole number "
            "such as 4194304, or leave it empty or unset"
        )
    return number


_ACCEPTED_COST_MODEL = (
    "use measure (copy bandwidth and launch cost measured where the report is "
    "read, by fusion_viewer), off (bytes and launches only), or "
    "<GB/s>,<us per launch> such as 3000,2.5, or leave it empty or unset"
)


def parse_cost_model(name: str, value: str | None) -> str | None:
    """``value`` of ``name`` as a cost model spec: ``"measure"``, ``"off"``
    or ``"<GB/s>,<us>"`` (two positive numbers, normalized); None if empty or
    unset."""
    if value is None or not value.strip():
        return None
    word = value.strip().lower()
    if word in ("measure", "off"):
        return word
    parts = word.split(",")
    try:
        numbers = [float(p) for p in parts] if len(parts) == 2 else []
    except ValueError:
        numbers = []
    if len(numbers) != 2 or not all(n > 0 and n != float("inf") for n in numbers):
        raise ValueError(
            f"{name}={value!r} is not a cost model: {_ACCEPTED_COST_MODEL}"
        )
    return f"{numbers[0]:g},{numbers[1]:g}"


def env_bool(
    name: str, default: bool = False, environ: Mapping[str, str] | None = None
) -> bool:
    """The boolean switch ``name`` from the environment, or ``default``."""
    value = parse_bool(name, _environ(environ).get(name))
    return default if value is None else value


def env_int(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """The integer switch ``name`` from the environment, or ``default``."""
    lowest = INT_SWITCHES[name][1] if name in INT_SWITCHES else 0
    value = parse_int(name, _environ(environ).get(name), lowest)
    return default if value is None else value


def env_cost_model(
    name: str = COST_MODEL_SWITCH,
    default: str = "measure",
    environ: Mapping[str, str] | None = None,
) -> str:
    """The cost model switch from the environment, or ``default``."""
    value = parse_cost_model(name, _environ(environ).get(name))
    return default if value is None else value


def check_environ(environ: Mapping[str, str] | None = None) -> None:
    """Raise a one-line ValueError for the first switch with a bad value."""
    env = _environ(environ)
    try:
        for name in BOOL_SWITCHES:
            parse_bool(name, env.get(name))
        for name, (_, lowest) in INT_SWITCHES.items():
            parse_int(name, env.get(name), lowest)
        parse_cost_model(COST_MODEL_SWITCH, env.get(COST_MODEL_SWITCH))
    except ValueError as e:
        # raised again here, so that the traceback under the message is short
        raise ValueError(str(e)) from None


def stop_on_bad_environ(environ: Mapping[str, str] | None = None) -> None:
    """:func:`check_environ` for the import of ``torch._inductor.config``: a bad
    value exits with its one line on stderr (``SystemExit``, status 1).

    Raised during an import, a ValueError would print a traceback through
    torch's import chain above the one line that matters; ``SystemExit``
    prints the line alone, and an interactive session that catches it (a
    notebook) shows the same line.
    """
    try:
        check_environ(environ)
    except ValueError as e:
        raise SystemExit(f"torch._inductor.config: {e}") from None


def fork_disabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``FUSION_FORK_DISABLE`` turns the fork off (ValueError if bad)."""
    return env_bool(FORK_DISABLE, False, environ)


def _overlay_problem(overlay: str, torch_dir: str) -> str | None:
    """Why ``overlay`` cannot serve the torch at ``torch_dir``, or None.

    The overlay's ``torch/__init__.py`` is a link to its torch's own file:
    one ``realpath``, cheap enough for every interpreter start.
    """
    entry = os.path.join(overlay, "torch", "__init__.py")
    if not os.path.lexists(entry):
        return f"no overlay at {overlay}"
    target = os.path.realpath(entry)
    if not os.path.exists(target):
        return f"the overlay {overlay} leads to {target}, which is gone"
    if target != os.path.realpath(os.path.join(torch_dir, "__init__.py")):
        return (
            f"the overlay {overlay} is built for the torch at "
            f"{os.path.dirname(target)}, not this environment's {torch_dir}"
        )
    return None


class ForkDisabledFinder:
    """The last entry of ``sys.meta_path`` while the fork is off: asked only
    for modules no other finder found, it turns a missing fork module into an
    ImportError that says why (a ``PYTHONPATH`` overlay, as ``tools/fork.py
    run`` sets, is found first and wins).  A plain ImportError, not
    ModuleNotFoundError, which ``from torch._inductor import fusion_report``
    would turn into "cannot import name"; ``importlib.util.find_spec`` of a
    fork module raises it too, rather than return None."""

    def __init__(self, value: str) -> None:
        self.value = value

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if any(fullname == m or fullname.startswith(m + ".") for m in FORK_MODULES):
            raise ImportError(
                f"{fullname} is part of the fusion fork, which is off in this "
                f"process: {FORK_DISABLE}={self.value!r} (unset it or set it to 0 "
                "to use the fork)",
                name=fullname,
            )
        return None

    def invalidate_caches(self) -> None:
        pass


def activate(
    overlay: str,
    environ: Mapping[str, str] | None = None,
    torch_dir: str | None = None,
) -> None:
    """What the fork's ``.pth`` line does at interpreter start.

    Fork on (``FUSION_FORK_DISABLE`` unset, empty, 0 or false): the overlay
    goes first on ``sys.path``.  Off (1 or true): stock torch, and importing a
    fork module raises an ImportError naming the variable.  A bad value leaves
    the fork on, so that importing ``torch._inductor.config`` stops with the
    one-line error every switch gives; Python itself still starts.

    ``torch_dir`` is the torch this environment's overlay was installed for
    (``tools/fork.py install``).  An overlay whose torch is another one (its
    links lead elsewhere, or nowhere: that environment moved away) is not
    put on ``sys.path``: this process runs stock torch and says so in one
    line, rather than mixing two installations.
    """
    env = _environ(environ)
    if torch_dir is not None:
        problem = _overlay_problem(overlay, torch_dir)
        if problem is not None:
            sys.stderr.write(
                f"fusion fork: not activated, stock torch: {problem}; reinstall "
                "it with this environment's Python: python tools/fork.py install\n"
            )
            return
    try:
        off = fork_disabled(env)
    except ValueError:
        off = False
    if off:
        # (by name: the .pth loads this file under a name of its own)
        if not any(type(f).__name__ == "ForkDisabledFinder" for f in sys.meta_path):
            sys.meta_path.append(ForkDisabledFinder(env.get(FORK_DISABLE, "")))
    else:
        sys.path.insert(0, overlay)
