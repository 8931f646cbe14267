"""Real compiles for the one-pass reductions' CUDA tests: a function
compiled and run, with its generated code and the pass's remarks (stage
``one_pass_reduction``), so that each test asserts on the code the pass
generated and the reason it gave."""

from typing import Any

import torch
from torch._inductor import config, fusion_report
from torch._inductor.utils import run_and_get_code


def pass_remarks(report: Any) -> list[dict[str, Any]]:
    """The one-pass remarks of a captured fusion report."""
    return [
        r
        for g in report.to_json()["graphs"]
        for r in g["remarks"]
        if r["stage"] == "one_pass_reduction"
    ]


def compile_with_remarks(
    fn: Any, *args: Any, dynamic: bool = False, **patch: Any
) -> tuple[Any, str, list[dict[str, Any]]]:
    """``fn`` compiled afresh (Dynamo reset, the FX graph cache off) under
    the config ``patch`` and run on ``args``: its result, its generated
    code, and the one-pass remarks of the compile."""
    torch._dynamo.reset()
    with (
        config.patch({"fx_graph_cache": False, **patch}),
        fusion_report.capture() as report,
    ):
        out, codes = run_and_get_code(torch.compile(fn, dynamic=dynamic or None), *args)
    return out, "\n".join(codes), pass_remarks(report)
