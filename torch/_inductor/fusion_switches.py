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

Imported by ``config.py`` before anything else of Inductor: the standard
library only.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Mapping


__all__ = [
    "BOOL_SWITCHES",
    "COST_MODEL_SWITCH",
    "INT_SWITCHES",
    "check_environ",
    "env_bool",
    "env_cost_model",
    "env_int",
    "parse_bool",
    "parse_cost_model",
    "parse_int",
    "stop_on_bad_environ",
]

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
