"""Every config option a torch release added, classified for fusion_only.

``config.fusion_only`` holds off every optimization that is not fusion
(``fusion_ablation.FUSION_ONLY``).  A new torch release brings new Inductor
and functorch config options; each must be looked at, or fusion_only would
silently measure a new optimization along with fusion.  :data:`ADDED` lists,
per release, the options it has and the supported release before it has not:
:data:`ADDED_IN_2_14_1` (since 2.11.0) and :data:`ADDED_IN_2_15_0` (since
2.14.1).  The names of each earlier release's options are in
``test/inductor/fusion_ablation_options_<release>.txt``; a test checks that
every option the running release added is here.  Each is one of:

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
    "ADDED_IN_2_14_1",
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
_DIST_OVERLAP = "distributed: a parameter of overlap scheduling (enable_overlap_scheduling, off by default)"
_DIST_OFF = "distributed only; off by default"
_FSDP_BUCKET = "distributed: a parameter of FSDP pre-bucketing in overlap scheduling (off by default)"
_LOW_CONTENTION = (
    "distributed: a parameter of low-contention collectives (off by default)"
)
_PARTITIONED_SCATTER = "a parameter of partitioned scatter, a post-grad pass that pattern_matcher=False holds off"
_CUDAGRAPH = "a parameter of CUDA graphs, which triton.cudagraphs=False holds off"
_COMBO_LIMIT = (
    "a limit of combo kernels (horizontal fusion, left as configured; off by default)"
)
_REALIZE = "a realize rule at lowering: whether a value is stored or inlined into its consumers decides fusion"
_MAX_AUTOTUNE = "only under max_autotune, which fusion_only holds off"
_TESTING = "testing only"
_FUSION_MEMORY = "a scheduler fusion gate: a fusion that would raise the graph's peak memory by more than this is refused (off by default)"

A = AddedOption
ADDED_IN_2_14_1: tuple[AddedOption, ...] = (
    A(
        "_cache_config_factory_keys",
        _N,
        "cache-key plumbing (which options hold factories)",
        removed_in="2.15.0",
    ),
    A(
        "_conv_default_backends",
        _N,
        f"default convolution autotuning backends, {_MAX_AUTOTUNE}",
    ),
    A(
        "_partitioned_scatter_default",
        _N,
        f"default of partitioned_scatter_enabled (on for ROCm), {_PARTITIONED_SCATTER}",
    ),
    A(
        "_realize_acc_reads_threshold_default",
        _F,
        f"default of realize_acc_reads_threshold, {_REALIZE}",
    ),
    A(
        "_realize_opcount_threshold_default",
        _F,
        f"default of realize_opcount_threshold, {_REALIZE}",
    ),
    A(
        "align_random_eager",
        _N,
        "numerics (random ops as eager draws them); off by default",
    ),
    A(
        "aot_inductor.autotune_per_kernel_alloc",
        _N,
        "AOTInductor: memory use while autotuning; off by default",
    ),
    A(
        "aot_inductor.enable_frame_pointer",
        _N,
        "AOTInductor: frame pointers for profilers (a debugging aid)",
    ),
    A(
        "aot_inductor.enable_line_tables",
        _N,
        "AOTInductor: line tables for profilers (a debugging aid)",
    ),
    A("aten_distributed_optimizations.allow_comms_decompositions", _N, _DIST_OFF),
    A("aten_distributed_optimizations.bucket_mode", _N, _DIST_OVERLAP),
    A("aten_distributed_optimizations.bucket_only_internode_comms", _N, _DIST_OVERLAP),
    A("aten_distributed_optimizations.compute_estimator", _N, _DIST_OVERLAP),
    A(
        "aten_distributed_optimizations.enable_low_contention_collectives",
        _N,
        _DIST_OFF,
    ),
    A("aten_distributed_optimizations.enable_simple_overlap", _H),
    A(
        "aten_distributed_optimizations.low_contention_all_gather_ce_multicast",
        _N,
        _DIST_OFF,
    ),
    A(
        "aten_distributed_optimizations.low_contention_min_bytes_per_rank",
        _N,
        _LOW_CONTENTION,
    ),
    A(
        "aten_distributed_optimizations.low_contention_skip_overlap_check",
        _N,
        _LOW_CONTENTION,
    ),
    A(
        "aten_distributed_optimizations.overlap_scheduling_autofix_cycles",
        _N,
        "distributed: an error workaround of overlap scheduling (off by default)",
    ),
    A(
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives",
        _N,
        _DIST_OVERLAP,
    ),
    A(
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_bucket_cap_mb",
        _N,
        _FSDP_BUCKET,
    ),
    A(
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_max_bucket_cap_mb",
        _N,
        _FSDP_BUCKET,
    ),
    A(
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_min_bucket_cap_mb",
        _N,
        _FSDP_BUCKET,
    ),
    A(
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_saturation_calibration_multiplier",
        _N,
        _FSDP_BUCKET,
    ),
    A(
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_verbose",
        _N,
        "distributed: logging",
    ),
    A(
        "aten_distributed_optimizations.profile_guided_estimations_profile_path",
        _N,
        _DIST_OVERLAP,
    ),
    A(
        "aten_distributed_optimizations.spmd_check",
        _N,
        "distributed: a check across ranks (off by default)",
    ),
    A(
        "aten_distributed_optimizations.spmd_mismatch",
        _N,
        "distributed: what that check does on a mismatch",
    ),
    A(
        "autoheuristic_collect.mixed_mm",
        _N,
        "collects autoheuristic training data; off by default",
        removed_in="2.15.0",
    ),
    A(
        "autoheuristic_collect.pad_mm",
        _N,
        "collects autoheuristic training data; off by default",
    ),
    A(
        "autoheuristic_use.mixed_mm",
        _N,
        f"a learned pick among GEMM template configs, {_MAX_AUTOTUNE} (2.11.0's autoheuristic_use='mixed_mm' did the same)",
        removed_in="2.15.0",
    ),
    A(
        "autoheuristic_use.pad_mm",
        _N,
        "a learned choice inside pad_mm, which shape_padding=False and pattern_matcher=False hold off",
    ),
    A(
        "autotune_cudagraph_benchmarking",
        _N,
        "how autotuning measures (CUDA graph replay); autotuning is held off; off by default",
    ),
    A("batch_invariant", _N, "numerics mode (batch-invariant kernels); off by default"),
    A(
        "bucket_all_gathers_bucket_mode",
        _N,
        "distributed: a parameter of bucket_all_gathers_fx (off by default)",
    ),
    A(
        "bucket_reduce_scatters_bucket_mode",
        _N,
        "distributed: a parameter of bucket_reduce_scatters_fx (off by default)",
    ),
    A(
        "cache_sdpa_constraint",
        _N,
        "off by default: one layout copy of a tensor that feeds several attention (SDPA) inputs",
    ),
    A(
        "combo_kernel_autotune_grouping",
        _N,
        "how combo kernels' launch configs are autotuned; only with combo_kernels (off by default)",
    ),
    A(
        "combo_kernel_compile_time_autotune",
        _N,
        "autotuning of combo sub-kernels' block sizes; off by default",
    ),
    A(
        "combo_kernel_max_distance",
        _F,
        f"{_COMBO_LIMIT}; 2.15.0 made it the scan window of memory-gated grouping and its default 64 (was -1, no limit)",
    ),
    A("combo_kernel_max_num_nodes", _F, _COMBO_LIMIT),
    A("combo_kernel_peak_memory_increase_gb", _F, _COMBO_LIMIT),
    A("combo_kernel_peak_memory_pct_threshold", _F, _COMBO_LIMIT),
    A("compile_worker_wait_timeout", _N, "compile workers: a timeout (tooling)"),
    A(
        "compile_worker_watchdog_interval_seconds",
        _N,
        "compile workers: a watchdog (tooling)",
    ),
    A("cpp.enable_kernel_context_guard", _N, "profiling metadata; off by default"),
    A(
        "cpp.march",
        _N,
        "C++ compiler target flag of the C++ wrapper, unset by default (platform)",
    ),
    A("cpp.use_two_step_variance_threshold", _H),
    A(
        "cudagraph_policy",
        _N,
        "a user-supplied CUDA-graph policy, none by default: the user's own choice, like user passes",
    ),
    A("decompose_shard_dim_alltoall", _N, _DIST_OFF),
    A("dedup_reduce_scatters", _N, _DIST_OFF),
    A("delay_realize_cheap_outputs", _F, _REALIZE),
    A(
        "do_not_emit_runtime_assertions",
        _N,
        "off by default: drops runtime assertions (checks, not computation)",
    ),
    A(
        "eager_numerics.use_pytorch_libdevice",
        _N,
        "numerics (eager's libdevice); off by default",
    ),
    A(
        "emulate_precision_casts_on_saved_tensors",
        _N,
        "numerics: a low-precision value saved for backward is rounded as eager rounds it",
    ),
    A(
        "epilogue_fusion_user_defined_triton_kernel",
        _F,
        "epilogue fusion into user-defined Triton kernels",
    ),
    A(
        "epilogue_fusion_with_atomic_add",
        _F,
        "atomic-add scatter epilogues fused into templates",
    ),
    A("force_disable_cudagraph_TESTING_ONLY", _N, _TESTING),
    A(
        "functorch.activation_offload_cpu_gpu_bw",
        _N,
        "a parameter of activation offloading (off by default)",
    ),
    A("functorch.enable_complex_wrapper", _N, "complex-tensor support; off by default"),
    A(
        "functorch.unsafe_treat_script_objects_as_zero_size",
        _N,
        "a partitioner escape hatch for ScriptObjects; off by default",
    ),
    A("incremental_autotune", _N, "autotuning spread over real runs; off by default"),
    A(
        "keep_addmm_fused_for_half_dtypes",
        _N,
        "a numerics guard on a post-grad pattern (addmm unfusing), which pattern_matcher=False holds off anyway",
    ),
    A(
        "keep_static_cubin_raw",
        _N,
        "caching (cubins kept in cache entries); off by default",
    ),
    A(
        "loop_reindexing_after_fusion",
        _F,
        "loops reindexed so that nodes of different loop orders fuse, like loop_ordering_after_fusion",
    ),
    A(
        "max_autotune_conv_bwd_input_backends",
        _N,
        f"convolution autotuning backends, {_MAX_AUTOTUNE}",
    ),
    A(
        "max_autotune_conv_bwd_weight_backends",
        _N,
        f"convolution autotuning backends, {_MAX_AUTOTUNE}",
    ),
    A(
        "max_complex_pointwise_cat_inputs",
        _F,
        "cat lowered as a pointwise op its inputs are inlined into (fusion at lowering), up to this many inputs",
    ),
    A(
        "min_overlap_ratio",
        _F,
        "a scheduler fusion score: shared reads whose indices do not overlap",
    ),
    A("mtia.disable_welford_reduction", _N, "platform (MTIA); off by default"),
    A(
        "numerics",
        _N,
        "numerics mode ('strict': eager's summation order); Inductor's own by default",
    ),
    A(
        "nvgemm_supplement_configs",
        _N,
        f"NVGEMM autotuning configs, {_MAX_AUTOTUNE}; off by default",
    ),
    A(
        "nvgemm_swap_ab",
        _N,
        f"NVGEMM autotuning choices, {_MAX_AUTOTUNE}; off by default",
    ),
    A("partitioned_scatter_force", _N, f"{_PARTITIONED_SCATTER}; off by default"),
    A("partitioned_scatter_min_contention_ratio", _N, _PARTITIONED_SCATTER),
    A("partitioned_scatter_min_index_size", _N, _PARTITIONED_SCATTER),
    A("partitioned_scatter_non_model_floor_bytes", _N, _PARTITIONED_SCATTER),
    A(
        "pre_grad_pass_timing",
        _N,
        "caching: whether pre-grad passes run before or after the cache lookup",
    ),
    A("realize_cpu_acc_reads_threshold", _F, f"on the CPU, {_REALIZE}"),
    A("realize_cpu_opcount_threshold", _F, f"on the CPU, {_REALIZE}"),
    A("realize_opusers_threshold", _F, f"a value with many users, {_REALIZE}"),
    A(
        "reorder_for_locality_in_training",
        _N,
        "off by default, and runs only under reorder_for_locality, which fusion_only holds off",
    ),
    A("rocm.origami", _N, f"platform (ROCm): GEMM config selection, {_MAX_AUTOTUNE}"),
    A("rocm.origami_topk", _N, "platform (ROCm): a parameter of rocm.origami"),
    A(
        "strict_output_strides",
        _N,
        "off by default: view outputs with eager's exact strides (semantics; adds copies)",
    ),
    A(
        "strict_signed_zero",
        _N,
        "numerics (signed-zero ties in reductions); off by default",
    ),
    A("test_configs.force_custom_op_decomposition", _N, _TESTING),
    A("test_configs.force_no_impl_grouping", _N, _TESTING),
    A("test_configs.max_flex_configs", _N, _TESTING),
    A("trace.graph_diagram_format", _N, "debug output format"),
    A("trace.orig_fx_graph_diagram_format", _N, "debug output format"),
    A("trace.provenance_tracking_max_events", _N, "debug tracing: a limit"),
    A("trace.provenance_tracking_to_timeline", _N, "debug tracing; off by default"),
    A("triton.cudagraph_min_partition_size", _N, _CUDAGRAPH),
    A("triton.cudagraph_partition_memory_budget", _N, _CUDAGRAPH),
    A("triton.cudagraph_trees_generation_cloning", _N, f"{_CUDAGRAPH}; off by default"),
    A(
        "triton.decompose_sort_ops",
        _N,
        "off by default: sort, mode and median lowered to Triton instead of ATen",
    ),
    A(
        "triton.dynamic_disable_pipelining",
        _N,
        "robustness: a kernel config out of resources is recompiled without pipelining instead of failing",
    ),
    A(
        "triton.emit_pointer_range_32",
        _N,
        "platform (AMD): a pointer-range hint to the Triton compiler, how one kernel is written (like divisible_by_16)",
    ),
    A(
        "triton.enable_host_side_tma",
        _N,
        "where TMA descriptors are built; off by default",
    ),
    A(
        "triton.enable_template_autows",
        _N,
        f"Blackwell GEMM template search space, {_MAX_AUTOTUNE}; off by default",
    ),
    A(
        "triton.enable_tma_load_for_template_epilogue",
        _N,
        f"TMA loads in template epilogues (templates: {_MAX_AUTOTUNE}); off by default",
    ),
    A(
        "triton.mix_order_reduction_max_reads",
        _F,
        "a limit of mix-order reduction fusion",
    ),
    A(
        "triton.nested_reduction",
        _F,
        "dependent cross-axis reductions fused into one kernel (a scheduler fusion: FusedNestedReductions); off by default, on by default from 2.15.0, which adds staged reductions and their epilogues: fusion_only keeps it on there",
    ),
    A(
        "triton.tlx_mode",
        _N,
        f"platform (fbtriton): TLX templates, {_MAX_AUTOTUNE}; off by default",
    ),
    A(
        "triton.use_two_step_variance_min_numel",
        _N,
        "a parameter of triton.use_two_step_variance_threshold, which fusion_only holds",
    ),
    A("triton.use_two_step_variance_threshold", _H),
    A(
        "use_fast_triton_launcher",
        _N,
        "runtime plumbing: the same kernels and launches through faster host code, like use_static_cuda_launcher, which fusion_only leaves on",
    ),
    A(
        "use_launch_metadata_schema",
        _N,
        "runtime plumbing: how compiled kernels' metadata is read",
    ),
    A("use_torch_profiler_benchmarker", _N, "how autotuning measures; off by default"),
    A("xpu.oneapi_root", _N, "platform (XPU): a toolchain path"),
)

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
    ReleaseAdditions("2.14.1", "2.11.0", ADDED_IN_2_14_1),
    ReleaseAdditions("2.15.0", "2.14.1", ADDED_IN_2_15_0),
)
