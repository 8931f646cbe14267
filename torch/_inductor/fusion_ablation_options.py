"""Every config option a torch release added, classified for fusion_only.

``config.fusion_only`` holds off every optimization that is not fusion
(``fusion_ablation.FUSION_ONLY``).  A new torch release brings new Inductor
and functorch config options; each must be looked at, or fusion_only would
silently measure a new optimization along with fusion.  :data:`ADDED` lists,
per release, the options it has and the supported release before it has not:
:data:`ADDED_IN_2_15_0` (since 2.14.1, the oldest supported release, whose
options are the baseline).  The names of each earlier supported release's
options are in ``test/inductor/fusion_ablation_options_<release>.txt``; a test
checks that every option the running release added is here.  Each is one of:

* ``held``: a non-fusion optimization that is on by default, or on under the
  max-autotune / reduce-overhead modes; it has an entry in ``FUSION_ONLY``
  (with ``releases=since(<the release>)``), and that entry's ``why`` is its
  reason;
* ``fusion``: it decides fusion (a realize rule at lowering, a scheduler
  fusion rule or limit, a kind of fusion), and fusion_only leaves it as
  configured, like the fusion of ``KEPT``;
* ``not an optimization``: nothing for fusion_only to hold: debugging,
  testing, tracing, numerics, caching or runtime plumbing, distributed-only,
  platform-specific, off by default, or a parameter of an optimization
  fusion_only already holds off.

An option a later release removed says so (``removed_in``); a held one's
``FUSION_ONLY`` entry then ends there too (``until(<that release>)``).
The docs render these tables (``tools/update_fusion_docs.py``).
"""

from __future__ import annotations

import dataclasses
import enum

from .fusion_ablation import FUSION_ONLY, HeldOption


__all__ = [
    "ADDED",
    "ADDED_IN_2_15_0",
    "AddedOption",
    "ReleaseAdditions",
    "Verdict",
    "held_entry",
]


class Verdict(str, enum.Enum):
    HELD = "held"
    FUSION = "fusion"
    NOT_OPTIMIZATION = "not an optimization"


@dataclasses.dataclass(frozen=True)
class AddedOption:
    """One option a release added, and what fusion_only does with it."""

    option: str  # as in FUSION_ONLY: "triton.nested_reduction", "functorch.x"
    verdict: Verdict
    reason: str = ""  # empty for a held option: its FUSION_ONLY entry says why
    removed_in: str | None = None  # the first release without it, if any

    def why(self) -> str:
        if self.verdict is Verdict.HELD:
            h = held_entry(self.option)
            why = f"{h.optimization}: {h.why}"
        else:
            why = self.reason
        if self.removed_in is not None:
            why += f" (removed in {self.removed_in})"
        return why


@dataclasses.dataclass(frozen=True)
class ReleaseAdditions:
    """The options ``release`` has and ``previous``, the supported release
    before it, has not (``test/inductor/fusion_ablation_options_<previous>.txt``
    lists the names of ``previous``'s options)."""

    release: str
    previous: str
    options: tuple[AddedOption, ...]


def held_entry(option: str) -> HeldOption:
    """The FUSION_ONLY entry of ``option`` (KeyError if it has none)."""
    for h in FUSION_ONLY:
        if h.option == option:
            return h
    raise KeyError(option)


_H, _F, _N = Verdict.HELD, Verdict.FUSION, Verdict.NOT_OPTIMIZATION
_CUDAGRAPH = "a parameter of CUDA graphs, which triton.cudagraphs=False holds off"
_MAX_AUTOTUNE = "only under max_autotune, which fusion_only holds off"
_FUSION_MEMORY = "a scheduler fusion gate: a fusion that would raise the graph's peak memory by more than this is refused (off by default)"

A = AddedOption
ADDED_IN_2_15_0: tuple[AddedOption, ...] = (
    A(
        "alignment_asserts_inputs",
        _N,
        "off by default: graph inputs assumed aligned are asserted, not realigned by a copy (a check)",
    ),
    A(
        "aot_inductor.autotune_offload_constants_min_device_fraction",
        _N,
        "AOTInductor: constants offloaded to disk while autotuning (memory, not speed); at its default 1.0 it never fires",
    ),
    A(
        "aot_inductor.check_upperbound",
        _N,
        "AOTInductor: run-time checks of dynamic shapes' upper bounds (checks, not computation)",
    ),
    A(
        "autotune_cudagraph_benchmarking_iters",
        _N,
        "how autotuning measures (calls per CUDA graph replay); autotuning is held off",
    ),
    A("benchmark_template_fusion", _H),
    A(
        "bmm_shared_a",
        _N,
        f"an extra bmm template choice, {_MAX_AUTOTUNE}; off by default",
    ),
    A("compile_worker_mode", _N, "compile workers: threads or processes (tooling)"),
    A(
        "cuda.autotune_tunableop_dynamic_dims_wildcard",
        _N,
        "TunableOp autotuning records for dynamic shapes; autotuning is held off; off by default",
    ),
    A(
        "flydsl_enable_autotuning",
        _N,
        f"platform (ROCm): FlyDSL GEMM template configs, {_MAX_AUTOTUNE}; off by default",
    ),
    A(
        "functorch._sync_cache_decision_cross_ranks",
        _N,
        "distributed: AOTAutograd cache hits agreed across ranks (caching); off by default",
    ),
    A(
        "functorch.activation_memory_budget_require_full_coverage",
        _N,
        "a check that a regional activation memory budget covers the whole graph (raises, computes nothing)",
    ),
    A(
        "fusion_memory_timeline_peak_memory_increase_gb",
        _F,
        _FUSION_MEMORY,
    ),
    A(
        "fusion_memory_timeline_peak_memory_pct_threshold",
        _F,
        _FUSION_MEMORY,
    ),
    A(
        "max_template_fusion_benchmarked_choices",
        _N,
        "a parameter of benchmark_template_fusion, which fusion_only holds (2.15.0's name of max_epilogue_benchmarked_choices, now a deprecated alias of it)",
    ),
    A(
        "nvgemm_pdl",
        _N,
        f"programmatic dependent launch of NVGEMM kernels and the Triton kernels right after them; NVGEMM templates run {_MAX_AUTOTUNE}",
    ),
    A(
        "triton.cudagraph_dynamic_shape_rerecord_limit",
        _N,
        f"{_CUDAGRAPH}; off by default",
    ),
    A(
        "triton.cudagraph_initial_mempool_allocation_gb",
        _N,
        f"{_CUDAGRAPH}; off by default",
    ),
    A("triton.cudagraph_managed_input_rerecord_action", _N, _CUDAGRAPH),
    A("triton.cudagraph_managed_input_rerecord_limit", _N, _CUDAGRAPH),
    A(
        "triton.enable_flex_tdm",
        _N,
        "platform (AMD gfx1250): FlexAttention's loads through TDM descriptors, how one template kernel is written (a kill switch, like triton.emit_pointer_range_32)",
    ),
    A("triton.scalar_accumulators", _H),
    A(
        "unsafe_skip_scalar_range_asserts",
        _N,
        "off by default: drops range assertions (checks, not computation)",
    ),
    A(
        "use_rand4x",
        _N,
        "off by default: Triton random numbers drawn four at a time (random ops)",
    ),
    A(
        "var_std_reduction_dedup",
        _N,
        "off by default: a post-grad pattern merging a var and a std of one input, which pattern_matcher=False holds off",
    ),
)
del A

ADDED: tuple[ReleaseAdditions, ...] = (
    ReleaseAdditions("2.15.0", "2.14.1", ADDED_IN_2_15_0),
)
