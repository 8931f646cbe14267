"""The fusion fork's environment switches, read by one parser.

Each option of ``torch._inductor.config`` that a fork feature adds and the
environment may set is read here, by :func:`env_bool`, :func:`env_int` or
:func:`env_cost_model`, where ``config.py`` defines it; each read enters the
switch in :data:`SWITCHES`, so that the table lists what the present features
read and nothing else:

* booleans take ``0``, ``1``, ``true`` or ``false`` in any case; empty or
  unset means the default;
* integers take a whole number at least the switch's lowest; empty or unset
  means the default;
* the cost model of the fusion remarks (:data:`COST_MODEL_SWITCH`) takes
  ``measure``, ``off`` or ``<GB/s>,<us per launch>`` (:func:`parse_cost_model`).

Any other value is an error whose message is one line naming the variable,
the value and what is accepted.  Read from the process environment, a bad
value leaves the option at its default and is kept (:func:`bad_environ`):
the first compile raises it (:func:`raise_bad_environ`, called by the fusion
remarks' hook at ``compile_fx``), so that importing torch never fails on it
and the error comes where the option would have been used.

Imported by ``config.py`` before anything else of Inductor: the standard
library only.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, TypeVar


if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

_T = TypeVar("_T")


__all__ = [
    "COST_MODEL_SWITCH",
    "SWITCHES",
    "Switch",
    "bad_environ",
    "check_environ",
    "env_bool",
    "env_cost_model",
    "env_int",
    "parse_bool",
    "parse_cost_model",
    "parse_int",
    "raise_bad_environ",
]


@dataclasses.dataclass(frozen=True)
class Switch:
    """One environment variable a feature reads: its kind (``"bool"``,
    ``"int"`` or ``"cost_model"``) and, for an integer, its lowest value."""

    name: str
    kind: str
    lowest: int = 0


# every switch read so far, by name (config.py reads each where it defines
# the option it sets)
SWITCHES: dict[str, Switch] = {}

# what the fusion remarks price a missed fusion at (fusion_remarks/costs.py)
COST_MODEL_SWITCH = "TORCHINDUCTOR_FUSION_COST_MODEL"

# the one-line errors of the bad values read from the process environment, in
# the order they were read
_bad_values: list[str] = []

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


def _read(
    switch: Switch,
    parse: Callable[[str | None], _T | None],
    default: _T,
    environ: Mapping[str, str] | None,
) -> _T:
    SWITCHES.setdefault(switch.name, switch)
    try:
        value = parse(_environ(environ).get(switch.name))
    except ValueError as e:
        if environ is not None:
            raise
        # the process environment: the default now, the error at the first
        # compile (raise_bad_environ)
        _bad_values.append(str(e))
        return default
    return default if value is None else value


def env_bool(
    name: str, default: bool = False, environ: Mapping[str, str] | None = None
) -> bool:
    """The boolean switch ``name`` from the environment, or ``default``.  A
    bad value raises ``ValueError`` when ``environ`` is given; read from the
    process environment it is kept for :func:`raise_bad_environ`."""
    return _read(Switch(name, "bool"), lambda v: parse_bool(name, v), default, environ)


def env_int(
    name: str,
    default: int,
    environ: Mapping[str, str] | None = None,
    lowest: int = 0,
) -> int:
    """The integer switch ``name`` (at least ``lowest``) from the environment,
    or ``default``; a bad value as for :func:`env_bool`."""
    return _read(
        Switch(name, "int", lowest),
        lambda v: parse_int(name, v, lowest),
        default,
        environ,
    )


def env_cost_model(
    name: str = COST_MODEL_SWITCH,
    default: str = "measure",
    environ: Mapping[str, str] | None = None,
) -> str:
    """The cost model switch from the environment, or ``default``; a bad
    value as for :func:`env_bool`."""
    return _read(
        Switch(name, "cost_model"),
        lambda v: parse_cost_model(name, v),
        default,
        environ,
    )


def check_environ(environ: Mapping[str, str] | None = None) -> None:
    """Raise a one-line ValueError for the first switch of :data:`SWITCHES`
    with a bad value in ``environ`` (the process environment if None)."""
    env = _environ(environ)
    try:
        for switch in SWITCHES.values():
            value = env.get(switch.name)
            if switch.kind == "bool":
                parse_bool(switch.name, value)
            elif switch.kind == "int":
                parse_int(switch.name, value, switch.lowest)
            else:
                parse_cost_model(switch.name, value)
    except ValueError as e:
        # raised again here, so that the traceback under the message is short
        raise ValueError(str(e)) from None


def bad_environ() -> str | None:
    """The one-line error of the first bad value read from the process
    environment, or None."""
    return _bad_values[0] if _bad_values else None


def raise_bad_environ() -> None:
    """Raise the first bad value read from the process environment as a
    one-line ``ValueError`` (``torch._inductor.config: NAME='value' is not
    ...``); nothing if every value read was good."""
    if _bad_values:
        raise ValueError(f"torch._inductor.config: {_bad_values[0]}")
