"""Coverage of fusion remarks on real models: is every kernel boundary explained?

Compiles each model (built from its config, no weights downloaded) under
``fusion_report.capture()`` and, per model and mode, prints the number of
graphs, ops, kernels, boundaries, coverage violations (edges between computing
ops in different kernels without exactly one boundary remark), whether the
per-kernel counts add up to ``metrics.generated_kernel_count``, and the most
frequent reasons.  Exit status 1 if any model's coverage is below 100%.

    python benchmarks/fusion/coverage.py --device cpu --models resnet18,bert
    python benchmarks/fusion/coverage.py --device cuda --models resnet18,vit,bert,gpt2 \\
        --modes default,max-autotune-no-cudagraphs --shapes full
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from typing import Any

import torch


os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import build, compile_config


def measure(name: str, device: str, mode: str, shapes: str) -> dict[str, Any]:
    from torch._inductor import fusion_report, metrics
    from torch._inductor.fusion_remarks import analysis as fusion_analysis

    torch.manual_seed(0)
    model, inputs = build(name, device, shapes)
    torch._dynamo.reset()
    metrics.reset()
    start = time.perf_counter()
    with torch.no_grad(), fusion_report.capture() as rep, compile_config(name):
        compiled = torch.compile(model, mode=None if mode == "default" else mode)
        compiled(*inputs)
    seconds = time.perf_counter() - start
    graphs = rep.to_json()["graphs"]
    violations = [v for g in graphs for v in fusion_analysis.coverage_violations(g)]
    edges_apart = sum(
        1 for g in graphs for b in g["boundaries"] if b["relation"] == "dependency"
    )
    reasons = collections.Counter(b["reason"] for g in graphs for b in g["boundaries"])
    counted = sum(k["generated_kernels"] for g in graphs for k in g["kernels"])
    # Under max-autotune the metric also counts every autotuning candidate
    # (made during lowering); codegen's own count is per graph.
    at_codegen = sum(g["generated_kernel_count"] for g in graphs)
    return {
        "model": name,
        "device": device,
        "mode": mode,
        "graphs": len(graphs),
        "ops": sum(1 for g in graphs for op in g["ops"] if op["computes"]),
        "kernels": sum(len(g["kernels"]) for g in graphs),
        "generated_kernel_count": metrics.generated_kernel_count,
        "generated_at_codegen": at_codegen,
        "kernel_counts_match": counted == at_codegen
        and ("max-autotune" in mode or at_codegen == metrics.generated_kernel_count),
        "boundaries": len([b for g in graphs for b in g["boundaries"]]),
        "dependency_boundaries": edges_apart,
        "violations": violations,
        "coverage": 1.0
        if not violations
        else 1 - len(violations) / max(1, edges_apart + len(violations)),
        "top_reasons": reasons.most_common(6),
        "compile_s": round(seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu"
    )
    parser.add_argument("--models", default="resnet18,bert")
    parser.add_argument("--modes", default="default")
    parser.add_argument("--shapes", choices=("ci", "full"), default="ci")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    results = []
    for mode in args.modes.split(","):
        for name in args.models.split(","):
            result = measure(name, args.device, mode, args.shapes)
            results.append(result)
            print(json.dumps(result), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    print()
    print(
        f"{'model':10} {'mode':28} {'graphs':>6} {'ops':>6} {'kernels':>7} "
        f"{'bounds':>6} {'viol':>5} {'cover':>6} {'counts':>6} {'compile s':>9}"
    )
    for r in results:
        print(
            f"{r['model']:10} {r['mode']:28} {r['graphs']:6d} {r['ops']:6d} "
            f"{r['kernels']:7d} {r['boundaries']:6d} {len(r['violations']):5d} "
            f"{r['coverage']:6.1%} {'ok' if r['kernel_counts_match'] else 'DIFF':>6} "
            f"{r['compile_s']:9.1f}"
        )
    return (
        0
        if all(not r["violations"] and r["kernel_counts_match"] for r in results)
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
