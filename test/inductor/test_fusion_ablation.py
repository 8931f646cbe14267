# Owner(s): ["module: inductor"]
"""The ablation switches: config.fusion_only and config.no_fusion.

Each test compiles real functions through ``torch.compile`` with a switch on
and checks what Inductor generated: with ``no_fusion`` every computing op has
a kernel of its own (from the fusion report, whose kernels equal what Inductor
generated) and every boundary between them says ``no_fusion``; with
``fusion_only`` the held-off optimizations are absent from the generated code
(no OpenMP, no vector ISA in C++ kernels) and listed as ``config`` remarks.
Results equal eager in every combination, over upstream's OpInfo database
(over the benchmarks' default model set: benchmarks/fusion/test/
test_model_set_switches.py, beside the model set).

Per release: fusion_only holds the options of the running torch release only
(an entry's ``releases``), and every config option the running release added
since the supported release before it is classified
(``fusion_ablation_options.ADDED``): the test compares the running release's
stock option names with the previous release's, committed in
``fusion_ablation_options_<release>.txt`` next to this file (2.14.1's for
2.15.0; 2.14.1, the oldest supported release, is the baseline).
"""

import inspect
import os
import re
import subprocess
import sys
import tempfile
import unittest

import torch
import torch._dynamo
from torch._inductor import (
    fusion_ablation,
    fusion_ablation_options,
    fusion_report,
    metrics,
)
from torch._inductor.fusion_remarks import analysis as fusion_analysis
from torch._inductor.fusion_remarks import releases as fusion_releases
from torch._inductor.fusion_remarks.releases import release_key
from torch._inductor.test_case import run_tests, TestCase
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.inductor_utils import GPU_TYPE, HAS_GPU
from torch.testing._internal.logging_utils import LoggingTestCase, make_logging_test

from test_fusion_remarks_opinfo import first_sample_call, opinfo_subset


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")

ON_2_14_1 = fusion_releases.release_at_least("2.14.1")
ON_2_15_0 = fusion_releases.release_at_least("2.15.0")
# The FUSION_ONLY entries of the options each release added, by release.
HELD_SINCE = {
    added.release: [
        h for h in fusion_ablation.FUSION_ONLY if h.releases.since == added.release
    ]
    for added in fusion_ablation_options.ADDED
}
# What the running release added, and what it is compared with (None on the
# oldest supported release).
ADDED_HERE = next(
    (a for a in fusion_ablation_options.ADDED if a.release == fusion_releases.RELEASE),
    None,
)

SWITCHES = {
    "no_fusion": {"no_fusion": True},
    "fusion_only": {"fusion_only": True},
    "both": {"no_fusion": True, "fusion_only": True},
}


def sin_plus_cos(x):
    return torch.sin(x) + torch.cos(x)


def softmax_and_reductions(x):
    return torch.softmax(x, -1) * 2, x.sum(0).sum() + x.sum(1).sum()


def compiled_under(test, switches, fn, *args, **compile_kwargs):
    """Compile ``fn`` with ``switches`` under a capture; check against eager."""
    torch._dynamo.reset()
    metrics.reset()
    expected = fn(*[a.clone() for a in args])
    with torch._inductor.config.patch(switches), fusion_report.capture() as rep:
        actual = torch.compile(fn, **compile_kwargs)(*args)
    test.assertEqual(actual, expected, atol=1e-4, rtol=1e-4)
    for graph in rep.graphs:
        test.assertEqual(fusion_analysis.coverage_violations(graph), [])
    return rep


def ops_per_kernel(rep):
    out = []
    for graph in rep.graphs:
        computes = {op["name"] for op in graph["ops"] if op["computes"]}
        out += [
            [name for name in kernel["ops"] if name in computes]
            for kernel in graph["kernels"]
        ]
    return out


class TestNoFusion(TestCase):
    def test_sin_cos_add_each_in_a_kernel(self):
        rep = compiled_under(self, SWITCHES["no_fusion"], sin_plus_cos, torch.randn(64))
        self.assertEqual(sorted(ops_per_kernel(rep)), [["add"], ["cos"], ["sin"]])
        self.assertEqual(metrics.generated_kernel_count, 3)
        self.assertEqual(
            sorted(
                (b["producer"], b["consumer"], b["reason"])
                for b in rep.graphs[0]["boundaries"]
            ),
            [
                ("cos", "add", "no_fusion"),
                ("sin", "add", "no_fusion"),
                ("sin", "cos", "no_fusion"),  # both read x: a shared input
            ],
        )
        self.assertEqual(
            {b["category"] for b in rep.graphs[0]["boundaries"]}, {"config"}
        )

    def test_every_computing_op_alone(self):
        for switches in (SWITCHES["no_fusion"], SWITCHES["both"]):
            rep = compiled_under(
                self, switches, softmax_and_reductions, torch.randn(16, 32)
            )
            kernels = ops_per_kernel(rep)
            self.assertTrue(all(len(ops) <= 1 for ops in kernels), kernels)
            computing = [
                op["name"] for g in rep.graphs for op in g["ops"] if op["computes"]
            ]
            in_kernels = sorted(name for ops in kernels for name in ops)
            self.assertEqual(in_kernels, sorted(computing))

    def test_default_fuses_what_no_fusion_splits(self):
        rep = compiled_under(self, {}, sin_plus_cos, torch.randn(64))
        self.assertEqual(ops_per_kernel(rep), [["add", "sin", "cos"]])

    def test_generated_code_has_one_loop_nest_per_op(self):
        # The C++ backend emits a graph's consecutive kernels into one C++
        # function; with no_fusion each op is a loop nest of its own there.
        def loop_nests(switches):
            torch._dynamo.reset()
            with torch._inductor.config.patch(switches):
                _, (code,) = run_and_get_code(
                    torch.compile(sin_plus_cos), torch.randn(64)
                )
            return len(re.findall(r"for\(int64_t x0=", code))

        self.assertEqual(loop_nests({}), 1)
        self.assertEqual(loop_nests({"no_fusion": True}), 3)


class TestFusionOnly(TestCase):
    def test_cpp_kernels_without_threads_or_vectors(self):
        x = torch.randn(512, 1024)
        torch._dynamo.reset()
        _, (default,) = run_and_get_code(torch.compile(sin_plus_cos), x)
        torch._dynamo.reset()
        with torch._inductor.config.patch(fusion_only=True):
            _, (held,) = run_and_get_code(torch.compile(sin_plus_cos), x)
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        # What the default generates here, so that the switch has something
        # to hold off (a machine without SIMD or with one thread has less).
        if torch.get_num_threads() > 1:
            self.assertIn("#pragma omp", default)
        if pick_vec_isa():
            self.assertIn("at::vec::Vectorized", default)
        self.assertNotIn("#pragma omp parallel", held)
        self.assertNotIn("at::vec::Vectorized", held)
        self.assertIn("cpp_fused_add_cos_sin_0", held)  # still fused

    def test_held_options_become_config_remarks(self):
        rep = compiled_under(
            self, SWITCHES["fusion_only"], sin_plus_cos, torch.randn(64)
        )
        held = [r for r in rep.graphs[0]["remarks"] if r["reason"] == "config_held_off"]
        self.assertEqual(
            [r["args"]["option"] for r in held],
            [
                h.option
                for h in fusion_ablation.for_this_release(fusion_ablation.FUSION_ONLY)
            ],
        )
        self.assertEqual({r["category"] for r in held}, {"config"})
        # the summary's one line names the first eight and counts the rest
        # (each held option is a remark of the JSON report)
        (line,) = [x for x in rep.summary().splitlines() if "held off by" in x]
        self.assertGreater(len(held), 8)
        first = ", ".join(
            f"{r['args']['option']}={r['args']['value']!r}" for r in held[:8]
        )
        self.assertEqual(
            line,
            f"  held off by config.fusion_only ({len(held)} options): {first} "
            f"and {len(held) - 8} more",
        )
        self.assertLess(len(line), 400)

    def test_options_hold_in_forward_and_backward(self):
        from torch._inductor.scheduler import Scheduler

        seen = []
        original = Scheduler.__init__

        def spy(self, *args, **kwargs):
            seen.append(
                (
                    torch._inductor.config.pattern_matcher,
                    torch._inductor.config.cpp.threads,
                    torch._functorch.config.cse,
                )
            )
            original(self, *args, **kwargs)

        x = torch.randn(8, 8, requires_grad=True)
        torch._dynamo.reset()
        with unittest.mock.patch.object(Scheduler, "__init__", spy):
            with torch._inductor.config.patch(fusion_only=True):
                out = torch.compile(lambda t: (t.sin() * 2).sum())(x)
            # The backward graph compiles here, outside the config patch.
            out.backward()
        self.assertEqual(len(seen), 2)
        self.assertEqual(set(seen), {(False, 1, False)})
        self.assertEqual(x.grad, 2 * x.detach().cos())

    def test_mode_conflict_warns_and_the_switch_wins(self):
        fusion_ablation._warned.clear()
        torch._dynamo.reset()
        x = torch.randn(64)
        with (
            torch._inductor.config.patch(fusion_only=True),
            self.assertLogs(fusion_ablation.log, "WARNING") as logs,
        ):
            out = torch.compile(sin_plus_cos, mode="max-autotune-no-cudagraphs")(x)
        self.assertEqual(out, sin_plus_cos(x))
        self.assertTrue(
            any("holds max_autotune=False" in line for line in logs.output), logs.output
        )

    def test_reduce_overhead_keeps_no_cuda_graphs(self):
        fusion_ablation._warned.clear()
        torch._dynamo.reset()
        x = torch.randn(64)
        with (
            torch._inductor.config.patch(fusion_only=True, no_fusion=True),
            self.assertLogs(fusion_ablation.log, "WARNING") as logs,
        ):
            out = torch.compile(sin_plus_cos, mode="reduce-overhead")(x)
        self.assertEqual(out, sin_plus_cos(x))
        self.assertTrue(
            any("holds triton.cudagraphs=False" in line for line in logs.output),
            logs.output,
        )

    def test_bad_env_value_is_a_clear_error(self):
        script = (
            "import torch\n"
            "import torch._inductor.config as c\n"
            "print(c.fusion_only)\n"
            "try:\n"
            "    torch.compile(lambda x: x.sin())(torch.randn(4))\n"
            "except Exception as e:\n"
            "    print(e.inner_exception)\n"
        )
        env = dict(os.environ, TORCHINDUCTOR_FUSION_ONLY="yes")
        result = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        # the import goes on with the default; the first compile stops with
        # one line naming the variable (test_fusion_switches.py tests every
        # switch)
        self.assertEqual(
            result.stdout.splitlines(),
            [
                "False",
                "torch._inductor.config: TORCHINDUCTOR_FUSION_ONLY='yes' is not "
                "a boolean: use 0, 1, true or false (any case), or leave it "
                "empty or unset",
            ],
        )

    def test_bad_value_set_in_code_is_a_clear_error(self):
        torch._dynamo.reset()
        with torch._inductor.config.patch(fusion_only="yes"):
            with self.assertRaisesRegex(
                Exception, r"config\.fusion_only must be a bool, got 'yes'"
            ):
                torch.compile(sin_plus_cos)(torch.randn(4))


def config_value(option):
    if option.startswith("functorch."):
        return getattr(torch._functorch.config, option[len("functorch.") :])
    return getattr(torch._inductor.config, option)


def running_option_names():
    return {
        *torch._inductor.config._config,
        *("functorch." + name for name in torch._functorch.config._config),
    }


# The option names of the running release's stock torch: any torch with this
# stack (a sys.path entry holding torch/_inductor/fusion_ablation.py: the
# fork's overlay, or a tree with the exported stacks) left out, so without
# the options the stacks add.  The same listing as the committed files'.
STOCK_NAMES = r"""
import os, sys
MARK = os.path.join("torch", "_inductor", "fusion_ablation.py")
sys.path[:] = [p for p in sys.path if not os.path.exists(os.path.join(p or ".", MARK))]
import torch
import torch._inductor.config as i, torch._functorch.config as f
assert not os.path.exists(os.path.join(os.path.dirname(torch.__file__), "..", MARK))
print("\n".join(sorted([*i._config, *("functorch." + k for k in f._config)])))
"""


def stock_option_names():
    result = subprocess.run(
        [sys.executable, "-c", STOCK_NAMES],
        env=dict(os.environ, FUSION_FORK_DISABLE="1"),
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise RuntimeError(result.stderr)
    return set(result.stdout.split())


def option_names_of(release):
    """The committed option names of ``release`` (None: no file for it)."""
    path = os.path.join(HERE, f"fusion_ablation_options_{release}.txt")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and line[0] != "#"}


def not_here(entries):
    """The entries of ``entries`` whose releases exclude the running one."""
    return [h for h in entries if not fusion_releases.applies_here(h.releases)]


class TestFusionOnlyPerRelease(TestCase):
    """fusion_only holds what the running torch release has, and only that."""

    def test_entries_name_supported_releases(self):
        tables = (
            fusion_ablation.FUSION_ONLY
            + fusion_ablation.KEPT
            + fusion_ablation.NO_FUSION
        )
        for entry in tables:
            # a range that holds at least one supported release
            self.assertTrue(
                entry.releases.of(fusion_releases.DESCRIBED_RELEASES), entry
            )
        with torch._inductor.config.patch(fusion_only=True):
            held = [h for _, h in fusion_ablation.held_options()]
        self.assertEqual(
            held,
            [
                h
                for h in fusion_ablation.FUSION_ONLY
                if fusion_releases.applies_here(h.releases)
            ],
        )

    def test_scheduler_sees_every_held_value(self):
        from torch._inductor.scheduler import Scheduler

        held = fusion_ablation.for_this_release(fusion_ablation.FUSION_ONLY)
        seen = []
        original = Scheduler.__init__

        def spy(self, *args, **kwargs):
            seen.append({h.option: config_value(h.option) for h in held})
            original(self, *args, **kwargs)

        torch._dynamo.reset()
        with (
            unittest.mock.patch.object(Scheduler, "__init__", spy),
            torch._inductor.config.patch(fusion_only=True),
        ):
            torch.compile(sin_plus_cos)(torch.randn(64))
        self.assertEqual(seen, [{h.option: h.value for h in held}])
        for release, entries in HELD_SINCE.items():
            with self.subTest(release=release):
                self.assertTrue(entries)
                self.assertEqual(
                    [h for h in entries if h in held],
                    fusion_ablation.for_this_release(entries),
                )
                if not fusion_releases.release_at_least(release):
                    self.assertFalse(fusion_ablation.for_this_release(entries))

    def test_other_releases_options_are_not_applied(self):
        # Every supported release has entries of other releases: 2.14.1 the
        # options later ones added, 2.15.0 the names it renamed
        # (benchmark_epilogue_fusion).
        other = not_here(fusion_ablation.FUSION_ONLY)
        self.assertTrue(other)
        with torch._inductor.config.patch(fusion_only=True):
            held = {h.option for _, h in fusion_ablation.held_options()}
        for h in other:
            with self.subTest(option=h.option):
                self.assertNotIn(h.option, held)
                if h.releases.since is not None and release_key(
                    fusion_releases.RELEASE
                ) < release_key(h.releases.since):
                    # an option of a later release does not exist here
                    self.assertNotIn(h.option, running_option_names())
        # Compiling under the switch patches none of them (an unknown option
        # would fail the config patch).
        rep = compiled_under(
            self, SWITCHES["fusion_only"], sin_plus_cos, torch.randn(64)
        )
        remarked = {
            r["args"]["option"]
            for r in rep.graphs[0]["remarks"]
            if r["reason"] == "config_held_off"
        }
        self.assertFalse(remarked & {h.option for h in other})

    def test_held_options_exist_and_are_not_aliases(self):
        # An option a release removed must end its entry there (until); one
        # it renamed is held by its new name, not through a deprecated alias
        # (which warns when set).
        for table in (fusion_ablation.FUSION_ONLY, fusion_ablation.NO_FUSION):
            for h in fusion_ablation.for_this_release(table):
                with self.subTest(option=h.option):
                    module, name = fusion_ablation._config_of(h.option)
                    self.assertIn(name, module._config)
                    entry = module._config[name]
                    self.assertIsNone(getattr(entry, "alias", None))
                    self.assertFalse(getattr(entry, "deprecated", False))

    def test_no_conflict_warning_without_a_conflict(self):
        # fusion_only compiled with no mode or patch asks for nothing it
        # holds: no warning (an option read through an alias once made one).
        fusion_ablation._warned.clear()
        with self.assertNoLogs(fusion_ablation.log, "WARNING"):
            compiled_under(self, SWITCHES["both"], sin_plus_cos, torch.randn(64))

    def test_two_step_variance_held(self):
        # The counterfactual of cpp.use_two_step_variance_threshold: 2.14.1
        # computes this var_mean (rows of 256) by the two-step algorithm,
        # fusion_only by Welford, as 2.11.0 does either way.
        def welford(switches):
            torch._dynamo.reset()
            with torch._inductor.config.patch(switches):
                _, (code,) = run_and_get_code(
                    torch.compile(lambda x: torch.var_mean(x, -1)),
                    torch.randn(32, 256),
                )
            return "Welford" in code

        self.assertEqual(welford({}), not ON_2_14_1)
        self.assertTrue(welford(SWITCHES["fusion_only"]))

    @unittest.skipUnless(
        ON_2_14_1,
        "aten_distributed_optimizations.enable_simple_overlap is new in 2.14.1",
    )
    def test_simple_overlap_held(self):
        # The counterfactual of enable_simple_overlap: the scheduler runs the
        # pass on every graph by default, not under fusion_only.
        from torch._inductor import comms

        def calls(switches):
            torch._dynamo.reset()
            with (
                unittest.mock.patch.object(
                    comms, "simple_overlap", wraps=comms.simple_overlap
                ) as simple_overlap,
                torch._inductor.config.patch(switches),
            ):
                torch.compile(sin_plus_cos)(torch.randn(64))
            return simple_overlap.call_count

        self.assertEqual(calls({}), 1)
        self.assertEqual(calls(SWITCHES["fusion_only"]), 0)


@unittest.skipUnless(
    HAS_GPU and GPU_TYPE == "cuda" and torch.version.hip is None and ON_2_15_0,
    "triton.scalar_accumulators is new in 2.15.0 and CUDA-only",
)
class TestScalarAccumulatorsHeld(TestCase):
    def test_argmax_helper(self):
        # The counterfactual of triton.scalar_accumulators that fusion_only
        # would otherwise keep: 2.15.0 computes an argmax over a whole row
        # (a persistent reduction) by its two-pass helper, fusion_only by
        # 2.14.1's single tl.reduce.
        def helper(switches):
            torch._dynamo.reset()
            with torch._inductor.config.patch(switches):
                _, codes = run_and_get_code(
                    torch.compile(lambda x: torch.argmax(x, -1)),
                    torch.randn(64, 512, device=GPU_TYPE),
                )
            code = "\n".join(codes)
            if "max_with_first_index" in code:
                return "two-pass"
            return "one-pass" if "max_with_index" in code else code

        self.assertEqual(helper({}), "two-pass")
        self.assertEqual(helper(SWITCHES["fusion_only"]), "one-pass")


class TestAddedOptions(TestCase):
    """Every option each release added is classified for fusion_only."""

    Verdict = fusion_ablation_options.Verdict

    def test_classification_is_consistent(self):
        releases = [added.release for added in fusion_ablation_options.ADDED]
        self.assertEqual(releases, sorted(releases, key=release_key))
        supported = fusion_releases.DESCRIBED_RELEASES
        for added in fusion_ablation_options.ADDED:
            with self.subTest(release=added.release):
                # compared with the supported release before it
                self.assertIn(added.release, supported)
                self.assertLess(release_key(added.previous), release_key(added.release))
                self.assertFalse(
                    [
                        r
                        for r in supported
                        if release_key(added.previous)
                        < release_key(r)
                        < release_key(added.release)
                    ]
                )
                self.assertIsNotNone(option_names_of(added.previous))
                names = [a.option for a in added.options]
                self.assertEqual(names, sorted(set(names)))
                held = [
                    a.option for a in added.options if a.verdict is self.Verdict.HELD
                ]
                self.assertEqual(
                    held, sorted(h.option for h in HELD_SINCE[added.release])
                )
                self.assertFalse(set(names) & option_names_of(added.previous))
            for a in added.options:
                with self.subTest(release=added.release, option=a.option):
                    # A held option's reason is its FUSION_ONLY entry's.
                    self.assertEqual(a.reason == "", a.verdict is self.Verdict.HELD)
                    self.assertTrue(a.why())
                    if a.removed_in is not None:
                        self.assertGreater(
                            release_key(a.removed_in), release_key(added.release)
                        )
                    if a.verdict is self.Verdict.HELD:
                        # held from the release that added it to the one
                        # that removed it
                        releases = fusion_ablation_options.held_entry(a.option).releases
                        self.assertEqual(releases.since, added.release)
                        self.assertEqual(releases.until, a.removed_in)

    def test_classified_options_exist(self):
        # The options of every release up to the running one that no release
        # since removed.
        here = release_key(fusion_releases.RELEASE)
        expected = {
            a.option
            for added in fusion_ablation_options.ADDED
            if release_key(added.release) <= here
            for a in added.options
            if a.removed_in is None or release_key(a.removed_in) > here
        }
        self.assertEqual(ON_2_15_0, bool(expected))
        self.assertEqual(expected - running_option_names(), set())

    def test_every_new_option_is_classified(self):
        stock = stock_option_names()
        self.assertLessEqual(stock, running_option_names())
        # The committed names of the running release, where it has a file,
        # are its own (2.14.1's).
        own = option_names_of(fusion_releases.RELEASE)
        if own is not None:
            self.assertEqual(stock, own)
        if ADDED_HERE is None:
            # the oldest supported release: nothing to compare it with
            first = fusion_ablation_options.ADDED[0].release
            self.assertLess(release_key(fusion_releases.RELEASE), release_key(first))
            self.assertIsNotNone(own)
            return
        previous = option_names_of(ADDED_HERE.previous)
        self.assertEqual(stock - previous, {a.option for a in ADDED_HERE.options})
        # What it removed: the options marked so (here, those of the previous
        # release's table), and no entry applying here names one.
        removed = previous - stock
        self.assertEqual(
            removed
            & {
                a.option
                for added in fusion_ablation_options.ADDED
                for a in added.options
            },
            {
                a.option
                for added in fusion_ablation_options.ADDED
                for a in added.options
                if a.removed_in == fusion_releases.RELEASE
            },
        )
        for table in (fusion_ablation.FUSION_ONLY, fusion_ablation.NO_FUSION):
            applied = {h.option for h in fusion_ablation.for_this_release(table)}
            self.assertFalse(applied & removed)


class TestAblationLog(LoggingTestCase):
    @make_logging_test(fusion=True)
    def test_no_fusion_log(self, records):
        with torch._inductor.config.patch(no_fusion=True):
            torch.compile(sin_plus_cos)(torch.randn(64))
        summary = next(r.getMessage() for r in records if " ops -> " in r.getMessage())
        line = inspect.getsourcelines(sin_plus_cos)[1] + 1
        # The options held are the running release's (2.15.0 renamed
        # benchmark_epilogue_fusion): in the order of NO_FUSION.
        held = ", ".join(
            f"{h.option}={h.value!r}"
            for h in fusion_ablation.for_this_release(fusion_ablation.NO_FUSION)
        )
        self.assertIn(f"held off by config.no_fusion: {held}\n", summary)
        self.assertExpectedInline(
            summary.replace(
                f"test_fusion_ablation.py:{line}", "<sin_plus_cos>"
            ).replace(held, "<NO_FUSION of this release>"),
            """\
graph 0/0 (cpu): 3 ops -> 3 kernels (3 generated in 1 function, 0 extern)
  cpp_fused_add_cos_sin_0 (cpp, one function of 3 loop nests, not fused with each other): [op0] sin | [op1] cos | [op2] add  [<sin_plus_cos>]
  held off by config.no_fusion: <NO_FUSION of this release>
  3 boundaries:
    sin -> add (buf0, 256 B, op0 -> op2): no_fusion (config, scheduler) [<sin_plus_cos>]: op0 + op2: fusion is off (config.no_fusion)
    cos -> add (buf1, 256 B, op1 -> op2): no_fusion (config, scheduler) [<sin_plus_cos>]: op1 + op2: fusion is off (config.no_fusion)
    sin || cos: no_fusion (config, scheduler) [<sin_plus_cos>]: op0 + op1: fusion is off (config.no_fusion)""",
        )


class TestAblationDocs(TestCase):
    def test_docs_name_every_held_option(self):
        # The generated tables are checked against their generator by
        # tools/test/test_docs_tables.py.
        ablation_doc = os.path.join(
            REPO, "docs", "source", "torch.compiler_fusion_ablation.md"
        )
        with open(ablation_doc) as f:
            text = f.read()
        for held in fusion_ablation.FUSION_ONLY + fusion_ablation.NO_FUSION:
            self.assertIn(f"| `{held.option}` |", text)


class TestAblationOpInfo(TestCase):
    # Offset by half a step: other ops than the fusion-remarks sweep's.
    @ops(
        opinfo_subset("FUSION_ABLATION_OPINFO_OPS", "40", offset=0.5),
        allowed_dtypes=(torch.float32,),
    )
    def test_switches_match_eager(self, device, dtype, op):
        fn, arguments = first_sample_call(self, op, device, dtype)

        def compiled(switches):
            torch._dynamo.reset()
            args, kwargs = arguments()
            with torch._inductor.config.patch(switches):
                return torch.compile(fn)(*args, **kwargs)

        try:
            args, kwargs = arguments()
            expected = fn(*args, **kwargs)
            default = compiled({})
            self.assertEqual(default, expected, atol=1e-3, rtol=1e-3, equal_nan=True)
        except Exception as e:
            self.skipTest(f"fails without the switches: {type(e).__name__}")
        for name, switches in SWITCHES.items():
            with self.subTest(switches=name):
                actual = compiled(switches)
                self.assertEqual(actual, expected, atol=1e-3, rtol=1e-3, equal_nan=True)


instantiate_device_type_tests(
    TestAblationOpInfo, globals(), only_for="cpu", allow_xpu=False
)


if __name__ == "__main__":
    run_tests()
