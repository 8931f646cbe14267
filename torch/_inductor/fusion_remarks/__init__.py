"""Fusion remarks: why Inductor put two ops in one kernel, or in two.

A *remark* records one fusion decision or one kernel boundary, in the manner
of LLVM's optimization remarks: a kind (``fused``, ``missed``, ``analysis``),
a stable reason code from one taxonomy (:class:`Reason`, documented in
``docs/source/torch.compiler_fusion_remarks.md``), the stage that decided it,
the scheduler nodes, buffers and aten ops involved, and the numbers that were
compared.

Upstream decides kernel boundaries in two places and logs almost none of it:

* during *lowering*, an IR value is either inlined into its consumers (the
  way most pointwise fusion happens) or *realized* into a buffer of its own;
* in the *scheduler*, realized buffers become nodes and pairs of nodes are
  proposed, checked (``Scheduler.can_fuse``, ``InductorChoices``, the
  backends) and fused or not.

The hooks here are called from small patches to upstream modules
(``scheduler.py``, ``ir.py``).  They record what happens into a
:class:`GraphRecorder` attached to the graph being compiled; at the end of
scheduling, :mod:`torch._inductor.fusion_analysis` turns the records into a
per-graph report in which every boundary has exactly one reason, and
:mod:`torch._inductor.fusion_report` renders it.  Recording happens only while
the ``fusion`` log is on or a :func:`fusion_report.capture` is active, and no
hook may change what Inductor generates or fail a compile: errors inside the
instrumentation are reported once and swallowed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import itertools
import logging
import os
import sys
from typing import Any, TYPE_CHECKING

import torch
import torch._logging
from torch._guards import CompileContext


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from ..scheduler import BaseSchedulerNode, Scheduler, WhyNoFuse


log = logging.getLogger(__name__)
fusion_log = torch._logging.getArtifactLogger(__name__, "fusion")


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
    # The FX fusion arm (torch._inductor.fx_passes.fx_fusion), not Inductor.
    FX_FUSION = "fx_fusion"
    # The optional launch-bound combo-kernel pass (launch_bound_combo.py).
    LAUNCH_BOUND_COMBO = "launch_bound_combo"


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
    ACC_READS_EXCEEDED = "acc_reads_exceeded"
    ACC_LARGE_INNER_FN = "acc_large_inner_fn"
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
    # Scheduler: template prologue and epilogue rules.
    PROLOGUE_DISABLED = "prologue_disabled"
    PROLOGUE_NOT_POINTWISE = "prologue_not_pointwise"
    PROLOGUE_NON_TRITON_TEMPLATE = "prologue_non_triton_template"
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
    BACKEND_REJECTED = "backend_rejected"
    # Scheduler: benchmark-based decisions.
    BENCHMARK_SLOWER = "benchmark_slower"
    REGISTER_SPILLING = "register_spilling"
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
    # The FX fusion arm (fx_passes/fx_fusion.py, backend="fx_fusion").
    FX_FUSED = "fx_fused"
    FX_UNSUPPORTED_OP = "fx_unsupported_op"
    FX_ITERATION_SPACE_MISMATCH = "fx_iteration_space_mismatch"
    FX_REDUCTION_MISMATCH = "fx_reduction_mismatch"
    FX_VIEW_NOT_FOLDED = "fx_view_not_folded"
    # The launch-bound combo-kernel pass (launch_bound_combo.py).
    COMBINED_LAUNCH_BOUND = "combined_launch_bound"
    COMBO_NOT_LAUNCH_BOUND = "combo_not_launch_bound"

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
        "on CPU, a reused value computed with exp or sigmoid is stored rather than recomputed",
    ),
    R.REUSE_TOO_MANY_READS: (
        _H,
        "a reused value reads more than config.realize_reads_threshold inputs, so it is stored",
    ),
    R.REUSE_LARGE_INNER_FN: (
        _H,
        "a reused value's loop body has more than config.realize_opcount_threshold ops, so it is stored",
    ),
    R.ACC_READS_EXCEEDED: (
        _H,
        "a pointwise value accumulated more than config.realize_acc_reads_threshold reads, so it is stored",
    ),
    R.ACC_LARGE_INNER_FN: (
        _H,
        "a pointwise value's loop body grew beyond config.realize_opcount_threshold ops, so it is stored",
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
    R.PROLOGUE_DISABLED: (_C, "config.prologue_fusion is off"),
    R.PROLOGUE_NOT_POINTWISE: (
        _B,
        "only pointwise nodes can be fused into a template as a prologue",
    ),
    R.PROLOGUE_NON_TRITON_TEMPLATE: (
        _B,
        "prologue fusion is only implemented for Triton templates",
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
        "the nodes read or write no identical memory access, so fusing saves no memory traffic",
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
    R.BACKEND_REJECTED: (
        _B,
        "the device backend's fusion check rejected the pair (the detail names the check)",
    ),
    R.BENCHMARK_SLOWER: (
        _H,
        "benchmarking showed the fused kernel slower than the two kernels",
    ),
    R.REGISTER_SPILLING: (_H, "a benchmarked kernel spills registers"),
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
}
del R

# Upstream WhyNoFuse texts (format strings) -> codes.  Texts shared by several
# causes are refined in _refine_why_no_fuse.
_WHY_NO_FUSE_CODES: dict[str, Reason] = {
    "grouped node must not be fused with other nodes": Reason.GROUPED_NODE,
    "fusion is off (config.no_fusion)": Reason.NO_FUSION,
    "node1 is extern or nop": Reason.EXTERN_OR_NOP,
    "node2 is extern or nop": Reason.EXTERN_OR_NOP,
    "node1 must go before node2": Reason.WRONG_ORDER,
    "fusion for buffer explicit disabled": Reason.BUFFER_MARKED_NO_FUSE,
    "device mismatch (%s vs %s)": Reason.DEVICE_MISMATCH,
    "prologue fusion turned off": Reason.PROLOGUE_DISABLED,
    "prologue fusion only supported for pointwise nodes": Reason.PROLOGUE_NOT_POINTWISE,
    "prologue fusion only supported for TritonTemplates": Reason.PROLOGUE_NON_TRITON_TEMPLATE,
    "prologue fusion not implemented for kernel for these inputs": Reason.PROLOGUE_INPUT_NOT_ALLOWED,
    "template prologue can only fuse functional pointwise nodes": Reason.PROLOGUE_MUTATION,
    "template prologue can only fuse nodes with a single use": Reason.PROLOGUE_MULTI_USE,
    "template prologue can only fuse nodes with a single use into template": Reason.PROLOGUE_MULTI_USE,
    "prologue fusion will not increase amount of bytes read in kernel": Reason.PROLOGUE_INCREASES_READS,
    "prologue fusion will not increase attempt to fuse in padding bc it increases unaligned reads": Reason.PROLOGUE_PADDING,
    "prologue fusion that must be upcast to fp32 not profitable for low precision templates": Reason.PROLOGUE_NEEDS_UPCAST,
    "template epilogue not satisfied": Reason.EPILOGUE_DISABLED,  # refined
    "memory deps did not match": Reason.DEP_MISMATCH,
    "intermediate nodes between node1 & node2": Reason.INTERMEDIATE_NODE_BETWEEN,
    "will create cycle": Reason.WOULD_CREATE_CYCLE,
    "no shared data": Reason.NO_SHARED_DATA,
    "no shared data due to indexing mismatch": Reason.INDEXING_MISMATCH,
    "exceeds max fusion": Reason.EXCEEDS_MAX_FUSION_SIZE,
    "Fusion will increase peak memory": Reason.PEAK_MEMORY_INCREASE,
    "fusion_prevent_too_many_reads_and_writes": Reason.TOO_MANY_IO_BUFFERS,
    "score_fusion_memory_threshold": Reason.SCORE_BELOW_THRESHOLD,
    "Nodes are too far away. Fusing them may increase peak memory.": Reason.NODES_TOO_FAR_APART,
    "foreach do not have same length": Reason.FOREACH_INCOMPATIBLE,
    "candidate producer is a reduction, foreach ops cannot be fused with reductions currently": Reason.FOREACH_INCOMPATIBLE,
    "candidate producer is not dep of any foreach consumer": Reason.FOREACH_INCOMPATIBLE,
    "candidate consumer is a reduction, foreach ops cannot be fused with reductions currently": Reason.FOREACH_INCOMPATIBLE,
    "candidate consumer has no dep in any foreach producer": Reason.FOREACH_INCOMPATIBLE,
    "numel/rnumel mismatch (reduce) (%s, %s), (%s, %s)": Reason.REDUCTION_SHAPE_MISMATCH,
    "invalid loop order and tiling for native matmul": Reason.NATIVE_MATMUL_TILING,
    "numel/rnumel mismatch (non-reduce) (%s, %s), (%s, %s)": Reason.POINTWISE_NUMEL_MISMATCH,
    "numel/rnumel mismatch prologue mismatch (%s, %s), (%s, %s)": Reason.PROLOGUE_NUMEL_MISMATCH,
    "tiling mismatch (%s, %s, %s)": Reason.TILING_MISMATCH,
    "nodes numel/rnumel incompatibility": Reason.POINTWISE_INTO_REDUCTION_RANGES,
    "invalid tiling for reduction": Reason.REDUCTION_TILING_INVALID,
    "nodes numel incompatibility": Reason.REDUCTION_EPILOGUE_NUMEL_MISMATCH,
    "register spilling of the first kernel": Reason.REGISTER_SPILLING,
    "register spilling of the second kernel": Reason.REGISTER_SPILLING,
    "register spilling of the fused kernel": Reason.REGISTER_SPILLING,
    "cutlass epilogue fusion is not enabled": Reason.CUTLASS_EPILOGUE_UNSUPPORTED,
    "epilogue fusion is only supported for TMA-enabled gemm ops": Reason.CUTLASS_EPILOGUE_UNSUPPORTED,
}
# Texts that upstream logs without rejecting the pair.
_NOT_A_REJECTION = frozenset({"Split scan cannot fuse with reductions"})


@dataclasses.dataclass
class Remark:
    """One fusion decision or kernel boundary (see the module docstring)."""

    kind: Kind
    reason: Reason
    stage: Stage
    nodes: tuple[str, ...] = ()  # scheduler node names
    buffers: tuple[str, ...] = ()  # IR buffer names
    ops: tuple[str, ...] = ()  # post-grad FX node names
    sources: tuple[str, ...] = ()  # user source lines, "file:line"
    args: dict[str, Any] = dataclasses.field(default_factory=dict)
    detail: str = ""
    graph: str = ""

    @property
    def category(self) -> Category:
        return self.reason.category

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "reason": self.reason.value,
            "category": self.category.value,
            "stage": self.stage.value,
            "nodes": list(self.nodes),
            "buffers": list(self.buffers),
            "ops": list(self.ops),
            "sources": list(self.sources),
            "args": {k: _jsonable(v) for k, v in self.args.items()},
            "detail": self.detail,
            "graph": self.graph,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


@dataclasses.dataclass
class PairVerdict:
    """The outcome of the scheduler evaluating one pair of nodes."""

    seq: int
    first: frozenset[str]  # base scheduler node names of each side
    second: frozenset[str]
    names: tuple[str, str]
    fused: bool
    reason: Reason | None
    detail: str
    args: dict[str, Any]
    vertical: bool


@dataclasses.dataclass
class Realization:
    """Why lowering stored an IR value in a buffer instead of inlining it."""

    buffer: str
    reason: Reason
    detail: str
    args: dict[str, Any]


class GraphRecorder:
    """What the hooks saw while one graph was lowered and scheduled."""

    def __init__(self) -> None:
        self.realizations: dict[str, Realization] = {}
        self.verdicts: list[PairVerdict] = []
        self.base_nodes: list[str] = []
        # Generated kernels per final scheduler node (Inductor's own metric) and
        # the generated function that holds each base scheduler node.
        self.kernel_counts: dict[str, int] = {}
        self.kernel_functions: dict[str, str] = {}
        self._seq = itertools.count()
        self._depth = 0  # nesting of Scheduler.can_fuse calls
        self._why: list[tuple[str, tuple[Any, ...], str, str]] = []
        self._silent: list[str] = []  # backend checks that returned False
        self.published: dict[str, Any] | None = None  # the analysed report

    def next_seq(self) -> int:
        return next(self._seq)


# ---------------------------------------------------------------------------
# Enablement

_captures: list[Any] = []  # active fusion_report captures
_reported_failure = False
# The active fusion_check.force_fusion (None otherwise): while None, forcing
# costs the scheduler hooks one check and can change nothing.
_forcing: Any = None


def is_enabled() -> bool:
    """Whether anyone will read remarks: a capture, the fusion log or TORCH_TRACE.

    TORCH_TRACE is read from the environment, as torch._logging does: its
    handler exists in every process until the first structured log.
    """
    return (
        bool(_captures)
        or fusion_log.isEnabledFor(logging.DEBUG)
        or bool(os.environ.get("TORCH_TRACE") or os.environ.get("TORCH_DTRACE"))
    )


def _report_failure(error: BaseException) -> None:
    """Warn about the first instrumentation error of the process, with its traceback."""
    global _reported_failure
    if not _reported_failure:
        _reported_failure = True
        log.warning("fusion remarks failed; compilation goes on", exc_info=error)


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Never let an instrumentation error escape into the compile."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            _report_failure(e)
            return None

    return wrapper


def current_recorder(create: bool = True) -> GraphRecorder | None:
    from ..virtualized import V

    if not V.graph:  # no graph being compiled (e.g. a unit test of a helper)
        return None
    graph = V.graph
    recorder = getattr(graph, "_fusion_recorder", None)
    if recorder is None and create:
        recorder = GraphRecorder()
        graph._fusion_recorder = recorder  # type: ignore[attr-defined]
    return recorder


def producer_identity() -> str:
    """Who generated the code: the fork and its revision, or plain torch."""
    fork = getattr(torch.version, "fork", None)
    if fork is not None:
        return f"torch {torch.__version__} {fork}"
    return f"torch {torch.__version__}"


def graph_label() -> str:
    """The compile id, plus which AOT graph (forward/backward) is being compiled."""
    from ..virtualized import V

    compile_id = CompileContext.current_compile_id()
    label = str(compile_id) if compile_id is not None else "<no compile id>"
    if V.graph and getattr(V.graph, "is_backward", False):
        label += " backward"
    return label


# ---------------------------------------------------------------------------
# Lowering hook: StorageBox.realize


@_guarded
def record_realize(buffer: Any) -> None:
    """Called by ``StorageBox.realize`` after it stored an IR value in ``buffer``."""
    if not is_enabled():
        return
    recorder = current_recorder()
    if recorder is None:
        return
    reason, detail = _classify_realize(buffer, sys._getframe(2))
    recorder.realizations[buffer.get_name()] = Realization(
        buffer.get_name(), reason, detail, {}
    )


_FORWARDING = frozenset({"realize", "realize_hint", "mark_reuse", "wrapper"})


def _classify_realize(buffer: Any, frame: Any) -> tuple[Reason, str]:
    """Name the lowering rule that realized ``buffer`` from the calling frames."""
    from .. import config, ir

    names: list[str] = []
    site = ""
    f = frame
    while f is not None and len(names) < 12:
        code = f.f_code
        qualname = getattr(code, "co_qualname", code.co_name)
        filename = code.co_filename.replace("\\", "/")
        names.append(qualname)
        if not site and code.co_name not in _FORWARDING:
            site = f"{'/'.join(filename.split('/')[-2:])}:{f.f_lineno} {qualname}"
        if filename.endswith(("_inductor/graph.py", "_inductor/lowering.py")) and (
            code.co_name not in _FORWARDING
        ):
            break
        f = f.f_back
    joined = " ".join(names)
    data = getattr(buffer, "data", None)

    def has(name: str) -> bool:
        return any(n.endswith(name) for n in names)

    if has("realize_alone"):
        return Reason.NO_FUSION, site
    if "make_reduction" in joined or isinstance(data, ir.Reduction):
        return Reason.REDUCTION_OUTPUT, site
    if "ConcatKernel" in joined:
        return Reason.CONCAT_KERNEL, site
    if has("mark_buffer_mutated"):
        return Reason.READERS_BEFORE_MUTATION, site
    if has("realize_into") or has("mutate_to"):
        return Reason.MUTATION, site
    if has("GraphLowering.output"):
        return Reason.GRAPH_OUTPUT, site
    if has("mark_reuse"):
        if ir.is_cpu(data) and any(
            op in data.inner_fn_opcount().used_ops for op in ("exp", "sigmoid")
        ):
            return Reason.REUSE_CPU_HEAVY_OP, site
        if data.num_reads() > config.realize_reads_threshold:
            return Reason.REUSE_TOO_MANY_READS, site
        return Reason.REUSE_LARGE_INNER_FN, site
    in_run_node = has("GraphLowering.run_node")
    if has("copy_input") or has("require_stride_order") or has("require_exact_strides"):
        if in_run_node and _run_node_is_output(frame):
            return Reason.OUTPUT_STRIDE_CONSTRAINT, site
        if in_run_node:
            return Reason.FIXED_LAYOUT_FOR_CONSUMER, site
        return Reason.EXTERN_INPUT, site
    if (
        has("realize_input")
        or has("process_kernel")
        or has("realize_inputs")
        or "ExternKernel" in joined
        or "FallbackKernel" in joined
    ):
        return Reason.EXTERN_INPUT, site
    if has("realize_hint") and in_run_node:
        if isinstance(data, ir.Pointwise):
            if data.num_reads() > config.realize_acc_reads_threshold:
                return Reason.ACC_READS_EXCEEDED, site
            if data.has_large_inner_fn():
                return Reason.ACC_LARGE_INNER_FN, site
        return Reason.MULTI_USER_EXTERN_CONSUMER, site
    if in_run_node:
        node = _run_node_fx_node(frame)
        if node is not None and node.meta.get("inductor_realize_to_strides", False):
            return Reason.REALIZE_TO_STRIDES, site
        if node is not None and any(u.op == "output" for u in node.users):
            if len(node.users) > 1:
                return Reason.MULTI_USER_WITH_OUTPUT, site
            return Reason.OUTPUT_VIEW, site
        return Reason.POINTWISE_OPCOUNT_LIMIT, site
    return Reason.LOWERING_MATERIALIZES, site


def _find_frame(frame: Any, name: str) -> Any:
    while frame is not None:
        if frame.f_code.co_name == name:
            return frame
        frame = frame.f_back
    return None


def _run_node_fx_node(frame: Any) -> torch.fx.Node | None:
    f = _find_frame(frame, "run_node")
    node = f.f_locals.get("n") if f is not None else None
    return node if isinstance(node, torch.fx.Node) else None


def _run_node_is_output(frame: Any) -> bool:
    f = _find_frame(frame, "run_node")
    return bool(f is not None and f.f_locals.get("is_output"))


# ---------------------------------------------------------------------------
# FX pass hooks: GraphTransformObserver (every named Inductor FX pass) and
# PatternMatcherPass.apply (match counts)

# Remarks of FX passes wait here until the graph they belong to is analysed:
# pre-grad and joint-graph passes run before any GraphLowering exists.
_pending_fx_remarks: list[tuple[str, Remark]] = []
_MAX_PENDING_FX_REMARKS = 1000


@dataclasses.dataclass
class _FxPassWatch:
    passname: str
    names: set[str]


def _compile_key() -> str:
    compile_id = CompileContext.current_compile_id()
    return str(compile_id) if compile_id is not None else ""


@_guarded
def fx_pass_enter(gm: torch.fx.GraphModule, passname: str) -> _FxPassWatch | None:
    """Called when GraphTransformObserver enters: remember the graph's nodes."""
    if not is_enabled():
        return None
    return _FxPassWatch(passname, {n.name for n in gm.graph.nodes})


@_guarded
def fx_pass_exit(watch: _FxPassWatch | None, gm: torch.fx.GraphModule) -> None:
    """Called when GraphTransformObserver exits: record the pass if it changed the graph."""
    if watch is None:
        return
    after = {n.name for n in gm.graph.nodes}
    erased, created = watch.names - after, after - watch.names
    if not erased and not created:
        return
    del _pending_fx_remarks[:-_MAX_PENDING_FX_REMARKS]  # compiles that never finished
    _pending_fx_remarks.append(
        (
            _compile_key(),
            Remark(
                Kind.ANALYSIS,
                Reason.FX_PASS_REWROTE_GRAPH,
                Stage.FX_PASS,
                args={
                    "pass": watch.passname,
                    "nodes_before": len(watch.names),
                    "nodes_after": len(after),
                    "erased": len(erased),
                    "created": len(created),
                },
                detail=(
                    f"{watch.passname}: {len(watch.names)} -> {len(after)} nodes "
                    f"({len(erased)} erased, {len(created)} created)"
                ),
                graph=_compile_key(),
            ),
        )
    )


@_guarded
def record_pattern_matches(pass_name: str, count: int) -> None:
    """Called at the end of PatternMatcherPass.apply with its match count."""
    if not count or not is_enabled():
        return
    for key, remark in reversed(_pending_fx_remarks):
        if key == _compile_key() and remark.args.get("pass") == pass_name:
            remark.args["matches"] = remark.args.get("matches", 0) + count
            return


@_guarded
def record_pass_remark(remark: Remark) -> None:
    """Keep a remark of an optional scheduler pass for the graph being compiled."""
    if not is_enabled():
        return
    remark.graph = remark.graph or _compile_key()
    del _pending_fx_remarks[:-_MAX_PENDING_FX_REMARKS]
    _pending_fx_remarks.append((_compile_key(), remark))


def take_fx_pass_remarks() -> list[Remark]:
    """The FX pass remarks recorded so far for the current compile."""
    key = _compile_key()
    mine = [remark for k, remark in _pending_fx_remarks if k == key]
    _pending_fx_remarks[:] = [(k, r) for k, r in _pending_fx_remarks if k != key]
    return mine


# ---------------------------------------------------------------------------
# Scheduler hooks


def log_graph_header(nodes: Sequence[BaseSchedulerNode]) -> None:
    """Open a graph's fusion log with its compile id and the code's identity."""
    if not fusion_log.isEnabledFor(logging.DEBUG):
        return
    try:
        fusion_log.debug(
            "fusion remarks for graph %s by %s: %d scheduler nodes before fusion",
            graph_label(),
            producer_identity(),
            len(nodes),
        )
    except Exception as e:  # never fail a compile because of instrumentation
        _report_failure(e)


def begin_fusion(scheduler: Scheduler) -> None:
    """Called before ``Scheduler.fuse_nodes``: start watching the scheduler."""
    log_graph_header(scheduler.nodes)
    if not is_enabled():
        return
    try:
        recorder = current_recorder()
        if recorder is None:
            return
        recorder.base_nodes = [n.get_name() for n in scheduler.nodes]
        _watch_scheduler(scheduler, recorder)
    except Exception as e:
        _report_failure(e)


@_guarded
def record_why_no_fuse(why: WhyNoFuse) -> None:
    """Called by ``WhyNoFuse.__call__``: upstream's text for a rejection."""
    if not is_enabled():
        return
    recorder = current_recorder(create=False)
    if recorder is not None and recorder._depth > 0:
        recorder._why.append((why.reason, tuple(why.args), why.name1, why.name2))


def _base_names(node: BaseSchedulerNode) -> frozenset[str]:
    return frozenset(n.get_name() for n in node.get_nodes())


def _watch_scheduler(scheduler: Scheduler, recorder: GraphRecorder) -> None:
    """Wrap this scheduler's decision methods (on the instance) to record verdicts.

    Wrapping the instance keeps the upstream patch to one line and leaves the
    class, and every other scheduler, untouched.
    """
    can_fuse = scheduler.can_fuse
    create_cycle = scheduler.will_fusion_create_cycle
    speedup = scheduler.speedup_by_fusion
    get_backend = scheduler.get_backend
    wrapped_backends: set[int] = set()

    def watched_can_fuse(node1: Any, node2: Any, *args: Any, **kwargs: Any) -> bool:
        outermost = recorder._depth == 0
        if outermost:
            recorder._why.clear()
            recorder._silent.clear()
        recorder._depth += 1
        try:
            result = can_fuse(node1, node2, *args, **kwargs)
        finally:
            recorder._depth -= 1
        if outermost and not result and _forcing is not None:
            # fusion_check: re-evaluate the target pair with one heuristic off.
            result = _forcing.reconsider(
                scheduler, recorder, can_fuse, node1, node2, args, kwargs
            )
        if outermost:
            _record_verdict(scheduler, recorder, node1, node2, result)
        return result

    def watched_create_cycle(node1: Any, node2: Any) -> bool:
        result = create_cycle(node1, node2)
        if result and _forcing is not None:
            _forcing.note_cycle(recorder, node1, node2)
        if result:
            _replace_last_verdict(
                recorder, node1, node2, Reason.WOULD_CREATE_CYCLE, "will create cycle"
            )
        return result

    def watched_speedup(node1: Any, node2: Any) -> Any:
        if _forcing is not None:
            forced = _forcing.forced_speedup(recorder, node1, node2)
            if forced is not None:
                return forced
        result = speedup(node1, node2)
        if (
            not getattr(result, "should_fuse", True)
            and getattr(result, "callable_fn", None) is None
        ):
            _replace_last_verdict(
                recorder,
                node1,
                node2,
                Reason.BENCHMARK_SLOWER,
                "benchmarking judged the fused kernel slower",
            )
        return result

    def watched_get_backend(device: Any) -> Any:
        backend = get_backend(device)
        if id(backend) not in wrapped_backends:
            wrapped_backends.add(id(backend))
            _watch_backend(backend, recorder)
        return backend

    scheduler.can_fuse = watched_can_fuse  # type: ignore[method-assign]
    scheduler.will_fusion_create_cycle = watched_create_cycle  # type: ignore[method-assign]
    scheduler.speedup_by_fusion = watched_speedup  # type: ignore[method-assign]
    scheduler.get_backend = watched_get_backend  # type: ignore[method-assign]


def _watch_backend(backend: Any, recorder: GraphRecorder, nested: bool = False) -> None:
    """Wrap a backend's fusion checks and codegen entry points (on the instance)."""
    from ..scheduler import BaseScheduling

    if not nested:
        for method in ("can_fuse_vertical", "can_fuse_horizontal"):
            original = getattr(backend, method, None)
            if original is not None:
                setattr(
                    backend, method, _watched_check(backend, method, original, recorder)
                )
        for method in ("codegen_node", "codegen_template"):
            original = getattr(backend, method, None)
            if original is not None:
                setattr(backend, method, _watched_codegen(original, recorder))
    original = getattr(backend, "define_kernel", None)
    if original is not None:
        backend.define_kernel = _watched_define_kernel(original, recorder)
    # Combined backends (CUDA: Triton + CUTLASS + ...) delegate to inner ones,
    # which name the kernels.
    for value in list(vars(backend).values()):
        if isinstance(value, BaseScheduling) and value is not backend:
            _watch_backend(value, recorder, nested=True)


def _watched_check(
    backend: Any, method: str, original: Callable[..., bool], recorder: GraphRecorder
) -> Callable[..., bool]:
    def watched(node1: Any, node2: Any, *args: Any, **kwargs: Any) -> bool:
        result = original(node1, node2, *args, **kwargs)
        if not result and recorder._depth > 0:
            recorder._silent.append(f"{type(backend).__name__}.{method}")
        return result

    return watched


def _watched_codegen(
    original: Callable[..., Any], recorder: GraphRecorder
) -> Callable[..., Any]:
    """Count the kernels Inductor's metric counts for each final scheduler node."""
    from .. import metrics

    def watched(node: Any, *args: Any, **kwargs: Any) -> Any:
        before = metrics.generated_kernel_count
        try:
            return original(node, *args, **kwargs)
        finally:
            try:
                name = node.get_name()
                recorder.kernel_counts[name] = (
                    recorder.kernel_counts.get(name, 0)
                    + metrics.generated_kernel_count
                    - before
                )
            except Exception as e:
                _report_failure(e)

    return watched


def _watched_define_kernel(
    original: Callable[..., Any], recorder: GraphRecorder
) -> Callable[..., Any]:
    """Remember the generated function name of each scheduler node."""

    def watched(src_code: Any, nodes: Any, *args: Any, **kwargs: Any) -> Any:
        name = original(src_code, nodes, *args, **kwargs)
        try:
            for node in nodes or ():
                get_nodes = getattr(node, "get_nodes", None)
                if get_nodes is None:
                    continue  # a marker such as EnableReduction
                for sub in get_nodes():
                    recorder.kernel_functions.setdefault(sub.get_name(), name)
        except Exception as e:
            _report_failure(e)
        return name

    return watched


def _record_verdict(
    scheduler: Scheduler,
    recorder: GraphRecorder,
    node1: Any,
    node2: Any,
    fused: bool,
) -> None:
    reason: Reason | None = None
    detail = ""
    args: dict[str, Any] = {}
    if not fused:
        reason, detail, args = _rejection_reason(scheduler, recorder, node1, node2)
    recorder.verdicts.append(
        PairVerdict(
            seq=recorder.next_seq(),
            first=_base_names(node1),
            second=_base_names(node2),
            names=(node1.get_name(), node2.get_name()),
            fused=fused,
            reason=reason,
            detail=detail,
            args=args,
            vertical=bool(
                node2.ancestors & _base_names(node1)
                if hasattr(node2, "ancestors")
                else False
            ),
        )
    )


def _replace_last_verdict(
    recorder: GraphRecorder, node1: Any, node2: Any, reason: Reason, detail: str
) -> None:
    first, second = _base_names(node1), _base_names(node2)
    for verdict in reversed(recorder.verdicts):
        if verdict.first == first and verdict.second == second:
            verdict.fused = False
            verdict.reason = reason
            verdict.detail = detail
            return


def _rejection_reason(
    scheduler: Scheduler, recorder: GraphRecorder, node1: Any, node2: Any
) -> tuple[Reason, str, dict[str, Any]]:
    """The code for a rejected pair: upstream's text if it logged one, else ours."""
    for text, args, _, _ in recorder._why:
        if text in _NOT_A_REJECTION:
            continue
        code = _WHY_NO_FUSE_CODES.get(text)
        try:
            detail = text % args if args else text
        except (TypeError, ValueError):
            detail = text
        if code is None:
            return Reason.BACKEND_REJECTED, detail, {}
        args: dict[str, Any] = {}
        if code is Reason.NO_SHARED_DATA:
            common = sorted(node1.used_buffer_names() & node2.used_buffer_names())
            if common:
                # Upstream's text reads as if nothing were shared; say what is.
                args["common_buffers"] = common
                detail += (
                    f": both access {', '.join(common)}, but at different "
                    "indices, so no memory access would be saved"
                )
        return _refine_why_no_fuse(code, node1, node2), detail, args
    if node1 is node2:
        return Reason.NOT_PROPOSED, "a node paired with itself", {}
    if node1.is_extern() or node2.is_extern():
        return Reason.EXTERN_OR_NOP, "one node is an extern kernel", {}
    if recorder._silent:
        check = recorder._silent[-1]
        if check.startswith("CppScheduling"):
            return _cpp_reason(node1, node2, check)
        return Reason.BACKEND_REJECTED, f"{check} returned False", {}
    return Reason.BACKEND_REJECTED, "Scheduler.can_fuse returned False silently", {}


def _refine_why_no_fuse(code: Reason, node1: Any, node2: Any) -> Reason:
    from .. import config

    if code is Reason.EPILOGUE_DISABLED:
        if node2.has_aliasing_or_mutation():
            return Reason.EPILOGUE_MUTATION
        if node2.is_reduction():
            return Reason.EPILOGUE_REDUCTION
        if config.epilogue_fusion:
            return Reason.TEMPLATE_KERNEL
    return code


def _cpp_reason(
    node1: Any, node2: Any, check: str
) -> tuple[Reason, str, dict[str, Any]]:
    """Say which of the C++ backend's silent rules rejected the pair."""
    from .. import config

    def ranges(node: Any) -> str:
        try:
            return str(node.group[1])
        except Exception:
            return "?"

    args = {"ranges1": ranges(node1), "ranges2": ranges(node2)}
    if node2.is_template() or node1.is_template():
        return Reason.CPP_TEMPLATE_FUSION, f"{check} returned False", args
    if check.endswith("horizontal") and (
        len(node1.get_nodes()) + len(node2.get_nodes())
        > config.cpp.max_horizontal_fusion_size
    ):
        return Reason.CPP_MAX_HORIZONTAL_SIZE, f"{check} returned False", args
    if check.endswith("vertical") and node1.is_reduction():
        return (
            Reason.CPP_REDUCTION_PRODUCER,
            f"{check}: reduction producer with ranges {args['ranges1']}, "
            f"consumer ranges {args['ranges2']}",
            args,
        )
    return (
        Reason.CPP_RANGES_INCOMPATIBLE,
        f"{check}: ranges {args['ranges1']} vs {args['ranges2']}",
        args,
    )


@contextlib.contextmanager
def watch_codegen(scheduler: Scheduler) -> Iterator[None]:
    """Wraps ``Scheduler.codegen``; on success, analyse and publish the graph."""
    from .. import metrics

    before = metrics.generated_kernel_count
    yield
    if not is_enabled():
        return
    try:
        recorder = current_recorder(create=False)
        if recorder is None or not recorder.base_nodes:
            return
        from .. import fusion_analysis, fusion_report

        report = fusion_analysis.analyze_graph(scheduler, recorder, graph_label())
        # Inductor's metric also counts kernels made while autotuning during
        # lowering; what this graph's codegen generated is the difference.
        report["generated_kernel_count"] = metrics.generated_kernel_count - before
        report["remarks"].extend(r.to_json() for r in take_fx_pass_remarks())
        report["remarks"].extend(r.to_json() for r in held_off_remarks(report))
        fusion_report.publish(report)
        recorder.published = report
    except Exception as e:
        _report_failure(e)


def held_off_remarks(report: dict[str, Any]) -> list[Remark]:
    """One ``config`` remark per option an ablation switch held off."""
    from .. import fusion_ablation

    return [
        Remark(
            Kind.ANALYSIS,
            Reason.CONFIG_HELD_OFF,
            Stage.LOWERING,
            args={"switch": switch, "option": h.option, "value": h.value},
            detail=f"config.{switch} held {h.option}={h.value!r}: {h.optimization}",
            graph=report["compile_id"],
        )
        for switch, h in fusion_ablation.held_options()
    ]


# ---------------------------------------------------------------------------
# Inductor's FX graph cache: a hit skips lowering and scheduling, so the report
# of a graph is stored with its cache entry and replayed on a hit, the way
# upstream replays metrics and trace artifacts of cached graphs.


@_guarded
def report_for_cache(graph: Any) -> dict[str, Any] | None:
    """The report of ``graph`` (a GraphLowering) to store with its cache entry.

    Called by ``CompiledFxGraph.__init__``; None when remarks were off.  The
    report is reduced to plain JSON data so that it pickles with the entry.
    """
    import json

    recorder = getattr(graph, "_fusion_recorder", None)
    report = getattr(recorder, "published", None)
    if report is None:
        return None
    return json.loads(json.dumps(report, default=str))


@_guarded
def replay_cached_report(compiled: Any) -> None:
    """Called on an FX graph cache hit with the loaded ``CompiledFxGraph``."""
    if not is_enabled():
        return
    import copy

    from .. import fusion_report

    compile_id = CompileContext.current_compile_id()
    label = str(compile_id) if compile_id is not None else "<no compile id>"
    stored = getattr(compiled, "fusion_report", None)
    if stored is None:
        fusion_log.debug(
            "graph %s: loaded from Inductor's FX graph cache (key %s), whose entry was "
            "written with fusion remarks off: %s. To explain it, compile it again "
            "with TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 or inside "
            "torch._inductor.fusion_report.capture().",
            label,
            getattr(compiled, "cache_key", "?"),
            Reason.CACHE_HIT_WITHOUT_REMARKS.value,
        )
        return
    report = copy.deepcopy(stored)
    if str(stored.get("compile_id", "")).endswith(" backward"):
        label += " backward"
    report["compiled_as"] = stored.get("compile_id")
    report["compile_id"] = label
    report["remarks"] = [
        dict(r, graph=label) if r.get("graph") else r for r in report["remarks"]
    ]
    fusion_report.publish(report, cache="replayed")
