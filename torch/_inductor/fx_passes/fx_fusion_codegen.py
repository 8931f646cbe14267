"""Code generation for the FX fusion arm: a :class:`KernelSpec` to a kernel.

The FX fusion arm (``fx_fusion.py``) is an operator-fusion pass of its own,
written with torch.fx alone, so that what it fuses can be compared with what
Inductor fuses.  To keep that comparison honest it also has its own code
generation: this module turns a :class:`~.fx_fusion_ir.KernelSpec` into

* on the CPU, a C++ function (``extern "C" int fx_kernel(void* const* in,
  void* const* out, int nthreads)``) with one loop nest over the iteration
  space, compiled with the system C++ compiler (``$CXX``, else ``g++``) into
  a shared library and called through :mod:`ctypes`;
* on CUDA (and, under ``TRITON_INTERPRET=1``, on CPU tensors), a Triton
  kernel written to a real source file and imported from it.

It uses none of Inductor's lowering, scheduling or code generation classes;
the only thing it shares with Inductor is the cache directory
(``$TORCHINDUCTOR_CACHE_DIR``, subfolder ``fx_fusion/``).

Both generators first simplify the iteration space (size-1 dims dropped,
dims that are contiguous for every input merged, separately for the outer
and the reduced dims), so a contiguous ``(N, C, H, W)`` pointwise kernel is
one flat loop.  Shapes and strides are compile-time constants, as in an
Inductor kernel compiled for static shapes.

CPU loop structure, for each point of the outer space: the outer statements
in order; each reduction is a loop over the reduce space that computes
(recomputes) the inner statements it needs, and reductions that do not
depend on each other share one loop (``var_mean`` is one pass); inner
outputs are written by a final loop over the reduce space.  The outer loops
carry ``#pragma omp parallel for`` when the kernel is large enough.

Triton structure: a 1-D grid over the outer space (``XBLOCK`` points per
program); a reduction kernel holds the whole reduce space of a point in one
block (``RBLOCK`` = next power of two, ragged lanes masked), so every
statement is computed once.  Reduce spaces above
:data:`MAX_TRITON_REDUCE_NUMEL` elements raise :class:`NotImplementedError`
(the pass then leaves that reduction unfused).

Arithmetic follows torch: values are computed in ``compute_dtype`` (float32
for float16/bfloat16, rounded only by explicit casts and stores, as
Inductor); ``div`` is true division; ``floor_divide``/``remainder`` use
torch's floor semantics (c10's formulas for floating point); ``round``
rounds half to even; ``maximum``/``minimum``/``amax``/``amin`` propagate
NaN; integer arithmetic wraps (``-fwrapv``); comparisons with a constant
promote as torch does with a Python scalar.  On the CPU, float32 ``exp``,
``sigmoid`` and ``tanh`` use branch-free versions in the C++ prelude (within
a few ulp) so their loops vectorize; other math is ``<cmath>``.  Float sums
accumulate in double on the CPU and in float32 (tree order) in Triton.

Caching: the generated source is hashed (sha256, with the compiler flags and
the machine for C++); ``fx_fusion/cpp/<hash>.so`` and
``fx_fusion/triton/fx_<hash>.py`` are reused across processes (a cached
.so is loaded without running the compiler), and runners are kept in memory
by ``spec.key()`` (the spec without its name) and device.  :data:`counters`
counts compilations and cache hits.

``compile_kernel(spec, "triton")`` asks for the Triton kernel whatever the
tensors' device: under ``TRITON_INTERPRET=1`` (set before triton is
imported) it runs on CPU tensors through Triton's interpreter, which is how
the Triton path is tested without a GPU.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import hashlib
import importlib.util
import logging
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import types
from pathlib import Path
from typing import Any, TYPE_CHECKING

import torch

from .fx_fusion_ir import (
    BINARY_OPS,
    FLOAT_UNARY_OPS,
    compute_dtype,
    KernelSpec,
    Level,
    REDUCTIONS,
    TERNARY_OPS,
    UNARY_OPS,
)


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


__all__ = [
    "MAX_TRITON_REDUCE_NUMEL",
    "clear_cache",
    "compile_kernel",
    "counters",
    "generated_source",
    "triton_libdevice",
]

log = logging.getLogger(__name__)

# The largest reduce space a Triton kernel holds in one block.
MAX_TRITON_REDUCE_NUMEL = 16384
# The CPU kernel parallelizes its outer loops (OpenMP) from this many points
# of the iteration space on.
PARALLEL_MIN_NUMEL = 32768

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


# ---------------------------------------------------------------------------
# Analysis shared by both generators


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
# C++


_CPP_STORAGE = {
    "bool": "uint8_t",
    "uint8": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float16": "uint16_t",
    "bfloat16": "uint16_t",
    "float32": "float",
    "float64": "double",
}
_CPP_COMPUTE = {
    "bool": "bool",
    "uint8": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float32": "float",
    "float64": "double",
}

_CPP_PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

inline float fx_bits2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline uint32_t fx_f2bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// bfloat16 is the top half of a float32; stores round to nearest even.
inline float fx_bf2f(uint16_t h) { return fx_bits2f(static_cast<uint32_t>(h) << 16); }

inline uint16_t fx_f2bf(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t u = fx_f2bits(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

#if defined(__FLT16_MAX__) && !defined(FX_PORTABLE_HALF)
inline float fx_h2f(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, sizeof(h));
  return static_cast<float>(v);
}

inline uint16_t fx_f2h(float f) {
  _Float16 v = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &v, sizeof(h));
  return h;
}
#else
// As c10/util/Half.h: fp16_ieee_to_fp32_value and fp16_ieee_from_fp32_value.
inline float fx_h2f(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float normalized = fx_bits2f((two_w >> 4) + exp_offset) * 0x1.0p-112f;
  const float denormalized = fx_bits2f((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t result = sign |
      (two_w < (1u << 27) ? fx_f2bits(denormalized) : fx_f2bits(normalized));
  return fx_bits2f(result);
}

inline uint16_t fx_f2h(float f) {
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = fx_f2bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = fx_bits2f((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = fx_f2bits(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return static_cast<uint16_t>(
      (sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
#endif

// exp for float32, branch-free so that loops calling it vectorize (libm's
// expf does not): Cephes expf, a Cody-Waite reduction and a degree-5
// polynomial, within 1 ulp; 2^k is applied in two steps for subnormal results.
inline float fx_expf(float x) {
  const float xc = (x != x) ? 0.0f : (x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x));
  const float k = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - k * 0.693359375f) - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const int32_t ki = static_cast<int32_t>(k);
  const int32_t k1 = ki / 2;
  const float s1 = fx_bits2f(static_cast<uint32_t>(k1 + 127) << 23);
  const float s2 = fx_bits2f(static_cast<uint32_t>(ki - k1 + 127) << 23);
  const float result = y * s1 * s2;
  return (x != x) ? x
      : (x > 88.72283935546875f ? __builtin_inff()
         : (x < -103.972084045410156f ? 0.0f : result));
}

// tanh for float32 through fx_expf (Cephes tanhf), within a few ulp.
inline float fx_tanhf(float x) {
  const float ax = std::fabs(x);
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float large = std::copysign(1.0f - 2.0f / (fx_expf(ax + ax) + 1.0f), x);
  return ax < 0.625f ? small : large;
}

inline float fx_round_h(float x) { return fx_h2f(fx_f2h(x)); }
inline float fx_round_bf(float x) { return fx_bf2f(fx_f2bf(x)); }

// maximum/minimum/amax/amin propagate NaN, as torch.
template <typename T> inline T fx_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> inline T fx_min(T a, T b) { return (a != a || a < b) ? a : b; }

template <typename T> inline T fx_sign(T a) {
  return static_cast<T>((T(0) < a) - (a < T(0)));
}

// torch's floor_divide and remainder on floating point (c10 div_floor_floating).
template <typename T> inline T fx_floordiv_f(T a, T b) {
  if (b == 0) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
  if (div == 0) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}

template <typename T> inline T fx_rem_f(T a, T b) {
  T mod = std::fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}

// Integer floor division and remainder; division by zero sets *err (the
// runner raises, as torch does on the CPU).
template <typename T> inline T fx_floordiv_i(T a, T b, int* err) {
  if (b == 0) {
    __atomic_store_n(err, 1, __ATOMIC_RELAXED);
    return T(0);
  }
  if (T(-1) < T(0) && b == T(-1)) return static_cast<T>(-a);
  T q = static_cast<T>(a / b);
  const T r = static_cast<T>(a % b);
  if (r != 0 && ((r < 0) != (b < 0))) q = static_cast<T>(q - 1);
  return q;
}

template <typename T> inline T fx_rem_i(T a, T b, int* err) {
  if (b == 0) {
    __atomic_store_n(err, 1, __ATOMIC_RELAXED);
    return T(0);
  }
  if (T(-1) < T(0) && b == T(-1)) return T(0);
  T r = static_cast<T>(a % b);
  if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  return r;
}

// torch's integer pow (c10 powi).
template <typename T> inline T fx_powi(T a, T b) {
  if (b < 0) {
    if (a == 1) return T(1);
    if (a == T(-1)) return (b & 1) ? T(-1) : T(1);
    return T(0);
  }
  T result = 1;
  while (b) {
    if (b & 1) result = static_cast<T>(result * a);
    b = static_cast<T>(b >> 1);
    a = static_cast<T>(a * a);
  }
  return result;
}

}  // namespace
"""


def _cpp_literal(value: bool | int | float, dtype: str) -> str:
    value = _typed_value(value, dtype)
    ctype = _CPP_COMPUTE[compute_dtype(dtype)]
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in _FLOAT_DTYPES:
        assert isinstance(value, float)
        if math.isnan(value):
            text = '__builtin_nan("")'
        elif math.isinf(value):
            text = "__builtin_inf()" if value > 0 else "(-__builtin_inf())"
        else:
            text = value.hex()
        return f"static_cast<{ctype}>({text})"
    if value == -(2**63):
        return "static_cast<int64_t>(-9223372036854775807LL - 1)"
    return f"static_cast<{ctype}>({value}LL)"


def _cpp_convert(expr: str, src: str, dst: str) -> str:
    """Convert a value of compute dtype ``src`` to compute dtype ``dst``."""
    if src == dst:
        return expr
    if dst == "bool":
        return f"({expr} != 0)"
    return f"static_cast<{_CPP_COMPUTE[dst]}>({expr})"


def _cpp_round(expr: str, dtype: str) -> str:
    """Round a float value to ``dtype`` when that is a 16-bit float."""
    if dtype == "float16":
        return f"fx_round_h({expr})"
    if dtype == "bfloat16":
        return f"fx_round_bf({expr})"
    return expr


def _cpp_load(expr: str, dtype: str) -> str:
    if dtype == "float16":
        return f"fx_h2f({expr})"
    if dtype == "bfloat16":
        return f"fx_bf2f({expr})"
    if dtype == "bool":
        return f"({expr} != 0)"
    return expr


def _cpp_store(expr: str, src: str, dtype: str) -> str:
    """``expr`` (compute dtype ``src``) as the storage type of ``dtype``."""
    if dtype == "float16":
        return f"fx_f2h({_cpp_convert(expr, src, 'float32')})"
    if dtype == "bfloat16":
        return f"fx_f2bf({_cpp_convert(expr, src, 'float32')})"
    if dtype == "bool":
        return f"static_cast<uint8_t>({_cpp_convert(expr, src, 'bool')})"
    return _cpp_convert(expr, src, dtype)


def _cpp_op(
    op: str, dtype: str, args: list[str], exponent: float | None, arg_dtypes: list[str]
) -> str:
    """The C++ expression of ``op`` on converted operands, of compute dtype
    ``dtype``."""
    T = _CPP_COMPUTE[dtype]
    is_float = dtype in _FLOAT_DTYPES
    is_bool = dtype == "bool"
    a = args[0]
    b = args[1] if len(args) > 1 else ""
    one = f"{T}(1)"
    if op in _FLOAT_ONLY_OPS and op not in ("div", "atan2"):
        # exp and tanh of float32 through vectorizable fx_expf/fx_tanhf
        exp = "fx_expf" if dtype == "float32" else "std::exp"
        fn = {
            "reciprocal": f"({one} / {a})",
            "rsqrt": f"({one} / std::sqrt({a}))",
            "sigmoid": f"({one} / ({one} + {exp}(-{a})))",
            "exp": f"{exp}({a})",
            "tanh": f"fx_tanhf({a})" if dtype == "float32" else f"std::tanh({a})",
        }
        return fn.get(op, f"std::{op}({a})")
    if op == "abs":
        return (
            a
            if is_bool
            else f"std::fabs({a})"
            if is_float
            else f"({a} < 0 ? static_cast<{T}>(-{a}) : {a})"
        )
    if op == "neg":
        return f"static_cast<{T}>(-{a})"
    if op == "relu":
        return a if is_bool else f"({a} < 0 ? {T}(0) : {a})"
    if op in ("floor", "ceil", "trunc", "round"):
        if not is_float:
            return a
        return f"std::nearbyint({a})" if op == "round" else f"std::{op}({a})"
    if op == "sign":
        return a if is_bool else f"fx_sign({a})"
    if op == "logical_not":
        return f"({a} == 0)"
    if op == "bitwise_not":
        return f"(!{a})" if is_bool else f"static_cast<{T}>(~{a})"
    if op == "isnan":
        return f"std::isnan({a})" if arg_dtypes[0] in _FLOAT_DTYPES else "false"
    if op in ("add", "mul"):
        if is_bool:
            return f"({a} {'||' if op == 'add' else '&&'} {b})"
        return f"static_cast<{T}>({a} {'+' if op == 'add' else '*'} {b})"
    if op == "sub":
        return f"static_cast<{T}>({a} - {b})"
    if op == "div":
        return f"({a} / {b})"
    if op == "floor_divide":
        return (
            f"fx_floordiv_f({a}, {b})"
            if is_float
            else f"fx_floordiv_i<{T}>({a}, {b}, &fx_err)"
        )
    if op == "remainder":
        return (
            f"fx_rem_f({a}, {b})" if is_float else f"fx_rem_i<{T}>({a}, {b}, &fx_err)"
        )
    if op == "pow":
        if not is_float:
            return f"fx_powi<{T}>({a}, {b})"
        # torch's pow_tensor_scalar specializations
        special = {
            0.0: one,
            1.0: a,
            2.0: f"({a} * {a})",
            3.0: f"({a} * {a} * {a})",
            0.5: f"std::sqrt({a})",
            -0.5: f"({one} / std::sqrt({a}))",
            -1.0: f"({one} / {a})",
            -2.0: f"({one} / ({a} * {a}))",
        }
        if exponent is not None and exponent in special:
            return special[exponent]
        return f"std::pow({a}, {b})"
    if op == "maximum":
        return f"({a} || {b})" if is_bool else f"fx_max<{T}>({a}, {b})"
    if op == "minimum":
        return f"({a} && {b})" if is_bool else f"fx_min<{T}>({a}, {b})"
    if op == "atan2":
        return f"std::atan2({a}, {b})"
    if op in _COMPARISONS:
        return f"({a} {_COMPARISONS[op]} {b})"
    if op == "logical_and":
        return f"(({a} != 0) && ({b} != 0))"
    if op == "logical_or":
        return f"(({a} != 0) || ({b} != 0))"
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
        return f"static_cast<{T}>({a} {sym} {b})"
    if op == "where":
        return f"({a} ? {b} : {args[2]})"
    raise NotImplementedError(f"fx_fusion codegen: op {op!r}")


class _CppGenerator:
    def __init__(self, analysis: _Analysis) -> None:
        self.a = analysis
        self.spec = analysis.spec
        self.n_outer = len(analysis.outer_sizes)
        self.n_reduce = len(analysis.reduce_sizes)

    def offset(self, k: int, level: Level) -> str:
        a = self.a
        terms = [
            f"o{d} * {st}" if st != 1 else f"o{d}"
            for d, st in enumerate(a.outer_strides[k])
            if st != 0
        ]
        if level == Level.INNER:
            terms += [
                f"r{d} * {st}" if st != 1 else f"r{d}"
                for d, st in enumerate(a.reduce_strides[k])
                if st != 0
            ]
        return " + ".join(terms) or "0"

    @staticmethod
    def flat(prefix: str, sizes: Sequence[int]) -> str:
        terms = []
        for d in range(len(sizes)):
            step = _prod(sizes[d + 1 :])
            terms.append(f"{prefix}{d} * {step}" if step != 1 else f"{prefix}{d}")
        return " + ".join(terms) or "0"

    def stmt_line(self, i: int) -> str:
        a = self.a
        stmt = a.stmts[i]
        dtype = a.cdtype[i]
        T = _CPP_COMPUTE[dtype]
        if stmt.op == "load":
            k = stmt.input
            assert k is not None
            src = self.spec.inputs[k].dtype
            expr = _cpp_load(f"in{k}[{self.offset(k, stmt.level)}]", src)
            expr = _cpp_convert(expr, compute_dtype(src), dtype)
            if src != stmt.dtype:
                expr = _cpp_round(expr, stmt.dtype)
        elif stmt.op == "constant":
            assert stmt.value is not None
            expr = _cpp_literal(stmt.value, stmt.dtype)
            if stmt.dtype in _HALF_DTYPES:
                expr = _cpp_round(expr, stmt.dtype)
        elif stmt.op == "cast":
            (arg,) = stmt.args
            expr = _cpp_convert(f"v{arg}", a.cdtype[arg], dtype)
            if a.stmts[arg].dtype != stmt.dtype:  # else a no-op (or a level change)
                expr = _cpp_round(expr, stmt.dtype)
        else:
            operand_dtypes = a.operand_dtypes(i)
            args = [
                _cpp_convert(f"v{arg}", a.cdtype[arg], want)
                for arg, want in zip(stmt.args, operand_dtypes)
            ]
            expr = _cpp_op(stmt.op, dtype, args, a.constant_exponent(i), operand_dtypes)
        return f"const {T} v{i} = {expr};"

    def reduce_loops(self, body: list[str], pragma: str | None = None) -> list[str]:
        lines: list[str] = []
        for d, size in enumerate(self.a.reduce_sizes):
            if pragma is not None and d == self.n_reduce - 1:
                lines.append(pragma)
            lines.append(f"for (int64_t r{d} = 0; r{d} < {size}; ++r{d}) {{")
        lines += (
            ["  " + line for line in body]
            if self.n_reduce
            else ["{"] + ["  " + line for line in body]
        )
        lines += ["}"] * max(self.n_reduce, 1)
        return lines

    def reduction_group(self, group: list[int]) -> list[str]:
        """One loop over the reduce space computing the reductions ``group``.

        amax/amin keep a NaN flag beside a plain max/min so that the loop
        is an OpenMP ``simd`` reduction (vectorized) and still propagates
        NaN; float sums accumulate in double.
        """
        a = self.a
        lines = []
        clauses: dict[str, list[str]] = collections.defaultdict(list)
        body = [
            self.stmt_line(j)
            for j in a.inner_closure([a.stmts[i].args[0] for i in group])
        ]
        epilogue = []
        for i in group:
            stmt = a.stmts[i]
            dtype = a.cdtype[i]
            T = _CPP_COMPUTE[dtype]
            is_float = dtype in _FLOAT_DTYPES
            acc_t = "double" if stmt.op == "sum" and is_float else T
            init = _cpp_literal(_reduction_identity(stmt.op, dtype), dtype)
            lines.append(f"{acc_t} acc{i} = {init};")
            (arg,) = stmt.args
            value = _cpp_convert(f"v{arg}", a.cdtype[arg], dtype)
            result = f"static_cast<{T}>(acc{i})"
            if stmt.op == "sum":
                body.append(f"acc{i} += {value};")
                clauses["+"].append(f"acc{i}")
            elif stmt.op == "prod":
                body.append(f"acc{i} = static_cast<{T}>(acc{i} * {value});")
                clauses["*"].append(f"acc{i}")
            else:
                cmp = ">" if stmt.op == "amax" else "<"
                body.append(f"const {T} m{i} = {value};")
                body.append(f"acc{i} = m{i} {cmp} acc{i} ? m{i} : acc{i};")
                clauses["max" if stmt.op == "amax" else "min"].append(f"acc{i}")
                if is_float:
                    lines.append(f"int nan{i} = 0;")
                    body.append(f"nan{i} |= (m{i} != m{i});")
                    clauses["|"].append(f"nan{i}")
                    result = f'(nan{i} ? static_cast<{T}>(__builtin_nan("")) : acc{i})'
            epilogue.append(f"const {T} v{i} = {result};")
        pragma = None
        if self.n_reduce == 1 and all(a.cdtype[i] != "bool" for i in group):
            pragma = "#pragma omp simd " + " ".join(
                f"reduction({op}:{', '.join(accs)})" for op, accs in clauses.items()
            )
        return lines + self.reduce_loops(body, pragma) + epilogue

    def point_body(self) -> list[str]:
        """The code for one point of the outer space."""
        a = self.a
        lines: list[str] = []
        stages = a.reduction_stages()
        for s in range(max(stages.values(), default=0) + 1):
            group = [
                i for i, st in stages.items() if st == s and a.stmts[i].op in REDUCTIONS
            ]
            if group:
                lines += self.reduction_group(sorted(group))
            lines += [
                self.stmt_line(i)
                for i in sorted(stages)
                if stages[i] == s and a.stmts[i].op not in REDUCTIONS
            ]
        outer_flat = self.flat("o", a.outer_sizes)
        inner_outputs = []
        for n, out in enumerate(self.spec.outputs):
            stmt = a.stmts[out.stmt]
            if stmt.level == Level.OUTER:
                value = _cpp_store(f"v{out.stmt}", a.cdtype[out.stmt], out.dtype)
                lines.append(f"out{n}[{outer_flat}] = {value};")
            else:
                inner_outputs.append(n)
        if inner_outputs:
            outs = [self.spec.outputs[n] for n in inner_outputs]
            body = [self.stmt_line(j) for j in a.inner_closure([o.stmt for o in outs])]
            inner_flat = self.flat("r", a.reduce_sizes)
            index = (
                f"({outer_flat}) * {a.reduce_numel} + {inner_flat}"
                if self.n_reduce
                else outer_flat
            )
            for n, out in zip(inner_outputs, outs):
                value = _cpp_store(f"v{out.stmt}", a.cdtype[out.stmt], out.dtype)
                body.append(f"out{n}[{index}] = {value};")
            lines += self.reduce_loops(body)
        return lines

    def parallel_depth(self) -> int:
        """How many outer loops ``omp parallel for`` collapses (0: none)."""
        a = self.a
        if (
            a.outer_numel < 2
            or a.outer_numel * max(a.reduce_numel, 1) < PARALLEL_MIN_NUMEL
        ):
            return 0
        # Pointwise kernels keep their innermost loop for vectorization.
        candidates = (
            a.outer_sizes[:-1]
            if not a.is_reduction and self.n_outer > 1
            else a.outer_sizes
        )
        product = 1
        for depth, size in enumerate(candidates, 1):
            product *= size
            if product >= 64:
                return depth
        return len(candidates) if product >= 16 else self.n_outer

    def source(self) -> str:
        a = self.a
        spec = self.spec
        lines = [
            _CPP_PRELUDE.strip(),
            "",
            'extern "C" int fx_kernel(void* const* fx_in, void* const* fx_out, int fx_nthreads) {',
        ]
        body = []
        for k in a.loaded_inputs():
            ctype = _CPP_STORAGE[spec.inputs[k].dtype]
            body.append(
                f"const {ctype}* __restrict__ in{k} = static_cast<const {ctype}*>(fx_in[{k}]);"
            )
        for n, out in enumerate(spec.outputs):
            ctype = _CPP_STORAGE[out.dtype]
            body.append(
                f"{ctype}* __restrict__ out{n} = static_cast<{ctype}*>(fx_out[{n}]);"
            )
        body += ["int fx_err = 0;", "(void)fx_nthreads;"]
        depth = self.parallel_depth()
        loops = []
        for d, size in enumerate(a.outer_sizes):
            if d == 0 and depth:
                loops.append(
                    f"#pragma omp parallel for collapse({depth}) "
                    "num_threads(fx_nthreads) if(fx_nthreads > 1)"
                )
            loops.append(f"for (int64_t o{d} = 0; o{d} < {size}; ++o{d}) {{")
        point = self.point_body()
        if not a.outer_sizes:
            loops.append("{")
        body += loops + ["  " + line for line in point] + ["}"] * max(self.n_outer, 1)
        body.append("return fx_err;")
        lines += ["  " + line for line in body] + ["}", ""]
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Triton


_TL_DTYPE = {
    "bool": "tl.int1",
    "uint8": "tl.uint8",
    "int8": "tl.int8",
    "int16": "tl.int16",
    "int32": "tl.int32",
    "int64": "tl.int64",
    "float16": "tl.float16",
    "bfloat16": "tl.bfloat16",
    "float32": "tl.float32",
    "float64": "tl.float64",
}

_TRITON_PRELUDE = """
import triton
import triton.language as tl

from torch._inductor.fx_passes.fx_fusion_codegen import triton_libdevice


libdevice = triton_libdevice()


@triton.jit
def _fx_max(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _fx_min(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def _fx_mul(a, b):
    return a * b


@triton.jit
def _fx_floordiv_i(a, b):
    bad = (b == 0) | (b == -1)
    bs = tl.where(bad, 1, b)
    q = a // bs
    r = a - q * bs
    q = tl.where((r != 0) & ((r < 0) != (bs < 0)), q - 1, q)
    return tl.where(b == 0, 0, tl.where(b == -1, -a, q))


@triton.jit
def _fx_rem_i(a, b):
    bad = (b == 0) | (b == -1)
    bs = tl.where(bad, 1, b)
    r = a % bs
    r = tl.where((r != 0) & ((r < 0) != (bs < 0)), r + bs, r)
    return tl.where(bad, 0, r)


@triton.jit
def _fx_floordiv_u(a, b):
    return tl.where(b == 0, 0, a // tl.where(b == 0, 1, b))


@triton.jit
def _fx_rem_u(a, b):
    return tl.where(b == 0, 0, a % tl.where(b == 0, 1, b))


@triton.jit
def _fx_rem_f(a, b):
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _fx_floordiv_f32(a, b):
    mod = a % b
    div = tl.math.div_rn(a - mod, b)
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    fl = tl.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1, fl)
    res = tl.where(div != 0, fl, 0.0 * (a / b))
    return tl.where(b == 0, tl.math.div_rn(a, b), res)


@triton.jit
def _fx_floordiv_f64(a, b):
    mod = a % b
    div = (a - mod) / b
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    fl = tl.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1, fl)
    res = tl.where(div != 0, fl, 0.0 * (a / b))
    return tl.where(b == 0, a / b, res)


@triton.jit
def _fx_powi(a, b, BITS: tl.constexpr, SIGNED: tl.constexpr):
    result = a * 0 + 1
    base = a
    e = b
    for _ in tl.static_range(BITS):
        result = tl.where((e & 1) != 0, result * base, result)
        base = base * base
        e = e >> 1
    if SIGNED:
        neg = tl.where(a == 1, 1, tl.where(a == -1, 1 - 2 * (b & 1), 0))
        result = tl.where(b < 0, neg, result)
    return result
"""


def _tl_literal(value: bool | int | float, dtype: str) -> str:
    value = _typed_value(value, dtype)
    if isinstance(value, float):
        if math.isnan(value):
            text = 'float("nan")'
        elif math.isinf(value):
            text = 'float("inf")' if value > 0 else 'float("-inf")'
        else:
            text = repr(value)
    else:
        text = str(int(value))
    return f"tl.full([], {text}, {_TL_DTYPE[compute_dtype(dtype)]})"


def _tl_convert(expr: str, src: str, dst: str) -> str:
    if src == dst:
        return expr
    if dst == "bool":
        return f"({expr} != 0)"
    return f"{expr}.to({_TL_DTYPE[dst]})"


def _tl_round(expr: str, dtype: str) -> str:
    if dtype in _HALF_DTYPES:
        return f"{expr}.to({_TL_DTYPE[dtype]}).to(tl.float32)"
    return expr


def _tl_div(a: str, b: str, dtype: str) -> str:
    return f"tl.math.div_rn({a}, {b})" if dtype == "float32" else f"({a} / {b})"


def _tl_op(
    op: str, dtype: str, args: list[str], exponent: float | None, arg_dtypes: list[str]
) -> str:
    is_float = dtype in _FLOAT_DTYPES
    is_bool = dtype == "bool"
    tl_t = _TL_DTYPE[dtype]
    a = args[0]
    b = args[1] if len(args) > 1 else ""
    one = f"tl.full([], 1, {tl_t})"
    zero = f"tl.full([], 0, {tl_t})"
    simple = {
        "sqrt": f"tl.sqrt_rn({a})" if dtype == "float32" else f"tl.sqrt({a})",
        "rsqrt": f"tl.rsqrt({a})",
        "exp": f"tl.exp({a})",
        "exp2": f"tl.exp2({a})",
        "log": f"tl.log({a})",
        "log2": f"tl.log2({a})",
        "sin": f"tl.sin({a})",
        "cos": f"tl.cos({a})",
        "erf": f"tl.erf({a})",
        "expm1": f"libdevice.expm1({a})",
        "log1p": f"libdevice.log1p({a})",
        "tan": f"libdevice.tan({a})",
        "tanh": f"libdevice.tanh({a})",
    }
    if op in simple:
        return simple[op]
    if op == "reciprocal":
        return _tl_div(one, a, dtype)
    if op == "sigmoid":
        return _tl_div(one, f"({one} + tl.exp(-{a}))", dtype)
    if op == "abs":
        return a if is_bool else f"tl.abs({a})"
    if op == "neg":
        return f"(-{a})"
    if op == "relu":
        return a if is_bool else f"tl.where({a} < 0, {zero}, {a})"
    if op in ("floor", "ceil", "trunc", "round"):
        if not is_float:
            return a
        if op == "trunc":
            return f"tl.where({a} < 0, tl.ceil({a}), tl.floor({a}))"
        if op == "round":
            return f"libdevice.nearbyint({a})"
        return f"tl.{op}({a})"
    if op == "sign":
        return (
            a if is_bool else f"(({zero} < {a}).to({tl_t}) - ({a} < {zero}).to({tl_t}))"
        )
    if op == "logical_not":
        return f"({a} == 0)"
    if op == "bitwise_not":
        return f"({a} == 0)" if is_bool else f"(~{a})"
    if op == "isnan":
        return f"({a} != {a})"
    if op == "add":
        return f"({a} | {b})" if is_bool else f"({a} + {b})"
    if op == "mul":
        return f"({a} & {b})" if is_bool else f"({a} * {b})"
    if op == "sub":
        return f"({a} - {b})"
    if op == "div":
        return _tl_div(a, b, dtype)
    if op in ("floor_divide", "remainder"):
        name = "floordiv" if op == "floor_divide" else "rem"
        if is_float:
            suffix = (
                ("_f32" if dtype == "float32" else "_f64")
                if name == "floordiv"
                else "_f"
            )
        else:
            suffix = "_u" if dtype in _UNSIGNED_DTYPES else "_i"
        return f"_fx_{name}{suffix}({a}, {b})"
    if op == "pow":
        if not is_float:
            bits = torch.iinfo(getattr(torch, dtype)).bits
            signed = dtype not in _UNSIGNED_DTYPES
            return f"_fx_powi({a}, {b}, {bits}, {signed})"
        special = {
            0.0: one,
            1.0: a,
            2.0: f"({a} * {a})",
            3.0: f"({a} * {a} * {a})",
            0.5: simple["sqrt"],
            -0.5: f"tl.rsqrt({a})",
            -1.0: _tl_div(one, a, dtype),
            -2.0: _tl_div(one, f"({a} * {a})", dtype),
        }
        if exponent is not None and exponent in special:
            return special[exponent]
        return f"libdevice.pow({a}, {b})"
    if op in ("maximum", "minimum"):
        if is_bool:
            return f"({a} {'|' if op == 'maximum' else '&'} {b})"
        nan = ", propagate_nan=tl.PropagateNan.ALL" if is_float else ""
        return f"tl.{op}({a}, {b}{nan})"
    if op == "atan2":
        return f"libdevice.atan2({a}, {b})"
    if op in _COMPARISONS:
        return f"({a} {_COMPARISONS[op]} {b})"
    if op == "logical_and":
        return f"(({a} != 0) & ({b} != 0))"
    if op == "logical_or":
        return f"(({a} != 0) | ({b} != 0))"
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
        return f"({a} {sym} {b})"
    if op == "where":
        return f"tl.where({a}, {b}, {args[2]})"
    raise NotImplementedError(f"fx_fusion codegen: op {op!r}")


def _next_power_of_2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


class _TritonGenerator:
    def __init__(self, analysis: _Analysis) -> None:
        a = analysis
        self.a = a
        self.spec = a.spec
        if a.is_reduction and a.reduce_numel > MAX_TRITON_REDUCE_NUMEL:
            raise NotImplementedError(
                f"fx_fusion Triton codegen: a reduce space of {a.reduce_numel} "
                f"elements (more than {MAX_TRITON_REDUCE_NUMEL}) does not fit one block"
            )
        self.two_d = a.is_reduction
        xnumel = max(a.outer_numel, 1)
        if self.two_d:
            self.rblock = _next_power_of_2(max(a.reduce_numel, 1))
            self.xblock = max(
                1, min(4096 // self.rblock, 128, _next_power_of_2(xnumel))
            )
            self.num_warps = max(1, min(8, self.xblock * self.rblock // 256))
        else:
            self.rblock = 1
            self.xblock = max(16, min(1024, _next_power_of_2(xnumel)))
            self.num_warps = max(1, min(4, self.xblock // 128))
        # Index arithmetic in int64 where int32 could overflow.
        reach = max([*a.read_inputs().values(), a.outer_numel * max(a.reduce_numel, 1)])
        self.int64 = reach + self.xblock * self.rblock >= 2**31 - 1

    def offset_terms(self, k: int, level: Level) -> tuple[list[str], bool, bool]:
        a = self.a
        x_terms = [
            f"x{d} * {st}" if st != 1 else f"x{d}"
            for d, st in enumerate(a.outer_strides[k])
            if st != 0
        ]
        r_terms = []
        if level == Level.INNER and self.two_d:
            r_terms = [
                f"r{d} * {st}" if st != 1 else f"r{d}"
                for d, st in enumerate(a.reduce_strides[k])
                if st != 0
            ]
        return x_terms + r_terms, bool(x_terms), bool(r_terms)

    @staticmethod
    def mask(has_x: bool, has_r: bool) -> str | None:
        if has_x and has_r:
            return "xrmask"
        if has_x:
            return "xmask"
        if has_r:
            return "rmask"
        return None

    @staticmethod
    def decompose(prefix: str, index: str, sizes: Sequence[int]) -> list[str]:
        lines = []
        for d in range(len(sizes)):
            step = _prod(sizes[d + 1 :])
            expr = index if step == 1 else f"({index} // {step})"
            if d > 0:
                expr = f"{expr} % {sizes[d]}"
            lines.append(f"{prefix}{d} = {expr}")
        return lines

    def stmt_line(self, i: int) -> str:
        a = self.a
        stmt = a.stmts[i]
        dtype = a.cdtype[i]
        if stmt.op == "load" and stmt.level == Level.INNER and a.reduce_numel == 0:
            # an empty reduce space: every lane is masked off, read nothing
            expr = _tl_literal(0, stmt.dtype)
        elif stmt.op == "load":
            k = stmt.input
            assert k is not None
            src = self.spec.inputs[k].dtype
            terms, has_x, has_r = self.offset_terms(k, stmt.level)
            ptr = f"in{k} + ({' + '.join(terms)})" if terms else f"in{k}"
            mask = self.mask(has_x, has_r)
            expr = (
                f"tl.load({ptr}, mask={mask}, other=0)" if mask else f"tl.load({ptr})"
            )
            if src in _HALF_DTYPES:
                expr = f"{expr}.to(tl.float32)"
            expr = _tl_convert(expr, compute_dtype(src), dtype)
            if src != stmt.dtype:
                expr = _tl_round(expr, stmt.dtype)
        elif stmt.op == "constant":
            assert stmt.value is not None
            expr = _tl_round(_tl_literal(stmt.value, stmt.dtype), stmt.dtype)
        elif stmt.op == "cast":
            (arg,) = stmt.args
            expr = _tl_convert(f"t{arg}", a.cdtype[arg], dtype)
            if a.stmts[arg].dtype != stmt.dtype:  # else a no-op (or a level change)
                expr = _tl_round(expr, stmt.dtype)
        elif stmt.op in REDUCTIONS:
            (arg,) = stmt.args
            value = _tl_convert(f"t{arg}", a.cdtype[arg], dtype)
            ident = _tl_literal(_reduction_identity(stmt.op, dtype), dtype)
            masked = f"tl.where(xrmask, {value}, {ident})"
            if stmt.op == "sum":
                expr = f"tl.sum({masked}, 1, keep_dims=True).to({_TL_DTYPE[dtype]})"
            elif stmt.op == "prod":
                expr = f"tl.reduce({masked}, 1, _fx_mul, keep_dims=True).to({_TL_DTYPE[dtype]})"
            elif dtype == "bool":
                fn = "tl.max" if stmt.op == "amax" else "tl.min"
                expr = f"({fn}({masked}.to(tl.int8), 1, keep_dims=True) != 0)"
            else:
                fn = "_fx_max" if stmt.op == "amax" else "_fx_min"
                expr = f"tl.reduce({masked}, 1, {fn}, keep_dims=True)"
        else:
            operand_dtypes = a.operand_dtypes(i)
            args = [
                "(" + _tl_convert(f"t{arg}", a.cdtype[arg], want) + ")"
                for arg, want in zip(stmt.args, operand_dtypes)
            ]
            expr = _tl_op(stmt.op, dtype, args, a.constant_exponent(i), operand_dtypes)
        return f"t{i} = {expr}"

    def source(self) -> str:
        a = self.a
        spec = self.spec
        ins = [f"in{k}" for k in range(len(spec.inputs))]
        outs = [f"out{n}" for n in range(len(spec.outputs))]
        params = ", ".join(
            [*ins, *outs, "XBLOCK: tl.constexpr"]
            + (["RBLOCK: tl.constexpr"] if self.two_d else [])
        )
        body = []
        pid = "tl.program_id(0).to(tl.int64)" if self.int64 else "tl.program_id(0)"
        xnumel = max(a.outer_numel, 1)
        if self.two_d:
            body.append(f"xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
            body.append(f"xmask = xindex < {xnumel}")
            rarange = "tl.arange(0, RBLOCK)[None, :]"
            if self.int64:
                rarange = f"{rarange}.to(tl.int64)"
            body.append(f"rindex = {rarange}")
            body.append(f"rmask = rindex < {a.reduce_numel}")
            body.append("xrmask = xmask & rmask")
        else:
            body.append(f"xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK)")
            body.append(f"xmask = xindex < {xnumel}")
        body += self.decompose("x", "xindex", a.outer_sizes)
        if self.two_d:
            body += self.decompose("r", "rindex", a.reduce_sizes)
        body += [self.stmt_line(i) for i in a.live]
        for n, out in enumerate(spec.outputs):
            stmt = a.stmts[out.stmt]
            value = _tl_convert(
                f"t{out.stmt}", a.cdtype[out.stmt], compute_dtype(out.dtype)
            )
            if out.dtype != compute_dtype(out.dtype):
                value = f"{value}.to({_TL_DTYPE[out.dtype]})"
            if self.two_d and stmt.level == Level.INNER:
                index = (
                    f"xindex * {a.reduce_numel} + rindex"
                    if a.reduce_numel != 1
                    else "xindex + rindex"
                )
                shape, mask = "[XBLOCK, RBLOCK]", "xrmask"
            else:
                index, mask = "xindex", "xmask"
                shape = "[XBLOCK, 1]" if self.two_d else "[XBLOCK]"
            body.append(
                f"tl.store(out{n} + ({index}), tl.broadcast_to({value}, {shape}), mask={mask})"
            )
        lines = [
            _TRITON_PRELUDE.strip(),
            "",
            "",
            "@triton.jit",
            f"def fx_kernel({params}):",
        ]
        lines += ["    " + line for line in body]
        return "\n".join(lines) + "\n"


def _np_elementwise(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A numpy stand-in for a libdevice function under the Triton interpreter."""

    def call(*args: Any) -> Any:
        import numpy as np
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        datas = [arg.handle.data for arg in args]
        with np.errstate(all="ignore"):
            data = np.asarray(fn(*datas), dtype=datas[0].dtype)
        dtype = args[0].dtype
        if any(arg.type.is_block() for arg in args):
            ty = tl.block_type(dtype, list(data.shape))
        else:
            ty = dtype
        return tl.tensor(TensorHandle(np.ascontiguousarray(data), dtype), ty)

    return call


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@functools.cache
def triton_libdevice() -> Any:
    """The ``libdevice`` the generated Triton kernels call.

    Triton's interpreter (``TRITON_INTERPRET=1``) cannot run libdevice
    functions, so there the few the kernels use (``expm1``, ``log1p``,
    ``tan``, ``tanh``, ``atan2``, ``pow``, ``nearbyint``) are numpy
    stand-ins; on a GPU this is ``triton.language.extra.libdevice``.
    """
    if not _interpreting():
        from triton.language.extra import libdevice

        return libdevice
    import numpy as np

    return types.SimpleNamespace(
        expm1=_np_elementwise(np.expm1),
        log1p=_np_elementwise(np.log1p),
        tan=_np_elementwise(np.tan),
        tanh=_np_elementwise(np.tanh),
        atan2=_np_elementwise(np.arctan2),
        pow=_np_elementwise(np.power),
        nearbyint=_np_elementwise(np.rint),
    )


# ---------------------------------------------------------------------------
# Compilation, caching and the runners


_lock = threading.RLock()
_runners: dict[tuple[object, ...], Callable[..., list[torch.Tensor]]] = {}
_libraries: dict[str, ctypes.CDLL] = {}
_modules: dict[str, types.ModuleType] = {}


def clear_cache() -> None:
    """Forget the runners loaded in this process (the disk cache stays)."""
    with _lock:
        _runners.clear()
        _libraries.clear()
        _modules.clear()


def _cache_root() -> Path:
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return Path(cache_dir()) / "fx_fusion"


def _backend(device: str) -> str:
    if device == "triton":
        return "triton"
    kind = torch.device(device).type
    if kind == "cpu":
        return "cpp"
    if kind in ("cuda", "xpu"):
        return "triton"
    raise NotImplementedError(f"fx_fusion codegen: device {device!r}")


def generated_source(spec: KernelSpec, device: str) -> str:
    """The C++ (``device="cpu"``) or Triton (``"cuda"``, ``"triton"``) source
    of ``spec``'s kernel."""
    analysis = _Analysis(spec)
    if _backend(device) == "cpp":
        return _CppGenerator(analysis).source()
    return _TritonGenerator(analysis).source()


@functools.cache
def _cxx() -> str:
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and (path := shutil.which(name)):
            return path
    raise RuntimeError("fx_fusion codegen: no C++ compiler (set $CXX)")


# Tried in order until one compiles.  -fwrapv gives integer overflow torch's
# wrap-around semantics; -ffp-contract=off keeps a * b + c two roundings, as
# in eager; -fno-math-errno and -fno-trapping-math (no change to results: the
# kernels never read errno or the floating-point exception flags) let loops
# with sqrt and selects vectorize.
_CXX_FLAG_SETS = (
    ("-O3", "-march=native", "-fopenmp"),
    ("-O3", "-march=native"),
    ("-O2", "-fopenmp"),
    ("-O2",),
)
_CXX_COMMON_FLAGS = (
    "-std=c++17",
    "-shared",
    "-fPIC",
    "-fwrapv",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fno-trapping-math",
    "-w",
)
_first_working_flag_set = 0


@functools.cache
def _machine_id() -> str:
    """The compiler and the CPU a cached .so was built for (-march=native)."""
    cxx = _cxx()
    parts = [cxx, str(os.stat(cxx).st_mtime_ns), platform.machine()]
    try:
        with open("/proc/cpuinfo") as f:
            parts += [line for line in f if line.startswith(("flags", "model name"))][
                :2
            ]
    except OSError:
        parts.append(platform.processor())
    return "\n".join(parts)


def _compile_cpp(source: str) -> Path:
    global _first_working_flag_set
    key = hashlib.sha256(
        "\n".join(
            [source, repr(_CXX_FLAG_SETS), repr(_CXX_COMMON_FLAGS), _machine_id()]
        ).encode()
    ).hexdigest()
    directory = _cache_root() / "cpp"
    so_path = directory / f"{key}.so"
    if so_path.exists():
        counters["cpp_disk_hit"] += 1
        return so_path
    directory.mkdir(parents=True, exist_ok=True)
    cpp_path = directory / f"{key}.cpp"
    if not cpp_path.exists():
        _atomic_write(cpp_path, source)
    errors = []
    for index in range(_first_working_flag_set, len(_CXX_FLAG_SETS)):
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=directory)
        os.close(fd)
        cmd = [
            _cxx(),
            *_CXX_FLAG_SETS[index],
            *_CXX_COMMON_FLAGS,
            str(cpp_path),
            "-o",
            tmp,
        ]
        counters["cpp_compile"] += 1
        log.debug("fx_fusion: %s", " ".join(cmd))
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode == 0:
            _first_working_flag_set = index
            os.replace(tmp, so_path)
            return so_path
        os.unlink(tmp)
        errors.append(f"$ {' '.join(cmd)}\n{result.stderr}")
    raise RuntimeError(
        "fx_fusion codegen: C++ compilation failed\n" + "\n".join(errors)
    )


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(suffix=path.suffix, dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _load_triton(source: str) -> types.ModuleType:
    key = hashlib.sha256(source.encode()).hexdigest()
    if key in _modules:
        return _modules[key]
    directory = _cache_root() / "triton"
    path = directory / f"fx_{key}.py"
    if path.exists() and path.read_text() == source:
        counters["triton_disk_hit"] += 1
    else:
        directory.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, source)
        counters["triton_source_write"] += 1
    name = f"torch._inductor.fx_passes._fx_fusion_triton_{key[:20]}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    _modules[key] = module
    return module


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


def _cpp_runner(analysis: _Analysis) -> _Runner:
    runner = _Runner(analysis, torch.device("cpu"))
    if runner.empty:
        return runner
    path = str(_compile_cpp(_CppGenerator(analysis).source()))
    with _lock:
        if path not in _libraries:
            _libraries[path] = ctypes.CDLL(path)
        library = _libraries[path]
    fn = library.fx_kernel
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    in_array = ctypes.c_void_p * max(runner.n_inputs, 1)
    out_array = ctypes.c_void_p * max(len(runner.out_specs), 1)

    def launch(inputs: Sequence[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        for t in inputs:
            if t.device.type != "cpu":
                raise ValueError(f"fx_fusion C++ kernel given a tensor on {t.device}")
        err = fn(
            in_array(*[t.data_ptr() for t in inputs]),
            out_array(*[t.data_ptr() for t in outputs]),
            torch.get_num_threads(),
        )
        if err:
            raise RuntimeError("ZeroDivisionError")

    runner.launch = launch
    return runner


def _triton_runner(analysis: _Analysis, device: str) -> _Runner:
    if device == "triton":
        default = torch.device("cpu" if _interpreting() else "cuda")
    else:
        default = torch.device(device)
    generator = _TritonGenerator(analysis)
    runner = _Runner(analysis, default)
    if runner.empty:
        return runner
    kernel = _load_triton(generator.source()).fx_kernel
    grid = ((max(analysis.outer_numel, 1) + generator.xblock - 1) // generator.xblock,)
    options: dict[str, int] = {
        "XBLOCK": generator.xblock,
        "num_warps": generator.num_warps,
    }
    if generator.two_d:
        options["RBLOCK"] = generator.rblock

    def launch(inputs: Sequence[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        device = outputs[0].device
        if device.type == "cuda" and device.index != torch.cuda.current_device():
            with torch.cuda.device(device):
                kernel[grid](*inputs, *outputs, **options)
        else:
            kernel[grid](*inputs, *outputs, **options)

    runner.launch = launch
    return runner


def compile_kernel(spec: KernelSpec, device: str) -> Callable[..., list[torch.Tensor]]:
    """Compile ``spec`` for ``device`` and return its runner.

    ``device`` is ``"cpu"`` (C++), ``"cuda"``/``"cuda:N"`` (Triton) or
    ``"triton"``: the Triton kernel whatever the tensors' device, which with
    ``TRITON_INTERPRET=1`` (set before triton is imported) runs on CPU tensors
    through Triton's interpreter, for tests.

    The runner takes the input tensors in ``spec.inputs`` order (data pointers
    as they are: the spec's strides are applied to them) and returns new
    contiguous outputs: an OUTER output of ``outer_shape``, an INNER one of
    ``outer_shape + reduce_shape``, on the inputs' device.  It raises
    ``NotImplementedError`` for what the generator does not support (Triton
    reductions over more than :data:`MAX_TRITON_REDUCE_NUMEL` elements, dtypes
    outside float16/bfloat16/float32/float64/int8/uint8/int16/int32/int64/bool)
    and ``ValueError`` for a malformed spec.

    Calling the runner raises ``TypeError`` for inputs of the wrong number or
    dtype, ``ValueError`` for an input whose storage is too small for the
    spec's strides, ``IndexError`` for amax/amin over an empty reduce space
    (as torch), and, on the CPU, ``RuntimeError("ZeroDivisionError")`` for an
    integer floor_divide/remainder by zero (as torch on the CPU; the Triton
    kernel gives 0 there).
    """
    backend = _backend(device)
    key = (spec.key(), backend if backend == "cpp" else device)
    with _lock:
        runner = _runners.get(key)
        if runner is not None:
            counters["memory_hit"] += 1
            return runner
    analysis = _Analysis(spec)
    if backend == "cpp":
        runner = _cpp_runner(analysis)
    else:
        runner = _triton_runner(analysis, device)
    with _lock:
        _runners[key] = runner
    return runner
