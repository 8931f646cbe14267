"""How fast is the copy that ``reductions.py`` measures its fractions against?

``reductions.py`` gives each case's time as a fraction of the bandwidth of
``x.clone()`` of the case's own input, replayed from a CUDA graph.  On the
H200 that clone took 127 us for 2^27 16-bit elements at rows of 512-32768
and 256000, but 199 us at rows of 50257, 128256 and 151936, and 396 us
against 252 for 2^27 float32 elements at the same rows but 256000
(``benchmarks/results/one_pass/wider_sweep_2.15.0_h200``): the same bytes,
1.57x apart.  This probe times, for each shape and dtype, the clone the
sweep uses and three other ways to move the same bytes, under CUDA graphs
and without, and prints the bandwidth of each, so that the fractions can
be read against the device's copy rather than one shape's:

- ``clone``: ``x.clone()``, the sweep's baseline (a device-to-device
  memcpy of a fresh allocation);
- ``copy_into``: ``y.copy_(x)`` into a tensor allocated once, outside the
  graph;
- ``elementwise``: ``torch.mul(x, 1, out=y)``, an elementwise kernel rather
  than a memcpy;
- ``flat_clone``: ``x.view(-1).clone()``, the same memcpy of a 1-D view.

    python benchmarks/fusion/probes/copy_baseline.py            # $OUT/copy_baseline.json
    python benchmarks/fusion/probes/copy_baseline.py --shapes 2670x50257 --dtypes bfloat16
    # no GPU: a sweep's 16-bit fractions against a probe's elementwise copy
    python benchmarks/fusion/probes/copy_baseline.py --baseline copy_baseline.json \
        --refigure sweep_a.json sweep_b.json      # a later file's case replaces an earlier one's

Plain torch: it runs on any CUDA machine's own release, no fork needed.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any


SHAPES = "262144x512,4096x32768,2670x50257,1046x128256,883x151936,524x256000"
DTYPES = "bfloat16,float32"


def parse_shapes(text: str) -> list[tuple[int, int]]:
    """``ROWSxROW,...`` to pairs; a malformed item is a one-line error."""
    shapes = []
    for item in text.split(","):
        try:
            rows, row = (int(part) for part in item.lower().split("x"))
        except ValueError:
            raise SystemExit(f"error: bad shape {item!r}: want ROWSxROW") from None
        if rows < 1 or row < 1:
            raise SystemExit(f"error: bad shape {item!r}: both sizes must be >= 1")
        shapes.append((rows, row))
    return shapes


def bandwidth(nbytes: int, seconds: float) -> float:
    """Bytes read plus bytes written a second, in TB/s."""
    return 2 * nbytes / seconds / 1e12


def time_ways(rows: int, row: int, dtype_name: str) -> dict[str, Any]:
    """Median microseconds and TB/s of each way to move one input's bytes."""
    import torch
    import triton.testing

    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    x = torch.randn(rows, row, device="cuda", dtype=dtype) * 4
    y = torch.empty_like(x)
    nbytes = x.numel() * x.element_size()
    ways = {
        "clone": lambda: x.clone(),
        "copy_into": lambda: y.copy_(x),
        "elementwise": lambda: torch.mul(x, 1, out=y),
        "flat_clone": lambda: x.view(-1).clone(),
    }
    entry: dict[str, Any] = {
        "rows": rows,
        "row": row,
        "dtype": dtype_name,
        "bytes": nbytes,
        "src_offset_mod_2mib": x.data_ptr() % (1 << 21),
        "ways": {},
    }
    for name, fn in ways.items():
        graph_ms = triton.testing.do_bench_cudagraph(fn, return_mode="median")
        plain_ms = triton.testing.do_bench(fn, return_mode="median")
        entry["ways"][name] = {
            "graph_us": graph_ms * 1e3,
            "graph_tb_s": bandwidth(nbytes, graph_ms / 1e3),
            "plain_us": plain_ms * 1e3,
            "plain_tb_s": bandwidth(nbytes, plain_ms / 1e3),
        }
    return entry


def elementwise_bandwidth(baseline: dict[str, Any]) -> dict[int, float]:
    """The median elementwise-copy bandwidth (bytes a second) under CUDA
    graphs of a probe's cases, by element size."""
    import statistics

    by_size: dict[int, list[float]] = {}
    for case in baseline["cases"]:
        size = case["bytes"] // (case["rows"] * case["row"])
        by_size.setdefault(size, []).append(
            case["ways"]["elementwise"]["graph_tb_s"] * 1e12
        )
    return {size: statistics.median(v) for size, v in by_size.items()}


def refigure(baseline: dict[str, Any], sweeps: list[dict[str, Any]]) -> str:
    """A Markdown table of the sweeps' 16-bit cases: eager, default and the
    pass as fractions of the elementwise copy, and the pass's fraction
    against the sweep's own baseline in brackets."""
    bandwidth = elementwise_bandwidth(baseline)
    itemsize = {"bfloat16": 2, "float16": 2}
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for sweep in sweeps:
        for case in sweep["cases"]:
            if case["dtype"] in itemsize:
                key = (
                    case["row"],
                    case["op"],
                    case["dtype"],
                    case["pass"],
                    case["rows"],
                )
                latest[key] = case
    lines = [
        "| op | rows x row | dtype | pass | eager | default | the pass (recorded) |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in sorted(latest):
        case = latest[key]
        bw = bandwidth.get(itemsize[case["dtype"]])
        if bw is None:
            raise SystemExit(f"error: the baseline has no {case['dtype']}-sized case")

        def fraction(arm: str, case: dict[str, Any] = case, bw: float = bw) -> str:
            entry = case["arms"].get(arm, {})
            return f"{case['bytes'] / entry['s'] / bw:.0%}" if "s" in entry else "-"

        recorded = case["arms"].get("one_pass", {}).get("fraction_of_copy")
        lines.append(
            f"| {case['op']} | {case['rows']} x {case['row']} | {case['dtype']} | "
            f"{case['pass']} | {fraction('eager')} | {fraction('default')} | "
            f"{fraction('one_pass')}"
            + (f" ({recorded:.0%})" if recorded is not None else "")
            + " |"
        )
    return "\n".join(lines)


def load_json(path: str) -> Any:
    """A JSON file, or a one-line error naming it."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path}: {e}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--dtypes", default=DTYPES)
    parser.add_argument("--baseline", help="a copy_baseline.json, for --refigure")
    parser.add_argument(
        "--refigure", nargs="+", metavar="SWEEP_JSON", help="reductions.py JSONs"
    )
    args = parser.parse_args(argv)
    if args.refigure:
        if not args.baseline:
            raise SystemExit("error: --refigure needs --baseline copy_baseline.json")
        loaded = [load_json(path) for path in [args.baseline, *args.refigure]]
        print(refigure(loaded[0], loaded[1:]))
        return 0
    shapes = parse_shapes(args.shapes)
    dtypes = [d for d in args.dtypes.split(",") if d]
    import torch

    for name in dtypes:
        if not isinstance(getattr(torch, name, None), torch.dtype):
            raise SystemExit(f"error: unknown dtype {name!r}")
    if not torch.cuda.is_available():
        raise SystemExit("error: needs a CUDA device")
    results = []
    print("shape dtype: way graph us (TB/s) / plain us (TB/s)")
    for rows, row in shapes:
        for name in dtypes:
            entry = time_ways(rows, row, name)
            torch.cuda.empty_cache()
            results.append(entry)
            cells = "; ".join(
                f"{way} {t['graph_us']:.0f} ({t['graph_tb_s']:.2f}) / "
                f"{t['plain_us']:.0f} ({t['plain_tb_s']:.2f})"
                for way, t in entry["ways"].items()
            )
            print(f"{rows}x{row} {name}: {cells}", flush=True)
    out = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out, "copy_baseline.json"), "w") as fh:
        json.dump(
            {
                "device": torch.cuda.get_device_name(),
                "torch": torch.__version__,
                "cases": results,
            },
            fh,
            indent=1,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
