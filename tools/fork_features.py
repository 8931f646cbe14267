"""Which feature each part of the fork belongs to, and how big each feature is.

The fork reaches upstream as one pull-request stack per feature (the fusion
remarks, the ablation switches, the one-pass reductions, the launch-bound
combo kernels); the viewer, the fusible check and the FX fusion arm are
packages of their own under ``packages/``.  :data:`FEATURES` is the one list
of the features, in stack order (``tools/patch_stack.py`` applies the patch
directories ``patches/<release>/<feature>/`` in this order and the export
writes the stacks in it), with the files each owns (by path) and the names its
code uses (markers: a layer of an earlier feature must use none of a later
one's).

    python tools/fork_features.py [--release 2.15.0] [--json OUT]

prints each feature's size (new files, tests, hunks and changed lines per
upstream file).  ``tools/test/test_fork_features.py`` checks that every new
file has exactly one owner, every hunk lies in a feature's layer, and no layer
names anything of a later feature.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import re
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Feature:
    name: str
    summary: str
    files: tuple[str, ...]  # fnmatch patterns, relative to the repository
    markers: tuple[str, ...]  # regexes: a changed line using one belongs here
    needs: tuple[str, ...] = ()


# In the order the stacks would apply.  A file matches the first feature whose
# pattern it matches; a hunk belongs to every feature one of whose markers its
# changed lines use.
FEATURES: tuple[Feature, ...] = (
    Feature(
        "plumbing",
        "the fork's own machinery: its identity and the version patch; never exported",
        files=(
            "torch/_fork.py",
            "test/inductor/test_fork_overlay.py",
        ),
        markers=(r"\b_fork\b", r"\bfork_identity\b", r"__fork__"),
    ),
    Feature(
        "fusible_check",
        "fusion_check: force one refused fusion and measure it (in the viewer "
        "package, forcing through an InductorChoices subclass)",
        files=(
            "packages/fusion_viewer/fusion_viewer/check/*",
            "packages/fusion_viewer/test/test_fusion_check.py",
        ),
        markers=(),
        needs=("remarks",),
    ),
    Feature(
        "viewer",
        "the fusion viewer: pages, pictures, diffs and the study's index from the "
        "report's JSON, a package outside torch/",
        files=("packages/fusion_viewer/*",),
        markers=(),
        needs=("remarks",),
    ),
    Feature(
        "remarks",
        "fusion remarks: a reason code for every kernel boundary",
        files=(
            "torch/_inductor/fusion_remarks/*",
            "torch/_inductor/fusion_report.py",
            "torch/_inductor/fusion_report_schema.json",
            # the one parser of the fork's environment switches (the cost
            # model's among them); each stack keeps the switches it adds
            "torch/_inductor/fusion_switches.py",
            "test/inductor/test_fusion_switches.py",
            "test/inductor/test_fusion_remarks*.py",
            "test/inductor/test_fusion_reason_rules.py",
            "test/inductor/fusion_rule_programs.py",
            "test/inductor/fusion_code_crossings.py",
            "test/inductor/test_fusion_log.py",
            "test/inductor/test_fusion_report_schema.py",
            "test/inductor/test_cuda_combined_fusion_rules.py",
            "test/inductor/test_fusion_costs.py",
            "docs/source/torch.compiler_fusion_remarks.md",
            "docs/source/torch.compiler_fusion_reason_tests.md",
        ),
        markers=(
            r"\bfusion_hooks\b",
            r"\bFusionReason\b",
            r"\bfusion_remarks\b",
            r"\bfusion_log\b",
            r"\bcode=",
            r"\breplay_cached_report\b",
            r"Inductor fusion decisions",  # the fusion log's registration
        ),
    ),
    Feature(
        "ablation",
        "fusion_only / no_fusion: switch fusion off, or everything but fusion",
        files=(
            "torch/_inductor/fusion_ablation.py",
            "torch/_inductor/fusion_ablation_options.py",
            "test/inductor/test_fusion_ablation.py",
            "test/inductor/fusion_ablation_options_*.txt",
            "docs/source/torch.compiler_fusion_ablation.md",
        ),
        markers=(
            r"\bfusion_ablation\b",
            r"\bno_fusion\b",
            r"\bfusion_only\b",
        ),
        needs=("remarks",),
    ),
    Feature(
        "one_pass",
        "one-pass reductions: long rows read once",
        files=(
            "torch/_inductor/one_pass_reduction*.py",
            "test/inductor/test_one_pass_reductions*.py",
            "test/inductor/one_pass_reductions_compile.py",
            "docs/source/torch.compiler_one_pass_reductions.md",
        ),
        markers=(r"\bone_pass_reduction", r"\bone_pass\b"),
        needs=("remarks",),
    ),
    Feature(
        "launch_bound_combo",
        "launch-bound combo kernels: small independent kernels in one launch",
        files=(
            "torch/_inductor/launch_bound_combo.py",
            "test/inductor/test_launch_bound_combo.py",
            "docs/source/torch.compiler_launch_bound_combo.md",
        ),
        markers=(r"\blaunch_bound_combo\b",),
        needs=("remarks",),
    ),
    Feature(
        "fx_fusion",
        "the FX fusion arm, a Dynamo backend package of its own (packages/fx_fusion)",
        files=("packages/fx_fusion/*",),
        markers=(r"\bfx_fusion\b",),
        needs=("remarks",),
    ),
)

NEW_FILE_ROOTS = ("torch", "test/inductor", "packages")
_IGNORED = ("__pycache__",)


def owner_of(rel: str) -> str | None:
    for feature in FEATURES:
        if any(fnmatch.fnmatch(rel, pattern) for pattern in feature.files):
            return feature.name
    return None


def new_files(repo: Path = REPO) -> list[str]:
    out = []
    for root in NEW_FILE_ROOTS:
        for path in sorted((repo / root).rglob("*")):
            if path.is_file() and not any(
                part in _IGNORED or part.endswith(".egg-info") for part in path.parts
            ):
                out.append(path.relative_to(repo).as_posix())
    return out


@dataclasses.dataclass
class PatchHunk:
    upstream: str  # the upstream file the patch changes
    header: str
    changed: list[str]  # the added and removed lines, with their sign
    layer: str = ""  # the feature whose patch holds the hunk

    @property
    def size(self) -> int:
        return len(self.changed)

    def owners(self) -> list[str]:
        """The feature whose layer holds the hunk; for a hunk outside any
        layer, every feature one of whose markers a changed line uses."""
        if self.layer:
            return [self.layer]
        if self.upstream == "torch/version.py":
            return ["plumbing"]
        text = "\n".join(line[1:] for line in self.changed)
        return [
            f.name
            for f in FEATURES
            if any(re.search(marker, text) for marker in f.markers)
        ]


def patch_hunks(release: str, repo: Path = REPO) -> list[PatchHunk]:
    """Every hunk of the release's patches (``patches/<release>/<feature>/``);
    the directory a hunk's patch lies in is its feature (``layer``)."""
    base = repo / "patches" / release
    hunks: list[PatchHunk] = []
    for path in sorted(base.rglob("*.patch")):
        layer, _, upstream = path.relative_to(base).as_posix().partition("/")
        upstream = upstream[: -len(".patch")]
        current: PatchHunk | None = None
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("@@"):
                current = PatchHunk(upstream, line, [], layer)
                hunks.append(current)
            elif (
                current is not None
                and line[:1] in "+-"
                and not line.startswith(("+++", "---"))
            ):
                current.changed.append(line)
    return hunks


def _lines(rel: str, repo: Path) -> int:
    try:
        return len((repo / rel).read_text(encoding="utf-8").splitlines())
    except UnicodeDecodeError:
        return 0


def report(release: str, repo: Path = REPO) -> dict:
    features: dict[str, dict] = {
        f.name: {
            "summary": f.summary,
            "needs": list(f.needs),
            "files": {},
            "tests": {},
            "hunks": {},
        }
        for f in FEATURES
    }
    unowned_files = []
    for rel in new_files(repo):
        owner = owner_of(rel)
        if owner is None:
            unowned_files.append(rel)
            continue
        kind = "tests" if rel.startswith("test/") else "files"
        features[owner][kind][rel] = _lines(rel, repo)
    mixed, unowned_hunks = [], []
    for hunk in patch_hunks(release, repo):
        owners = hunk.owners()
        where = f"{hunk.upstream} {hunk.header}"
        if not owners:
            unowned_hunks.append(where)
            continue
        if len(owners) > 1:
            mixed.append({"hunk": where, "features": owners, "changed": hunk.size})
        for owner in owners:
            per_file = features[owner]["hunks"].setdefault(
                hunk.upstream, {"hunks": 0, "changed": 0}
            )
            per_file["hunks"] += 1
            per_file["changed"] += hunk.size
    return {
        "release": release,
        "features": features,
        "mixed_hunks": mixed,
        "unowned_files": unowned_files,
        "unowned_hunks": unowned_hunks,
    }


def render(data: dict) -> str:
    rows = [
        f"torch {data['release']}: each feature's new files, tests and patch hunks",
        "",
        f"{'feature':20s} {'files':>5s} {'lines':>6s} {'tests':>5s} {'lines':>6s} "
        f"{'hunks':>5s} {'changed':>7s}  largest patch (changed lines)",
    ]
    for name, f in data["features"].items():
        hunks = f["hunks"]
        largest = max(hunks.items(), key=lambda kv: kv[1]["changed"], default=None)
        rows.append(
            f"{name:20s} {len(f['files']):5d} {sum(f['files'].values()):6d} "
            f"{len(f['tests']):5d} {sum(f['tests'].values()):6d} "
            f"{sum(h['hunks'] for h in hunks.values()):5d} "
            f"{sum(h['changed'] for h in hunks.values()):7d}  "
            + (f"{largest[0]} ({largest[1]['changed']})" if largest else "-")
        )
    rows.append("")
    rows.append(
        f"{len(data['mixed_hunks'])} hunks serve several features (the split cuts them):"
    )
    rows.extend(
        f"  {m['hunk']}: {', '.join(m['features'])} ({m['changed']} changed lines)"
        for m in data["mixed_hunks"]
    )
    for key, what in (("unowned_files", "files"), ("unowned_hunks", "hunks")):
        if data[key]:
            rows.append(f"{len(data[key])} {what} with no owner:")
            rows.extend(f"  {x}" for x in data[key])
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", default="2.15.0")
    parser.add_argument("--json", help="write the report as JSON here")
    args = parser.parse_args(argv)
    if not (REPO / "patches" / args.release).is_dir():
        print(f"error: no patch series for torch {args.release}", file=sys.stderr)
        return 2
    data = report(args.release)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    print(render(data))
    return 1 if data["unowned_files"] or data["unowned_hunks"] else 0


if __name__ == "__main__":
    sys.exit(main())
