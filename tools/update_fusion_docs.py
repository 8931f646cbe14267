#!/usr/bin/env python3
"""Regenerate the tables in the fusion docs from the code that defines them.

* the reason taxonomy (``torch._inductor.fusion_remarks.taxonomy.REASON_INFO``) in
  ``docs/source/torch.compiler_fusion_remarks.md``;
* the ablation switches' options (``torch._inductor.fusion_ablation``) in
  ``docs/source/torch.compiler_fusion_ablation.md``.

The docs are written from the code so the two cannot drift (tests check it).
Run with the fork's Python: ``.venv/bin/python tools/update_fusion_docs.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

from torch._inductor import fusion_ablation
from torch._inductor.fusion_remarks.taxonomy import REASON_INFO


DOCS = Path(__file__).resolve().parent.parent / "docs/source"


def reasons_table() -> str:
    rows = ["| code | category | meaning |", "|---|---|---|"]
    for reason, (category, description) in REASON_INFO.items():
        rows.append(f"| `{reason.value}` | {category.value} | {description} |")
    return "\n".join(rows)


def held_table(held: tuple[fusion_ablation.HeldOption, ...]) -> str:
    rows = ["| option | held at | optimization | why |", "|---|---|---|---|"]
    for h in held:
        rows.append(f"| `{h.option}` | `{h.value!r}` | {h.optimization} | {h.why} |")
    return "\n".join(rows)


def kept_table() -> str:
    rows = ["| left on | why |", "|---|---|"]
    for k in fusion_ablation.KEPT:
        rows.append(f"| {k.what} | {k.why} |")
    return "\n".join(rows)


TABLES = {
    "torch.compiler_fusion_remarks.md": {"reasons": reasons_table},
    "torch.compiler_fusion_ablation.md": {
        "fusion_only": lambda: held_table(fusion_ablation.FUSION_ONLY),
        "kept": kept_table,
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


def main() -> None:
    for filename, tables in TABLES.items():
        doc = DOCS / filename
        text = doc.read_text()
        new = render(text, tables)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc}")
        else:
            print(f"{doc} is up to date")


if __name__ == "__main__":
    main()
