"""One join attempt of the greedy partition: the merged iteration space.

When the partitioner (:mod:`.partitioner`) tries to add a node ``n`` to some
groups (the groups of ``n``'s operands, or a sibling group through a shared
input), :func:`plan_join` works out the loop dims ("axes") of the merged
group, or refuses with the report's reason (``fx_iteration_space_mismatch``,
``fx_reduction_mismatch``, ``fx_view_not_folded``).  The axes of the groups
are merged with a union-find: a relation between two values ties their axes
together, and two axes of one group, or of different sizes, are never tied.
The steps (methods of :class:`_JoinPlanner`):

1. ``n``'s operands from the groups fix the axis of each of its dims;
2. values of one group that members of another read must be read at the
   axes they are computed at;
3. the groups' reduced axes become one set, and loop dims that no data
   relation ties together are paired by size;
4. ``n`` itself is placed: a reduction over the group's reduced axes, or a
   pointwise value (or followed view) over the merged axes, with new axes
   where it starts a group or broadcasts groups only it reads;
5. every group must span the merged space, and ``n`` must be full at its
   level.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NoReturn, Protocol, TYPE_CHECKING

import torch
import torch.fx

from .model import _Refused, _val
from .report import _reason


if TYPE_CHECKING:
    from .model import _Lowered, Group


class _PartitionState(Protocol):
    """What a join reads of the partition built so far (``_Partitioner``)."""

    lowered: dict[torch.fx.Node, _Lowered]

    def in_group(self, x: Any) -> Group | None: ...

    def new_axis(self, size: int) -> int: ...

    def only_read_inside(self, g: Group, inside: set[torch.fx.Node]) -> bool: ...


@dataclasses.dataclass
class _Plan:
    """A join that fits: how the groups merge and where ``n`` lives."""

    groups: list[Group]
    rename: dict[int, int]
    axes: dict[int, int]
    reduce_axes: set[int]
    dims: tuple[int | None, ...]
    context: tuple[int | None, ...]


def plan_join(
    state: _PartitionState,
    n: torch.fx.Node,
    low: _Lowered,
    groups: list[Group],
    shared: dict[torch.fx.Node, tuple[int | None, ...]],
) -> _Plan:
    """The plan of adding ``n`` to ``groups`` (merging them), or
    :class:`~.model._Refused`.  ``shared`` gives the dims of inputs read at
    a sibling group's loop dims."""
    return _JoinPlanner(state, n, low, groups, shared).plan()


class _JoinPlanner:
    def __init__(
        self,
        state: _PartitionState,
        n: torch.fx.Node,
        low: _Lowered,
        groups: list[Group],
        shared: dict[torch.fx.Node, tuple[int | None, ...]],
    ) -> None:
        self.state = state
        self.n = n
        self.low = low
        self.groups = groups
        self.shared = shared
        self.space = _Refused(_reason("FX_ITERATION_SPACE_MISMATCH"), "")
        self.parent: dict[int, int] = {}
        self.owner: dict[int, set[int]] = {}
        self.size: dict[int, int] = {}
        for g in groups:
            for a, s in g.axes.items():
                self.parent[a], self.owner[a], self.size[a] = a, {g.id}, s
        self.in_plan = {g.id for g in groups}
        self.out_shape = list(_val(n).shape)

    # -- the union-find over the groups' axes ------------------------------

    def _mismatch(self, detail: str) -> NoReturn:
        self.space.detail = detail
        raise self.space

    def find(self, a: int) -> int:
        parent = self.parent
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(self, a: int, b: int, why: str) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self.owner[ra] & self.owner[rb] or self.size[ra] != self.size[rb]:
            self._mismatch(why)
        self.parent[rb] = ra
        self.owner[ra] |= self.owner[rb]
        return ra

    def dims_of(self, x: Any) -> tuple[int | None, ...] | None:
        if x in self.shared:
            return self.shared[x]
        g = self.state.in_group(x)
        if g is None or g.id not in self.in_plan:
            return None
        return g.dims[x]

    # -- the steps -----------------------------------------------------------

    def plan(self) -> _Plan:
        n, low, groups = self.n, self.low, self.groups
        cand, context = self._operand_axes()
        self._check_cross_reads()
        reduce_roots = self._merge_reduce_axes()
        reduce_roots = self._pair_free_axes(reduce_roots)
        roots = {self.find(a) for a in self.parent}
        reduced = set(reduce_roots or ())
        inside = {n, *(m for g in groups for m in g.members)}
        absorbable = {
            g.id: not g.reduce_axes and self.state.only_read_inside(g, inside)
            for g in groups
        }
        # 4. n itself.
        if low.kind == "reduction":
            dims, context, reduced = self._place_reduction(context, roots, reduced)
        else:
            dims = self._place_pointwise(cand, roots, reduced, absorbable)
            context = dims
        self._check_spans(dims, roots, reduced, absorbable)
        rename = {a: self.find(a) for a in list(self.parent)}
        axes = {r: self.size[r] for r in roots}
        return _Plan(groups, rename, axes, reduced, dims, context)

    def _operand_axes(
        self,
    ) -> tuple[list[int | None], tuple[int | None, ...] | None]:
        """1. n's operands from the groups fix the axis of each output dim.

        Returns the candidate axis of each of n's dims and, for a reduction,
        the dims of its reduced input (None if it starts a group)."""
        n, low, out_shape = self.n, self.low, self.out_shape
        cand: list[int | None] = [None] * len(out_shape)
        context: tuple[int | None, ...] | None = None
        if low.kind == "reduction":
            xd = self.dims_of(low.reduce_input)
            if xd is not None:
                context = xd
        elif low.kind == "view" and low.view is not None:
            bd = self.dims_of(low.tensors[0])
            assert bd is not None
            mapped = low.view(bd)
            if mapped is None:
                raise _Refused(
                    _reason("FX_VIEW_NOT_FOLDED"), f"{n.name} merges or splits dims"
                )
            cand = list(mapped)
        else:
            for x in low.tensors:
                xd = self.dims_of(x)
                if xd is None:
                    continue
                off = len(out_shape) - len(xd)
                for j, a in enumerate(xd):
                    if a is None:
                        continue
                    i = j + off
                    if cand[i] is None:
                        cand[i] = a
                    else:
                        cand[i] = self.union(
                            cand[i],
                            a,
                            f"{n.name} reads two loop dims of one group along "
                            f"its dim {i}",
                        )
        return cand, context

    def _check_cross_reads(self) -> None:
        """2. Values of one group that members of another read (as loads
        until now) must agree with the dims they are computed at."""
        for g in self.groups:
            for m in g.members:
                ctx = g.context[m]
                for x in self.state.lowered[m].tensors:
                    xd = self.dims_of(x)
                    if xd is None or self.state.in_group(x) is g:
                        continue
                    xs = _val(x).shape
                    off = len(ctx) - len(xs)
                    for j, a in enumerate(xd):
                        if a is not None and ctx[j + off] is not None:
                            self.union(
                                ctx[j + off],
                                a,
                                f"{m.name} reads {x.name} at other loop dims than "
                                "it is computed at",
                            )

    def _merge_reduce_axes(self) -> set[int] | None:
        """3. Reduced axes: one set for the merged group (None: no group
        reduces)."""
        groups, find, size = self.groups, self.find, self.size
        reduce_roots: set[int] | None = None
        for g in groups:
            if not g.reduce_axes:
                continue
            if reduce_roots is None:
                reduce_roots = {find(a) for a in g.reduce_axes}
                continue
            mine = {find(a) for a in g.reduce_axes}
            free = sorted(r for r in reduce_roots if r not in mine)
            for a in sorted(g.reduce_axes):
                if find(a) in reduce_roots:
                    continue
                match = next((r for r in free if size[r] == size[find(a)]), None)
                if match is None:
                    break
                free.remove(match)
                self.union(match, a, "reduced dims do not pair up")
            reduce_roots = {find(r) for r in reduce_roots}
            if {find(a) for a in g.reduce_axes} != reduce_roots:
                raise _Refused(
                    _reason("FX_REDUCTION_MISMATCH"),
                    f"the groups of {groups[0].members[0].name} and "
                    f"{g.members[0].name} reduce over different dims",
                )
        if reduce_roots is not None:
            for g in groups:
                for a in g.axes:
                    if (
                        g.reduce_axes
                        and a not in g.reduce_axes
                        and find(a) in reduce_roots
                    ):
                        raise _Refused(
                            _reason("FX_REDUCTION_MISMATCH"),
                            "a reduced dim of one group is an outer dim of another",
                        )
        return reduce_roots

    def _pair_free_axes(self, reduce_roots: set[int] | None) -> set[int] | None:
        """Loop dims that no data relation ties together are free: pair those
        of each group with the largest group's, by size, so that the merged
        group iterates over the smallest space (any pairing is a valid
        iteration order for values that do not depend on each other).

        Returns ``reduce_roots`` renamed after the pairing."""
        groups, find, size, owner = self.groups, self.find, self.size, self.owner
        if len(groups) > 1:
            target = max(
                groups,
                key=lambda g: (len({find(a) for a in g.axes}), bool(g.reduce_axes)),
            )
            for g in groups:
                if g is target:
                    continue
                theirs = {find(a) for a in target.axes}
                mine = {find(a) for a in g.axes}
                want = sorted(
                    theirs - mine,
                    key=lambda r: (r not in (reduce_roots or ()), r),
                )
                for a in sorted(mine - theirs):
                    match = next(
                        (
                            r
                            for r in want
                            if size[r] == size[a] and not owner[r] & owner[find(a)]
                        ),
                        None,
                    )
                    if match is not None:
                        want.remove(match)
                        self.union(match, a, "free dims do not pair up")
            if reduce_roots is not None:
                reduce_roots = {find(r) for r in reduce_roots}
        return reduce_roots

    def _place_reduction(
        self,
        context: tuple[int | None, ...] | None,
        roots: set[int],
        reduced: set[int],
    ) -> tuple[tuple[int | None, ...], tuple[int | None, ...], set[int]]:
        """4. n is a reduction: its dims, the dims of its reduced input and
        the merged group's reduced axes (``roots`` gains new axes in place)."""
        n, low, find = self.n, self.low, self.find
        x = low.reduce_input
        xshape = list(_val(x).shape)
        if context is None:
            # Starts a group: loop dims from the reduced input.
            assert not self.groups
            context = tuple(
                (self.state.new_axis(s) if s != 1 else None) for s in xshape
            )
            for a, s in zip(context, xshape):
                if a is not None:
                    roots.add(a)
                    self.size[a] = s
        else:
            context = tuple(find(a) if a is not None else None for a in context)
            covered = {a for a in context if a is not None}
            if reduced and not (covered & reduced):
                raise _Refused(
                    _reason("FX_REDUCTION_MISMATCH"),
                    f"{n.name} reduces {x.name}, a value computed once per reduced row",
                )
            if covered != roots:
                self._mismatch(
                    f"{n.name} reduces {x.name}, which does not span the group's "
                    "loop dims"
                )
        mine = {context[d] for d in low.reduce_dims if context[d] is not None}
        if mine:
            if reduced and mine != reduced:
                raise _Refused(
                    _reason("FX_REDUCTION_MISMATCH"),
                    f"{n.name} reduces over dims {list(low.reduce_dims)} of "
                    f"{x.name}, the group over other dims",
                )
            reduced = set(mine)
        if low.keepdim:
            dims = tuple(
                None if i in low.reduce_dims else a for i, a in enumerate(context)
            )
        else:
            dims = tuple(a for i, a in enumerate(context) if i not in low.reduce_dims)
        return dims, context, reduced

    def _place_pointwise(
        self,
        cand: list[int | None],
        roots: set[int],
        reduced: set[int],
        absorbable: dict[int, bool],
    ) -> tuple[int | None, ...]:
        """4. n is pointwise (or a followed view): the axis of each of its
        dims (``roots`` gains new axes in place)."""
        n, groups, out_shape = self.n, self.groups, self.out_shape
        find, size = self.find, self.size
        ref = (
            [
                find(a) if a is not None and a in self.parent else None
                for a in groups[0].ref
            ]
            if groups
            else []
        )
        used = {find(a) for a in cand if a is not None}
        dims_list: list[int | None] = []
        for i, s in enumerate(out_shape):
            a = cand[i]
            if a is not None:
                dims_list.append(find(a))
                continue
            if s == 1:
                dims_list.append(None)
                continue
            if not groups:
                a = self.state.new_axis(s)
                roots.add(a)
                size[a] = s
                dims_list.append(a)
                continue
            choice = None
            if len(ref) == len(out_shape):
                r = ref[i]
                if r is not None and r not in used and size.get(r) == s:
                    choice = r
            if choice is None:
                choice = next(
                    (r for r in sorted(roots) if r not in used and size[r] == s),
                    None,
                )
            if choice is None and not reduced and all(absorbable.values()):
                # The groups' values are only read here: compute them
                # again at every point of n's larger space.
                choice = self.state.new_axis(s)
                roots.add(choice)
                size[choice] = s
            if choice is None:
                self._mismatch(
                    f"{n.name} has shape {out_shape}, larger than the group's "
                    f"loop dims {sorted(size[r] for r in roots)}"
                )
            used.add(choice)
            dims_list.append(choice)
        return tuple(dims_list)

    def _check_spans(
        self,
        dims: tuple[int | None, ...],
        roots: set[int],
        reduced: set[int],
        absorbable: dict[int, bool],
    ) -> None:
        """5. Every group must span the merged space (or, if pointwise,
        exactly its outer dims), and n must be full at its level."""
        n, low, size, out_shape = self.n, self.low, self.size, self.out_shape
        outer = roots - reduced
        for g in self.groups:
            mine = {self.find(a) for a in g.axes}
            if mine == roots:
                continue
            if not g.reduce_axes and reduced and mine == outer:
                continue
            if absorbable[g.id] and mine <= roots:
                continue  # only read inside: recomputed where it is broadcast
            self._mismatch(
                f"the group of {g.members[0].name} iterates over "
                f"{sorted(size[r] for r in mine)}, the merged group over "
                f"{sorted(size[r] for r in roots)}"
            )
        if low.kind != "view":
            covered = {a for a in dims if a is not None}
            if reduced and low.kind != "reduction" and covered & reduced:
                want = roots
            elif reduced:
                want = outer
            else:
                want = roots
            if covered != want:
                self._mismatch(
                    f"{n.name} has shape {out_shape}: it would span "
                    f"{sorted(size[r] for r in covered)} of the group's loop dims "
                    f"{sorted(size[r] for r in want)}"
                )
