"""Compile-time overhead of fusion remarks.

Three arms, each compile in a fresh process with a fresh, empty Inductor
cache directory and the FX graph and AOTAutograd caches off, as a capture has
them (so every compile lowers, schedules and generates code, and no arm
computes cache keys or writes entries that another skips):

* ``stock``: upstream torch 2.11.0 (the overlay disabled with
  ``FUSION_FORK_DISABLE=1``; needs the fork's virtualenv),
* ``fork``: the fork with fusion logging off (the hooks return at once),
* ``capture``: the fork inside ``fusion_report.capture()``.

The arms run interleaved, round after round, so that drift of the machine
affects all alike; the table reports the median compile time per arm and the
overhead against ``stock``.  Compile time is the wall time of the first call
of the compiled model (Dynamo + AOTAutograd + Inductor + C++/Triton compile),
measured inside the process, and the CPU time of that process over the same
call: the remarks run in it (kernel compilation runs in worker processes), and
CPU time varies less than wall time on a shared machine.

    .venv/bin/python benchmarks/fusion/overhead.py --models resnet18,bert --repeats 5
    .venv/bin/python benchmarks/fusion/overhead.py --hook-cost resnet18,bert

The second form bounds the cost of the disabled hooks exactly: it counts
their calls during one compile and times a disabled call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
ARMS = ("stock", "fork", "capture")


def child(model: str, device: str, arm: str) -> None:
    """Runs in the measured process: build, compile, print the seconds."""
    import time

    import torch

    sys.path.insert(0, str(HERE))
    from models import build

    torch.manual_seed(0)
    module, inputs = build(model, device, "ci" if device == "cpu" else "full")
    compiled = torch.compile(module)
    if arm == "capture":
        from torch._inductor import fusion_report

        start, cpu_start = time.perf_counter(), time.process_time()
        with torch.no_grad(), fusion_report.capture() as rep:
            compiled(*inputs)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        assert rep.graphs, "capture recorded nothing"
    else:
        if arm == "fork":
            assert hasattr(torch.version, "fork"), "the fork is not active"
        else:
            assert not hasattr(torch.version, "fork"), "stock arm runs the fork"
        start, cpu_start = time.perf_counter(), time.process_time()
        with torch.no_grad():
            compiled(*inputs)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu}))


# Every function the fork's patches call from upstream code, by module.
HOOKS = {
    "fusion_hooks": (
        "record_realize",
        "realize_rule",
        "why_no_fuse",
        "evaluate_pair",
        "speedup_refused",
        "decision_values",
        "checked",
        "begin_realize_rule",
        "begin_fusion",
        "generating",
        "kernel_defined",
        "fx_pass_enter",
        "fx_pass_exit",
        "record_pattern_matches",
        "watch_codegen",
        "report_for_cache",
    ),
    "fusion_ablation": ("pending", "realize_alone", "fusion_disabled"),
}


def hook_cost(model: str, device: str) -> dict[str, object]:
    """Count the hook calls of one compile with remarks off, and time each call.

    Wall-clock compile times on a 2-core machine vary by several percent
    between identical runs; this bound does not: (calls x cost per call of a
    disabled hook) is all the fork adds when the fusion log is off.
    """
    import timeit

    import torch
    from torch._inductor.fusion_remarks import hooks as fusion_hooks, recorder

    sys.path.insert(0, str(HERE))
    from models import build

    from torch._inductor import fusion_ablation

    modules = {"fusion_hooks": fusion_hooks, "fusion_ablation": fusion_ablation}
    assert not recorder.is_enabled(), "remarks must be off for this bound"
    hooks = [(modules[m], name) for m, names in HOOKS.items() for name in names]
    calls = {name: 0 for _, name in hooks}
    originals = {name: getattr(module, name) for module, name in hooks}

    def counting(name):
        def hook(*args, **kwargs):
            calls[name] += 1
            return originals[name](*args, **kwargs)

        return hook

    for module, name in hooks:
        setattr(module, name, counting(name))
    torch.manual_seed(0)
    module_, inputs = build(model, device, "ci" if device == "cpu" else "full")
    start = time.perf_counter()
    with torch.no_grad():
        torch.compile(module_)(*inputs)
    compile_s = time.perf_counter() - start
    for module, name in hooks:
        setattr(module, name, originals[name])

    class Node:  # what a disabled hook may touch before returning
        nodes: list = []

    class Graph:  # a GraphLowering without a recorder
        pass

    from torch._inductor.fusion_remarks.taxonomy import Reason

    code = Reason.DEP_MISMATCH

    def decide(node1, node2, **options):
        return True

    def realize_rule_sample():
        with fusion_hooks.realize_rule(code):
            pass

    gm = torch.fx.symbolic_trace(torch.nn.Identity())
    added = torch.fx.symbolic_trace(lambda x: x + 1)
    node = next(n for n in added.graph.nodes if n.op == "call_function")
    samples = {
        "record_realize": lambda: fusion_hooks.record_realize(None),
        "realize_rule": realize_rule_sample,
        "why_no_fuse": lambda: fusion_hooks.why_no_fuse(None, code),
        "evaluate_pair": lambda: fusion_hooks.evaluate_pair(None, None, None, decide),
        "speedup_refused": lambda: fusion_hooks.speedup_refused(None, None, code),
        "decision_values": lambda: fusion_hooks.decision_values(code, None, None),
        "checked": lambda: fusion_hooks.checked(True, None, None, code, "c"),
        "begin_realize_rule": lambda: (
            fusion_hooks.begin_realize_rule(code),
            fusion_hooks.end_realize_rule(),
        ),
        "begin_fusion": lambda: fusion_hooks.begin_fusion(Node()),
        "generating": lambda: fusion_hooks.generating(None),
        "kernel_defined": lambda: fusion_hooks.kernel_defined("k", ()),
        "fx_pass_enter": lambda: fusion_hooks.fx_pass_enter(gm, "p"),
        "fx_pass_exit": lambda: fusion_hooks.fx_pass_exit(None, gm),
        "record_pattern_matches": lambda: fusion_hooks.record_pattern_matches("p", 1),
        "watch_codegen": lambda: fusion_hooks.watch_codegen(None).__enter__(),
        "report_for_cache": lambda: fusion_hooks.report_for_cache(Graph()),
        "pending": fusion_ablation.pending,
        "realize_alone": lambda: fusion_ablation.realize_alone(None, node),
        "fusion_disabled": fusion_ablation.fusion_disabled,
    }
    per_call = {
        name: min(timeit.repeat(fn, number=10000, repeat=5)) / 10000
        for name, fn in samples.items()
    }
    added = sum(calls[name] * per_call[name] for name in calls)
    return {
        "model": model,
        "compile_s": compile_s,
        "calls": calls,
        "per_call_us": {k: v * 1e6 for k, v in per_call.items()},
        "added_s": added,
        "fraction": added / compile_s,
    }


def measure(model: str, device: str, arm: str) -> dict[str, float]:
    sys.path.insert(0, str(HERE))
    from harness import child_env

    with tempfile.TemporaryDirectory(prefix="overhead-cache-") as cache:
        # A capture turns the FX graph and AOTAutograd caches off (it must
        # see every compile); turn them off in every arm, so that all arms do
        # the same work (no cache keys computed, no entries written).
        env = child_env(TORCHINDUCTOR_CACHE_DIR=cache)
        env.pop("TORCH_LOGS", None)
        if arm == "stock":
            env["FUSION_FORK_DISABLE"] = "1"  # the .pth of `make develop`
            overlay = env.get("FUSION_FORK_OVERLAY")  # set by `fork.py run`
            if overlay:
                env["PYTHONPATH"] = os.pathsep.join(
                    p
                    for p in env.get("PYTHONPATH", "").split(os.pathsep)
                    if p != overlay
                )
        out = subprocess.run(
            [sys.executable, __file__, "--child", model, device, arm],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:5])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--hook-cost":
        for model in sys.argv[2].split(","):
            result = hook_cost(model, sys.argv[3] if len(sys.argv) > 3 else "cpu")
            print(json.dumps(result, indent=1))
            print(
                f"{model}: {sum(result['calls'].values())} hook calls add "
                f"{result['added_s'] * 1e3:.3f} ms to a {result['compile_s']:.1f} s "
                f"compile ({result['fraction']:.5%})"
            )
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnet18,bert")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the raw times here")
    args = parser.parse_args()

    times: dict[str, dict[str, list[dict[str, float]]]] = {}
    for model in args.models.split(","):
        times[model] = {arm: [] for arm in ARMS}
        measure(model, args.device, "fork")  # warm the OS file cache, discarded
        for round_ in range(args.repeats):
            for arm in ARMS:
                result = measure(model, args.device, arm)
                times[model][arm].append(result)
                print(
                    f"{model} round {round_ + 1} {arm}: {result['seconds']:.2f} s "
                    f"(main process CPU {result['cpu_seconds']:.2f} s)",
                    flush=True,
                )
    if args.json:
        Path(args.json).write_text(json.dumps(times, indent=2) + "\n")
    print()
    print(
        f"{'model':10} {'clock':6} {'stock s':>8} {'fork s':>8} {'capture s':>9} "
        f"{'fork':>7} {'capture':>8}"
    )
    for model, arms in times.items():
        for key, clock in (("seconds", "wall"), ("cpu_seconds", "cpu")):
            med = {
                arm: statistics.median(r[key] for r in runs)
                for arm, runs in arms.items()
            }
            print(
                f"{model:10} {clock:6} {med['stock']:8.2f} {med['fork']:8.2f} "
                f"{med['capture']:9.2f} {med['fork'] / med['stock'] - 1:+7.1%} "
                f"{med['capture'] / med['stock'] - 1:+8.1%}"
            )


if __name__ == "__main__":
    main()
