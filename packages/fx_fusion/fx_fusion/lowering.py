"""Which aten ops the FX fusion pass fuses, and how each becomes IR statements.

:func:`_lower` describes a node as a :class:`~.model._Lowered`: ``pointwise``
(elementwise ops, casts, constants), ``reduction`` (with its reduced dims) or
``view`` (a view the partitioner may follow inside a group), with a ``build``
function that emits the node's statements (:class:`~.ir.Stmt`) through an
:class:`~.model.Emitter`.  A node that cannot fuse raises
:class:`~.model._Refused` with the report's reason: not an aten op
(``fx_unsupported_op``), an in-place op (``mutation``), a library call
(``extern_kernel``), another device (``device_mismatch``), ...
"""

from __future__ import annotations

import math
from typing import Any, TYPE_CHECKING

import torch
import torch.fx

from .ir import compute_dtype, FLOAT_UNARY_OPS
from .model import _dtype_name, _Lowered, _Refused, _scalar, _val
from .report import _reason


if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from .model import Emitter


aten = torch.ops.aten
prims = torch.ops.prims


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


def _tensor_args(values: Iterable[Any]) -> list[torch.fx.Node]:
    out = []
    for v in values:
        if isinstance(v, torch.fx.Node) and isinstance(_val(v), torch.Tensor):
            if v not in out:
                out.append(v)
    return out


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
) -> Callable[[Emitter, str], int]:
    _check_operands(operands)

    def build(e: Emitter, out: str) -> int:
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

        def trunc_div(e: Emitter, out: str) -> int:
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

        def where(e: Emitter, out: str) -> int:
            return e.op(
                "where",
                (e.value(cond, "bool"), e.value(a, out), e.value(b, out)),
                out,
            )

        _check_operands([cond, a, b])
        return _Lowered("pointwise", _tensor_args([cond, a, b]), where)
    if target in (aten.masked_fill.Scalar, aten.masked_fill.Tensor):
        x, mask, value = args[:3]

        def masked_fill(e: Emitter, out: str) -> int:
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


def _identity(x: Any) -> Callable[[Emitter, str], int]:
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

    def clamp(e: Emitter, out: str) -> int:
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

    def build(e: Emitter, out: str) -> int:
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
