"""The user's view against the generated code, model by model (CPU or CUDA).

For each model of the default set (``ci`` shapes, inference, default mode)
compiled through the fork under a capture, compares what the fusion summary
and page say with the output code Inductor wrote:

* kernels: the summary's header (one per generated function, one per extern
  call) against the kernel functions the output code defines (``def
  triton_...`` / ``cpp_fused_... = async_compile.cpp_pybinding``) and the
  extern calls in the graph's report;
* sources: every generated function of the report has its source in
  ``kernel_sources``, and the page has a code anchor for each;
* the page: rendered with ``render`` and its kernel rows counted.

    python3 tools/fork.py run -- python3 benchmarks/fusion/user_view_check.py \\
        --device cuda --out $OUT/user_view_cuda
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

_TRITON_DEF = re.compile(r"^(triton_\w+) = async_compile\.triton\(", re.M)
_CPP_DEF = re.compile(r"^(cpp_fused_\w+) = async_compile\.cpp_pybinding", re.M)


def check(name: str, device: str) -> dict[str, Any]:
    import torch
    import torch._dynamo
    from fusion_viewer import html as render_html
    from fusion_viewer.common import kernel_groups
    from models import build, compile_config
    from torch._inductor import fusion_report
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    model, inputs = build(name, device, "ci")
    with compile_config(name), torch.no_grad(), fusion_report.capture() as rep:
        _, codes = run_and_get_code(torch.compile(model), *inputs)
    # (graph, function): each graph's output code names its kernels anew
    defined = {
        (i, f)
        for i, code in enumerate(codes)
        for f in _TRITON_DEF.findall(code) + _CPP_DEF.findall(code)
    }
    data = rep.to_json()
    reported: set[tuple[int, str]] = set()
    missing_source: list[str] = []
    externs = 0
    groups = 0
    for i, graph in enumerate(data["graphs"]):
        for group in kernel_groups(graph):
            groups += 1
            kind = group["records"][0]["kind"]
            if kind in ("extern", "fallback"):
                externs += 1
                continue
            if group["function"]:
                reported.add((i, group["function"]))
                if group["function"] not in graph.get("kernel_sources", {}):
                    missing_source.append(group["function"])
    headers = [
        line for line in rep.summary().splitlines() if re.match(r"graph \S+ \(", line)
    ]
    said = sum(int(re.search(r"-> (\d+) kernel", h).group(1)) for h in headers)
    page = render_html.render_html(data)
    links = re.findall(r'class="code-link" href="#([^"]+)"', page)
    ids = set(re.findall(r'id="([^"]+)"', page))
    return {
        "model": name,
        "graphs": len(data["graphs"]),
        "functions_in_code": len(defined),
        "functions_reported": len(reported),
        "only_in_code": sorted(f"{i}:{f}" for i, f in defined - reported),
        "only_in_report": sorted(f"{i}:{f}" for i, f in reported - defined),
        "extern_calls": externs,
        "summary_kernels": said,
        "summary_agrees": said == groups and said == len(defined) + externs,
        "missing_source": missing_source,
        "page_code_links": len(links),
        "page_broken_code_links": len([link for link in links if link not in ids]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--models", default="all")
    parser.add_argument("--out", type=Path, required=True, help="path without suffix")
    args = parser.parse_args()
    import torch
    from models import MODELS

    names = list(MODELS) if args.models == "all" else args.models.split(",")
    rows = []
    for name in names:
        try:
            rows.append(check(name, args.device))
        except Exception as e:  # report the model, go on with the others
            rows.append({"model": name, "error": f"{type(e).__name__}: {e}"[:400]})
        print(json.dumps(rows[-1]), flush=True)
    args.out.with_suffix(".json").write_text(
        json.dumps(
            {"torch": torch.__version__, "device": args.device, "rows": rows}, indent=2
        )
        + "\n"
    )
    lines = [
        "| model | graphs | functions in code | reported | extern | summary says | agrees | sources missing | page code links (broken) |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | error: {r['error']} |||||||")
            continue
        lines.append(
            f"| {r['model']} | {r['graphs']} | {r['functions_in_code']} | "
            f"{r['functions_reported']} | {r['extern_calls']} | {r['summary_kernels']} | "
            f"{'yes' if r['summary_agrees'] else 'NO'} | {len(r['missing_source'])} | "
            f"{r['page_code_links']} ({r['page_broken_code_links']}) |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
