"""The page of a capture made in this process.

``fusion_viewer.page.save_html(rep, "report.html")`` writes the self-contained page
of a ``torch._inductor.fusion_report`` capture (or of its ``to_json()``), as
``python -m fusion_viewer render`` does for a saved one.  Torch never imports
the viewer: the capture hands over only its JSON.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from . import common, costs, html


def save_html(capture: Any, path: str | os.PathLike[str]) -> None:
    """Write the page of ``capture`` (a ``FusionCapture`` or its
    ``to_json()``) to ``path``, titled with the file's name.  Graphs captured
    under ``config.fusion_cost_model = "measure"`` are priced first, on this
    machine, the one that compiled them (:func:`costs.price_measured`): the
    compile itself times nothing.  A path that cannot be written is an
    ``OSError`` naming it, raised before any of that."""
    common.check_writable(path)
    # (pricing fills the JSON in: a caller's own dict is left as it was)
    data = copy.deepcopy(capture) if isinstance(capture, dict) else capture.to_json()
    html.save_html(costs.price_measured(data), path)
