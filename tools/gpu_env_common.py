"""What both halves of ``gpu_env.py`` share: the repository, the user error, names.

The receiving half runs on the GPU machine with the standard library only, so
this module imports nothing else; the packing half builds on it too.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent


class UserError(Exception):
    """A mistake of the caller's, reported as one ``error:`` line and exit 2."""


def normalize(name: str) -> str:
    """A package name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
