#!/usr/bin/env python3
"""Regenerate the tables in the fusion docs from the code that defines them.

* the reason taxonomy (``torch._inductor.fusion_remarks.taxonomy.REASON_INFO``) in
  ``docs/source/torch.compiler_fusion_remarks.md``;
* the ablation switches' options (``torch._inductor.fusion_ablation``), each
  with the torch releases it applies to, and the classification of the config
  options each release added since the supported release before it
  (``torch._inductor.fusion_ablation_options.ADDED``: 2.15.0's),
  in ``docs/source/torch.compiler_fusion_ablation.md``.

The docs are written from the code so the two cannot drift (tests check it).
The tables list every release's entries, so any supported release's Python
writes the same docs.  Run with the fork's Python:
``.venv/bin/python tools/update_fusion_docs.py`` (``--check``: change nothing,
fail if a doc is out of date).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from torch._inductor import fusion_ablation, fusion_ablation_options
from torch._inductor.fusion_remarks.taxonomy import REASON_INFO, RELEASES
from torch._inductor.fusion_remarks.releases import ALL_RELEASES


DOCS = Path(__file__).resolve().parent.parent / "docs/source"


def reasons_table() -> str:
    rows = ["| code | category | releases | meaning |", "|---|---|---|---|"]
    for reason, (category, description) in REASON_INFO.items():
        releases = RELEASES.get(reason, ALL_RELEASES).describe()
        rows.append(
            f"| `{reason.value}` | {category.value} | {releases} | {description} |"
        )
    return "\n".join(rows)


def held_table(held: tuple[fusion_ablation.HeldOption, ...]) -> str:
    rows = [
        "| option | held at | optimization | why | releases |",
        "|---|---|---|---|---|",
    ]
    for h in held:
        rows.append(
            f"| `{h.option}` | `{h.value!r}` | {h.optimization} | {h.why} "
            f"| {h.releases.describe()} |"
        )
    return "\n".join(rows)


def kept_table() -> str:
    rows = ["| left on | why | releases |", "|---|---|---|"]
    for k in fusion_ablation.KEPT:
        rows.append(f"| {k.what} | {k.why} | {k.releases.describe()} |")
    return "\n".join(rows)


def added_table(added: tuple[fusion_ablation_options.AddedOption, ...]) -> str:
    rows = ["| option | verdict | why |", "|---|---|---|"]
    for a in added:
        rows.append(f"| `{a.option}` | {a.verdict.value} | {a.why()} |")
    return "\n".join(rows)


def added_counts(added: tuple[fusion_ablation_options.AddedOption, ...]) -> str:
    counts = [
        f"{sum(a.verdict is v for a in added)} {v.value}"
        for v in fusion_ablation_options.Verdict
    ]
    return f"{len(added)} options: " + ", ".join(counts) + "."


def added_sections() -> str:
    """One section per release of ``ADDED``, the newest first."""
    sections = []
    for added in reversed(fusion_ablation_options.ADDED):
        sections.append(
            f"### torch {added.release} (since {added.previous})\n\n"
            f"{added_counts(added.options)}\n\n{added_table(added.options)}"
        )
    return "\n\n".join(sections)


TABLES = {
    "torch.compiler_fusion_remarks.md": {"reasons": reasons_table},
    "torch.compiler_fusion_ablation.md": {
        "fusion_only": lambda: held_table(fusion_ablation.FUSION_ONLY),
        "kept": kept_table,
        "added": added_sections,
        "no_fusion": lambda: held_table(fusion_ablation.NO_FUSION),
    },
}


def render(text: str, tables: dict) -> str:
    for name, make in tables.items():
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        block = f"{begin}\n{make()}\n{end}"
        text = re.sub(
            re.escape(begin) + ".*?" + re.escape(end),
            lambda _, block=block: block,
            text,
            flags=re.S,
        )
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a doc differs from what the code generates",
    )
    args = parser.parse_args(argv)
    stale = []
    for filename, tables in TABLES.items():
        doc = DOCS / filename
        text = doc.read_text()
        new = render(text, tables)
        if new == text:
            print(f"{doc} is up to date")
        elif args.check:
            stale.append(doc)
            print(f"{doc} is out of date", file=sys.stderr)
        else:
            doc.write_text(new)
            print(f"updated {doc}")
    if stale:
        print(
            "run `.venv/bin/python tools/update_fusion_docs.py` to regenerate",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
