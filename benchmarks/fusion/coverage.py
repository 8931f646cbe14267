"""Coverage of fusion remarks on real models: is every memory crossing explained?

Compiles each model of the set (built from its config, no weights downloaded)
under ``fusion_report.capture()``, an inference step and a training step, and
prints, per model, step and mode, the graphs, ops, kernels, the *crossings*
(buffers one kernel writes and another reads), the crossings without exactly
one boundary (the analysis's own check, ``coverage_violations``), the
disagreements with the generated code (each boundary's buffer passed to its
consumer's call, each buffer the wrapper hands from one call to another
explained: ``test/inductor/fusion_code_crossings.py``), whether the per-kernel
counts add up to ``metrics.generated_kernel_count``, and the most frequent
reasons.  Exit status 1 if any crossing is unexplained.

    python benchmarks/fusion/coverage.py --device cpu --models resnet18,bert
    python benchmarks/fusion/coverage.py --device cuda --models all \\
        --modes default,max-autotune-no-cudagraphs --shapes full --json out.json
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
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "inductor"))


def measure(
    name: str, device: str, mode: str, shapes: str, step: str
) -> dict[str, Any]:
    from fusion_code_crossings import (
        code_crossing_problems,
        cpp_crossing_problems,
        run_and_get_graph_codes,
    )
    from harness import build_model
    from models import compile_config, loss_of

    from torch._inductor import fusion_report, metrics
    from torch._inductor.fusion_remarks import analysis as fusion_analysis

    train = step == "training"
    torch.manual_seed(0)
    model, inputs = build_model(name, device, shapes, train)
    torch._dynamo.reset()
    metrics.reset()
    start = time.perf_counter()

    def run() -> None:
        compiled = torch.compile(model, mode=None if mode == "default" else mode)
        out = compiled(*inputs)
        if train:
            loss_of(out).backward()

    with (
        torch.set_grad_enabled(train),
        fusion_report.capture() as rep,
        compile_config(name),
    ):
        _, codes = run_and_get_graph_codes(run)
    seconds = time.perf_counter() - start
    graphs = rep.to_json()["graphs"]
    violations = [v for g in graphs for v in fusion_analysis.coverage_violations(g)]
    # the wrappers in the order the graphs were compiled, as the reports are
    code_problems = (
        [
            p
            for g, c in zip(graphs, codes)
            for p in code_crossing_problems(g, c) + cpp_crossing_problems(g, c)
        ]
        if len(codes) == len(graphs)
        else [f"{len(codes)} wrappers for {len(graphs)} graphs"]
    )
    crossings = sum(len(g.get("crossings", ())) for g in graphs)
    reasons = collections.Counter(b["reason"] for g in graphs for b in g["boundaries"])
    counted = sum(k["generated_kernels"] for g in graphs for k in g["kernels"])
    # Under max-autotune the metric also counts every autotuning candidate
    # (made during lowering); codegen's own count is per graph.
    at_codegen = sum(g["generated_kernel_count"] for g in graphs)
    return {
        "model": name,
        "step": step,
        "device": device,
        "mode": mode,
        "shapes": shapes,
        "graphs": len(graphs),
        "ops": sum(1 for g in graphs for op in g["ops"] if op["computes"]),
        "kernels": sum(len(g["kernels"]) for g in graphs),
        "generated_kernel_count": metrics.generated_kernel_count,
        "generated_at_codegen": at_codegen,
        "kernel_counts_match": counted == at_codegen
        and ("max-autotune" in mode or at_codegen == metrics.generated_kernel_count),
        "crossings": crossings,
        "boundaries": len([b for g in graphs for b in g["boundaries"]]),
        "violations": violations,
        "code_problems": code_problems,
        "top_reasons": reasons.most_common(6),
        "reasons": dict(sorted(reasons.items())),
        # heuristic refusals the device backend's own check would refuse too
        "backend_also_refuses": sum(
            1
            for g in graphs
            for b in g["boundaries"]
            if b["args"].get("backend_also_refuses")
        ),
        "compile_s": round(seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu"
    )
    parser.add_argument(
        "--models", default="resnet18,bert", help="comma-separated, or all"
    )
    parser.add_argument("--modes", default="default")
    parser.add_argument("--steps", default="inference,training")
    parser.add_argument("--shapes", choices=("ci", "full"), default="ci")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    from models import MODELS

    names = list(MODELS) if args.models == "all" else args.models.split(",")
    results = []
    for mode in args.modes.split(","):
        for name in names:
            for step in args.steps.split(","):
                result = measure(name, args.device, mode, args.shapes, step)
                results.append(result)
                print(json.dumps(result), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    print()
    print(
        f"{'model':18} {'step':9} {'mode':27} {'graphs':>6} {'ops':>5} "
        f"{'kernels':>7} {'crossings':>9} {'unexplained':>11} {'code':>4} "
        f"{'counts':>6} {'compile s':>9}"
    )
    for r in results:
        print(
            f"{r['model']:18} {r['step']:9} {r['mode']:27} {r['graphs']:6d} "
            f"{r['ops']:5d} {r['kernels']:7d} {r['crossings']:9d} "
            f"{len(r['violations']):11d} {len(r['code_problems']):4d} "
            f"{'ok' if r['kernel_counts_match'] else 'DIFF':>6} {r['compile_s']:9.1f}"
        )
    total = sum(r["crossings"] for r in results)
    unexplained = sum(len(r["violations"]) for r in results)
    print(f"\n{total} crossings, {unexplained} without exactly one boundary")
    return (
        0 if all(not r["violations"] and not r["code_problems"] for r in results) else 1
    )


if __name__ == "__main__":
    sys.exit(main())
