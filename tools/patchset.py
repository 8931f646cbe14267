"""Strict unified diffs: make them, parse them, apply them with no fuzz.

The fork keeps every modified upstream file as one unified diff.  We apply
those diffs ourselves instead of shelling out to ``patch`` because we need
exactly one behaviour everywhere (CPU CI, the GPU machine): every context and
removed line of a hunk must match the pristine file byte for byte.  A hunk may
be found a few lines away from where its header says (an *offset*, which the
build tolerates and ``check`` reports), but never with mismatching context
(*fuzz*), which could silently put a hook in the wrong function.
"""

from __future__ import annotations

import dataclasses
import difflib
import re


NO_NEWLINE = "\\ No newline at end of file"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(Exception):
    """A patch is malformed or does not apply cleanly."""


@dataclasses.dataclass
class Hunk:
    index: int  # 1-based, as GNU patch numbers them in its messages
    header: str
    old_start: int
    old_lines: list[str]  # context and removed lines, with their line endings
    new_lines: list[str]  # context and added lines, with their line endings


@dataclasses.dataclass
class AppliedPatch:
    text: str
    offsets: dict[int, int]  # hunk index -> offset in lines, only where non-zero


def make_patch(path: str, old: str, new: str) -> str:
    """A git-style unified diff of ``path`` from ``old`` to ``new`` ('' if equal)."""
    if old == new:
        return ""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    out = [f"diff --git a/{path} b/{path}\n"]
    for line in difflib.unified_diff(
        old_lines, new_lines, fromfile=f"a/{path}", tofile=f"b/{path}", n=3
    ):
        if line.startswith(("---", "+++")):
            # difflib ends the file header lines with "\n" already.
            out.append(line)
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + NO_NEWLINE + "\n")
    return "".join(out)


def parse_patch(text: str, name: str) -> list[Hunk]:
    """Parse the hunks of a single-file unified diff."""
    lines = text.splitlines(keepends=True)
    hunks: list[Hunk] = []
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1
    if i == len(lines):
        raise PatchError(f"{name}: no hunks found (is it a unified diff?)")
    while i < len(lines):
        header = lines[i].rstrip("\n")
        match = _HUNK_HEADER.match(header)
        if match is None:
            raise PatchError(
                f"{name}: line {i + 1}: expected a hunk header, got {header!r}"
            )
        old_start = int(match.group(1))
        old_count = int(match.group(2) if match.group(2) is not None else 1)
        new_count = int(match.group(4) if match.group(4) is not None else 1)
        hunk = Hunk(len(hunks) + 1, header, old_start, [], [])
        last_tag = " "
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            tag, body = line[:1], line[1:]
            if line.rstrip("\n") == NO_NEWLINE:
                # The marker strips the newline of the line just before it.
                _strip_last_newline(hunk, last_tag)
            elif tag == " ":
                hunk.old_lines.append(body)
                hunk.new_lines.append(body)
            elif tag == "-":
                hunk.old_lines.append(body)
            elif tag == "+":
                hunk.new_lines.append(body)
            elif line == "\n":  # an empty context line whose space was stripped
                hunk.old_lines.append("\n")
                hunk.new_lines.append("\n")
            else:
                raise PatchError(
                    f"{name}: line {i + 1}: unexpected {line!r} in hunk #{hunk.index}"
                )
            if line.rstrip("\n") != NO_NEWLINE:
                last_tag = tag if tag in " -+" else " "
            i += 1
        if len(hunk.old_lines) != old_count or len(hunk.new_lines) != new_count:
            raise PatchError(
                f"{name}: hunk #{hunk.index} ({header}) is corrupt: it announces "
                f"{old_count} old and {new_count} new lines but holds "
                f"{len(hunk.old_lines)} and {len(hunk.new_lines)}"
            )
        hunks.append(hunk)
    return hunks


def _strip_last_newline(hunk: Hunk, last_tag: str) -> None:
    sides = {
        " ": (hunk.old_lines, hunk.new_lines),
        "-": (hunk.old_lines,),
        "+": (hunk.new_lines,),
    }
    for side in sides[last_tag]:
        if side and side[-1].endswith("\n"):
            side[-1] = side[-1][:-1]


def apply_patch(original: str, patch_text: str, name: str, target: str) -> AppliedPatch:
    """Apply ``patch_text`` (named ``name`` in messages) to ``original``.

    ``target`` names the file being patched in error messages.  Raises
    :class:`PatchError` naming the hunk when a hunk's context is not found
    verbatim anywhere after the previous hunk.
    """
    hunks = parse_patch(patch_text, name)
    src = original.splitlines(keepends=True)
    out: list[str] = []
    pos = 0  # next unconsumed line of src
    offsets: dict[int, int] = {}
    for hunk in hunks:
        want = hunk.old_start - 1 if hunk.old_lines else hunk.old_start
        found = _find(src, hunk.old_lines, want, pos)
        if found is None:
            raise PatchError(_explain_failure(src, hunk, want, name, target))
        if found != want:
            offsets[hunk.index] = found - want
        out.extend(src[pos:found])
        out.extend(hunk.new_lines)
        pos = found + len(hunk.old_lines)
    out.extend(src[pos:])
    return AppliedPatch("".join(out), offsets)


def _find(src: list[str], needle: list[str], want: int, lowest: int) -> int | None:
    """The start nearest to ``want`` (not before ``lowest``) where ``needle`` matches."""
    n = len(needle)
    limit = len(src) - n
    for delta in range(max(len(src), 1) + 1):
        for start in (want - delta, want + delta) if delta else (want,):
            if lowest <= start <= limit and src[start : start + n] == needle:
                return start
        if want - delta < lowest and want + delta > limit:
            return None
    return None


def _explain_failure(
    src: list[str], hunk: Hunk, want: int, name: str, target: str
) -> str:
    detail = "its context is not found anywhere in the file"
    for k, expected in enumerate(hunk.old_lines):
        line_no = want + k
        actual = src[line_no] if line_no < len(src) else "<end of file>"
        if actual != expected:
            detail = (
                f"at line {line_no + 1} it expects {expected.rstrip(chr(10))!r} "
                f"but {target} has {actual.rstrip(chr(10))!r}, and the hunk's context "
                "is not found anywhere else"
            )
            break
    return (
        f"{name}: hunk #{hunk.index} ({hunk.header}) does not apply to {target}: "
        f"{detail}. No fuzz is allowed: rebase the patch by hand on this file "
        "(edit it in the overlay, then `tools/fork.py refresh`)."
    )
