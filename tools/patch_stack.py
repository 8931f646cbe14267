"""One patch stack per feature: ``patches/<release>/<feature>/<path>.patch``.

The fork reaches upstream as one pull-request stack per feature (the fusion
remarks first, then the ablation switches, the one-pass reductions and the
launch-bound combo kernels; :data:`fork_features.FEATURES` gives the order and
what each feature needs).  The patch series keeps that shape on disk: a
feature's patch of an upstream file applies to the file as the features
before it left it.  Applying the layers in feature order gives the fork's
file; the first ``k`` layers give the file of a tree with only those features,
which is what a stack is verified against when it is exported.

Editing keeps the shape.  The overlay holds the fork's file (every layer
applied); after an edit, :func:`relayer` writes the edit into the layer of the
feature it belongs to: it merges the edit into the file that feature's layer
leaves (an edit of lines a later layer changes is an error naming it), and
merges each later layer on top again, so that every layer stays in canonical
form.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from pathlib import Path

from fork_features import FEATURES
from patchset import apply_patch, make_patch, PatchError


# Every feature a patch directory may be named after, in stack order.
STACK_ORDER: tuple[str, ...] = tuple(feature.name for feature in FEATURES)


@dataclasses.dataclass(frozen=True)
class Layer:
    """One feature's patch of one upstream file."""

    feature: str
    path: Path


def layers(patches_dir: Path) -> dict[str, list[Layer]]:
    """Upstream path -> its layers in stack order, for every
    ``<patches_dir>/<feature>/**/*.patch``.  A directory that names no
    feature is an error (a patch there would be applied in no known order)."""
    out: dict[str, list[Layer]] = {}
    if not patches_dir.is_dir():
        return out
    for child in sorted(patches_dir.iterdir()):
        if child.is_dir() and child.name not in STACK_ORDER:
            raise PatchError(
                f"{child}: a patch directory must be named after a feature "
                f"({', '.join(STACK_ORDER)})"
            )
    for feature in STACK_ORDER:
        base = patches_dir / feature
        for patch in sorted(base.rglob("*.patch")):
            rel = patch.relative_to(base).as_posix()[: -len(".patch")]
            out.setdefault(rel, []).append(Layer(feature, patch))
    return out


def layer_path(patches_dir: Path, feature: str, rel: str) -> Path:
    return patches_dir / feature / (rel + ".patch")


def apply_layers(
    pristine: str, file_layers: list[Layer], target: str, repo: Path
) -> tuple[list[str], dict[str, dict[int, int]]]:
    """The file after each layer (``states[0]`` is upstream's) and the hunks
    each layer applied at an offset, by the layer's repository path."""
    states = [pristine]
    offsets: dict[str, dict[int, int]] = {}
    for layer in file_layers:
        name = layer.path.relative_to(repo).as_posix()
        applied = apply_patch(
            states[-1], layer.path.read_text(encoding="utf-8"), name, target
        )
        states.append(applied.text)
        if applied.offsets:
            offsets[name] = applied.offsets
    return states, offsets


def merge3(current: str, base: str, other: str) -> str | None:
    """``current`` with the change from ``base`` to ``other`` (``git
    merge-file``); None where the two changes overlap."""
    with tempfile.TemporaryDirectory(prefix="patch-stack-") as tmp:
        paths = []
        for name, text in (("current", current), ("base", base), ("other", other)):
            path = Path(tmp) / name
            path.write_bytes(text.encode("utf-8"))
            paths.append(str(path))
        result = subprocess.run(
            ["git", "merge-file", "-p", *paths], capture_output=True, check=False
        )
    if result.returncode != 0:
        return None
    return result.stdout.decode("utf-8")


def relayer(
    rel: str,
    pristine: str,
    file_layers: list[tuple[str, str]],
    edited: str,
    feature: str,
) -> list[tuple[str, str]]:
    """The layers (feature, patch text; '' for none) that turn ``pristine``
    into ``edited``, the change since the current layers going to ``feature``.

    ``file_layers``: the current (feature, patch text) of ``rel`` in stack
    order.  The edit (the fork's file before it to ``edited``) is merged into
    the file ``feature``'s layer leaves, and each later layer is merged on top
    of that in turn, so that a later layer keeps its own change whatever
    context it had.  Raises :class:`PatchError` when the edit changes lines
    that a later feature's layer changes (the edit belongs to that feature)."""
    if feature not in STACK_ORDER:
        raise PatchError(
            f"{feature!r} is not a feature; choose one of: {', '.join(STACK_ORDER)}"
        )
    rank = STACK_ORDER.index(feature)
    names = [f for f, _ in file_layers]
    states = [pristine]
    for f, text in file_layers:
        states.append(apply_patch(states[-1], text, f"{f}/{rel}.patch", rel).text)
    earlier = sum(1 for f in names if STACK_ORDER.index(f) < rank)
    # the file the feature's layer leaves (the earlier layers' if it has none)
    position = earlier + (feature in names)
    own = merge3(states[position], states[-1], edited)
    if own is None:
        later = [f for f in names if STACK_ORDER.index(f) > rank]
        raise PatchError(
            f"{rel}: the edit changes lines that the {', '.join(later)} layer "
            f"changes; refresh it with --feature {later[-1]}"
        )
    new_states = [*states[: earlier + 1], own]
    for j in range(position, len(file_layers)):
        merged = merge3(new_states[-1], states[j], states[j + 1])
        if merged is None:
            raise PatchError(
                f"{rel}: the {names[j]} layer no longer applies on the edit; "
                f"refresh it with --feature {names[j]}"
            )
        new_states.append(merged)
    if new_states[-1] != edited:
        raise PatchError(
            f"{rel}: the layers cannot reproduce the edit under --feature {feature}; "
            "refresh it with the feature of the last layer it touches"
        )
    ordered = [f for f in names if STACK_ORDER.index(f) < rank]
    ordered.append(feature)
    ordered += [f for f in names if STACK_ORDER.index(f) > rank]
    return [
        (f, make_patch(rel, before, after))
        for f, before, after in zip(ordered, new_states, new_states[1:])
    ]
