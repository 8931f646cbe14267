#!/usr/bin/env python3
"""Carry a torch release newer than the GPU machine's own (2.11.0) there as wheels.

The GPU machine (Python 3.12, manylinux x86_64, glibc 2.39) has no network; each
remote command carries at most 64 MiB with the working tree.  So:

* ``pack RELEASE`` (here, with network) resolves ``requirements/torch-RELEASE.txt``
  and ``requirements/gpu-extra.txt`` against the machine's own packages
  (``requirements/gpu-machine.txt``), downloads with pip the wheels of what is
  missing there or there at an incompatible version, and splits one uncompressed
  tar stream of them into ``.gpu-parts/RELEASE/part-NNN`` of at most 60,000,000
  bytes beside a ``manifest.json`` (``--shrink`` drops torch's tools and CMake files and
  Triton's static libraries, about 3%; ``--keep NAME`` keeps the machine's NAME whatever the
  pins; the packages of ``requirements/gpu-compatible.txt`` are kept wherever the
  pins name the machine's major.minor release, e.g. its cuda-toolkit 13.0.2, which
  served 2.14.1 though 2.14.1 pins 13.0.3);
* ``receive`` (GPU machine, one command per part) moves the part that command
  carried out of the checkout copy into ``/tmp/gpu-env-parts/RELEASE/``;
* ``unpack RELEASE`` (GPU machine) checks every digest, extracts the wheels into
  ``/tmp/torch-RELEASE`` with their execute bits and prints ``PYTHONPATH=...`` last;
* ``hide NAME...`` (GPU machine) makes a virtualenv of the machine's packages
  but NAME... and prints ``PATH=...`` last;
* ``inventory`` prints the running Python's packages (to refresh gpu-machine.txt).

``receive``, ``unpack``, ``hide`` and ``inventory`` need the standard library
only; ``pack`` needs ``packaging`` too.  User errors are one ``error: ...``
line, exit 2.  This file is the command line; the work lies beside it, imports
pointing one way: ``gpu_env_pack`` (parts) on ``gpu_env_resolve`` (which
wheels), ``gpu_env_device`` (the GPU machine's side), both on ``gpu_env_common``.
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import zipfile

from gpu_env_common import REPO, UserError
from gpu_env_device import cmd_hide, cmd_inventory, cmd_receive, cmd_unpack, STAGE_ROOT
from gpu_env_pack import cmd_pack, DEFAULT_CACHE, DEFAULT_PART_BYTES


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(message)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="gpu_env.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="resolve, download and split a release")
    p.set_defaults(func=cmd_pack)
    p.add_argument("release")
    p.add_argument(
        "--shrink",
        action="store_true",
        help="drop torch's tools and CMake files, Triton's static libraries",
    )
    p.add_argument("--part-bytes", type=int, default=DEFAULT_PART_BYTES)
    p.add_argument("--out", help="default: .gpu-parts/RELEASE in the repository")
    p.add_argument("--cache", default=str(DEFAULT_CACHE))
    p.add_argument("--wheel-dir", help="resolve against these wheels only (no pip)")
    p.add_argument("--plan-only", action="store_true", help="resolve and stop")
    p.add_argument("--keep", action="append", default=[], metavar="NAME")
    p.add_argument(
        "--compatible",
        default=str(REPO / "requirements/gpu-compatible.txt"),
        help="packages whose machine version serves pins of its major.minor",
    )
    p.add_argument("--inventory", default=str(REPO / "requirements/gpu-machine.txt"))
    p.add_argument("--requirements-dir", default=str(REPO / "requirements"))
    p = sub.add_parser("receive", help="stage the parts a command carried")
    p.set_defaults(func=cmd_receive)
    p.add_argument("--from", dest="source", help="default: .gpu-parts")
    p.add_argument("--stage", help=f"default: {STAGE_ROOT}/RELEASE")
    p = sub.add_parser("unpack", help="check and extract the staged parts")
    p.set_defaults(func=cmd_unpack)
    p.add_argument("release")
    p.add_argument("--stage", help=f"default: {STAGE_ROOT}/RELEASE")
    p.add_argument("--into", help="default: /tmp/torch-RELEASE")
    p.add_argument("--drop-parts", action="store_true", help="delete them after")
    p = sub.add_parser(
        "hide", help="a virtualenv of this Python's packages but NAME..."
    )
    p.set_defaults(func=cmd_hide)
    p.add_argument("names", nargs="+", metavar="NAME")
    p.add_argument("--venv", default="/tmp/gpu-env-venv")
    p.add_argument("--site", help="default: this Python's site-packages")
    p = sub.add_parser("inventory", help="print `pip list --format=freeze`")
    p.set_defaults(func=cmd_inventory)
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except (UserError, OSError, ValueError, zipfile.BadZipFile, tarfile.TarError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
