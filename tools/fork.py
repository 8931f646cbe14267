#!/usr/bin/env python3
"""Build, check, refresh and export the fusion fork of PyTorch: the command line.

The overlay (``build``, ``check``, ``edit``, ``refresh``, ``activate``,
``run``, ``info``) is :mod:`fork_overlay`; the export of the feature stacks is
:mod:`fork_export` and the port to a new release :mod:`fork_port`.  This
module only parses arguments and dispatches, so that the three import it and
nothing imports it (no cycle).  The names tests and scripts use from
``fork`` are re-exported here.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata  # noqa: F401  (tests patch fork.importlib.metadata)
import json
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
import fork_export
import fork_port
from fork_install import (  # noqa: F401  (re-exported for `import fork` users)
    activate,
    environment_overlay,
    foreign_overlay,
    install,
    PTH_NAME,
    pth_line,
    uninstall,
)
from fork_overlay import (  # noqa: F401  (re-exported for `import fork` users)
    build,
    check,
    DEFAULT_RELEASE,
    edit,
    Fork,
    ForkError,
    install_hint,
    load_manifest,
    locate_pristine_torch,
    refresh,
    REPO,
    run_under_overlay,
    source_digest,
    STACK_ORDER,
    SUPPORTED_RELEASES,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/fork.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--overlay",
        help="overlay directory (default: this environment's: build/overlay-<release> "
        "for the repository's virtualenvs, <prefix>/fusion-fork/overlay-<release> for "
        "any other)",
    )
    parser.add_argument(
        "--torch",
        dest="pristine",
        help="installed torch package to patch (default: the one this Python imports)",
    )
    parser.add_argument("--repo", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("build", help="make the overlay (idempotent)")
    p.add_argument(
        "--discard-edits",
        action="store_true",
        help="overwrite unrefreshed overlay edits",
    )
    p.add_argument("--time", action="store_true", help="print how long the build took")
    p = sub.add_parser(
        "edit", help="make upstream files editable copies in the overlay"
    )
    p.add_argument("files", nargs="+")
    p = sub.add_parser("refresh", help="regenerate patches from edited overlay files")
    p.add_argument(
        "--feature",
        choices=STACK_ORDER,
        help="the feature whose patch takes the edit (default: the last feature "
        "that patches the file)",
    )
    p.add_argument("files", nargs="*")
    sub.add_parser("check", help="verify version, patches, overlay and links")
    p = sub.add_parser(
        "export", help="write the change as a git-am patch series and verify it applies"
    )
    p.add_argument("out")
    p.add_argument(
        "--no-tests",
        action="store_true",
        help="verify each stack's commits (git am, imports) but not its tests",
    )
    sub.add_parser(
        "activate", help="put the overlay first on this virtualenv's sys.path"
    )
    sub.add_parser(
        "install",
        help="build this virtualenv's own overlay and activate it (run it with "
        "that environment's Python)",
    )
    sub.add_parser(
        "uninstall", help="stock torch again in this virtualenv (its overlay removed)"
    )
    p = sub.add_parser(
        "run", help="build the overlay, then run a command with it on PYTHONPATH"
    )
    p.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("info", help="print the overlay's identity")
    p = sub.add_parser(
        "port",
        help="port the newest patch series to a new torch release by a three-way merge",
    )
    p.add_argument("new", metavar="NEW", help="the new torch release, like 2.15.0")
    p.add_argument(
        "--from",
        dest="old",
        metavar="OLD",
        help="the series to port (default: the newest supported release before NEW)",
    )
    p.add_argument(
        "--old-torch", help="OLD's pristine torch (default: its virtualenv's)"
    )
    p.add_argument(
        "--new-torch",
        help="NEW's pristine torch (default: --torch, else the one this Python imports)",
    )
    p.add_argument("--out", help="where the new patches go (default: patches/NEW)")
    p.add_argument(
        "--work",
        help="merged files with conflicts and report.json (default: build/port-NEW)",
    )
    p.add_argument(
        "--resolved",
        action="store_true",
        help="write patches from the hand-resolved files under --work",
    )
    args = parser.parse_args(argv)

    try:
        repo = Path(args.repo).resolve() if args.repo else REPO
        if args.cmd == "port":
            # NEW is no supported release yet: port locates both torches itself.
            return fork_port.port_command(args, repo)
        pristine, release = locate_pristine_torch(args.pristine)
        if args.overlay:
            overlay = Path(args.overlay).resolve()
        elif args.cmd == "run":
            key = hashlib.sha256(str(repo).encode()).hexdigest()[:8]
            overlay = (
                Path(tempfile.gettempdir()) / f"fusion-fork-overlay-{key}-{release}"
            )
        else:
            overlay = environment_overlay(repo, release, args.cmd == "install")
        fork = Fork(repo, pristine, overlay, release)
        foreign = foreign_overlay(fork)
        if foreign and args.cmd in ("build", "activate", "install", "edit"):
            # another environment's overlay: never rewritten from here
            raise ForkError(foreign)
        if args.cmd == "build":
            start = time.perf_counter()
            changes = build(fork, discard_edits=args.discard_edits)
            elapsed = time.perf_counter() - start
            n = (
                changes["linked"]
                + changes["patched"]
                + changes["removed"]
                + changes["dirs"]
            )
            print(
                f"overlay {fork.overlay}: "
                + (
                    "up to date"
                    if n == 0
                    else f"{changes['patched']} patched, {changes['linked']} linked, "
                    f"{changes['removed']} removed, {changes['dirs']} directories made"
                )
                + (f" in {elapsed:.3f} s" if args.time else "")
            )
        elif args.cmd == "edit":
            edit(fork, args.files)
        elif args.cmd == "refresh":
            refresh(fork, args.files, args.feature)
        elif args.cmd == "check":
            problems = [foreign] if foreign else check(fork)
            for line in problems:
                print(f"FAIL {line}")
            if problems:
                return 1
            print(
                f"ok: torch {fork.release} at {fork.pristine}; {fork.patch_count()} patches "
                f"apply with no fuzz; {len(fork.new_files())} new files linked; no unrefreshed edits"
            )
        elif args.cmd == "export":
            return fork_export.export_command(
                fork, Path(args.out), tests=not args.no_tests
            )
        elif args.cmd == "activate":
            print(f"activated: {activate(fork)}")
        elif args.cmd == "install":
            pth = install(fork)
            print(
                f"installed: torch {fork.release} at {fork.pristine} with the fusion "
                f"fork, overlay {fork.overlay}, activated by {pth}"
            )
        elif args.cmd == "uninstall":
            for line in uninstall(fork) or ["nothing to remove"]:
                print(line)
            print(f"stock torch {fork.release} at {fork.pristine}")
        elif args.cmd == "run":
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            return run_under_overlay(fork, command)
        elif args.cmd == "info":
            print(json.dumps(load_manifest(fork), indent=2))
            if foreign:
                print(f"warning: {foreign}", file=sys.stderr)
                return 1
    except ForkError as e:
        print(f"tools/fork.py: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
