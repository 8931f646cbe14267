"""How much of what ``TORCH_LOGS=fusion`` prints is the fork's summary?

Compiles torchvision resnet18 (inference, batch 1, 3x64x64, caches off) in a
fresh process per setting, as a user would from the shell, and sorts the
printed lines: the fork's per-graph summaries (a ``[__fusion] graph ...``
record and its indented lines), other records of the ``fusion`` artifact
(upstream's scheduler messages, the evaluated pairs), and everything else
(warnings).  Writes a Markdown table and JSON::

    .venv/bin/python benchmarks/fusion/probes/log_share.py --out benchmarks/results/remarks/fusion_log_share_cpu
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


PROGRAM = """
import torch, torchvision
model = torchvision.models.resnet18().eval()
with torch.no_grad():
    torch.compile(model)(torch.randn(1, 3, 64, 64))
"""


def classify(stderr: str) -> dict[str, int]:
    counts = {"summary": 0, "other_fusion": 0, "other": 0}
    bytes_ = {"summary": 0, "other_fusion": 0, "other": 0}
    current = "other"
    for line in stderr.splitlines():
        if line.startswith("[__fusion] graph ") and " ops -> " in line:
            current = "summary"
        elif line.startswith("[__fusion] "):
            current = "other_fusion"
        elif not line.startswith("  "):
            current = "other"
        counts[current] += 1
        bytes_[current] += len(line) + 1
    return {
        "lines": sum(counts.values()),
        "bytes": sum(bytes_.values()),
        **{f"{k}_lines": v for k, v in counts.items()},
        **{f"{k}_bytes": v for k, v in bytes_.items()},
    }


def run(settings: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ,
            TORCH_LOGS=settings,
            TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
            TORCHINDUCTOR_CACHE_DIR=tmp,
        )
        result = subprocess.run(
            [sys.executable, "-c", PROGRAM],
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )
    if result.returncode:
        raise SystemExit(f"TORCH_LOGS={settings} failed:\n{result.stderr[-3000:]}")
    return classify(result.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="path without suffix")
    args = parser.parse_args()
    import torch

    rows = {settings: run(settings) for settings in ("fusion", "+fusion")}
    data = {"torch": torch.__version__, "rows": rows}
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        f"# What `TORCH_LOGS=fusion` prints on resnet18 (CPU, torch {torch.__version__})",
        "",
        "Command: `.venv/bin/python benchmarks/fusion/probes/log_share.py --out "
        f"{args.out}` (resnet18 inference, batch 1, 3x64x64, caches off).",
        "",
        "| TORCH_LOGS | lines | KB | fork summary lines | share | other fusion lines | other lines |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for settings, r in rows.items():
        share = r["summary_lines"] / r["lines"] if r["lines"] else 0.0
        lines.append(
            f"| `{settings}` | {r['lines']} | {r['bytes'] / 1024:.1f} | "
            f"{r['summary_lines']} | {share:.0%} | {r['other_fusion_lines']} | "
            f"{r['other_lines']} |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
