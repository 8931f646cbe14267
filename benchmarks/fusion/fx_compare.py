"""The FX fusion arm next to Inductor fusion-only, from their fusion reports.

For each model of the set, one ``fusion_report.capture()`` of Inductor with
``config.fusion_only`` and one of ``backend="fx_fusion"``, summarized alike
(``study.summarize``): aten ops, ops left alone in a kernel, generated and
library kernels, and the boundaries each left by reason.  The step-time
comparison is ``ablation.py``'s; this says where the kernels come from.

    python benchmarks/fusion/fx_compare.py --device cpu --shapes full \\
        --json benchmarks/results/fx_fusion/fx_compare_cpu.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ARMS = {"fusion_only": "inductor", "fx_fusion": "fx_fusion"}


def compare(name: str, device: str, shapes: str) -> list[dict[str, Any]]:
    import torch
    from models import build, compile_config
    from study import summarize
    from torch._inductor import fusion_report

    model, inputs = build(name, device, shapes)
    rows = []
    for arm, backend in ARMS.items():
        torch._dynamo.reset()
        switches = {"fusion_only": True} if arm == "fusion_only" else {}
        with (
            torch.no_grad(),
            compile_config(name),
            torch._inductor.config.patch(switches),
            fusion_report.capture() as rep,
        ):
            torch.compile(model, backend=backend)(*inputs)
        rows.append({"model": name, "arm": arm, **summarize(rep.to_json())})
    return rows


def _top(row: dict[str, Any], n: int = 4) -> str:
    reasons = sorted(row["by_reason"].items(), key=lambda kv: -kv[1]["count"])
    return ", ".join(f"{r} {v['count']}" for r, v in reasons[:n])


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | arm | ops | unfused ops | kernels gen/ext | boundaries | top reasons |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['arm']} | {r['ops']} | {r['unfused_ops']} "
            f"| {r['kernels_generated']}/{r['kernels_extern']} | {r['boundaries']} "
            f"| {_top(r)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--shapes", choices=("ci", "full"), default="ci")
    parser.add_argument("--models", default="all")
    parser.add_argument("--json", type=Path, help="write JSON here (and the .md)")
    args = parser.parse_args(argv)
    from models import MODELS

    names = list(MODELS) if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"unknown models {unknown}: choose from {', '.join(MODELS)}")
    rows = []
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        rows += compare(name, args.device, args.shapes)
        if args.json:
            result = {"device": args.device, "shapes": args.shapes, "rows": rows}
            args.json.write_text(json.dumps(result, indent=1) + "\n")
            args.json.with_suffix(".md").write_text(markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
