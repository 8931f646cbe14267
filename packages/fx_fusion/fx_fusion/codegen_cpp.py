"""The FX fusion arm's C++ code generator (CPU kernels).

A :class:`~.ir.KernelSpec` becomes a C++ function (``extern "C" int
fx_kernel(void* const* in, void* const* out, int nthreads)``) with one loop
nest over the iteration space, compiled with the system C++ compiler
(``$CXX``, else ``g++``) into a shared library and called through
:mod:`ctypes`.  Shapes and strides are compile-time constants.

Loop structure, for each point of the outer space: the outer statements in
order; each reduction is a loop over the reduce space that computes
(recomputes) the inner statements it needs, and reductions that do not
depend on each other share one loop (``var_mean`` is one pass); inner
outputs are written by a final loop over the reduce space.  The outer loops
carry ``#pragma omp parallel for`` when the kernel is large enough.

Float32 ``exp``, ``sigmoid`` and ``tanh`` use branch-free versions in the C++
prelude (within a few ulp) so their loops vectorize; other math is
``<cmath>``.  Float sums accumulate in double.  A compiled library is cached
as ``fx_fusion/cpp/<hash>.so`` (the hash of the source, the compiler flags
and the machine) and loaded without running the compiler.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import hashlib
import logging
import math
import os
import platform
import shutil
import subprocess
import tempfile
from typing import TYPE_CHECKING

import torch

from .codegen_common import (
    _Analysis,
    _atomic_write,
    _cache_root,
    _COMPARISONS,
    _FLOAT_DTYPES,
    _FLOAT_ONLY_OPS,
    _HALF_DTYPES,
    _lock,
    _prod,
    _reduction_identity,
    _Runner,
    _typed_value,
    counters,
)
from .ir import compute_dtype, Level, REDUCTIONS


if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


log = logging.getLogger(__name__)


# The CPU kernel parallelizes its outer loops (OpenMP) from this many points
# of the iteration space on.
PARALLEL_MIN_NUMEL = 32768


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
# Compilation and the runner


_libraries: dict[str, ctypes.CDLL] = {}


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
