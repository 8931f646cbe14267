"""``python -m fusion_viewer``: render and compare saved fusion reports.

Three commands, the first two in the manner of LLVM's opt-viewer and opt-diff:

``render IN -o OUT.html``
    the page ``fusion_viewer.page.save_html`` writes (:mod:`.html`), from a saved
    capture (JSON) or a ``TORCH_TRACE`` directory (:mod:`.store`), titled
    with the input's name (``resnet18.json``: resnet18);
``diff A B [-o OUT.html]``
    which kernel boundaries appeared, disappeared or changed reason between
    two captures, and each graph's kernel count (:mod:`.diff`), printed as
    text and, with ``-o``, written as a page;
``study DIR``
    the pages of a fusion study (:mod:`.study`): ``DIR/index.html`` and
    ``DIR/cases/<case>.html``, from the ``study.json`` and ``captures/`` that
    ``benchmarks/fusion/study.py --out DIR`` wrote.

A problem with the input or the output (a missing file, a file that is not a
capture, a trace without fusion artifacts, an unwritable path) is one line on
stderr and exit status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from . import common, costs, diff as render_diff, html as render_html, store, study


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


__all__ = ["main"]

PROG = "python -m fusion_viewer"
EXIT_ERROR = 2


class _Fail(Exception):
    """A problem to report on one line (exit status 2)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Render and compare TorchInductor fusion reports saved as JSON "
            "(FusionCapture.to_json()) or in a TORCH_TRACE directory, and "
            "render the pages of a fusion study."
        ),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    render = commands.add_parser(
        "render",
        help="write the HTML page of a capture",
        description=(
            "Write the page fusion_viewer.page.save_html writes, from a capture's "
            "JSON file or a TORCH_TRACE directory (every graph's "
            "inductor_fusion_remarks artifact in every log file)."
        ),
    )
    render.add_argument("input", metavar="IN", help="capture JSON or TORCH_TRACE dir")
    render.add_argument(
        "-o", "--output", metavar="OUT.html", required=True, help="the page to write"
    )
    render.add_argument(
        "--measure",
        action="store_true",
        help="price the graphs captured under fusion_cost_model='measure' with "
        "this machine's measured cost model (use it on the machine that compiled "
        "them, as fusion_viewer.page.save_html does)",
    )
    compare = commands.add_parser(
        "diff",
        help="what fused or split between two captures",
        description=(
            "Which kernel boundaries appeared, disappeared or changed reason "
            "from capture A to capture B, and each graph's kernel count; "
            "graphs matched by compile id, boundaries by their ops' targets "
            "and source lines.  Printed as text; -o also writes a page."
        ),
    )
    compare.add_argument("a", metavar="A", help="capture JSON or TORCH_TRACE dir")
    compare.add_argument("b", metavar="B", help="capture JSON or TORCH_TRACE dir")
    compare.add_argument(
        "-o", "--output", metavar="OUT.html", help="also write the diff as a page"
    )
    pages = commands.add_parser(
        "study",
        help="write the pages of a fusion study",
        description=(
            "Write DIR/index.html and one page per case, DIR/cases/<case>.html, "
            "from the study.json and captures/<case>.json that "
            "benchmarks/fusion/study.py --out DIR wrote."
        ),
    )
    pages.add_argument("directory", metavar="DIR", help="a study's output directory")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "render":
            return _render(args.input, args.output, args.measure)
        if args.command == "study":
            return _study(args.directory)
        return _diff(args.a, args.b, args.output)
    except (_Fail, store.CaptureError, study.StudyError) as e:
        print(f"{PROG.split()[-1]}: error: {e}", file=sys.stderr)
        return EXIT_ERROR


def _render(source: str, output: str, measure: bool = False) -> int:
    _check_writable(output)
    data = store.load(source)
    if measure:
        costs.price_measured(data)
    # Titled with the input's name: "resnet18.json" -> resnet18, a
    # TORCH_TRACE directory by its own name.
    name = os.path.basename(os.path.normpath(source))
    name = name[: -len(".json")] if name.endswith(".json") else name
    _write(output, lambda: render_html.save_html(data, output, name))
    graphs = data.get("graphs") or []
    print(f"wrote {output}: {len(graphs)} graph{'s' if len(graphs) != 1 else ''}")
    return 0


def _diff(a: str, b: str, output: str | None) -> int:
    if output is not None:
        _check_writable(output)
    result = render_diff.diff(store.load(a), store.load(b), a, b)
    if result.unrelated:
        raise _Fail(
            f"{a} and {b} share no source file ({_files(result.a_files)}; "
            f"{_files(result.b_files)}): not captures of one program, nothing to "
            "compare"
        )
    sys.stdout.write(render_diff.render_text(result))
    if output is not None:
        _write(output, lambda: render_diff.save_html(result, output))
        print(f"wrote {output}")
    return 0


def _files(files: tuple[str, ...], shown: int = 3) -> str:
    names = [os.path.basename(f) for f in files[:shown]]
    more = len(files) - shown
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _study(directory: str) -> int:
    try:
        pages = study.render_study(directory)
    except OSError as e:
        raise _Fail(f"cannot write the pages of {directory}: {e.strerror or e}") from e
    index = os.path.join(directory, "index.html")
    print(f"wrote {index} and {pages} case page{'s' if pages != 1 else ''}")
    return 0


def _check_writable(path: str) -> None:
    """Fail before the work when ``path`` cannot be written."""
    try:
        common.check_writable(path)
    except OSError as e:
        raise _Fail(str(e)) from None


def _write(path: str, write: Callable[[], None]) -> None:
    try:
        write()
    except OSError as e:
        # the viewer's own writes name the path already (common.write_text)
        raise _Fail(
            f"cannot write {path}: {e.strerror}" if e.strerror else str(e)
        ) from e
