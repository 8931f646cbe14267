"""Export the fork as one ``git am`` stack per feature (``fork.py export``).

Each feature of :data:`fork_features.FEATURES` that changes ``torch/`` (the
fusion remarks, the ablation switches, the one-pass reductions, the
launch-bound combo kernels) becomes a numbered stack ``NN-<feature>/`` of
commits shaped as upstream pull requests: a title ``[inductor] ...``, a
summary of what and why, and a test plan with the exact test command.  A
stack's commits add its new modules (a few per commit, at most about
:data:`MAX_CHANGED_LINES` changed lines outside tests), then its hooks in
upstream files (its layer of each patched file), then its tests and docs.

Every stack is verified on a tree of the release's pristine sources with only
the stacks it needs applied (:mod:`fork_export_verify`): ``git am``, an import
of the scheduler, the patched upstream modules and the stack's modules at
every commit, the files it leaves compared with the fork's layers, and its
own tests at its last commit, run against that tree.  What a stack needs is
computed from its hunks and imports (:func:`fork_export_verify.stack_needs`);
a stack that would need fork plumbing is an error.
Fork plumbing (:data:`FORK_ONLY`, the ``plumbing`` feature: the fork's
identity, the version patch, the overlay test, release differences) is never
exported.  ``INDEX.md`` beside the stacks gives each stack's size and its
largest commit.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fork_export_verify as verify
import fork_overlay as fork_tool
from fork_features import FEATURES, owner_of
from import_graph import import_graph
from patch_stack import apply_layers
from patchset import make_patch


# Roots whose files of ours go upstream, at the same paths.
EXPORT_ROOTS = ("torch", "test", "docs")
# Files that only make sense in the fork (its identity); never exported.
FORK_ONLY = frozenset(
    {"torch/_fork.py", "torch/version.py", "test/inductor/test_fork_overlay.py"}
)
NEVER_EXPORTED = frozenset({"plumbing"})
# A commit's changed lines outside tests, at most (a module larger than this
# is a commit of its own).
MAX_CHANGED_LINES = 800
AUTHOR = "Fusion Fork <fusion-fork@users.noreply.github.com>"


@dataclasses.dataclass
class Commit:
    title: str
    summary: str
    diffs: list[tuple[str, str]]  # (path, unified diff)
    test_plan: str

    def changed_lines(self, tests: bool = True) -> int:
        return sum(
            _changed(diff)
            for path, diff in self.diffs
            if tests or not path.startswith("test/")
        )


@dataclasses.dataclass
class Stack:
    number: int
    feature: str
    summary: str
    needs: tuple[str, ...]
    commits: list[Commit]
    paths: list[Path] = dataclasses.field(default_factory=list)
    tests: list[str] = dataclasses.field(default_factory=list)
    modules: list[str] = dataclasses.field(default_factory=list)


def _changed(diff: str) -> int:
    return sum(
        1
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def _first_sentence(text: str) -> str:
    match = re.search(r'"""(.+?)(?:\n\n|""")', text, re.S)
    if not match:
        return ""
    return " ".join(match.group(1).split())


def _short(summary: str) -> str:
    """A feature's name for commit titles: its summary up to the colon."""
    return summary.split(":", 1)[0]


def _new_file_diff(rel: str, text: str) -> str:
    diff = make_patch(rel, "", text)
    if not diff:  # an empty new file
        return f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n"
    head, rest = diff.split("\n", 1)
    rest = rest.replace(f"--- a/{rel}\n", "--- /dev/null\n", 1)
    return f"{head}\nnew file mode 100644\n{rest}"


def _feature_files(fork: fork_tool.Fork) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for root in EXPORT_ROOTS:
        base = fork.repo / root
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            rel = p.relative_to(fork.repo).as_posix()
            if not p.is_file() or fork_tool.ignored(p.relative_to(base)):
                continue
            if rel in FORK_ONLY:
                continue
            owner = owner_of(rel)
            if owner is not None:
                out.setdefault(owner, []).append(rel)
    return out


def dependency_order(paths: list[str]) -> list[str]:
    """``paths`` with every module after the modules of ``paths`` it imports
    (the project's import graph, no cycle: tools/test/test_project_layout.py),
    alphabetical among the ready ones; data files after the modules, so that
    each commit of a stack imports only what earlier commits added."""
    graph = import_graph()  # repository path -> the paths it imports
    modules = {p for p in paths if p.endswith(".py")}
    needs = {p: (graph.get(p, set()) & modules) - {p} for p in modules}
    ordered: list[str] = []
    while needs:
        ready = sorted(p for p, deps in needs.items() if not deps - set(ordered))
        if not ready:  # a cycle: keep the rest alphabetical (the layout test fails)
            ready = sorted(needs)
        ordered.append(ready[0])
        del needs[ready[0]]
    return ordered + sorted(p for p in paths if not p.endswith(".py"))


def _test_command(tests: list[str]) -> str:
    runnable = [t for t in tests if Path(t).name.startswith("test_")]
    if not runnable:
        return "No test of its own: the stack's tests come in a later commit."
    return "\n".join(f"    python {t}" for t in runnable)


def plan_stacks(fork: fork_tool.Fork) -> tuple[list[Stack], dict[str, list[str]]]:
    """The stacks to write, and each patched file's state after each layer."""
    files = _feature_files(fork)
    layered = fork.patched_files()
    states: dict[str, list[str]] = {}
    layer_diffs: dict[str, list[tuple[str, str]]] = {}
    for rel, file_layers in layered.items():
        texts, _ = apply_layers(fork.read_pristine(rel), file_layers, rel, fork.repo)
        states[rel] = texts
        for layer, before, after in zip(file_layers, texts, texts[1:]):
            if rel in FORK_ONLY:
                continue
            layer_diffs.setdefault(layer.feature, []).append(
                (rel, make_patch(rel, before, after))
            )
    exported = [
        f.name
        for f in FEATURES
        if f.name not in NEVER_EXPORTED
        and (files.get(f.name) or layer_diffs.get(f.name))
    ]
    try:
        needs = verify.stack_needs(
            exported,
            files,
            layer_diffs,
            import_graph(fork.repo),
            owner_of,
            NEVER_EXPORTED,
        )
    except verify.VerifyError as e:
        raise fork_tool.ForkError(str(e)) from None
    stacks: list[Stack] = []
    for feature in FEATURES:
        if feature.name not in exported:
            continue
        owned = files.get(feature.name, [])
        hooks = layer_diffs.get(feature.name, [])
        modules = dependency_order([f for f in owned if f.startswith("torch/")])
        tests = [f for f in owned if f.startswith("test/")]
        docs = [f for f in owned if f.startswith("docs/")]
        test_plan = _test_command(tests)
        commits: list[Commit] = []
        group: list[tuple[str, str]] = []

        def flush(
            group: list[tuple[str, str]],
            commits: list[Commit] = commits,
            feature=feature,
        ) -> None:
            if not group:
                return
            names = [Path(p).name for p, _ in group]
            sentences = []
            for path, _ in group:
                text = (fork.repo / path).read_text(encoding="utf-8")
                sentence = _first_sentence(text)
                if sentence:
                    sentences.append(f"- `{path}`: {sentence}")
            commits.append(
                Commit(
                    f"[inductor] {_short(feature.summary)}: add {', '.join(names)}",
                    "New modules, imported by nothing upstream until the hooks "
                    "commit of this stack:\n\n" + "\n".join(sentences),
                    list(group),
                    "Imports only; the hooks commit and the tests commit exercise "
                    "them:\n\n    python -c 'import "
                    + ", ".join(
                        p[: -len(".py")].replace("/", ".")
                        for p, _ in group
                        if p.endswith(".py") and not p.endswith("__init__.py")
                    )
                    + "'"
                    if any(
                        p.endswith(".py") and not p.endswith("__init__.py")
                        for p, _ in group
                    )
                    else "Data files read by the modules above.",
                )
            )
            group.clear()

        size = 0
        for path in modules:
            diff = _new_file_diff(path, (fork.repo / path).read_text(encoding="utf-8"))
            if group and size + _changed(diff) > MAX_CHANGED_LINES:
                flush(group)
                size = 0
            group.append((path, diff))
            size += _changed(diff)
        flush(group)
        size = 0
        batch: list[tuple[str, str]] = []
        for rel, diff in hooks:
            if batch and size + _changed(diff) > MAX_CHANGED_LINES:
                commits.append(_hooks_commit(feature, batch, test_plan))
                batch, size = [], 0
            batch.append((rel, diff))
            size += _changed(diff)
        if batch:
            commits.append(_hooks_commit(feature, batch, test_plan))
        if tests:
            commits.append(
                Commit(
                    f"[inductor] {_short(feature.summary)}: tests",
                    "Tests in upstream's conventions (torch._inductor.test_case."
                    "TestCase, run_tests()): real compiles, checked against eager "
                    "and against the rule each reason names.",
                    [
                        (
                            t,
                            _new_file_diff(
                                t, (fork.repo / t).read_text(encoding="utf-8")
                            ),
                        )
                        for t in tests
                    ],
                    test_plan,
                )
            )
        if docs:
            commits.append(
                Commit(
                    f"[inductor] {_short(feature.summary)}: docs",
                    "The user documentation of this stack.",
                    [
                        (
                            d,
                            _new_file_diff(
                                d, (fork.repo / d).read_text(encoding="utf-8")
                            ),
                        )
                        for d in docs
                    ],
                    "Documentation only.",
                )
            )
        stacks.append(
            Stack(
                len(stacks) + 1,
                feature.name,
                feature.summary,
                needs[feature.name],
                commits,
                tests=tests,
                modules=[m for m in modules if m.endswith(".py")],
            )
        )
    return stacks, states


def _hooks_commit(feature, batch: list[tuple[str, str]], test_plan: str) -> Commit:
    files = ", ".join(f"`{rel}`" for rel, _ in batch)
    return Commit(
        f"[inductor] {_short(feature.summary)}: hooks in "
        + ", ".join(Path(rel).name for rel, _ in batch),
        f"Calls into this stack's modules at the upstream sites it needs ({files}): "
        "one-line calls and arguments; upstream statements keep their lines.\n\n"
        + off_behaviour(feature.name),
        list(batch),
        test_plan,
    )


def off_behaviour(feature: str) -> str:
    """What changes when the stack's switch or log is off: the PR text's claim."""
    return {
        "remarks": (
            "With the `fusion` log off and no capture, TORCH_TRACE unset: the "
            "hooks return after one check of whether anyone listens; generated "
            "code is the same with the log on or off (tests compare it)."
        ),
        "ablation": (
            "With `config.fusion_only` and `config.no_fusion` False (the "
            "default), nothing is held off and no option changes; the hooks "
            "read the two flags."
        ),
        "one_pass": (
            "With `config.one_pass_reductions` False (the default), kernels and "
            "their configs are upstream's; the hooks read the flag."
        ),
        "launch_bound_combo": (
            "With `config.launch_bound_combo_kernels` False (the default), the "
            "combo step is upstream's; the hook reads the flag."
        ),
    }.get(feature, "")


def default_verdict(feature: str) -> str:
    """Why an optional pass is not on by default, from its measurements on the
    release users have; empty where there is nothing to say."""
    return {
        "one_pass": (
            "The pass stays off by default, for three kernels. On torch "
            "2.15.0 (H200, CUDA graphs, arms interleaved) the sweep covers "
            "the five ops at rows of 512-262144, 50257, 128256, 151936 and "
            "256000 among them, in bfloat16, float16 and float32, forward "
            "and forward+backward. Of the 220 cases of its last run (float16 "
            "and float32 at every row length, bfloat16 at 512, 2048 and "
            "151936) the pass is ahead of eager in 212 and within 1% of the "
            "release's default or ahead in 214. In the 40 bfloat16 cases "
            "before it the pass was ahead of eager in all 40 and within 1% "
            "of the default in 39; the 40th, layer norm forward+backward at "
            "524 x 256000 (590 against 571 us, a thin second wave), now takes "
            "the default's 569 us: a backward over 397-528 rows walks them "
            "in steps of 2048 (`one_wave`). The training steps "
            "are GPT-2 1.009x and Llama 1.000x. Four cases remain more than "
            "1% slower: a layer norm's forward at 524 x 256000 in float32 "
            "(6.9%; forward+backward 6.8%) and float16 (2.3%), whose loop of "
            "8192 over 32 warps fits one block a multiprocessor where "
            "upstream's fits four, and a float32 softmax's forward+backward "
            "at 883 x 151936 (1.8%), whose backward in steps of 4096 runs a "
            "thin third wave "
            "(benchmarks/results/one_pass/wider_sweep_2.15.0_h200.md in the "
            "fork). Kernels that only sum, online softmaxes at rows "
            "that are a multiple of the vector or that the release folds to "
            "per-row scalars, and float32 rows of up to 32768 keep upstream's "
            "loop, where the pass was slower (sums_2.15.0_h100.md, "
            "interleaved_2.15.0_h100.md and sweep_2.15.0_h100.md). On the "
            "H200 that float32 loop took 1.05-1.18x the on-chip form's bound "
            "at rows of 2048, where eager is ahead of it; "
            "`one_pass_reductions_wide_rows_on_chip` holds those rows on chip, "
            "not yet timed (form_bounds_2.15.0_h200.md, section 7). "
            "Its split rows (`one_pass_reductions_split_rows`) stay off within "
            "it: with 1-32 rows of 50257-262144 they were faster than "
            "upstream's split in 7 of 24 cases and slower in 17, every "
            "cross-entropy among them "
            "(benchmarks/results/one_pass/split_rows_2.15.0_h100.md)."
        ),
    }.get(feature, "")


def write_stack(stack: Stack, out: Path, revision: str) -> None:
    total = len(stack.commits)
    stack_dir = out / f"{stack.number:02d}-{stack.feature}"
    stack_dir.mkdir(parents=True, exist_ok=True)
    for i, commit in enumerate(stack.commits, 1):
        slug = re.sub(r"[^A-Za-z0-9]+", "-", commit.title.split("] ", 1)[-1])
        path = stack_dir / f"{i:04d}-{slug.strip('-')[:52]}.patch"
        body = (
            f"{commit.summary}\n\nTest Plan:\n{commit.test_plan}\n\n"
            f"Stack {stack.number} ({stack.feature}), commit {i} of {total}; "
            f"exported from the fusion fork at revision {revision}."
        )
        path.write_text(
            "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: {AUTHOR}\n"
            "Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
            f"Subject: [PATCH {i}/{total}] {commit.title}\n\n"
            f"{body}\n---\n" + "".join(diff for _, diff in commit.diffs) + "\n",
            encoding="utf-8",
        )
        stack.paths.append(path)


def pull_request_text(fork: fork_tool.Fork, stack: Stack) -> str:
    """The stack's pull request: what, why, what changes when it is off, its
    size and the tests to run, counted from the stack itself."""
    tests = sorted(
        {p for c in stack.commits for p, _ in c.diffs if p.startswith("test/")}
    )
    hooked = sorted(
        {
            p
            for c in stack.commits
            for p, d in c.diffs
            if p.startswith("torch/") and "new file mode" not in d
        }
    )
    largest = max(stack.commits, key=lambda c: c.changed_lines(tests=False))
    needs = (
        f"Applies on top of stacks {', '.join(stack.needs)}, and needs no other."
        if stack.needs
        else "Applies on the release on its own."
    )
    return (
        f"# [inductor] {stack.summary}\n\n"
        f"Against `v{fork.release}`; {needs} {len(stack.commits)} commits, "
        f"{sum(c.changed_lines() for c in stack.commits)} changed lines "
        f"({sum(c.changed_lines(tests=False) for c in stack.commits)} outside tests; "
        f'the largest commit, "{largest.title}", '
        f"{largest.changed_lines(tests=False)}).\n\n"
        f"Upstream files it hooks: {', '.join(f'`{h}`' for h in hooked) or 'none'}.\n\n"
        f"When it is off: {off_behaviour(stack.feature)}\n\n"
        + (
            f"On by default? {default_verdict(stack.feature)}\n\n"
            if default_verdict(stack.feature)
            else ""
        )
        + "Test plan:\n\n"
        + _test_command(tests)
        + "\n"
    )


def export_series(fork: fork_tool.Fork, out: Path, tests: bool = True) -> list[Stack]:
    """Write every feature's stack and verify each on the pristine release
    with the stacks it needs (its tests too, unless ``tests`` is False)."""
    out = out.resolve()
    if fork_tool.inside(out, fork.repo) and not fork_tool.inside(
        out, fork.repo / "build"
    ):
        raise fork_tool.ForkError(
            f"{out} is inside the repository; the exported stacks are an output and "
            "are committed nowhere: write them under build/ or outside the repository"
        )
    stacks, states = plan_stacks(fork)
    if not stacks:
        raise fork_tool.ForkError("nothing to export: no feature changes torch/")
    if out.exists():
        for old in sorted(out.glob("*/*.patch")) + sorted(out.glob("*.patch")):
            old.unlink()
    out.mkdir(parents=True, exist_ok=True)
    revision = fork_tool.git_revision(fork.repo)
    for stack in stacks:
        write_stack(stack, out, revision)
        (out / f"{stack.number:02d}-{stack.feature}" / "PULL_REQUEST.md").write_text(
            pull_request_text(fork, stack), encoding="utf-8"
        )
    verify_stacks(fork, stacks, states, tests=tests)
    (out / "INDEX.md").write_text(index_text(fork, stacks), encoding="utf-8")
    return stacks


def index_text(fork: fork_tool.Fork, stacks: list[Stack]) -> str:
    rows = [
        f"# The fusion fork as pull-request stacks, against torch {fork.release}",
        "",
        "Written by `make export` (`tools/fork.py export`); each stack verified "
        "on the pristine sources with only the stacks it needs applied: `git am`, "
        "imports at every commit, its tests at its last.",
        "",
        "| stack | needs | commits | changed lines | outside tests | largest commit (outside tests) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for s in stacks:
        largest = max(s.commits, key=lambda c: c.changed_lines(tests=False))
        rows.append(
            f"| {s.number:02d}-{s.feature} | {', '.join(s.needs) or 'none'} | "
            f"{len(s.commits)} | "
            f"{sum(c.changed_lines() for c in s.commits)} | "
            f"{sum(c.changed_lines(tests=False) for c in s.commits)} | "
            f"{largest.changed_lines(tests=False)}: {largest.title} |"
        )
    return "\n".join(rows) + "\n"


def verify_stacks(
    fork: fork_tool.Fork,
    stacks: list[Stack],
    states: dict[str, list[str]],
    tests: bool = True,
) -> None:
    """Each stack on a tree of pristine sources with only the stacks it needs
    applied (see :mod:`fork_export_verify`); a failure is a ForkError of one
    line naming the stack and the commit."""
    layered = fork.patched_files()
    by_name = {s.feature: s for s in stacks}
    upstream = [
        verify.module_name(rel)
        for rel in states
        if rel.startswith("torch/") and rel.endswith(".py") and rel not in FORK_ONLY
    ]
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fork-export-") as tmp:
        for stack in stacks:
            name = f"{stack.number:02d}-{stack.feature}"
            tree = Path(tmp) / name / "tree"
            root = Path(tmp) / name / "import-root"
            for rel in states:
                dst = tree / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(fork.pristine_file(rel), dst)
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "pristine"]):
                if verify.git(tree, *args).returncode:
                    raise fork_tool.ForkError(f"git {args[0]} failed in {tree}")
            for need in stack.needs:
                result = verify.git(tree, "am", "-q", *map(str, by_name[need].paths))
                if result.returncode:
                    raise fork_tool.ForkError(
                        f"stack {name}: `git am` of the stack it needs, {need}, "
                        f"failed on the pristine release: {result.stderr.strip()}"
                    )
            for number, (commit, path) in enumerate(zip(stack.commits, stack.paths), 1):
                where = f"stack {name}, commit {number} ({commit.title})"
                result = verify.git(tree, "am", "-q", str(path))
                if result.returncode:
                    raise fork_tool.ForkError(
                        f"{where}: `git am` failed on the pristine release with "
                        f"{', '.join(stack.needs) or 'no other stack'}: "
                        f"{(result.stdout + result.stderr).strip()}"
                    )
                verify.make_import_root(tree, fork.pristine.parent, root)
                present = [m for m in stack.modules if (tree / m).is_file()]
                modules = [
                    "torch._inductor.scheduler",
                    *upstream,
                    *(verify.module_name(m) for m in present),
                ]
                problem = verify.check_imports(tree, root, list(dict.fromkeys(modules)))
                if problem:
                    raise fork_tool.ForkError(
                        f"{where}: an import fails on the pristine release with "
                        f"{', '.join(stack.needs) or 'no other stack'}: {problem}"
                    )
            applied = {*stack.needs, stack.feature}
            for rel, file_layers in layered.items():
                # The state after the last layer of an applied feature (plumbing
                # stays out of the tree: its layers are never counted).
                expected = fork.read_pristine(rel)
                for layer, after in zip(file_layers, states[rel][1:]):
                    if layer.feature in applied:
                        expected = after
                if (tree / rel).read_text(encoding="utf-8") != expected:
                    raise fork_tool.ForkError(
                        f"stack {name}: after `git am`, {rel} differs from the "
                        "fork's layers"
                    )
            if tests and stack.tests:
                runnable = [t for t in stack.tests if Path(t).name.startswith("test_")]
                failed = verify.run_tests(tree, root, runnable)
                if failed:
                    failures.append(
                        f"stack {name}: its tests fail on the pristine release with "
                        f"{', '.join(stack.needs) or 'no other stack'}: {failed}"
                    )
        if failures:
            # every stack's tests ran: one line for each that failed
            raise fork_tool.ForkError("\n".join(failures))


def _git(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode:
        raise fork_tool.ForkError(f"{' '.join(cmd)} failed:\n{result.stderr}")


def export_command(fork: fork_tool.Fork, out: Path, tests: bool = True) -> int:
    """``tools/fork.py export``: errors are one line and exit status 2."""
    try:
        stacks = export_series(fork, out, tests=tests)
    except fork_tool.ForkError as e:
        print(f"tools/fork.py: error: {e}", file=sys.stderr)
        return 2
    for stack in stacks:
        largest = max(c.changed_lines(tests=False) for c in stack.commits)
        print(
            f"stack {stack.number:02d}-{stack.feature}: {len(stack.commits)} commits, "
            f"largest {largest} changed lines outside tests; needs "
            f"{', '.join(stack.needs) or 'nothing'}"
        )
        for number, commit in enumerate(stack.commits, 1):
            print(
                f"  {number:2d}. {commit.changed_lines():5d} changed lines "
                f"({commit.changed_lines(tests=False)} outside tests)  {commit.title}"
            )
    print(
        f"wrote {len(stacks)} stacks to {out.resolve()}; each applied, imported at "
        "every commit"
        + (" and passed its tests" if tests else "")
        + " on the pristine sources with only the stacks it needs"
    )
    return 0
