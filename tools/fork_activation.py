"""The fusion fork's activation in a virtualenv: what its ``.pth`` line runs.

Fork plumbing, never exported: an upstream torch has no overlay to put first.
``tools/fork_install.py`` writes a ``.pth`` line that loads this file by its
path at every interpreter start of the virtualenv, before torch can be
imported, and calls :func:`activate`; so this module imports nothing but the
standard library, and costs one ``realpath`` a start.

``FUSION_FORK_DISABLE`` turns the whole fork off (1 or true): stock torch,
and importing one of the fork's modules (:data:`FORK_MODULES`) raises an
ImportError that names the variable.  A bad value leaves the fork on and
says so in one line on stderr; Python itself always starts.
"""

from __future__ import annotations

import os
import sys


TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


__all__ = [
    "FORK_DISABLE",
    "FORK_MODULES",
    "ForkDisabledFinder",
    "activate",
    "fork_disabled",
]

FORK_DISABLE = "FUSION_FORK_DISABLE"

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


def fork_disabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``FUSION_FORK_DISABLE`` turns the fork off: 1 or true (any
    case); empty, unset, 0 or false keep it on; anything else is a
    ValueError of one line."""
    value = (os.environ if environ is None else environ).get(FORK_DISABLE, "")
    word = value.strip().lower()
    if word in ("", "0", "false"):
        return False
    if word in ("1", "true"):
        return True
    raise ValueError(
        f"{FORK_DISABLE}={value!r} is not a boolean: use 0, 1, true or false "
        "(any case), or leave it empty or unset"
    )


def _overlay_problem(overlay: str, torch_dir: str | None) -> str | None:
    """Why ``overlay`` cannot serve the torch at ``torch_dir`` (None: any), or None.

    The overlay's ``torch/__init__.py`` is a link to its torch's own file:
    one ``realpath``, cheap enough for every interpreter start.
    """
    entry = os.path.join(overlay, "torch", "__init__.py")
    if not os.path.lexists(entry):
        return f"no overlay at {overlay}"
    target = os.path.realpath(entry)
    if not os.path.exists(target):
        return f"the overlay {overlay} leads to {target}, which is gone"
    if torch_dir is not None and target != os.path.realpath(
        os.path.join(torch_dir, "__init__.py")
    ):
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
    env = os.environ if environ is None else environ
    problem = _overlay_problem(overlay, torch_dir)
    if problem is not None:
        sys.stderr.write(
            f"fusion fork: not activated, stock torch: {problem}; reinstall "
            "it with this environment's Python: python tools/fork.py install\n"
        )
        return
    try:
        off = fork_disabled(env)
    except ValueError as e:
        sys.stderr.write(f"fusion fork: {e}; the fork stays on\n")
        off = False
    if off:
        # (by name: the .pth loads this file under a name of its own)
        if not any(type(f).__name__ == "ForkDisabledFinder" for f in sys.meta_path):
            sys.meta_path.append(ForkDisabledFinder(env.get(FORK_DISABLE, "")))
    else:
        sys.path.insert(0, overlay)
