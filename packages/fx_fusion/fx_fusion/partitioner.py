"""The greedy partition of the FX fusion pass: fusible nodes into groups.

:func:`partition_graph` visits the nodes of an aten-level graph in order:
each node is lowered (:mod:`.lowering`) and tries to join the groups of the
fusible values it reads, then a sibling group through a shared input, else it
starts a group of its own.  Each join attempt is planned by
:func:`.join.plan_join` (the merged iteration space) and checked for cycles
here, with extra ordering edges around mutations.  The algorithm and what it
guarantees are described in the package docstring (``fx_fusion``).
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.fx

from .join import _Plan, plan_join
from .lowering import _lower
from .model import _Lowered, _Refused, _val, Group, Partition, Verdict
from .report import _reason, computes


def _storage(val: Any) -> Any:
    from torch.multiprocessing.reductions import StorageWeakRef

    try:
        return StorageWeakRef(val.untyped_storage())
    except Exception:
        return None


def _dependency_edges(
    nodes: list[torch.fx.Node], index: dict[torch.fx.Node, int]
) -> dict[torch.fx.Node, list[torch.fx.Node]]:
    """Data edges plus ordering edges around mutations and side effects."""
    succ: dict[torch.fx.Node, list[torch.fx.Node]] = {n: [] for n in nodes}
    for n in nodes:
        for inp in n.all_input_nodes:
            if inp in succ:
                succ[inp].append(n)
    readers: dict[Any, list[torch.fx.Node]] = {}
    for n in nodes:
        for inp in n.all_input_nodes:
            ref = _storage(_val(inp)) if isinstance(_val(inp), torch.Tensor) else None
            if ref is not None:
                readers.setdefault(ref, []).append(n)
    last_impure: torch.fx.Node | None = None
    for n in nodes:
        if n.op != "call_function":
            continue
        target = n.target
        mutated: list[Any] = []
        schema = getattr(target, "_schema", None)
        if schema is not None:
            for i, a in enumerate(schema.arguments):
                if a.alias_info is not None and a.alias_info.is_write:
                    value = n.args[i] if i < len(n.args) else n.kwargs.get(a.name)
                    if isinstance(value, torch.fx.Node):
                        mutated.append(_storage(_val(value)))
        for ref in mutated:
            for r in readers.get(ref, ()):
                if r is n:
                    continue
                if index[r] < index[n]:
                    succ[r].append(n)
                else:
                    succ[n].append(r)
        impure = bool(mutated)
        with contextlib.suppress(Exception):
            impure = impure or n.is_impure()
        if impure:
            if last_impure is not None:
                succ[last_impure].append(n)
            last_impure = n
    return {n: list(dict.fromkeys(s)) for n, s in succ.items()}


class _Partitioner:
    """The state of one partition: the groups so far and every decision.

    :meth:`run` visits the nodes in order; each join attempt (:meth:`_try`)
    is planned by :func:`.join.plan_join`, which reads :meth:`in_group`,
    :meth:`new_axis`, :meth:`only_read_inside` and ``lowered``, and then
    checked for cycles (:meth:`_creates_cycle`); a plan that fits is applied
    to the groups (:meth:`_apply`).
    """

    def __init__(self, graph: torch.fx.Graph) -> None:
        self.graph = graph
        self.nodes = list(graph.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        self.succ = _dependency_edges(self.nodes, self.index)
        self.lowered: dict[torch.fx.Node, _Lowered] = {}
        self.refused: dict[torch.fx.Node, _Refused] = {}
        self.group_of: dict[torch.fx.Node, Group] = {}
        self.view_of: dict[torch.fx.Node, Group] = {}
        self.groups: list[Group] = []
        self.verdicts: dict[tuple[torch.fx.Node, torch.fx.Node], Verdict] = {}
        self.pairs: list[dict[str, Any]] = []
        self._next_axis = 0
        self._next_group = 0

    # -- helpers -------------------------------------------------------------

    def new_axis(self, size: int) -> int:
        self._next_axis += 1
        return self._next_axis

    def in_group(self, x: Any) -> Group | None:
        if not isinstance(x, torch.fx.Node):
            return None
        return self.group_of.get(x) or self.view_of.get(x)

    def _producers(self, x: torch.fx.Node) -> list[torch.fx.Node]:
        """The computing nodes behind ``x``, looking through views."""
        if computes(x) or x.op != "call_function":
            return [x] if computes(x) else []
        out: list[torch.fx.Node] = []
        for inp in x.all_input_nodes:
            out.extend(self._producers(inp))
        return list(dict.fromkeys(out))

    # -- the pass ------------------------------------------------------------

    def run(self) -> Partition:
        for n in self.nodes:
            if n.op != "call_function":
                continue
            try:
                low = _lower(n)
            except _Refused as e:
                self.refused[n] = e
                continue
            except Exception as e:  # an op whose arguments we misread
                self.refused[n] = _Refused(
                    _reason("FX_UNSUPPORTED_OP"), f"{type(e).__name__}: {e}"
                )
                continue
            self.lowered[n] = low
            self._visit(n, low)
        groups = [g for g in self.groups if g.members]
        return Partition(
            self.graph,
            groups,
            self.lowered,
            self.refused,
            self.verdicts,
            self.pairs,
            self.group_of,
            self.view_of,
            self.succ,
            self.index,
        )

    def _visit(self, n: torch.fx.Node, low: _Lowered) -> None:
        candidates, producers = self._operand_groups(n, low)
        if low.kind == "view":
            if not candidates:
                return  # a view of a group input: stays eager, read by strides
            plan = self._try(n, low, candidates[:1])
            if isinstance(plan, _Plan):
                self._apply(plan, n, low)
            return

        joined, plan, refusals = self._join_operand_groups(n, low, candidates)
        self._record_verdicts(n, candidates, producers, joined, refusals)
        if not joined:
            sibling = self._join_sibling(n, low)
            if sibling is not None:
                self._apply(sibling, n, low)
                return
            plan = self._try(n, low, [])
            if isinstance(plan, _Refused):
                self.refused[n] = plan
                del self.lowered[n]
                return
        assert isinstance(plan, _Plan)
        self._apply(plan, n, low)

    def _operand_groups(
        self, n: torch.fx.Node, low: _Lowered
    ) -> tuple[list[Group], dict[int, list[torch.fx.Node]]]:
        """The groups ``n`` reads values of (in order), with the producers it
        reads in each; a value read through a view the pass does not follow
        gets its verdict (``fx_view_not_folded``) here."""
        candidates: list[Group] = []
        producers: dict[int, list[torch.fx.Node]] = {}
        for x in low.tensors:
            g = self.in_group(x)
            if g is not None:
                if g not in candidates:
                    candidates.append(g)
                base = x if x in self.group_of else self._view_base(x)
                producers.setdefault(g.id, []).append(base)
                continue
            # A view the pass does not follow, of a value computed in a group.
            for p in self._producers(x) if x.op == "call_function" else []:
                if p is not x and self.in_group(p) is not None:
                    v = self._unfollowed_view(x, p)
                    self.verdicts[(p, n)] = Verdict(
                        False,
                        _reason("FX_VIEW_NOT_FOLDED"),
                        f"{n.name} reads {p.name} through {v.name} "
                        f"({getattr(v.target, '__name__', v.target)}"
                        f" {list(_val(v.args[0]).shape)} -> {list(_val(v).shape)})",
                    )
        return candidates, producers

    def _join_operand_groups(
        self, n: torch.fx.Node, low: _Lowered, candidates: list[Group]
    ) -> tuple[list[Group], _Plan | _Refused | None, dict[int, _Refused]]:
        """Join the first candidate group ``n`` fits, then merge every other
        one that still fits; the joined groups, the last plan and the
        refusals of the others."""
        joined: list[Group] = []
        plan: _Plan | _Refused | None = None
        refusals: dict[int, _Refused] = {}
        for g in candidates:
            attempt = self._try(n, low, [g])
            if isinstance(attempt, _Plan):
                joined, plan = [g], attempt
                break
            refusals[g.id] = attempt
        if joined:
            for g in candidates:
                if g in joined:
                    continue
                attempt = self._try(n, low, [*joined, g])
                if isinstance(attempt, _Plan):
                    joined.append(g)
                    plan = attempt
                    refusals.pop(g.id, None)
                else:
                    refusals[g.id] = attempt
        return joined, plan, refusals

    def _record_verdicts(
        self,
        n: torch.fx.Node,
        candidates: list[Group],
        producers: dict[int, list[torch.fx.Node]],
        joined: list[Group],
        refusals: dict[int, _Refused],
    ) -> None:
        """A verdict and an evaluated pair for each producer ``n`` reads."""
        for g in candidates:
            ok = g in joined
            refusal = refusals.get(g.id)
            for p in producers.get(g.id, []):
                verdict = Verdict(
                    ok,
                    None if ok else refusal.reason,
                    f"{n.name} joined the group of {p.name}" if ok else refusal.detail,
                )
                self.verdicts[(p, n)] = verdict
                self.pairs.append(
                    {
                        "first": p.name,
                        "second": n.name,
                        "fused": ok,
                        "reason": None if ok else refusal.reason.value,
                        "detail": verdict.detail,
                    }
                )

    def _join_sibling(self, n: torch.fx.Node, low: _Lowered) -> _Plan | None:
        """Horizontal fusion: join a group that reads one of n's inputs too.

        Tried only for a node that joined no group through its own operands.
        The shared input must be read at the same loop dims in both.
        """
        tried: set[int] = set()
        for x in low.tensors:
            if self.in_group(x) is not None:
                continue
            readers = sorted(
                (u for u in x.users if u is not n and u in self.group_of),
                key=self.index.__getitem__,
                reverse=True,
            )
            for m in readers[:4]:
                g = self.group_of[m]
                if g.id in tried:
                    continue
                tried.add(g.id)
                ctx = g.context[m]
                xs = _val(x).shape
                off = len(ctx) - len(xs)
                shared = {
                    x: tuple(
                        None if xs[j] == 1 else ctx[j + off] for j in range(len(xs))
                    )
                }
                attempt = self._try(n, low, [g], shared)
                self.pairs.append(
                    {
                        "first": m.name,
                        "second": n.name,
                        "fused": isinstance(attempt, _Plan),
                        "reason": None
                        if isinstance(attempt, _Plan)
                        else attempt.reason.value,
                        "detail": f"{m.name} and {n.name} both read {x.name}"
                        + ("" if isinstance(attempt, _Plan) else f": {attempt.detail}"),
                    }
                )
                if isinstance(attempt, _Plan):
                    return attempt
        return None

    def _unfollowed_view(self, x: torch.fx.Node, p: torch.fx.Node) -> torch.fx.Node:
        """The view closest to ``p`` on the way to ``x`` that the pass did not follow."""
        chain = [x]
        while chain[-1].args and isinstance(chain[-1].args[0], torch.fx.Node):
            base = chain[-1].args[0]
            if base is p or base.op != "call_function" or base in self.group_of:
                break
            chain.append(base)
        return next((v for v in reversed(chain) if v not in self.view_of), x)

    def _view_base(self, v: torch.fx.Node) -> torch.fx.Node:
        while v in self.view_of:
            v = v.args[0]  # type: ignore[assignment]
        return v

    # -- one join attempt ----------------------------------------------------

    def _try(
        self,
        n: torch.fx.Node,
        low: _Lowered,
        groups: list[Group],
        shared: dict[torch.fx.Node, tuple[int | None, ...]] | None = None,
    ) -> _Plan | _Refused:
        try:
            plan = plan_join(self, n, low, groups, shared or {})
        except _Refused as e:
            return e
        if groups and low.kind != "view" and self._creates_cycle(n, groups):
            return _Refused(
                _reason("WOULD_CREATE_CYCLE"),
                f"{n.name} depends on the group of "
                f"{', '.join(g.members[0].name for g in groups)} through a node "
                "outside it",
            )
        return plan

    def only_read_inside(self, g: Group, inside: set[torch.fx.Node]) -> bool:
        """Whether every reader of ``g``'s values is in ``inside`` (through views)."""

        def ok(node: torch.fx.Node) -> bool:
            for u in node.users:
                if u in inside:
                    continue
                if self.view_of.get(u) is g and ok(u):
                    continue
                return False
            return True

        return all(ok(m) for m in g.members)

    def _creates_cycle(self, n: torch.fx.Node, groups: list[Group]) -> bool:
        """Whether a path leaves ``groups`` + ``n`` and comes back into them."""
        inside: set[torch.fx.Node] = {n}
        ids = {g.id for g in groups}
        for g in groups:
            inside.update(g.members)
        limit = self.index[n]

        def internal(y: torch.fx.Node, s: torch.fx.Node) -> bool:
            vg = self.view_of.get(y)
            if vg is None:
                return False
            if s in inside:
                return vg.id in ids
            sg = self.group_of.get(s)
            return sg is vg

        stack = [
            s
            for u in inside
            for s in self.succ[u]
            if s not in inside and not internal(u, s)
        ]
        seen: set[torch.fx.Node] = set()
        while stack:
            x = stack.pop()
            if x in seen or self.index[x] > limit:
                continue
            if x in inside:
                return True
            seen.add(x)
            g = self.group_of.get(x)
            expand = g.members if g is not None and g.id not in ids else [x]
            for y in expand:
                seen.add(y)
                for s in self.succ[y]:
                    if s in inside:
                        if not internal(y, s):
                            return True
                    elif s not in seen and not internal(y, s):
                        stack.append(s)
        return False

    def _apply(self, plan: _Plan, n: torch.fx.Node, low: _Lowered) -> None:
        if plan.groups:
            base = plan.groups[0]
        else:
            self._next_group += 1
            base = Group(self._next_group)
            self.groups.append(base)
        rn = plan.rename

        def ren(d: tuple[int | None, ...]) -> tuple[int | None, ...]:
            return tuple(rn.get(a, a) if a is not None else None for a in d)

        for g in plan.groups:
            for node in g.members + g.views:
                g.dims[node] = ren(g.dims[node])
            for node in g.members:
                g.context[node] = ren(g.context[node])
            g.ref = ren(g.ref)
        for g in plan.groups[1:]:
            base.members.extend(g.members)
            base.views.extend(g.views)
            base.dims.update(g.dims)
            base.context.update(g.context)
            for m in g.members:
                self.group_of[m] = base
            for v in g.views:
                self.view_of[v] = base
            g.members, g.views = [], []
        base.members.sort(key=self.index.__getitem__)
        base.views.sort(key=self.index.__getitem__)
        base.axes = dict(plan.axes)
        base.reduce_axes = set(plan.reduce_axes)
        base.dims[n] = plan.dims
        if low.kind == "view":
            base.views.append(n)
            self.view_of[n] = base
        else:
            base.members.append(n)
            base.context[n] = plan.context
            self.group_of[n] = base
        if not base.ref:
            base.ref = plan.context


def partition_graph(graph: torch.fx.Graph) -> Partition:
    """Partition an aten-level graph (nodes carry ``meta["val"]``); see the module docstring."""
    return _Partitioner(graph).run()


def partition(gm: torch.fx.GraphModule) -> list[Group]:
    """The fusion groups of ``gm`` (of every size, in graph order of their first member)."""
    part = partition_graph(gm.graph)
    return sorted(part.groups, key=lambda g: part.index[g.members[0]])
