"""The fusion-remark taxonomy: every reason code, its category and meaning, in one table.

Kinds, categories and stages of a remark (``DESIGN.md`` section 3) and the
:class:`Reason` codes with :data:`REASON_INFO`, from which the JSON Schema's
enum (``fusion_report_schema.json``) and the docs table
(``docs/source/torch.compiler_fusion_remarks.md``, ``tools/update_fusion_docs.py``)
are generated and tested.  The bottom layer of the package: it imports nothing
of Inductor but the plain release-range type (``releases.py``).
"""

from __future__ import annotations

import enum

from .releases import ReleaseRange, since


class Kind(str, enum.Enum):
    FUSED = "fused"
    MISSED = "missed"
    ANALYSIS = "analysis"


class Category(str, enum.Enum):
    """Why a boundary exists, in five classes a user can act on differently."""

    LEGALITY = "legality"  # fusing would be wrong or impossible
    HEURISTIC = "heuristic"  # legal, judged unprofitable
    BACKEND = "backend"  # this backend cannot generate it
    CONFIG = "config"  # a flag disabled it
    NOT_CONSIDERED = "not_considered"  # the pair was never proposed
    FUSED = "fused"  # not a boundary: the reason two ops share a kernel
    ANALYSIS = "analysis"  # not a boundary: what a pass did to the graph


class Stage(str, enum.Enum):
    DYNAMO = "dynamo"
    FX_PASS = "fx_pass"
    LOWERING = "lowering"
    SCHEDULER = "scheduler"
    CODEGEN = "codegen"
    CACHE = "cache"
    # The FX fusion arm (the fx_fusion package, packages/fx_fusion), not Inductor.
    FX_FUSION = "fx_fusion"
    # The optional launch-bound combo-kernel pass (launch_bound_combo.py).
    LAUNCH_BOUND_COMBO = "launch_bound_combo"
    # The optional one-pass reduction pass (one_pass_reductions.py).
    ONE_PASS_REDUCTION = "one_pass_reduction"


_L, _H, _B, _C, _N, _F, _A = (
    Category.LEGALITY,
    Category.HEURISTIC,
    Category.BACKEND,
    Category.CONFIG,
    Category.NOT_CONSIDERED,
    Category.FUSED,
    Category.ANALYSIS,
)


class Reason(str, enum.Enum):
    """The taxonomy: one stable snake_case code per rule that fuses or separates.

    Each member's value is its code; :data:`REASON_INFO` gives its category and
    a one-line meaning.  The docs table is generated from (and tested against)
    these two.
    """

    # Fused: why ops share a kernel.
    INLINED = "inlined"
    FUSED_VERTICAL = "fused_vertical"
    FUSED_HORIZONTAL = "fused_horizontal"
    FUSED_TEMPLATE_EPILOGUE = "fused_template_epilogue"
    FUSED_TEMPLATE_PROLOGUE = "fused_template_prologue"
    RECOMPUTED = "recomputed"
    # Lowering: why a value became a buffer of its own (stage lowering).
    REDUCTION_OUTPUT = "reduction_output"
    GRAPH_OUTPUT = "graph_output"
    OUTPUT_VIEW = "output_view"
    OUTPUT_STRIDE_CONSTRAINT = "output_stride_constraint"
    FIXED_LAYOUT_FOR_CONSUMER = "fixed_layout_for_consumer"
    MULTI_USER_EXTERN_CONSUMER = "multi_user_extern_consumer"
    MULTI_USER_WITH_OUTPUT = "multi_user_with_output"
    REUSE_CPU_HEAVY_OP = "reuse_cpu_heavy_op"
    REUSE_TOO_MANY_READS = "reuse_too_many_reads"
    REUSE_LARGE_INNER_FN = "reuse_large_inner_fn"
    REUSE_MANY_USERS = "reuse_many_users"
    REUSE_INLINE_ASM = "reuse_inline_asm"
    ACC_READS_EXCEEDED = "acc_reads_exceeded"
    ACC_LARGE_INNER_FN = "acc_large_inner_fn"
    ACC_READS_SIZE_EXCEEDED = "acc_reads_size_exceeded"
    POINTWISE_OPCOUNT_LIMIT = "pointwise_opcount_limit"
    REALIZE_TO_STRIDES = "realize_to_strides"
    EXTERN_INPUT = "extern_input"
    READERS_BEFORE_MUTATION = "readers_before_mutation"
    MUTATION = "mutation"
    CONCAT_KERNEL = "concat_kernel"
    LOWERING_MATERIALIZES = "lowering_materializes"
    EXTERN_KERNEL = "extern_kernel"
    FALLBACK_KERNEL = "fallback_kernel"
    TEMPLATE_KERNEL = "template_kernel"
    # Scheduler: structural gates.
    GROUPED_NODE = "grouped_node"
    EXTERN_OR_NOP = "extern_or_nop"
    WRONG_ORDER = "wrong_order"
    BUFFER_MARKED_NO_FUSE = "buffer_marked_no_fuse"
    DEVICE_MISMATCH = "device_mismatch"
    # Rules of torch 2.14.1's Scheduler.can_fuse (absent from 2.11.0; see
    # RELEASES below).
    STRICT_SUM_ORDER = "strict_sum_order"
    STREAM_MISMATCH = "stream_mismatch"
    MEMPOOL_MISMATCH = "mempool_mismatch"
    USER_KERNEL_EPILOGUE = "user_kernel_epilogue"
    MULTI_OUTPUT_TEMPLATE_EPILOGUE = "multi_output_template_epilogue"
    # Rules of torch 2.15.0's Scheduler.can_fuse: nested and staged
    # reductions (config.triton.nested_reduction), the backends' reduction
    # contracts and the memory-timeline peak rule.
    REDUCTION_CONTRACTS_INCOMPATIBLE = "reduction_contracts_incompatible"
    NESTED_REDUCTION_APPEND_FAILED = "nested_reduction_append_failed"
    NESTED_REDUCTION_PLACEMENT_MISMATCH = "nested_reduction_placement_mismatch"
    SUB_PARENT_EPILOGUE_PLANNING_FAILED = "sub_parent_epilogue_planning_failed"
    SUB_PARENT_EPILOGUE_PARTIAL = "sub_parent_epilogue_partial"
    SUB_PARENT_EPILOGUE_INVALID = "sub_parent_epilogue_invalid"
    STAGED_DEPENDENCY_UNPROVEN = "staged_dependency_unproven"
    STAGED_REDUCTION_PLAN_LOST = "staged_reduction_plan_lost"
    FUSION_RAISES_PEAK_MEMORY = "fusion_raises_peak_memory"
    # Scheduler: template prologue and epilogue rules.
    PROLOGUE_DISABLED = "prologue_disabled"
    PROLOGUE_NOT_POINTWISE = "prologue_not_pointwise"
    PROLOGUE_NOT_ACCEPTED = "prologue_not_accepted"
    PROLOGUE_INPUT_NOT_ALLOWED = "prologue_input_not_allowed"
    PROLOGUE_MUTATION = "prologue_mutation"
    PROLOGUE_MULTI_USE = "prologue_multi_use"
    PROLOGUE_INCREASES_READS = "prologue_increases_reads"
    PROLOGUE_PADDING = "prologue_padding"
    PROLOGUE_NEEDS_UPCAST = "prologue_needs_upcast"
    EPILOGUE_DISABLED = "epilogue_disabled"
    EPILOGUE_REDUCTION = "epilogue_reduction"
    EPILOGUE_MUTATION = "epilogue_mutation"
    # Scheduler: dependencies and cycles.
    DEP_MISMATCH = "dep_mismatch"
    INTERMEDIATE_NODE_BETWEEN = "intermediate_node_between"
    WOULD_CREATE_CYCLE = "would_create_cycle"
    # Scheduler: InductorChoices heuristics.
    NO_SHARED_DATA = "no_shared_data"
    INDEXING_MISMATCH = "indexing_mismatch"
    EXCEEDS_MAX_FUSION_SIZE = "exceeds_max_fusion_size"
    PEAK_MEMORY_INCREASE = "peak_memory_increase"
    TOO_MANY_IO_BUFFERS = "too_many_io_buffers"
    SCORE_BELOW_THRESHOLD = "score_below_threshold"
    NODES_TOO_FAR_APART = "nodes_too_far_apart"
    # Scheduler: backends.
    FOREACH_INCOMPATIBLE = "foreach_incompatible"
    FOREACH_CROSS_DEPENDENCY = "foreach_cross_dependency"
    REDUCTION_SHAPE_MISMATCH = "reduction_shape_mismatch"
    POINTWISE_NUMEL_MISMATCH = "pointwise_numel_mismatch"
    NATIVE_MATMUL_TILING = "native_matmul_tiling"
    PROLOGUE_NUMEL_MISMATCH = "prologue_numel_mismatch"
    TILING_MISMATCH = "tiling_mismatch"
    POINTWISE_INTO_REDUCTION_RANGES = "pointwise_into_reduction_ranges"
    REDUCTION_TILING_INVALID = "reduction_tiling_invalid"
    REDUCTION_EPILOGUE_NUMEL_MISMATCH = "reduction_epilogue_numel_mismatch"
    CPP_REDUCTION_PRODUCER = "cpp_reduction_producer"
    CPP_RANGES_INCOMPATIBLE = "cpp_ranges_incompatible"
    CPP_TEMPLATE_FUSION = "cpp_template_fusion"
    CPP_MAX_HORIZONTAL_SIZE = "cpp_max_horizontal_size"
    CUTLASS_EPILOGUE_UNSUPPORTED = "cutlass_epilogue_unsupported"
    # CUDACombinedScheduling's own template rules.
    TEMPLATE_BACKEND_UNFUSABLE = "template_backend_unfusable"
    NVGEMM_EPILOGUE_REJECTED = "nvgemm_epilogue_rejected"
    NVGEMM_BOOL_OUTPUT = "nvgemm_bool_output"
    BACKEND_REJECTED = "backend_rejected"
    # Scheduler: benchmark-based decisions.
    BENCHMARK_SLOWER = "benchmark_slower"
    REGISTER_SPILLING = "register_spilling"
    NO_FUSIBLE_TEMPLATE_CHOICE = "no_fusible_template_choice"
    TEMPLATE_PROLOGUE_NOT_BENCHMARKED = "template_prologue_not_benchmarked"
    TEMPLATE_LAYOUT_CONFLICT = "template_layout_conflict"
    ATOMIC_ADD_EPILOGUE_DISABLED = "atomic_add_epilogue_disabled"
    ATOMIC_ADD_PROLOGUE = "atomic_add_prologue"
    # Never proposed.
    NOT_PROPOSED = "not_proposed"
    NO_COMMON_BUFFER = "no_common_buffer"
    # Graph breaks.
    GRAPH_BREAK = "graph_break"
    # FX passes (pre-grad, joint-graph, post-grad, pattern replacements).
    FX_PASS_REWROTE_GRAPH = "fx_pass_rewrote_graph"
    # Inductor's caches: where a graph's remarks came from.
    CACHE_BYPASSED = "cache_bypassed"
    CACHE_REPLAYED = "cache_replayed"
    CACHE_HIT_WITHOUT_REMARKS = "cache_hit_without_remarks"
    # Ablation switches (fusion_ablation.py).
    NO_FUSION = "no_fusion"
    CONFIG_HELD_OFF = "config_held_off"
    # The FX fusion arm (packages/fx_fusion, backend="fx_fusion").
    FX_FUSED = "fx_fused"
    FX_UNSUPPORTED_OP = "fx_unsupported_op"
    FX_ITERATION_SPACE_MISMATCH = "fx_iteration_space_mismatch"
    FX_REDUCTION_MISMATCH = "fx_reduction_mismatch"
    FX_VIEW_NOT_FOLDED = "fx_view_not_folded"
    # The launch-bound combo-kernel pass (launch_bound_combo.py).
    COMBINED_LAUNCH_BOUND = "combined_launch_bound"
    COMBO_NOT_LAUNCH_BOUND = "combo_not_launch_bound"
    LAUNCH_BOUND_GROUP_REFUSED = "launch_bound_group_refused"
    LAUNCH_BOUND_COMBO_NOT_APPLIED = "launch_bound_combo_not_applied"
    # The one-pass reduction pass (one_pass_reductions.py).
    ONE_PASS_ROW_ON_CHIP = "one_pass_row_on_chip"
    ONE_PASS_ROW_TOO_LONG = "one_pass_row_too_long"
    ONE_PASS_TOO_FEW_ROWS = "one_pass_too_few_rows"
    ONE_PASS_DYNAMIC_ROW = "one_pass_dynamic_row"
    ONE_PASS_ROWS_NOT_CONTIGUOUS = "one_pass_rows_not_contiguous"
    ONE_PASS_ROW_AT_COPY_SPEED = "one_pass_row_at_copy_speed"
    ONE_PASS_ROW_READ_ONCE = "one_pass_row_read_once"
    ONE_PASS_ROW_SPLIT = "one_pass_row_split"
    ONE_PASS_SCALAR_LOOP_FASTER = "one_pass_scalar_loop_faster"
    ONE_PASS_SUMS_AT_COPY_SPEED = "one_pass_sums_at_copy_speed"
    ONE_PASS_LOOP_AT_COPY_SPEED = "one_pass_loop_at_copy_speed"

    @property
    def category(self) -> Category:
        return REASON_INFO[self][0]

    @property
    def description(self) -> str:
        return REASON_INFO[self][1]


R = Reason
REASON_INFO: dict[Reason, tuple[Category, str]] = {
    R.INLINED: (
        _F,
        "the producer was inlined into the consumer's loop body during lowering",
    ),
    R.FUSED_VERTICAL: (
        _F,
        "the scheduler fused a producer node with its consumer node",
    ),
    R.FUSED_HORIZONTAL: (
        _F,
        "the scheduler fused two independent nodes that share inputs or shapes",
    ),
    R.FUSED_TEMPLATE_EPILOGUE: (
        _F,
        "a pointwise consumer was fused into a template (e.g. a Triton matmul) as its epilogue",
    ),
    R.FUSED_TEMPLATE_PROLOGUE: (
        _F,
        "a pointwise producer was fused into a template as its prologue",
    ),
    R.RECOMPUTED: (
        _F,
        "an inlined op is computed again in each of several kernels instead of being stored once",
    ),
    R.REDUCTION_OUTPUT: (
        _B,
        "a reduction's result is always stored to a buffer; its consumers load it in another loop nest",
    ),
    R.GRAPH_OUTPUT: (
        _L,
        "a graph output must be materialized in memory: the caller reads it after the graph returns, so it cannot live only inside a kernel",
    ),
    R.OUTPUT_VIEW: (
        _L,
        "a graph output that is a view is realized for correct aliasing: without its own buffer the returned view would not alias the storage eager returns",
    ),
    R.OUTPUT_STRIDE_CONSTRAINT: (
        _L,
        "a graph output (or as_strided input) must have eager's strides, so it is copied into a buffer: produced in another kernel's layout it would have the wrong strides",
    ),
    R.FIXED_LAYOUT_FOR_CONSUMER: (
        _L,
        "a consumer (mm, conv, a mkldnn op) needs a fixed memory layout: it reads its input from memory in that layout, so the input cannot stay inside a fused loop",
    ),
    R.MULTI_USER_EXTERN_CONSUMER: (
        _H,
        "a value with several users, one of which is an extern kernel, is stored rather than recomputed",
    ),
    R.MULTI_USER_WITH_OUTPUT: (
        _L,
        "a value used by the graph output and by other ops is stored once: the output must exist in memory, and its other users read that buffer",
    ),
    R.REUSE_CPU_HEAVY_OP: (
        _H,
        "on CPU, a reused value computed with a heavy op (exp or sigmoid; 2.14.1 adds log, log10, log1p, log2 and tanh) is stored rather than recomputed",
    ),
    R.REUSE_TOO_MANY_READS: (
        _H,
        "a reused value reads more than config.realize_reads_threshold inputs, so it is stored",
    ),
    R.REUSE_LARGE_INNER_FN: (
        _H,
        "a reused value's loop body has more than config.realize_opcount_threshold ops, so it is stored",
    ),
    R.REUSE_MANY_USERS: (
        _H,
        "on CPU, a reused pointwise value with more users than config.realize_opusers_threshold and nearly config.realize_cpu_opcount_threshold ops is stored rather than recomputed in each user",
    ),
    R.REUSE_INLINE_ASM: (
        _H,
        "a reused value computed by inline assembly (inline_asm_elementwise) is stored rather than recomputed",
    ),
    R.ACC_READS_EXCEEDED: (
        _H,
        "a pointwise value accumulated more than config.realize_acc_reads_threshold reads, so it is stored",
    ),
    R.ACC_LARGE_INNER_FN: (
        _H,
        "a pointwise value's loop body grew beyond config.realize_opcount_threshold ops, so it is stored",
    ),
    R.ACC_READS_SIZE_EXCEEDED: (
        _H,
        "a pointwise value's reads accumulated more than config.realize_acc_reads_size_threshold bytes, so it is stored",
    ),
    R.POINTWISE_OPCOUNT_LIMIT: (
        _H,
        "a pointwise loop body grew beyond 100 ops (a recursion guard), so it is stored",
    ),
    R.REALIZE_TO_STRIDES: (
        _L,
        "an FX pass asked for this value to be realized with given strides: inlined, it would lose the layout that pass relies on",
    ),
    R.EXTERN_INPUT: (
        _B,
        "an extern kernel (ATen call, library kernel) reads its inputs from memory",
    ),
    R.READERS_BEFORE_MUTATION: (
        _L,
        "readers of a buffer are realized before the buffer is mutated in place: moved into a later kernel they would read the mutated values",
    ),
    R.MUTATION: (
        _L,
        "an in-place mutation writes its value to the mutated buffer: every alias of the buffer must see the write, so it cannot stay inside a kernel",
    ),
    R.CONCAT_KERNEL: (_H, "cat writes each input into a slice of its output buffer"),
    R.LOWERING_MATERIALIZES: (
        _B,
        "the op's lowering stores this value (the detail names the lowering)",
    ),
    R.EXTERN_KERNEL: (
        _B,
        "an extern kernel (an ATen or library call such as mm or conv) cannot be fused with generated code",
    ),
    R.FALLBACK_KERNEL: (
        _B,
        "the op has no Inductor lowering and runs its ATen kernel, which cannot be fused",
    ),
    R.TEMPLATE_KERNEL: (
        _B,
        "a template kernel only fuses pointwise epilogues/prologues that meet its rules",
    ),
    R.GROUPED_NODE: (
        _L,
        "grouped scheduler nodes (kept together for communication overlap) are never fused: fusing would break the order the overlap relies on",
    ),
    R.EXTERN_OR_NOP: (_B, "one node is an extern kernel or does no computation"),
    R.WRONG_ORDER: (
        _L,
        "the second node is an ancestor of the first: fused in this order, the kernel would read a value before computing it",
    ),
    R.BUFFER_MARKED_NO_FUSE: (
        _C,
        "a buffer is explicitly excluded from fusion (compute/communication overlap)",
    ),
    R.DEVICE_MISMATCH: (
        _L,
        "the nodes run on different devices: one kernel runs on one device and cannot compute on the other's memory",
    ),
    R.STRICT_SUM_ORDER: (
        _L,
        "a reduction must keep eager's summation order (it has a strict sum): fusing it with a template or another reduction would reorder its additions and change the rounding",
    ),
    R.REDUCTION_CONTRACTS_INCOMPATIBLE: (
        _B,
        "the backend's can_fuse_reduction_pair refused the pair: the two reductions cannot be kept in one kernel by this backend (on 2.15.0 only the CUDA backend refuses: an NVIDIA universal GEMM template whose epilogue reductions conflict)",
    ),
    R.NESTED_REDUCTION_APPEND_FAILED: (
        _B,
        "config.triton.nested_reduction: the node cannot be appended to an existing outer-plus-grouped reduction pipeline (no plan places it)",
    ),
    R.NESTED_REDUCTION_PLACEMENT_MISMATCH: (
        _L,
        "config.triton.nested_reduction: the node the pipeline would append to runs on another CUDA stream or in another memory pool",
    ),
    R.SUB_PARENT_EPILOGUE_PLANNING_FAILED: (
        _B,
        "config.triton.nested_reduction: a reduction and its consumers look like a staged sub-parent epilogue, but no complete plan exists, and such a candidate must not fall back to ordinary fusion",
    ),
    R.SUB_PARENT_EPILOGUE_PARTIAL: (
        _B,
        "config.triton.nested_reduction: only part of the consumer belongs to the reduction's sub-parent epilogue, so the staged kernel cannot take it",
    ),
    R.SUB_PARENT_EPILOGUE_INVALID: (
        _B,
        "config.triton.nested_reduction: the backend rejected fusing this pointwise node as a sub-parent epilogue of the reduction it depends on",
    ),
    R.STAGED_DEPENDENCY_UNPROVEN: (
        _L,
        "config.triton.nested_reduction: the staged plan's cross-stage reads could not be proved to read what the producer stage wrote, so fusing could read wrong values",
    ),
    R.STAGED_REDUCTION_PLAN_LOST: (
        _B,
        "config.triton.nested_reduction: fusing would lose a staged reduction's sub-parent epilogue plan, which the kernel needs",
    ),
    R.FUSION_RAISES_PEAK_MEMORY: (
        _H,
        "Scheduler.can_fuse's memory-timeline check (config.fusion_memory_timeline_peak_memory_increase_gb or _pct_threshold, both off by default) estimated that fusing raises the graph's peak memory beyond its limit",
    ),
    R.STREAM_MISMATCH: (
        _L,
        "the nodes are assigned to different CUDA streams: one kernel runs on one stream, so fusing would move work across the user's stream boundary",
    ),
    R.MEMPOOL_MISMATCH: (
        _L,
        "the nodes allocate from different CUDA memory pools (torch.cuda.use_mem_pool): a fused kernel's outputs could only live in one of them",
    ),
    R.USER_KERNEL_EPILOGUE: (
        _B,
        "a user-defined Triton kernel takes only an in-place, unary pointwise epilogue over its one mutated output, in the same layout; this consumer is not one",
    ),
    R.MULTI_OUTPUT_TEMPLATE_EPILOGUE: (
        _B,
        "an epilogue of a multi-output template must be a computed buffer; this consumer is not",
    ),
    R.PROLOGUE_DISABLED: (_C, "config.prologue_fusion is off"),
    R.PROLOGUE_NOT_POINTWISE: (
        _B,
        "only pointwise nodes can be fused into a template as a prologue",
    ),
    R.PROLOGUE_NOT_ACCEPTED: (
        _B,
        "the template accepts a prologue on none of its inputs (every non-Triton template, and Triton templates that allow none)",
    ),
    R.PROLOGUE_INPUT_NOT_ALLOWED: (
        _B,
        "the template does not accept a prologue for this input",
    ),
    R.PROLOGUE_MUTATION: (
        _L,
        "a prologue must be functional (no aliasing or mutation): the template may load its input several times, so a side effect would repeat or be read half-done",
    ),
    R.PROLOGUE_MULTI_USE: (
        _L,
        "a prologue's output may have no users besides the template: fused into it, the value is never stored, so other users would have nothing to read",
    ),
    R.PROLOGUE_INCREASES_READS: (
        _H,
        "the prologue would make the template read more bytes",
    ),
    R.PROLOGUE_PADDING: (
        _H,
        "a padding prologue would add unaligned reads to the template",
    ),
    R.PROLOGUE_NEEDS_UPCAST: (
        _H,
        "the prologue must be upcast to fp32, unprofitable in a low-precision template",
    ),
    R.EPILOGUE_DISABLED: (_C, "config.epilogue_fusion is off"),
    R.EPILOGUE_REDUCTION: (_B, "a reduction cannot be a template epilogue"),
    R.EPILOGUE_MUTATION: (
        _L,
        "a template epilogue must not alias or mutate: the template writes its output tile by tile, so a mutation or alias would be seen half-done",
    ),
    R.DEP_MISMATCH: (
        _L,
        "the consumer reads the producer's buffer at other indices than the producer writes (transposed, shifted, indirect or whole-buffer reads): in one loop, an iteration would read elements other iterations have not written yet",
    ),
    R.INTERMEDIATE_NODE_BETWEEN: (
        _L,
        "another node depends on the producer and feeds the consumer: it must run after the producer and before the consumer, impossible if both are one kernel",
    ),
    R.WOULD_CREATE_CYCLE: (
        _L,
        "fusing would create a cycle through other nodes: the fused kernel would both feed and wait for another kernel, so no order could run them",
    ),
    R.NO_SHARED_DATA: (
        _H,
        "the scheduler found no memory access the two nodes share exactly (one buffer at the same indices): their fusion score is 0, and it fuses only pairs with a shared access",
    ),
    R.INDEXING_MISMATCH: (
        _H,
        "the nodes share buffers but access them with different indexing",
    ),
    R.EXCEEDS_MAX_FUSION_SIZE: (
        _H,
        "the fused node would hold more than config.max_fusion_size nodes",
    ),
    R.PEAK_MEMORY_INCREASE: (_H, "fusing would increase peak memory"),
    R.TOO_MANY_IO_BUFFERS: (
        _H,
        "the fused kernel would read and write more than config.max_fusion_unique_io_buffers buffers",
    ),
    R.SCORE_BELOW_THRESHOLD: (
        _H,
        "a horizontal pair shares less than config.score_fusion_memory_threshold bytes",
    ),
    R.NODES_TOO_FAR_APART: (
        _H,
        "the nodes are too far apart in the original order; fusing may increase peak memory",
    ),
    R.FOREACH_CROSS_DEPENDENCY: (
        _L,
        "a foreach consumer's member reads what a producer member other than its own partner writes: each pair becomes one sub-kernel and the sub-kernels run in parallel, so the read could see the value before it is written",
    ),
    R.FOREACH_INCOMPATIBLE: (
        _B,
        "a foreach kernel cannot take this node (reductions, length or dependency mismatch)",
    ),
    R.REDUCTION_SHAPE_MISMATCH: (
        _B,
        "two reductions over different (numel, rnumel) cannot share a Triton kernel",
    ),
    R.POINTWISE_NUMEL_MISMATCH: (
        _B,
        "two pointwise nodes over different numbers of elements",
    ),
    R.NATIVE_MATMUL_TILING: (
        _B,
        "the loop order is incompatible with native matmul tiling",
    ),
    R.PROLOGUE_NUMEL_MISMATCH: (
        _B,
        "the prologue's size differs from the template's other prologues",
    ),
    R.TILING_MISMATCH: (
        _H,
        "the nodes prefer different 2D/3D tilings (config.triton.tiling_prevents_pointwise_fusion)",
    ),
    R.POINTWISE_INTO_REDUCTION_RANGES: (
        _B,
        "a pointwise producer's ranges cannot be split into the reduction's (numel, rnumel)",
    ),
    R.REDUCTION_TILING_INVALID: (
        _H,
        "the pointwise node's tiling does not fit the reduction (config.triton.tiling_prevents_reduction_fusion)",
    ),
    R.REDUCTION_EPILOGUE_NUMEL_MISMATCH: (
        _B,
        "a pointwise consumer's size matches neither the reduction's output nor its input",
    ),
    R.CPP_REDUCTION_PRODUCER: (
        _B,
        "the C++ backend fuses a reduction with a consumer only by outer-loop fusion, which does not apply here",
    ),
    R.CPP_RANGES_INCOMPATIBLE: (
        _B,
        "the C++ backend cannot put loop nests with these iteration ranges in one loop nest",
    ),
    R.CPP_TEMPLATE_FUSION: (
        _B,
        "the C++ backend cannot fuse this node with a C++ template",
    ),
    R.CPP_MAX_HORIZONTAL_SIZE: (
        _H,
        "horizontal fusion would exceed config.cpp.max_horizontal_fusion_size",
    ),
    R.CUTLASS_EPILOGUE_UNSUPPORTED: (
        _B,
        "the CUTLASS/CuteDSL epilogue rules reject this node",
    ),
    R.TEMPLATE_BACKEND_UNFUSABLE: (
        _B,
        "this template's backend fuses nothing in this direction: CuteDSL and FlyDSL templates take no epilogue, and CUTLASS, CuteDSL, FlyDSL and NVIDIA universal GEMM templates take no horizontal partner (the detail names the backend)",
    ),
    R.NVGEMM_EPILOGUE_REJECTED: (
        _B,
        "the NVIDIA universal GEMM template's epilogue rules reject this consumer (variant, output scale, epilogue lowering or reduction layout), and no Triton choice of the same autotuned buffer could take it instead",
    ),
    R.NVGEMM_BOOL_OUTPUT: (
        _B,
        "an NVIDIA universal GEMM template with a boolean output is fused horizontally with nothing",
    ),
    R.BACKEND_REJECTED: (
        _B,
        "the device backend's fusion check rejected the pair (the detail names the check)",
    ),
    R.BENCHMARK_SLOWER: (
        _H,
        "benchmarking showed the fused kernel slower than the two kernels",
    ),
    R.REGISTER_SPILLING: (_H, "a benchmarked kernel spills registers"),
    R.NO_FUSIBLE_TEMPLATE_CHOICE: (
        _H,
        "Scheduler.speedup_by_fusion found no choice of the autotuned template to take the fusion: none of its Triton choices compiled with it, or none was judged profitable (benchmarked under config.benchmark_template_fusion, benchmark_epilogue_fusion before 2.15.0; else estimated from its registers and spills)",
    ),
    R.TEMPLATE_PROLOGUE_NOT_BENCHMARKED: (
        _C,
        "Scheduler.speedup_by_fusion tries a prologue in an autotuned template only when it benchmarks the fused choices (config.benchmark_template_fusion, benchmark_epilogue_fusion before 2.15.0), off here",
    ),
    R.TEMPLATE_LAYOUT_CONFLICT: (
        _L,
        "an input of the autotuned template has a layout another user constrains, so Scheduler.speedup_by_fusion keeps the template's ATen choice, which takes no fusion",
    ),
    R.ATOMIC_ADD_EPILOGUE_DISABLED: (
        _C,
        "an atomic-add (scatter) epilogue of a Triton template is fused only under config.epilogue_fusion_with_atomic_add, off here",
    ),
    R.ATOMIC_ADD_PROLOGUE: (
        _B,
        "a fused kernel with an atomic add cannot be benchmarked (its inputs are random), so Scheduler.speedup_by_fusion takes one only as an epilogue of an autotuned template, compiled untimed; this is a prologue",
    ),
    R.NOT_PROPOSED: (
        _N,
        "the scheduler never evaluated this pair (the detail says why)",
    ),
    R.NO_COMMON_BUFFER: (
        _N,
        "the scheduler proposes only pairs that share a buffer, and this pair shares none",
    ),
    R.GRAPH_BREAK: (
        _L,
        "the ops are in different graphs, separated by a Dynamo graph break: Python runs between them, so no kernel can span both",
    ),
    R.FX_PASS_REWROTE_GRAPH: (
        _A,
        "an FX pass (e.g. a pattern replacement) changed the graph before lowering; args give matches and node counts",
    ),
    R.CACHE_BYPASSED: (
        _A,
        "a capture bypassed Inductor's FX graph and AOTAutograd caches, so the graph was compiled and explained afresh",
    ),
    R.CACHE_REPLAYED: (
        _A,
        "the graph was loaded from Inductor's FX graph cache; its remarks were stored with the cache entry when it was compiled and are replayed",
    ),
    R.CACHE_HIT_WITHOUT_REMARKS: (
        _A,
        "the graph was loaded from Inductor's FX graph cache from an entry written with remarks off, so there is nothing to replay",
    ),
    R.NO_FUSION: (
        _C,
        "config.no_fusion puts every computing op in a kernel of its own: realized at lowering, never fused by the scheduler",
    ),
    R.CONFIG_HELD_OFF: (
        _C,
        "an ablation switch (config.fusion_only or config.no_fusion) held an optimization off; args name the switch, option and value",
    ),
    R.FX_FUSED: (
        _F,
        "the FX fusion pass put the producer and its consumer in one generated kernel",
    ),
    R.FX_UNSUPPORTED_OP: (
        _B,
        "the FX fusion pass cannot express the op in its kernel IR (elementwise ops, casts, constants and sum/amax/amin/prod/mean/var reductions over static shapes), so it runs as its ATen kernel (the detail says what is missing)",
    ),
    R.FX_ITERATION_SPACE_MISMATCH: (
        _B,
        "the ops iterate over different spaces (a smaller or larger broadcast shape, or two dims read along one loop), which one FX fusion kernel cannot express",
    ),
    R.FX_REDUCTION_MISMATCH: (
        _B,
        "a reduction over other dims than the FX fusion kernel's reduction, or of a value computed once per reduced row, needs a kernel of its own",
    ),
    R.FX_VIEW_NOT_FOLDED: (
        _B,
        "the consumer reads the producer through a view (a slice, or a reshape that merges or splits dims) that the FX fusion pass does not fold into a kernel",
    ),
    R.COMBINED_LAUNCH_BOUND: (
        _F,
        "config.launch_bound_combo_kernels put independent kernels, each predicted to take less GPU time than its launch, in one combo kernel: one launch instead of several",
    ),
    R.COMBO_NOT_LAUNCH_BOUND: (
        _H,
        "config.launch_bound_combo_kernels kept an independent kernel out of a combo kernel: it moves more bytes than config.launch_bound_combo_max_bytes, so sharing block sizes could cost more than the launch saved",
    ),
    R.LAUNCH_BOUND_GROUP_REFUSED: (
        _H,
        "config.launch_bound_combo_kernels grouped these kernels, and upstream's combo-kernel step (Scheduler.create_combo_kernel_nodes) left them apart: its distance window (config.combo_kernel_max_distance), compile-time benchmark (config.benchmark_combo_kernel) or peak-memory gate (config.combo_kernel_peak_memory_pct_threshold, config.combo_kernel_peak_memory_increase_gb), those on named in the remark, split or refused the group",
    ),
    R.LAUNCH_BOUND_COMBO_NOT_APPLIED: (
        _A,
        "config.launch_bound_combo_kernels did not group a graph's kernels, for an internal error (named in the remark) or a grouping callback the user registered (ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels), and left the schedule it found: upstream's combo kernels where config.combo_kernels is on, no combo kernel otherwise",
    ),
    R.ONE_PASS_ROW_ON_CHIP: (
        _F,
        "config.one_pass_reductions made a softmax-class kernel (a reduction whose row a later phase of the same kernel reads again, or an online softmax) read each row once: the row is held in the registers of one thread block instead of being read once per phase or rescaled at every element",
    ),
    R.ONE_PASS_ROW_TOO_LONG: (
        _B,
        "config.one_pass_reductions kept a softmax-class kernel's passes: its row, times the row-long inputs the kernel holds, has more elements than one thread block holds in registers (32 warps times config.one_pass_reductions_elements_per_thread per thread); with rows enough to fill the GPU the row is walked by one block of 32 warps in wide steps, so that its re-reads come from L2",
    ),
    R.ONE_PASS_TOO_FEW_ROWS: (
        _H,
        "config.one_pass_reductions kept a softmax-class kernel's passes: it has fewer rows than the GPU has multiprocessors, so one block per row would leave most of them idle",
    ),
    R.ONE_PASS_DYNAMIC_ROW: (
        _B,
        "config.one_pass_reductions kept a softmax-class kernel's passes: the row length is not static, and a persistent reduction needs a static block size",
    ),
    R.ONE_PASS_ROWS_NOT_CONTIGUOUS: (
        _B,
        "config.one_pass_reductions kept a softmax-class kernel's passes: the reduced dim is not the contiguous innermost one, or the kernel is tiled, and one block per row would read memory uncoalesced",
    ),
    R.ONE_PASS_ROW_AT_COPY_SPEED: (
        _H,
        "config.one_pass_reductions kept a softmax-class kernel's passes: its row is of 4-byte elements and at most 32768 long, where upstream's loop already runs at a copy's speed (its re-reads hit L2 and its arithmetic hides behind the loads) and a row held on chip was 1-3% slower; config.one_pass_reductions_wide_rows_on_chip holds it on chip",
    ),
    R.ONE_PASS_ROW_READ_ONCE: (
        _H,
        "config.one_pass_reductions kept a softmax-class kernel's loop: the kernel reads its row from memory once already, and holding it on chip would take a block of 16 or 32 warps, one a multiprocessor with no other block's loads to overlap, which saves less than it costs",
    ),
    R.ONE_PASS_SCALAR_LOOP_FASTER: (
        _H,
        "config.one_pass_reductions kept upstream's loop for an online softmax at a row longer than 4096 elements (a softmax or log-softmax, which reads its row twice; cross-entropy's logsumexp, read once, where on chip it would take a block of 32 warps): the release folds each step of that loop to per-row scalars (triton.scalar_accumulators), which was as fast as the row held on chip or faster",
    ),
    R.ONE_PASS_SUMS_AT_COPY_SPEED: (
        _H,
        "config.one_pass_reductions kept upstream's loop for a kernel whose reductions are all sums and which reads its row twice (an RMS norm's forward; the backward of a norm, a softmax or a log-softmax): it adds once an element per pass, so the loop's second read, from L2, is as fast as the row held on chip; config.one_pass_reductions_sums_on_chip holds it on chip",
    ),
    R.ONE_PASS_LOOP_AT_COPY_SPEED: (
        _H,
        "config.one_pass_reductions kept upstream's loop for a kernel without an online softmax that reads its row twice (a layer norm's forward: a Welford reduction, then the scale) at a row longer than 4096 elements: there the loop's second read, from L2, keeps it at a copy's speed, and the row held on chip was slower",
    ),
    R.ONE_PASS_ROW_SPLIT: (
        _F,
        "config.one_pass_reductions_split_rows kept a reduction over a few long rows (fewer than half the GPU's multiprocessors) in one kernel and split each row over several thread blocks (upstream's cooperative reduction with a fixed RSPLIT): each block holds its part of the row in registers where it fits, and the partial results meet in a workspace, where lowering would have split the reduction into kernels that read the row again",
    ),
}
del R


# Codes whose rule exists in some torch releases only: the releases that have
# it, as a range (releases.py), so that a new release inherits a rule
# upstream has not removed.  Every code not listed is decided in every release.
RELEASES: dict[Reason, ReleaseRange] = {
    Reason.PROLOGUE_NOT_ACCEPTED: since("2.14.1"),
    Reason.REUSE_MANY_USERS: since("2.14.1"),
    Reason.REUSE_INLINE_ASM: since("2.14.1"),
    Reason.STRICT_SUM_ORDER: since("2.14.1"),
    Reason.STREAM_MISMATCH: since("2.14.1"),
    Reason.MEMPOOL_MISMATCH: since("2.14.1"),
    Reason.USER_KERNEL_EPILOGUE: since("2.14.1"),
    Reason.MULTI_OUTPUT_TEMPLATE_EPILOGUE: since("2.14.1"),
    Reason.REDUCTION_CONTRACTS_INCOMPATIBLE: since("2.15.0"),
    Reason.NESTED_REDUCTION_APPEND_FAILED: since("2.15.0"),
    Reason.NESTED_REDUCTION_PLACEMENT_MISMATCH: since("2.15.0"),
    Reason.SUB_PARENT_EPILOGUE_PLANNING_FAILED: since("2.15.0"),
    Reason.SUB_PARENT_EPILOGUE_PARTIAL: since("2.15.0"),
    Reason.SUB_PARENT_EPILOGUE_INVALID: since("2.15.0"),
    Reason.STAGED_DEPENDENCY_UNPROVEN: since("2.15.0"),
    Reason.STAGED_REDUCTION_PLAN_LOST: since("2.15.0"),
    Reason.FUSION_RAISES_PEAK_MEMORY: since("2.15.0"),
    Reason.FOREACH_CROSS_DEPENDENCY: since("2.15.0"),
    Reason.NVGEMM_BOOL_OUTPUT: since("2.15.0"),
    # the fork's rule for a release with triton.scalar_accumulators
    Reason.ONE_PASS_SCALAR_LOOP_FASTER: since("2.15.0"),
}


def reasons_table() -> dict[str, dict[str, object]]:
    """The taxonomy as JSON: ``{code: {"category": ..., "description": ...}}``,
    with ``"releases"`` for a code that only some supported releases decide."""
    table: dict[str, dict[str, object]] = {}
    for reason, (category, description) in REASON_INFO.items():
        entry: dict[str, object] = {
            "category": category.value,
            "description": description,
        }
        if reason in RELEASES:
            entry["releases"] = RELEASES[reason].to_json()
        table[reason.value] = entry
    return table
