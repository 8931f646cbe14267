"""What do the fusion viewer's pages look like in a window 1400 pixels wide?

Saves five screenshots (headless Chromium, 1400 px wide) to the directory
given on the command line:

* ``index.png``: a study's ``index.html`` (its answers, case table, timings);
* ``cnn.png``: the case page of a CNN (``resnet18-inference-default``),
  filtered to its ``extern_kernel`` boundaries (``#filter=...``);
* ``transformer.png``: the case page of a transformer (``gpt2-inference-default``);
* ``training.png``: a training capture (``resnet18-training-default``: the
  forward and backward graphs);
* ``diff.png``: ``python -m fusion_viewer diff`` of two captures of one
  program compiled here, stock and under ``config.no_fusion``.

The study is ``--study DIR`` (a ``benchmarks/fusion/study.py --out DIR``
output whose pages are rendered again here, with this checkout's viewer) or,
without it, a small one run first (resnet18, gpt2 and softmax; inference and
training; CI shapes on the CPU: minutes on two cores)::

    .venv/bin/python benchmarks/fusion/probes/page_screenshots.py /tmp/shots
    .venv/bin/python benchmarks/fusion/probes/page_screenshots.py /tmp/shots --study reports
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


FUSION = Path(__file__).resolve().parents[1]
WIDTH = 1400
# Window heights: a case page's shot reaches past its kernel table into the
# boundary table (headless Chromium draws the window, not the whole page).
HEIGHTS = {"index": 2400, "cnn": 6400, "transformer": 4000, "training": 4800}
# The CNN page filtered to its extern_kernel boundaries (the convolutions'),
# which opens its boundary table (folded past 40 rows) on those rows.
FRAGMENTS = {"cnn": "#filter=reason:extern_kernel"}


def browser() -> str:
    """The Chromium (or Chrome) on PATH; exits with a line saying so without one."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("no chromium on PATH (sh tools/install_system_deps.sh)")


def screenshot(page: Path, png: Path, height: int, fragment: str = "") -> None:
    """``page`` as Chromium draws it in a window ``WIDTH`` x ``height``."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                browser(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"--window-size={WIDTH},{height}",
                f"--screenshot={png}",
                page.resolve().as_uri() + fragment,
            ],
            capture_output=True,
            timeout=180,
            check=True,
        )


def run_study(out: Path) -> None:
    """A small study (three models, both steps, CI shapes, CPU) into ``out``."""
    subprocess.run(
        [
            sys.executable,
            str(FUSION / "study.py"),
            "--device",
            "cpu",
            "--models",
            "resnet18,gpt2,softmax",
            "--steps",
            "inference,training",
            "--repeats",
            "3",
            "--out",
            str(out),
        ],
        check=True,
    )


def pick(rows: list[dict[str, Any]], family: str, step: str) -> str:
    """The first case that ran of ``family`` and ``step``, else of ``step``."""
    ran = [r for r in rows if r.get("status") == "ok" and r.get("step") == step]
    for r in sorted(ran, key=lambda r: r.get("family") != family):
        return r["case"]
    raise SystemExit(f"the study has no {step} case that ran")


def diff_page(out: Path) -> Path:
    """The diff page of two captures of one program: stock and no_fusion."""
    import torch
    from fusion_viewer import cli

    from torch._inductor import config, fusion_report

    def block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.layer_norm(x, x.shape[-1:])
        return torch.nn.functional.gelu(y @ w) + x

    x, w = torch.randn(64, 256), torch.randn(256, 256)
    paths = []
    for label, patches in (("stock", {}), ("no_fusion", {"no_fusion": True})):
        torch._dynamo.reset()
        with config.patch(patches), fusion_report.capture() as rep:
            torch.compile(block)(x, w)
        path = out / f"diff-{label}.json"
        path.write_text(json.dumps(rep.to_json(), default=str))
        paths.append(str(path))
    page = out / "diff.html"
    if cli.main(["diff", *paths, "-o", str(page)]) != 0:
        raise SystemExit("python -m fusion_viewer diff failed")
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the directory for the PNGs")
    parser.add_argument("--study", type=Path, help="an existing study's --out")
    parser.add_argument(
        "--height", type=int, help="one window height for every shot (px)"
    )
    args = parser.parse_args(argv)
    browser()  # before minutes of compiling
    args.out.mkdir(parents=True, exist_ok=True)
    study_dir = args.study or args.out / "study"
    if args.study is None:
        run_study(study_dir)
    from fusion_viewer.study import render_study

    render_study(study_dir)  # the pages of this checkout's viewer
    rows = json.loads((study_dir / "study.json").read_text())["rows"]
    cases = study_dir / "cases"
    shots = {
        "index": study_dir / "index.html",
        "cnn": cases / f"{pick(rows, 'cnn', 'inference')}.html",
        "transformer": cases / f"{pick(rows, 'transformer', 'inference')}.html",
        "training": cases / f"{pick(rows, 'cnn', 'training')}.html",
        "diff": diff_page(args.out),
    }
    for name, page in shots.items():
        png = args.out / f"{name}.png"
        height = args.height or HEIGHTS.get(name, 1400)
        screenshot(page, png, height, FRAGMENTS.get(name, ""))
        print(f"{png}: {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
