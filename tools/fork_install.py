"""The fork in a virtualenv: its own overlay, the ``.pth`` that activates it,
and the way back to stock torch (the library under ``tools/fork.py install``,
``uninstall`` and ``activate``).

Why each environment has an overlay of its own: an overlay is links into one
torch installation (``fork_overlay``).  Shared by two environments, a build
from the second rewrote it to point at the second's torch, the first then
loaded the other environment's ``torch._C``, and once that environment moved
away the first silently ran stock torch.  So:

* ``install`` in a virtualenv outside the repository builds
  ``<its prefix>/fusion-fork/overlay-<release>``, which goes away with it,
  and every command run with that Python works on it;
* the repository's own virtualenvs (``make develop``: ``.venv``,
  ``.venv-<release>``) use ``build/overlay-<release>``, one per release;
* the ``.pth`` line names the torch the overlay was built for, and an
  interpreter whose overlay is missing or leads to another torch runs stock
  torch and says so in one line (``fork_activation.activate``);
* ``check`` and ``info`` name an overlay built for another torch, and
  ``build`` refuses to rewrite one.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
from fork_overlay import build, Fork, ForkError, inside, load_manifest


PTH_NAME = "fusion_fork_overlay.pth"
# Under a virtualenv's prefix: its overlays, one per release.
ENVIRONMENT_DIR = "fusion-fork"


def in_virtualenv() -> bool:
    return sys.prefix != sys.base_prefix


def environment_overlay(repo: Path, release: str, installing: bool = False) -> Path:
    """The overlay of this Python's environment for ``release``: the one
    installed in this virtualenv (``<prefix>/fusion-fork/overlay-<release>``),
    where there is one or ``install`` is making it in a virtualenv outside the
    repository; else the repository's ``build/overlay-<release>``."""
    own = Path(sys.prefix) / ENVIRONMENT_DIR / f"overlay-{release}"
    if in_virtualenv() and (
        own.is_dir() or (installing and not inside(Path(sys.prefix), repo))
    ):
        return own
    return repo / "build" / f"overlay-{release}"


def foreign_overlay(fork: Fork) -> str | None:
    """Why ``fork.overlay`` belongs to another torch than ``fork.pristine``
    (None when it is this one's, or not built yet)."""
    built_for = load_manifest(fork).get("torch_dir")
    if not built_for or Path(built_for).resolve() == fork.pristine.resolve():
        return None
    return (
        f"overlay {fork.overlay} is built for the torch at {built_for}, not this "
        f"Python's ({fork.pristine}); give this environment its own with "
        f"`{sys.executable} tools/fork.py install`"
    )


def pth_line(overlay: Path, torch_dir: Path | None = None) -> str:
    """The .pth line that puts ``overlay`` first on sys.path, ahead of
    PYTHONPATH, unless FUSION_FORK_DISABLE is 1 or true (stock torch in the
    same virtualenv, to compare; importing a fork module then says why).

    The line loads the fork's activation from this repository by its path
    (``tools/fork_activation.py``, plumbing that imports no torch and stays
    out of ``torch/``; through its loader rather than ``importlib.util``,
    which would cost every start of Python some milliseconds) and calls its
    ``activate`` with the torch the overlay is for (``torch_dir``).  Whatever
    goes wrong there (an overlay removed, one of another environment) is one
    line on stderr and stock torch, never a broken interpreter start; a bad
    FUSION_FORK_DISABLE leaves the fork on, with one line that names it.
    """
    switches = Path(__file__).resolve().parent / "fork_activation.py"
    torch_arg = "" if torch_dir is None else f", torch_dir={str(torch_dir)!r}"
    # once per process: site.py may read one site-packages twice (a
    # virtualenv's lib64 is a link to its lib)
    code = (
        "try:\n"
        " if '_fusion_fork_activation' not in sys.modules:\n"
        "  from importlib.machinery import SourceFileLoader\n"
        "  m = sys.modules['_fusion_fork_activation'] = type(sys)('_fusion_fork_activation')\n"
        f"  m.__file__ = {str(switches)!r}\n"
        "  SourceFileLoader(m.__name__, m.__file__).exec_module(m)\n"
        f"  m.activate({str(overlay)!r}{torch_arg})\n"
        "except Exception as e:\n"
        " sys.stderr.write('fusion fork: not activated, stock torch (%s: %s); '\n"
        "  'reinstall it with this environment\\'s Python: '\n"
        "  'python tools/fork.py install\\n' % (type(e).__name__, e))\n"
    )
    # exec in a namespace of its own: site.py runs .pth lines inside its code
    return f"import sys; exec({code!r}, {{'sys': sys}})\n"


def _pth() -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / PTH_NAME


def _require_virtualenv() -> None:
    if not in_virtualenv():
        raise ForkError(
            f"{sys.executable} is not a virtualenv's interpreter; refusing to change it.\n"
            "  Use `make develop` (which makes .venv), a virtualenv of your own with "
            "`python tools/fork.py install`, or PYTHONPATH=<overlay> for another Python."
        )


def activate(fork: Fork) -> Path:
    """Put the overlay first on sys.path of this virtualenv through a .pth file."""
    _require_virtualenv()
    pth = _pth()
    line = pth_line(fork.overlay, fork.pristine)
    if not pth.exists() or pth.read_text() != line:
        pth.write_text(line)
    return pth


def install(fork: Fork) -> Path:
    """Build this environment's overlay and activate it (``install``)."""
    _require_virtualenv()
    build(fork, quiet=True)
    return activate(fork)


def uninstall(fork: Fork) -> list[str]:
    """Stock torch again in this virtualenv: the .pth goes, and the overlay
    too when it lives in the environment (``<prefix>/fusion-fork``); the
    repository's own ``build/`` overlays stay for the other tools."""
    done = []
    pth = _pth()
    if pth.exists():
        pth.unlink()
        done.append(f"removed {pth}")
    own = Path(sys.prefix) / ENVIRONMENT_DIR
    if in_virtualenv() and inside(fork.overlay, own) and fork.overlay.exists():
        shutil.rmtree(fork.overlay)
        done.append(f"removed {fork.overlay}")
        if own.is_dir() and not any(own.iterdir()):
            own.rmdir()
    return done
