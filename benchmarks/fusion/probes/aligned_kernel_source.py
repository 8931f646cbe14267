"""Are the aligned steps' loads vectors in the PTX, and what do the loops read like?

The generated code of the one-pass pass's looped kernels, aligned steps on
and off, for reading: a bfloat16 softmax, cross-entropy and layer norm at
rows of 50257 (264 rows: two per multiprocessor of an H100), each written to
``$OUT/aligned_<op>_<on|off>.py``, with the count of its vector loads in the
compiled PTX where Triton reports it.

    python3 tools/fork.py run -- python3 benchmarks/fusion/probes/aligned_kernel_source.py
"""

import glob
import os
import re
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

OUT = Path(os.environ.get("OUT", "/tmp"))


def ptx_accesses(since: float) -> dict[str, int]:
    """Global loads and stores by width in the PTX Triton wrote since
    ``since`` (vector ones are ``.v2``/``.v4``)."""
    counts: dict[str, int] = {}
    for path in glob.glob("/tmp/torchinductor_*/triton/**/*.ptx", recursive=True):
        if os.path.getmtime(path) < since:
            continue
        for token in re.findall(r"\b(?:ld|st)\.global\S*", Path(path).read_text()):
            width = re.search(r"\.v\d", token)
            key = token[:2] + (width.group(0) if width else ".scalar")
            counts[key] = counts.get(key, 0) + 1
    return counts


def main() -> None:
    x = torch.randn(264, 50257, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, 50257, (264,), device="cuda")
    ops = {
        "softmax": lambda t: torch.softmax(t, -1),
        "cross_entropy": lambda t: F.cross_entropy(t, target),
        "layer_norm": lambda t: F.layer_norm(t, (t.shape[-1],)),
    }
    for name, fn in ops.items():
        for aligned in (True, False):
            torch._dynamo.reset()
            start = time.time()
            with config.patch(
                fx_graph_cache=False,
                one_pass_reductions=True,
                one_pass_reductions_aligned_loads=aligned,
            ):
                _, codes = run_and_get_code(torch.compile(fn), x)
            path = OUT / f"aligned_{name}_{'on' if aligned else 'off'}.py"
            path.write_text("\n".join(codes))
            print(path.name, "r0_row" in path.read_text(), ptx_accesses(start))


if __name__ == "__main__":
    main()
