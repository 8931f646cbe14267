"""The README's quick start: its log example is what the fork prints, and
it reaches the answer within its first 60 lines.

Beside the fork's tools, not in a pull-request stack: the README is the
fork's own (the remarks stack's tests check the log without it).
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from torch._inductor.test_case import run_tests, TestCase


REPO = Path(__file__).resolve().parents[2]


class TestReadmeLogExample(TestCase):
    """The README's log example is what the fork prints."""

    def readme_blocks(self):
        text = (REPO / "README.md").read_text()
        section = text[text.index("## Quick start") :]
        program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        output = re.search(r"```text\n(.*?)```", section, re.S).group(1)
        return program, output

    def test_quick_start_reaches_the_log_within_60_lines(self):
        """The README starts with the answer: install (both routes), the
        command, and the log's output, all within its first 60 lines; the
        commands are the ones tests run (this class runs the example;
        tools/test/test_fork_install.py runs ``tools/fork.py install``)."""
        head = (REPO / "README.md").read_text().splitlines()[:60]
        text = "\n".join(head)
        self.assertIn("## Quick start", text)
        self.assertIn("make develop", text)
        self.assertIn("bin/python tools/fork.py install", text)
        self.assertIn("TORCH_LOGS=fusion python example.py", text)
        self.assertTrue(any(line.startswith("[__fusion] graph ") for line in head))

    def test_readme_example_output(self):
        program, expected = self.readme_blocks()
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "example.py").write_text(program)
            env = dict(
                os.environ,
                TORCH_LOGS="fusion",
                TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
                TORCHINDUCTOR_CACHE_DIR=tmp,
            )
            env.pop("TORCH_TRACE", None)
            result = subprocess.run(
                [sys.executable, "example.py"],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        printed = []
        in_record = False
        for line in result.stderr.splitlines():
            if line.startswith("[__fusion] "):
                in_record = True
            elif not line.startswith("  "):
                in_record = False
            if in_record:
                printed.append(line)
        self.assertEqual("\n".join(printed) + "\n", expected)
        # the summary is nearly all the log prints
        self.assertGreaterEqual(len(printed), 0.8 * len(result.stderr.splitlines()))


if __name__ == "__main__":
    run_tests()
