"""Loading saved fusion reports: a capture's JSON file or a ``TORCH_TRACE`` directory.

The renderers and the diff read a *capture*: the dict that
``FusionCapture.to_json()`` returns (``schema_version``, ``producer``,
``reasons``, ``graphs``, ``graph_breaks``).  It is stored in one of two ways,
and :func:`load` reads both:

* a JSON file, as a capture was saved (``json.dump(capture.to_json(), f)``);
  one ``inductor_fusion_remarks`` payload (``{"schema_version", "graph"}``)
  is read as a capture of that one graph;
* a ``TORCH_TRACE`` directory (or one of its log files): every compiled graph
  left an ``inductor_fusion_remarks`` structured artifact there
  (``torch._inductor.fusion_remarks.sinks.publish``).  A trace log is a sequence of records, each a
  line ``<glog prefix>] {metadata JSON}`` followed, when the record has a
  payload, by the payload's lines, each indented by one tab; the metadata's
  ``has_payload`` is the payload's MD5.  The graphs are read in file order,
  files in name order.  A trace holds no Dynamo graph breaks of the fusion
  report's kind, so ``graph_breaks`` is empty; ``producer`` is the torch
  version the trace names (its ``torch_version`` artifact, or the
  ``compilation_metrics`` records, which older releases write alone).

Nothing here compiles.  Of torch, only the reason table is read (for a
trace's capture, which holds none); the schema version the viewer reads is
its own :data:`SCHEMA_VERSION`, so that the viewer imports nothing of
``fusion_report``, which imports the viewer.  Every problem with the input is
a :class:`CaptureError` with a one-line message meant for people.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, TYPE_CHECKING

from torch._inductor.fusion_remarks.taxonomy import reasons_table


if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator


__all__ = [
    "ARTIFACT",
    "SCHEMA_VERSION",
    "CaptureError",
    "check_capture",
    "load",
    "load_trace",
]

# The newest schema version of ``FusionCapture.to_json()`` (torch's
# ``fusion_report.SCHEMA_VERSION``) that the viewer reads; a test checks that
# the two agree, so a new schema version comes with a viewer that reads it.
SCHEMA_VERSION = 4

# The name of the structured artifact the fork writes per graph.
ARTIFACT = "inductor_fusion_remarks"

HOW_TO_TRACE = (
    "produce one with TORCH_TRACE=<dir> python <script> on the fusion fork "
    "(each graph Inductor compiles writes an inductor_fusion_remarks artifact; "
    "TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 compiles cached graphs again)"
)

# "V1124 05:49:51.172000 26461 path/to/file.py:64] {...}": glog's prefix, then
# the record's metadata as one JSON object.
_PREFIX = re.compile(r"[A-Z]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ")
_RECORD = re.compile(_PREFIX.pattern + r".*?\] (\{.*)$")


class CaptureError(ValueError):
    """The input is missing, unreadable or not a fusion capture (one line)."""


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The capture stored at ``path``: a JSON file, a trace log or a trace directory."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return load_trace(path)
    if not os.path.exists(path):
        raise CaptureError(f"{path}: no such file or directory")
    try:
        with open(path, "rb") as f:
            first = f.readline(4096).decode("utf-8", "replace")
    except OSError as e:
        raise CaptureError(f"{path}: cannot read: {_why(e)}") from e
    if _PREFIX.match(first):
        return load_trace(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError) as e:
        raise CaptureError(f"{path}: cannot read: {_why(e)}") from e
    except json.JSONDecodeError as e:
        raise CaptureError(
            f"{path}: not a fusion capture: not JSON ({e.msg} at line {e.lineno}) "
            "and not a TORCH_TRACE log"
        ) from e
    if isinstance(data, dict) and "graph" in data and "graphs" not in data:
        # One artifact payload, as tlparse extracts it.
        data = _capture_of(
            [_payload_graph(data, path)], f"torch (one graph from {path})"
        )
    check_capture(data, path)
    return data


def check_capture(data: object, where: str = "capture") -> None:
    """Raise :class:`CaptureError` unless ``data`` has the shape of a capture.

    The structure the renderers and the diff rely on: a ``schema_version`` no
    newer than the viewer's, and ``graphs``, a list of objects each with a
    ``compile_id``.  (``fusion_report.validate`` checks the full JSON Schema.)
    """
    if not isinstance(data, dict):
        raise CaptureError(
            f"{where}: not a fusion capture: a JSON {_json_kind(data)}, "
            "not an object with schema_version and graphs"
        )
    version = data.get("schema_version")
    if "graphs" not in data or version is None:
        missing = [k for k in ("schema_version", "graphs") if k not in data]
        raise CaptureError(
            f"{where}: not a fusion capture: no {' or '.join(missing)} "
            "(expected what FusionCapture.to_json() returns)"
        )
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CaptureError(f"{where}: bad schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise CaptureError(
            f"{where}: schema_version {version} is newer than this viewer reads "
            f"({SCHEMA_VERSION}); read it with the viewer of the torch that wrote it"
        )
    graphs = data["graphs"]
    if not isinstance(graphs, list):
        raise CaptureError(f"{where}: 'graphs' is a {_json_kind(graphs)}, not a list")
    for i, graph in enumerate(graphs):
        if not isinstance(graph, dict) or not isinstance(graph.get("compile_id"), str):
            raise CaptureError(f"{where}: graphs[{i}] is not a graph with a compile_id")


def load_trace(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The capture of every fusion artifact in a ``TORCH_TRACE`` directory or log."""
    path = os.fspath(path)
    if os.path.isdir(path):
        try:
            names = sorted(os.listdir(path))
        except OSError as e:
            raise CaptureError(f"{path}: cannot list: {_why(e)}") from e
        files = [
            os.path.join(path, n)
            for n in names
            if os.path.isfile(os.path.join(path, n)) and not n.startswith(".")
        ]
    else:
        files = [path]
    graphs: list[dict[str, Any]] = []
    versions: list[str] = []
    damaged = 0
    for file in files:
        try:
            with open(file, "rb") as f:
                lines = (line.decode("utf-8", "replace") for line in f)
                for meta, payload in _records(lines):
                    metrics = meta.get("compilation_metrics")
                    if isinstance(metrics, dict) and metrics.get("pytorch_version"):
                        versions.append(str(metrics["pytorch_version"]))
                    artifact = meta.get("artifact")
                    name = artifact.get("name") if isinstance(artifact, dict) else None
                    if name not in (ARTIFACT, "torch_version"):
                        continue
                    if payload is None or not _intact(meta, payload):
                        damaged += 1
                        continue
                    try:
                        body = json.loads(payload)
                    except json.JSONDecodeError:
                        damaged += 1
                        continue
                    if name == "torch_version":
                        if isinstance(body, dict) and body.get("pytorch_version"):
                            versions.append(str(body["pytorch_version"]))
                    else:
                        graphs.append(_payload_graph(body, file))
        except OSError as e:
            raise CaptureError(f"{file}: cannot read: {_why(e)}") from e
    if not graphs:
        where = (
            f"{path}: no {ARTIFACT} artifact in "
            f"{len(files)} file{'s' if len(files) != 1 else ''}"
        )
        if damaged:
            where += f" ({damaged} damaged record{'s' if damaged != 1 else ''})"
        raise CaptureError(f"{where}; {HOW_TO_TRACE}")
    release = " / ".join(dict.fromkeys(versions)) or "(version not in the trace)"
    data = _capture_of(graphs, f"torch {release} (from TORCH_TRACE {path})")
    check_capture(data, path)
    return data


def _capture_of(graphs: list[dict[str, Any]], producer: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "producer": producer,
        "reasons": reasons_table(),
        "graphs": graphs,
        "graph_breaks": [],
    }


def _payload_graph(body: object, where: str) -> dict[str, Any]:
    """The graph of one ``inductor_fusion_remarks`` payload, checked."""
    if not isinstance(body, dict) or not isinstance(body.get("graph"), dict):
        raise CaptureError(f"{where}: a {ARTIFACT} payload without a graph")
    version = body.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise CaptureError(
            f"{where}: a {ARTIFACT} payload of schema_version {version}, newer "
            f"than this viewer reads ({SCHEMA_VERSION})"
        )
    return body["graph"]


def _records(lines: Iterable[str]) -> Iterator[tuple[dict[str, Any], str | None]]:
    """``(metadata, payload)`` of each record of a trace log, in order."""
    meta: dict[str, Any] | None = None
    payload: list[str] | None = None
    for line in lines:
        if line.startswith("\t"):
            if payload is not None:
                payload.append(line[1:].rstrip("\n"))
            continue
        if meta is not None:
            yield meta, None if payload is None else "\n".join(payload)
        meta, payload = None, None
        match = _RECORD.match(line.rstrip("\n"))
        if match is None:
            continue
        try:
            parsed = json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
        if isinstance(parsed, dict):
            meta = parsed
            payload = [] if "has_payload" in parsed else None
    if meta is not None:
        yield meta, None if payload is None else "\n".join(payload)


def _intact(meta: dict[str, Any], payload: str) -> bool:
    """Whether ``payload`` has the MD5 its record's metadata announced."""
    expected = meta.get("has_payload")
    if not isinstance(expected, str):
        return True
    digest = hashlib.md5(payload.encode("utf-8"), usedforsecurity=False).hexdigest()
    return digest == expected


def _json_kind(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__


def _why(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
