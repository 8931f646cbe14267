"""Which torch releases have a rule or an option: a range, not a list.

The fork tags the reason codes, held options and rule programs that exist in
some releases only.  A tag that lists releases (``("2.14.1",)``) silently
switches its entry off on the next release, although upstream rarely removes
a rule; a range says what is known instead: the first release that has the
rule (``since``) and, once upstream removes it, the first that no longer has
it (``until``).  A new release inherits every entry whose range is open.

Plain data with no imports of torch, so that the bottom layers (the reason
taxonomy) can use it; ``release_compat.applies_here`` asks it about the
running release.
"""

from __future__ import annotations

import dataclasses


__all__ = ["ALL_RELEASES", "ReleaseRange", "release_key", "since", "until"]


def release_key(release: str) -> tuple[int, ...]:
    """``"2.14.1"`` (or ``"2.14.1+cu130"``) -> ``(2, 14, 1)``, for ordering."""
    numbers = release.split("+")[0].split(".")[:3]
    if not numbers or not all(part.isdigit() for part in numbers):
        raise ValueError(f"not a torch release: {release!r}")
    return tuple(int(part) for part in numbers)


@dataclasses.dataclass(frozen=True)
class ReleaseRange:
    """The releases from ``since`` (the first that has it; None: every one)
    up to, not including, ``until`` (the first without it; None: still there)."""

    since: str | None = None
    until: str | None = None

    def __post_init__(self) -> None:
        for end in (self.since, self.until):
            if end is not None:
                release_key(end)  # a bad release is an error here, not later
        if (
            self.since is not None
            and self.until is not None
            and release_key(self.until) <= release_key(self.since)
        ):
            raise ValueError(f"empty release range: {self}")

    def __contains__(self, release: str) -> bool:
        key = release_key(release)
        if self.since is not None and key < release_key(self.since):
            return False
        return self.until is None or key < release_key(self.until)

    @property
    def everywhere(self) -> bool:
        return self.since is None and self.until is None

    def describe(self) -> str:
        """``all``, ``2.14.1 and later``, ``before 2.14.1``, or both ends."""
        if self.everywhere:
            return "all"
        if self.until is None:
            return f"{self.since} and later"
        if self.since is None:
            return f"before {self.until}"
        return f"{self.since} and later, before {self.until}"

    def to_json(self) -> dict[str, str]:
        """``{"since": ..., "until": ...}``, the ends that are set."""
        ends = {"since": self.since, "until": self.until}
        return {name: end for name, end in ends.items() if end is not None}

    def of(self, releases: tuple[str, ...] | list[str]) -> list[str]:
        """The members of ``releases`` in this range, in their order."""
        return [release for release in releases if release in self]


ALL_RELEASES = ReleaseRange()


def since(release: str) -> ReleaseRange:
    """A rule or option upstream added in ``release`` and still has."""
    return ReleaseRange(since=release)


def until(release: str) -> ReleaseRange:
    """A rule or option upstream removed in ``release``."""
    return ReleaseRange(until=release)
