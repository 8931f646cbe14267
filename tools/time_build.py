#!/usr/bin/env python3
"""Time ``tools/fork.py build`` on an already set-up tree, as a whole command.

Runs the build once to make sure the overlay is set up, then ``--repeats``
more times as separate processes (interpreter start included, as a user
sees it) and prints each wall time and the median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


FORK = Path(__file__).resolve().parent / "fork.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("fork_args", nargs="*", help="options before `build`")
    args = parser.parse_args()
    command = [sys.executable, str(FORK), *args.fork_args, "build"]
    subprocess.run(command, check=True, capture_output=True)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = subprocess.run(command, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if "up to date" not in result.stdout:
            sys.exit(f"the overlay changed on a rebuild: {result.stdout}")
    print("runs (s): " + " ".join(f"{t:.3f}" for t in times))
    print(f"median of {args.repeats}: {statistics.median(times):.3f} s")


if __name__ == "__main__":
    main()
