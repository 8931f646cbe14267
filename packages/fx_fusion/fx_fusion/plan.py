"""A fusion group as one kernel: its :class:`~.ir.KernelSpec` and calling plan.

:func:`build_kernel_plan` orders the group's loop dims (the outer ones, then
the reduced ones, each by the strides of a reference value), emits the SSA
statements of its members through an :class:`_Emitter` (loads of the values
read from outside, at their strides over the loop dims; constants; casts;
the members' ops) and describes every value read outside the group as an
output, written contiguously and viewed (or copied) back to the strides eager
gives its node.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TYPE_CHECKING

import torch
import torch.fx

from .ir import InputSpec, KernelSpec, Level, OutputSpec, Stmt
from .model import _dtype_name, _scalar, _val, INNER, OUTER


if TYPE_CHECKING:
    from collections.abc import Iterable

    from .model import Group, Partition


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
