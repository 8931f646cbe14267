# Owner(s): ["module: inductor"]
"""The fork's environment switches (torch/_inductor/fusion_switches.py): one
parser, checked when ``torch._inductor.config`` is imported."""

import os
import subprocess
import sys
import tempfile

import torch._inductor.config as config
from torch._inductor import fusion_switches
from torch._inductor.test_case import run_tests, TestCase


BOOLS = [
    name for name in fusion_switches.BOOL_SWITCHES if name.startswith("TORCHINDUCTOR_")
]
CONFIG_OF = {
    name: target.rsplit(".", 1)[1]
    for name, target in fusion_switches.BOOL_SWITCHES.items()
    if target.startswith("torch._inductor.config.")
}
SPELLINGS = [
    ("1", True),
    ("true", True),
    ("TRUE", True),
    ("True", True),
    (" 1 ", True),
    ("0", False),
    ("false", False),
    ("FALSE", False),
    ("False", False),
]


def clean_env(**changes):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in fusion_switches.BOOL_SWITCHES
        and k not in fusion_switches.INT_SWITCHES
    }
    return {**env, **changes}


def python(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code],
        env=clean_env(**env),
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )


def python_each(code, envs):
    """``code`` run once per environment of ``envs``, the processes side by
    side (each imports torch: one after another they took a minute); their
    results in order, as :func:`python` gives them."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=clean_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tempfile.gettempdir(),
        )
        for env in envs
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate()
        results.append(
            subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        )
    return results


class TestParser(TestCase):
    def test_every_bool_switch_is_a_config_option_or_the_fork_switch(self):
        self.assertEqual(
            sorted(CONFIG_OF),
            [
                "TORCHINDUCTOR_FUSION_ONLY",
                "TORCHINDUCTOR_LAUNCH_BOUND_COMBO_KERNELS",
                "TORCHINDUCTOR_NO_FUSION",
                "TORCHINDUCTOR_ONE_PASS_REDUCTIONS",
                "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_ALIGNED_LOADS",
                "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_FAST_EXP",
                "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_LEAN_COMBINE",
                "TORCHINDUCTOR_ONE_PASS_REDUCTIONS_SPLIT_ROWS",
            ],
        )
        # the fork's own off switch is its activation's (tools/), not torch's
        self.assertNotIn("FUSION_FORK_DISABLE", fusion_switches.BOOL_SWITCHES)
        for option in CONFIG_OF.values():
            self.assertIs(type(getattr(config, option)), bool)

    def test_accepted_spellings(self):
        for name in fusion_switches.BOOL_SWITCHES:
            for value, expected in SPELLINGS:
                with self.subTest(name=name, value=value):
                    self.assertIs(
                        fusion_switches.env_bool(name, not expected, {name: value}),
                        expected,
                    )
                    fusion_switches.check_environ({name: value})

    def test_empty_or_unset_is_the_default(self):
        for name in fusion_switches.BOOL_SWITCHES:
            for default in (False, True):
                self.assertIs(fusion_switches.env_bool(name, default, {}), default)
                self.assertIs(
                    fusion_switches.env_bool(name, default, {name: ""}), default
                )

    def test_other_values_are_one_line_errors(self):
        for name in fusion_switches.BOOL_SWITCHES:
            for value in ("maybe", "yes", "on", "2", "-1", "t", "0 1"):
                with self.subTest(name=name, value=value):
                    with self.assertRaises(ValueError) as caught:
                        fusion_switches.check_environ({name: value})
                    self.assertEqual(
                        str(caught.exception),
                        f"{name}={value!r} is not a boolean: use 0, 1, true or "
                        "false (any case), or leave it empty or unset",
                    )

    def test_integer_switch(self):
        name = "TORCHINDUCTOR_LAUNCH_BOUND_COMBO_MAX_BYTES"
        self.assertEqual(fusion_switches.env_int(name, 7, {name: "12345"}), 12345)
        self.assertEqual(fusion_switches.env_int(name, 7, {name: "0"}), 0)
        self.assertEqual(fusion_switches.env_int(name, 7, {name: ""}), 7)
        self.assertEqual(fusion_switches.env_int(name, 7, {}), 7)
        for value in ("4MB", "1.5", "-1", "0x10", "true"):
            with self.subTest(value=value):
                with self.assertRaises(ValueError) as caught:
                    fusion_switches.check_environ({name: value})
                self.assertEqual(
                    str(caught.exception),
                    f"{name}={value!r} is not an integer >= 0: use a whole number "
                    "such as 4194304, or leave it empty or unset",
                )


class TestConfigImport(TestCase):
    def test_env_values_reach_the_config(self):
        code = (
            "import torch._inductor.config as c;"
            f"print(*(getattr(c, o) for o in {sorted(set(CONFIG_OF.values()))!r}),"
            " c.launch_bound_combo_max_bytes)"
        )
        options = sorted(set(CONFIG_OF.values()))
        # unset (""): each option's default; only the aligned steps, the
        # fast exp and the lean combine are on by default
        on_by_default = {
            "one_pass_reductions_aligned_loads",
            "one_pass_reductions_fast_exp",
            "one_pass_reductions_lean_combine",
        }
        defaults = [str(o in on_by_default) for o in options]
        for value, expected in (
            ("True", ["True"] * len(options)),
            ("false", ["False"] * len(options)),
            ("", defaults),
        ):
            with self.subTest(value=value):
                result = python(
                    code,
                    **dict.fromkeys(CONFIG_OF, value),
                    TORCHINDUCTOR_LAUNCH_BOUND_COMBO_MAX_BYTES="12345",
                )
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.split(), [*expected, "12345"])

    def test_patch_wins_over_the_environment(self):
        # the environment sets the default; config.patch() still decides
        code = (
            "import torch._inductor.config as c\n"
            "with c.patch(fusion_only=True): print(c.fusion_only)\n"
            "print(c.fusion_only)\n"
        )
        result = python(code, TORCHINDUCTOR_FUSION_ONLY="0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["True", "False"])
        with config.patch(fusion_only=True):
            self.assertTrue(config.fusion_only)

    def test_bad_value_stops_the_config_import_in_one_line(self):
        cases = [
            *((name, "maybe", "a boolean") for name in BOOLS),
            ("TORCHINDUCTOR_LAUNCH_BOUND_COMBO_MAX_BYTES", "4MB", "an integer >= 0"),
            (fusion_switches.COST_MODEL_SWITCH, "fast", "a cost model"),
        ]
        results = python_each(
            "import torch._inductor.config",
            [{name: value} for name, value, _ in cases],
        )
        for (name, value, kind), result in zip(cases, results):
            with self.subTest(name=name):
                # status 1 and one line on stderr, the traceback left out
                self.assertEqual(result.returncode, 1)
                (line,) = result.stderr.splitlines()
                self.assertTrue(
                    line.startswith(
                        f"torch._inductor.config: {name}={value!r} is not {kind}"
                    ),
                    result.stderr,
                )

    def test_bad_value_fails_before_any_compile(self):
        result = python(
            "import torch; torch.compile(lambda x: x.sin())(torch.randn(4))",
            TORCHINDUCTOR_LAUNCH_BOUND_COMBO_KERNELS="maybe",
        )
        self.assertEqual(result.returncode, 1)
        self.assertEqual(
            result.stderr.splitlines(),
            [
                "torch._inductor.config: TORCHINDUCTOR_LAUNCH_BOUND_COMBO_KERNELS="
                "'maybe' is not a boolean: use 0, 1, true or false (any case), or "
                "leave it empty or unset"
            ],
        )


if __name__ == "__main__":
    run_tests()
