"""The kernel description shared by the FX fusion pass and its code generators.

The FX fusion arm (``torch.compile(model, backend="fx_fusion")``) is an
operator-fusion pass written with torch.fx alone, independent of Inductor's
lowering and scheduler, so that its fusion can be compared with Inductor's
(see the package docstring).  The pass partitions an aten-level FX graph into
groups and describes each group as a :class:`KernelSpec` (``plan.py``);
``codegen.py`` turns a spec into a C++ function (CPU, ``codegen_cpp.py``) or a
Triton kernel (CUDA, ``codegen_triton.py``).  This module is the contract
between the two: plain frozen dataclasses, hashable, so a spec is also the key
of the on-disk cache of generated sources.

The iteration space of a kernel is ``outer_shape + reduce_shape``.  Every input
is read through its own strides over that space (stride 0 on broadcast dims;
the pass permutes a reduction's reduced dims to the end, so reduced dims are
always the trailing ``len(reduce_shape)`` dims).  Statements are in SSA order;
``Stmt.level`` says where a value lives:

* ``INNER``: one value per point of the whole iteration space (a pointwise
  kernel has only inner statements and an empty ``reduce_shape``);
* ``OUTER``: one value per point of ``outer_shape``: the result of a
  :class:`Reduce`, or computed from outer values only.

An inner statement may use outer values (broadcast along the reduced dims):
softmax is ``amax`` (reduce), ``sub``/``exp`` (inner, using the max), ``sum``
(reduce), ``div`` (inner).  A generator that cannot keep a whole row in
registers recomputes inner statements in each pass over the row.

Outputs are written contiguously in the order of the iteration dims they span:
an ``OUTER`` output has ``outer_shape``, an ``INNER`` one ``outer_shape +
reduce_shape``; the pass views them back to the FX node's shape and strides.
Arithmetic is done in ``compute_dtype`` (float32 for float16/bfloat16 values,
as Inductor does); loads convert from the input's dtype, stores to the
output's.
"""

from __future__ import annotations

import dataclasses
import enum


class Level(str, enum.Enum):
    INNER = "inner"
    OUTER = "outer"


# The elementwise ops a generator must support, with their arity.  Names are
# the aten op names without overload (``aten.add.Tensor`` -> ``add``); the pass
# maps each FX node to one of them, or leaves the node outside every group.
#
# First the unary ops computed in floating point: an integer or bool operand
# is promoted to the default float dtype first (as torch does).
FLOAT_UNARY_OPS = frozenset(
    {
        "reciprocal",
        "sqrt",
        "rsqrt",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log1p",
        "sin",
        "cos",
        "tan",
        "tanh",
        "sigmoid",
        "erf",
    }
)
UNARY_OPS = FLOAT_UNARY_OPS | frozenset(
    {
        "abs",
        "neg",
        "relu",
        "floor",
        "ceil",
        "round",
        "trunc",
        "sign",
        "logical_not",
        "bitwise_not",
        "isnan",
    }
)
BINARY_OPS = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div",  # true division
        "floor_divide",
        "remainder",
        "pow",
        "maximum",
        "minimum",
        "atan2",
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
    }
)
TERNARY_OPS = frozenset({"where"})  # where(cond, a, b)
REDUCTIONS = frozenset({"sum", "amax", "amin", "prod"})


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One tensor argument of the kernel.

    ``strides`` has one entry per iteration dim (``len(outer_shape) +
    len(reduce_shape)``), in elements, 0 where the input is broadcast; the
    runtime passes the tensor's data pointer, already offset by its
    ``storage_offset``.
    """

    dtype: str  # torch dtype name without "torch.", e.g. "float32"
    strides: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Stmt:
    """``value = op(*args)``; ``args`` index earlier statements.

    ``op`` is one of:

    * ``"load"``: ``args == ()``, ``input`` names the :class:`InputSpec`;
    * ``"constant"``: ``args == ()``, ``value`` holds the Python scalar;
    * ``"cast"``: one arg, converted to ``dtype``;
    * a name in ``UNARY_OPS``, ``BINARY_OPS`` or ``TERNARY_OPS``;
    * a name in ``REDUCTIONS``: one ``INNER`` arg reduced over the reduced dims
      to an ``OUTER`` value.
    """

    op: str
    args: tuple[int, ...]
    dtype: str  # the value's dtype (before compute_dtype promotion)
    level: Level
    input: int | None = None
    value: bool | int | float | None = None


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    stmt: int  # index into KernelSpec.stmts
    dtype: str  # stored dtype


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """A fusion group as one kernel (see the module docstring)."""

    name: str  # a readable name, e.g. "fx_fused_sin_cos_add"; not part of identity
    outer_shape: tuple[int, ...]
    reduce_shape: tuple[int, ...]
    inputs: tuple[InputSpec, ...]
    stmts: tuple[Stmt, ...]
    outputs: tuple[OutputSpec, ...]

    def key(self) -> tuple[object, ...]:
        """Identity for caching: everything but the name."""
        return (
            self.outer_shape,
            self.reduce_shape,
            self.inputs,
            self.stmts,
            self.outputs,
        )


def compute_dtype(dtype: str) -> str:
    """The dtype arithmetic is done in for values of ``dtype``."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype
