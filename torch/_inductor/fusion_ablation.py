"""Fusion ablation: compile with operator fusion alone, or without fusion.

How much of ``torch.compile``'s speed-up is operator fusion?  Inductor fuses
and, besides, rewrites the graph with pattern passes, folds constants, pads
and relayouts tensors, reorders kernels, autotunes, captures CUDA graphs,
parallelizes and vectorizes C++ loops.  Two switches separate the two:

* ``config.fusion_only`` (``TORCHINDUCTOR_FUSION_ONLY=1``) holds off every
  optimization that is not fusion: Inductor still lowers, fuses (inlining at
  lowering, scheduler fusion, template epilogues) and generates code, and does
  nothing else that makes it faster.  :data:`FUSION_ONLY` lists each option it
  changes and why; :data:`KEPT` lists what it deliberately leaves on.  An
  entry with ``releases`` applies to that range of torch releases only (an
  option a release added, ``since("2.15.0")``; one a release removed or
  renamed, ``until("2.15.0")``); ``fusion_ablation_options`` classifies every
  option each release added since the supported release before it.
* ``config.no_fusion`` (``TORCHINDUCTOR_NO_FUSION=1``) puts every computing op
  in a kernel of its own: every lowered op is realized into its own buffer (no
  inlining into consumers) and the scheduler fuses no pair; every other
  optimization stays as configured.  Both together give the "no optimization"
  compiled baseline.

Precedence: a switch wins over whatever else asked for an option it holds
(``mode="max-autotune"`` or ``"reduce-overhead"``, ``options=``, a
``config.patch``): the option is held, and one warning per conflict names the
option, the value asked for and the value held.  The switches apply from the
top of ``compile_fx`` (so pre-grad passes see them) and, like ``mode``
options, to the backward graph compiled later.  With remarks on, each held
option leaves a ``config`` remark in the graph's fusion report.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import threading
from typing import Any, TYPE_CHECKING

import torch

from .fusion_remarks import recorder as fusion_recorder
from .fusion_remarks.model import Remark
from .fusion_remarks.taxonomy import Kind, Reason, Stage
from .fusion_remarks.releases import (
    ALL_RELEASES,
    applies_here,
    ReleaseRange,
    since,
    until,
)


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


log = logging.getLogger(__name__)

__all__ = [
    "FUSION_ONLY",
    "KEPT",
    "NO_FUSION",
    "HeldOption",
    "KeptOptimization",
    "for_this_release",
    "held_options",
]


@dataclasses.dataclass(frozen=True)
class HeldOption:
    """One config option a switch sets, and why."""

    option: str  # "pattern_matcher", "triton.cudagraphs", "functorch.cse"
    value: Any  # the value while the switch is on
    optimization: str  # what the option does, in words
    why: str  # why it counts as a non-fusion optimization (or as fusion)
    # The torch releases that have the option (fusion_remarks/releases.py): an option
    # a release lacks is held only on the releases that have it, and a new
    # release inherits it unless upstream removed it.
    releases: ReleaseRange = ALL_RELEASES


@dataclasses.dataclass(frozen=True)
class KeptOptimization:
    """Something fusion_only leaves as it is, and why."""

    what: str
    why: str
    releases: ReleaseRange = ALL_RELEASES  # as HeldOption.releases


H = HeldOption
FUSION_ONLY: tuple[HeldOption, ...] = (
    # FX graph passes.
    H(
        "pattern_matcher",
        False,
        "pattern replacements of the joint-graph and post-grad passes (mm+bias, attention (SDPA) patterns, pad_mm, int-mm fusion, ...)",
        "rewrites ops into faster ops or calls; does not decide which ops share a kernel",
    ),
    H(
        "split_cat_fx_passes",
        False,
        "pre-grad split/cat normalization and merging",
        "removes and merges split/cat ops before lowering",
    ),
    H(
        "batch_fusion",
        False,
        "pre-grad batching of parallel linears/layer norms into one batched op (GPU)",
        "replaces several ops by one batched op (a graph rewrite, not kernel fusion)",
    ),
    H(
        "group_fusion",
        False,
        "pre-grad grouping of parallel GEMMs into one grouped GEMM",
        "replaces several GEMMs by one library call",
    ),
    H(
        "pre_grad_fusion_options",
        {},
        "opt-in pre-grad group/batch fusion passes",
        "graph rewrites, as above",
    ),
    H(
        "post_grad_fusion_options",
        {},
        "opt-in post-grad group/batch fusion passes",
        "graph rewrites, as above",
    ),
    H(
        "efficient_conv_bn_eval_fx_passes",
        False,
        "conv + batch norm folding in eval mode",
        "folds weights, removes ops",
    ),
    H(
        "decompose_mem_bound_mm",
        False,
        "memory-bound matmuls decomposed into pointwise ops + reductions",
        "changes the algorithm of an op",
    ),
    H(
        "optimize_scatter_upon_const_tensor",
        False,
        "scatter into a constant tensor rewritten as a pointwise op",
        "changes the algorithm of an op",
    ),
    H("b2b_gemm_pass", False, "back-to-back GEMM pass", "a GEMM-specific rewrite"),
    H(
        "joint_graph_constant_folding",
        False,
        "constant folding in the joint graph",
        "computes ops at compile time",
    ),
    H(
        "freezing",
        False,
        "freezing: parameters inlined as constants and folded",
        "computes ops at compile time",
    ),
    H(
        "functorch.cse",
        False,
        "common-subexpression elimination on the FX graph (AOTAutograd)",
        "removes duplicate ops",
    ),
    # Padding and layout.
    H(
        "shape_padding",
        False,
        "pad_mm: matmul operands padded to aligned shapes",
        "changes shapes for faster GEMMs",
    ),
    H(
        "comprehensive_padding",
        False,
        "strides of all buffers padded to aligned sizes",
        "changes layouts for faster memory access",
    ),
    H(
        "pad_channels_last",
        False,
        "padding of channels-last buffers",
        "changes layouts",
    ),
    H(
        "layout_optimization",
        False,
        "convolution layouts chosen (channels-last) for the whole graph",
        "changes layouts",
    ),
    # Reordering and memory planning.
    H(
        "reorder_for_locality",
        False,
        "kernels reordered to keep data in cache",
        "changes kernel order",
    ),
    H(
        "reorder_for_peak_memory",
        False,
        "kernels reordered to lower peak memory",
        "changes kernel order",
    ),
    H(
        "reorder_for_compute_comm_overlap",
        False,
        "compute/communication overlap (distributed)",
        "changes kernel order",
    ),
    H(
        "aten_distributed_optimizations.enable_simple_overlap",
        False,
        "collectives moved earlier and their waits later in the kernel order, on by default (compute/communication overlap, distributed)",
        "changes kernel order",
        releases=since("2.14.1"),
    ),
    H(
        "allow_buffer_reuse",
        False,
        "a dead buffer's memory reused for a new buffer",
        "saves allocations",
    ),
    H(
        "inplace_buffers",
        False,
        "a kernel writes its output over a dead input",
        "saves allocations and memory traffic",
    ),
    H(
        "split_reductions",
        False,
        "a large reduction split into two kernels for parallelism",
        "splits one op into two kernels for occupancy",
    ),
    # Algorithms of single ops.  var/var_mean: 2.14.1 computes more of them
    # by the two-step algorithm (mean, then squared deviations) instead of
    # Welford, for throughput; 7 keeps the rule of the releases before it,
    # two-step only for the reductions small enough to unroll (below
    # unroll_reductions_threshold, 8).
    H(
        "cpp.use_two_step_variance_threshold",
        7,
        "var/var_mean rows of up to 1024 elements on the CPU computed by the two-step algorithm instead of Welford (held at 7: two-step only below unroll_reductions_threshold, as before 2.14.1)",
        "changes the algorithm of an op",
        releases=since("2.14.1"),
    ),
    H(
        "triton.use_two_step_variance_threshold",
        7,
        "fp16/bf16 var/var_mean rows of 1024 to 32768 elements in Triton computed by the two-step algorithm instead of Welford (held at 7: two-step only below unroll_reductions_threshold, as before 2.14.1)",
        "changes the algorithm of an op",
        releases=since("2.14.1"),
    ),
    # Autotuning and benchmarking, of every kind.
    H(
        "max_autotune",
        False,
        "max-autotune: GEMM/conv templates and kernel configs benchmarked",
        "autotuning",
    ),
    H("max_autotune_gemm", False, "GEMM template autotuning", "autotuning"),
    H(
        "max_autotune_pointwise",
        False,
        "pointwise kernel config autotuning",
        "autotuning",
    ),
    H(
        "coordinate_descent_tuning",
        False,
        "coordinate-descent search of kernel configs",
        "autotuning",
    ),
    H(
        "triton.autotune_pointwise",
        False,
        "several launch configs benchmarked per pointwise kernel",
        "autotuning",
    ),
    H(
        "triton.autotune_cublasLt",
        False,
        "cuBLASLt algorithm autotuning for addmm",
        "autotuning",
    ),
    H(
        "benchmark_fusion",
        False,
        "fusion decisions by benchmarking both variants",
        "autotuning of fusion choices (fusion itself stays, by its heuristics)",
    ),
    # 2.15.0 renamed benchmark_epilogue_fusion benchmark_template_fusion (and
    # made it cover prologues too); the old name is a deprecated alias there,
    # which warns when set, so each release is held by its own name.
    H(
        "benchmark_epilogue_fusion",
        False,
        "template epilogue fusions benchmarked under max-autotune",
        "autotuning of fusion choices",
        releases=until("2.15.0"),
    ),
    H(
        "benchmark_template_fusion",
        False,
        "template epilogue and prologue fusions benchmarked under max-autotune (2.15.0's name of benchmark_epilogue_fusion, now a deprecated alias of it)",
        "autotuning of fusion choices",
        releases=since("2.15.0"),
    ),
    H("benchmark_kernel", False, "kernels benchmarked while compiling", "autotuning"),
    H(
        "triton.multi_kernel",
        0,
        "several kernel variants generated and picked at run time",
        "autotuning at run time",
    ),
    # How one Triton reduction kernel accumulates (2.15.0, on by default,
    # CUDA only).  Long inner reductions around an online softmax keep
    # per-row scalar accumulators (each block is reduced before it is folded
    # into the running state) and get three launch configs of blocks up to
    # 16384, benchmarked at run time, in place of one; an argmax/argmin over
    # a whole row takes two passes (the max, then the first index of it)
    # instead of one tl.reduce.  The same ops share the same kernel and it
    # reads its rows as often: it is not fusion (unlike the fork's one-pass
    # reductions, off by default, which fold a kernel's passes over a row into
    # one).  False keeps 2.14.1's code.  (The online softmax itself comes from
    # a post-grad pattern, which pattern_matcher=False holds off already; the
    # argmax helper does not.)
    H(
        "triton.scalar_accumulators",
        False,
        "per-row scalar accumulators in long inner reductions around an online softmax, with three launch configs of larger reduction blocks benchmarked at run time in place of one, and a two-pass argmax/argmin over a whole row (CUDA)",
        "changes how one kernel reduces and autotunes its launch, not which ops share a kernel or how often it reads a row",
        releases=since("2.15.0"),
    ),
    # CUDA graphs.
    H(
        "triton.cudagraphs",
        False,
        "CUDA graphs (also as mode='reduce-overhead' asks)",
        "removes launch overhead, not memory traffic",
    ),
    # The C++ backend's loop optimizations.
    H(
        "cpp.threads",
        1,
        "OpenMP parallelization of C++ kernels (1 thread)",
        "parallelization, not fusion; eager ATen still uses its threads",
    ),
    H(
        "cpp.simdlen",
        0,
        "vectorization of C++ kernels (0 = no vector ISA)",
        "vectorization, not fusion",
    ),
)

KEPT: tuple[KeptOptimization, ...] = (
    KeptOptimization(
        "inlining at lowering, the scheduler's vertical/horizontal fusion, template epilogue/prologue fusion, combo kernels as configured, mix-order reductions, loop reordering for fusion (loop_ordering_after_fusion)",
        "this is fusion",
    ),
    KeptOptimization(
        "decompositions and lowerings of aten ops to Inductor IR, and ExternKernel calls (cuBLAS, cuDNN, oneDNN) for GEMMs and convolutions",
        "required to generate code at all; eager calls the same libraries",
    ),
    KeptOptimization(
        "kernel-level CSE, index simplification, tiling, persistent/looped reduction codegen, unrolling of small reductions",
        "how one kernel is written, inseparable from generating it",
    ),
    KeptOptimization(
        "dead-code elimination and no-op removal",
        "tracing already drops unused ops; removing no-ops changes no computation",
    ),
    KeptOptimization(
        "reinplacing of functionalized mutations and auto-functionalized custom ops",
        "required to keep the semantics of in-place ops and to avoid copies eager never makes",
    ),
    KeptOptimization(
        "user passes (post_grad_custom_pre_pass / post_pass, joint_custom_*)",
        "the user's own choice",
    ),
    KeptOptimization(
        "the fusion rules torch 2.14.1 added: realize thresholds, loop reindexing, combo-kernel limits, nested reductions, ... (the `fusion` rows of the classification of its new options, fusion_ablation_options.py)",
        "this is fusion",
        releases=since("2.14.1"),
    ),
    KeptOptimization(
        "the fusion torch 2.15.0 added or turned on: nested and staged reductions on by default (triton.nested_reduction, True), the memory-timeline fusion gate (fusion_memory_timeline_*, off by default), combo kernels' scan window of 64 nodes (combo_kernel_max_distance, was -1; combo kernels stay off by default)",
        "this is fusion: which ops share a kernel",
        releases=since("2.15.0"),
    ),
)

NO_FUSION: tuple[HeldOption, ...] = (
    H("epilogue_fusion", False, "pointwise epilogues fused into templates", "fusion"),
    H("prologue_fusion", False, "pointwise prologues fused into templates", "fusion"),
    H(
        "combo_kernels",
        False,
        "independent kernels combined into one launch",
        "horizontal fusion",
    ),
    H(
        "benchmark_epilogue_fusion",
        False,
        "benchmarking of epilogue fusions",
        "moot without fusion",
        releases=until("2.15.0"),
    ),
    H(
        "benchmark_template_fusion",
        False,
        "benchmarking of template epilogue and prologue fusions (2.15.0's name of benchmark_epilogue_fusion)",
        "moot without fusion",
        releases=since("2.15.0"),
    ),
    H(
        "triton.mix_order_reduction",
        False,
        "reductions over two orders of one tensor fused",
        "fusion",
    ),
)
del H

_FUNCTORCH = "functorch."
_warned: set[tuple[str, str, str]] = set()


def _switch(name: str) -> bool:
    # The environment's value was checked when the config was imported
    # (fusion_switches); this catches a non-bool set from code.
    value = getattr(torch._inductor.config, name)
    if not isinstance(value, bool):
        raise ValueError(f"torch._inductor.config.{name} must be a bool, got {value!r}")
    return value


def for_this_release(held: Sequence[HeldOption]) -> list[HeldOption]:
    """The entries of ``held`` that apply to the running torch release."""
    return [h for h in held if applies_here(h.releases)]


def held_options() -> list[tuple[str, HeldOption]]:
    """The options the switches now in effect hold, as (switch, option)."""
    held: list[tuple[str, HeldOption]] = []
    if _switch("fusion_only"):
        held += [("fusion_only", h) for h in for_this_release(FUSION_ONLY)]
    if _switch("no_fusion"):
        held += [("no_fusion", h) for h in for_this_release(NO_FUSION)]
    return held


def held_off_remarks(graph_label: str) -> list[Remark]:
    """One ``config_held_off`` remark per option the switches in effect hold
    off, added to each graph's report (registered with the recorder below)."""
    return [
        Remark(
            Kind.ANALYSIS,
            Reason.CONFIG_HELD_OFF,
            Stage.LOWERING,
            args={"switch": switch, "option": h.option, "value": h.value},
            detail=f"config.{switch} held {h.option}={h.value!r}: {h.optimization}",
            graph=graph_label,
        )
        for switch, h in held_options()
    ]


fusion_recorder.add_graph_remarks(held_off_remarks)


def _config_of(option: str) -> tuple[Any, str]:
    if option.startswith(_FUNCTORCH):
        return torch._functorch.config, option[len(_FUNCTORCH) :]
    return torch._inductor.config, option


_applying = threading.local()


def pending() -> bool:
    """Whether a switch is on and ``compile_held_off`` has not applied it yet.

    Called at the top of ``compile_fx``; also validates the switches, so that a
    bad value set from code (``config.fusion_only = "yes"``) fails loudly, not
    silently (a bad environment value stops the config's import).
    """
    return bool(held_options()) and not getattr(_applying, "active", False)


def _baseline(module: Any, name: str) -> Any:
    """The value of an option nobody asked for: its default, or its env value.

    (``ConfigModule._is_default`` is False for any option once patched, even
    after the patch was undone.)
    """
    from torch.utils._config_module import _UNSET_SENTINEL

    entry = module._config[name]
    alias = getattr(entry, "alias", None)
    if alias is not None:
        # A deprecated alias (2.15.0's benchmark_epilogue_fusion) has no value
        # of its own: that of the option it names.
        module_name, name = alias.rsplit(".", 1)
        target = importlib.import_module(module_name)
        if not hasattr(target, "_config"):  # a plain module's constant
            return getattr(target, name)
        return _baseline(target, name)
    for value in (entry.env_value_force, entry.env_value_default):
        if value is not _UNSET_SENTINEL:
            return value
    return entry.default


def _warn_conflicts(held: Sequence[tuple[str, HeldOption]]) -> None:
    for switch, h in held:
        module, name = _config_of(h.option)
        current = getattr(module, name)
        if current == h.value or current == _baseline(module, name):
            continue
        key = (switch, h.option, repr(current))
        if key in _warned:
            continue
        _warned.add(key)
        log.warning(
            "config.%s holds %s=%r (%s), which a mode, options= or config "
            "asked to be %r; the switch takes precedence",
            switch,
            h.option,
            h.value,
            h.optimization,
            current,
        )


def compile_held_off(
    compile_fx: Callable[..., Any],
    model_: torch.fx.GraphModule,
    example_inputs_: Sequence[Any],
    inner_compile: Callable[..., Any],
    decompositions: dict[Any, Callable[..., Any]] | None,
    ignore_shape_env: bool,
) -> Any:
    """``compile_fx`` again, with the options of the switches in effect."""
    held = held_options()
    _warn_conflicts(held)
    # The switches themselves too: the backward graph, compiled later, must
    # see them (no_fusion is read while lowering and scheduling).
    inductor: dict[str, Any] = {
        "fusion_only": torch._inductor.config.fusion_only,
        "no_fusion": torch._inductor.config.no_fusion,
    }
    inductor.update(
        (h.option, h.value) for _, h in held if not h.option.startswith(_FUNCTORCH)
    )
    functorch = {
        h.option[len(_FUNCTORCH) :]: h.value
        for _, h in held
        if h.option.startswith(_FUNCTORCH)
    }

    def patched(fn: Callable[..., Any]) -> Callable[..., Any]:
        # The backward graph is compiled after compile_fx returns: patch the
        # inner compiler too, as compile_fx does for config_patches.
        return torch._functorch.config.patch(functorch)(
            torch._inductor.config.patch(inductor)(fn)
        )

    _applying.active = True
    try:
        with (
            torch._inductor.config.patch(inductor),
            torch._functorch.config.patch(functorch),
        ):
            return compile_fx(
                model_,
                example_inputs_,
                inner_compile=patched(inner_compile),
                decompositions=decompositions,
                ignore_shape_env=ignore_shape_env,
            )
    finally:
        _applying.active = False


def realize_alone(result: Any, node: torch.fx.Node) -> None:
    """Under ``no_fusion``, realize what lowering ``node`` produced.

    Called by ``GraphLowering.run_node`` for every node: a realized value is a
    buffer of its own, computed by a kernel of its own, instead of an
    expression inlined into each consumer.
    """
    if node.op != "call_function" or not torch._inductor.config.no_fusion:
        return
    from .fusion_remarks.hooks import realize_rule
    from .ir import TensorBox

    with realize_rule(Reason.NO_FUSION):
        for value in result if isinstance(result, (list, tuple)) else (result,):
            if isinstance(value, TensorBox):
                value.realize()


def fusion_disabled() -> bool:
    """``Scheduler.can_fuse`` asks this first: no pair fuses under no_fusion."""
    return bool(torch._inductor.config.no_fusion)
