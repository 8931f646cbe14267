#!/usr/bin/env python3
"""Regenerate the table of ``docs/source/torch.compiler_fusion_reason_tests.md``.

The table maps every fusion reason code (``fusion_report.reasons_table()``) to
the test of ``test/inductor/test_fusion_reason_rules.py`` that fires its rule,
or to why it has none; it is written from the rule table
``test/inductor/fusion_rule_programs.py`` so the two cannot drift (a test
checks it).  Run with the fork's Python:
``.venv/bin/python tools/update_reason_tests_docs.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from update_fusion_docs import render as render_tables


REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs/source/torch.compiler_fusion_reason_tests.md"
TEST_FILE = "test/inductor/test_fusion_reason_rules.py"
TEST_CLASS = "TestFusionReasonRules"
# The table sits between <!-- reason-tests:begin --> and <!-- reason-tests:end -->
# (update_fusion_docs' markers).
TABLE_NAME = "reason-tests"


def _programs():
    sys.path.insert(0, str(REPO / "test/inductor"))
    try:
        import fusion_rule_programs
    finally:
        sys.path.remove(str(REPO / "test/inductor"))
    return fusion_rule_programs


def _patch(patch: dict) -> str:
    return ", ".join(f"`{k}={v!r}`" for k, v in patch.items()) or "the defaults"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def describe(rule) -> str:
    """What the test does, in one cell."""
    program = f"`{rule.fn.__name__}`" if rule.fn is not None else ""
    if rule.counterfactual is not None:
        fires = f"{program} under {_patch(rule.patch)}; gone under {_patch(rule.counterfactual)}"
    else:
        fires = f"{program} under {_patch(rule.patch)}"
    where = {
        "boundary": "boundary",
        "remark": "remark",
        "graph_break": "graph break",
        "evaluated_pair": "evaluated pair",
    }
    text = f"{fires} ({where[rule.where]}, stage `{rule.stage}`): {rule.why}"
    if rule.xfail is not None:
        text += f". **Expected failure**: {rule.xfail}"
    return _escape(text)


def table() -> str:
    from torch._inductor import fusion_report

    programs = _programs()
    rules = {rule.code: rule for rule in programs.RULES}
    rows = ["| code | category | test | how |", "|---|---|---|---|"]
    for code, info in fusion_report.reasons_table().items():
        rule = rules.get(code)
        if rule is not None and (rule.cpu or rule.cuda):
            kind = "counterfactual" if rule.counterfactual is not None else "produced"
            where = "" if rule.cpu else " on CUDA"
            test = f"`{programs.test_name(rule)}`{where} ({kind})"
            how = describe(rule)
        elif rule is not None:
            test = "no test on the CPU"
            how = _escape(
                f"{rule.why}; fires under {_patch(rule.patch)}, "
                f"gone under {_patch(rule.counterfactual or {})}"
            )
        else:
            test = "no test"
            how = _escape(programs.UNTESTED[code])
        rows.append(f"| `{code}` | {info['category']} | {test} | {how} |")
    return "\n".join(rows)


def render(text: str) -> str:
    return render_tables(text, {TABLE_NAME: table})


def main() -> None:
    text = DOC.read_text()
    new = render(text)
    if new != text:
        DOC.write_text(new)
        print(f"updated {DOC}")
    else:
        print(f"{DOC} is up to date")


if __name__ == "__main__":
    main()
