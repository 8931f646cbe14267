"""The entry points of the FX fusion arm: the torch.compile backend and make_fx.

``torch.compile(model, backend="fx_fusion")`` finds :func:`fx_fusion` through
the ``torch_dynamo_backends`` entry point this package declares (Dynamo loads
it on the first lookup of the name), and :func:`fx_fusion` calls
:func:`make_backend`: AOTAutograd traces the model into aten-level forward and
backward graphs with :func:`decomposition_table`, and :func:`~.rewrite.fuse`
fuses each.  :func:`compile_module` does the same for inference with
``make_fx``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, TYPE_CHECKING

import torch

from .lowering import _reduce_dims
from .rewrite import fuse


if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


aten = torch.ops.aten


def _var_mean(
    x: torch.Tensor,
    dim: Any = None,
    *,
    correction: Any = None,
    keepdim: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``var_mean`` as a chain the pass fuses into one kernel: the mean, then
    the sum of squared deviations from it (two reductions over one space)."""
    dims = _reduce_dims(dim, x.dim())
    count = math.prod(x.shape[d] for d in dims)
    if correction is None:
        correction = 1
    dtype = x.dtype
    if dtype in (torch.float16, torch.bfloat16):
        x = x.to(torch.float32)  # eager's opmath
    mean = aten.mean.dim(x, list(dims), True)
    dev = x - mean
    var = aten.sum.dim_IntList(dev * dev, list(dims), keepdim) / max(
        count - correction, 0
    )
    if not keepdim:
        mean = aten.squeeze.dims(mean, list(dims))
    return var.to(dtype), mean.to(dtype)


@functools.cache
def decomposition_table() -> dict[Any, Callable[..., Any]]:
    """The decompositions the fx_fusion backend traces with.

    ``torch._decomp.core_aten_decompositions()`` (composite ops to core aten:
    ``silu``, ``hardswish``, ``threshold_backward``, the softmax and
    layer-norm backward ops, ...) plus the core ops the pass fuses better as
    primitives: ``native_layer_norm``, ``gelu``, ``_softmax``,
    ``_log_softmax``, batch and group norm, ``leaky_relu``/``elu`` and their
    backward ops.  ``var_mean`` becomes ``var`` and ``mean`` (both fusible,
    one kernel) instead of upstream's prims-based decomposition.  Matmuls,
    convolutions and scaled dot-product attention are not decomposed (they
    stay library calls, as in Inductor).
    """
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    table.update(
        get_decompositions(
            [
                aten.native_layer_norm,
                aten.gelu,
                aten._softmax,
                aten._log_softmax,
                aten.native_batch_norm,
                aten._native_batch_norm_legit,
                aten._native_batch_norm_legit_functional,
                aten._native_batch_norm_legit_no_training,
                aten.native_group_norm,
                aten.leaky_relu,
                aten.leaky_relu_backward,
                aten.elu,
                aten.elu_backward,
            ]
        )
    )
    for op in (aten.var_mean.correction,):
        table[op] = _var_mean
    for op in (aten.addmm, aten.mean.dim, aten.var.correction):
        for overload in list(table):
            if getattr(overload, "overloadpacket", None) is op or overload is op:
                table.pop(overload, None)
    # Attention stays a library call (as in Inductor).  Upstream's
    # decomposition of the CPU flash-attention op also gives wrong gradients
    # under AOTAutograd in 2.11 (a 4-layer nn.TransformerEncoder: 0.49 off).
    for overload in list(table):
        if "scaled_dot_product" in str(overload):
            table.pop(overload)
    return table


def _graph_label(backward: bool) -> str:
    from torch._guards import CompileContext

    compile_id = CompileContext.current_compile_id()
    label = str(compile_id) if compile_id is not None else "<no compile id>"
    return label + (" backward" if backward else "")


def make_backend(**options: Any) -> Callable[..., Any]:
    """A torch.compile backend running :func:`fuse` (with ``options``) on
    AOTAutograd's forward and backward graphs."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        label = _graph_label(False)

        def compiler(backward: bool) -> Callable[..., Any]:
            def compile_graph(g: torch.fx.GraphModule, inputs: Sequence[Any]) -> Any:
                fused = fuse(
                    g,
                    label=label + (" backward" if backward else ""),
                    **options,
                )
                return make_boxed_func(fused.forward)

            return compile_graph

        return aot_autograd(
            fw_compiler=compiler(False),
            bw_compiler=compiler(True),
            decompositions=decomposition_table(),
            partition_fn=min_cut_rematerialization_partition,
            keep_inference_input_mutations=True,
        )(gm, example_inputs)

    return backend


def fx_fusion(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    options: dict[str, Any] | None = None,
    mode: str | None = None,
    **kwargs: Any,
) -> Any:
    """The ``fx_fusion`` Dynamo backend, as the entry point registers it.

    ``torch.compile(..., backend="fx_fusion", options={...})`` hands its
    ``options`` (and ``mode``) to the backend as keywords; the options go to
    :func:`~.rewrite.fuse` (for example ``{"single_op_kernels": True}``), and
    ``mode`` is accepted and ignored, since the pass has a single mode.
    """
    opts = dict(options or {})
    opts.update(kwargs)
    return make_backend(**opts)(gm, example_inputs)


_compile_counter = 0


def compile_module(
    module: torch.nn.Module | Callable[..., Any],
    example_inputs: Sequence[Any],
    **options: Any,
) -> Callable[..., Any]:
    """Trace ``module`` to aten with ``make_fx`` and fuse it (inference).

    Works for any module or function ``make_fx`` can trace, including the
    ``GraphModule`` of ``torch.fx.symbolic_trace``.  Parameters and buffers
    are inputs of the traced graph, so the result sees later updates to them.
    In-place ops (e.g. batch norm's running statistics) stay in the graph as
    aten ops.  ``options`` go to :func:`fuse`.
    """
    from torch.fx.experimental.proxy_tensor import make_fx

    global _compile_counter
    if isinstance(module, torch.nn.Module):
        params = dict(module.named_parameters(remove_duplicate=False))
        buffers = dict(module.named_buffers(remove_duplicate=False))

        def fn(params: Any, buffers: Any, *args: Any) -> Any:
            return torch.func.functional_call(module, (params, buffers), args)

        with torch.no_grad():
            gm = make_fx(
                fn, decomposition_table=decomposition_table(), tracing_mode="fake"
            )(params, buffers, *example_inputs)
        _compile_counter += 1
        options.setdefault("label", f"fx_fusion/{_compile_counter}")
        fused = fuse(gm, **options)

        def run(*args: Any) -> Any:
            with torch.no_grad():
                return fused(
                    dict(module.named_parameters(remove_duplicate=False)),
                    dict(module.named_buffers(remove_duplicate=False)),
                    *args,
                )

        run.graph_module = fused  # type: ignore[attr-defined]
        return run
    with torch.no_grad():
        gm = make_fx(
            module, decomposition_table=decomposition_table(), tracing_mode="fake"
        )(*example_inputs)
    _compile_counter += 1
    options.setdefault("label", f"fx_fusion/{_compile_counter}")
    return fuse(gm, **options)
