#!/usr/bin/env python3
"""Run upstream PyTorch test files against stock torch and against the fork.

Upstream's test files are not part of this repository (they are fetched into
the ignored ``.upstream/``).  Each file runs twice under pytest, once with
stock torch and once with the fork, and the tool prints pass/fail/skip counts
per file and arm and every test that stock passes but the fork fails (a
regression; exit status 1 if there is any).

The stored versions of those files can be newer or older than the installed
torch (2.11.0, 2.14.1 or 2.15.0); each runs as a *compat copy* (see
:func:`compat_copy`), identical on both arms.  ``--select FILE=EXPR`` runs only
the tests of FILE that ``pytest -k EXPR`` selects (for a file too big to run
whole, such as test_torchinductor.py).

Stock torch is the same installation without the overlay: in the fork's
virtualenv ``FUSION_FORK_DISABLE=1`` turns the ``.pth`` off; elsewhere (the GPU
machine) pass ``--overlay DIR`` and the fork arm puts DIR on ``PYTHONPATH``.

    .venv/bin/python tools/upstream_tests.py .upstream/test/inductor/test_metrics.py ...
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


RESULT = re.compile(r"^(\S+::\S+(?:::\S+)?) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)")

# The stored upstream test files can come from commits newer than the installed
# torch; they may import helper modules of upstream's test/ tree, or torch names
# that this torch lacks.  The compat copy keeps every test as written and makes
# only this difference: a missing torch name imports as a stub that fails the
# tests using it (on both arms alike), and the two helper modules below are
# minimal stand-ins with the names the files use (where the fetched helper module
# is in the files' folder, its compat copy is used instead).
HELPERS = {
    "test_torchinductor.py": '''\
import contextlib

import torch
from torch._inductor import config, metrics
from torch._inductor.test_case import run_tests, TestCase as InductorTestCase


class TestCase(InductorTestCase):
    """The config that upstream's test_torchinductor.TestCase compiles under."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls._stack = contextlib.ExitStack()
        cls._stack.enter_context(
            config.patch(
                {
                    "debug": True,
                    "debug_index_asserts": True,
                    "cpp.min_chunk_size": 1,
                    "triton.autotune_pointwise": False,
                    "implicit_fallbacks": False,
                    "generate_intermediate_hooks": True,
                }
            )
        )

    @classmethod
    def tearDownClass(cls):
        cls._stack.close()
        super().tearDownClass()

    def setUp(self):
        torch._dynamo.reset()
        metrics.reset()
        super().setUp()

    def tearDown(self):
        super().tearDown()
        torch._dynamo.reset()


def check_model(self, model, example_inputs, kwargs=None, *, atol=None,
                rtol=None, exact_dtype=True, **options):
    """Compile ``model`` once with Inductor and compare with eager."""
    kwargs = kwargs or {}
    torch._dynamo.reset()
    eager_inputs = [x.clone() if isinstance(x, torch.Tensor) else x
                    for x in example_inputs]
    correct = model(*eager_inputs, **kwargs)
    actual = torch.compile(model, backend="inductor")(*example_inputs, **kwargs)
    self.assertEqual(actual, correct, atol=atol, rtol=rtol, exact_dtype=exact_dtype)


check_model_gpu = check_model


def copy_tests(my_cls, other_cls, suffix, test_failures=None, xfail_prop=None):
    """Copy ``my_cls``'s tests onto ``other_cls`` as ``<name>_<suffix>``."""
    import functools

    for name, value in list(my_cls.__dict__.items()):
        if name.startswith("test_"):

            @functools.wraps(value)
            def new_test(self, value=value):
                return value(self)

            setattr(other_cls, f"{name}_{suffix}", new_test)
''',
    "test_aot_inductor_utils.py": '''\
import torch


class AOTIRunnerUtil:
    """Compile with AOTInductor and run, as upstream's helper of that name does."""

    @staticmethod
    def run(model, example_inputs, dynamic_shapes=None):
        ep = torch.export.export(model, example_inputs, dynamic_shapes=dynamic_shapes)
        path = torch._inductor.aoti_compile_and_package(ep)
        return torch._inductor.aoti_load_package(path)(*example_inputs)
''',
}


class _Missing:
    """Stands in for a name this torch lacks: any use fails the test using it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> object:
        raise ImportError(f"{self._name} is not in this torch")

    def __call__(self, *args: object, **kwargs: object) -> object:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            # Used as a decorator (e.g. a skip condition): fail the test, not
            # the import of the whole file.
            def missing(*_: object, **__: object) -> None:
                raise ImportError(f"{self._name} is not in this torch")

            missing.__name__ = getattr(args[0], "__name__", "missing")
            return missing
        raise ImportError(f"{self._name} is not in this torch")


def _is_submodule(package: str, name: str) -> bool:
    """Whether ``from package import name`` imports a submodule."""
    import importlib.util

    try:
        return importlib.util.find_spec(f"{package}.{name}") is not None
    except (ImportError, ValueError):
        return False


def compat_copy(file: str, out_dir: Path) -> tuple[Path, list[str]]:
    """Copy ``file`` into ``out_dir``, adapting what this torch lacks (see HELPERS)."""
    import ast
    import importlib

    import torch._inductor.config

    source = Path(file).read_text()
    tree = ast.parse(source)
    missing: list[str] = []
    lines = source.splitlines(keepends=True)

    # Inductor config keys this torch lacks, in config.patch({...}) dicts and
    # config.patch(key=value) calls: the entry is dropped (the test runs under
    # this torch's default), not the test.
    def known(key: str) -> bool:
        try:
            getattr(torch._inductor.config, key)
        except AttributeError:
            return False
        return True

    def dropped(key: str) -> None:
        if f"torch._inductor.config.{key}" not in missing:
            missing.append(f"torch._inductor.config.{key}")

    # (line index, start, end, text): a one-line call rewritten without its
    # unknown keywords; columns are UTF-8 byte offsets, as ast gives them
    edits: list[tuple[int, int, int, str]] = []
    for call in ast.walk(tree):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "patch"
            and ast.unparse(call.func.value)
            in ("config", "inductor_config", "torch._inductor.config")
        ):
            continue
        unknown = [k for k in call.keywords if k.arg and not known(k.arg)]
        if unknown and call.lineno == call.end_lineno:
            kept = [
                ast.get_source_segment(source, a)
                for a in [*call.args, *call.keywords]
                if a not in unknown
            ]
            func = ast.get_source_segment(source, call.func)
            if func is not None and None not in kept and call.end_col_offset:
                text = f"{func}({', '.join(str(a) for a in kept)})"
                edits.append(
                    (call.lineno - 1, call.col_offset, call.end_col_offset, text)
                )
                for k in unknown:
                    dropped(str(k.arg))
        elif unknown:
            # one keyword a line: its lines go
            for k in unknown:
                others = {
                    line
                    for a in [*call.args, *call.keywords]
                    if a is not k
                    for line in (a.lineno, a.end_lineno)
                }
                span = set(range(k.lineno, (k.end_lineno or k.lineno) + 1))
                if not span & (others | {call.lineno, call.end_lineno}):
                    dropped(str(k.arg))
                    for i in span:
                        lines[i - 1] = "\n"
        if not (call.args and isinstance(call.args[0], ast.Dict)):
            continue
        for key, value in zip(call.args[0].keys, call.args[0].values):
            if (
                isinstance(key, ast.Constant)
                and isinstance(key.value, str)
                and not known(key.value)
                and key.lineno != call.lineno
                and value.end_lineno is not None
            ):
                dropped(key.value)
                for i in range(key.lineno - 1, value.end_lineno):
                    lines[i] = "\n"
    last: tuple[int, int] | None = None
    for index, start, end, text in sorted(edits, reverse=True):
        if last is not None and last[0] == index and end > last[1]:
            continue  # overlaps an edit made (nested calls): left as it is
        raw = lines[index].encode()
        lines[index] = (raw[:start] + text.encode() + raw[end:]).decode()
        last = (index, start)
    for node in reversed(tree.body):
        if not (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("torch")
        ):
            continue
        try:
            module = importlib.import_module(node.module)
        except ImportError:
            continue
        absent = [
            a
            for a in node.names
            if not hasattr(module, a.name) and not _is_submodule(node.module, a.name)
        ]
        if not absent:
            continue
        missing += [f"{node.module}.{a.name}" for a in absent]
        kept = [a for a in node.names if a not in absent]
        replacement = ""
        if kept:
            names = ", ".join(
                a.name + (f" as {a.asname}" if a.asname else "") for a in kept
            )
            replacement += f"from {node.module} import {names}\n"
        for a in absent:
            replacement += (
                f"{a.asname or a.name} = __import__('upstream_compat')._Missing("
                f"{node.module + '.' + a.name!r})\n"
            )
        lines[node.lineno - 1 : node.end_lineno] = [replacement]
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / Path(file).name
    out.write_text("".join(lines))
    for name, text in HELPERS.items():
        source = Path(file).parent / name
        if not source.exists():
            (out_dir / name).write_text(text)
        elif not (out_dir / name).exists():
            # The fetched helper module itself (e.g. upstream's
            # test_torchinductor.py), imported by this file but not run.
            compat_copy(str(source), out_dir)
    (out_dir / "upstream_compat.py").write_text(
        "class _Missing:\n"
        + "".join(
            "    " + line + "\n" if line else "\n"
            for line in __import__("inspect").getsource(_Missing).splitlines()[1:]
        )
    )
    return out, missing


def run(
    file: str,
    arm: str,
    overlay: str | None,
    timeout: int,
    log_dir: Path,
    select: str | None = None,
) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if arm == "stock":
        env["FUSION_FORK_DISABLE"] = "1"
        if overlay:
            env["PYTHONPATH"] = os.pathsep.join(
                p
                for p in env.get("PYTHONPATH", "").split(os.pathsep)
                if p and p != overlay
            )
    elif overlay:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [overlay, env.get("PYTHONPATH")])
        )
    log = log_dir / f"{Path(file).stem}.{arm}.log"
    start = time.perf_counter()
    with open(log, "w") as out:
        try:
            code = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-v",
                    "-rN",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "no:logging",
                    *(["-k", select] if select else []),
                    str(Path(file).resolve()),
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                cwd=Path(file).resolve().parent,
            ).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    results: dict[str, str] = {}
    for line in log.read_text(errors="replace").splitlines():
        match = RESULT.match(line)
        if match:
            results[match.group(1)] = match.group(2)
    return {
        "code": code,
        "results": results,
        "seconds": time.perf_counter() - start,
        "log": str(log),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument(
        "--overlay", help="the fork's overlay, where no .pth activates it"
    )
    parser.add_argument(
        "--timeout", type=int, default=900, help="seconds per file and arm"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="pytest runs (file x arm) at once"
    )
    parser.add_argument("--logs", default="build/upstream-test-logs")
    parser.add_argument("--json", help="write counts and regressions here")
    parser.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="FILE=EXPR",
        help="run only FILE's tests that pytest -k EXPR selects (FILE: the "
        "file's name, e.g. test_torchinductor.py); repeatable",
    )
    args = parser.parse_args()
    log_dir = Path(args.logs)
    log_dir.mkdir(parents=True, exist_ok=True)
    selections = {}
    for item in args.select:
        name, sep, expr = item.partition("=")
        if not sep or not expr:
            parser.error(f"--select takes FILE=EXPR, not {item!r}")
        selections[name] = expr
    unknown = set(selections) - {Path(file).name for file in args.files}
    if unknown:
        parser.error(f"--select names files not given: {sorted(unknown)}")

    # A compat folder left by an earlier run could hold a stand-in helper where
    # this run has the fetched one (or the other way round).
    shutil.rmtree(log_dir / "compat", ignore_errors=True)
    copies = {}
    for file in args.files:
        copy, missing = compat_copy(file, log_dir / "compat")
        copies[file] = copy
        if missing:
            print(f"{Path(file).name}: names this torch lacks, stubbed: {missing}")
    jobs = [(file, arm) for file in args.files for arm in ("stock", "fork")]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {
            job: pool.submit(
                run,
                str(copies[job[0]]),
                job[1],
                args.overlay,
                args.timeout,
                log_dir,
                selections.get(Path(job[0]).name),
            )
            for job in jobs
        }
        results = {job: future.result() for job, future in futures.items()}

    summary: dict[str, object] = {
        "files": {},
        "regressions": [],
        "not_reached": [],
        "select": selections,
    }
    print(
        f"{'file':32} {'arm':5} {'passed':>6} {'failed':>6} {'errors':>6} "
        f"{'skipped':>7} {'seconds':>7}"
    )
    for file in args.files:
        name = Path(file).name
        arms = {arm: results[(file, arm)] for arm in ("stock", "fork")}
        summary["files"][name] = {}
        for arm, res in arms.items():
            counts = {
                k.lower(): list(res["results"].values()).count(k)
                for k in ("PASSED", "FAILED", "ERROR", "SKIPPED")
            }
            summary["files"][name][arm] = dict(
                counts, timed_out=res["code"] == "timeout", seconds=res["seconds"]
            )
            print(
                f"{name:32} {arm:5} {counts['passed']:6d} {counts['failed']:6d} "
                f"{counts['error']:6d} {counts['skipped']:7d} {res['seconds']:7.0f}"
                + ("  (timed out)" if res["code"] == "timeout" else "")
            )
        for test, outcome in arms["stock"]["results"].items():
            fork = arms["fork"]["results"].get(test)
            if outcome != "PASSED" or fork == "PASSED":
                continue
            if fork is None and arms["fork"]["code"] == "timeout":
                summary["not_reached"].append(test)
            else:
                summary["regressions"].append([test, fork or "missing"])
    print(
        f"\nregressions (pass on stock, not on the fork): {len(summary['regressions'])}"
    )
    for test, outcome in summary["regressions"]:
        print(f"  {test}: {outcome}")
    if summary["not_reached"]:
        print(
            f"passed on stock, not reached by the fork before its timeout: "
            f"{len(summary['not_reached'])}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if summary["regressions"] else 0


if __name__ == "__main__":
    sys.exit(main())
