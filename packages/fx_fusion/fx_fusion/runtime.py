"""Running the FX fusion pass's kernels.

A runner compiles a :class:`~.ir.KernelSpec` for a device: the generated
kernel (``codegen.compile_kernel``, the default) or :func:`reference_runner`
(eager torch ops, for debugging).  :class:`FusedKernel` is what the fused
graph calls for one group: the runner plus the layouts of its inputs and
outputs.
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING

import torch

from .ir import compute_dtype, KernelSpec
from .model import OUTER


if TYPE_CHECKING:
    from collections.abc import Callable

    from .plan import KernelPlan


def _torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


_REF_OPS: dict[str, Callable[..., torch.Tensor]] = {
    "abs": torch.abs,
    "neg": torch.neg,
    "reciprocal": torch.reciprocal,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log1p": torch.log1p,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "erf": torch.erf,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "sign": torch.sign,
    "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not,
    "isnan": torch.isnan,
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "floor_divide": torch.floor_divide,
    "remainder": torch.remainder,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "atan2": torch.atan2,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "where": torch.where,
}


def reference_runner(
    spec: KernelSpec, device: str
) -> Callable[..., list[torch.Tensor]]:
    """Run a KernelSpec with eager torch ops: the codegen's API, for debugging.

    Same signature and semantics as ``codegen.compile_kernel``:
    ``runner(*inputs)`` reads each input through its spec strides and returns
    the outputs, contiguous in iteration order.
    """
    n_outer = len(spec.outer_shape)
    n_reduce = len(spec.reduce_shape)
    full = spec.outer_shape + spec.reduce_shape
    outer = spec.outer_shape + (1,) * n_reduce
    red_dims = tuple(range(n_outer, n_outer + n_reduce))

    def run(*inputs: torch.Tensor) -> list[torch.Tensor]:
        values: list[torch.Tensor] = []
        for st in spec.stmts:
            cdt = _torch_dtype(compute_dtype(st.dtype))
            if st.op == "load":
                assert st.input is not None
                t = inputs[st.input]
                v = torch.as_strided(
                    t, full, spec.inputs[st.input].strides, t.storage_offset()
                )
                if st.level == OUTER and n_reduce:
                    v = v[(slice(None),) * n_outer + (slice(0, 1),) * n_reduce]
                v = v.to(cdt)
            elif st.op == "constant":
                v = torch.tensor(st.value, dtype=cdt, device=device)
            elif st.op == "cast":
                v = values[st.args[0]].to(_torch_dtype(st.dtype)).to(cdt)
            elif st.op in ("sum", "prod", "amax", "amin"):
                a = values[st.args[0]]
                a = a.expand(full)
                if st.op == "sum":
                    v = a.sum(red_dims, keepdim=True, dtype=cdt)
                elif st.op == "prod":
                    v = a.reshape((*outer[:n_outer], -1)).prod(-1, dtype=cdt)
                    v = v.reshape(outer)
                elif st.op == "amax":
                    v = a.amax(red_dims, keepdim=True)
                else:
                    v = a.amin(red_dims, keepdim=True)
            else:
                fn = _REF_OPS[st.op]
                v = fn(*(values[a] for a in st.args))
                if st.op == "div" and not v.is_floating_point():
                    v = v.to(cdt)
                v = v.to(cdt)
            values.append(v)
        outs = []
        for o in spec.outputs:
            st = spec.stmts[o.stmt]
            shape = spec.outer_shape if st.level == OUTER else full
            v = values[o.stmt]
            if st.level == OUTER and n_reduce:
                v = v.expand(outer).reshape(spec.outer_shape)
            outs.append(v.expand(shape).to(_torch_dtype(o.dtype)).contiguous())
        return outs

    return run


# The code generators are imported on first use: the reference runner and the
# rest of the pass work without them (and without a C++ compiler or Triton).
def _codegen_runner(spec: KernelSpec, device: str) -> Callable[..., list[torch.Tensor]]:
    from .codegen import compile_kernel

    return compile_kernel(spec, device)


def _codegen_available() -> bool:
    try:
        from .codegen import compile_kernel  # noqa: F401
    except ImportError:
        return False
    return True


def _get_runner(runner: Any) -> Callable[[KernelSpec, str], Callable[..., Any]]:
    if callable(runner):
        return runner
    if runner == "reference":
        return reference_runner
    if runner in (None, "codegen"):
        if runner is None and not _codegen_available():
            return reference_runner
        return _codegen_runner
    raise ValueError(f"unknown runner {runner!r}: 'codegen', 'reference' or a callable")


class FusedKernel:
    """The callable an FX graph calls for one group: the kernel plus layouts.

    Inputs are checked against the strides the spec was built for (and copied
    to them if a tensor arrives otherwise); outputs are viewed, or copied, to
    the shape and strides eager produces for each node.
    """

    def __init__(self, plan: KernelPlan, runner: Callable[..., Any], name: str) -> None:
        self.plan = plan
        self.spec = plan.spec
        self.runner = runner
        # torch.fx names a call_function target by these; a non-torch module
        # makes it a global of the generated code.
        self.__name__ = name
        self.__qualname__ = name
        self.__module__ = "fx_fusion_kernels"

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args = []
        for t, (shape, stride) in zip(inputs, self.plan.input_layouts):
            if tuple(t.shape) != shape or any(
                s != 1 and a != b for s, a, b in zip(shape, t.stride(), stride)
            ):
                fixed = torch.empty_strided(
                    shape, stride, dtype=t.dtype, device=t.device
                )
                fixed.copy_(t.expand(shape))
                t = fixed
            args.append(t)
        outs = self.runner(*args)
        results = []
        for buf, p in zip(outs, self.plan.output_plans):
            if p.copy:
                view = buf.as_strided(p.shape, p.view_stride)
                out = torch.empty_strided(
                    p.shape, p.stride, dtype=buf.dtype, device=buf.device
                )
                out.copy_(view)
            else:
                out = buf.as_strided(p.shape, p.stride)
            results.append(out)
        return tuple(results)

    def __repr__(self) -> str:
        return f"FusedKernel({self.__name__})"
