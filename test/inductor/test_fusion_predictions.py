# Owner(s): ["module: inductor"]
"""The calibration of the fusion report's predicted gains
(benchmarks/fusion/predictions.py) and the whole-model verdict
(benchmarks/fusion/verdict.py): Spearman's rank correlation, matching kernels
of a forced compile to the stock one, why a measured gain is not the
predicted one, the points and sets of a calibration, merging results files,
and a real CPU run of two calibration cases through the fork.  The GPU runs
are in benchmarks/results/."""

import json
import math
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from torch._inductor.test_case import run_tests, TestCase

# Imported before benchmarks/fusion goes onto sys.path: common_cuda imports
# numba where it is installed (the GPU machine), numba imports the coverage
# package, and benchmarks/fusion/coverage.py would shadow it.
from torch.testing._internal.common_cuda import TEST_CUDA


REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks" / "fusion"
sys.path.insert(0, str(BENCHMARKS))

import predictions  # noqa: E402
import torch  # noqa: E402
import verdict  # noqa: E402


US = 1e-6


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _check(
    producer: str,
    consumer: str,
    predicted_s: float | None,
    gain_s: float | None,
    noise_s: float = 0.0,
    forced: bool = True,
    correct: bool = True,
    timed: bool = True,
) -> dict:
    """A check as ``predictions.run_case`` writes it on a GPU (timed by
    :class:`predictions.GraphKernelTimer`)."""
    check = {
        "graph": "0/0",
        "producer": producer,
        "consumer": consumer,
        "reason": "exceeds_max_fusion_size",
        "forced": forced,
        "correct": correct,
        "predicted_s": predicted_s,
        "bytes_saved": 4096,
        "launches_saved": 1,
    }
    if timed:
        check["timing"] = {
            "gain_s": gain_s,
            "noise_s": noise_s,
            "local_gain_s": gain_s,
            "launches": {"stock": 2, "forced": 1},
            "changed_kernels": [],
        }
    return check


def _case(name: str, checks: list[dict], family: str | None = None) -> dict:
    case = {"case": f"{name}-inference", "model": name, "step": "inference"}
    if family is not None:
        case["family"] = family
    case["checks"] = checks
    return case


def _monotone_case(name: str, family: str | None, sign: int) -> dict:
    """Three timed boundaries predicted 1, 2, 3 us (10, 20, 30 us outside the
    calibration set) whose measured gains rise with the prediction (sign 1)
    or fall (sign -1)."""
    scale = 1 if family == "calibration" else 10
    measured = [1, 2, 3] if sign > 0 else [3, 2, 1]
    return _case(
        name,
        [
            _check(f"p{i}", f"c{i}", (i + 1) * scale * US, m * scale * US)
            for i, m in enumerate(measured)
        ],
        family,
    )


class TestRankCorrelation(TestCase):
    def test_ties_share_their_mean_rank(self):
        self.assertEqual(predictions.ranks([3.0, 1.0, 3.0, 2.0]), [3.5, 1, 3.5, 2])
        self.assertEqual(predictions.ranks([5.0, 5.0, 5.0]), [2, 2, 2])
        self.assertEqual(predictions.ranks([]), [])

    def test_monotone_orders_give_plus_and_minus_one(self):
        # Ranks, not values: a convex rise is still a perfect correlation.
        xs = [1.0, 2.0, 3.0, 4.0]
        self.assertAlmostEqual(predictions.spearman(xs, [1, 10, 100, 1000]), 1.0)
        self.assertAlmostEqual(predictions.spearman(xs, [9, 5, 2, 0.5]), -1.0)

    def test_too_few_pairs_or_a_constant_side_have_no_correlation(self):
        self.assertIsNone(predictions.spearman([1.0, 2.0], [2.0, 1.0]))
        self.assertIsNone(predictions.spearman([1.0, 2.0, 3.0], [7.0, 7.0, 7.0]))
        self.assertIsNone(predictions.spearman([4.0, 4.0, 4.0], [1.0, 2.0, 3.0]))
        self.assertIsNone(predictions.spearman([1.0, 2.0, 3.0], [1.0, 2.0]))

    def test_tied_predictions_by_hand(self):
        # x ranks 1, 2.5, 2.5, 4 against y ranks 1..4: cov 4.5, var 4.5 and 5.
        rho = predictions.spearman([1.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])
        self.assertAlmostEqual(rho, 4.5 / math.sqrt(4.5 * 5))
        self.assertAlmostEqual(rho, 3 / math.sqrt(10))


class TestChangedKernels(TestCase):
    def test_stem_drops_only_a_triton_kernels_trailing_number(self):
        self.assertEqual(
            predictions._stem("triton_poi_fused_add_7"), "triton_poi_fused_add"
        )
        self.assertEqual(
            predictions._stem("triton_per_fused__softmax_12"),
            "triton_per_fused__softmax",
        )
        # No number to drop, or not a generated Triton kernel: unchanged.
        self.assertEqual(
            predictions._stem("triton_poi_fused_add"), "triton_poi_fused_add"
        )
        self.assertEqual(predictions._stem("cpp_fused_add_7"), "cpp_fused_add_7")
        self.assertEqual(predictions._stem("sm90_xmma_gemm_1"), "sm90_xmma_gemm_1")

    def test_renumbered_kernels_match_and_the_changed_ones_make_the_local_gain(self):
        """Forcing add and mul together renumbers the reduction after them:
        triton_red_fused_sum_2 and _1 are the same code (same launches), so
        their 1 us difference is noise left out; add, mul and the fused
        add_mul differ in launches and make the local gain."""
        stock = [
            {"name": "triton_poi_fused_add_0", "s": 10 * US, "launches": 1},
            {"name": "triton_poi_fused_mul_1", "s": 5 * US, "launches": 1},
            {"name": "triton_red_fused_sum_2", "s": 20 * US, "launches": 1},
        ]
        forced = [
            {"name": "triton_poi_fused_add_mul_0", "s": 9 * US, "launches": 1},
            {"name": "triton_red_fused_sum_1", "s": 21 * US, "launches": 1},
        ]
        local, rows = predictions._changed_kernels(stock, forced)
        self.assertAlmostEqual(local, (10 + 5 - 9) * US)
        # Largest difference first; the reduction is not among them.
        self.assertEqual(
            [r["name"] for r in rows],
            [
                "triton_poi_fused_add",
                "triton_poi_fused_add_mul",
                "triton_poi_fused_mul",
            ],
        )
        by_name = {r["name"]: r for r in rows}
        self.assertEqual(by_name["triton_poi_fused_add"]["launches"], [1, 0])
        self.assertEqual(by_name["triton_poi_fused_add_mul"]["launches"], [0, 1])
        self.assertAlmostEqual(by_name["triton_poi_fused_add_mul"]["forced_s"], 9 * US)
        # The limit trims the rows listed, not the local gain.
        local2, rows2 = predictions._changed_kernels(stock, forced, limit=1)
        self.assertAlmostEqual(local2, local)
        self.assertEqual([r["name"] for r in rows2], ["triton_poi_fused_add"])

    def test_a_stem_launched_a_different_number_of_times_is_changed(self):
        # Two numbered instances of one stem add up; a forced compile that
        # launches that stem once less changed it.
        stock = [
            {"name": "triton_poi_fused_relu_0", "s": 3 * US, "launches": 1},
            {"name": "triton_poi_fused_relu_4", "s": 3 * US, "launches": 1},
        ]
        forced = [{"name": "triton_poi_fused_relu_0", "s": 4 * US, "launches": 1}]
        local, rows = predictions._changed_kernels(stock, forced)
        self.assertAlmostEqual(local, 2 * US)
        self.assertEqual(rows[0]["launches"], [2, 1])
        self.assertAlmostEqual(rows[0]["stock_s"], 6 * US)
        # Identical launches everywhere: nothing changed, no local gain.
        self.assertEqual(predictions._changed_kernels(forced, forced), (0, []))


class TestWhyApart(TestCase):
    @staticmethod
    def _point(measured_us: float, predicted_us: float, noise_us: float = 0.5):
        return {
            "measured_s": measured_us * US,
            "predicted_s": predicted_us * US,
            "noise_s": noise_us * US,
        }

    def test_a_gain_inside_the_noise_says_so(self):
        self.assertEqual(
            predictions.why_apart(self._point(1.0, 5.0, noise_us=2.0), {}),
            "inside the noise: +1.0 us against 2.0 us between rounds",
        )
        self.assertTrue(
            predictions.why_apart(self._point(-2.0, 5.0, 2.0), {}).startswith(
                "inside the noise: -2.0 us"
            )
        )

    def test_a_slower_forced_compile_names_its_slower_kernel(self):
        changed = [
            # first by difference but faster when forced: not the culprit
            {"name": "triton_poi_fused_add", "stock_s": 9 * US, "forced_s": 0.0},
            {"name": "triton_poi_fused_cat", "stock_s": 1 * US, "forced_s": 5 * US},
        ]
        why = predictions.why_apart(
            self._point(-3.0, 2.0), {"timing": {"changed_kernels": changed}}
        )
        self.assertEqual(
            why,
            "the forced compile is slower: triton_poi_fused_cat takes 5.0 us "
            "against 1.0 us",
        )
        # Slower without a kernel to blame: read as less than predicted.
        self.assertIn(
            "less than predicted", predictions.why_apart(self._point(-3.0, 2.0), {})
        )

    def test_more_than_twice_the_prediction_gives_the_launches(self):
        check = {"timing": {"launches": {"stock": 5, "forced": 3}}}
        why = predictions.why_apart(self._point(10.0, 2.0), check)
        self.assertTrue(
            why.startswith("more than the bytes predict (10.0 against 2.0 us)"), why
        )
        self.assertIn("launches 5 -> 3", why)
        self.assertIn("changed other fusions", why)

    def test_less_than_half_the_prediction_suspects_l2(self):
        why = predictions.why_apart(self._point(1.0, 4.0), {})
        self.assertTrue(why.startswith("less than predicted (1.0 against 4.0 us)"))
        self.assertIn("L2", why)

    def test_within_twice_the_prediction_either_way(self):
        for measured in (1.0, 3.0, 4.0):  # half, 1.5x and exactly 2x of 2 us
            with self.subTest(measured_us=measured):
                self.assertEqual(
                    predictions.why_apart(self._point(measured, 2.0), {}),
                    "within 2x of the prediction",
                )


class TestCalibrationSets(TestCase):
    def test_only_forced_correct_and_timed_checks_become_points(self):
        case = _case(
            "shared_read_1",
            [
                _check("sin", "cos", 2 * US, 3 * US, noise_s=0.5 * US),
                _check("a", "b", 2 * US, 3 * US, forced=False),
                _check("c", "d", 2 * US, 3 * US, correct=False),
                # the CPU's check: timed by its default timer, no "timing"
                _check("e", "f", 2 * US, 3 * US, timed=False),
                _check("g", "h", 2 * US, None),
                _check("i", "j", None, 3 * US),
            ],
            family="calibration",
        )
        other = _case("resnet18", [_check("conv", "relu", 1 * US, 2 * US)])
        points = predictions.calibration_points([case, other])
        self.assertEqual(len(points), 2)
        first, second = points
        self.assertEqual(first["boundary"], "sin -> cos")
        self.assertEqual(first["case"], "shared_read_1-inference")
        self.assertEqual(first["set"], "calibration")
        self.assertEqual(first["predicted_s"], 2 * US)
        self.assertEqual(first["measured_s"], 3 * US)
        self.assertEqual(first["noise_s"], 0.5 * US)
        self.assertEqual(first["local_s"], 3 * US)
        self.assertEqual(first["bytes_saved"], 4096)
        # A case without a family (or of another family) is of the model set.
        self.assertEqual(second["set"], "model set")
        micro = _case("sin_cos", [_check("x", "y", 1 * US, 2 * US)], "micro")
        self.assertEqual(predictions.calibration_points([micro])[0]["set"], "model set")

    def test_summary_gives_each_set_its_own_rho(self):
        cases = [
            _monotone_case("shared_read_1", "calibration", +1),
            _monotone_case("resnet18", None, -1),
            # two more model-set points: the model set has 5, no longer -1
            _case("bert", [_check("p", "q", 5 * US, 100 * US)]),
            _case("gru", [_check("p", "q", 7 * US, 0.1 * US)]),
        ]
        result = predictions.summarize(cases, {"device": "cpu", "top": 3})
        self.assertEqual(result["device"], "cpu")
        self.assertEqual(result["top"], 3)
        self.assertEqual(len(result["points"]), 8)
        by_set = result["spearman_by_set"]
        self.assertEqual(set(by_set), {"calibration", "model set"})
        self.assertEqual(by_set["calibration"]["n"], 3)
        self.assertAlmostEqual(by_set["calibration"]["spearman"], 1.0)
        self.assertEqual(by_set["model set"]["n"], 5)
        model_points = [p for p in result["points"] if p["set"] == "model set"]
        self.assertAlmostEqual(
            by_set["model set"]["spearman"],
            predictions.spearman(
                [p["predicted_s"] for p in model_points],
                [p["measured_s"] for p in model_points],
            ),
        )
        self.assertNotAlmostEqual(by_set["model set"]["spearman"], -1.0)
        # Every point says why it is apart from its prediction.
        whys = {p["case"] + " " + p["boundary"]: p["why"] for p in result["points"]}
        self.assertEqual(
            whys["shared_read_1-inference p0 -> c0"], "within 2x of the prediction"
        )
        self.assertIn("more than the bytes predict", whys["bert-inference p -> q"])
        self.assertIn("L2", whys["gru-inference p -> q"])

        text = predictions.markdown(result)
        self.assertIn(
            f" calibration: {by_set['calibration']['spearman']:.2f} over 3;", text
        )
        self.assertIn(
            f" model set: {by_set['model set']['spearman']:.2f} over 5;", text
        )
        self.assertIn(
            f"Spearman's rho over 8 boundaries: {result['spearman']:.2f}", text
        )

    def test_a_set_with_two_points_has_no_rho(self):
        cases = [
            _case(
                "halves_1",
                [_check("a", "b", US, US), _check("c", "d", 2 * US, 2 * US)],
                "calibration",
            )
        ]
        result = predictions.summarize(cases, {})
        self.assertEqual(
            result["spearman_by_set"], {"calibration": {"n": 2, "spearman": None}}
        )
        self.assertIsNone(result["spearman"])
        self.assertIn(" calibration: n/a over 2;", predictions.markdown(result))


class TestReplot(TestCase):
    def test_plot_merges_the_cases_of_two_runs_and_recomputes_rho(self):
        """A calibration run (rho 1 over its 3 points) and a model-set run
        (rho -1 over its 3) merged: predicted 1, 2, 3, 10, 20, 30 us against
        measured 1, 2, 3, 30, 20, 10 us; rank differences 0, 0, 0, 2, 0, -2,
        so rho = 1 - 6 * 8 / (6 * 35) = 27/35."""
        runs = [
            predictions.summarize(
                [_monotone_case("shared_read_1", "calibration", +1)],
                {"device": "A", "command": "run a", "failures": []},
            ),
            predictions.summarize(
                [_monotone_case("resnet18", None, -1)],
                {
                    "device": "B",
                    "command": "run b",
                    "failures": [{"case": "bert-training", "stderr": "boom"}],
                },
            ),
        ]
        self.assertAlmostEqual(runs[0]["spearman"], 1.0)
        self.assertAlmostEqual(runs[1]["spearman"], -1.0)
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, run in enumerate(runs):
                paths.append(Path(tmp) / f"run{i}.json")
                paths[-1].write_text(json.dumps(run))
            out = Path(tmp) / "merged" / "out.json"
            out.parent.mkdir()
            code = predictions.main(
                ["--plot", str(paths[0]), str(paths[1]), "--json", str(out)]
            )
            self.assertEqual(code, 0)
            merged = json.loads(out.read_text())
            text = out.with_suffix(".md").read_text()
            if _has_matplotlib():
                self.assertGreater(out.with_suffix(".png").stat().st_size, 0)
        self.assertEqual(
            [c["case"] for c in merged["cases"]],
            ["shared_read_1-inference", "resnet18-inference"],
        )
        self.assertEqual(len(merged["points"]), 6)
        self.assertAlmostEqual(merged["spearman"], 27 / 35)
        self.assertEqual(
            {
                k: (v["n"], round(v["spearman"], 6))
                for k, v in merged["spearman_by_set"].items()
            },
            {"calibration": (3, 1.0), "model set": (3, -1.0)},
        )
        # The first run's meta, both commands, every failure.
        self.assertEqual(merged["device"], "A")
        self.assertEqual(merged["command"], ["run a", "run b"])
        self.assertEqual(
            merged["failures"], [{"case": "bert-training", "stderr": "boom"}]
        )
        self.assertIn("Spearman's rho over 6 boundaries: 0.77", text)
        self.assertIn("| resnet18-inference | `p2 -> c2` |", text)


class TestCalibrationRun(TestCase):
    def test_cpu_run_of_two_calibration_cases(self):
        """A real run: the parent measures one cost model, the two cases
        compile side by side in children priced at that model (passed as
        TORCHINDUCTOR_FUSION_COST_MODEL), and each forces its one heuristic
        boundary: shared_read_1's sin and cos (kept apart by
        max_fusion_size=1; fused, the (8, 1024) float32 input is read once)
        and halves_1's two halves (no_shared_data: no bytes saved)."""
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "cal.json"
            lock = Path(tmp) / "gpu.lock"
            code = predictions.main(
                [
                    *("--device", "cpu", "--shapes", "ci"),
                    *("--models", "shared_read_1,halves_1", "--train", "none"),
                    *("--top", "2", "--jobs", "2", "--gpu-lock", str(lock)),
                    *("--json", str(out)),
                ]
            )
            self.assertEqual(code, 0)
            result = json.loads(out.read_text())
            text = out.with_suffix(".md").read_text()
            # the children timed under the lock they were given
            self.assertTrue(lock.exists())
        self.assertEqual(result["failures"], [])
        self.assertEqual(result["device"], "cpu")
        self.assertEqual(result["shapes"], "ci")
        cases = {c["case"]: c for c in result["cases"]}
        self.assertEqual(set(cases), {"shared_read_1-inference", "halves_1-inference"})
        model = result["cost_model"]
        self.assertGreater(model["bandwidth_bytes_per_s"], 0)
        self.assertGreater(model["launch_s"], 0)
        for name, case in cases.items():
            with self.subTest(case=name):
                self.assertEqual(case["family"], "calibration")
                self.assertEqual(case["cost_model"], model)
                compiled_at = case["compile_time_cost_model"]
                self.assertTrue(compiled_at["source"].startswith("given:"), compiled_at)
                # the environment carries 6 significant digits
                for key in ("bandwidth_bytes_per_s", "launch_s"):
                    self.assertLess(
                        abs(compiled_at[key] - model[key]) / model[key], 1e-5
                    )
                self.assertEqual(len(case["checks"]), 1)
                check = case["checks"][0]
                self.assertTrue(check["forced"], check)
                self.assertTrue(check["correct"], check)
                self.assertEqual(check["kernels"], {"stock": 2, "forced": 1})
                # On the CPU the check times with its default timer (no
                # "timing" with a gain and its noise): no calibration point.
                self.assertNotIn("timing", check)
                self.assertIn(f"- **{name}**: {case['verdict']['line']}", text)
                self.assertIn("compiled", case["verdict"]["line"])
        shared = cases["shared_read_1-inference"]["checks"][0]
        self.assertEqual(shared["reason"], "exceeds_max_fusion_size")
        self.assertEqual((shared["producer"], shared["consumer"]), ("sin", "cos"))
        self.assertEqual(shared["bytes_saved"], 8 * 1024 * 4)
        self.assertGreater(shared["predicted_s"], 0)
        halves = cases["halves_1-inference"]["checks"][0]
        self.assertEqual(halves["reason"], "no_shared_data")
        self.assertEqual(halves["bytes_saved"], 0)
        self.assertEqual(result["points"], [])
        self.assertIsNone(result["spearman"])

    def test_unknown_model_is_refused_naming_the_calibration_set(self):
        with self.assertRaises(SystemExit) as e:
            predictions.main(["--device", "cpu", "--models", "shared_read_3"])
        message = str(e.exception)
        self.assertIn("shared_read_3", message)
        self.assertIn("calibration", message)
        self.assertIn("shared_read_1", message)

    def test_jobs_need_the_lock(self):
        with self.assertRaises(SystemExit) as e:
            predictions.main(["--device", "cpu", "--models", "halves_1", "--jobs", "2"])
        self.assertIn("--jobs N needs --gpu-lock", str(e.exception))

    def test_an_unwritable_json_path_is_refused_before_running(self):
        with tempfile.TemporaryDirectory() as tmp:
            blocker = Path(tmp) / "file"
            blocker.write_text("")
            with self.assertRaises(SystemExit) as e:
                predictions.main(
                    [
                        *("--device", "cpu", "--models", "halves_1"),
                        *("--json", str(blocker / "x.json")),
                    ]
                )
        self.assertIn("cannot write there", str(e.exception))


def _report(kernels: list[dict], ops: list[dict]) -> dict:
    return {"graphs": [{"compile_id": "0/0", "ops": ops, "kernels": kernels}]}


# A graph with a library convolution, a generated relu+add and a view.
CONV_RELU = _report(
    kernels=[
        {
            "name": "extern_kernels.convolution",
            "kind": "extern",
            "ops": ["convolution"],
        },
        {
            "name": "buf1",
            "kind": "pointwise",
            "ops": ["relu", "add"],
            "function": "triton_poi_fused_add_relu_0",
        },
        {
            "name": "buf2",
            "kind": "pointwise",
            "ops": ["mul"],
            "function": "triton_poi_fused_mul_1",
        },
    ],
    ops=[
        {"name": "convolution", "target": "aten.convolution.default", "computes": True},
        {"name": "relu", "target": "aten.relu.default", "computes": True},
        {"name": "add", "target": "aten.add.Tensor", "computes": True},
        {"name": "mul", "target": "aten.mul.Tensor", "computes": True},
        {"name": "view", "target": "aten.view.default", "computes": False},
    ],
)


class TestVerdict(TestCase):
    def test_dominant_op_is_the_aten_op_with_most_self_time(self):
        def event(key, cpu_us, device_us, count):
            return SimpleNamespace(
                key=key,
                self_cpu_time_total=cpu_us,
                self_device_time_total=device_us,
                count=count,
            )

        events = [
            event("aten::sin", 30.0, 1.0, 3),
            event("aten::cos", 10.0, 9.0, 3),
            event("cpp_fused_sin_0", 500.0, 500.0, 1),  # not an aten op
        ]
        self.assertEqual(
            verdict.dominant_op(events, "cpu"),
            {"op": "aten::sin", "share": 0.75, "calls": 3},
        )
        self.assertEqual(verdict.dominant_op(events, "cuda")["op"], "aten::cos")
        self.assertIsNone(verdict.dominant_op([event("aten::sin", 0, 0, 1)], "cpu"))

    def test_what_compile_did_with_a_library_a_generated_and_a_traced_op(self):
        # mkldnn_convolution is eager's backend for the graphs' convolution.
        self.assertEqual(
            verdict.what_compile_did("aten::mkldnn_convolution", CONV_RELU),
            {
                "library_calls": 1,
                "in_generated_kernels": 0,
                "ops": 4,
                "kernels": 3,
                "generated": 2,
            },
        )
        self.assertEqual(
            verdict.what_compile_did("aten::relu", CONV_RELU)["in_generated_kernels"],
            1,
        )
        traced = verdict.what_compile_did("aten::_cudnn_rnn", CONV_RELU)
        self.assertEqual(
            (traced["library_calls"], traced["in_generated_kernels"]), (0, 0)
        )

    def test_verdict_lines_from_hand_numbers(self):
        base = {"eager_s": 2e-3, "compiled_s": 1e-3, "profiled_steps": 3}
        self.assertEqual(
            verdict.verdict_line(base),
            "compiled 2.00x eager (1.00 against 2.00 ms per step)",
        )
        traced = {
            **base,
            "dominant": {"op": "aten::_cudnn_rnn", "share": 0.8, "calls": 6},
            "compile": verdict.what_compile_did("aten::_cudnn_rnn", CONV_RELU),
        }
        self.assertEqual(
            verdict.verdict_line(traced),
            "compiled 2.00x eager (1.00 against 2.00 ms per step); eager spends "
            "80% of its host op time in aten::_cudnn_rnn (2 per step), which the "
            "compiled graphs do not call: Inductor traced it into 4 ops in 3 "
            "kernels (2 generated)",
        )
        library = {
            **base,
            "eager_s": 1e-3,
            "compiled_s": 4e-3,
            "gpu": {
                "eager_s": 0.5e-3,
                "compiled_s": 1.5e-3,
                "eager_launches": 120,
                "compiled_launches": 30,
            },
            "dominant": {"op": "aten::mkldnn_convolution", "share": 0.5, "calls": 3},
            "compile": verdict.what_compile_did("aten::mkldnn_convolution", CONV_RELU),
        }
        self.assertEqual(
            verdict.verdict_line(library),
            "compiled 0.25x eager (4.00 against 1.00 ms per step); GPU time 1.50 "
            "against 0.50 ms, launches 30 against 120, host beyond the GPU 2.50 "
            "against 0.50 ms; eager spends 50% of its GPU op time in "
            "aten::mkldnn_convolution (1 per step), which the compiled graphs "
            "still call (1 library calls among 3 kernels)",
        )

    def test_measure_verdict_of_a_real_cpu_compile(self):
        """sin(x) + cos(x) compiled: one generated kernel computes the op
        eager spends most time in."""
        from models import build

        from torch._inductor import fusion_report

        model, inputs = build("sin_cos", "cpu", "ci")
        torch._dynamo.reset()
        compiled = torch.compile(model)

        def eager_step():
            with torch.no_grad():
                return model(*inputs)

        def compiled_step():
            with torch.no_grad():
                return compiled(*inputs)

        with fusion_report.capture() as rep:
            compiled_step()
        data = rep.to_json()
        m = verdict.measure_verdict(
            "sin_cos",
            "inference",
            "cpu",
            eager_step,
            compiled_step,
            data,
            rounds=2,
            per_round=3,
        )
        self.assertGreater(m["eager_s"], 0)
        self.assertGreater(m["compiled_s"], 0)
        self.assertEqual(len(m["wall_rounds_s"]["eager"]), 2)
        self.assertNotIn("gpu", m)  # no kernel time on the CPU
        self.assertIn(m["dominant"]["op"], ("aten::sin", "aten::cos", "aten::add"))
        self.assertEqual(m["compile"]["library_calls"], 0)
        self.assertGreaterEqual(m["compile"]["in_generated_kernels"], 1)
        self.assertEqual(m["slower"], m["compiled_s"] > m["eager_s"])
        line = m["line"]
        self.assertTrue(
            line.startswith(f"compiled {m['eager_s'] / m['compiled_s']:.2f}x eager ("),
            line,
        )
        self.assertIn("eager spends", line)
        self.assertIn("host op time", line)
        self.assertIn("which the compiled graphs compute in generated kernels", line)

    def test_suspects_apply_to_the_ops_of_the_graphs(self):
        self.assertEqual(
            [s.option for s in verdict.suspects_for(CONV_RELU)],
            ["layout_optimization"],
        )
        no_conv = {
            "graphs": [
                {**g, "ops": [o for o in g["ops"] if o["name"] != "convolution"]}
                for g in CONV_RELU["graphs"]
            ]
        }
        self.assertEqual(verdict.suspects_for(no_conv), [])

    def test_verdict_line_says_where_the_library_op_time_went_and_the_suspects(self):
        m = {
            "eager_s": 10e-3,
            "compiled_s": 25e-3,
            "profiled_steps": 3,
            "dominant": {"op": "aten::mkldnn_convolution", "share": 0.8, "calls": 3},
            "compile": verdict.what_compile_did("aten::mkldnn_convolution", CONV_RELU),
            "dominant_s": {"eager": 8e-3, "compiled": 15e-3},
            "suspects": [
                {
                    "option": "layout_optimization",
                    "value": False,
                    "why": "because",
                    "eager_s": 11e-3,
                    "stock_s": 24e-3,
                    "compiled_s": 10e-3,
                }
            ],
        }
        self.assertEqual(
            verdict.verdict_line(m),
            "compiled 0.40x eager (25.00 against 10.00 ms per step); eager spends "
            "80% of its host op time in aten::mkldnn_convolution (1 per step), "
            "which the compiled graphs still call (1 library calls among 3 "
            "kernels); it takes 15.00 ms per step compiled against 8.00 ms eager, "
            "the rest of the step 10.00 against 2.00 ms; with "
            "layout_optimization=False compiled takes 10.00 ms, 1.10x eager, "
            "against 24.00 ms with it on, in the same rounds (because)",
        )

    def test_a_slower_conv_step_is_timed_without_its_suspect(self):
        """Two convolutions at batch 2 on the CPU: the compile lays them out
        channels-last and converts the weights on every step.  The verdict
        recompiles without layout optimization, and that compile's
        convolutions keep the contiguous layout."""
        from torch._inductor import fusion_report
        from torch._inductor.utils import run_and_get_code

        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(128, 128, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(128, 128, 3, padding=1),
        ).eval()
        x = torch.randn(2, 128, 16, 16)
        torch._dynamo.reset()
        compiled = torch.compile(model)
        with torch.no_grad(), fusion_report.capture() as rep:
            _, (stock_code,) = run_and_get_code(compiled, x)
        codes = {}

        def recompile(config):
            alt = torch.compile(model, options=config)
            with torch.no_grad():
                _, (codes[tuple(config.items())],) = run_and_get_code(alt, x)

            def step():
                with torch.no_grad():
                    return alt(x)

            return step

        def eager_step():
            with torch.no_grad():
                return model(x)

        def compiled_step():
            with torch.no_grad():
                return compiled(x)

        m = verdict.measure_verdict(
            "two_convs",
            "inference",
            "cpu",
            eager_step,
            compiled_step,
            rep.to_json(),
            rounds=2,
            per_round=3,
            recompile=recompile,
        )
        # The stock compile's convolutions write channels-last outputs.
        channels_last = str(
            tuple(x.contiguous(memory_format=torch.channels_last).stride())
        )
        self.assertIn(channels_last, stock_code)
        self.assertEqual(m["compile"]["library_calls"], 2, msg=str(m["dominant"]))
        self.assertGreater(m["dominant_s"]["compiled"], 0)
        self.assertGreater(m["dominant_s"]["eager"], 0)
        if not m["slower"]:
            self.assertNotIn("suspects", m)
            self.skipTest("compiled was not slower on this machine")
        self.assertEqual(list(codes), [(("layout_optimization", False),)])
        self.assertNotIn(channels_last, codes[(("layout_optimization", False),)])
        (suspect,) = m["suspects"]
        self.assertEqual(suspect["option"], "layout_optimization")
        self.assertGreater(suspect["compiled_s"], 0)
        self.assertIn("with layout_optimization=False compiled takes", m["line"])

    @unittest.skipIf(not TEST_CUDA, "needs a CUDA device")
    def test_measure_verdict_on_cuda_counts_launches(self):
        """On a GPU, eager launches sin, cos and add; the compile one kernel."""
        x = torch.randn(1024, 1024, device="cuda")
        compiled = torch.compile(lambda t: t.sin() + t.cos())
        from torch._inductor import fusion_report

        with fusion_report.capture() as rep:
            compiled(x)
        m = verdict.measure_verdict(
            "sin_cos",
            "inference",
            "cuda",
            lambda: x.sin() + x.cos(),
            lambda: compiled(x),
            rep.to_json(),
            rounds=2,
            per_round=3,
        )
        self.assertEqual(m["gpu"]["eager_launches"], 3)
        self.assertEqual(m["gpu"]["compiled_launches"], 1)
        self.assertIn("GPU time", m["line"])
        self.assertIn("GPU op time", m["line"])


if __name__ == "__main__":
    run_tests()
