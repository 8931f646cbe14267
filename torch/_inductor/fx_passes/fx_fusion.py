"""The FX fusion arm: operator fusion written with torch.fx alone.

``torch.compile(model, backend="fx_fusion")`` (``torch/_dynamo/backends/fx_fusion.py``)
traces the model with AOTAutograd into aten-level forward and backward graphs,
and this pass fuses each graph: :func:`partition` groups fusible ops,
:func:`fuse` replaces every group by one call of a kernel generated from a
:class:`~torch._inductor.fx_passes.fx_fusion_ir.KernelSpec` (C++ on the CPU,
Triton on CUDA, by ``fx_fusion_codegen.compile_kernel``), and everything else
runs as the eager aten ops it was.  Inductor's lowering and scheduler are not
used, so the two fusion strategies can be compared (both publish the same
fusion report, see ``docs/source/torch.compiler_fusion_remarks.md``).

**What fuses.** Elementwise ops with broadcasting (the ops of
``fx_fusion_ir.UNARY_OPS``/``BINARY_OPS``, ``where``, ``clamp``,
``masked_fill``, casts (``_to_copy``, ``convert_element_type``), ``clone``,
constants (``full``, ``scalar_tensor``, ``*_like``) and Python scalars); and
reductions (``sum``, ``amax``, ``amin``, ``prod``, ``max``/``min`` without
dim, ``mean`` as a sum and a division, ``var`` as two sums) with their
elementwise prologue and epilogue.  One group may hold several reductions over
the same reduced dims of the same iteration space (softmax: amax, then sum).
Views of group inputs are not folded by rewriting: they stay eager (no data
moves) and the kernel reads the view through its strides, which is the same
thing.  Views of values computed *inside* a group (permute, unsqueeze,
squeeze, expand, and view/reshape that only add or drop size-1 dims) are
followed inside the group; other views (slices, reshapes that merge dims) are
boundaries.

**The iteration space.** A group has loop dims ("axes"); a reduction marks
some of them reduced.  Each value in the group maps its tensor dims onto axes
(size-1 dims map to none) and lives at one of the IR's two levels: ``inner``
values span every axis, ``outer`` values span exactly the non-reduced axes (a
reduction's result and what is computed from it).  A value that would span
fewer axes (a smaller broadcast operand) or more (a consumer that broadcasts
the group to a larger shape) does not join (``fx_iteration_space_mismatch``),
with one exception: a pointwise group whose values are read only by the
joining node is computed again at every point of the larger space (as
Inductor inlines it).  Loop dims of two merged groups that no data relation
ties together are paired by size, so ``x.exp() / x.exp().sum(-1)[:, None]``
is one kernel.

**The algorithm** (greedy, one pass in topological order): each fusible node
tries to join the groups of the fusible values it reads (first the first such
group it fits, then every other one, merging them); a node that joins none
tries a group that reads one of its inputs at the same loop dims (horizontal
fusion of siblings: ``x.sum(-1)`` and ``x.amax(-1)``).  Every join is subject
to

* shapes: the join must leave every value at a full level, as above, values
  read across the merged groups must be read at the loop dims they are
  computed at, and a reduction must reduce an ``inner`` value over the
  group's reduced axes (``fx_reduction_mismatch``);
* data dependencies: merging must not create a cycle, i.e. no path leaving
  the merged group may come back into it (``would_create_cycle``);
* aliasing and mutation: in-place/``out=`` ops (and ``copy_`` into a mutated
  graph input) never join a group (``mutation``), and every reader of a
  mutated storage keeps its order with the mutation (extra ordering edges,
  also used by the cycle check and the final topological sort).

A group is *maximal* in this greedy sense: no single fusible node could be
added to it when that node was visited, and no two groups connected by a
consumer could be merged when that consumer was visited.  Refused pairs are
not revisited, siblings are merged only through a shared input (not through a
shared producer group), and a value is never computed in two groups (a
pointwise value read by reductions over different dims goes with the first).

Groups of a single computing op stay as their aten op unless
``single_op_kernels=True``: a kernel of one op saves no memory traffic, and
the aten kernel is already a good one.

Every boundary between two kernels (groups and aten ops) along a data edge is
explained by one reason of the taxonomy in ``torch._inductor.fusion_remarks``
(stage ``fx_fusion``), and the graph is published through
``fusion_report.publish`` in the same JSON schema as Inductor's graphs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import heapq
import math
import operator
from typing import Any, TYPE_CHECKING

import torch
import torch.fx
from torch._inductor.fx_passes.fx_fusion_ir import (
    compute_dtype,
    FLOAT_UNARY_OPS,
    InputSpec,
    KernelSpec,
    Level,
    OutputSpec,
    Stmt,
)


if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence


__all__ = [
    "FusedKernel",
    "FusionResult",
    "Group",
    "KernelPlan",
    "Partition",
    "build_kernel_plan",
    "compile_module",
    "decomposition_table",
    "fuse",
    "make_backend",
    "partition",
    "partition_graph",
    "reference_runner",
]

aten = torch.ops.aten
prims = torch.ops.prims

INNER, OUTER = Level.INNER, Level.OUTER


# ---------------------------------------------------------------------------
# Which aten ops are fusible, and how each one becomes IR statements.


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else node


_SAME_UNARY = ["abs", "neg", "relu", "floor", "ceil", "round", "trunc", "sign"]
_UNARY: dict[Any, str] = {getattr(aten, n).default: n for n in sorted(FLOAT_UNARY_OPS)}
_UNARY.update({getattr(aten, n).default: n for n in _SAME_UNARY})
_UNARY[aten.sgn.default] = "sign"

_ARITH: dict[Any, str] = {}
for _name, _overloads in {
    "add": ("Tensor", "Scalar"),
    "sub": ("Tensor", "Scalar"),
    "mul": ("Tensor", "Scalar"),
    "div": ("Tensor", "Scalar"),
    "floor_divide": ("default", "Scalar"),
    "remainder": ("Tensor", "Scalar", "Scalar_Tensor"),
    "pow": ("Tensor_Tensor", "Tensor_Scalar", "Scalar"),
    "maximum": ("default",),
    "minimum": ("default",),
    "atan2": ("default",),
    "bitwise_and": ("Tensor", "Scalar"),
    "bitwise_or": ("Tensor", "Scalar"),
    "bitwise_xor": ("Tensor", "Scalar"),
}.items():
    for _o in _overloads:
        _ARITH[getattr(getattr(aten, _name), _o)] = _name
_ARITH[aten.max.other] = "maximum"
_ARITH[aten.min.other] = "minimum"

_COMPARE: dict[Any, str] = {
    getattr(getattr(aten, n), o): n
    for n in ("eq", "ne", "lt", "le", "gt", "ge")
    for o in ("Tensor", "Scalar")
}
_LOGICAL: dict[Any, str] = {
    aten.logical_and.default: "logical_and",
    aten.logical_or.default: "logical_or",
}

_REDUCTIONS: dict[Any, str] = {
    aten.sum.dim_IntList: "sum",
    aten.sum.default: "sum",
    aten.amax.default: "amax",
    aten.amin.default: "amin",
    aten.max.default: "amax",
    aten.min.default: "amin",
    aten.prod.dim_int: "prod",
    aten.prod.default: "prod",
    aten.mean.dim: "mean",
    aten.mean.default: "mean",
    aten.var.correction: "var",
}

_VIEWS = frozenset(
    {
        aten.permute.default,
        aten.unsqueeze.default,
        aten.squeeze.dim,
        aten.squeeze.dims,
        aten.squeeze.default,
        aten.view.default,
        aten._unsafe_view.default,
        aten.reshape.default,
        aten.expand.default,
        aten.t.default,
        aten.transpose.int,
        aten.alias.default,
    }
)

# Library calls: Inductor runs them as extern kernels too.
_EXTERN = frozenset(
    {
        aten.mm,
        aten.bmm,
        aten.addmm,
        aten.baddbmm,
        aten.addbmm,
        aten.addmv,
        aten.mv,
        aten.dot,
        aten.matmul,
        aten.linear,
        aten._int_mm,
        aten.convolution,
        aten.convolution_backward,
        aten._convolution,
        aten._scaled_dot_product_flash_attention,
        aten._scaled_dot_product_efficient_attention,
        aten._scaled_dot_product_cudnn_attention,
        aten._scaled_dot_product_flash_attention_for_cpu,
        aten._scaled_mm,
    }
)


class _Refused(Exception):
    """An op, or a join, the pass cannot express; carries the report's reason."""

    def __init__(self, reason: Any, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _reason(name: str) -> Any:
    from torch._inductor.fusion_remarks import Reason

    return Reason[name]


@dataclasses.dataclass
class _Lowered:
    """How one fusible node computes its value.

    ``kind`` is ``pointwise`` (including casts and constants), ``reduction``
    or ``view`` (a view followed inside a group).  ``build`` emits the node's
    statements through an :class:`_Emitter` and returns the final one.
    """

    kind: str
    tensors: list[torch.fx.Node]
    build: Callable[[_Emitter, str], int] | None = None
    reduce_input: torch.fx.Node | None = None
    reduce_dims: tuple[int, ...] = ()
    keepdim: bool = False
    view: Callable[[tuple[int | None, ...]], tuple[int | None, ...] | None] | None = (
        None
    )


def _tensor_args(values: Iterable[Any]) -> list[torch.fx.Node]:
    out = []
    for v in values:
        if isinstance(v, torch.fx.Node) and isinstance(_val(v), torch.Tensor):
            if v not in out:
                out.append(v)
    return out


def _scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float)) and not isinstance(value, torch.Tensor)


def _promoted(*values: Any) -> str:
    vals = [_val(v) for v in values]
    if len(vals) == 1:
        return _dtype_name(vals[0].dtype)
    dtype = torch.result_type(vals[0], vals[1])
    for v in vals[2:]:
        dtype = torch.promote_types(dtype, torch.result_type(v, v))
    return _dtype_name(dtype)


def _elementwise(
    op: str,
    operands: Sequence[Any],
    operand_dtype: str | None = None,
    alpha: Any = None,
) -> Callable[[_Emitter, str], int]:
    _check_operands(operands)

    def build(e: _Emitter, out: str) -> int:
        dtype = operand_dtype or out
        args = [e.value(a, dtype) for a in operands]
        if alpha is not None and alpha != 1:
            args[1] = e.op("mul", (args[1], e.const(alpha, dtype)), dtype)
        return e.op(op, tuple(args), out)

    return build


def _check_operands(operands: Iterable[Any]) -> None:
    for a in operands:
        if isinstance(a, torch.fx.Node):
            if not isinstance(_val(a), torch.Tensor):
                raise _Refused(
                    _reason("FX_UNSUPPORTED_OP"), f"operand {a.name} is not a tensor"
                )
        elif a is not None and not _scalar(a):
            raise _Refused(
                _reason("FX_UNSUPPORTED_OP"), f"operand {a!r} is not a scalar"
            )


def _check_value(node: torch.fx.Node) -> None:
    val = _val(node)
    if not isinstance(val, torch.Tensor):
        raise _Refused(
            _reason("FX_UNSUPPORTED_OP"), "the op does not return one tensor"
        )
    if val.is_complex() or val.dtype in (
        torch.float8_e4m3fn,
        torch.float8_e5m2,
    ):
        raise _Refused(
            _reason("FX_UNSUPPORTED_OP"), f"dtype {val.dtype} is not supported"
        )
    if val.layout != torch.strided or val.is_sparse:
        raise _Refused(_reason("FX_UNSUPPORTED_OP"), "not a strided tensor")
    if any(not isinstance(s, int) for s in val.shape):
        raise _Refused(
            _reason("FX_UNSUPPORTED_OP"), "symbolic (dynamic) shapes are not supported"
        )
    if val.numel() == 0:
        raise _Refused(_reason("FX_UNSUPPORTED_OP"), "an empty tensor")


def _reduce_dims(dims: Any, ndim: int) -> tuple[int, ...]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return tuple(sorted({d % max(ndim, 1) for d in dims}))


def _lower(node: torch.fx.Node) -> _Lowered:
    """How ``node`` computes, or :class:`_Refused` saying why it cannot fuse."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        raise _Refused(_reason("FX_UNSUPPORTED_OP"), f"{target} is not an aten op")
    schema = target._schema
    if schema.is_mutable or any(
        a.alias_info is not None and a.alias_info.is_write for a in schema.arguments
    ):
        raise _Refused(_reason("MUTATION"), f"{target} writes to its input in place")
    packet = target.overloadpacket
    if packet in _EXTERN:
        raise _Refused(_reason("EXTERN_KERNEL"), f"{target} is a library call")
    _check_value(node)
    for arg in node.all_input_nodes:
        v = _val(arg)
        if isinstance(v, torch.Tensor):
            if v.device != _val(node).device:
                raise _Refused(
                    _reason("DEVICE_MISMATCH"),
                    f"{arg.name} is on {v.device}, {node.name} on {_val(node).device}",
                )
            if any(not isinstance(s, int) for s in v.shape):
                raise _Refused(
                    _reason("FX_UNSUPPORTED_OP"),
                    "symbolic (dynamic) shapes are not supported",
                )
        elif isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise _Refused(
                _reason("FX_UNSUPPORTED_OP"), f"symbolic scalar argument {arg.name}"
            )
    args, kwargs = node.args, node.kwargs

    if target in _VIEWS:
        return _lower_view(node)
    if target in _UNARY:
        return _Lowered(
            "pointwise", _tensor_args(args[:1]), _elementwise(_UNARY[target], args[:1])
        )
    if target in (aten.logical_not.default,):
        return _Lowered(
            "pointwise",
            _tensor_args(args[:1]),
            _elementwise("logical_not", args[:1], operand_dtype="bool"),
        )
    if target in (aten.bitwise_not.default, aten.isnan.default):
        name = target.overloadpacket.__name__
        src = _dtype_name(_val(args[0]).dtype)
        return _Lowered(
            "pointwise", _tensor_args(args[:1]), _elementwise(name, args[:1], src)
        )
    if target in _ARITH:
        name = _ARITH[target]
        a, b = args[0], args[1]
        alpha = kwargs.get("alpha", args[2] if len(args) > 2 else None)
        if alpha is not None and not _scalar(alpha):
            raise _Refused(_reason("FX_UNSUPPORTED_OP"), "a non-scalar alpha")
        if name == "div" and _dtype_name(_val(node).dtype) in ("bool",):
            raise _Refused(_reason("FX_UNSUPPORTED_OP"), "boolean division")
        return _Lowered(
            "pointwise", _tensor_args([a, b]), _elementwise(name, [a, b], alpha=alpha)
        )
    if target in (aten.div.Tensor_mode, aten.div.Scalar_mode):
        a, b = args[0], args[1]
        mode = kwargs.get("rounding_mode", args[2] if len(args) > 2 else None)
        if mode is None:
            return _Lowered(
                "pointwise", _tensor_args([a, b]), _elementwise("div", [a, b])
            )
        if mode == "floor":
            return _Lowered(
                "pointwise", _tensor_args([a, b]), _elementwise("floor_divide", [a, b])
            )
        if not _val(node).is_floating_point():
            raise _Refused(
                _reason("FX_UNSUPPORTED_OP"),
                "integer division with rounding_mode='trunc'",
            )

        def trunc_div(e: _Emitter, out: str) -> int:
            q = _elementwise("div", [a, b])(e, out)
            return e.op("trunc", (q,), out)

        return _Lowered("pointwise", _tensor_args([a, b]), trunc_div)
    if target in _COMPARE:
        a, b = args[0], args[1]
        return _Lowered(
            "pointwise",
            _tensor_args([a, b]),
            _elementwise(_COMPARE[target], [a, b], operand_dtype=_promoted(a, b)),
        )
    if target in _LOGICAL:
        a, b = args[0], args[1]
        return _Lowered(
            "pointwise",
            _tensor_args([a, b]),
            _elementwise(_LOGICAL[target], [a, b], operand_dtype="bool"),
        )
    if target is aten.where.self:
        cond, a, b = args[:3]

        def where(e: _Emitter, out: str) -> int:
            return e.op(
                "where",
                (e.value(cond, "bool"), e.value(a, out), e.value(b, out)),
                out,
            )

        _check_operands([cond, a, b])
        return _Lowered("pointwise", _tensor_args([cond, a, b]), where)
    if target in (aten.masked_fill.Scalar, aten.masked_fill.Tensor):
        x, mask, value = args[:3]

        def masked_fill(e: _Emitter, out: str) -> int:
            return e.op(
                "where",
                (e.value(mask, "bool"), e.value(value, out), e.value(x, out)),
                out,
            )

        _check_operands([x, mask, value])
        return _Lowered("pointwise", _tensor_args([x, mask, value]), masked_fill)
    if target in (
        aten.clamp.default,
        aten.clamp.Tensor,
        aten.clamp_min.default,
        aten.clamp_max.default,
        aten.hardtanh.default,
    ):
        return _lower_clamp(node)
    if target in (aten._to_copy.default, prims.convert_element_type.default):
        device = kwargs.get("device")
        if device is not None and torch.device(device) != _val(node).device:
            raise _Refused(_reason("DEVICE_MISMATCH"), "a copy to another device")
        if kwargs.get("layout") not in (None, torch.strided):
            raise _Refused(_reason("FX_UNSUPPORTED_OP"), "a layout change")
        return _Lowered("pointwise", _tensor_args(args[:1]), _identity(args[0]))
    if target in (aten.clone.default, aten.lift_fresh_copy.default):
        return _Lowered("pointwise", _tensor_args(args[:1]), _identity(args[0]))
    if target is aten.copy.default:  # functional copy: src broadcast to dst
        return _Lowered("pointwise", _tensor_args(args[1:2]), _identity(args[1]))
    if target in (
        aten.full.default,
        aten.scalar_tensor.default,
        aten.full_like.default,
        aten.zeros_like.default,
        aten.ones_like.default,
        aten.fill.Scalar,
        aten.zeros.default,
        aten.ones.default,
    ):
        value = {
            aten.full.default: lambda: args[1],
            aten.scalar_tensor.default: lambda: args[0],
            aten.full_like.default: lambda: args[1],
            aten.fill.Scalar: lambda: args[1],
            aten.zeros_like.default: lambda: 0,
            aten.zeros.default: lambda: 0,
            aten.ones_like.default: lambda: 1,
            aten.ones.default: lambda: 1,
        }[target]()
        if not _scalar(value):
            raise _Refused(_reason("FX_UNSUPPORTED_OP"), "a non-constant fill value")
        return _Lowered("pointwise", [], lambda e, out: e.const(value, out))
    if target in _REDUCTIONS:
        return _lower_reduction(node, _REDUCTIONS[target])
    raise _Refused(_reason("FX_UNSUPPORTED_OP"), f"no FX fusion rule for {target}")


def _identity(x: Any) -> Callable[[_Emitter, str], int]:
    _check_operands([x])
    return lambda e, out: e.value(x, out)


def _lower_clamp(node: torch.fx.Node) -> _Lowered:
    target, args, kwargs = node.target, node.args, node.kwargs
    x = args[0]
    if target is aten.clamp_min.default:
        lo, hi = args[1], None
    elif target is aten.clamp_max.default:
        lo, hi = None, args[1]
    elif target is aten.hardtanh.default:
        lo = args[1] if len(args) > 1 else kwargs.get("min_val", -1.0)
        hi = args[2] if len(args) > 2 else kwargs.get("max_val", 1.0)
    else:
        lo = args[1] if len(args) > 1 else kwargs.get("min")
        hi = args[2] if len(args) > 2 else kwargs.get("max")

    def clamp(e: _Emitter, out: str) -> int:
        v = e.value(x, out)
        if lo is not None:
            v = e.op("maximum", (v, e.value(lo, out)), out)
        if hi is not None:
            v = e.op("minimum", (v, e.value(hi, out)), out)
        return v

    _check_operands([x, lo, hi])
    return _Lowered("pointwise", _tensor_args([x, lo, hi]), clamp)


def _lower_reduction(node: torch.fx.Node, kind: str) -> _Lowered:
    args, kwargs = node.args, node.kwargs
    x = args[0]
    xval = _val(x)
    ndim = xval.dim()
    target = node.target
    if target in (
        aten.sum.default,
        aten.mean.default,
        aten.max.default,
        aten.min.default,
        aten.prod.default,
    ):
        dims, keepdim = tuple(range(ndim)), False
    elif target is aten.prod.dim_int:
        dims = _reduce_dims(args[1], ndim)
        keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    elif target is aten.var.correction:
        dims = _reduce_dims(args[1] if len(args) > 1 else kwargs.get("dim"), ndim)
        keepdim = kwargs.get("keepdim", False)
    else:
        dims = _reduce_dims(args[1] if len(args) > 1 else kwargs.get("dim"), ndim)
        keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if ndim == 0:
        dims = ()
    if kind in ("mean", "var") and not _val(node).is_floating_point():
        raise _Refused(_reason("FX_UNSUPPORTED_OP"), f"{kind} of a non-float tensor")
    count = math.prod(xval.shape[d] for d in dims)
    correction = kwargs.get("correction")
    if correction is None:
        correction = 1
    if not _scalar(correction):
        raise _Refused(_reason("FX_UNSUPPORTED_OP"), "a non-constant correction")

    def build(e: _Emitter, out: str) -> int:
        if kind in ("sum", "prod", "amax", "amin"):
            return e.reduce(kind, e.value(x, out), out)
        # mean and var: intermediates in the compute dtype, as eager does.
        acc = compute_dtype(out)
        xv = e.value(x, acc)
        mean = e.op("div", (e.reduce("sum", xv, acc), e.const(float(count), acc)), acc)
        if kind == "mean":
            return mean
        # var: the mean, then the sum of squared deviations from it.
        dev = e.op("sub", (xv, mean), acc)
        sq = e.reduce("sum", e.op("mul", (dev, dev), acc), acc)
        return e.op("div", (sq, e.const(float(max(count - correction, 0)), acc)), acc)

    return _Lowered(
        "reduction",
        _tensor_args([x]),
        build,
        reduce_input=x,
        reduce_dims=dims,
        keepdim=bool(keepdim),
    )


def _non1(shape: Sequence[int]) -> list[int]:
    return [i for i, s in enumerate(shape) if s != 1]


def _lower_view(node: torch.fx.Node) -> _Lowered:
    """A view followed inside a group: how it maps the base value's dims."""
    target, args = node.target, node.args
    base = args[0]
    in_shape = list(_val(base).shape)
    out_shape = list(_val(node).shape)

    def reshape(dims: tuple[int | None, ...]) -> tuple[int | None, ...] | None:
        a, b = _non1(in_shape), _non1(out_shape)
        if [in_shape[i] for i in a] != [out_shape[i] for i in b]:
            return None  # merges or splits dims
        out: list[int | None] = [None] * len(out_shape)
        for i, j in zip(a, b):
            out[j] = dims[i]
        return tuple(out)

    if target is aten.permute.default:
        perm = [p % max(len(in_shape), 1) for p in args[1]]
        fn = lambda dims: tuple(dims[p] for p in perm)  # noqa: E731
    elif target in (aten.t.default, aten.transpose.int):
        if target is aten.t.default:
            d0, d1 = 0, len(in_shape) - 1
        else:
            n = max(len(in_shape), 1)
            d0, d1 = args[1] % n, args[2] % n

        def fn(dims: tuple[int | None, ...]) -> tuple[int | None, ...]:
            out = list(dims)
            if len(out) > 1:
                out[d0], out[d1] = out[d1], out[d0]
            return tuple(out)

    elif target is aten.expand.default:
        fn = None  # resolved like a broadcasting elementwise op
    else:
        fn = reshape
    return _Lowered("view", [base], view=fn)


# ---------------------------------------------------------------------------
# Partition


@dataclasses.dataclass(eq=False)
class Group:
    """One fusion group: FX nodes that become one kernel.

    ``members`` are the computing nodes in graph order; ``views`` the view
    nodes of member values that the group's members read inside the kernel
    (they stay in the graph as eager views where something outside reads
    them).  ``axes`` maps each loop dim (an id) to its size, ``reduce_axes``
    the reduced ones; ``dims`` maps every member and view to the axis of each
    of its tensor dims (``None`` for size-1 dims).
    """

    id: int
    members: list[torch.fx.Node] = dataclasses.field(default_factory=list)
    views: list[torch.fx.Node] = dataclasses.field(default_factory=list)
    axes: dict[int, int] = dataclasses.field(default_factory=dict)
    reduce_axes: set[int] = dataclasses.field(default_factory=set)
    dims: dict[torch.fx.Node, tuple[int | None, ...]] = dataclasses.field(
        default_factory=dict
    )
    # The dims a member's external operands are aligned to: its own dims, or
    # for a reduction the dims of the reduced input.
    context: dict[torch.fx.Node, tuple[int | None, ...]] = dataclasses.field(
        default_factory=dict
    )
    ref: tuple[int | None, ...] = ()

    def level(self, node: torch.fx.Node) -> Level:
        if not self.reduce_axes:
            return INNER
        return INNER if set(self.dims[node]) & self.reduce_axes else OUTER

    def is_reduction(self) -> bool:
        return bool(self.reduce_axes)

    def __repr__(self) -> str:
        return f"Group({self.id}, {[m.name for m in self.members]})"


@dataclasses.dataclass
class Verdict:
    """Why a producer and a consumer did (not) end up in one group."""

    fused: bool
    reason: Any  # fusion_remarks.Reason or None
    detail: str


@dataclasses.dataclass
class Partition:
    """The result of :func:`partition_graph`: groups plus every decision."""

    graph: torch.fx.Graph
    groups: list[Group]
    lowered: dict[torch.fx.Node, _Lowered]
    refused: dict[torch.fx.Node, _Refused]  # non-fusible call_function nodes
    verdicts: dict[tuple[torch.fx.Node, torch.fx.Node], Verdict]
    pairs: list[dict[str, Any]]  # evaluated pairs, in order
    group_of: dict[torch.fx.Node, Group]
    view_of: dict[torch.fx.Node, Group]
    succ: dict[torch.fx.Node, list[torch.fx.Node]]
    index: dict[torch.fx.Node, int]
    # Groups :func:`fuse` left as aten ops (other than single ops), and why.
    not_compiled: dict[int, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Plan:
    groups: list[Group]
    rename: dict[int, int]
    axes: dict[int, int]
    reduce_axes: set[int]
    dims: tuple[int | None, ...]
    context: tuple[int | None, ...]


def _storage(val: Any) -> Any:
    from torch.multiprocessing.reductions import StorageWeakRef

    try:
        return StorageWeakRef(val.untyped_storage())
    except Exception:
        return None


def _dependency_edges(
    nodes: list[torch.fx.Node], index: dict[torch.fx.Node, int]
) -> dict[torch.fx.Node, list[torch.fx.Node]]:
    """Data edges plus ordering edges around mutations and side effects."""
    succ: dict[torch.fx.Node, list[torch.fx.Node]] = {n: [] for n in nodes}
    for n in nodes:
        for inp in n.all_input_nodes:
            if inp in succ:
                succ[inp].append(n)
    readers: dict[Any, list[torch.fx.Node]] = {}
    for n in nodes:
        for inp in n.all_input_nodes:
            ref = _storage(_val(inp)) if isinstance(_val(inp), torch.Tensor) else None
            if ref is not None:
                readers.setdefault(ref, []).append(n)
    last_impure: torch.fx.Node | None = None
    for n in nodes:
        if n.op != "call_function":
            continue
        target = n.target
        mutated: list[Any] = []
        schema = getattr(target, "_schema", None)
        if schema is not None:
            for i, a in enumerate(schema.arguments):
                if a.alias_info is not None and a.alias_info.is_write:
                    value = n.args[i] if i < len(n.args) else n.kwargs.get(a.name)
                    if isinstance(value, torch.fx.Node):
                        mutated.append(_storage(_val(value)))
        for ref in mutated:
            for r in readers.get(ref, ()):
                if r is n:
                    continue
                if index[r] < index[n]:
                    succ[r].append(n)
                else:
                    succ[n].append(r)
        impure = bool(mutated)
        with contextlib.suppress(Exception):
            impure = impure or n.is_impure()
        if impure:
            if last_impure is not None:
                succ[last_impure].append(n)
            last_impure = n
    return {n: list(dict.fromkeys(s)) for n, s in succ.items()}


class _Partitioner:
    def __init__(self, graph: torch.fx.Graph) -> None:
        self.graph = graph
        self.nodes = list(graph.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        self.succ = _dependency_edges(self.nodes, self.index)
        self.lowered: dict[torch.fx.Node, _Lowered] = {}
        self.refused: dict[torch.fx.Node, _Refused] = {}
        self.group_of: dict[torch.fx.Node, Group] = {}
        self.view_of: dict[torch.fx.Node, Group] = {}
        self.groups: list[Group] = []
        self.verdicts: dict[tuple[torch.fx.Node, torch.fx.Node], Verdict] = {}
        self.pairs: list[dict[str, Any]] = []
        self._next_axis = 0
        self._next_group = 0

    # -- helpers -------------------------------------------------------------

    def _new_axis(self, size: int) -> int:
        self._next_axis += 1
        return self._next_axis

    def _in_group(self, x: Any) -> Group | None:
        if not isinstance(x, torch.fx.Node):
            return None
        return self.group_of.get(x) or self.view_of.get(x)

    def _producers(self, x: torch.fx.Node) -> list[torch.fx.Node]:
        """The computing nodes behind ``x``, looking through views."""
        from torch._inductor.fusion_analysis import computes

        if computes(x) or x.op != "call_function":
            return [x] if computes(x) else []
        out: list[torch.fx.Node] = []
        for inp in x.all_input_nodes:
            out.extend(self._producers(inp))
        return list(dict.fromkeys(out))

    # -- the pass ------------------------------------------------------------

    def run(self) -> Partition:
        for n in self.nodes:
            if n.op != "call_function":
                continue
            try:
                low = _lower(n)
            except _Refused as e:
                self.refused[n] = e
                continue
            except Exception as e:  # an op whose arguments we misread
                self.refused[n] = _Refused(
                    _reason("FX_UNSUPPORTED_OP"), f"{type(e).__name__}: {e}"
                )
                continue
            self.lowered[n] = low
            self._visit(n, low)
        groups = [g for g in self.groups if g.members]
        return Partition(
            self.graph,
            groups,
            self.lowered,
            self.refused,
            self.verdicts,
            self.pairs,
            self.group_of,
            self.view_of,
            self.succ,
            self.index,
        )

    def _visit(self, n: torch.fx.Node, low: _Lowered) -> None:
        candidates: list[Group] = []
        producers: dict[int, list[torch.fx.Node]] = {}
        for x in low.tensors:
            g = self._in_group(x)
            if g is not None:
                if g not in candidates:
                    candidates.append(g)
                base = x if x in self.group_of else self._view_base(x)
                producers.setdefault(g.id, []).append(base)
                continue
            # A view the pass does not follow, of a value computed in a group.
            for p in self._producers(x) if x.op == "call_function" else []:
                if p is not x and self._in_group(p) is not None:
                    v = self._unfollowed_view(x, p)
                    self.verdicts[(p, n)] = Verdict(
                        False,
                        _reason("FX_VIEW_NOT_FOLDED"),
                        f"{n.name} reads {p.name} through {v.name} "
                        f"({getattr(v.target, '__name__', v.target)}"
                        f" {list(_val(v.args[0]).shape)} -> {list(_val(v).shape)})",
                    )
        if low.kind == "view":
            if not candidates:
                return  # a view of a group input: stays eager, read by strides
            plan = self._try(n, low, candidates[:1])
            if isinstance(plan, _Plan):
                self._apply(plan, n, low)
            return

        joined: list[Group] = []
        plan: _Plan | _Refused | None = None
        refusals: dict[int, _Refused] = {}
        for g in candidates:
            attempt = self._try(n, low, [g])
            if isinstance(attempt, _Plan):
                joined, plan = [g], attempt
                break
            refusals[g.id] = attempt
        if joined:
            for g in candidates:
                if g in joined:
                    continue
                attempt = self._try(n, low, [*joined, g])
                if isinstance(attempt, _Plan):
                    joined.append(g)
                    plan = attempt
                    refusals.pop(g.id, None)
                else:
                    refusals[g.id] = attempt
        for g in candidates:
            ok = g in joined
            refusal = refusals.get(g.id)
            for p in producers.get(g.id, []):
                verdict = Verdict(
                    ok,
                    None if ok else refusal.reason,
                    f"{n.name} joined the group of {p.name}" if ok else refusal.detail,
                )
                self.verdicts[(p, n)] = verdict
                self.pairs.append(
                    {
                        "first": p.name,
                        "second": n.name,
                        "fused": ok,
                        "reason": None if ok else refusal.reason.value,
                        "detail": verdict.detail,
                    }
                )
        if not joined:
            sibling = self._join_sibling(n, low)
            if sibling is not None:
                self._apply(sibling, n, low)
                return
            plan = self._try(n, low, [])
            if isinstance(plan, _Refused):
                self.refused[n] = plan
                del self.lowered[n]
                return
        assert isinstance(plan, _Plan)
        self._apply(plan, n, low)

    def _join_sibling(self, n: torch.fx.Node, low: _Lowered) -> _Plan | None:
        """Horizontal fusion: join a group that reads one of n's inputs too.

        Tried only for a node that joined no group through its own operands.
        The shared input must be read at the same loop dims in both.
        """
        tried: set[int] = set()
        for x in low.tensors:
            if self._in_group(x) is not None:
                continue
            readers = sorted(
                (u for u in x.users if u is not n and u in self.group_of),
                key=self.index.__getitem__,
                reverse=True,
            )
            for m in readers[:4]:
                g = self.group_of[m]
                if g.id in tried:
                    continue
                tried.add(g.id)
                ctx = g.context[m]
                xs = _val(x).shape
                off = len(ctx) - len(xs)
                shared = {
                    x: tuple(
                        None if xs[j] == 1 else ctx[j + off] for j in range(len(xs))
                    )
                }
                attempt = self._try(n, low, [g], shared)
                self.pairs.append(
                    {
                        "first": m.name,
                        "second": n.name,
                        "fused": isinstance(attempt, _Plan),
                        "reason": None
                        if isinstance(attempt, _Plan)
                        else attempt.reason.value,
                        "detail": f"{m.name} and {n.name} both read {x.name}"
                        + ("" if isinstance(attempt, _Plan) else f": {attempt.detail}"),
                    }
                )
                if isinstance(attempt, _Plan):
                    return attempt
        return None

    def _unfollowed_view(self, x: torch.fx.Node, p: torch.fx.Node) -> torch.fx.Node:
        """The view closest to ``p`` on the way to ``x`` that the pass did not follow."""
        chain = [x]
        while chain[-1].args and isinstance(chain[-1].args[0], torch.fx.Node):
            base = chain[-1].args[0]
            if base is p or base.op != "call_function" or base in self.group_of:
                break
            chain.append(base)
        return next((v for v in reversed(chain) if v not in self.view_of), x)

    def _view_base(self, v: torch.fx.Node) -> torch.fx.Node:
        while v in self.view_of:
            v = v.args[0]  # type: ignore[assignment]
        return v

    # -- one join attempt ----------------------------------------------------

    def _try(
        self,
        n: torch.fx.Node,
        low: _Lowered,
        groups: list[Group],
        shared: dict[torch.fx.Node, tuple[int | None, ...]] | None = None,
    ) -> _Plan | _Refused:
        try:
            plan = self._plan(n, low, groups, shared or {})
        except _Refused as e:
            return e
        if groups and low.kind != "view" and self._creates_cycle(n, groups):
            return _Refused(
                _reason("WOULD_CREATE_CYCLE"),
                f"{n.name} depends on the group of "
                f"{', '.join(g.members[0].name for g in groups)} through a node "
                "outside it",
            )
        return plan

    def _plan(
        self,
        n: torch.fx.Node,
        low: _Lowered,
        groups: list[Group],
        shared: dict[torch.fx.Node, tuple[int | None, ...]],
    ) -> _Plan:
        space = _Refused(_reason("FX_ITERATION_SPACE_MISMATCH"), "")
        parent: dict[int, int] = {}
        owner: dict[int, set[int]] = {}
        size: dict[int, int] = {}
        for g in groups:
            for a, s in g.axes.items():
                parent[a], owner[a], size[a] = a, {g.id}, s

        def find(a: int) -> int:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        def union(a: int, b: int, why: str) -> int:
            ra, rb = find(a), find(b)
            if ra == rb:
                return ra
            if owner[ra] & owner[rb] or size[ra] != size[rb]:
                space.detail = why
                raise space
            parent[rb] = ra
            owner[ra] |= owner[rb]
            return ra

        in_plan = {g.id for g in groups}

        def dims_of(x: Any) -> tuple[int | None, ...] | None:
            if x in shared:
                return shared[x]
            g = self._in_group(x)
            if g is None or g.id not in in_plan:
                return None
            return g.dims[x]

        out_shape = list(_val(n).shape)
        # 1. n's operands from the groups fix the axis of each output dim.
        cand: list[int | None] = [None] * len(out_shape)
        context: tuple[int | None, ...] | None = None
        if low.kind == "reduction":
            xd = dims_of(low.reduce_input)
            if xd is not None:
                context = xd
        elif low.kind == "view" and low.view is not None:
            bd = dims_of(low.tensors[0])
            assert bd is not None
            mapped = low.view(bd)
            if mapped is None:
                raise _Refused(
                    _reason("FX_VIEW_NOT_FOLDED"), f"{n.name} merges or splits dims"
                )
            cand = list(mapped)
        else:
            for x in low.tensors:
                xd = dims_of(x)
                if xd is None:
                    continue
                off = len(out_shape) - len(xd)
                for j, a in enumerate(xd):
                    if a is None:
                        continue
                    i = j + off
                    if cand[i] is None:
                        cand[i] = a
                    else:
                        cand[i] = union(
                            cand[i],
                            a,
                            f"{n.name} reads two loop dims of one group along "
                            f"its dim {i}",
                        )
        # 2. Values of one group that members of another read (as loads until
        # now) must agree with the dims they are computed at.
        for g in groups:
            for m in g.members:
                ctx = g.context[m]
                for x in self.lowered[m].tensors:
                    xd = dims_of(x)
                    if xd is None or self._in_group(x) is g:
                        continue
                    xs = _val(x).shape
                    off = len(ctx) - len(xs)
                    for j, a in enumerate(xd):
                        if a is not None and ctx[j + off] is not None:
                            union(
                                ctx[j + off],
                                a,
                                f"{m.name} reads {x.name} at other loop dims than "
                                "it is computed at",
                            )
        # 3. Reduced axes: one set for the merged group.
        reduce_roots: set[int] | None = None
        for g in groups:
            if not g.reduce_axes:
                continue
            if reduce_roots is None:
                reduce_roots = {find(a) for a in g.reduce_axes}
                continue
            mine = {find(a) for a in g.reduce_axes}
            free = sorted(r for r in reduce_roots if r not in mine)
            for a in sorted(g.reduce_axes):
                if find(a) in reduce_roots:
                    continue
                match = next((r for r in free if size[r] == size[find(a)]), None)
                if match is None:
                    break
                free.remove(match)
                union(match, a, "reduced dims do not pair up")
            reduce_roots = {find(r) for r in reduce_roots}
            if {find(a) for a in g.reduce_axes} != reduce_roots:
                raise _Refused(
                    _reason("FX_REDUCTION_MISMATCH"),
                    f"the groups of {groups[0].members[0].name} and "
                    f"{g.members[0].name} reduce over different dims",
                )
        if reduce_roots is not None:
            for g in groups:
                for a in g.axes:
                    if (
                        g.reduce_axes
                        and a not in g.reduce_axes
                        and find(a) in reduce_roots
                    ):
                        raise _Refused(
                            _reason("FX_REDUCTION_MISMATCH"),
                            "a reduced dim of one group is an outer dim of another",
                        )
        # Loop dims that no data relation ties together are free: pair those
        # of each group with the largest group's, by size, so that the merged
        # group iterates over the smallest space (any pairing is a valid
        # iteration order for values that do not depend on each other).
        if len(groups) > 1:
            target = max(
                groups,
                key=lambda g: (len({find(a) for a in g.axes}), bool(g.reduce_axes)),
            )
            for g in groups:
                if g is target:
                    continue
                theirs = {find(a) for a in target.axes}
                mine = {find(a) for a in g.axes}
                want = sorted(
                    theirs - mine,
                    key=lambda r: (r not in (reduce_roots or ()), r),
                )
                for a in sorted(mine - theirs):
                    match = next(
                        (
                            r
                            for r in want
                            if size[r] == size[a] and not owner[r] & owner[find(a)]
                        ),
                        None,
                    )
                    if match is not None:
                        want.remove(match)
                        union(match, a, "free dims do not pair up")
            if reduce_roots is not None:
                reduce_roots = {find(r) for r in reduce_roots}
        roots = {find(a) for a in parent}
        reduced = set(reduce_roots or ())
        inside = {n, *(m for g in groups for m in g.members)}
        absorbable = {
            g.id: not g.reduce_axes and self._only_read_inside(g, inside)
            for g in groups
        }
        # 4. n itself.
        new_axes: dict[int, int] = {}
        if low.kind == "reduction":
            x = low.reduce_input
            xshape = list(_val(x).shape)
            if context is None:
                # Starts a group: loop dims from the reduced input.
                assert not groups
                context = tuple((self._new_axis(s) if s != 1 else None) for s in xshape)
                for a, s in zip(context, xshape):
                    if a is not None:
                        new_axes[a] = s
                        roots.add(a)
                        size[a] = s
            else:
                context = tuple(find(a) if a is not None else None for a in context)
                covered = {a for a in context if a is not None}
                if reduced and not (covered & reduced):
                    raise _Refused(
                        _reason("FX_REDUCTION_MISMATCH"),
                        f"{n.name} reduces {x.name}, a value computed once per "
                        "reduced row",
                    )
                if covered != roots:
                    space.detail = (
                        f"{n.name} reduces {x.name}, which does not span the group's "
                        "loop dims"
                    )
                    raise space
            mine = {context[d] for d in low.reduce_dims if context[d] is not None}
            if mine:
                if reduced and mine != reduced:
                    raise _Refused(
                        _reason("FX_REDUCTION_MISMATCH"),
                        f"{n.name} reduces over dims {list(low.reduce_dims)} of "
                        f"{x.name}, the group over other dims",
                    )
                reduced = set(mine)
            if low.keepdim:
                dims = tuple(
                    None if i in low.reduce_dims else a for i, a in enumerate(context)
                )
            else:
                dims = tuple(
                    a for i, a in enumerate(context) if i not in low.reduce_dims
                )
        else:
            ref = (
                [
                    find(a) if a is not None and a in parent else None
                    for a in groups[0].ref
                ]
                if groups
                else []
            )
            used = {find(a) for a in cand if a is not None}
            dims_list: list[int | None] = []
            for i, s in enumerate(out_shape):
                a = cand[i]
                if a is not None:
                    dims_list.append(find(a))
                    continue
                if s == 1:
                    dims_list.append(None)
                    continue
                if not groups:
                    a = self._new_axis(s)
                    new_axes[a] = s
                    roots.add(a)
                    size[a] = s
                    dims_list.append(a)
                    continue
                choice = None
                if len(ref) == len(out_shape):
                    r = ref[i]
                    if r is not None and r not in used and size.get(r) == s:
                        choice = r
                if choice is None:
                    choice = next(
                        (r for r in sorted(roots) if r not in used and size[r] == s),
                        None,
                    )
                if choice is None and not reduced and all(absorbable.values()):
                    # The groups' values are only read here: compute them
                    # again at every point of n's larger space.
                    choice = self._new_axis(s)
                    new_axes[choice] = s
                    roots.add(choice)
                    size[choice] = s
                if choice is None:
                    space.detail = (
                        f"{n.name} has shape {out_shape}, larger than the group's "
                        f"loop dims {sorted(size[r] for r in roots)}"
                    )
                    raise space
                used.add(choice)
                dims_list.append(choice)
            dims = tuple(dims_list)
            context = dims
        outer = roots - reduced
        # 5. Every group must span the merged space (or, if pointwise, exactly
        # its outer dims), and n must be full at its level.
        for g in groups:
            mine = {find(a) for a in g.axes}
            if mine == roots:
                continue
            if not g.reduce_axes and reduced and mine == outer:
                continue
            if absorbable[g.id] and mine <= roots:
                continue  # only read inside: recomputed where it is broadcast
            space.detail = (
                f"the group of {g.members[0].name} iterates over "
                f"{sorted(size[r] for r in mine)}, the merged group over "
                f"{sorted(size[r] for r in roots)}"
            )
            raise space
        if low.kind != "view":
            covered = {a for a in dims if a is not None}
            if reduced and low.kind != "reduction" and covered & reduced:
                want = roots
            elif reduced:
                want = outer
            else:
                want = roots
            if covered != want:
                space.detail = (
                    f"{n.name} has shape {out_shape}: it would span "
                    f"{sorted(size[r] for r in covered)} of the group's loop dims "
                    f"{sorted(size[r] for r in want)}"
                )
                raise space
        rename = {a: find(a) for a in list(parent)}
        axes = {r: size[r] for r in roots}
        return _Plan(groups, rename, axes, reduced, dims, context)

    def _only_read_inside(self, g: Group, inside: set[torch.fx.Node]) -> bool:
        """Whether every reader of ``g``'s values is in ``inside`` (through views)."""

        def ok(node: torch.fx.Node) -> bool:
            for u in node.users:
                if u in inside:
                    continue
                if self.view_of.get(u) is g and ok(u):
                    continue
                return False
            return True

        return all(ok(m) for m in g.members)

    def _creates_cycle(self, n: torch.fx.Node, groups: list[Group]) -> bool:
        """Whether a path leaves ``groups`` + ``n`` and comes back into them."""
        inside: set[torch.fx.Node] = {n}
        ids = {g.id for g in groups}
        for g in groups:
            inside.update(g.members)
        limit = self.index[n]

        def internal(y: torch.fx.Node, s: torch.fx.Node) -> bool:
            vg = self.view_of.get(y)
            if vg is None:
                return False
            if s in inside:
                return vg.id in ids
            sg = self.group_of.get(s)
            return sg is vg

        stack = [
            s
            for u in inside
            for s in self.succ[u]
            if s not in inside and not internal(u, s)
        ]
        seen: set[torch.fx.Node] = set()
        while stack:
            x = stack.pop()
            if x in seen or self.index[x] > limit:
                continue
            if x in inside:
                return True
            seen.add(x)
            g = self.group_of.get(x)
            expand = g.members if g is not None and g.id not in ids else [x]
            for y in expand:
                seen.add(y)
                for s in self.succ[y]:
                    if s in inside:
                        if not internal(y, s):
                            return True
                    elif s not in seen and not internal(y, s):
                        stack.append(s)
        return False

    def _apply(self, plan: _Plan, n: torch.fx.Node, low: _Lowered) -> None:
        if plan.groups:
            base = plan.groups[0]
        else:
            self._next_group += 1
            base = Group(self._next_group)
            self.groups.append(base)
        rn = plan.rename

        def ren(d: tuple[int | None, ...]) -> tuple[int | None, ...]:
            return tuple(rn.get(a, a) if a is not None else None for a in d)

        for g in plan.groups:
            for node in g.members + g.views:
                g.dims[node] = ren(g.dims[node])
            for node in g.members:
                g.context[node] = ren(g.context[node])
            g.ref = ren(g.ref)
        for g in plan.groups[1:]:
            base.members.extend(g.members)
            base.views.extend(g.views)
            base.dims.update(g.dims)
            base.context.update(g.context)
            for m in g.members:
                self.group_of[m] = base
            for v in g.views:
                self.view_of[v] = base
            g.members, g.views = [], []
        base.members.sort(key=self.index.__getitem__)
        base.views.sort(key=self.index.__getitem__)
        base.axes = dict(plan.axes)
        base.reduce_axes = set(plan.reduce_axes)
        base.dims[n] = plan.dims
        if low.kind == "view":
            base.views.append(n)
            self.view_of[n] = base
        else:
            base.members.append(n)
            base.context[n] = plan.context
            self.group_of[n] = base
        if not base.ref:
            base.ref = plan.context


def partition_graph(graph: torch.fx.Graph) -> Partition:
    """Partition an aten-level graph (nodes carry ``meta["val"]``); see the module docstring."""
    return _Partitioner(graph).run()


def partition(gm: torch.fx.GraphModule) -> list[Group]:
    """The fusion groups of ``gm`` (of every size, in graph order of their first member)."""
    part = partition_graph(gm.graph)
    return sorted(part.groups, key=lambda g: part.index[g.members[0]])


# ---------------------------------------------------------------------------
# A group as a KernelSpec


class _Emitter:
    """Builds the SSA statements of one group, member by member."""

    def __init__(self, part: Partition, group: Group, order: list[int]) -> None:
        self.part = part
        self.group = group
        self.order = order
        self.pos = {a: i for i, a in enumerate(order)}
        self.stmts: list[Stmt] = []
        self.levels: list[Level] = []
        self.value_of: dict[torch.fx.Node, int] = {}
        self.inputs: list[InputSpec] = []
        self.input_nodes: list[torch.fx.Node] = []
        self._input_key: dict[tuple[torch.fx.Node, tuple[int, ...]], int] = {}
        self._loads: dict[tuple[int, Level], int] = {}
        self._consts: dict[tuple[Any, str, Level], int] = {}
        self._casts: dict[tuple[int, str, Level], int] = {}
        self.context: tuple[int | None, ...] = ()
        self.reduces = False

    def _add(self, stmt: Stmt) -> int:
        self.stmts.append(stmt)
        self.levels.append(stmt.level)
        return len(self.stmts) - 1

    def _level_of_axes(self, axes: Iterable[int | None]) -> Level:
        r = self.group.reduce_axes
        if not r:
            return INNER
        return INNER if {a for a in axes if a is not None} & r else OUTER

    def _const_level(self) -> Level:
        return OUTER if self.group.reduce_axes else INNER

    def const(self, value: Any, dtype: str) -> int:
        if dtype == "bool":
            value = bool(value)
        elif dtype.startswith(("int", "uint")):
            value = int(value)
        else:
            value = float(value)
        key = (value, dtype, self._const_level(), repr(value))
        if key not in self._consts:
            self._consts[key] = self._add(
                Stmt("constant", (), dtype, self._const_level(), value=value)
            )
        return self._consts[key]

    def cast(self, idx: int, dtype: str, level: Level | None = None) -> int:
        level = level or self.levels[idx]
        if self.stmts[idx].dtype == dtype and self.levels[idx] == level:
            return idx
        key = (idx, dtype, level)
        if key not in self._casts:
            self._casts[key] = self._add(Stmt("cast", (idx,), dtype, level))
        return self._casts[key]

    def op(self, name: str, args: tuple[int, ...], dtype: str) -> int:
        level = INNER if any(self.levels[a] == INNER for a in args) else OUTER
        if not self.group.reduce_axes:
            level = INNER
        return self._add(Stmt(name, tuple(args), dtype, level))

    def reduce(self, name: str, arg: int, dtype: str) -> int:
        if not self.reduces:
            return self.cast(arg, dtype)  # reduced only over size-1 dims
        if self.levels[arg] != INNER:
            arg = self._add(Stmt("cast", (arg,), self.stmts[arg].dtype, INNER))
        return self._add(Stmt(name, (arg,), dtype, OUTER))

    def value(self, x: Any, dtype: str) -> int:
        if not isinstance(x, torch.fx.Node):
            if x is None or not _scalar(x):
                raise AssertionError(f"unexpected operand {x!r}")
            return self.const(x, dtype)
        base = x
        while base in self.group.views:
            base = base.args[0]  # type: ignore[assignment]
        if base in self.value_of and self.part.group_of.get(base) is self.group:
            idx = self.value_of[base]
        else:
            idx = self._load(x)
        return self.cast(idx, dtype)

    def _load(self, x: torch.fx.Node) -> int:
        val = _val(x)
        ctx = self.context
        off = len(ctx) - val.dim()
        axes = [None if val.shape[j] == 1 else ctx[j + off] for j in range(val.dim())]
        strides = [0] * len(self.order)
        for j, a in enumerate(axes):
            if a is not None:
                strides[self.pos[a]] += val.stride(j)
        key = (x, tuple(strides))
        if key not in self._input_key:
            self._input_key[key] = len(self.inputs)
            self.inputs.append(InputSpec(_dtype_name(val.dtype), tuple(strides)))
            self.input_nodes.append(x)
        i = self._input_key[key]
        level = self._level_of_axes(axes)
        if (i, level) not in self._loads:
            self._loads[(i, level)] = self._add(
                Stmt("load", (), _dtype_name(val.dtype), level, input=i)
            )
        return self._loads[(i, level)]

    def member(self, m: torch.fx.Node) -> None:
        low = self.part.lowered[m]
        self.context = self.group.context[m]
        self.reduces = low.kind == "reduction" and any(
            self.context[d] is not None for d in low.reduce_dims
        )
        out = _dtype_name(_val(m).dtype)
        assert low.build is not None
        idx = low.build(self, out)
        idx = self.cast(idx, out)
        if self.group.level(m) == INNER and self.levels[idx] != INNER:
            idx = self._add(Stmt("cast", (idx,), out, INNER))
        self.value_of[m] = idx


@dataclasses.dataclass
class _OutputPlan:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    view_stride: tuple[int, ...]  # the buffer's element order, in the node's dims
    copy: bool  # the buffer's layout is not eager's: copy into eager's strides


@dataclasses.dataclass(eq=False)
class KernelPlan:
    """Everything :func:`fuse` needs to call one group's kernel."""

    group: Group
    spec: KernelSpec
    inputs: list[torch.fx.Node]
    outputs: list[torch.fx.Node]
    output_plans: list[_OutputPlan]
    input_layouts: list[tuple[tuple[int, ...], tuple[int, ...]]]
    device: str


def _external_users(part: Partition, group: Group, node: torch.fx.Node) -> bool:
    """Whether anything outside ``group`` reads ``node`` (through eager views too)."""
    for u in node.users:
        if part.group_of.get(u) is group:
            continue
        if part.view_of.get(u) is group:
            if _external_users(part, group, u):
                return True
            continue
        return True
    return False


def _axis_order(
    group: Group, axes: Iterable[int], ref: torch.fx.Node | None, ref_dims: Any
) -> list[int]:
    axes = list(axes)
    if ref is None:
        return sorted(axes)
    val = _val(ref)
    stride = {}
    for j, a in enumerate(ref_dims):
        if a is not None and j < val.dim():
            stride[a] = (val.stride(j), -j)
    return sorted(axes, key=lambda a: (stride.get(a, (0, 0)), -a), reverse=True)


def _spec_name(group: Group) -> str:
    names = sorted(
        {
            str(getattr(m.target, "__name__", m.target)).split(".")[0].lstrip("_")
            for m in group.members
        }
    )
    return "fx_fused_" + "_".join(names[:6])


def _aliased_axes(group: Group) -> str | None:
    """The first member whose non-broadcast dims do not map to distinct axes.

    Pairing loop dims of merged groups by size must never pair two dims of
    the same value (e.g. both dims of a causal mask ``i <= j``); this checks
    the invariant before any code is generated.
    """
    for m in group.members:
        dims = group.dims.get(m)
        if dims is None:
            continue
        val = _val(m)
        shape = tuple(val.shape) if isinstance(val, torch.Tensor) else ()
        axes = [
            a
            for j, a in enumerate(dims)
            if a is not None and (j >= len(shape) or shape[j] != 1)
        ]
        if len(axes) != len(set(axes)):
            return m.name
    return None


def build_kernel_plan(part: Partition, group: Group) -> KernelPlan | None:
    """The KernelSpec of ``group`` and how to call it; None if nothing is stored."""
    outputs = [m for m in group.members if _external_users(part, group, m)]
    if not outputs:
        return None
    reduced = group.reduce_axes
    outer_axes = [a for a in group.axes if a not in reduced]
    inner_outputs = [m for m in outputs if group.level(m) == INNER]
    first_reduction = next(
        (m for m in group.members if part.lowered[m].kind == "reduction"), None
    )
    if reduced:
        outer_ref = next((m for m in outputs if group.level(m) == OUTER), None)
        if outer_ref is not None:
            o_order = _axis_order(group, outer_axes, outer_ref, group.dims[outer_ref])
        else:
            assert first_reduction is not None
            x = part.lowered[first_reduction].reduce_input
            o_order = _axis_order(group, outer_axes, x, group.context[first_reduction])
        assert first_reduction is not None
        x = part.lowered[first_reduction].reduce_input
        r_order = _axis_order(group, reduced, x, group.context[first_reduction])
    else:
        ref = inner_outputs[0] if inner_outputs else outputs[0]
        o_order = _axis_order(group, outer_axes, ref, group.dims[ref])
        r_order = []
    order = o_order + r_order
    emitter = _Emitter(part, group, order)
    for m in group.members:
        emitter.member(m)
    out_specs = []
    plans = []
    for m in outputs:
        level = group.level(m)
        idx = emitter.value_of[m]
        assert emitter.levels[idx] == level, (m, level, emitter.levels[idx])
        out_specs.append(OutputSpec(idx, _dtype_name(_val(m).dtype)))
        buf_axes = o_order + (r_order if level == INNER else [])
        buf_stride = {}
        acc = 1
        for a in reversed(buf_axes):
            buf_stride[a] = acc
            acc *= group.axes[a]
        val = _val(m)
        dims = group.dims[m]
        view_stride = tuple(buf_stride[a] if a is not None else 0 for a in dims)
        eager = tuple(val.stride())
        copy = any(s != 1 and v != e for s, v, e in zip(val.shape, view_stride, eager))
        plans.append(_OutputPlan(tuple(val.shape), eager, view_stride, copy))
    spec = KernelSpec(
        name=_spec_name(group),
        outer_shape=tuple(group.axes[a] for a in o_order),
        reduce_shape=tuple(group.axes[a] for a in r_order),
        inputs=tuple(emitter.inputs),
        stmts=tuple(emitter.stmts),
        outputs=tuple(out_specs),
    )
    layouts = [
        (tuple(_val(x).shape), tuple(_val(x).stride())) for x in emitter.input_nodes
    ]
    device = str(_val(group.members[0]).device)
    return KernelPlan(
        group, spec, list(emitter.input_nodes), outputs, plans, layouts, device
    )


# ---------------------------------------------------------------------------
# Runners


def _torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


_REF_OPS: dict[str, Callable[..., torch.Tensor]] = {
    "abs": torch.abs,
    "neg": torch.neg,
    "reciprocal": torch.reciprocal,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log1p": torch.log1p,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "erf": torch.erf,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "sign": torch.sign,
    "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not,
    "isnan": torch.isnan,
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "floor_divide": torch.floor_divide,
    "remainder": torch.remainder,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "atan2": torch.atan2,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "where": torch.where,
}


def reference_runner(
    spec: KernelSpec, device: str
) -> Callable[..., list[torch.Tensor]]:
    """Run a KernelSpec with eager torch ops: the codegen's API, for debugging.

    Same signature and semantics as ``fx_fusion_codegen.compile_kernel``:
    ``runner(*inputs)`` reads each input through its spec strides and returns
    the outputs, contiguous in iteration order.
    """
    n_outer = len(spec.outer_shape)
    n_reduce = len(spec.reduce_shape)
    full = spec.outer_shape + spec.reduce_shape
    outer = spec.outer_shape + (1,) * n_reduce
    red_dims = tuple(range(n_outer, n_outer + n_reduce))

    def run(*inputs: torch.Tensor) -> list[torch.Tensor]:
        values: list[torch.Tensor] = []
        for st in spec.stmts:
            cdt = _torch_dtype(compute_dtype(st.dtype))
            if st.op == "load":
                assert st.input is not None
                t = inputs[st.input]
                v = torch.as_strided(
                    t, full, spec.inputs[st.input].strides, t.storage_offset()
                )
                if st.level == OUTER and n_reduce:
                    v = v[(slice(None),) * n_outer + (slice(0, 1),) * n_reduce]
                v = v.to(cdt)
            elif st.op == "constant":
                v = torch.tensor(st.value, dtype=cdt, device=device)
            elif st.op == "cast":
                v = values[st.args[0]].to(_torch_dtype(st.dtype)).to(cdt)
            elif st.op in ("sum", "prod", "amax", "amin"):
                a = values[st.args[0]]
                a = a.expand(full)
                if st.op == "sum":
                    v = a.sum(red_dims, keepdim=True, dtype=cdt)
                elif st.op == "prod":
                    v = a.reshape((*outer[:n_outer], -1)).prod(-1, dtype=cdt)
                    v = v.reshape(outer)
                elif st.op == "amax":
                    v = a.amax(red_dims, keepdim=True)
                else:
                    v = a.amin(red_dims, keepdim=True)
            else:
                fn = _REF_OPS[st.op]
                v = fn(*(values[a] for a in st.args))
                if st.op == "div" and not v.is_floating_point():
                    v = v.to(cdt)
                v = v.to(cdt)
            values.append(v)
        outs = []
        for o in spec.outputs:
            st = spec.stmts[o.stmt]
            shape = spec.outer_shape if st.level == OUTER else full
            v = values[o.stmt]
            if st.level == OUTER and n_reduce:
                v = v.expand(outer).reshape(spec.outer_shape)
            outs.append(v.expand(shape).to(_torch_dtype(o.dtype)).contiguous())
        return outs

    return run


def _codegen_runner(spec: KernelSpec, device: str) -> Callable[..., list[torch.Tensor]]:
    from torch._inductor.fx_passes import fx_fusion_codegen

    return fx_fusion_codegen.compile_kernel(spec, device)


def _codegen_available() -> bool:
    try:
        from torch._inductor.fx_passes import fx_fusion_codegen  # noqa: F401
    except ImportError:
        return False
    return True


def _get_runner(runner: Any) -> Callable[[KernelSpec, str], Callable[..., Any]]:
    if callable(runner):
        return runner
    if runner == "reference":
        return reference_runner
    if runner in (None, "codegen"):
        if runner is None and not _codegen_available():
            return reference_runner
        return _codegen_runner
    raise ValueError(f"unknown runner {runner!r}: 'codegen', 'reference' or a callable")


class FusedKernel:
    """The callable an FX graph calls for one group: the kernel plus layouts.

    Inputs are checked against the strides the spec was built for (and copied
    to them if a tensor arrives otherwise); outputs are viewed, or copied, to
    the shape and strides eager produces for each node.
    """

    def __init__(self, plan: KernelPlan, runner: Callable[..., Any], name: str) -> None:
        self.plan = plan
        self.spec = plan.spec
        self.runner = runner
        # torch.fx names a call_function target by these; a non-torch module
        # makes it a global of the generated code.
        self.__name__ = name
        self.__qualname__ = name
        self.__module__ = "fx_fusion_kernels"

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args = []
        for t, (shape, stride) in zip(inputs, self.plan.input_layouts):
            if tuple(t.shape) != shape or any(
                s != 1 and a != b for s, a, b in zip(shape, t.stride(), stride)
            ):
                fixed = torch.empty_strided(
                    shape, stride, dtype=t.dtype, device=t.device
                )
                fixed.copy_(t.expand(shape))
                t = fixed
            args.append(t)
        outs = self.runner(*args)
        results = []
        for buf, p in zip(outs, self.plan.output_plans):
            if p.copy:
                view = buf.as_strided(p.shape, p.view_stride)
                out = torch.empty_strided(
                    p.shape, p.stride, dtype=buf.dtype, device=buf.device
                )
                out.copy_(view)
            else:
                out = buf.as_strided(p.shape, p.stride)
            results.append(out)
        return tuple(results)

    def __repr__(self) -> str:
        return f"FusedKernel({self.__name__})"


# ---------------------------------------------------------------------------
# The rewrite


def _condensed_order(part: Partition, units: dict[torch.fx.Node, Any]) -> list[Any]:
    """A topological order of groups and single nodes, close to the original."""
    index = part.index
    unit_nodes: dict[Any, list[torch.fx.Node]] = {}
    for n, u in units.items():
        unit_nodes.setdefault(u, []).append(n)
    preds: dict[Any, set[Any]] = {u: set() for u in unit_nodes}
    succs: dict[Any, set[Any]] = {u: set() for u in unit_nodes}
    for n, u in units.items():
        for s in part.succ[n]:
            v = units.get(s)
            if v is None or v is u:
                continue
            vg = part.view_of.get(n)
            if vg is not None and isinstance(v, KernelPlan) and v.group is vg:
                continue  # a view the group reads inside the kernel
            preds[v].add(u)
            succs[u].add(v)
    key = {u: max(index[n] for n in ns) for u, ns in unit_nodes.items()}
    heap = [(key[u], i, u) for i, u in enumerate(unit_nodes) if not preds[u]]
    counter = len(unit_nodes)
    heapq.heapify(heap)
    order = []
    remaining = {u: len(p) for u, p in preds.items()}
    while heap:
        _, _, u = heapq.heappop(heap)
        order.append(u)
        for v in succs[u]:
            remaining[v] -= 1
            if remaining[v] == 0:
                counter += 1
                heapq.heappush(heap, (key[v], counter, v))
    if len(order) != len(unit_nodes):
        raise AssertionError("fx_fusion: the fused graph has a cycle")
    return order


@dataclasses.dataclass
class FusionResult:
    """What :func:`fuse` did, attached to the result as ``gm.meta["fx_fusion"]``."""

    partition: Partition
    kernels: list[KernelPlan]
    report: dict[str, Any]


def fuse(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any] | None = None,
    *,
    runner: Any = None,
    single_op_kernels: bool = False,
    label: str | None = None,
    publish: bool = True,
) -> torch.fx.GraphModule:
    """Fuse ``gm`` (aten level) and return a new GraphModule calling fused kernels.

    ``example_inputs`` are only needed when nodes lack ``meta["val"]`` (they
    are then propagated with fake tensors).  ``runner`` picks the kernel
    generator: ``"codegen"`` (``fx_fusion_codegen.compile_kernel``; the
    default when that module exists), ``"reference"`` (:func:`reference_runner`,
    eager torch ops) or any ``callable(spec, device) -> runner``.  With
    ``single_op_kernels`` a group of one op gets a kernel too; by default it
    stays its aten op.  ``label`` names the graph in the fusion report (its
    compile id); ``publish`` hands the report to ``fusion_report.publish`` when
    remarks are on.  The input is not modified; ``result.meta["fx_fusion"]``
    is a :class:`FusionResult`.
    """
    if example_inputs is not None and any(
        n.op == "placeholder" and "val" not in n.meta for n in gm.graph.nodes
    ):
        _propagate_fake(gm, example_inputs)
    make_runner = _get_runner(runner)
    part = partition_graph(gm.graph)
    kernels: list[KernelPlan] = []
    units: dict[torch.fx.Node, Any] = {}
    compiled: dict[int, FusedKernel] = {}
    for group in sorted(part.groups, key=lambda g: part.index[g.members[0]]):
        if len(group.members) < 2 and not single_op_kernels:
            continue
        aliased = _aliased_axes(group)
        if aliased is not None:
            # Two dims of one value paired with one loop axis would compute
            # only its diagonal: keep the group's ops as aten ops.
            part.not_compiled[group.id] = (
                f"{aliased} would map two of its dims onto one loop axis"
            )
            continue
        plan = build_kernel_plan(part, group)
        if plan is None:
            part.not_compiled[group.id] = "nothing it computes is read outside it"
            continue
        try:
            kernel_runner = make_runner(plan.spec, plan.device)
        except NotImplementedError as e:
            # The generator cannot do it (e.g. a Triton reduction too large
            # for one block): the group's ops stay aten ops.
            part.not_compiled[group.id] = (
                f"fx_fusion_codegen cannot generate its kernel: {e}"
            )
            continue
        compiled[id(plan)] = FusedKernel(
            plan, kernel_runner, f"{plan.spec.name}_{len(kernels)}"
        )
        kernels.append(plan)
        for m in group.members:
            units[m] = plan
    for n in gm.graph.nodes:
        if n.op != "output":
            units.setdefault(n, n)
    order = _condensed_order(part, units)
    compiled_groups = {id(plan.group) for plan in kernels}

    graph = torch.fx.Graph()
    graph._codegen = gm.graph._codegen
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for unit in order:
        if isinstance(unit, KernelPlan):
            kernel = compiled[id(unit)]
            call = graph.create_node(
                "call_function",
                kernel,
                tuple(env[x] for x in unit.inputs),
                {},
                name=kernel.__name__,
            )
            call.meta["val"] = tuple(_val(m) for m in unit.outputs)
            call.meta["fx_fusion_group"] = [m.name for m in unit.group.members]
            for k, m in enumerate(unit.outputs):
                out = graph.create_node(
                    "call_function", operator.getitem, (call, k), {}, name=m.name
                )
                out.meta = dict(m.meta)
                env[m] = out
            continue
        node = unit
        group = part.view_of.get(node)
        if (
            group is not None
            and id(group) in compiled_groups
            and not _external_users(part, group, node)
        ):
            continue  # read only inside its group's kernel
        env[node] = graph.node_copy(node, lambda x: env[x])
    output = next(n for n in gm.graph.nodes if n.op == "output")
    graph.node_copy(output, lambda x: env[x])
    graph.lint()
    result = torch.fx.GraphModule(gm, graph)
    report = build_report(gm.graph, part, kernels, compiled, label or "fx_fusion")
    result.meta["fx_fusion"] = FusionResult(part, kernels, report)
    if publish:
        _publish(report)
    return result


def _propagate_fake(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = [
        mode.from_tensor(x) if isinstance(x, torch.Tensor) else x
        for x in example_inputs
    ]
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fake)


# ---------------------------------------------------------------------------
# Remarks: the same report as Inductor's graphs


def _publish(report: dict[str, Any]) -> None:
    from torch._inductor import fusion_remarks, fusion_report

    if not fusion_remarks.is_enabled():
        return
    try:
        fusion_report.publish(report)
    except Exception as e:
        fusion_remarks._report_failure(e)


def _bytes(node: torch.fx.Node) -> int | None:
    val = _val(node)
    if isinstance(val, torch.Tensor) and all(isinstance(s, int) for s in val.shape):
        return int(val.numel()) * val.element_size()
    return None


def build_report(
    graph: torch.fx.Graph,
    part: Partition,
    kernels: list[KernelPlan],
    compiled: dict[int, FusedKernel],
    label: str,
) -> dict[str, Any]:
    """The graph dict of the fusion report schema for one fused graph."""
    from torch._inductor.fusion_analysis import _edges, computes, source_of
    from torch._inductor.fusion_remarks import Kind, Reason, Remark, Stage

    fx_ops = [n for n in graph.nodes if n.op == "call_function"]
    devices = sorted(
        {_val(n).device.type for n in graph.nodes if isinstance(_val(n), torch.Tensor)}
    ) or ["cpu"]
    kernel_of: dict[torch.fx.Node, str] = {}
    kernels_json: list[dict[str, Any]] = []
    entries: list[tuple[int, dict[str, Any]]] = []
    for i, plan in enumerate(kernels):
        name = f"fx{i}"
        ops = [m for m in plan.group.members if computes(m)]
        for m in plan.group.members:
            kernel_of[m] = name
        kind = "triton" if plan.device.startswith("cuda") else "cpp"
        entries.append(
            (
                part.index[plan.group.members[0]],
                {
                    "name": name,
                    "kind": kind,
                    "ops": [m.name for m in ops],
                    "function": compiled[id(plan)].__name__,
                    "generated_kernels": 1,
                },
            )
        )
    eliminated: set[torch.fx.Node] = set()
    for n in fx_ops:
        if n in kernel_of or not computes(n):
            continue
        if not n.users and not n.is_impure():
            eliminated.add(n)
            continue
        if isinstance(
            _val(n), (torch.SymInt, torch.SymFloat, torch.SymBool, int, float)
        ):
            continue  # size arithmetic: runs in Python, no kernel
        name = f"{n.name}:{n.target}"
        kernel_of[n] = name
        entries.append(
            (
                part.index[n],
                {
                    "name": name,
                    "kind": "extern",
                    "ops": [n.name],
                    "function": None,
                    "generated_kernels": 0,
                },
            )
        )
    kernels_json = [e for _, e in sorted(entries, key=lambda t: t[0])]
    ops_json = []
    for n in fx_ops:
        entry: dict[str, Any] = {
            "name": n.name,
            "target": str(n.target),
            "computes": computes(n),
            "kernels": [kernel_of[n]] if n in kernel_of else [],
            "source": source_of(n),
        }
        if n in eliminated:
            entry["eliminated"] = "dead_code"
        ops_json.append(entry)
    edges = _edges(fx_ops, eliminated)
    boundaries: list[dict[str, Any]] = []
    remarks: list[Remark] = []
    for p, c in edges:
        kp, kc = kernel_of.get(p), kernel_of.get(c)
        if kp is None or kc is None:
            continue
        sources = tuple(s for s in (source_of(p), source_of(c)) if s)
        if kp == kc:
            remarks.append(
                Remark(
                    Kind.FUSED,
                    Reason.FX_FUSED,
                    Stage.FX_FUSION,
                    nodes=(kp,),
                    ops=(p.name, c.name),
                    sources=sources,
                    detail=f"{p.name} and {c.name} are computed in {kp}",
                    graph=label,
                )
            )
            continue
        reason, detail = _boundary_reason(part, p, c)
        args: dict[str, Any] = {"buffer": p.name}
        size = _bytes(p)
        if size is not None:
            args["bytes"] = size
        boundaries.append(
            {
                "producer": p.name,
                "consumer": c.name,
                "relation": "dependency",
                "reason": reason.value,
                "category": reason.category.value,
                "stage": Stage.FX_FUSION.value,
                "fusible": False if reason.category.value == "legality" else None,
                "detail": detail,
                "kernels": [kp, kc],
                "args": args,
            }
        )
        remarks.append(
            Remark(
                Kind.MISSED,
                reason,
                Stage.FX_FUSION,
                nodes=(kp, kc),
                buffers=(p.name,),
                ops=(p.name, c.name),
                sources=sources,
                args=args,
                detail=detail,
                graph=label,
            )
        )
    n_computing = sum(1 for n in fx_ops if computes(n) and n not in eliminated)
    return {
        "compile_id": label,
        "device": ",".join(devices),
        "scheduler_nodes_before_fusion": n_computing,
        "ops": ops_json,
        "edges": [{"producer": p.name, "consumer": c.name} for p, c in edges],
        "kernels": kernels_json,
        "boundaries": boundaries,
        "remarks": [r.to_json() for r in remarks],
        "evaluated_pairs": list(part.pairs),
        "generated_kernel_count": len(kernels),
    }


def _boundary_reason(
    part: Partition, p: torch.fx.Node, c: torch.fx.Node
) -> tuple[Any, str]:
    refused = [(n, part.refused[n]) for n in (p, c) if n in part.refused]
    if refused:
        # A mutation first, then a library call, then anything unsupported.
        rank = {"mutation": 0, "extern_kernel": 1, "device_mismatch": 2}
        n, r = min(refused, key=lambda t: rank.get(t[1].reason.value, 3))
        return r.reason, f"{n.name}: {r.detail}"
    verdict = part.verdicts.get((p, c))
    if verdict is not None and not verdict.fused:
        return verdict.reason, verdict.detail
    gp, gc = part.group_of.get(p), part.group_of.get(c)
    if gp is not None and gp is gc:
        why = part.not_compiled.get(gp.id, "the group was not compiled")
        return _reason(
            "FX_UNSUPPORTED_OP"
        ), f"the group of {p.name} runs as aten ops: {why}"
    return (
        _reason("FX_ITERATION_SPACE_MISMATCH"),
        f"{c.name} could not join the group of {p.name}",
    )


# ---------------------------------------------------------------------------
# The torch.compile backend and the make_fx entry point


def _var_mean(
    x: torch.Tensor,
    dim: Any = None,
    *,
    correction: Any = None,
    keepdim: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``var_mean`` as a chain the pass fuses into one kernel: the mean, then
    the sum of squared deviations from it (two reductions over one space)."""
    dims = _reduce_dims(dim, x.dim())
    count = math.prod(x.shape[d] for d in dims)
    if correction is None:
        correction = 1
    dtype = x.dtype
    if dtype in (torch.float16, torch.bfloat16):
        x = x.to(torch.float32)  # eager's opmath
    mean = aten.mean.dim(x, list(dims), True)
    dev = x - mean
    var = aten.sum.dim_IntList(dev * dev, list(dims), keepdim) / max(
        count - correction, 0
    )
    if not keepdim:
        mean = aten.squeeze.dims(mean, list(dims))
    return var.to(dtype), mean.to(dtype)


@functools.cache
def decomposition_table() -> dict[Any, Callable[..., Any]]:
    """The decompositions the fx_fusion backend traces with.

    ``torch._decomp.core_aten_decompositions()`` (composite ops to core aten:
    ``silu``, ``hardswish``, ``threshold_backward``, the softmax and
    layer-norm backward ops, ...) plus the core ops the pass fuses better as
    primitives: ``native_layer_norm``, ``gelu``, ``_softmax``,
    ``_log_softmax``, batch and group norm, ``leaky_relu``/``elu`` and their
    backward ops.  ``var_mean`` becomes ``var`` and ``mean`` (both fusible,
    one kernel) instead of upstream's prims-based decomposition.  Matmuls,
    convolutions and scaled dot-product attention are not decomposed (they
    stay library calls, as in Inductor).
    """
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    table.update(
        get_decompositions(
            [
                aten.native_layer_norm,
                aten.gelu,
                aten._softmax,
                aten._log_softmax,
                aten.native_batch_norm,
                aten._native_batch_norm_legit,
                aten._native_batch_norm_legit_functional,
                aten._native_batch_norm_legit_no_training,
                aten.native_group_norm,
                aten.leaky_relu,
                aten.leaky_relu_backward,
                aten.elu,
                aten.elu_backward,
            ]
        )
    )
    for op in (aten.var_mean.correction,):
        table[op] = _var_mean
    for op in (aten.addmm, aten.mean.dim, aten.var.correction):
        for overload in list(table):
            if getattr(overload, "overloadpacket", None) is op or overload is op:
                table.pop(overload, None)
    # Attention stays a library call (as in Inductor).  Upstream's
    # decomposition of the CPU flash-attention op also gives wrong gradients
    # under AOTAutograd in 2.11 (a 4-layer nn.TransformerEncoder: 0.49 off).
    for overload in list(table):
        if "scaled_dot_product" in str(overload):
            table.pop(overload)
    return table


def _graph_label(backward: bool) -> str:
    from torch._guards import CompileContext

    compile_id = CompileContext.current_compile_id()
    label = str(compile_id) if compile_id is not None else "<no compile id>"
    return label + (" backward" if backward else "")


def make_backend(**options: Any) -> Callable[..., Any]:
    """A torch.compile backend running :func:`fuse` (with ``options``) on
    AOTAutograd's forward and backward graphs."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        label = _graph_label(False)

        def compiler(backward: bool) -> Callable[..., Any]:
            def compile_graph(g: torch.fx.GraphModule, inputs: Sequence[Any]) -> Any:
                fused = fuse(
                    g,
                    label=label + (" backward" if backward else ""),
                    **options,
                )
                return make_boxed_func(fused.forward)

            return compile_graph

        return aot_autograd(
            fw_compiler=compiler(False),
            bw_compiler=compiler(True),
            decompositions=decomposition_table(),
            partition_fn=min_cut_rematerialization_partition,
            keep_inference_input_mutations=True,
        )(gm, example_inputs)

    return backend


_compile_counter = 0


def compile_module(
    module: torch.nn.Module | Callable[..., Any],
    example_inputs: Sequence[Any],
    **options: Any,
) -> Callable[..., Any]:
    """Trace ``module`` to aten with ``make_fx`` and fuse it (inference).

    Works for any module or function ``make_fx`` can trace, including the
    ``GraphModule`` of ``torch.fx.symbolic_trace``.  Parameters and buffers
    are inputs of the traced graph, so the result sees later updates to them.
    In-place ops (e.g. batch norm's running statistics) stay in the graph as
    aten ops.  ``options`` go to :func:`fuse`.
    """
    from torch.fx.experimental.proxy_tensor import make_fx

    global _compile_counter
    if isinstance(module, torch.nn.Module):
        params = dict(module.named_parameters(remove_duplicate=False))
        buffers = dict(module.named_buffers(remove_duplicate=False))

        def fn(params: Any, buffers: Any, *args: Any) -> Any:
            return torch.func.functional_call(module, (params, buffers), args)

        with torch.no_grad():
            gm = make_fx(
                fn, decomposition_table=decomposition_table(), tracing_mode="fake"
            )(params, buffers, *example_inputs)
        _compile_counter += 1
        options.setdefault("label", f"fx_fusion/{_compile_counter}")
        fused = fuse(gm, **options)

        def run(*args: Any) -> Any:
            with torch.no_grad():
                return fused(
                    dict(module.named_parameters(remove_duplicate=False)),
                    dict(module.named_buffers(remove_duplicate=False)),
                    *args,
                )

        run.graph_module = fused  # type: ignore[attr-defined]
        return run
    with torch.no_grad():
        gm = make_fx(
            module, decomposition_table=decomposition_table(), tracing_mode="fake"
        )(*example_inputs)
    _compile_counter += 1
    options.setdefault("label", f"fx_fusion/{_compile_counter}")
    return fuse(gm, **options)
