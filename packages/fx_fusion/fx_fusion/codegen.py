"""Code generation for the FX fusion arm: a :class:`~.ir.KernelSpec` to a kernel.

The FX fusion arm (the ``fx_fusion`` package) is an operator-fusion pass
of its own, written with torch.fx alone, so that what it fuses can be
compared with what Inductor fuses.  To keep that comparison honest it also
has its own code generation: :func:`compile_kernel` turns a spec into

* on the CPU, a C++ function with one loop nest over the iteration space,
  compiled with the system C++ compiler into a shared library and called
  through :mod:`ctypes` (``codegen_cpp.py``);
* on CUDA (and, under ``TRITON_INTERPRET=1``, on CPU tensors), a Triton
  kernel written to a real source file and imported from it
  (``codegen_triton.py``).

Both use the analysis in ``codegen_common.py``.  They use none of Inductor's
lowering, scheduling or code generation classes; the only thing they share
with Inductor is the cache directory (``$TORCHINDUCTOR_CACHE_DIR``, subfolder
``fx_fusion/``).

Both generators first simplify the iteration space (size-1 dims dropped,
dims that are contiguous for every input merged, separately for the outer
and the reduced dims), so a contiguous ``(N, C, H, W)`` pointwise kernel is
one flat loop.  Shapes and strides are compile-time constants, as in an
Inductor kernel compiled for static shapes.

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

from typing import TYPE_CHECKING

import torch

from . import codegen_cpp, codegen_triton
from .codegen_common import _Analysis, _lock, counters
from .codegen_cpp import _cpp_runner, _CppGenerator
from .codegen_triton import _triton_runner, _TritonGenerator, MAX_TRITON_REDUCE_NUMEL
from .triton_support import triton_libdevice


if TYPE_CHECKING:
    from collections.abc import Callable

    from .ir import KernelSpec


__all__ = [
    "MAX_TRITON_REDUCE_NUMEL",
    "clear_cache",
    "compile_kernel",
    "counters",
    "generated_source",
    "triton_libdevice",
]

_runners: dict[tuple[object, ...], Callable[..., list[torch.Tensor]]] = {}


def clear_cache() -> None:
    """Forget the runners loaded in this process (the disk cache stays)."""
    with _lock:
        _runners.clear()
        codegen_cpp._libraries.clear()
        codegen_triton._modules.clear()


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
