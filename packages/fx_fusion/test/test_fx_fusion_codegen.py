# Owner(s): ["module: inductor"]
"""The FX fusion arm's code generators (``fx_fusion.codegen``).

Each test builds :class:`KernelSpec`s by hand (the cases and the eager
reference are in ``fx_fusion_codegen_cases.py``), runs the generated kernel
and compares it with a reference that evaluates the same spec with torch
eager ops.  The C++ path is tested in this process; the Triton path under
Triton's interpreter (``TRITON_INTERPRET=1``) in a subprocess, on the same
cases, and the same Triton kernels are compiled for an H100 (sm_90) through
Triton's real compiler, which needs no GPU.  C++ compiles take a fraction of
a second each, so each test groups many ops into one kernel.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import torch
from fx_fusion import (
    codegen,
    codegen_common,
    codegen_cpp,
    codegen_triton,
    triton_support,
)
from fx_fusion_codegen_cases import (
    _check,
    _moved,
    _run_triton_cases,
    _torch_dtype,
    CASES,
    softmax_spec,
    SpecBuilder,
)
from torch._inductor.test_case import run_tests, TestCase
from torch.testing._internal.inductor_utils import HAS_CUDA_AND_TRITON


try:
    from hypothesis import given, HealthCheck, settings, strategies as st

    HAS_HYPOTHESIS = True
except ImportError:
    HAS_HYPOTHESIS = False


TEST_DIR = os.path.dirname(os.path.abspath(__file__))


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
from fx_fusion import codegen
from fx_fusion.ir import *
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
    @unittest.skipUnless(importlib.util.find_spec("triton"), "needs triton")
    def test_triton_interpret_is_read_as_triton_reads_it(self):
        # TRITON_INTERPRET is Triton's own variable, not one of the fork's
        # switches: the generator must agree with Triton on every spelling
        for value, expected in (("1", True), ("true", True), ("0", False), ("", False)):
            with self.subTest(value=value):
                with mock.patch.dict(os.environ, {"TRITON_INTERPRET": value}):
                    self.assertIs(triton_support.triton_interpreting(), expected)

    def test_triton_interpreter(self):
        """Every case through the Triton kernel, under TRITON_INTERPRET=1."""
        script = f"""
import json, sys
sys.path.insert(0, {TEST_DIR!r})
import fx_fusion_codegen_cases as t
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
