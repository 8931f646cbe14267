# Owner(s): ["module: inductor"]
"""The calibration of the fusion report's predicted gains
(benchmarks/fusion/predictions.py): Spearman's rank correlation, matching
kernels of a forced compile to the stock one, why a measured gain is not the
predicted one, the points and sets of a calibration, merging results files,
and a real CPU run of two calibration cases through the fork.  The GPU runs
are in benchmarks/results/.  The whole-model verdict each case carries is
tested in test_fusion_verdict.py.

A test of the fork's benchmarks, beside them: it travels in no pull-request
stack (``make export``), since the benchmarks do not either."""

import json
import math
import sys
import tempfile
from pathlib import Path

# Imported before benchmarks/fusion goes onto sys.path: common_cuda imports
# numba where it is installed (the GPU machine), numba imports the coverage
# package, and benchmarks/fusion/coverage.py would shadow it.
import torch.testing._internal.common_cuda  # noqa: F401
from torch._inductor.test_case import run_tests, TestCase


REPO = Path(__file__).resolve().parents[3]
BENCHMARKS = REPO / "benchmarks" / "fusion"
sys.path.insert(0, str(BENCHMARKS))

import predictions  # noqa: E402
import predictions_report  # noqa: E402


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

        text = predictions_report.markdown(result)
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
        self.assertIn(" calibration: n/a over 2;", predictions_report.markdown(result))


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


if __name__ == "__main__":
    run_tests()
