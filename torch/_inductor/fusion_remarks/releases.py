"""Which torch releases have a reason code, a rule or an option: a range.

The remarks tag the reason codes, held options and rule programs that exist
in some releases only.  A tag that lists releases (``("2.14.1",)``) silently
switches its entry off on the next release, although upstream rarely removes
a rule; a range says what is known instead: the first release that has the
rule (``since``) and, once upstream removes it, the first that no longer has
it (``until``).  A new release inherits every entry whose range is open.

Plain data: the only import is ``torch.version``, a module of constants, so
that the bottom layer (the reason taxonomy) can use it.  :func:`applies_here`
and :func:`release_at_least` ask it about the running release; code that must
behave differently on two releases asks them rather than compare version
strings of its own.
"""

from __future__ import annotations

import dataclasses

from torch.version import __version__ as _torch_version


__all__ = [
    "ALL_RELEASES",
    "DESCRIBED_RELEASES",
    "RELEASE",
    "ReleaseRange",
    "applies_here",
    "release_at_least",
    "release_key",
    "since",
    "until",
]

# The releases whose rules and options the tags were checked against, oldest
# first (each tag must hold one of them).
DESCRIBED_RELEASES: tuple[str, ...] = ("2.14.1", "2.15.0")


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


# The release this process runs on (``"2.15.0+cu132"`` -> ``"2.15.0"``).
RELEASE: str = str(_torch_version).split("+")[0]


def release_at_least(release: str) -> bool:
    """True on ``release`` and later ones."""
    return release_key(RELEASE) >= release_key(release)


def applies_here(releases: ReleaseRange) -> bool:
    """Whether an entry tagged with ``releases`` applies to the running release."""
    return RELEASE in releases
