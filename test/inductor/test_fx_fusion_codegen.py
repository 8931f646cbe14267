# Owner(s): ["module: inductor"]
"""The FX fusion arm's code generators (``torch._inductor.fx_fusion.codegen``).

Each test builds :class:`KernelSpec`s by hand, runs the generated kernel and
compares it with a reference that evaluates the same spec with torch eager
ops (``_reference``).  The C++ path is tested in this process; the Triton
path under Triton's interpreter (``TRITON_INTERPRET=1``) in a subprocess, on
the same cases, and the same Triton kernels are compiled for an H100 (sm_90)
through Triton's real compiler, which needs no GPU.  C++ compiles take a
fraction of a second each, so each test groups many ops into one kernel.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch
from torch._inductor.fx_fusion import (
    codegen,
    codegen_common,
    codegen_cpp,
    codegen_triton,
)
from torch._inductor.fx_fusion.ir import (
    BINARY_OPS,
    compute_dtype,
    InputSpec,
    KernelSpec,
    Level,
    OutputSpec,
    REDUCTIONS,
    Stmt,
    TERNARY_OPS,
    UNARY_OPS,
)
from torch._inductor.test_case import run_tests, TestCase
from torch.testing._internal.inductor_utils import HAS_CUDA_AND_TRITON


try:
    from hypothesis import given, HealthCheck, settings, strategies as st

    HAS_HYPOTHESIS = True
except ImportError:
    HAS_HYPOTHESIS = False


TEST_DIR = os.path.dirname(os.path.abspath(__file__))
INNER, OUTER = Level.INNER, Level.OUTER


# ---------------------------------------------------------------------------
# Building specs and evaluating them with torch


def _torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


class SpecBuilder:
    """Builds a KernelSpec statement by statement; dtypes follow torch."""

    def __init__(self, outer_shape=(), reduce_shape=()) -> None:
        self.outer_shape = tuple(outer_shape)
        self.reduce_shape = tuple(reduce_shape)
        self.inputs: list[InputSpec] = []
        self.stmts: list[Stmt] = []
        self.outputs: list[OutputSpec] = []

    def _add(self, stmt: Stmt) -> int:
        self.stmts.append(stmt)
        return len(self.stmts) - 1

    def load(self, tensor: torch.Tensor, level: Level = INNER) -> int:
        """An input with ``tensor``'s dtype and strides (its shape must be
        the iteration space, as a view)."""
        assert tuple(tensor.shape) == self.outer_shape + self.reduce_shape, tensor.shape
        self.inputs.append(InputSpec(_dtype_name(tensor.dtype), tensor.stride()))
        return self._add(
            Stmt(
                "load",
                (),
                _dtype_name(tensor.dtype),
                level,
                input=len(self.inputs) - 1,
            )
        )

    def const(self, value, dtype: str, level: Level = INNER) -> int:
        return self._add(Stmt("constant", (), dtype, level, value=value))

    def cast(self, arg: int, dtype: str) -> int:
        return self._add(Stmt("cast", (arg,), dtype, self.stmts[arg].level))

    def op(self, op: str, *args: int, dtype: str | None = None) -> int:
        levels = {self.stmts[a].level for a in args}
        level = OUTER if op in REDUCTIONS or levels == {OUTER} else INNER
        if dtype is None:
            dtype = _result_dtype(op, [self.stmts[a].dtype for a in args])
        return self._add(Stmt(op, tuple(args), dtype, level))

    def out(self, stmt: int, dtype: str | None = None) -> None:
        self.outputs.append(OutputSpec(stmt, dtype or self.stmts[stmt].dtype))

    def spec(self, name: str = "fx_test") -> KernelSpec:
        return KernelSpec(
            name,
            self.outer_shape,
            self.reduce_shape,
            tuple(self.inputs),
            tuple(self.stmts),
            tuple(self.outputs),
        )


def _result_dtype(op: str, arg_dtypes: list[str]) -> str:
    if op in ("sum", "prod"):
        (dtype,) = arg_dtypes
        return (
            "int64" if dtype in ("bool", "uint8", "int8", "int16", "int32") else dtype
        )
    if op in ("amax", "amin"):
        return arg_dtypes[0]
    samples = [torch.ones(1, dtype=_torch_dtype(d)) for d in arg_dtypes]
    return _dtype_name(_TORCH_OPS[op](*samples).dtype)


_TORCH_OPS = {op: getattr(torch, op) for op in UNARY_OPS | BINARY_OPS | TERNARY_OPS}


def _reference(spec: KernelSpec, inputs) -> list[torch.Tensor]:
    """Evaluate ``spec`` with torch ops, in each statement's compute dtype."""
    outer, red = spec.outer_shape, spec.reduce_shape
    full = outer + red
    keep = outer + (1,) * len(red)
    rdims = tuple(range(len(outer), len(full)))
    values: list[torch.Tensor] = []
    for stmt in spec.stmts:
        cdtype = _torch_dtype(compute_dtype(stmt.dtype))
        if stmt.op == "load":
            t = inputs[stmt.input]
            st = spec.inputs[stmt.input].strides
            shape = full if stmt.level == INNER else keep
            value = t.as_strided(shape, st, t.storage_offset())
            value = value.to(_torch_dtype(stmt.dtype))
        elif stmt.op == "constant":
            # 0-dim: in type promotion, like the Python scalar it stands for
            value = torch.tensor(stmt.value, dtype=_torch_dtype(stmt.dtype))
        elif stmt.op == "cast":
            value = values[stmt.args[0]].to(_torch_dtype(stmt.dtype))
        elif stmt.op in REDUCTIONS:
            x = values[stmt.args[0]].to(cdtype).expand(full)
            if stmt.op == "sum":
                value = x.sum(rdims, keepdim=True) if rdims else x
            elif stmt.op == "prod":
                value = x.reshape(*outer, -1 if x.numel() else 0).prod(-1).reshape(keep)
            elif stmt.op == "amax":
                value = x.amax(rdims, keepdim=True)
            else:
                value = x.amin(rdims, keepdim=True)
        else:
            args = [values[a] for a in stmt.args]
            exponent = spec.stmts[stmt.args[-1]]
            if stmt.op == "pow" and exponent.op == "constant":
                # a Python scalar exponent, as torch's pow(Tensor, Scalar)
                args[1] = exponent.value
            value = _TORCH_OPS[stmt.op](*args)
        values.append(value.to(cdtype))
    outputs = []
    for out in spec.outputs:
        level = spec.stmts[out.stmt].level
        shape = outer if level == OUTER else full
        value = values[out.stmt].expand(keep if level == OUTER else full)
        outputs.append(value.reshape(shape).to(_torch_dtype(out.dtype)))
    return outputs


def _check(test, spec, inputs, device="cpu", **tolerances) -> list[torch.Tensor]:
    actual = codegen.compile_kernel(spec, device)(*inputs)
    expected = _reference(spec, inputs)
    test.assertEqual(len(actual), len(expected))
    for n, (a, e) in enumerate(zip(actual, expected)):
        test.assertEqual(a.shape, e.shape, msg=f"output {n}")
        test.assertEqual(a.dtype, e.dtype, msg=f"output {n}")
        test.assertTrue(a.is_contiguous())
        torch.testing.assert_close(
            a, e, equal_nan=True, msg=lambda m, n=n: f"output {n}: {m}", **tolerances
        )
    return actual


# ---------------------------------------------------------------------------
# The cases, shared by the C++ tests and the Triton interpreter subprocess.
# Each returns (spec, inputs, tolerances).


def _special_floats(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    specials = torch.tensor(
        [
            float("nan"),
            float("inf"),
            -float("inf"),
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            -0.5,
            -2.5,
            1.0,
            -1.0,
            3.0,
            -3.0,
        ]
    )
    return torch.cat([specials, torch.randn(n - len(specials), generator=g) * 3])


def case_unary_float32():
    x = _special_floats(64, 0)
    b = SpecBuilder((64,))
    v = b.load(x)
    for op in sorted(UNARY_OPS - {"bitwise_not"}):
        b.out(b.op(op, v))
    return b.spec("unary_f32"), [x], {}


def case_unary_int():
    g = torch.Generator().manual_seed(1)
    i = torch.randint(-100, 100, (33,), generator=g)
    f = torch.tensor([True, False] * 16 + [True])
    b = SpecBuilder((33,))
    vi, vb = b.load(i), b.load(f)
    for op in (
        "abs",
        "neg",
        "sign",
        "relu",
        "floor",
        "ceil",
        "round",
        "trunc",
        "bitwise_not",
        "logical_not",
        "isnan",
        "sqrt",
        "exp",
        "sigmoid",
    ):
        b.out(b.op(op, vi))
    for op in ("bitwise_not", "logical_not", "isnan", "sign"):
        b.out(b.op(op, vb))
    i8 = b.cast(vi, "int8")
    b.out(b.op("neg", b.op("abs", i8)))
    # exp(99) on a GPU: Triton's exp (as Inductor's) is exp2(x * log2(e)), whose
    # rounded product costs about |x| ulps; torch's CUDA expf is correctly rounded.
    return b.spec("unary_int"), [i, f], {"rtol": 1e-5, "atol": 1e-5}


def case_binary_float32():
    x = _special_floats(196, 2).reshape(14, 14)
    x[1, :3] = torch.tensor([0.1, 0.099999994, 0.10000001])
    y = x.t().contiguous()
    y[0, :] = 0.0
    b = SpecBuilder((14, 14))
    vx, vy = b.load(x), b.load(y)
    for op in sorted(BINARY_OPS - {"bitwise_and", "bitwise_or", "bitwise_xor"}):
        b.out(b.op(op, vx, vy))
    for exponent in (0, 1, 2, 3, 0.5, -0.5, -1, -2, 2.5):
        dtype = "int64" if isinstance(exponent, int) else "float32"
        b.out(b.op("pow", vx, b.const(exponent, dtype), dtype="float32"))
    b.out(b.op("where", b.op("lt", vx, vy), vx, vy))
    # a Python scalar compared with a float32 tensor: float32 (even typed
    # float64 in the spec), with an int tensor: the default float dtype
    tenth = b.const(0.1, "float64")
    b.out(b.op("le", vx, tenth, dtype="bool"))
    i = torch.arange(-98, 98).reshape(14, 14)
    b.out(b.op("gt", b.load(i), b.const(0.5, "float64"), dtype="bool"))
    return b.spec("binary_f32"), [x, y, i], {}


def case_binary_int():
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-100, 100, (8, 16), generator=g)
    y = torch.randint(-9, 9, (8, 16), generator=g)
    y[y == 0] = 7
    y[0, 0], x[0, 0] = -1, -(2**63)
    y[0, 1], x[0, 1] = 3, 2**62
    b = SpecBuilder((8, 16))
    vx, vy = b.load(x), b.load(y)
    for op in sorted(BINARY_OPS - {"atan2"}):
        b.out(b.op(op, vx, vy))
    # int32 and int8 arithmetic (wrap-around) and int/float promotion
    x32, y8 = b.cast(vx, "int32"), b.cast(vy, "int8")
    b.out(b.op("floor_divide", x32, b.cast(vy, "int32")))
    b.out(b.op("remainder", b.cast(vx, "int8"), y8))
    b.out(b.op("mul", b.cast(vx, "int8"), y8))
    b.out(b.op("pow", vy, b.op("abs", vy)))
    b.out(b.op("add", vx, b.cast(vy, "float32")))
    b.out(b.op("lt", x32, b.cast(vy, "float32")))
    b.out(b.op("where", b.op("gt", vx, vy), vx, y8))
    u8x, u8y = b.cast(b.op("abs", vx), "uint8"), b.cast(b.op("abs", vy), "uint8")
    for op in ("floor_divide", "remainder", "sub", "pow", "maximum", "bitwise_xor"):
        b.out(b.op(op, u8x, u8y))
    return b.spec("binary_int"), [x, y], {}


def case_binary_bool():
    x = torch.tensor([True, True, False, False] * 4)
    y = torch.tensor([True, False, True, False] * 4)
    b = SpecBuilder((16,))
    vx, vy = b.load(x), b.load(y)
    for op in (
        "add",
        "mul",
        "maximum",
        "minimum",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
    ):
        b.out(b.op(op, vx, vy))
    b.out(b.op("where", vx, b.const(1.5, "float32"), b.cast(vy, "float32")))
    b.out(b.op("add", vx, b.const(3, "int64")))
    return b.spec("binary_bool"), [x, y], {}


def case_broadcast_strided():
    g = torch.Generator().manual_seed(4)
    base = torch.randn(5, 9, 13, generator=g)
    t = base.permute(2, 0, 1)[:, 1:4, ::2]  # (13, 3, 5), non-contiguous
    row = torch.randn(5, generator=g).expand(13, 3, 5)  # stride 0
    col = torch.randn(13, 1, 1, generator=g)[:, :, :1].expand(13, 3, 5)
    storage = torch.randn(400, generator=g)
    offset = storage[7:].as_strided((13, 3, 5), (1, 0, 20))
    b = SpecBuilder((13, 3, 5))
    vt, vr, vc, vo = b.load(t), b.load(row), b.load(col), b.load(offset)
    s = b.op("add", b.op("mul", vt, vr), vc)
    b.out(b.op("sub", s, vo))
    b.out(b.op("gt", vt, vc))
    b.out(vr)
    return b.spec("broadcast_strided"), [t, row, col, offset], {}


def case_half():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 10, generator=g).half()
    y = torch.randn(10, 6, generator=g).bfloat16().t()
    z = torch.randn(6, 10, generator=g)
    b = SpecBuilder((6, 10))
    vx, vy, vz = b.load(x), b.load(y), b.load(z)
    s = b.op("add", b.op("mul", vx, vx), b.cast(vy, "float16"))
    b.out(s, "float16")
    b.out(s, "bfloat16")
    b.out(s, "float32")
    b.out(b.op("sigmoid", vy), "bfloat16")
    b.out(b.op("exp", b.cast(vz, "float16")))  # rounds z to float16 first
    b.out(b.op("gt", b.cast(vz, "bfloat16"), vx))
    b.out(b.op("add", vz, b.const(0.1, "float16")))
    return b.spec("half"), [x, y, z], {}


def case_half_rounding(bfloat16: bool = True):
    """Stores and casts to float16/bfloat16 round to nearest even, exactly as
    torch's conversions."""
    g = torch.Generator().manual_seed(13)
    x = torch.randn(4096, generator=g) * 10.0 ** torch.randint(
        -6, 5, (4096,), generator=g
    )
    # ties: halfway between two bfloat16 / float16 values
    x[:64] = (torch.arange(64, dtype=torch.int32) * 0x10000 + 0x3F808000).view(
        torch.float32
    )
    x[64:128] = torch.arange(64) * 2.0**-10 + 1 + 2.0**-11
    x[128:136] = torch.tensor(
        [
            float("nan"),
            float("inf"),
            -float("inf"),
            65504.0,
            65520.0,
            1e-8,
            -0.0,
            3.4e38,
        ]
    )
    b = SpecBuilder((4096,))
    v = b.load(x)
    if bfloat16:
        b.out(v, "bfloat16")
        b.out(b.cast(v, "bfloat16"), "float32")
    b.out(v, "float16")
    b.out(b.cast(v, "float16"), "float32")
    b.out(b.op("mul", b.cast(v, "float16"), b.const(3.0, "float16")), "float16")
    return b.spec("half_rounding"), [x], {"rtol": 0, "atol": 0}


def case_reductions():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(3, 4, 5, 6, generator=g).permute(0, 2, 1, 3)  # (3, 5, 4, 6)
    y = torch.randn(3, 5, generator=g)[:, :, None, None].expand(3, 5, 4, 6)
    i = torch.randint(-5, 5, (3, 5, 4, 6), generator=g)
    h = torch.rand(3, 5, 4, 6, generator=g).half() + 0.5
    b = SpecBuilder((3, 5), (4, 6))
    vx, vy, vi, vh = b.load(x), b.load(y, OUTER), b.load(i), b.load(h)
    pro = b.op("add", b.op("mul", vx, b.const(2.0, "float32")), b.const(1.0, "float32"))
    for op in ("sum", "amax", "amin"):
        r = b.op(op, pro)
        b.out(r)
        b.out(b.op("sqrt", b.op("abs", b.op("add", r, vy))))  # epilogue
    b.out(b.op("prod", vh))
    b.out(b.op("prod", b.op("add", b.op("abs", vx), b.const(0.5, "float32"))))
    b.out(b.op("sum", vi))
    b.out(b.op("amax", vi))
    b.out(b.op("sum", b.op("gt", vx, b.const(0.0, "float32"))))
    b.out(b.op("amin", b.op("gt", vx, b.const(-2.0, "float32"))))
    b.out(b.op("sum", vh), "float16")
    b.out(b.op("mul", vx, vy))  # an INNER output
    return b.spec("reductions"), [x, y, i, h], {"rtol": 1e-5, "atol": 1e-4}


def case_reduce_one_dim():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(37, 300, generator=g)
    x[3, 100] = float("nan")  # amax and amin propagate NaN
    b = SpecBuilder((37,), (300,))
    vx = b.load(x)
    sq = b.op("mul", vx, vx)
    b.out(b.op("sum", sq))
    b.out(b.op("amax", b.op("neg", vx)))
    b.out(b.op("exp", b.op("amin", vx)))
    return b.spec("reduce_one_dim"), [x], {"rtol": 1e-5, "atol": 1e-4}


def softmax_spec(x: torch.Tensor) -> KernelSpec:
    """softmax over the last dim: amax -> sub/exp -> sum -> div."""
    b = SpecBuilder(x.shape[:-1], x.shape[-1:])
    v = b.load(x)
    e = b.op("exp", b.op("sub", v, b.op("amax", v)))
    b.out(b.op("div", e, b.op("sum", e)), _dtype_name(x.dtype))
    return b.spec("softmax")


def case_softmax():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(16, 31, generator=g) * 4
    return softmax_spec(x), [x], {}


def case_softmax_half():
    g = torch.Generator().manual_seed(9)
    x = (torch.randn(7, 100, generator=g) * 4).half()
    return softmax_spec(x), [x], {}


def var_mean_spec(x: torch.Tensor) -> KernelSpec:
    """var_mean over the trailing dims: sum(x) and sum(x*x) from one load."""
    n_outer = x.dim() - 1
    b = SpecBuilder(x.shape[:n_outer], x.shape[n_outer:])
    v = b.load(x)
    n = b.const(float(x.shape[-1]), "float32", OUTER)
    mean = b.op("div", b.op("sum", v), n)
    mean_sq = b.op("div", b.op("sum", b.op("mul", v, v)), n)
    var = b.op("sub", mean_sq, b.op("mul", mean, mean))
    correction = b.const(x.shape[-1] / (x.shape[-1] - 1), "float32", OUTER)
    b.out(b.op("mul", var, correction))
    b.out(mean)
    return b.spec("var_mean")


def case_var_mean():
    g = torch.Generator().manual_seed(10)
    x = torch.randn(9, 50, generator=g) + 3
    return var_mean_spec(x), [x], {"rtol": 1e-4, "atol": 1e-5}


def case_layer_norm():
    """Two stages of reductions: mean, then the mean of squared deviations."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(6, 40, generator=g)
    w = torch.randn(40, generator=g).expand(6, 40)
    b = SpecBuilder((6,), (40,))
    v, vw = b.load(x), b.load(w)
    n = b.const(40.0, "float32", OUTER)
    mean = b.op("div", b.op("sum", v), n)
    d = b.op("sub", v, mean)
    var = b.op("div", b.op("sum", b.op("mul", d, d)), n)
    rstd = b.op("rsqrt", b.op("add", var, b.const(1e-5, "float32", OUTER)))
    b.out(b.op("mul", b.op("mul", d, rstd), vw))
    b.out(rstd)
    return b.spec("layer_norm"), [x, w], {"rtol": 1e-5, "atol": 1e-5}


def case_empty_reduce():
    g = torch.Generator().manual_seed(12)
    x = torch.randn(4, 0, generator=g)
    y = torch.randn(4, 1, generator=g).expand(4, 0)
    b = SpecBuilder((4,), (0,))
    v, vy = b.load(x), b.load(y, OUTER)
    b.out(b.op("add", b.op("sum", v), vy))
    b.out(b.op("prod", v))
    b.out(b.op("exp", v))
    return b.spec("empty_reduce"), [x, y], {}


CASES = {
    f.__name__.removeprefix("case_"): f
    for f in (
        case_unary_float32,
        case_unary_int,
        case_binary_float32,
        case_binary_int,
        case_binary_bool,
        case_broadcast_strided,
        case_half,
        case_half_rounding,
        case_reductions,
        case_reduce_one_dim,
        case_softmax,
        case_softmax_half,
        case_var_mean,
        case_layer_norm,
        case_empty_reduce,
    )
}


# Triton 3.6's interpreter truncates float32 -> bfloat16 conversions (a GPU
# rounds them to nearest even, as torch): there, leave bfloat16 out.
_INTERPRETER_CASES = {"half_rounding": lambda: case_half_rounding(bfloat16=False)}


def _moved(t: torch.Tensor, device: str) -> torch.Tensor:
    """``t`` on ``device`` as it is here: its whole storage, strides and
    offset (``Tensor.cuda()`` copies only the elements, compacting strides and
    dropping the storage the spec's strides were built for)."""
    storage = t.untyped_storage()
    flat = torch.empty(0, dtype=t.dtype).set_(
        storage, 0, (storage.nbytes() // t.element_size(),), (1,)
    )
    return flat.to(device, copy=True).as_strided(
        t.shape, t.stride(), t.storage_offset()
    )


def _run_triton_case(name: str) -> str:
    case = CASES[name]
    interpreting = os.environ.get("TRITON_INTERPRET") == "1"
    if interpreting:
        case = _INTERPRETER_CASES.get(name, case)
    try:
        spec, inputs, tol = case()
        if not interpreting:
            inputs = [_moved(t, "cuda") for t in inputs]
        _check(TestCase(), spec, inputs, "triton", **tol)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return "ok"


def _run_triton_cases() -> dict[str, str]:
    """Run every case through the Triton path (in the interpreter subprocess,
    or on a GPU when Triton is not interpreting)."""
    return {name: _run_triton_case(name) for name in CASES}


# ---------------------------------------------------------------------------


class TestFxFusionCodegenCpu(TestCase):
    def run_case(self, name):
        spec, inputs, tol = CASES[name]()
        return spec, _check(self, spec, inputs, "cpu", **tol)

    def test_moved_inputs_keep_what_the_spec_reads(self):
        # The GPU test moves each case's inputs with _moved(t, "cuda"); here
        # the same copy, to the CPU, must run every case as the originals do
        # (views with gaps, expanded and empty views included).
        for name, case in CASES.items():
            with self.subTest(case=name):
                spec, inputs, tol = case()
                moved = [_moved(t, "cpu") for t in inputs]
                for a, b in zip(moved, inputs):
                    sa, sb = a.untyped_storage(), b.untyped_storage()
                    self.assertEqual(sa.nbytes(), sb.nbytes())  # all of it
                    if sb.nbytes():
                        self.assertNotEqual(sa.data_ptr(), sb.data_ptr())  # a copy
                    self.assertEqual(a.storage_offset(), b.storage_offset())
                    self.assertEqual(a.stride(), b.stride())
                    self.assertEqual(a, b)
                _check(self, spec, moved, "cpu", **tol)

    def test_unary_float32(self):
        self.run_case("unary_float32")

    def test_exp_tanh_sigmoid_accuracy(self):
        """The vectorizable float32 exp/tanh of the C++ prelude, over the
        whole range (subnormal results, overflow, NaN)."""
        x = torch.cat(
            [
                torch.linspace(-110, 95, 200001),
                torch.linspace(-1, 1, 20001),
                torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0]),
                torch.tensor([88.72283935546875, 88.7228470, -103.97208, -87.33655]),
            ]
        )
        b = SpecBuilder(x.shape)
        v = b.load(x)
        for op in ("exp", "tanh", "sigmoid"):
            b.out(b.op(op, v))
        _check(self, b.spec(), [x], rtol=4e-7, atol=1e-38)

    def test_unary_int_and_bool(self):
        self.run_case("unary_int")

    def test_binary_float32(self):
        self.run_case("binary_float32")

    def test_binary_int(self):
        self.run_case("binary_int")

    def test_binary_bool_and_where(self):
        self.run_case("binary_bool")

    def test_broadcast_and_strides(self):
        self.run_case("broadcast_strided")

    def test_float16_bfloat16(self):
        self.run_case("half")
        self.run_case("half_rounding")

    def test_reductions(self):
        self.run_case("reductions")
        self.run_case("reduce_one_dim")

    def test_softmax(self):
        spec, _ = self.run_case("softmax")
        self.run_case("softmax_half")
        source = codegen.generated_source(spec, "cpu")
        # amax, sum and the final loop for the inner output
        self.assertEqual(source.count("for (int64_t r0"), 3)

    def test_var_mean_one_pass(self):
        spec, _ = self.run_case("var_mean")
        # both sums share one loop over the row
        self.assertEqual(
            codegen.generated_source(spec, "cpu").count("for (int64_t r0"), 1
        )

    def test_layer_norm_two_stages(self):
        spec, _ = self.run_case("layer_norm")
        self.assertEqual(
            codegen.generated_source(spec, "cpu").count("for (int64_t r0"), 3
        )

    def test_ragged_sizes(self):
        for n in (1, 7, 1000003):
            x = torch.randn(n)
            y = torch.randn(1).expand(n)
            b = SpecBuilder((n,))
            vx, vy = b.load(x), b.load(y)
            b.out(b.op("tanh", b.op("add", b.op("mul", vx, vy), vx)))
            b.out(b.op("relu", vx), "float16")
            spec = b.spec()
            _check(self, spec, [x, y])
            parallel = "omp parallel" in codegen.generated_source(spec, "cpu")
            self.assertEqual(parallel, n == 1000003)

    def test_dims_coalesced(self):
        x = torch.randn(2, 3, 4, 5)
        b = SpecBuilder((2, 3, 4, 5))
        b.out(b.op("sin", b.load(x)))
        source = codegen.generated_source(b.spec(), "cpu")
        self.assertIn("for (int64_t o0 = 0; o0 < 120; ++o0)", source)
        self.assertNotIn("o1", source)

    def test_empty_shapes(self):
        self.run_case("empty_reduce")
        compiles = codegen.counters["cpp_compile"]
        for outer, red in (((0, 3), ()), ((0,), (5,)), ((2, 0), (3, 0))):
            x = torch.randn(outer + red)
            b = SpecBuilder(outer, red)
            v = b.op("exp", b.load(x))
            b.out(v)
            if red:
                b.out(b.op("sum", v))
            _check(self, b.spec(), [x])
        # nothing to compute: no compiler run
        self.assertEqual(codegen.counters["cpp_compile"], compiles)
        x = torch.randn(3, 0)
        b = SpecBuilder((3,), (0,))
        b.out(b.op("amax", b.load(x)))
        runner = codegen.compile_kernel(b.spec(), "cpu")
        with self.assertRaisesRegex(IndexError, "non-zero size"):
            runner(x)
        with self.assertRaises(IndexError):
            x.amax(1)

    def test_integer_division_by_zero(self):
        x, y = torch.tensor([4, 5, 6]), torch.tensor([1, 0, 2])
        for op in ("floor_divide", "remainder"):
            b = SpecBuilder((3,))
            b.out(b.op(op, b.load(x), b.load(y)))
            runner = codegen.compile_kernel(b.spec(), "cpu")
            with self.assertRaisesRegex(RuntimeError, "ZeroDivisionError"):
                runner(x, y)
            with self.assertRaisesRegex(RuntimeError, "ZeroDivisionError"):
                getattr(torch, op)(x, y)

    def test_runner_checks_inputs(self):
        x = torch.randn(4, 4)
        b = SpecBuilder((4, 4))
        b.out(b.op("neg", b.load(x)))
        runner = codegen.compile_kernel(b.spec(), "cpu")
        with self.assertRaises(TypeError):
            runner(x.double())
        with self.assertRaisesRegex(ValueError, "too small"):
            runner(torch.randn(3, 4))
        self.assertIs(codegen.compile_kernel(b.spec("other_name"), "cpu"), runner)

    def test_malformed_specs(self):
        x = torch.randn(4)
        b = SpecBuilder((4,))
        v = b.load(x)
        b.out(b.op("sum", v, dtype="float32"))
        with self.assertRaisesRegex(ValueError, "without reduced dims"):
            codegen.compile_kernel(b.spec(), "cpu")
        b = SpecBuilder((4,))
        b.out(b.op("exp", b.load(x.to(torch.complex64))))
        with self.assertRaises(NotImplementedError):
            codegen.compile_kernel(b.spec(), "cpu")

    def test_triton_reduce_limit(self):
        x = torch.randn(2, 16385)
        with self.assertRaisesRegex(NotImplementedError, "16384"):
            codegen.generated_source(softmax_spec(x), "cuda")
        self.assertIn(
            "RBLOCK", codegen.generated_source(softmax_spec(x[:, :16384]), "cuda")
        )

    def test_portable_half_conversion(self):
        """The fallback float16 conversion (no _Float16) equals torch's."""
        source = (
            codegen_cpp._CPP_PRELUDE
            + """
extern "C" void h2f(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = fx_h2f(in[i]);
}
extern "C" void f2h(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = fx_f2h(in[i]);
}
"""
        )
        import ctypes

        with tempfile.TemporaryDirectory() as tmp:
            src, lib = os.path.join(tmp, "half.cpp"), os.path.join(tmp, "half.so")
            with open(src, "w") as f:
                f.write(source)
            subprocess.run(
                [
                    codegen_cpp._cxx(),
                    "-O2",
                    "-shared",
                    "-fPIC",
                    "-DFX_PORTABLE_HALF",
                    src,
                    "-o",
                    lib,
                ],
                check=True,
            )
            dll = ctypes.CDLL(lib)
        bits = torch.arange(65536, dtype=torch.int32).to(torch.uint16)
        out = torch.empty(65536)
        dll.h2f(
            ctypes.c_void_p(bits.data_ptr()),
            ctypes.c_void_p(out.data_ptr()),
            ctypes.c_int64(65536),
        )
        torch.testing.assert_close(
            out, bits.view(torch.float16).float(), equal_nan=True, rtol=0, atol=0
        )
        floats = torch.cat(
            [
                torch.randn(100000) * 10.0 ** torch.randint(-8, 6, (100000,)),
                torch.tensor(
                    [float("nan"), float("inf"), 65504.0, 65520.0, 1e-8, -0.0]
                ),
            ]
        )
        halves = torch.empty(len(floats), dtype=torch.uint16)
        dll.f2h(
            ctypes.c_void_p(floats.data_ptr()),
            ctypes.c_void_p(halves.data_ptr()),
            ctypes.c_int64(len(floats)),
        )
        expected = floats.half()
        got = halves.view(torch.float16)
        self.assertTrue(torch.equal(got.isnan(), expected.isnan()))
        self.assertTrue(
            torch.equal(
                got[~got.isnan()].view(torch.int16),
                expected[~expected.isnan()].view(torch.int16),
            )
        )

    def test_disk_cache_across_processes(self):
        """A fresh process compiling an equal spec loads the cached .so."""
        script = """
import json
import torch
from torch._inductor.fx_fusion import codegen
from torch._inductor.fx_fusion.ir import *
I, O = Level.INNER, Level.OUTER
spec = KernelSpec("softmax", (4,), (7,), (InputSpec("float32", (7, 1)),), (
    Stmt("load", (), "float32", I, input=0), Stmt("amax", (0,), "float32", O),
    Stmt("sub", (0, 1), "float32", I), Stmt("exp", (2,), "float32", I),
    Stmt("sum", (3,), "float32", O), Stmt("div", (3, 4), "float32", I),
), (OutputSpec(5, "float32"),))
x = torch.randn(4, 7)
(out,) = codegen.compile_kernel(spec, "cpu")(x)
torch.testing.assert_close(out, torch.softmax(x, -1))
print(json.dumps(dict(codegen.counters)))
"""
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tmp)
            runs = []
            for _ in range(2):
                result = subprocess.run(
                    [sys.executable, "-c", script],
                    env=env,
                    capture_output=True,
                    text=True,
                )
                self.assertEqual(result.returncode, 0, result.stderr)
                runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
            self.assertTrue(os.listdir(os.path.join(tmp, "fx_fusion", "cpp")))
        self.assertEqual(runs[0].get("cpp_compile"), 1)
        self.assertEqual(runs[1].get("cpp_compile", 0), 0)
        self.assertEqual(runs[1].get("cpp_disk_hit"), 1)


@unittest.skipUnless(HAS_CUDA_AND_TRITON, "needs a CUDA GPU")
class TestFxFusionCodegenCuda(TestCase):
    def test_every_case_on_the_gpu(self):
        """Every case through the Triton kernel, compiled and run on the GPU."""
        results = _run_triton_cases()
        self.assertEqual(set(results), set(CASES))
        for name, outcome in results.items():
            with self.subTest(case=name):
                self.assertEqual(outcome, "ok")


class TestFxFusionCodegenTriton(TestCase):
    def test_triton_interpreter(self):
        """Every case through the Triton kernel, under TRITON_INTERPRET=1."""
        script = f"""
import json, sys
sys.path.insert(0, {TEST_DIR!r})
import test_fx_fusion_codegen as t
print(json.dumps(t._run_triton_cases()))
"""
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, TRITON_INTERPRET="1", TORCHINDUCTOR_CACHE_DIR=tmp)
            result = subprocess.run(
                [sys.executable, "-c", script], env=env, capture_output=True, text=True
            )
        self.assertEqual(result.returncode, 0, result.stderr)
        results = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(set(results), set(CASES))
        for name, outcome in results.items():
            with self.subTest(case=name):
                self.assertEqual(outcome, "ok")

    def test_triton_compiles_for_gpu(self):
        """Every case's Triton kernel compiles through Triton's real frontend
        and ptxas for an H100 (sm_90), no GPU needed: the interpreter test
        does not run Triton's code generator, this one does not run the
        kernels."""
        if os.environ.get("TRITON_INTERPRET") == "1":
            self.skipTest("Triton is interpreting")
        try:
            import triton
            from triton.backends.compiler import GPUTarget
            from triton.compiler import ASTSource
        except ImportError:
            self.skipTest("no Triton with an NVIDIA backend")
        pointer = {
            "float32": "*fp32",
            "float16": "*fp16",
            "bfloat16": "*bf16",
            "float64": "*fp64",
            "int64": "*i64",
            "int32": "*i32",
            "int16": "*i16",
            "int8": "*i8",
            "uint8": "*u8",
            "bool": "*i1",
        }
        target = GPUTarget("cuda", 90, 32)
        for name, case in CASES.items():
            with self.subTest(case=name):
                spec = case()[0]
                generator = codegen_triton._TritonGenerator(
                    codegen_common._Analysis(spec)
                )
                kernel = codegen_triton._load_triton(generator.source()).fx_kernel
                signature = {
                    f"in{k}": pointer[i.dtype] for k, i in enumerate(spec.inputs)
                }
                signature.update(
                    {f"out{n}": pointer[o.dtype] for n, o in enumerate(spec.outputs)}
                )
                constants = {"XBLOCK": generator.xblock}
                if generator.two_d:
                    constants["RBLOCK"] = generator.rblock
                signature.update(dict.fromkeys(constants, "constexpr"))
                compiled = triton.compile(
                    ASTSource(kernel, signature, constants),
                    target=target,
                    options={"num_warps": generator.num_warps},
                )
                self.assertIn("cubin", compiled.asm)


# ---------------------------------------------------------------------------
# Property tests


if HAS_HYPOTHESIS:
    _DTYPES = ("float32", "float16", "bfloat16", "int32")

    @st.composite
    def _views(draw, shape, dtype, count):
        """``count`` tensors of ``shape``: permuted, sliced, offset or broadcast
        views of random base tensors."""
        g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
        views = []
        for _ in range(count):
            rank = len(shape)
            perm = draw(st.permutations(range(rank)))
            steps = [draw(st.sampled_from((1, 1, 2))) for _ in range(rank)]
            bcast = [
                size > 1 and draw(st.booleans()) and draw(st.booleans())
                for size in shape
            ]
            offset = draw(st.integers(0, 1))
            sizes = [1 if b else s for s, b in zip(shape, bcast)]
            base_shape = [
                sizes[d] * steps[d] + (offset if i == 0 else 0)
                for i, d in enumerate(perm)
            ]
            if dtype == "int32":
                base = torch.randint(
                    -50, 50, base_shape, generator=g, dtype=torch.int32
                )
            else:
                base = torch.randn(base_shape, generator=g).to(_torch_dtype(dtype))
            index = tuple(
                slice(
                    offset if i == 0 else 0,
                    (offset if i == 0 else 0) + sizes[d] * steps[d],
                    steps[d],
                )
                for i, d in enumerate(perm)
            )
            inverse = [perm.index(d) for d in range(rank)]
            views.append(base[index].permute(inverse).expand(shape))
        return views

    _shapes = st.lists(st.sampled_from((1, 1, 2, 3, 5, 8)), min_size=1, max_size=4)

    class TestFxFusionCodegenProperties(TestCase):
        @settings(
            max_examples=25,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(data=st.data(), shape=_shapes, dtype=st.sampled_from(_DTYPES))
        def test_pointwise_chain(self, data, shape, dtype):
            x, y = data.draw(_views(tuple(shape), dtype, 2))
            b = SpecBuilder(tuple(shape))
            vx, vy = b.load(x), b.load(y)
            prod = b.op("mul", b.op("add", vx, vy), vx)
            w = b.op("where", b.op("gt", vx, vy), prod, b.op("sub", vx, vy))
            b.out(b.op("abs", b.op("maximum", w, b.op("neg", vy))))
            b.out(b.op("gt", vx, vy))
            _check(self, b.spec(), [x, y])

        @settings(
            max_examples=25,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(data=st.data(), shape=_shapes, dtype=st.sampled_from(_DTYPES))
        def test_sum(self, data, shape, dtype):
            n_reduce = data.draw(st.integers(1, len(shape)))
            outer, red = (
                tuple(shape[: len(shape) - n_reduce]),
                tuple(shape[len(shape) - n_reduce :]),
            )
            (x,) = data.draw(_views(outer + red, dtype, 1))
            b = SpecBuilder(outer, red)
            v = b.load(x)
            b.out(
                b.op("sum", b.op("add", v, v)), dtype if dtype != "int32" else "int64"
            )
            tol = {"rtol": 1e-5, "atol": 1e-4} if dtype == "float32" else {}
            _check(self, b.spec(), [x], **tol)

else:

    class TestFxFusionCodegenProperties(TestCase):
        @unittest.skip("hypothesis is not installed")
        def test_properties(self):
            pass


if __name__ == "__main__":
    run_tests()
