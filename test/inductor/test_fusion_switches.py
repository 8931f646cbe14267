# Owner(s): ["module: inductor"]
"""The fusion features' environment switches (torch/_inductor/fusion_switches.py):
one parser; a bad value leaves ``import torch._inductor.config`` alone and
stops the first compile with one line."""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch._inductor.config as config
from torch._inductor import fusion_switches
from torch._inductor.test_case import run_tests, TestCase


# option -> switch, for each option config.py reads from the environment
# (the features present each add theirs where they define the option)
_CONFIG_SOURCE = Path(config.__file__).read_text(encoding="utf-8")
CONFIG_OF = {
    name: option
    for option, _, name in re.findall(
        r'^(\w+): (bool|int) = _fusion_switches\.env_(?:bool|int)\(\s*"(\w+)"',
        _CONFIG_SOURCE,
        re.M,
    )
}
BOOLS = sorted(n for n, s in fusion_switches.SWITCHES.items() if s.kind == "bool")
INTS = sorted(n for n, s in fusion_switches.SWITCHES.items() if s.kind == "int")
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
    env = {k: v for k, v in os.environ.items() if k not in fusion_switches.SWITCHES}
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
    def assert_check_says(self, name, value, message):
        """``check_environ`` refuses ``name=value`` with exactly ``message``."""
        with self.assertRaises(ValueError) as caught:
            fusion_switches.check_environ({name: value})
        self.assertEqual(str(caught.exception), message)

    def test_every_switch_read_is_a_config_option(self):
        # the remarks' cost model is always there; each feature adds its own
        self.assertIn(fusion_switches.COST_MODEL_SWITCH, fusion_switches.SWITCHES)
        self.assertEqual(sorted(CONFIG_OF), sorted(BOOLS + INTS))
        for name in BOOLS:
            self.assertIs(type(getattr(config, CONFIG_OF[name])), bool)
        for name in INTS:
            self.assertIs(type(getattr(config, CONFIG_OF[name])), int)
        # the fork's own off switch is its activation's (tools/), not torch's
        self.assertNotIn("FUSION_FORK_DISABLE", fusion_switches.SWITCHES)

    def test_accepted_spellings(self):
        for name in BOOLS:
            for value, expected in SPELLINGS:
                with self.subTest(name=name, value=value):
                    self.assertIs(
                        fusion_switches.env_bool(name, not expected, {name: value}),
                        expected,
                    )
                    fusion_switches.check_environ({name: value})

    def test_empty_or_unset_is_the_default(self):
        for name in BOOLS:
            for default in (False, True):
                self.assertIs(fusion_switches.env_bool(name, default, {}), default)
                self.assertIs(
                    fusion_switches.env_bool(name, default, {name: ""}), default
                )

    def test_other_values_are_one_line_errors(self):
        for name in BOOLS:
            for value in ("maybe", "yes", "on", "2", "-1", "t", "0 1"):
                with self.subTest(name=name, value=value):
                    self.assert_check_says(
                        name,
                        value,
                        f"{name}={value!r} is not a boolean: use 0, 1, true or "
                        "false (any case), or leave it empty or unset",
                    )

    def test_integer_switches(self):
        for name in INTS:
            lowest = fusion_switches.SWITCHES[name].lowest
            with self.subTest(name=name):
                env_int = fusion_switches.env_int
                self.assertEqual(env_int(name, 7, {name: "12345"}, lowest), 12345)
                self.assertEqual(env_int(name, 7, {name: str(lowest)}, lowest), lowest)
                self.assertEqual(env_int(name, 7, {name: ""}, lowest), 7)
                self.assertEqual(env_int(name, 7, {}, lowest), 7)
                for value in ("4MB", "1.5", str(lowest - 1), "0x10", "true"):
                    self.assert_check_says(
                        name,
                        value,
                        f"{name}={value!r} is not an integer >= {lowest}: use a "
                        "whole number such as 4194304, or leave it empty or unset",
                    )

    def test_a_bad_value_read_is_kept_not_raised(self):
        name = "TORCHINDUCTOR_TEST_ONLY_SWITCH"
        try:
            os.environ[name] = "maybe"
            self.assertIsNone(fusion_switches.bad_environ())
            self.assertIs(fusion_switches.env_bool(name, True), True)
            self.assertEqual(
                fusion_switches.bad_environ(),
                f"{name}='maybe' is not a boolean: use 0, 1, true or false (any "
                "case), or leave it empty or unset",
            )
            with self.assertRaisesRegex(
                ValueError, f"^torch._inductor.config: {name}="
            ):
                fusion_switches.raise_bad_environ()
        finally:
            del os.environ[name]
            fusion_switches.SWITCHES.pop(name, None)
            fusion_switches._bad_values.clear()
        fusion_switches.raise_bad_environ()  # nothing bad: nothing raised


class TestConfigImport(TestCase):
    def test_env_values_reach_the_config(self):
        options = [CONFIG_OF[n] for n in BOOLS]
        ints = [CONFIG_OF[n] for n in INTS]
        code = (
            "import torch._inductor.config as c;"
            f"print(*(getattr(c, o) for o in {options + ints!r}))"
        )
        # unset (""): each option's default, as this process has it
        defaults = [str(getattr(config, o)) for o in options]
        for value, expected in (
            ("True", ["True"] * len(options)),
            ("false", ["False"] * len(options)),
            ("", defaults),
        ):
            with self.subTest(value=value):
                result = python(
                    code,
                    **dict.fromkeys(BOOLS, value),
                    **dict.fromkeys(INTS, "12345"),
                )
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(
                    result.stdout.split(), [*expected, *["12345"] * len(ints)]
                )

    def test_patch_wins_over_the_environment(self):
        # the environment sets the default; config.patch() still decides
        if "TORCHINDUCTOR_FUSION_ONLY" not in fusion_switches.SWITCHES:
            self.skipTest("needs the ablation stack's fusion_only")
        code = (
            "import torch._inductor.config as c\n"
            "with c.patch(fusion_only=True): print(c.fusion_only)\n"
            "print(c.fusion_only)\n"
        )
        result = python(code, TORCHINDUCTOR_FUSION_ONLY="0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["True", "False"])

    def test_a_bad_value_leaves_the_import_and_stops_the_first_compile(self):
        """Every switch bad at once: ``import torch._inductor.config`` works,
        each option at its default; a compile stops with the first bad
        value's one line, one process for each kind of switch."""
        bad = {"bool": "maybe", "int": "4MB", "cost_model": "fast"}
        kind_of = {n: s.kind for n, s in fusion_switches.SWITCHES.items()}
        options = [CONFIG_OF[n] for n in BOOLS + INTS]
        imported = python(
            "import torch._inductor.config as c;"
            f"print(*(getattr(c, o) for o in {options!r}))",
            **{n: bad[k] for n, k in kind_of.items()},
        )
        self.assertEqual(imported.returncode, 0, imported.stderr)
        self.assertEqual(imported.stderr, "")
        self.assertEqual(
            imported.stdout.split(), [str(getattr(config, o)) for o in options]
        )
        words = {"bool": "a boolean", "int": "an integer", "cost_model": "a cost model"}
        cases = [
            (next(n for n, k in kind_of.items() if k == kind), kind)
            for kind in bad
            if kind in kind_of.values()
        ]
        results = python_each(
            "import torch\n"
            "try:\n"
            "    torch.compile(lambda x: x.sin())(torch.randn(4))\n"
            "except Exception as e:\n"
            "    cause = getattr(e, 'inner_exception', None) or e.__cause__\n"
            "    print(type(e).__name__, f'{type(cause).__name__}: {cause}')\n",
            [{name: bad[kind]} for name, kind in cases],
        )
        for (name, kind), result in zip(cases, results):
            with self.subTest(name=name):
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertTrue(
                    result.stdout.startswith(
                        "BackendCompilerFailed ValueError: torch._inductor.config: "
                        f"{name}={bad[kind]!r} is not {words[kind]}"
                    ),
                    result.stdout,
                )


if __name__ == "__main__":
    run_tests()
