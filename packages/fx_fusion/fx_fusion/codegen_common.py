"""What the FX fusion arm's two code generators share.

:class:`_Analysis` validates a :class:`~.ir.KernelSpec` and works out what
both generators need: the simplified iteration space (size-1 dims dropped,
dims that are contiguous for every input merged, separately for the outer
and the reduced dims, so a contiguous ``(N, C, H, W)`` pointwise kernel is one
flat loop), the live statements, the compute dtype of every value and of the
operands of each op (torch's type promotion, including that of Python
scalars), and which reductions can share a loop.  :class:`_Runner` calls a
compiled kernel: it checks the inputs and allocates the outputs.  The rest is
the cache both generators write to (``$TORCHINDUCTOR_CACHE_DIR/fx_fusion/``)
and :data:`counters`.
"""

from __future__ import annotations

import collections
import math
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .ir import (
    BINARY_OPS,
    compute_dtype,
    FLOAT_UNARY_OPS,
    KernelSpec,
    Level,
    REDUCTIONS,
    TERNARY_OPS,
    UNARY_OPS,
)


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


# What happened, for tests and reports: "cpp_compile" (a compiler run),
# "cpp_disk_hit" (a cached .so loaded), "triton_source_write",
# "triton_disk_hit", "memory_hit" (a runner reused in this process).
counters: collections.Counter[str] = collections.Counter()

_SUPPORTED_DTYPES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)
_FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
_HALF_DTYPES = frozenset({"float16", "bfloat16"})
_UNSIGNED_DTYPES = frozenset({"bool", "uint8"})
# Ops computed in floating point: their statement's dtype must be floating.
_FLOAT_ONLY_OPS = FLOAT_UNARY_OPS | {"div", "atan2"}
# Ops torch does not define on bool (or that make no sense there).
_NO_BOOL_OPS = frozenset({"sub", "floor_divide", "remainder", "pow", "neg"})
_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
# Ops whose operands keep their own dtype (the result is bool).
_OWN_DTYPE_OPS = frozenset({"logical_not", "isnan", "logical_and", "logical_or"})


def _prod(sizes: Sequence[int]) -> int:
    return math.prod(sizes)


def _promote(dtypes: Sequence[str]) -> str:
    result = getattr(torch, dtypes[0])
    for name in dtypes[1:]:
        result = torch.promote_types(result, getattr(torch, name))
    return str(result).removeprefix("torch.")


def _category(dtype: str) -> int:
    """bool < integer < floating, as torch's type promotion of scalars."""
    return 0 if dtype == "bool" else 2 if dtype in _FLOAT_DTYPES else 1


def _default_float() -> str:
    return str(torch.get_default_dtype()).removeprefix("torch.")


def _simplify(
    sizes: Sequence[int], strides: Sequence[Sequence[int]]
) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge dims that are contiguous for every input.

    Outputs are contiguous, so every merge is valid for them too.  A space
    with a zero-size dim becomes ``[0]``.
    """
    if 0 in sizes:
        return [0], [[0] for _ in strides]
    keep = [d for d, size in enumerate(sizes) if size != 1]
    out_sizes: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d in reversed(keep):  # innermost first
        size = sizes[d]
        if out_sizes and all(
            st[d] == new[0] * out_sizes[0] for st, new in zip(strides, out_strides)
        ):
            out_sizes[0] *= size
            continue
        out_sizes.insert(0, size)
        for st, new in zip(strides, out_strides):
            new.insert(0, st[d])
    return out_sizes, out_strides


def _validate(spec: KernelSpec) -> None:
    ndim = len(spec.outer_shape) + len(spec.reduce_shape)
    for i, inp in enumerate(spec.inputs):
        if len(inp.strides) != ndim:
            raise ValueError(f"input {i} has {len(inp.strides)} strides, not {ndim}")
        if inp.dtype not in _SUPPORTED_DTYPES:
            raise NotImplementedError(f"fx_fusion codegen: dtype {inp.dtype}")
    for i, stmt in enumerate(spec.stmts):
        if stmt.dtype not in _SUPPORTED_DTYPES:
            raise NotImplementedError(f"fx_fusion codegen: dtype {stmt.dtype}")
        if any(a < 0 or a >= i for a in stmt.args):
            raise ValueError(f"stmt {i} uses a later statement: {stmt}")
        arg_levels = {spec.stmts[a].level for a in stmt.args}
        op = stmt.op
        if op == "load":
            if stmt.input is None or not 0 <= stmt.input < len(spec.inputs):
                raise ValueError(f"stmt {i} loads no input: {stmt}")
        elif op == "constant":
            if stmt.value is None:
                raise ValueError(f"stmt {i} is a constant without a value")
        elif op in REDUCTIONS:
            if stmt.level != Level.OUTER or len(stmt.args) != 1:
                raise ValueError(f"reduction {i} must be OUTER with one arg: {stmt}")
            if not spec.reduce_shape:
                raise ValueError(f"reduction {i} in a kernel without reduced dims")
        else:
            arity = (
                1
                if op in UNARY_OPS or op == "cast"
                else 2
                if op in BINARY_OPS
                else 3
                if op in TERNARY_OPS
                else None
            )
            if arity is None:
                raise NotImplementedError(f"fx_fusion codegen: op {op!r}")
            if len(stmt.args) != arity:
                raise ValueError(f"stmt {i}: {op} takes {arity} args: {stmt}")
            if stmt.level == Level.OUTER and Level.INNER in arg_levels:
                raise ValueError(f"OUTER stmt {i} uses an INNER value: {stmt}")
            if op in _FLOAT_ONLY_OPS and stmt.dtype not in _FLOAT_DTYPES:
                raise NotImplementedError(
                    f"fx_fusion codegen: {op} with result dtype {stmt.dtype}"
                )
            if op in _NO_BOOL_OPS and stmt.dtype == "bool":
                raise NotImplementedError(f"fx_fusion codegen: {op} on bool")
    for out in spec.outputs:
        if not 0 <= out.stmt < len(spec.stmts):
            raise ValueError(f"output of a missing statement: {out}")
        if out.dtype not in _SUPPORTED_DTYPES:
            raise NotImplementedError(f"fx_fusion codegen: dtype {out.dtype}")


class _Analysis:
    """What both generators need to know about a spec."""

    def __init__(self, spec: KernelSpec) -> None:
        _validate(spec)
        self.spec = spec
        self.stmts = spec.stmts
        n_outer = len(spec.outer_shape)
        self.outer_sizes, self.outer_strides = _simplify(
            spec.outer_shape, [inp.strides[:n_outer] for inp in spec.inputs]
        )
        self.reduce_sizes, self.reduce_strides = _simplify(
            spec.reduce_shape, [inp.strides[n_outer:] for inp in spec.inputs]
        )
        self.outer_numel = _prod(spec.outer_shape)
        self.reduce_numel = _prod(spec.reduce_shape)
        self.is_reduction = bool(spec.reduce_shape)
        # compute dtype of every statement's value
        self.cdtype = [compute_dtype(s.dtype) for s in spec.stmts]
        live: set[int] = set()
        todo = [out.stmt for out in spec.outputs]
        while todo:
            i = todo.pop()
            if i not in live:
                live.add(i)
                todo.extend(spec.stmts[i].args)
        self.live = sorted(live)
        self.live_set = live

    def inner_closure(self, targets: Sequence[int]) -> list[int]:
        """The INNER statements needed to compute ``targets``, in order."""
        seen: set[int] = set()
        todo = list(targets)
        while todo:
            i = todo.pop()
            if i in seen or self.stmts[i].level != Level.INNER:
                continue
            seen.add(i)
            todo.extend(self.stmts[i].args)
        return sorted(seen)

    def reduction_stages(self) -> dict[int, int]:
        """Stage of each live OUTER statement: a reduction's stage is one more
        than the stages of the outer values it reads, so the reductions of
        one stage can share one loop over the reduce space."""
        stage: dict[int, int] = {}
        for i in self.live:
            stmt = self.stmts[i]
            if stmt.level != Level.OUTER:
                continue
            if stmt.op in REDUCTIONS:
                closure = self.inner_closure(stmt.args)
                deps = {
                    a
                    for j in closure
                    for a in self.stmts[j].args
                    if self.stmts[a].level == Level.OUTER
                }
                deps.update(a for a in stmt.args if self.stmts[a].level == Level.OUTER)
                stage[i] = 1 + max((stage[d] for d in deps), default=0)
            else:
                stage[i] = max((stage[a] for a in stmt.args), default=0)
        return stage

    def operand_dtypes(self, i: int) -> list[str]:
        """The compute dtypes statement ``i`` converts its args to."""
        stmt = self.stmts[i]
        own = [self.cdtype[a] for a in stmt.args]
        result = self.cdtype[i]
        if stmt.op in _COMPARISONS:
            promoted = self.comparison_dtype(stmt.args)
            return [promoted, promoted]
        if stmt.op in _OWN_DTYPE_OPS:
            return own
        if stmt.op == "where":
            return ["bool", result, result]
        return [result] * len(own)

    def comparison_dtype(self, args: Sequence[int]) -> str:
        """The dtype a comparison is computed in, as torch promotes: a
        constant (a Python scalar in the graph) takes part only when it is of
        a higher category (bool < integer < floating) than the other side,
        and then with the default dtype of its category, so ``x_f32 <= 0.1``
        compares in float32 even if the constant is typed float64."""
        tensors = [self.cdtype[a] for a in args if self.stmts[a].op != "constant"]
        constants = [self.cdtype[a] for a in args if self.stmts[a].op == "constant"]
        if not tensors or not constants:
            return _promote(tensors or constants)
        promoted = _promote(tensors)
        category = max(map(_category, constants))
        if category <= _category(promoted):
            return promoted
        return "int64" if category == 1 else compute_dtype(_default_float())

    def constant_exponent(self, i: int) -> float | None:
        """For ``pow`` with a constant exponent, its value."""
        stmt = self.stmts[i]
        if stmt.op != "pow":
            return None
        exponent = self.stmts[stmt.args[1]]
        if exponent.op == "constant":
            return float(exponent.value)  # type: ignore[arg-type]
        return None

    def read_inputs(self) -> dict[int, int]:
        """The inputs the kernel reads, each with the largest element offset
        it reads there."""
        levels: dict[int, set[Level]] = collections.defaultdict(set)
        for i in self.live:
            stmt = self.stmts[i]
            if stmt.op == "load":
                levels[stmt.input].add(stmt.level)  # type: ignore[index]
        reach = {}
        for k, used in levels.items():
            if self.outer_numel == 0:
                continue
            shape = self.spec.outer_shape
            if Level.INNER in used:
                if self.reduce_numel == 0:
                    continue
                shape = shape + self.spec.reduce_shape
            strides = self.spec.inputs[k].strides
            reach[k] = sum((size - 1) * st for size, st in zip(shape, strides))
        return reach

    def loaded_inputs(self) -> list[int]:
        return sorted(
            {
                self.stmts[i].input  # type: ignore[misc]
                for i in self.live
                if self.stmts[i].op == "load"
            }
        )

    def live_reductions(self) -> set[str]:
        return {self.stmts[i].op for i in self.live if self.stmts[i].op in REDUCTIONS}


def _reduction_identity(op: str, dtype: str) -> bool | int | float:
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    if dtype == "bool":
        return op == "amin"
    if dtype in _FLOAT_DTYPES:
        return -math.inf if op == "amax" else math.inf
    info = torch.iinfo(getattr(torch, dtype))
    return info.min if op == "amax" else info.max


def _typed_value(value: bool | int | float, dtype: str) -> bool | int | float:
    if dtype == "bool":
        return bool(value)
    if dtype in _FLOAT_DTYPES:
        return float(value)
    return int(value)


# ---------------------------------------------------------------------------
# Caching and calling compiled kernels


_lock = threading.RLock()


def _cache_root() -> Path:
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return Path(cache_dir()) / "fx_fusion"


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(suffix=path.suffix, dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


_TORCH_DTYPES = {name: getattr(torch, name) for name in _SUPPORTED_DTYPES}


class _Runner:
    """Calls a compiled kernel: checks the inputs, allocates the outputs."""

    def __init__(self, analysis: _Analysis, default_device: torch.device) -> None:
        spec = analysis.spec
        self.n_inputs = len(spec.inputs)
        self.in_dtypes = [_TORCH_DTYPES[inp.dtype] for inp in spec.inputs]
        self.checked = sorted(analysis.read_inputs().items())
        full = tuple(spec.outer_shape) + tuple(spec.reduce_shape)
        self.out_specs = [
            (
                tuple(spec.outer_shape)
                if spec.stmts[out.stmt].level == Level.OUTER
                else full,
                _TORCH_DTYPES[out.dtype],
            )
            for out in spec.outputs
        ]
        self.empty = analysis.outer_numel == 0
        self.raise_empty = analysis.reduce_numel == 0 and bool(
            analysis.live_reductions() & {"amax", "amin"}
        )
        self.default_device = default_device
        self.launch: Callable[[Sequence[torch.Tensor], list[torch.Tensor]], None] = (
            lambda inputs, outputs: None
        )

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        if len(inputs) != self.n_inputs:
            raise TypeError(
                f"fx_fusion kernel takes {self.n_inputs} inputs, got {len(inputs)}"
            )
        for t, dtype in zip(inputs, self.in_dtypes):
            if t.dtype is not dtype:
                raise TypeError(
                    f"fx_fusion kernel: input of dtype {t.dtype}, expected {dtype}"
                )
        for k, reach in self.checked:
            t = inputs[k]
            if (
                t.storage_offset() + reach + 1
            ) * t.element_size() > t.untyped_storage().nbytes():
                raise ValueError(
                    f"fx_fusion kernel: input {k} (size {tuple(t.shape)}, stride "
                    f"{t.stride()}) is too small for the kernel's strides"
                )
            if t.numel() == 0:
                # An empty view has no data pointer, though the kernel reads
                # its storage (an OUTER load of a view empty on reduced dims).
                inputs = (*inputs[:k], t.as_strided((1,), (1,)), *inputs[k + 1 :])
        if self.raise_empty:
            raise IndexError(
                "amax(): Expected reduction dim to have non-zero size (fx_fusion kernel)"
            )
        device = inputs[0].device if inputs else self.default_device
        outputs = [
            torch.empty(shape, dtype=dtype, device=device)
            for shape, dtype in self.out_specs
        ]
        if not self.empty:
            self.launch(inputs, outputs)
        return outputs
