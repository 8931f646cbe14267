"""The FX fusion arm's Triton code generator (CUDA kernels).

A :class:`~.ir.KernelSpec` becomes a Triton kernel written to a real source
file (``fx_fusion/triton/fx_<hash>.py`` in the cache) and imported from it.
The grid is 1-D over the outer space (``XBLOCK`` points per program); a
reduction kernel holds the whole reduce space of a point in one block
(``RBLOCK`` = next power of two, ragged lanes masked), so every statement is
computed once.  Reduce spaces above :data:`MAX_TRITON_REDUCE_NUMEL` elements
raise :class:`NotImplementedError` (the pass then leaves that reduction
unfused).  Float sums accumulate in float32 (tree order).

Under ``TRITON_INTERPRET=1`` (set before triton is imported) the kernels run
on CPU tensors through Triton's interpreter, with numpy stand-ins for the
libdevice functions they call (:func:`.triton_support.triton_libdevice`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import sys
import types
from typing import TYPE_CHECKING

import torch

from .codegen_common import (
    _Analysis,
    _atomic_write,
    _cache_root,
    _COMPARISONS,
    _FLOAT_DTYPES,
    _HALF_DTYPES,
    _prod,
    _reduction_identity,
    _Runner,
    _typed_value,
    _UNSIGNED_DTYPES,
    counters,
)
from .ir import compute_dtype, Level, REDUCTIONS
from .triton_support import triton_interpreting


if TYPE_CHECKING:
    from collections.abc import Sequence


# The largest reduce space a Triton kernel holds in one block.
MAX_TRITON_REDUCE_NUMEL = 16384


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

from fx_fusion.triton_support import triton_libdevice


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


# ---------------------------------------------------------------------------
# Loading and the runner


_modules: dict[str, types.ModuleType] = {}


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
    name = f"fx_fusion_triton_{key[:20]}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    _modules[key] = module
    return module


def _triton_runner(analysis: _Analysis, device: str) -> _Runner:
    if device == "triton":
        default = torch.device("cpu" if triton_interpreting() else "cuda")
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
