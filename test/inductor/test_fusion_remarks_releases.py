# Owner(s): ["module: inductor"]
"""Release tags as ranges: a new release inherits what upstream has not removed."""

import torch
from torch._inductor import fusion_report
from torch._inductor.fusion_remarks import releases as fusion_releases
from torch._inductor.fusion_remarks.releases import (
    ALL_RELEASES,
    release_key,
    ReleaseRange,
    since,
    until,
)
from torch._inductor.fusion_remarks.taxonomy import RELEASES
from torch._inductor.test_case import run_tests, TestCase


class TestReleaseRange(TestCase):
    def test_since_is_inherited_by_later_releases(self):
        added = since("2.14.1")
        self.assertNotIn("2.11.0", added)
        for release in ("2.14.1", "2.15.0", "2.16.3", "3.0.0"):
            self.assertIn(release, added)

    def test_until_is_the_first_release_without_it(self):
        removed = until("2.14.1")
        self.assertIn("2.11.0", removed)
        self.assertNotIn("2.14.1", removed)
        self.assertNotIn("2.15.0", removed)
        both = ReleaseRange(since="2.12.0", until="2.14.0")
        self.assertEqual(
            both.of(("2.11.0", "2.12.0", "2.13.1", "2.14.0")), ["2.12.0", "2.13.1"]
        )

    def test_local_versions_and_ordering(self):
        self.assertIn("2.15.0+cu132", since("2.15.0"))
        self.assertLess(release_key("2.9.1"), release_key("2.14.1"))
        self.assertEqual(release_key("2.14.1+cpu"), (2, 14, 1))

    def test_bad_ranges_are_errors(self):
        with self.assertRaisesRegex(ValueError, "not a torch release"):
            since("2.x")
        with self.assertRaisesRegex(ValueError, "empty release range"):
            ReleaseRange(since="2.15.0", until="2.14.1")

    def test_words_and_json(self):
        self.assertEqual(ALL_RELEASES.describe(), "all")
        self.assertEqual(since("2.14.1").describe(), "2.14.1 and later")
        self.assertEqual(until("2.14.1").describe(), "before 2.14.1")
        self.assertEqual(since("2.14.1").to_json(), {"since": "2.14.1"})
        self.assertEqual(ALL_RELEASES.to_json(), {})

    def test_tags_hold_a_described_release(self):
        """Every tagged code applies to some release the tags were checked
        against; the reasons table says the same range."""
        table = fusion_report.reasons_table()
        for reason, releases in RELEASES.items():
            self.assertTrue(releases.of(fusion_releases.DESCRIBED_RELEASES), reason)
            self.assertEqual(table[reason.value]["releases"], releases.to_json())

    def test_the_running_release(self):
        """The running release is the installed torch's, without its local
        part, and the questions about it follow its ranges."""
        self.assertEqual(fusion_releases.RELEASE, torch.__version__.split("+")[0])
        self.assertTrue(fusion_releases.release_at_least(fusion_releases.RELEASE))
        self.assertTrue(fusion_releases.applies_here(since(fusion_releases.RELEASE)))
        self.assertFalse(fusion_releases.applies_here(until(fusion_releases.RELEASE)))


if __name__ == "__main__":
    run_tests()
