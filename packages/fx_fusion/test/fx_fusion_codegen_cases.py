"""Hand-built KernelSpecs for the code generator tests, and their reference.

``test_fx_fusion_codegen.py`` runs these cases through the C++ generator in
its own process, and through the Triton generator in a subprocess (under
Triton's interpreter, ``TRITON_INTERPRET=1``, or on a GPU).  The cases are a
module of their own, not collected as tests, so that the subprocess imports
them without the test classes.  Each case returns ``(spec, inputs,
tolerances)`` and is checked against :func:`_reference`, which evaluates the
same spec with torch eager ops.
"""

import os

import torch
from fx_fusion import codegen
from fx_fusion.ir import (
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
from torch._inductor.test_case import TestCase


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
