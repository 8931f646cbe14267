"""Identity of the fusion fork: which repository revision and patches are live.

The fork runs as an overlay over the installed torch package, 2.14.1 or 2.11.0 (see
``tools/fork.py`` in the fork's repository).  The overlay's build records its
identity in ``.fork/manifest.json`` beside the overlaid ``torch`` directory;
this module reads it once, so that ``torch.version.fork`` can say which fork a
log, report or benchmark came from.  It is fork-only and never exported
upstream.
"""

from __future__ import annotations

import dataclasses
import json
import os


__all__ = ["FORK_INFO", "ForkInfo"]


@dataclasses.dataclass(frozen=True)
class ForkInfo:
    """What ``tools/fork.py build`` recorded about the running overlay."""

    revision: str  # git revision of the fork's repository, "-dirty" if edited
    source_digest: str  # hash of the patches and new files that are live
    patches: tuple[str, ...]  # upstream files modified by a patch
    new_files: tuple[str, ...]  # files the fork adds to the torch package
    overlay: str  # the directory that shadows the installed torch

    def __str__(self) -> str:
        return f"fusion-fork {self.revision} (sources {self.source_digest})"


def _load() -> ForkInfo:
    overlay = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        with open(os.path.join(overlay, ".fork", "manifest.json")) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = {}
    return ForkInfo(
        revision=data.get("revision", "unknown"),
        source_digest=data.get("source_digest", "unknown"),
        patches=tuple(data.get("patches", ())),
        new_files=tuple(data.get("new_files", ())),
        overlay=overlay,
    )


FORK_INFO = _load()
