"""The memory crossings of a graph's generated code, read from its wrapper.

Test helper of the fusion remarks (not a test file): the report's
buffer-level boundaries are checked against the buffers of the code Inductor
generated, read independently of the fork's analysis.  The wrapper's
``call`` allocates each buffer, passes it to the calls of generated functions
and library kernels, and names where storage is reused (``bufB = bufA; del
bufA  # reuse``) or viewed (``reinterpret_tensor(bufA, ...)``).

Two checks, both ways:

* each dependency boundary of the report names a buffer the code passes to
  the consumer's call (under its name or one sharing its storage) and a
  consumer whose call exists;
* each buffer the code allocates, hands to one call and then to a later,
  different call is a crossing, and some dependency boundary of the report
  names it with that later call's kernel as its consumer.

Loop nests inside one C++ function share its call, so the crossings between
them are checked by the first rule only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


_CALL_LINE = re.compile(
    r"^\s*(?:(?P<out>[\w]+) = )?(?P<callee>[\w.]+?)(?:\.run)?\((?P<args>.*)\)\s*$"
)
_REUSE = re.compile(r"^\s*(\w+) = (\w+); del \w+\s+# reuse")
_ALIAS = re.compile(r"^\s*(\w+) = (\w+)\s*(?:#.*)?$")
_ELEMENT = re.compile(r"^\s*(\w+) = (\w+)\[\d+\]\s*(?:#.*)?$")
_REINTERPRET = re.compile(r"^\s*(\w+) = reinterpret_tensor\((\w+),")
_ALLOC = re.compile(r"^\s*(\w+) = empty_strided\w*\(")
_NAME = re.compile(r"\b(buf\d+)\b")


def run_and_get_graph_codes(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Run ``fn`` and return its result and the wrapper code of each graph it
    compiles, in order.  Unlike ``run_and_get_code``, the modules that
    autotuning compiles only to time a subgraph choice (max-autotune's
    ``benchmark_*`` lowerings, such as a GEMM split along K) are left out:
    they are no graph of the program, and the fusion report has none."""
    from unittest import mock

    import torch
    from torch._inductor.graph import GraphLowering
    from torch._inductor.virtualized import V

    codes: list[str] = []

    def save_output_code(code: str) -> None:
        # (V.graph is the lowering being compiled; a null handler outside one)
        name = getattr(V.graph, "name", None) or ""
        if not name.startswith("benchmark_") and code not in codes:
            codes.append(code)

    with mock.patch.object(GraphLowering, "save_output_code", save_output_code):
        torch._dynamo.reset()
        result = fn()
    return result, codes


def _call_body(code: str) -> list[str]:
    lines = code.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.strip().startswith("def call(")),
        None,
    )
    if start is None:
        return []
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return body


def _kernel_calls(graph: dict[str, Any]) -> dict[str, str]:
    """Report kernel name -> the name its call has in the wrapper."""
    out = {}
    for kernel in graph["kernels"]:
        name = kernel["name"]
        if kernel["kind"] in ("extern", "fallback"):
            call = name.partition(":")[2] or name
            out[name] = call.removeprefix("torch.ops.")
        elif kernel.get("function"):
            out[name] = kernel["function"]
    return out


class WrapperCrossings:
    """The calls of a wrapper, the storage groups of its buffers and the
    buffers crossing between two of its calls."""

    def __init__(self, code: str, calls: set[str]) -> None:
        # name -> the name whose storage it shares (a reuse or a view), and
        # name -> the buffer whose value it is (a view or an output selected
        # from a tuple; a reused storage holds a new buffer)
        self.storage: dict[str, str] = {}
        self.value: dict[str, str] = {}
        self.element_of: dict[str, str] = {}
        self.slices: dict[str, list[str]] = {}
        self.calls: list[tuple[str, set[str]]] = []  # (callee, buffers passed)
        self.allocated: set[str] = set()
        for line in _call_body(code):
            if m := _REUSE.match(line):
                self.storage[m.group(1)] = m.group(2)
                self.allocated.add(m.group(1))
                continue
            if m := _REINTERPRET.match(line):
                # a reuse holds a new buffer; a view before the call that
                # writes it is a slice written in place (a cat's input)
                self.storage[m.group(1)] = m.group(2)
                self.allocated.add(m.group(1))
                if "# reuse" not in line:
                    self.slices.setdefault(m.group(2), []).append(m.group(1))
                continue
            if m := _ALLOC.match(line):
                self.allocated.add(m.group(1))
                continue
            m = _CALL_LINE.match(line)
            callee = m.group("callee").removeprefix("torch.ops.") if m else None
            if m and callee in calls:
                passed = set(_NAME.findall(m.group("args")))
                if m.group("out"):
                    self.allocated.add(m.group("out"))
                    passed.add(m.group("out"))
                self.calls.append((callee, passed))
                continue
            if m := _ELEMENT.match(line):
                # one output of a call's tuple: a buffer of its own, which
                # the call that made the tuple wrote
                self.storage[m.group(1)] = m.group(2)
                self.element_of[m.group(1)] = m.group(2)
                self.allocated.add(m.group(1))
                continue
            if m := _ALIAS.match(line):
                self.storage[m.group(1)] = m.group(2)
                self.value[m.group(1)] = m.group(2)

    def root(self, name: str) -> str:
        """The first buffer of the storage ``name`` lies in."""
        while name in self.storage and self.storage[name] != name:
            name = self.storage[name]
        return name

    def value_of(self, name: str) -> str:
        while name in self.value and self.value[name] != name:
            name = self.value[name]
        return name

    def crossings(self) -> set[tuple[str, str]]:
        """(buffer, the later call) of each buffer an allocated buffer's
        first call hands on to a different call."""
        first: dict[str, str] = {}
        out = set()
        for callee, passed in self.calls:
            for name in map(self.value_of, passed):
                if name not in self.allocated:
                    continue
                written = [first[x] for x in self.slices.get(name, ()) if x in first]
                if name not in first and any(w != callee for w in written):
                    out.add((name, callee))  # read whole after its slices
                    first[name] = written[0]
                    continue
                tuple_name = self.element_of.get(name)
                if name not in first and tuple_name in first:
                    first[name] = first[tuple_name]
                if name not in first:
                    first[name] = callee
                elif first[name] != callee:
                    out.add((name, callee))
        return out


def code_crossing_problems(graph: dict[str, Any], code: str) -> list[str]:
    """What the report's boundaries of ``graph`` and its wrapper ``code``
    disagree on (empty: they agree)."""
    calls = _kernel_calls(graph)
    wrapper = WrapperCrossings(code, set(calls.values()))
    problems = []
    explained: set[tuple[str, str]] = set()
    for b in graph["boundaries"]:
        if b["relation"] != "dependency":
            continue
        buffer = wrapper.root(b["buffer"])
        consumer = calls.get(b["kernels"][1])
        explained.add((b["buffer"], str(consumer)))
        passed = [
            {wrapper.root(n) for n in p}
            for callee, p in wrapper.calls
            if callee == consumer
        ]
        if consumer is None or not passed:
            problems.append(f"{b['buffer']}: no call of {b['kernels'][1]} in the code")
        elif not any(buffer in p for p in passed):
            problems.append(
                f"{b['buffer']}: not passed to {consumer}, the call of {b['kernels'][1]}"
            )
    for buffer, callee in sorted(wrapper.crossings() - explained):
        problems.append(f"{buffer} crosses into {callee} with no boundary")
    return problems


_PARAM = re.compile(r"(?:const\s+)?[\w:<>]+\*\s+(\w+)")
_POINTER_ALIAS = re.compile(r"auto (\w+) = (\w+);")


def _top_blocks(body: str) -> list[str]:
    blocks, depth, start = [], 0, None
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
            if depth == 1:
                start = i
        elif ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                blocks.append(body[start : i + 1])
                start = None
    return [b for b in blocks if "\n" in b]  # not an initializer such as {0}


def _loop_nest_blocks(body: str) -> list[str]:
    """The loop nests of a C++ function body: its top-level brace blocks, or
    those of the parallel region (``omp_get_thread_num``) that holds them."""
    out = []
    for block in _top_blocks(body):
        if "omp_get_thread_num()" in block.split("\n", 3)[1]:
            out.extend(_loop_nest_blocks(block[1:-1]))
        else:
            out.append(block)
    return out


def cpp_function_crossings(source: str, args: list[str]) -> set[str]:
    """The buffers (named by the call's ``args``) that one loop nest of a
    C++ kernel function stores and a later loop nest of it loads."""
    _, _, rest = source.partition("void  kernel(")
    if not rest:
        _, _, rest = source.partition("void kernel(")
    params_text, _, body = rest.partition(")")
    params = _PARAM.findall(params_text)
    buffer_of = dict(zip(params, args))
    body = body[body.index("{") + 1 : body.rindex("}")] if "{" in body else body
    aliases = {a: p for a, p in _POINTER_ALIAS.findall(body) if p in buffer_of}
    names = {**{p: p for p in params}, **aliases}
    stored_in: dict[str, int] = {}
    out: set[str] = set()
    for i, block in enumerate(_loop_nest_blocks(body)):
        for name, param in names.items():
            stores = re.search(
                rf"\.store\(\s*{name}\s*\+|\b{name}\[[^\]]*\]\s*=[^=]", block
            )
            loads = re.search(
                rf"load\w*\(\s*{name}\s*\+|\b{name}\[[^\]]*\](?!\s*=[^=])", block
            )
            if loads and param in stored_in and stored_in[param] < i:
                out.add(buffer_of[param])
            if stores and param not in stored_in:
                stored_in[param] = i
    return out


def _writes(kernel: dict[str, Any], buffer: str, wrapper: WrapperCrossings) -> bool:
    root = wrapper.root(buffer)
    return any(wrapper.root(n) == root for n in kernel.get("writes") or [])


def _reads(kernel: dict[str, Any], buffer: str, wrapper: WrapperCrossings) -> bool:
    root = wrapper.root(buffer)
    return any(wrapper.root(n) == root for n in kernel.get("reads") or [])


def cpp_crossing_problems(graph: dict[str, Any], code: str) -> list[str]:
    """Between the loop nests of each C++ function: each buffer one stores and
    a later one loads has a boundary between two kernels of that function."""
    wrapper = WrapperCrossings(code, set(_kernel_calls(graph).values()))
    functions = {
        k["function"]: k
        for k in graph["kernels"]
        if k["kind"] == "cpp" and k.get("function")
    }
    problems = []
    for line in _call_body(code):
        m = _CALL_LINE.match(line)
        if not m or m.group("callee") not in functions:
            continue
        function = m.group("callee")
        args = [a.strip() for a in m.group("args").split(",") if a.strip()]
        source = (graph.get("kernel_sources") or {}).get(function, "")
        inside = {
            wrapper.root(b["buffer"])
            for b in graph["boundaries"]
            if b["relation"] == "dependency"
            and all(
                next(
                    (k.get("function") for k in graph["kernels"] if k["name"] == n),
                    None,
                )
                == function
                for n in b["kernels"]
            )
        }
        records = [k for k in graph["kernels"] if k.get("function") == function]
        for buffer in sorted(cpp_function_crossings(source, args)):
            # a buffer that only the kernel writing it reads stays inside that
            # kernel (one fused node's loop nests, under a loop they share)
            writers = [k for k in records if _writes(k, buffer, wrapper)]
            readers = [
                k for k in records if _reads(k, buffer, wrapper) and k not in writers
            ]
            if not readers:
                continue
            if wrapper.root(buffer) not in inside:
                problems.append(
                    f"{buffer}: stored and loaded by two loop nests of {function} "
                    "with no boundary"
                )
    return problems
