"""How long does the launch-bound combo pass's grouping take, against the compile?

The compile-time cost of the pass's decision: how long
``launch_bound_combo.group_nodes`` (the cost model and the grouping) takes per
model, against the whole compile, and how many kernels it groups.

It needs no GPU: on the CPU the pass normally skips every kernel (C++ kernels
are called, not launched), so here the CPU is treated as a launching device and
the groups are recorded instead of being turned into combo kernels (upstream
has no C++ combo kernels). What it does not measure is the Triton compile of
the combo kernels themselves, which replaces the compile of their members.
The first call of each model is compiled with FX graph and AOTAutograd caches
off, so every compile lowers and schedules.

    python benchmarks/fusion/probes/combo_grouping_cost.py --models resnet18,gpt2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from unittest import mock


# the suites and the harness, one folder up
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(name: str, shapes: str, repeats: int) -> dict:
    """Compile ``name`` ``repeats`` times with the pass on; the medians of the
    whole compile and of the time spent in ``group_nodes``."""
    import torch
    from models import build, compile_config

    from torch._inductor import config, launch_bound_combo
    from torch._inductor.scheduler import Scheduler

    spent: list[float] = []
    grouped: list[int] = []
    candidates: list[int] = []
    group_nodes = launch_bound_combo.group_nodes

    def timed_grouping(scheduler) -> list:
        start = time.perf_counter()
        groups = group_nodes(scheduler)
        spent[-1] += time.perf_counter() - start
        grouped[-1] += sum(len(g) for g in groups)
        candidates[-1] += len(scheduler.nodes)
        return groups

    model, inputs = build(name, "cpu", shapes)
    compiles = []
    with (
        mock.patch.object(launch_bound_combo, "_NO_LAUNCH_DEVICES", ()),
        mock.patch.object(launch_bound_combo, "group_nodes", timed_grouping),
        mock.patch.object(
            Scheduler, "create_combo_kernel_nodes", lambda self, **kw: None
        ),
        config.patch(
            launch_bound_combo_kernels=True,
            fx_graph_cache=False,
            autotune_local_cache=False,
        ),
        torch._functorch.config.patch(enable_autograd_cache=False),
        compile_config(name),
        torch.no_grad(),
    ):
        for _ in range(repeats):
            torch._dynamo.reset()
            spent.append(0.0)
            grouped.append(0)
            candidates.append(0)
            fn = torch.compile(model)
            start = time.perf_counter()
            fn(*inputs)
            compiles.append(time.perf_counter() - start)
    compile_s = statistics.median(compiles)
    grouping_s = statistics.median(spent)
    return {
        "model": name,
        "shapes": shapes,
        "repeats": repeats,
        "compile_s": round(compile_s, 3),
        "grouping_ms": round(grouping_s * 1e3, 3),
        "grouping_share": round(grouping_s / compile_s, 5),
        "scheduler_nodes": candidates[-1],
        "kernels_grouped": grouped[-1],
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| model | compile s | grouping ms | share of compile | scheduler nodes | kernels grouped |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['compile_s']:.2f} | {r['grouping_ms']:.2f} | "
            f"{100 * r['grouping_share']:.2f}% | {r['scheduler_nodes']} | "
            f"{r['kernels_grouped']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models",
        default="resnet18,mobilenet_v3_small,vit_small,convnext_tiny,bert,gpt2,t5_small,llama_small,gru",
    )
    parser.add_argument("--shapes", choices=("ci", "full"), default="ci")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.json is not None:
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.touch()
        except OSError as e:
            parser.error(f"cannot write {args.json}: {e}")
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name, args.shapes, args.repeats))
        print(json.dumps(rows[-1]), flush=True)
    if args.json is not None:
        from harness import provenance

        args.json.write_text(
            json.dumps({**provenance("cpu"), "rows": rows}, indent=1) + "\n"
        )
        args.json.with_suffix(".md").write_text(table(rows) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
