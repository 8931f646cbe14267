"""The FX fusion arm: operator fusion written with torch.fx alone.

``torch.compile(model, backend="fx_fusion")`` (:func:`.backend.fx_fusion`,
registered through this package's ``torch_dynamo_backends`` entry point)
traces the model with AOTAutograd into aten-level forward and backward
graphs, and this pass fuses each graph: :func:`partition` groups fusible ops,
:func:`fuse` replaces every group by one call of a kernel generated from a
:class:`~fx_fusion.ir.KernelSpec` (C++ on the CPU, Triton on CUDA, by
``codegen.compile_kernel``), and everything else runs as the eager aten ops
it was.  Inductor's lowering and scheduler are not used, so the two fusion
strategies can be compared (both publish the same fusion report, see the
fork's ``docs/source/torch.compiler_fusion_remarks.md``).

**What fuses.** Elementwise ops with broadcasting (the ops of
``ir.UNARY_OPS``/``BINARY_OPS``, ``where``, ``clamp``,
``masked_fill``, casts (``_to_copy``, ``convert_element_type``), ``clone``,
constants (``full``, ``scalar_tensor``, ``*_like``) and Python scalars); and
reductions (``sum``, ``amax``, ``amin``, ``prod``, ``max``/``min`` without
dim, ``mean`` as a sum and a division, ``var`` as two sums) with their
elementwise prologue and epilogue.  One group may hold several reductions over
the same reduced dims of the same iteration space (softmax: amax, then sum).
Views of group inputs are not folded by rewriting: they stay eager (no data
moves) and the kernel reads the view through its strides, which is the same
thing.  Views of values computed *inside* a group (permute, unsqueeze,
squeeze, expand, and view/reshape that only add or drop size-1 dims) are
followed inside the group; other views (slices, reshapes that merge dims) are
boundaries.

**The iteration space.** A group has loop dims ("axes"); a reduction marks
some of them reduced.  Each value in the group maps its tensor dims onto axes
(size-1 dims map to none) and lives at one of the IR's two levels: ``inner``
values span every axis, ``outer`` values span exactly the non-reduced axes (a
reduction's result and what is computed from it).  A value that would span
fewer axes (a smaller broadcast operand) or more (a consumer that broadcasts
the group to a larger shape) does not join (``fx_iteration_space_mismatch``),
with one exception: a pointwise group whose values are read only by the
joining node is computed again at every point of the larger space (as
Inductor inlines it).  Loop dims of two merged groups that no data relation
ties together are paired by size, so ``x.exp() / x.exp().sum(-1)[:, None]``
is one kernel.

**The algorithm** (greedy, one pass in topological order): each fusible node
tries to join the groups of the fusible values it reads (first the first such
group it fits, then every other one, merging them); a node that joins none
tries a group that reads one of its inputs at the same loop dims (horizontal
fusion of siblings: ``x.sum(-1)`` and ``x.amax(-1)``).  Every join is subject
to

* shapes: the join must leave every value at a full level, as above, values
  read across the merged groups must be read at the loop dims they are
  computed at, and a reduction must reduce an ``inner`` value over the
  group's reduced axes (``fx_reduction_mismatch``);
* data dependencies: merging must not create a cycle, i.e. no path leaving
  the merged group may come back into it (``would_create_cycle``);
* aliasing and mutation: in-place/``out=`` ops (and ``copy_`` into a mutated
  graph input) never join a group (``mutation``), and every reader of a
  mutated storage keeps its order with the mutation (extra ordering edges,
  also used by the cycle check and the final topological sort).

A group is *maximal* in this greedy sense: no single fusible node could be
added to it when that node was visited, and no two groups connected by a
consumer could be merged when that consumer was visited.  Refused pairs are
not revisited, siblings are merged only through a shared input (not through a
shared producer group), and a value is never computed in two groups (a
pointwise value read by reductions over different dims goes with the first).

Groups of a single computing op stay as their aten op unless
``single_op_kernels=True``: a kernel of one op saves no memory traffic, and
the aten kernel is already a good one.

Every boundary between two kernels (groups and aten ops) along a data edge is
explained by one reason of the taxonomy in ``torch._inductor.fusion_remarks``
(stage ``fx_fusion``), and the graph is published through
``fusion_remarks.sinks.publish`` in the same JSON schema as Inductor's graphs.

**Modules**, each importing only modules listed before it (and the
fusion-remarks code only through ``report``):

* ``ir``: :class:`~.ir.KernelSpec`, the contract between the pass and its
  code generators;
* ``model``: the data the stages hand each other (:class:`Group`,
  :class:`Partition`, a lowered node);
* ``plan``: a group as a KernelSpec and how to call it
  (:func:`build_kernel_plan`);
* ``triton_support``: what the generated Triton kernels import at run time
  (libdevice, or its stand-ins under Triton's interpreter);
* ``codegen_common``, ``codegen_cpp``, ``codegen_triton`` and ``codegen``:
  the code generators (``codegen.compile_kernel``);
* ``runtime``: the runners (:func:`reference_runner`) and
  :class:`FusedKernel`, what the fused graph calls;
* ``report``: the fusion remarks of a fused graph, and every name the arm
  uses from ``torch._inductor.fusion_remarks``, ``fusion_analysis`` and
  ``fusion_report``;
* ``lowering``: which aten ops fuse, and how each becomes IR statements;
* ``join``: one join attempt, the merged iteration space;
* ``partitioner``: the greedy partition (:func:`partition_graph`,
  :func:`partition`);
* ``rewrite``: the fused graph (:func:`fuse`);
* ``backend``: the torch.compile backend (:func:`~.backend.fx_fusion`, the
  target of the ``torch_dynamo_backends`` entry point, and
  :func:`make_backend`, with :func:`decomposition_table`) and
  :func:`compile_module`.

No module imports this package's ``__init__`` (the public names below), and
``test/test_fx_fusion_imports.py`` checks that no import, inside functions
included, goes up this list.
"""

from .backend import compile_module, decomposition_table, make_backend
from .model import Group, Partition
from .partitioner import partition, partition_graph
from .plan import build_kernel_plan, KernelPlan
from .rewrite import fuse, FusionResult
from .runtime import FusedKernel, reference_runner


__all__ = [
    "FusedKernel",
    "FusionResult",
    "Group",
    "KernelPlan",
    "Partition",
    "build_kernel_plan",
    "compile_module",
    "decomposition_table",
    "fuse",
    "make_backend",
    "partition",
    "partition_graph",
    "reference_runner",
]
