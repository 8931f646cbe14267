"""The differences between the torch releases the fusion fork supports.

The fork's new modules are shared by every supported release (2.11.0, the GPU
machine's, and 2.14.1, the current one); each release has its own patch series
(``patches/<release>/`` in the fork's repository).  Where the shared modules
must behave differently on the two releases, the difference lives here, named
after what changed, and the rest of the code asks this module rather than
comparing version strings of its own.
"""

from __future__ import annotations

import torch


__all__ = ["RELEASE", "SUPPORTED_RELEASES", "release_at_least"]

# Releases with a patch series, oldest first (tools/fork.py keeps the same list).
SUPPORTED_RELEASES: tuple[str, ...] = ("2.11.0", "2.14.1")


def _release_of(version: str) -> str:
    """``"2.14.1+cu130"`` -> ``"2.14.1"``."""
    return version.split("+")[0]


# The release this process runs on.
RELEASE: str = _release_of(str(torch.__version__))


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split(".")[:3] if part.isdigit())


def release_at_least(release: str) -> bool:
    """True on ``release`` and later ones: the test of every difference below."""
    return _key(RELEASE) >= _key(release)
