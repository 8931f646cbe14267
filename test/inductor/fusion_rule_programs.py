"""Rule programs: for each fusion reason code, a small CPU program that makes
the rule behind it fire (read by ``test_fusion_reason_rules.py`` and by
``tools/update_reason_tests_docs.py``).

Each :class:`Rule` names a reason code, a program (a function and a factory of
its inputs), the config patch under which the rule fires and, where a config
option controls the rule, the *counterfactual* patch that moves the option
out of the rule's way: compiled under it, the code must be gone from the
report.  ``why`` says why the program fires the rule.  Rules that no CPU
program can fire have ``cpu=False``: those with ``cuda=True`` have a program
that fires them on CUDA (``test_fusion_reason_rules.py``'s CUDA class runs
it, its inputs moved to the GPU), the others none; codes with no rule at all
are in :data:`UNTESTED`, each with the reason.

A reason is reported in one of four places of the fusion report's JSON
(``where``): a graph's ``boundaries``, a graph's ``remarks`` (the lowering
rules that realized a buffer, fused ops, pass remarks), the top-level
``graph_breaks``, or a graph's ``evaluated_pairs`` (a refused pair whose
kernels share no buffer, so no boundary lies between them); ``stage`` is the
stage it is reported with.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from typing import Any, TYPE_CHECKING
from unittest import mock

import torch
from torch._inductor.fusion_remarks.releases import ALL_RELEASES, ReleaseRange, since


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@dataclasses.dataclass(frozen=True)
class Rule:
    code: str
    fn: Callable[..., Any] | None = None
    inputs: Callable[[], tuple[Any, ...]] | None = None
    patch: dict[str, Any] = dataclasses.field(default_factory=dict)
    counterfactual: dict[str, Any] | None = None
    where: str = "boundary"  # "boundary", "remark", "graph_break" or "evaluated_pair"
    stage: str = "scheduler"
    compile_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    setup: Callable[[], contextlib.AbstractContextManager[Any]] | None = None
    cpu: bool = True  # False: no CPU program fires it (``why`` says why)
    cuda: bool = False  # with cpu=False: ``fn`` fires it on CUDA instead
    xfail: str | None = None  # a known bug of the report that fails the test
    releases: ReleaseRange = ALL_RELEASES  # torch releases with the rule
    why: str = ""  # why the program fires the rule (and the counterfactual removes it)
    # the values the rule's call site compared, each a key of the finding's args
    compared: tuple[str, ...] = ()


def randn(*shapes: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    """Deterministic, distinct random inputs."""
    gen = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=gen) for shape in shapes)


# -- setups -------------------------------------------------------------------


@contextlib.contextmanager
def cpu_as_launching_device() -> Iterator[None]:
    """Let the launch-bound combo pass decide on CPU kernels, as on a GPU.

    The pass skips devices whose kernels are called rather than launched (the
    CPU), and upstream's combo-kernel code generation is Triton's; as in
    ``test_launch_bound_combo.py``, the CPU is treated as a launching device
    and the combo-kernel step combines nothing, so what runs is the pass's
    cost model and its remarks (each group left apart by the step), and the
    C++ code is unchanged.
    """
    from torch._inductor.scheduler import Scheduler

    with (
        mock.patch("torch._inductor.launch_bound_combo._NO_LAUNCH_DEVICES", ()),
        mock.patch.object(
            Scheduler, "create_combo_kernel_nodes", lambda self, *a, **k: None
        ),
    ):
        yield


@contextlib.contextmanager
def combo_grouping_fails() -> Iterator[None]:
    """The launch-bound combo pass on CPU kernels (as in
    :func:`cpu_as_launching_device`) whose cost model raises: the pass's
    fallback for a graph it cannot group."""

    def fail(node: Any) -> int:
        raise RuntimeError(f"no size estimate for {node.get_name()}")

    with (
        cpu_as_launching_device(),
        mock.patch("torch._inductor.launch_bound_combo.estimated_bytes", fail),
    ):
        yield


@contextlib.contextmanager
def in_temp_dir() -> Iterator[None]:
    """Run in a fresh directory: Inductor's metric tables write CSV files to the cwd."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            yield
        finally:
            os.chdir(cwd)


# -- programs -----------------------------------------------------------------


def sin_plus_cos(x):
    return torch.sin(x) + torch.cos(x)


def softmax(x):
    return torch.softmax(x, -1)


def sin_then_cos(x):
    return x.sin().cos()


def two_outputs(x):
    return x.sin(), x.cos()


def three_outputs(x):
    return x.sin(), x.cos(), x.tan()


def reused_sum_of_three(a, b, c):
    y = a + b + c  # 3 reads, 2 users
    return y.sum(), y * 2


def reused_trig_chain(x):
    y = x.sin().cos().tan()  # 1 read, a few ops, 2 users
    return y.sum(), y * 2


def reused_exp(x):
    y = x.exp()
    return y.sum(), y * 2


def six_users(x):
    y = x * 2 + 1  # 5 ops, 1 read, 6 users
    return y + 1, y - 2, y * 3, y / 4, y.abs(), y.neg()


def sum_of_two(a, b):
    return (a + b).sum()


def sum_of_two_sorted(a, b):
    return (torch.sort(a).values + torch.sort(b).values).sum()


def trig_of_two(a, b):
    return (a.sin() * b.cos()).sum()


def long_chain(x):
    for _ in range(60):  # 120 pointwise ops in one loop body
        x = x.sin().cos()
    return x.sum()


def sum_then_two_users(x):
    s = x.sum(1)
    return s.sum(), s * 2


def sum_times_two(x):
    return x.sum() * 2


def scaled_sum_reused_by_output(x):
    s = x.sum() * 2  # 0-d, an output and read by x * s
    return s, x * s


def transposed_output(x):
    return (x.sin() * 2).t()


def single_output(x):
    return x.sin()


def sin_into_mm_and_cos(x, w):
    y = x.sin()
    return y @ w, y.cos()


def sum_into_mm_and_cos(a, b, w):
    y = a + b
    return y @ w, y.cos()


def sin_into_mm(x, w):
    return (x.sin() @ w).cos()


def mm_relu(a, b):
    return torch.relu(a @ b) * 2


def addmm_relu(x, w, b):
    return torch.relu(x @ w + b)


def sort_plus_one(x):
    return torch.sort(x).values + 1


def read_then_mutate(x):
    y = x * 2
    x.add_(1)
    return y


def cat_sin_cos(x):
    return torch.cat([x.sin(), x.cos()]) * 2


def cat_uint8(x, y):
    return torch.cat([x + 1, y * 2])


def uint8_inputs():
    x = torch.arange(128, dtype=torch.uint8).view(2, 8, 8)
    return x[0].clone(), x[1].clone()


def two_halves(x):
    return x[:4] * 2, x[4:] * 3


def sin_plus_flipped(x):
    y = x.sin()
    return y, y + y.flip(0)


def mm_between(x, w):
    a = x * 2
    m = a @ w  # a -> mm -> sum -> add, and a -> add
    return a + m.sum(-1, keepdim=True)


def sin_mm_add(x, w):
    a = x.sin()
    return a + a @ w  # a -> mm -> add and a -> add


def two_mms_times_scalar(p, q, r, s, c):
    return (p @ q).sin() * c, (r @ s).sin() * c


def sin_through_mm_and_cos(x, w):
    # a.cos() fused into a's kernel is computed (and held) before the matmul
    # chain, not after it
    a = x.sin()
    big = (a @ w).exp() * 2
    return big.sum(), a.cos()


def far_apart(x, y, w):
    a = x.sin()
    for _ in range(66):
        y = y @ w
    return a, x.cos() + y


def bmm_relu(a, b):
    return torch.relu(torch.bmm(a, b)) * 2


def bmm_sum(a, b):
    return torch.bmm(a, b).sum(-1)


def bmm_into_add_(a, b, c):
    c.add_(torch.bmm(a, b))
    return c


def bmm_and_sin(a, b):
    return torch.bmm(a, b), a.sin()


def bmm_sum_and_double(a, b):
    y = torch.bmm(a, b)
    return y.sum(), y * 2


def bmm_of_scaled_sin(a, b):
    y = a.sin() * 2  # also an output, so realized before bmm is lowered
    return torch.bmm(y, b), y


def bmm_of_softmax(a, b):
    y = a.softmax(-1)  # also an output, so realized before bmm is lowered
    return torch.bmm(y, b), y


def bmm_of_sin(a, b):
    return torch.bmm(a.sin(), b)


def independent_branches(a, b, c, big):
    # four independent kernels; a, b and c move a few hundred bytes, big 32 KiB
    return a.sin() * 2, b.cos() + 1, c.sum(-1), big.exp()


def with_graph_break(x):
    y = torch.sin(x) * 2
    torch._dynamo.graph_break()
    return torch.relu(y) + 1


def cumsum_between(x):
    return x.sin().cumsum(0).cos()


def row_sum_times_x_col_sum(x):
    return (x.sum(1, keepdim=True) * x).sum(0)


def sin_reshape_cos(x):
    return x.sin().reshape(64).cos()


def sin_summed_and_broadcast(x, y):
    a = x.sin()  # [8]: summed, and broadcast against y [8, 8]
    return a.sum(), (a + y).cos()


# -- the table ----------------------------------------------------------------


def layer_norm_two_group_amaxes(x):
    # FP8-style block scales of a normalized row at two group sizes
    y = torch.nn.functional.layer_norm(x, (x.shape[-1],))
    rows, width = x.shape
    return (
        y.view(rows, width // 32, 32).abs().amax(-1),
        y.view(rows, width // 64, 64).abs().amax(-1),
    )


def rms_norm_half_sums(x):
    # a consumer at half the row's width, but reading lanes half a row apart
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    half = x.shape[-1] // 2
    return y[:, :half] + y[:, half:]


M8 = lambda: randn((8, 8))  # noqa: E731
M8x2 = lambda: randn((8, 8), (8, 8))  # noqa: E731
M8x3 = lambda: randn((8, 8), (8, 8), (8, 8))  # noqa: E731
V64 = lambda: randn((64,))  # noqa: E731
BMM = lambda: randn((2, 8, 8), (2, 8, 8))  # noqa: E731
BRANCHES = lambda: randn((64,), (65,), (6, 11), (64, 64))  # noqa: E731
LOWERING = {"where": "remark", "stage": "lowering"}
CPP_GEMM = {"max_autotune": True, "max_autotune_gemm_backends": "CPP"}
FX = {
    "stage": "fx_fusion",
    "compile_kwargs": {"backend": "fx_fusion", "dynamic": False},
}
COMBO = {"launch_bound_combo_kernels": True, "launch_bound_combo_max_bytes": 4096}
# Refused prologues on the CPU: the scheduler also tries the reversed
# (template, producer) pair, refused as wrong_order; the boundary reports the
# producer-first verdict, the prologue rule's.
# fmt: off
RULES: tuple[Rule, ...] = (
    # ---- lowering: a value realized into a buffer (remarks of stage lowering) ----
    Rule("reuse_too_many_reads", reused_sum_of_three, M8x3, **LOWERING,
         patch={"realize_reads_threshold": 1},
         counterfactual={"realize_reads_threshold": 10**6},
         why="y = a + b + c reads 3 inputs and has 2 users: mark_reuse stores it "
             "once 3 > realize_reads_threshold; with a huge threshold it is "
             "inlined into both users (recomputed)"),
    Rule("reuse_large_inner_fn", reused_trig_chain, M8, **LOWERING,
         patch={"realize_opcount_threshold": 1},
         counterfactual={"realize_opcount_threshold": 10**6},
         why="y = x.sin().cos().tan() has 2 users and more ops than "
             "realize_opcount_threshold=1, so mark_reuse stores it; with a huge "
             "threshold it is inlined into both users"),
    Rule("acc_reads_exceeded", sum_of_two, M8x2, **LOWERING,
         patch={"realize_acc_reads_threshold": 1},
         counterfactual={"realize_acc_reads_threshold": 10**6},
         why="a + b (one user) reads 2 buffers, more than "
             "realize_acc_reads_threshold=1, so run_node's has_exceeded_max_reads "
             "stores it before the sum"),
    Rule("acc_large_inner_fn", trig_of_two, M8x2, **LOWERING,
         patch={"realize_opcount_threshold": 1},
         counterfactual={"realize_opcount_threshold": 10**6},
         why="a.sin() * b.cos() (one user, 2 reads) has more ops than "
             "realize_opcount_threshold=1 (has_large_inner_fn), so it is stored"),
    Rule("acc_reads_size_exceeded", sum_of_two_sorted, M8x2, **LOWERING,
         compared=("size_threshold",),
         patch={"realize_acc_reads_size_threshold": 1},
         counterfactual={"realize_acc_reads_size_threshold": None},
         why="x + y (one user) reads two sort outputs of 256 bytes each (graph "
             "inputs do not count), 512 bytes in all, more than "
             "realize_acc_reads_size_threshold=1 byte, so run_node's "
             "has_exceeded_max_reads stores it before the sum; the threshold is "
             "off (None) by default"),
    Rule("pointwise_opcount_limit", long_chain, M8, **LOWERING,
         patch={"realize_opcount_threshold": 30},
         counterfactual={"realize_opcount_threshold": 10**6},
         why="a chain of 120 pointwise ops on one input: past 100 ops "
             "(has_large_inner_fn(threshold=100), raised to "
             "realize_opcount_threshold when that is larger) run_node stores it; "
             "the realize_acc checks do not, as the chain has one read"),
    Rule("realize_to_strides", bmm_of_sin, lambda: randn((1, 8, 8), (1, 8, 8)),
         **LOWERING,
         patch={"post_grad_fusion_options": {"decompose_mm_pass": {}}},
         counterfactual={"post_grad_fusion_options": {}},
         why="the post-grad decompose_mm_pass rewrites a CPU bmm with batch 1 "
             "into pointwise ops and a sum, and marks its inputs "
             "inductor_realize_to_strides"),
    Rule("reduction_output", sum_then_two_users, M8, **LOWERING,
         why="a reduction is always stored"),
    Rule("graph_output", sum_times_two, M8, **LOWERING,
         why="a 0-d pointwise output (no strides to require) is realized by "
             "GraphLowering.output"),
    Rule("output_view", transposed_output, M8, **LOWERING,
         why="a graph output that is a view (a transpose) of a computed value"),
    Rule("output_stride_constraint", single_output, M8, **LOWERING,
         why="a dense graph output is required to have eager's strides "
             "(require_exact_strides)"),
    Rule("fixed_layout_for_consumer", sin_into_mm_and_cos, M8x2, **LOWERING,
         why="y = x.sin() has 2 users, one of them mm, which needs a fixed layout"),
    Rule("multi_user_extern_consumer", sum_into_mm_and_cos, M8x3, **LOWERING,
         why="y = a + b (2 reads) has 2 users, one of them mm: realize_hint "
             "stores it"),
    Rule("multi_user_with_output", scaled_sum_reused_by_output, M8, **LOWERING,
         why="a 0-d value that is a graph output and is also read by another op"),
    Rule("reuse_cpu_heavy_op", reused_exp, M8, **LOWERING,
         why="x.exp() on the CPU, with 2 users"),
    Rule("reuse_many_users", six_users, M8, **LOWERING, releases=since("2.14.1"),
         patch={"realize_cpu_opcount_threshold": 6},
         counterfactual={"realize_cpu_opcount_threshold": 6,
                         "realize_opusers_threshold": 100},
         why="y = x * 2 + 1 has 6 users, more than realize_opusers_threshold=5, "
             "and 5 ops, more than realize_cpu_opcount_threshold - 2 (but not "
             "more than the threshold, so not a large body): mark_reuse stores "
             "it; with realize_opusers_threshold=100 it is inlined into its users"),
    Rule("extern_input", sin_into_mm, M8x2, **LOWERING,
         why="mm reads x.sin() from memory"),
    Rule("readers_before_mutation", read_then_mutate, M8, **LOWERING,
         why="y = x * 2 reads x, which is then mutated in place"),
    Rule("mutation", read_then_mutate, M8, **LOWERING,
         why="x.add_(1) writes to the graph input x"),
    Rule("concat_kernel", cat_sin_cos, M8, **LOWERING,
         why="cat writes x.sin() and x.cos() into slices of its output"),
    Rule("lowering_materializes", cat_uint8, uint8_inputs, **LOWERING,
         why="the cat lowering realizes uint8 inputs on the CPU and falls back "
             "to aten"),
    # ---- the fork's ablation switches ----
    Rule("no_fusion", sin_then_cos, M8,
         patch={"no_fusion": True}, counterfactual={"no_fusion": False},
         why="config.no_fusion (fork) realizes every op and refuses every pair"),
    Rule("config_held_off", sin_then_cos, M8, **LOWERING,
         patch={"fusion_only": True}, counterfactual={"fusion_only": False},
         why="config.fusion_only (fork) holds the non-fusion optimizations off, "
             "one remark per held option"),
    # ---- FX passes ----
    Rule("fx_pass_rewrote_graph", addmm_relu, lambda: randn((8, 8), (8, 8), (8,)),
         where="remark", stage="fx_pass",
         patch={"pattern_matcher": True}, counterfactual={"pattern_matcher": False},
         why="the post-grad pattern matcher rewrites mm + bias into addmm"),
    # ---- fused: why ops share a kernel (remarks of kind fused) ----
    Rule("inlined", sin_plus_cos, M8, **LOWERING,
         why="sin and cos are inlined into add's loop body"),
    Rule("fused_vertical", softmax, M8, where="remark",
         why="softmax's reductions and pointwise ops fuse into one loop nest"),
    Rule("recomputed", reused_sum_of_three, M8x3, **LOWERING,
         why="y = a + b + c (3 reads, not more than realize_reads_threshold) is "
             "inlined into both of its users"),
    Rule("fused_template_epilogue", bmm_relu, BMM, where="remark",
         patch={**CPP_GEMM, "epilogue_fusion": True},
         why="relu and mul fuse into the C++ bmm template as its epilogue"),
    # ---- extern, fallback and template kernels ----
    Rule("extern_kernel", mm_relu, M8x2, stage="lowering",
         why="mm is an extern kernel"),
    Rule("fallback_kernel", sort_plus_one, M8, stage="lowering",
         why="sort has no lowering and runs its aten kernel"),
    Rule("template_kernel", bmm_sum_and_double, BMM,
         patch={**CPP_GEMM, "max_fusion_buffer_group_pairwise_attempts": 1},
         why="max_fusion_buffer_group_pairwise_attempts=1 proposes only "
             "neighbouring users of the bmm template's output, so bmm -> mul is "
             "never evaluated (with the default, stock 2.11.0 fails to compile "
             "this program: the C++ bmm template's epilogue asserts in ir.py's "
             "indexer)"),
    Rule("epilogue_disabled", bmm_relu, BMM,
         patch={**CPP_GEMM, "epilogue_fusion": False},
         counterfactual={**CPP_GEMM, "epilogue_fusion": True},
         why="relu after a C++ bmm template with config.epilogue_fusion off"),
    Rule("epilogue_reduction", bmm_sum, BMM, patch=CPP_GEMM,
         why="a sum after a C++ bmm template"),
    Rule("epilogue_mutation", bmm_into_add_,
         lambda: randn((2, 8, 8), (2, 8, 8), (2, 8, 8)), patch=CPP_GEMM,
         why="c.add_(bmm(a, b)): the consumer mutates c"),
    Rule("prologue_disabled", bmm_of_scaled_sin, BMM,
         patch={**CPP_GEMM, "prologue_fusion": False},
         counterfactual={**CPP_GEMM, "prologue_fusion": True},
         why="a pointwise producer of a C++ bmm template with "
             "config.prologue_fusion off (on: prologue_not_accepted)"),
    Rule("prologue_not_accepted", bmm_of_scaled_sin, BMM,
         patch={**CPP_GEMM, "prologue_fusion": True}, releases=since("2.14.1"),
         why="a pointwise producer of a C++ bmm template, which allows a "
             "prologue on none of its inputs"),
    Rule("prologue_not_pointwise", bmm_of_softmax, BMM,
         patch={**CPP_GEMM, "prologue_fusion": True},
         why="softmax (a reduction) producing a bmm template's input"),
    Rule("cpp_template_fusion", bmm_and_sin, BMM, patch=CPP_GEMM,
         why="a.sin() and the C++ bmm template both read a; the C++ backend "
             "fuses nothing horizontally with a template"),
    # ---- scheduler: legality ----
    Rule("dep_mismatch", sin_plus_flipped, M8,
         why="y + y.flip(0) reads y at the producer's indices and at reversed ones"),
    Rule("intermediate_node_between", mm_between, M8x2,
         why="a feeds add directly and through mm and sum"),
    Rule("would_create_cycle", sin_mm_add, lambda: randn((4, 4), (4, 4)), **FX,
         why="FX fusion arm: a feeds add directly and through mm; fusing a and "
             "add would make the fused kernel feed and wait for mm"),
    # ---- scheduler: heuristics ----
    Rule("no_shared_data", two_halves, M8,
         patch={"aggressive_fusion": False}, counterfactual={"aggressive_fusion": True},
         why="x[:4] * 2 and x[4:] * 3 read different halves of x; "
             "config.aggressive_fusion lets pointwise pairs with no shared data "
             "past this check (they then fail score_below_threshold)"),
    Rule("indexing_mismatch", two_halves, M8, setup=in_temp_dir,
         patch={"enabled_metric_tables": "fusion_failure_due_to_indexing_mismatch"},
         counterfactual={"enabled_metric_tables": ""},
         xfail="with the metric table enabled, stock 2.11.0 fails the compile: "
               "MetricTable.add_row asserts on the table's integer graph ids",
         why="the halves of x share x at different indices; the code replaces "
             "no_shared_data while the metric table "
             "fusion_failure_due_to_indexing_mismatch is enabled"),
    Rule("exceeds_max_fusion_size", three_outputs, M8,
         compared=("nodes", "max_fusion_size"),
         patch={"max_fusion_size": 1}, counterfactual={"max_fusion_size": 64},
         why="three outputs of x; each pair would hold 2 > max_fusion_size=1 nodes"),
    Rule("peak_memory_increase", two_mms_times_scalar,
         lambda: randn((64, 64), (64, 64), (64, 64), (64, 64), (1,)),
         compared=("memory_overhead", "bandwidth_saving", "factor"),
         why="two pointwise nodes that share only a 1-element c, each reading a "
             "single-use 64x64 mm output: the buffers that fusing keeps alive "
             "outweigh the bytes shared (no config option: the factor 32 is "
             "fixed in Scheduler.can_fusion_increase_peak_memory)"),
    Rule("too_many_io_buffers", three_outputs, M8,
         compared=("unique_io_buffers", "max_fusion_unique_io_buffers"),
         patch={"max_fusion_unique_io_buffers": 1},
         counterfactual={"max_fusion_unique_io_buffers": None},
         why="three outputs of x; each fused pair would have 3 > "
             "max_fusion_unique_io_buffers=1 buffers"),
    Rule("score_below_threshold", two_outputs, V64,
         compared=("score", "threshold"),
         patch={"score_fusion_memory_threshold": 10**9},
         counterfactual={"score_fusion_memory_threshold": 1},
         why="x.sin() and x.cos() share the 256 bytes of x, fewer than "
             "score_fusion_memory_threshold"),
    Rule("fusion_raises_peak_memory", sin_through_mm_and_cos,
         lambda: randn((128, 128), (128, 128)), releases=since("2.15.0"),
         compared=("peak", "peak_limit", "baseline_peak"),
         patch={"fusion_memory_timeline_peak_memory_pct_threshold": 0.0},
         counterfactual={"fusion_memory_timeline_peak_memory_pct_threshold": None},
         why="fusing a.cos() into a.sin()'s kernel allocates its output before the "
             "matmul and the exp, raising the estimated peak, and a threshold of "
             "0% allows no rise; with the memory-timeline check off (its default) "
             "they fuse"),
    Rule("nodes_too_far_apart", far_apart,
         lambda: (*randn((2, 2), (2, 2)), torch.eye(2)),
         compared=("distance", "max_distance"),
         why="x.sin() and x.cos() share x with 66 mm nodes between them (no "
             "config option: the distance 64 is fixed in "
             "Scheduler.are_long_distant_nodes)"),
    Rule("not_proposed", sum_then_two_users, M8,
         patch={"max_fusion_buffer_group_pairwise_attempts": 1},
         counterfactual={"max_fusion_buffer_group_pairwise_attempts": 64},
         why="max_fusion_buffer_group_pairwise_attempts=1 proposes only "
             "neighbouring users of s: sum_1 -> mul (two apart) is never "
             "evaluated"),
    Rule("no_common_buffer", cat_sin_cos, M8,
         why="cat is written in place: sin and cos write slices of the buffer "
             "mul reads, not buffers of their own"),
    # ---- scheduler: the C++ backend ----
    Rule("cpp_reduction_producer", sum_then_two_users, M8,
         compared=("ranges1", "ranges2"),
         why="s = x.sum(1) feeds s.sum(), a reduction over other ranges"),
    Rule("cpp_ranges_incompatible", scaled_sum_reused_by_output, M8,
         compared=("ranges1", "ranges2"),
         why="a 0-d value feeds an 8x8 pointwise op"),
    Rule("cpp_max_horizontal_size", two_outputs, V64,
         patch={"cpp.max_horizontal_fusion_size": 1},
         counterfactual={"cpp.max_horizontal_fusion_size": 16},
         why="x.sin() and x.cos() would fuse horizontally; 1 + 1 nodes exceed "
             "cpp.max_horizontal_fusion_size=1"),
    # ---- graph breaks, caches ----
    Rule("graph_break", with_graph_break, M8, where="graph_break", stage="dynamo",
         why="torch._dynamo.graph_break() splits the function into two graphs"),
    Rule("cache_bypassed", sin_plus_cos, M8, where="remark", stage="cache",
         why="every graph compiled inside a capture bypasses the caches"),
    # ---- the FX fusion arm (backend="fx_fusion") ----
    Rule("fx_fused", row_sum_times_x_col_sum, M8, where="remark", **FX,
         why="FX fusion arm: x.sum(1) * x is one generated kernel"),
    Rule("fx_unsupported_op", cumsum_between, M8, **FX,
         why="FX fusion arm: cumsum has no FX fusion rule"),
    Rule("fx_iteration_space_mismatch", sin_summed_and_broadcast,
         lambda: randn((8,), (8, 8)), **FX,
         why="FX fusion arm: a = x.sin() [8] is summed and broadcast to [8, 8]"),
    Rule("fx_reduction_mismatch", row_sum_times_x_col_sum, M8, **FX,
         why="FX fusion arm: a sum over dim 0 of a value computed per row"),
    Rule("fx_view_not_folded", sin_reshape_cos, M8, **FX,
         why="FX fusion arm: a reshape that merges dims between sin and cos"),
    # ---- the launch-bound combo pass (fork) ----
    Rule("combined_launch_bound", cpu=False,
         patch=COMBO, counterfactual={**COMBO, "launch_bound_combo_kernels": False},
         why="GPU only: recorded from the combo kernels upstream's combo-kernel "
             "step made of the pass's groups, and that step's code generation "
             "is Triton's (test_launch_bound_combo.py's CUDA tests fire it)"),
    Rule("launch_bound_group_refused", independent_branches, BRANCHES,
         where="remark", stage="launch_bound_combo", setup=cpu_as_launching_device,
         patch=COMBO, counterfactual={**COMBO, "launch_bound_combo_kernels": False},
         why="three independent kernels of a few hundred bytes each are grouped, "
             "and the combo-kernel step (on the CPU, one that combines nothing) "
             "leaves them apart; on the GPU, 2.14.1's peak-memory gate "
             "(test_launch_bound_combo.py's test_peak_memory_gate_refuses)"),
    Rule("combo_not_launch_bound", independent_branches, BRANCHES,
         where="remark", stage="launch_bound_combo", setup=cpu_as_launching_device,
         patch=COMBO,
         counterfactual={**COMBO, "launch_bound_combo_max_bytes": 1 << 20},
         why="big.exp() moves 32 KiB > launch_bound_combo_max_bytes=4096 and is "
             "kept out of the combo kernel of its three independent partners; "
             "with a 1 MiB limit all four are grouped"),
    Rule("launch_bound_combo_not_applied", independent_branches, BRANCHES,
         where="remark", stage="launch_bound_combo", setup=combo_grouping_fails,
         patch=COMBO, counterfactual={**COMBO, "launch_bound_combo_kernels": False},
         why="the pass's size estimate raises for every kernel: the graph "
             "compiles with no combo kernel and the remark names the error; "
             "with the pass off there is nothing to fall back from"),
    # ---- config-controlled, but no CPU program fires them ----
    Rule("tiling_mismatch", cpu=False,
         patch={"triton.tiling_prevents_pointwise_fusion": True},
         counterfactual={"triton.tiling_prevents_pointwise_fusion": False},
         why="Triton only: config.triton.tiling_prevents_pointwise_fusion, "
             "checked by the SIMD (Triton) scheduling, not by the C++ backend"),
    Rule("reduction_tiling_invalid", cpu=False,
         patch={"triton.tiling_prevents_reduction_fusion": True},
         counterfactual={"triton.tiling_prevents_reduction_fusion": False},
         why="Triton only: config.triton.tiling_prevents_reduction_fusion, "
             "checked by the SIMD (Triton) scheduling, not by the C++ backend"),
    Rule("nested_reduction_append_failed", layer_norm_two_group_amaxes,
         lambda: randn((64, 1024)), cpu=False, cuda=True, where="evaluated_pair", releases=since("2.15.0"),
         patch={"triton.nested_reduction": True},
         counterfactual={"triton.nested_reduction": False},
         why="Triton only: config.triton.nested_reduction (on by default in "
             "2.15.0) fuses the layer norm's row reduction with the amax over "
             "groups of 32 into one outer-plus-grouped pipeline; no plan appends "
             "the second amax, over groups of 64, which recomputes the norm in "
             "a kernel of its own (no boundary: the refused pair is an "
             "evaluated pair)"),
    Rule("nested_reduction_placement_mismatch", cpu=False, releases=since("2.15.0"),
         patch={"triton.nested_reduction": True},
         counterfactual={"triton.nested_reduction": False},
         why="Triton only: config.triton.nested_reduction (on by default in "
             "2.15.0) plans nested and staged reductions for the SIMD scheduling: "
             "the pipeline's producer runs on another stream or memory pool; no program found yet (none of the 21 candidates of "
             "benchmarks/fusion/probes/nested_reduction_probe.py fired it on the H100)"),
    Rule("sub_parent_epilogue_planning_failed", rms_norm_half_sums,
         lambda: randn((64, 1024)), cpu=False, cuda=True, where="evaluated_pair", releases=since("2.15.0"),
         patch={"triton.nested_reduction": True},
         counterfactual={"triton.nested_reduction": False},
         why="Triton only: config.triton.nested_reduction (on by default in "
             "2.15.0): the consumer has half the row's elements, the rate of a "
             "sub-parent epilogue (2 lanes to 1), but reads its two inputs half "
             "a row apart, not in adjacent lanes, so no complete plan exists; "
             "the consumer recomputes the norm (an evaluated pair, no boundary)"),
    Rule("sub_parent_epilogue_partial", cpu=False, releases=since("2.15.0"),
         patch={"triton.nested_reduction": True},
         counterfactual={"triton.nested_reduction": False},
         why="Triton only: config.triton.nested_reduction (on by default in "
             "2.15.0) plans nested and staged reductions for the SIMD scheduling: "
             "a consumer only partly in the reduction's sub-parent epilogue; no program found yet (none of the 21 candidates of "
             "benchmarks/fusion/probes/nested_reduction_probe.py fired it on the H100)"),
    Rule("sub_parent_epilogue_invalid", cpu=False, releases=since("2.15.0"),
         patch={"triton.nested_reduction": True},
         counterfactual={"triton.nested_reduction": False},
         why="Triton only: config.triton.nested_reduction (on by default in "
             "2.15.0) plans nested and staged reductions for the SIMD scheduling: "
             "the SIMD backend rejects a sub-parent epilogue; no program found yet (none of the 21 candidates of "
             "benchmarks/fusion/probes/nested_reduction_probe.py fired it on the H100)"),
    Rule("staged_dependency_unproven", cpu=False, releases=since("2.15.0"),
         patch={"triton.nested_reduction": True},
         counterfactual={"triton.nested_reduction": False},
         why="Triton only: config.triton.nested_reduction (on by default in "
             "2.15.0) plans nested and staged reductions for the SIMD scheduling: "
             "a staged plan whose cross-stage reads are not proved; no program found yet (none of the 21 candidates of "
             "benchmarks/fusion/probes/nested_reduction_probe.py fired it on the H100)"),
    Rule("staged_reduction_plan_lost", cpu=False, releases=since("2.15.0"),
         patch={"triton.nested_reduction": True},
         counterfactual={"triton.nested_reduction": False},
         why="Triton only: config.triton.nested_reduction (on by default in "
             "2.15.0) plans nested and staged reductions for the SIMD scheduling: "
             "a fusion that would lose a staged reduction's plan; no program found yet (none of the 21 candidates of "
             "benchmarks/fusion/probes/nested_reduction_probe.py fired it on the H100)"),
    Rule("benchmark_slower", cpu=False,
         patch={"benchmark_fusion": True}, counterfactual={"benchmark_fusion": False},
         why="GPU only: config.benchmark_fusion benchmarks Triton kernels"),
)
# fmt: on

# Codes with no rule program, and why.
UNTESTED: dict[str, str] = {
    "fused_horizontal": "never reported: horizontal fusions join no producer -> consumer edge, and the analysis emits fused remarks only for edges",
    "fused_template_prologue": "GPU only: prologue fusion is implemented for Triton templates only",
    "grouped_node": "needs distributed: grouped scheduler nodes come from compute/communication overlap",
    "extern_or_nop": "never a boundary on the CPU: the scheduler proposes no pair with an extern or nop node (Scheduler.unfusable_node), and a boundary next to an extern kernel is extern_kernel",
    "wrong_order": "refuses only the reversed try of two dependent nodes (a template or foreach pair, tried both ways); a dependency boundary reports the producer-first verdict and a shared-input boundary is never made of dependent nodes, so it stays in evaluated_pairs",
    "buffer_marked_no_fuse": "needs distributed: only comm lowerings mark buffers no-fuse",
    "device_mismatch": "needs two devices (CPU and a GPU) in one graph",
    "prologue_input_not_allowed": "GPU only: a Triton template's allowed prologue inputs",
    "prologue_mutation": "GPU only: checked for Triton template prologues",
    "prologue_multi_use": "GPU only: checked for Triton template prologues",
    "prologue_increases_reads": "GPU only: checked for Triton template prologues",
    "prologue_padding": "GPU only: checked for Triton template prologues",
    "prologue_needs_upcast": "GPU only: checked for Triton template prologues",
    "foreach_incompatible": "GPU only: foreach kernels need BackendFeature.FOREACH, which the C++ backend lacks",
    "foreach_cross_dependency": "GPU only: foreach kernels need BackendFeature.FOREACH, which the C++ backend lacks",
    "reduction_contracts_incompatible": "GPU only: on 2.15.0 only the CUDA backend's can_fuse_reduction_pair refuses (an NVIDIA universal GEMM template whose epilogue reductions conflict)",
    "reduction_shape_mismatch": "GPU only: a check of the SIMD (Triton) scheduling",
    "pointwise_numel_mismatch": "GPU only: a check of the SIMD (Triton) scheduling",
    "native_matmul_tiling": "GPU only: native matmul is generated by Triton",
    "prologue_numel_mismatch": "GPU only: a check of the SIMD (Triton) scheduling",
    "pointwise_into_reduction_ranges": "GPU only: a check of the SIMD (Triton) scheduling",
    "reduction_epilogue_numel_mismatch": "GPU only: a check of the SIMD (Triton) scheduling",
    "cutlass_epilogue_unsupported": "GPU only: CUTLASS and CuteDSL templates",
    "template_backend_unfusable": "GPU only, and no machine here has the template backends (CuteDSL and NVGEMM need the CUTLASS Python DSL, FlyDSL needs ROCm); the rule's hooks are tested in test_cuda_combined_fusion_rules.py",
    "nvgemm_epilogue_rejected": "GPU only: NVGEMM templates need the CUTLASS Python DSL, absent from the GPU machine; the rule's hooks are tested in test_cuda_combined_fusion_rules.py",
    "nvgemm_bool_output": "GPU only: NVGEMM templates need the CUTLASS Python DSL, absent from the GPU machine; the rule's hooks are tested in test_cuda_combined_fusion_rules.py",
    "backend_rejected": "the catch-all for a refusal with no specific code; no known program produces it",
    "register_spilling": "GPU only: benchmarked Triton kernels",
    "no_fusible_template_choice": "GPU only: the Triton choices of an autotuned template (max-autotune)",
    "template_prologue_not_benchmarked": "GPU only: a prologue of an autotuned Triton template (max-autotune)",
    "template_layout_conflict": "GPU only: the choices of an autotuned template (max-autotune) under a layout constraint",
    "atomic_add_epilogue_disabled": "GPU only: an atomic-add epilogue of a Triton template",
    "atomic_add_prologue": "GPU only: an autotuned Triton template with an atomic-add epilogue (max-autotune)",
    "cache_replayed": "a capture bypasses the caches; tested through the fusion log in test_fusion_remarks.py",
    "cache_hit_without_remarks": "a capture bypasses the caches; tested through the fusion log in test_fusion_remarks.py",
    # The one-pass reduction pass decides Triton kernels only; its rules fire
    # (and their counterfactuals) on CUDA in test_one_pass_reductions.py.
    "one_pass_row_on_chip": "GPU only: Triton reductions; test_one_pass_reductions.py TestCuda",
    "one_pass_row_too_long": "GPU only: Triton reductions; test_one_pass_reductions.py TestCuda",
    "one_pass_too_few_rows": "GPU only: Triton reductions; test_one_pass_reductions.py TestCuda",
    "one_pass_row_at_copy_speed": "GPU only: Triton reductions; test_one_pass_reductions.py TestCuda",
    "one_pass_row_read_once": "GPU only: Triton reductions; test_one_pass_reductions_kept_loops.py TestKeptLoopsCuda",
    "one_pass_scalar_loop_faster": "GPU only, 2.15.0 on: Triton reductions with triton.scalar_accumulators; test_one_pass_reductions_kept_loops.py TestKeptLoopsCuda",
    "one_pass_sums_at_copy_speed": "GPU only: Triton reductions; test_one_pass_reductions_kept_loops.py TestKeptLoopsCuda",
    "one_pass_loop_at_copy_speed": "GPU only: Triton reductions; test_one_pass_reductions_kept_loops.py TestKeptLoopsCuda",
    "one_pass_row_split": "GPU only: Triton cooperative reductions; test_one_pass_reductions_split_rows.py TestSplitRowsCuda",
    "one_pass_dynamic_row": "GPU only: Triton reductions; test_one_pass_reductions.py TestCuda",
    "one_pass_rows_not_contiguous": "GPU only, and no program found yet: softmax over dim 0, or along a transposed dim, on CUDA gave no kernel of two phases that the pass decides (daa2c8a, reverted); the rule is tested by TestDecision in test_one_pass_reductions_decision.py",
    # Rules of 2.14.1 only (taxonomy.RELEASES); the GPU machine has 2.11.0.
    "reuse_inline_asm": "GPU only, 2.14.1 only: inline_asm_elementwise generates Triton inline assembly",
    "strict_sum_order": "GPU only, 2.14.1 only: config.numerics='strict' marks a sum strict only for Triton on CUDA",
    "stream_mismatch": "GPU only, 2.14.1 only: nodes on different CUDA streams",
    "mempool_mismatch": "GPU only, 2.14.1 only: nodes allocating from different CUDA memory pools",
    "user_kernel_epilogue": "GPU only, 2.14.1 only: epilogues of user-defined Triton kernels",
    "multi_output_template_epilogue": "GPU only, 2.14.1 only: epilogues of multi-output Triton templates",
}


def test_name(rule: Rule) -> str:
    return f"test_{rule.code}"
