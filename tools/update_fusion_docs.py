#!/usr/bin/env python3
"""Regenerate the reason table in docs/source/torch.compiler_fusion_remarks.md.

The taxonomy lives in code (``torch._inductor.fusion_remarks.Reason`` and
``REASON_INFO``); the docs table is written from it so the two cannot drift
(``test_docs_table_matches_the_enum`` checks it).  Run with the fork's Python:
``.venv/bin/python tools/update_fusion_docs.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

from torch._inductor.fusion_remarks import REASON_INFO


DOC = (
    Path(__file__).resolve().parent.parent
    / "docs/source/torch.compiler_fusion_remarks.md"
)
BEGIN, END = "<!-- reasons:begin -->", "<!-- reasons:end -->"


def table() -> str:
    rows = ["| code | category | meaning |", "|---|---|---|"]
    for reason, (category, description) in REASON_INFO.items():
        rows.append(f"| `{reason.value}` | {category.value} | {description} |")
    return "\n".join(rows)


def main() -> None:
    text = DOC.read_text()
    new = re.sub(
        re.escape(BEGIN) + ".*?" + re.escape(END),
        f"{BEGIN}\n{table()}\n{END}",
        text,
        flags=re.S,
    )
    if new != text:
        DOC.write_text(new)
        print(f"updated {DOC}")
    else:
        print(f"{DOC} is up to date")


if __name__ == "__main__":
    main()
