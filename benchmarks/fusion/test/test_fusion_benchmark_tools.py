# Owner(s): ["module: inductor"]
"""The benchmark tools around the fusion reports: the GPU lock that lets
processes compile side by side but time one at a time, the harness's model
step, the bandwidth benchmark, the side-by-side reports of Inductor and the
FX fusion arm, the compile-time cost of the launch-bound combo pass's
grouping, and the layout of the benchmarks and their results (every result
indexed, every probe stating its question).
Real compiles on the CPU; the GPU runs are in benchmarks/results/.

A test of the fork's benchmarks, beside them: it travels in no pull-request
stack (``make export``), since the benchmarks do not either."""

import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase

# Imported before benchmarks/fusion goes onto sys.path: common_cuda imports
# numba where it is installed (the GPU machine), numba imports the coverage
# package, and benchmarks/fusion/coverage.py would shadow it.
from torch.testing._internal.common_cuda import TEST_CUDA


REPO = Path(__file__).resolve().parents[3]
BENCHMARKS = REPO / "benchmarks" / "fusion"
PROBES = BENCHMARKS / "probes"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(PROBES))

import ablation  # noqa: E402
import ablation_report  # noqa: E402
import bandwidth  # noqa: E402
import combo_grouping_cost  # noqa: E402
import fx_compare  # noqa: E402
import golden_boundaries  # noqa: E402
import rank_classes  # noqa: E402
import torch  # noqa: E402
from harness import (  # noqa: E402
    build_model,
    capture_step,
    child_env,
    exclusive_device,
    first_call,
    interleaved_rounds,
    kernel_profile,
    kernel_time_rounds,
    model_step,
    shared_device,
    spread_summary,
)


class TestGpuLock(TestCase):
    def test_a_held_lock_excludes_another_process(self):
        probe = textwrap.dedent(
            """
            import fcntl, sys
            with open(sys.argv[1], "a") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    print("held")
                else:
                    print("free")
            """
        )
        with tempfile.TemporaryDirectory() as tmp:
            lock = os.path.join(tmp, "gpu.lock")

            def other_process() -> str:
                return subprocess.run(
                    [sys.executable, "-c", probe, lock],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()

            with exclusive_device(lock):
                self.assertEqual(other_process(), "held")
            self.assertEqual(other_process(), "free")

    def test_compiles_share_the_lock_and_a_waiting_timing_goes_first(self):
        # Two compiles hold it at once; a timing waits for them; a compile
        # asking while the timing waits starts only after the timing.
        events: list[str] = []
        with tempfile.TemporaryDirectory() as tmp:
            lock = os.path.join(tmp, "gpu.lock")
            first = threading.Event()
            release = threading.Event()

            def hold(name: str, ctx, started=None, until=None) -> None:
                with ctx(lock):
                    events.append(f"{name} in")
                    if started is not None:
                        started.set()
                    if until is not None:
                        until.wait(10)
                    events.append(f"{name} out")

            compile_a = threading.Thread(
                target=hold, args=("compile a", shared_device, first, release)
            )
            compile_a.start()
            self.assertTrue(first.wait(10))
            with shared_device(lock):
                events.append("compile b in and out")  # shared: no wait
            timing = threading.Thread(target=hold, args=("timing", exclusive_device))
            timing.start()
            time.sleep(0.5)  # the timing now waits, holding the turnstile
            late = threading.Thread(target=hold, args=("compile c", shared_device))
            late.start()
            time.sleep(0.5)
            self.assertEqual(events, ["compile a in", "compile b in and out"])
            release.set()
            for t in (compile_a, timing, late):
                t.join(10)
        self.assertEqual(
            events[2:],
            [
                "compile a out",
                "timing in",
                "timing out",
                "compile c in",
                "compile c out",
            ],
        )

    def test_ablation_jobs_need_the_lock(self):
        result = subprocess.run(
            [
                sys.executable,
                str(BENCHMARKS / "ablation.py"),
                *("--device", "cpu", "--models", "sin_cos", "--jobs", "2"),
            ],
            capture_output=True,
            text=True,
        )
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--jobs N needs --gpu-lock", result.stderr)


class TestBandwidth(TestCase):
    def test_every_arm_matches_eager_and_is_priced(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bw.json"
            code = bandwidth.main(
                [
                    *("--device", "cpu", "--arms", "eager,fusion_only,fx_fusion"),
                    *("--json", str(out)),
                ]
            )
            self.assertEqual(code, 0)
            result = json.loads(out.read_text())
            table = out.with_suffix(".md").read_text()
        rows = result["rows"]
        self.assertEqual(
            {(r["case"], r["arm"]) for r in rows},
            {
                (c, a)
                for c in bandwidth.CASES
                for a in ("eager", "fusion_only", "fx_fusion")
            },
        )
        self.assertGreater(result["copy_bandwidth_gbs"], 0)
        for r in rows:
            self.assertTrue(r["matches_eager"], r)
            # inputs + outputs (+ layer norm's weight and bias), each once
            numel = 1
            for n in r["shape"]:
                numel *= n
            extra = 2 * 1024 * 4 if r["case"] == "layer_norm_gelu" else 0
            self.assertEqual(r["bytes"], 2 * numel * 4 + extra)
            if r["arm"] == "fusion_only":
                self.assertEqual(r["throughput_vs_fusion_only"], 1.0)
            self.assertIn(f"| {r['case']} |", table)

    def test_host_path_compiles_each_arm_apart(self):
        # Two Inductor arms differ only in config: had they shared a code
        # object, the second would reuse the first one's graph.
        import torch._dynamo.utils

        torch._dynamo.utils.counters.clear()
        result = bandwidth.host_path(
            "cpu", ["eager", "default", "fusion_only", "fx_fusion"], calls=5, rounds=2
        )
        self.assertEqual(result["recompiles"]["unique_graphs"], 3)
        self.assertEqual(
            [r["arm"] for r in result["rows"]],
            ["eager", "default", "fusion_only", "fx_fusion"],
        )
        self.assertTrue(all(r["us_per_call"] > 0 for r in result["rows"]))

    def test_unknown_arm_is_refused(self):
        with self.assertRaises(SystemExit) as e:
            bandwidth.main(["--device", "cpu", "--arms", "eager,fusion_everything"])
        self.assertIn("fusion_everything", str(e.exception))


class TestFxCompare(TestCase):
    def test_both_arms_fuse_layer_norm_gelu_into_one_kernel(self):
        rows = fx_compare.compare("layer_norm_gelu", "cpu", "ci")
        self.assertEqual([r["arm"] for r in rows], ["fusion_only", "fx_fusion"])
        for r in rows:
            self.assertEqual(r["kernels_generated"], 1, r)
            self.assertEqual(r["unfused_ops"], 0, r)
            self.assertEqual(r["violations"], 0, r)

    def test_a_library_kernel_is_a_boundary_in_both_reports(self):
        rows = fx_compare.compare("resnet18", "cpu", "ci")
        for r in rows:
            self.assertGreater(r["by_reason"]["extern_kernel"]["count"], 0, r)
            self.assertEqual(r["violations"], 0, r)


class TestTrainingStep(TestCase):
    def test_every_model_trains_deterministically(self):
        # Compiled and eager training steps are compared output to output;
        # any dropout left on (T5's is functional) makes them differ by chance.
        import torch
        from models import build, for_training, loss_of, MODELS

        for name in MODELS:
            with self.subTest(model=name):
                model, inputs = build(name, "cpu", "ci")
                inputs = for_training(model, inputs)
                self.assertTrue(model.training)
                first, second = model(*inputs), model(*inputs)
                self.assertEqual(first, second, atol=0, rtol=0)
                loss_of(first).backward()
                grads = [p.grad for p in model.parameters()] or [
                    t.grad for t in inputs if isinstance(t, torch.Tensor)
                ]
                self.assertTrue(any(g is not None for g in grads))


class TestHarnessStep(TestCase):
    def test_inference_step_records_no_graph(self):
        model, inputs = build_model("sin_cos", "cpu", "ci", train=False)
        out, seconds = first_call(model_step(model, model, inputs, False), "cpu")
        self.assertFalse(out.requires_grad)
        self.assertGreaterEqual(seconds, 0.0)

    def test_training_step_clears_then_fills_the_gradients(self):
        model, inputs = build_model("layer_norm_gelu", "cpu", "ci", train=True)
        step = model_step(model, model, inputs, True)
        step()
        first = [p.grad.clone() for p in model.parameters()]
        step()
        # zero_grad(set_to_none=True) before each step: the gradients of one
        # step, not the sum of two
        for a, b in zip(first, (p.grad for p in model.parameters())):
            self.assertEqual(a, b)

    def test_child_env_turns_the_compile_caches_off(self):
        env = child_env(EXTRA="1")
        self.assertEqual(env["TORCHINDUCTOR_FX_GRAPH_CACHE"], "0")
        self.assertEqual(env["TORCHINDUCTOR_AUTOGRAD_CACHE"], "0")
        self.assertEqual(env["EXTRA"], "1")


RESULTS = REPO / "benchmarks" / "results"


def _index_entries(index: Path) -> list[str]:
    """The files an ``INDEX.md`` names: the first cell of each table row."""
    entries = []
    for line in index.read_text().splitlines():
        cells = line.split(" | ")
        if line.startswith("| `") and cells[0].endswith("`"):
            entries.append(cells[0][len("| `") : -1])
    return entries


class TestBenchmarkLayout(TestCase):
    def test_every_result_is_named_in_its_folders_index(self):
        loose = [p.name for p in RESULTS.iterdir() if p.is_file()]
        self.assertEqual(loose, [], "results belong in a feature folder")
        for folder in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
            with self.subTest(folder=folder.name):
                index = folder / "INDEX.md"
                self.assertTrue(index.is_file(), f"{folder} has no INDEX.md")
                named = _index_entries(index)
                files = sorted(
                    str(p.relative_to(folder))
                    for p in folder.rglob("*")
                    if p.is_file() and p != index
                )
                self.assertEqual(sorted(set(files) - set(named)), [], "not indexed")
                self.assertEqual(
                    sorted(set(named) - set(files)), [], "indexed, but no such file"
                )
                self.assertEqual(len(named), len(set(named)), "named twice")

    def test_every_probe_states_its_question_first(self):
        for probe in sorted((BENCHMARKS / "probes").glob("*.py")):
            with self.subTest(probe=probe.name):
                first = probe.read_text().split("\n", 1)[0]
                self.assertTrue(first.startswith('"""'), first)
                self.assertIn("?", first)

    def test_the_on_chip_probe_repeats_the_pass_and_its_loops_unaligned(self):
        import reductions_on_chip_probe as probe

        names = [
            s["name"] for s in probe.settings([16], [(8192, 32)], 4, unaligned=True)
        ]
        self.assertEqual(
            names,
            [
                "upstream",
                "pass",
                "on_chip_16w",
                "loop_8192_32w",
                "pass_unaligned",
                "loop_8192_32w_unaligned",
            ],
        )
        without = probe.settings([16], [(8192, 32)], 4)
        self.assertTrue(all(not s.get("unaligned") for s in without))
        self.assertEqual(len(without), 4)

    def test_readme_names_every_script(self):
        readme = (BENCHMARKS / "README.md").read_text()
        scripts = [
            *(p.name for p in BENCHMARKS.glob("*.py")),
            *(f"probes/{p.name}" for p in (BENCHMARKS / "probes").glob("*.py")),
            *(f"gpu/{p.name}" for p in (BENCHMARKS / "gpu").glob("*.sh")),
        ]
        self.assertEqual([s for s in scripts if f"`{s}`" not in readme], [])


class TestRankClasses(TestCase):
    def test_ranking_covers_every_candidate_boundary_of_a_real_study(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = subprocess.run(
                [
                    sys.executable,
                    str(BENCHMARKS / "study.py"),
                    *("--device", "cpu", "--repeats", "1", "--no-pages"),
                    *("--models", "two_axis_reductions,resnet18", "--out", tmp),
                ],
                capture_output=True,
                text=True,
            )
            self.assertEqual(result.returncode, 0, result.stderr[-2000:])
            study = json.loads((Path(tmp) / "study.json").read_text())
            ranking = rank_classes.rank([Path(tmp)], bandwidth_gbs=100.0)
            text = rank_classes.markdown(ranking)
        candidates = {
            (reason, e["count"], e["bytes"])
            for r in study["rows"]
            for reason, e in r["by_reason"].items()
            if e["category"] in rank_classes.CANDIDATES
        }
        self.assertTrue(candidates)  # resnet18's convolutions at least
        self.assertEqual(ranking["cases_with_captures"], 2)
        counted = {e["reason"]: e["boundaries"] for e in ranking["by_reason"]}
        for reason in {c[0] for c in candidates}:
            self.assertEqual(
                counted[reason],
                sum(c[1] for c in candidates if c[0] == reason),
            )
            self.assertIn(f"| {reason} |", text)
        # Legality refusals are not candidates.
        self.assertNotIn("intermediate_node_between", counted)
        # Every candidate boundary falls in exactly one pattern, and the
        # patterns price the same crossings the study priced.
        self.assertEqual(
            sum(p["boundaries"] for p in ranking["patterns"]),
            sum(counted.values()),
        )
        self.assertEqual(
            sum(p["bytes"] for p in ranking["patterns"]),
            sum(e["bytes"] for e in ranking["by_reason"]),
        )

    def test_a_directory_without_a_study_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(SystemExit) as e:
                rank_classes.main([tmp])
        self.assertIn("no study.json", str(e.exception))


class TestComboGroupingCost(TestCase):
    def test_grouping_is_timed_on_a_real_compile_and_the_pass_restored(self):
        from torch._inductor import config, launch_bound_combo

        no_launch = launch_bound_combo._NO_LAUNCH_DEVICES
        row = combo_grouping_cost.measure("llama_small", "ci", repeats=1)
        # llama's attention projections and norms give independent small kernels.
        self.assertGreaterEqual(row["kernels_grouped"], 2)
        self.assertLessEqual(row["kernels_grouped"], row["scheduler_nodes"])
        self.assertGreater(row["grouping_ms"], 0.0)
        self.assertLess(row["grouping_ms"] / 1e3, row["compile_s"])
        self.assertEqual(launch_bound_combo._NO_LAUNCH_DEVICES, no_launch)
        self.assertFalse(config.launch_bound_combo_kernels)
        self.assertIn("| llama_small |", combo_grouping_cost.table([row]))

    def test_results_carry_their_provenance(self):
        import torch

        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "cost.json"
            result = subprocess.run(
                [
                    sys.executable,
                    str(PROBES / "combo_grouping_cost.py"),
                    *("--models", "llama_small", "--repeats", "1", "--json", str(out)),
                ],
                capture_output=True,
                text=True,
            )
            self.assertEqual(result.returncode, 0, result.stderr[-2000:])
            data = json.loads(out.read_text())
            table = out.with_suffix(".md").read_text()
        self.assertEqual(data["device"], "cpu")
        self.assertEqual(data["torch"], torch.__version__)
        self.assertEqual(data["fork"], str(getattr(torch.version, "fork", "")))
        self.assertIn("combo_grouping_cost.py --models llama_small", data["command"])
        self.assertEqual([r["model"] for r in data["rows"]], ["llama_small"])
        self.assertIn("| llama_small |", table)

    def test_an_unwritable_json_path_is_refused_before_compiling(self):
        with tempfile.TemporaryDirectory() as tmp:
            blocker = Path(tmp) / "file"
            blocker.write_text("")
            result = subprocess.run(
                [
                    sys.executable,
                    str(PROBES / "combo_grouping_cost.py"),
                    *("--models", "llama_small", "--json", str(blocker / "x.json")),
                ],
                capture_output=True,
                text=True,
            )
        self.assertEqual(result.returncode, 2)
        self.assertIn("cannot write", result.stderr)


class TestAblationRounds(TestCase):
    """Issue 18's harness: arms compiled side by side and compared round by
    round, each figure with its spread."""

    def test_rounds_visit_every_arm_before_the_next_round(self):
        order = []

        def fake_timer(step, repeats):
            return [step() for _ in range(repeats)]

        def make(arm, value):
            def step():
                order.append(arm)
                return value

            return step

        medians = interleaved_rounds(
            {"a": make("a", 1.0), "b": make("b", 2.0)}, fake_timer, 3, 2
        )
        # One untimed step, then two timed ones, per arm and round; round r
        # starts at the r-th arm.
        a, b = ["a"] * 3, ["b"] * 3
        self.assertEqual(order, a + b + b + a + a + b)
        self.assertEqual(medians, {"a": [1.0] * 3, "b": [2.0] * 3})

    def test_spread_is_the_range_over_the_median(self):
        summary = spread_summary([1.0, 1.2, 0.9, float("nan")])
        self.assertEqual(summary["median"], 1.0)
        self.assertAlmostEqual(summary["spread"], 0.3)
        self.assertEqual(summary["rounds"], [1.0, 1.2, 0.9])
        self.assertIsNone(spread_summary([])["median"])

    def test_share_is_undefined_where_the_gain_is_inside_the_spread(self):
        def row(rounds, spread):
            return {"wall_rounds": rounds, "wall_spread": spread}

        base = row([10.0, 10.0], 0.0)
        fusion_only = row([5.0, 5.0], 0.0)
        default = row([4.0, 4.0], 0.0)
        value = ablation_report.share_rounds(base, fusion_only, default, "wall")
        expected = math.log(10 / 5) / math.log(10 / 4)
        self.assertAlmostEqual(value["median"], expected)
        # The same default gain (ln 2.5 = 0.92) inside a baseline spread of 100%.
        noisy = row([10.0, 10.0], 1.0)
        self.assertIsNone(
            ablation_report.share_rounds(noisy, fusion_only, default, "wall")
        )
        # Default no faster than the baseline: no gain to divide.
        self.assertIsNone(
            ablation_report.share_rounds(default, fusion_only, base, "wall")
        )

    def test_recorded_figures_come_from_one_run(self):
        def rows(run, arms):
            return [
                {"model": "m", "mode": "inference", "arm": a, "median_s": run}
                for a in arms
            ]

        first = rows(1.0, ("eager", "fx_fusion"))
        second = rows(2.0, ("eager", "fusion_only", "fx_fusion"))
        case = ablation_report._recorded_case(
            [first, second], "m", "inference", ("fusion_only", "fx_fusion")
        )
        self.assertEqual({r["median_s"] for r in case.values()}, {2.0})
        self.assertEqual(
            ablation_report._recorded_case([first], "m", "inference", ("no_opt",)),
            {},
        )

    def test_leave_one_out_arms_are_options_fusion_only_holds(self):
        from torch._inductor import fusion_ablation

        held = {
            h.option: h.value
            for h in fusion_ablation.for_this_release(fusion_ablation.FUSION_ONLY)
        }
        arms = ablation.expand_arms("eager,leave_one_out", "cuda")
        self.assertEqual(arms[:3], ["eager", "fusion_only", "default"])
        options = [a.removeprefix(ablation.LEAVE_ONE_OUT) for a in arms[3:]]
        self.assertIn("pattern_matcher", options)
        self.assertNotIn("cpp.threads", options)  # the C++ backend's, not CUDA's
        self.assertIn("default-cpp.threads", ablation.leave_one_out_arms("cpu"))
        for option in options:
            self.assertEqual(
                ablation.arm_switches(ablation.LEAVE_ONE_OUT + option),
                {option: held[option]},
            )
        self.assertFalse(ablation.known_arm("default-no_such_option"))
        inductor, functorch = ablation.split_switches(
            {"functorch.cse": False, "pattern_matcher": False}
        )
        self.assertEqual(
            (inductor, functorch), ({"pattern_matcher": False}, {"cse": False})
        )

    def test_leave_one_out_table_reads_each_arm_against_default(self):
        """A real CPU run of default, fusion_only and default without
        split_reductions side by side: each matches eager, and the
        leave-one-out table reads the arm's time against default's."""
        rows = ablation.run_model(
            "two_axis_reductions",
            "cpu",
            "full",
            train=False,
            repeats=4,
            arms=("fusion_only", "default", "default-split_reductions"),
            rounds=2,
        )
        by_arm = {r["arm"]: r for r in rows}
        for row in rows:
            self.assertTrue(row["matches_eager"], row)
        markdown, found = ablation_report.leave_one_out(rows)
        self.assertIn("Leave one out", markdown)
        case = found["two_axis_reductions/inference"]
        self.assertEqual(case["measure"], "wall")
        self.assertEqual(set(case["options"]), {"split_reductions"})
        self.assertAlmostEqual(
            case["options"]["split_reductions"],
            by_arm["default-split_reductions"]["wall_s"] / by_arm["default"]["wall_s"],
        )

    def test_arms_live_side_by_side_and_are_timed_in_rounds(self):
        """A real CPU run of one case: every arm compiled by its own
        torch.compile with its switches as options, all warm before timing
        (no frame compiled while timing), the switches in effect (no_fusion
        generates more kernels than default), each arm with its rounds."""
        limit = torch._dynamo.config.recompile_limit
        rows = ablation.run_model(
            "layer_norm_gelu",
            "cpu",
            "ci",
            train=False,
            repeats=6,
            arms=("eager", "no_fusion", "default"),
            rounds=3,
        )
        by_arm = {r["arm"]: r for r in rows}
        self.assertEqual(list(by_arm), ["eager", "no_fusion", "default"])
        # The raised recompile limit held only while compiling.
        self.assertEqual(torch._dynamo.config.recompile_limit, limit)
        for row in rows:
            self.assertTrue(row["matches_eager"], row)
            self.assertEqual(row["frames_compiled_while_timing"], 0)
            self.assertEqual(len(row["wall_rounds"]), 3)
            self.assertEqual(row["median_s"], row["wall_s"])
            self.assertIsNotNone(row["wall_spread"])
            self.assertIsNone(row["gpu_kernel_s"])  # no GPU: no kernel time
        self.assertGreater(
            by_arm["no_fusion"]["generated_kernels"],
            by_arm["default"]["generated_kernels"],
        )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "run.json"
            path.write_text(json.dumps({"rows": rows}))
            ablation_report.write_report(path)
            table = path.with_suffix(".md").read_text()
            self.assertTrue(path.with_suffix(".png").exists())
        self.assertIn("Wall-clock step time without CUDA graphs", table)
        self.assertNotIn("GPU kernel time", table)  # not measured on the CPU
        self.assertIn("| layer_norm_gelu | inference |", table)

    @unittest.skipUnless(TEST_CUDA, "needs a CUDA device")
    def test_kernel_time_and_capture_on_cuda(self):
        x = torch.randn(1024, 1024, device="cuda")
        fused = torch.compile(lambda t: (t.sin() + t.cos()).relu())

        def eager_step():
            return (x.sin() + x.cos()).relu()

        def compiled_step():
            return fused(x)

        compiled_step()
        profiled = kernel_time_rounds(
            {"eager": eager_step, "compiled": compiled_step}, rounds=2, per_round=2
        )
        # Eager launches sin, cos, add and relu; Inductor one fused kernel.
        self.assertEqual(profiled["eager"]["launches"], 4)
        self.assertEqual(profiled["compiled"]["launches"], 1)
        self.assertEqual(profiled["compiled"]["unattributed_s"], 0)
        self.assertLess(
            profiled["compiled"]["gpu_s"]["median"],
            profiled["eager"]["gpu_s"]["median"],
        )
        # The one-arm form the study and combo_micro use.
        single = kernel_profile(compiled_step, "cuda")
        self.assertEqual(single["launches"], 1)
        self.assertGreater(single["gpu_s"], 0)
        self.assertIsNone(kernel_profile(compiled_step, "cpu"))
        replay, _, why = capture_step(compiled_step)
        self.assertIsNone(why)
        x.copy_(torch.randn_like(x))
        self.assertEqual(replay(), eager_step())
        replay, _, why = capture_step(lambda: x.sum().item())
        self.assertIsNone(replay)
        self.assertIn("Error", why)


class TestGoldenRecords(TestCase):
    """The golden comparison masks what is measured and nothing else, and two
    records of one tree agree."""

    def test_masks_measurements_not_counts_or_names(self):
        masked = golden_boundaries.masked
        self.assertEqual(
            masked("saves 12 KiB and 1 launch: 856 ns (9 GB/s, 0.75x, 45%)"),
            "saves 12 KiB and 1 launch: # (#, #, #)",
        )
        self.assertEqual(masked("op12 -> buf3: 3 launches"), "op12 -> buf3: 3 launches")
        self.assertEqual(masked("at /tmp/tmpab12/page.html"), "at <path>")
        # where a source file lies is masked, its name and the code are not
        self.assertEqual(
            masked('<code title="/work/a/.venv/x/models.py:12">models.py:12</code>'),
            '<code title="<path>">models.py:#</code>',
        )
        self.assertEqual(masked("mm -> cos: extern_kernel"), "mm -> cos: extern_kernel")

    def test_differences_count_repeated_lines(self):
        graph = {"kernels": [], "boundaries": ["a -> b: x"], "realized": []}
        before = {"cases": {"c": {"0/0": {**graph, "summary": ["s", "s"]}}}}
        after = {"cases": {"c": {"0/0": {**graph, "summary": ["s"]}}}}
        self.assertEqual(
            golden_boundaries.differences(before, after), ["c 0/0 summary - s"]
        )
        after["cases"]["c"]["0/0"]["boundaries"] = ["a -> b: y"]
        self.assertIn(
            "c 0/0 boundaries + a -> b: y",
            golden_boundaries.differences(before, after),
        )

    @unittest.skipIf(golden_boundaries.CHROMIUM is None, "needs Chromium")
    def test_two_records_of_one_tree_agree(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = [os.path.join(tmp, f"g{i}.json") for i in (1, 2)]
            for path in paths:
                subprocess.run(
                    [
                        sys.executable,
                        str(BENCHMARKS / "golden_boundaries.py"),
                        "record",
                        "--pages",
                        "--no-programs",
                        "--models",
                        "sin_cos",
                        "--steps",
                        "inference",
                        "--out",
                        path,
                    ],
                    check=True,
                    capture_output=True,
                    timeout=600,
                )
            first = json.loads(Path(paths[0]).read_text())
            self.assertTrue(first["pages"]["sin_cos-inference"])
            self.assertTrue(first["schema"])
            graph = next(iter(first["cases"]["sin_cos-inference"].values()))
            self.assertTrue(graph["summary"][0].startswith("graph "))
            self.assertEqual(
                golden_boundaries.differences(
                    first, json.loads(Path(paths[1]).read_text())
                ),
                [],
            )


if __name__ == "__main__":
    run_tests()
