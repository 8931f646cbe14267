"""The bound of a reduction's form (benchmarks/fusion/probes/reductions_form_bound.py):
the move-only kernels compute what they claim (run by Triton's interpreter on
the CPU), each op's forms move at least the bytes the sweep counts, and a
sweep is set against the bounds as the results pages read it.  The bounds
themselves are timed on a GPU by the probe, not here.

A test of the fork's benchmarks, beside them: it travels in no pull-request
stack (``make export``), since the probe does not either.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


# benchmarks/fusion: the sweep (reductions.py) and its probes/
FUSION = Path(__file__).resolve().parents[1]
PROBES = FUSION / "probes"
HAS_TRITON = importlib.util.find_spec("triton") is not None


@unittest.skipUnless(HAS_TRITON, "the probe's kernels are Triton's")
class TestFormBound(TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for path in (PROBES, PROBES.parent):
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        import reductions
        import reductions_form_bound
        import reductions_form_explain

        cls.probe = reductions_form_bound
        cls.explain = reductions_form_explain
        cls.reductions = reductions

    def test_every_op_and_pass_has_forms_moving_at_least_its_bytes(self):
        # a form reads each of its first inputs, then each of its second and
        # writes a row: in rows' bytes it moves no less than the op's least
        forms = self.probe.FORMS
        for op in self.reductions.OPS:
            for pass_, backward in (("forward", False), ("forward+backward", True)):
                names = self.explain.OP_FORMS[(op, pass_)]
                moved = sum(
                    len(forms[n].first) + len(forms[n].second) + forms[n].writes
                    for n in names
                )
                least = self.reductions.least_bytes(op, 1, 1024, 2, backward) / 2048
                self.assertGreaterEqual(moved, int(least), (op, pass_))

    def test_the_arithmetic_forms_move_the_data_of_the_plain_ones(self):
        # a bound with the op's least arithmetic adds exps, not bytes
        forms = self.probe.FORMS
        for key, names in self.explain.ARITHMETIC_FORMS.items():
            plain = self.explain.OP_FORMS[key]
            self.assertEqual(len(names), len(plain), key)
            for name, plain_name in zip(names, plain):
                self.assertEqual(forms[name][:3], forms[plain_name][:3], key)
                self.assertEqual(forms[plain_name].arithmetic, self.probe.MOVE)
            self.assertNotEqual(forms[names[0]].arithmetic, self.probe.MOVE, key)

    def test_variants_loop_every_row_and_hold_short_ones_on_chip(self):
        names = [v[0] for v in self.probe.variants(50257, 2)]
        self.assertIn("loop_r8192_w32", names)
        self.assertFalse(any(n.startswith("chip") for n in names))
        short = self.probe.variants(512, 2)
        # aligned rows on chip take no head: a block of the row itself
        self.assertEqual(
            [v for v in short if v[3] and v[6] == 1],
            [("chip_r512_w4", 512, 4, True, 1, False, 1)],
        )
        # short rows on chip also several a block, at 4-32 elements a thread
        several = [v for v in short if v[6] > 1]
        self.assertIn(("chip_r512_x8_w16", 512, 16, True, 1, False, 8), several)
        self.assertTrue(all(4 <= v[1] * v[6] // (32 * v[2]) <= 32 for v in several))
        self.assertFalse(
            [v for v in self.probe.variants(4096, 2) if v[6] > 1], "only short rows"
        )
        # looped kernels with Inductor's cache hints and without
        self.assertIn("loop_r8192_w32_nohints", names)
        # steps longer than the row only add masks
        self.assertEqual({v[1] for v in short if not v[3]}, {2048})
        # a ragged row on chip makes room for its head
        ragged = [v for v in self.probe.variants(1001, 2) if v[3]]
        self.assertTrue(ragged and all(v[1] == 1024 and v[4] == 8 for v in ragged))

    def test_the_move_only_kernels_compute_their_reference(self):
        # Triton's interpreter, in a process of its own (it is chosen when
        # the kernel is defined): every form, looped and on chip, over rows
        # whose starts are not 16-byte aligned
        script = textwrap.dedent(
            """
            import sys
            sys.path.insert(0, sys.argv[1])
            import torch
            import reductions_form_bound as fb
            worst = 0.0
            for form in fb.FORMS.values():
                for rows, row in ((5, 37), (3, 64), (2, 301)):
                    # off zero: a layer norm's mean is more than rounding
                    a = torch.randn(rows, row, dtype=torch.bfloat16) * 2 + 0.5
                    b = torch.randn(rows, row, dtype=torch.bfloat16)
                    total, value = fb.reference(form, a, b)
                    chip = fb.next_power_of_2(row + 7)
                    for v in (("l", 16, 1, False, 8, True, 1),
                              ("l", 64, 1, False, 8, False, 1),
                              ("c", chip, 1, True, 8, False, 1),
                              ("c", chip, 1, True, 8, False, 4)):
                        out = torch.zeros_like(a)
                        row_out = torch.zeros(rows)
                        fb.run_form(form, a, b, out, row_out, v)
                        err = float(((row_out - total).abs() / (total.abs() + 1)).max())
                        if form.writes:
                            # softmax's values are small: relative to 1 at least
                            rel = (out.float() - value).abs() / (value.abs() + 1)
                            err = max(err, float(rel.max()))
                        else:
                            assert not out.any(), "a form without a write wrote"
                        worst = max(worst, err)
            print(worst)
            """
        )
        env = {**os.environ, "TRITON_INTERPRET": "1"}
        done = subprocess.run(
            [sys.executable, "-c", script, str(PROBES)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        # bfloat16 rounding of the written row, float32 sums
        self.assertLess(float(done.stdout.split()[-1]), 1e-2)

    def test_a_sweep_set_against_the_bounds(self):
        def forms(us):
            return {name: {"best_us": us} for name in self.probe.FORMS}

        # 1 MB of 16-bit rows; the elementwise copy 1 us: 2 TB/s
        bound = {
            "cases": [
                {
                    "rows": 4,
                    "row": 8,
                    "dtype": "bfloat16",
                    "bytes": 1_000_000,
                    "copy_us": {"elementwise": 1.0, "clone": 2.0},
                    "forms": forms(1.25),
                }
            ]
        }

        def case(op, pass_, pass_us, dtype="float16"):
            return {
                "op": op,
                "rows": 4,
                "row": 8,
                "dtype": dtype,
                "pass": pass_,
                "bytes": 2_000_000,
                "arms": {
                    "eager": {"s": 2e-6},
                    "default": {"s": 4e-6},
                    "one_pass": {"s": pass_us * 1e-6},
                },
            }

        earlier = {"cases": [case("softmax", "forward", 1.0)]}
        later = {
            "cases": [
                # replaces the earlier softmax: 2e6 bytes in 1.5 us at 2 TB/s
                case("softmax", "forward", 1.5),
                # two kernels' forms: a bound of 2.5 us
                case("layer_norm", "forward+backward", 4.0, "bfloat16"),
                # at the goal: left out of the table, not counted as short
                case("rms_norm", "forward", 1.1),
                case("softmax", "forward", 9.0, "float32"),
            ]
        }
        # a second bound file's faster form serves; its slower ones do not
        other = {
            "cases": [
                {
                    **bound["cases"][0],
                    "forms": {**forms(9.0), "two_reads": {"best_us": 1.0}},
                }
            ]
        }
        table, counts = self.explain.explain([bound], [earlier, later])
        # a later sweep of some arms keeps the earlier eager
        only_pass = {"cases": [case("softmax", "forward", 1.5)]}
        del only_pass["cases"][0]["arms"]["eager"]
        kept, _ = self.explain.explain([bound], [earlier, only_pass])
        self.assertIn("| softmax | 4 x 8 | float16 | forward | 50% | 25% | 67% |", kept)
        merged, _ = self.explain.explain([bound, other], [later])
        self.assertIn(
            "| softmax | 4 x 8 | float16 | forward | 50% | 25% | 67% | 100% | 1.50x "
            "| 80% | 1.20x |",
            merged,
        )
        self.assertEqual(
            table.splitlines()[2:],
            [
                "| layer_norm | 4 x 8 | bfloat16 | forward+backward | 50% | 25% | 25% "
                "| 40% | 1.60x | 40% | 1.60x |",
                "| softmax | 4 x 8 | float16 | forward | 50% | 25% | 67% | 80% | 1.20x "
                "| 80% | 1.20x |",
            ],
        )
        # the layer norm is behind eager (4 us against 2), and eager beats
        # its form's bound of 2.5 us; float32 has no bound file: left out
        self.assertEqual(
            counts,
            {
                "cases": 3,
                "under_goal": 2,
                "bound_under_goal": 2,
                "within_10pct": 0,
                "behind_eager": 1,
                "eager_beats_bound": 1,
                "no_bound": 0,
            },
        )
        # with a float32 bound: float32 cases are held to eager only, one at
        # a shape the bound lacks is listed without a bound
        wide = {
            "cases": [{**bound["cases"][0], "dtype": "float32", "forms": forms(1.25)}]
        }
        elsewhere = {**case("softmax", "forward", 9.0, "float32"), "rows": 8}
        wide_table, wide_counts = self.explain.explain(
            [bound, wide], [{"cases": [*later["cases"], elsewhere]}]
        )
        self.assertIn(
            "| softmax | 4 x 8 | float32 | forward | 50% | 25% | 11% | 80% | 7.20x "
            "| 80% | 7.20x |",
            wide_table,
        )
        self.assertIn(
            "| softmax | 8 x 8 | float32 | forward | 50% | 25% | 11% | - | - | - | - |",
            wide_table,
        )
        self.assertEqual((wide_counts["cases"], wide_counts["behind_eager"]), (3, 3))
        self.assertEqual(
            (wide_counts["eager_beats_bound"], wide_counts["no_bound"]), (1, 1)
        )
        self.assertIn("behind eager in 3 cases", self.explain.summary(wide_counts))
        everything, _ = self.explain.explain([bound], [later], everything=True)
        self.assertIn("| rms_norm | 4 x 8 | float16 | forward |", everything)
        # bound files of no element size of the sweeps: a one-line error
        with self.assertRaises(SystemExit):
            self.explain.explain([{"cases": []}], [later])

    def test_bad_input_is_a_one_line_error(self):
        for argv in (["--explain", "sweep.json"], ["--shapes", "12by3"]):
            with self.assertRaises(SystemExit) as raised:
                self.probe.main(argv)
            self.assertTrue(str(raised.exception).startswith("error: "))


if __name__ == "__main__":
    run_tests()
