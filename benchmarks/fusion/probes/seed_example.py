"""The project's seed question: does Inductor fuse ``torch.sin(x) + torch.cos(x)``?

Run it under ``TORCH_LOGS=fusion`` (as the README's GPU check does) to see the
fusion log of the fork; it prints the number of kernels Inductor generated and
checks the result against eager.
"""

from __future__ import annotations

import argparse

import torch
import torch._inductor.config
from torch._inductor import metrics


def sin_plus_cos(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) + torch.cos(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu"
    )
    parser.add_argument("--size", type=int, default=1 << 20)
    args = parser.parse_args()

    x = torch.randn(args.size, device=args.device)
    metrics.reset()
    # A warm FX graph cache would skip the scheduler, and with it the log.
    with torch._inductor.config.patch(fx_graph_cache=False):
        compiled = torch.compile(sin_plus_cos)
        out = compiled(x)
    torch.testing.assert_close(out, sin_plus_cos(x))
    fork = getattr(torch.version, "fork", None)
    print(
        f"torch {torch.__version__} ({fork or 'stock, not the fork'}) on {args.device}"
    )
    print(
        f"sin(x) + cos(x): {metrics.generated_kernel_count} generated kernel(s), result equals eager"
    )


if __name__ == "__main__":
    main()
