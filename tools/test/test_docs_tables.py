"""The docs' generated tables match their generators: the remark and ablation
tables (``tools/update_fusion_docs.py``) and the reason tests' table
(``tools/update_reason_tests_docs.py``).  A stale table fails with the command
that rewrites it.

Beside the fork's tools, not in a pull-request stack: the generators are the
fork's own.  The stacks' tests check the docs without them (every held option
named, every reason code's row naming its test).
"""

import sys
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


REPO = Path(__file__).resolve().parents[2]
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

import update_fusion_docs  # noqa: E402
import update_reason_tests_docs  # noqa: E402


class TestDocsTables(TestCase):
    def test_fusion_docs_tables_match_the_code(self):
        for filename, tables in update_fusion_docs.TABLES.items():
            text = (REPO / "docs" / "source" / filename).read_text()
            self.assertEqual(
                update_fusion_docs.render(text, tables),
                text,
                f"{filename} is stale: run tools/update_fusion_docs.py",
            )

    def test_reason_tests_table_matches_the_rules(self):
        text = Path(update_reason_tests_docs.DOC).read_text()
        self.assertEqual(
            update_reason_tests_docs.render(text),
            text,
            "stale: run .venv/bin/python tools/update_reason_tests_docs.py",
        )


if __name__ == "__main__":
    run_tests()
