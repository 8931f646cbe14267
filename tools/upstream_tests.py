#!/usr/bin/env python3
"""Run upstream PyTorch test files against stock torch and against the fork.

Upstream's test files are not part of this repository (they are fetched into
the ignored ``.upstream/``).  Each file runs twice under pytest, once with
stock torch and once with the fork, and the tool prints pass/fail/skip counts
per file and arm and every test that stock passes but the fork fails (a
regression; exit status 1 if there is any).

Stock torch is the same installation without the overlay: in the fork's
virtualenv ``FUSION_FORK_DISABLE=1`` turns the ``.pth`` off; elsewhere (the GPU
machine) pass ``--overlay DIR`` and the fork arm puts DIR on ``PYTHONPATH``.

    .venv/bin/python tools/upstream_tests.py .upstream/test/inductor/test_metrics.py ...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path


RESULT = re.compile(r"^(\S+::\S+(?:::\S+)?) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)")


def run(file: str, arm: str, overlay: str | None, timeout: int, log_dir: Path) -> dict:
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
                    file,
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
    parser.add_argument("--logs", default="build/upstream-test-logs")
    args = parser.parse_args()
    log_dir = Path(args.logs)
    log_dir.mkdir(parents=True, exist_ok=True)

    regressions = []
    rows = []
    for file in args.files:
        arms = {
            arm: run(file, arm, args.overlay, args.timeout, log_dir)
            for arm in ("stock", "fork")
        }
        for arm, res in arms.items():
            counts = {
                k: list(res["results"].values()).count(k)
                for k in ("PASSED", "FAILED", "ERROR", "SKIPPED")
            }
            rows.append((Path(file).name, arm, counts, res["code"], res["seconds"]))
            print(
                f"{Path(file).name:32} {arm:5} {counts} exit={res['code']} {res['seconds']:.0f}s",
                flush=True,
            )
        for test, outcome in arms["stock"]["results"].items():
            if outcome == "PASSED" and arms["fork"]["results"].get(test) != "PASSED":
                regressions.append((test, arms["fork"]["results"].get(test, "missing")))
    print()
    print(
        f"{'file':32} {'arm':5} {'passed':>6} {'failed':>6} {'errors':>6} {'skipped':>7}"
    )
    for name, arm, c, code, _ in rows:
        print(
            f"{name:32} {arm:5} {c['PASSED']:6d} {c['FAILED']:6d} {c['ERROR']:6d} {c['SKIPPED']:7d}"
            + ("  (timed out)" if code == "timeout" else "")
        )
    print(f"\nregressions (pass on stock, not on the fork): {len(regressions)}")
    for test, outcome in regressions:
        print(f"  {test}: {outcome}")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
