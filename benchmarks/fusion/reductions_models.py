"""Model steps with ``config.one_pass_reductions`` on against off.

The softmax-class kernels of a language model's training step are its
logits' cross-entropy (rows as long as the vocabulary) and, where the width
is over 1024, its norms.  This times the GPT-2, Llama and T5 (the default
set's architectures, with their language-model heads and the loss) training steps
and BERT inference, each compiled twice (``torch.compile(model,
options={"one_pass_reductions": on})``, two Dynamo cache entries), the two
arms interleaved round by round, every step replayed from a CUDA graph
(``triton.testing.do_bench_cudagraph``): without graphs the host's noise
(30-120% between rounds on the device machine) hides a few percent.

    python benchmarks/fusion/reductions_models.py --models gpt2_lm,llama_lm,t5_lm,bert \\
        --rounds 5 --json benchmarks/results/one_pass/reductions_models_h100.json

Writes per model and arm the median step time over rounds, its spread, the
loss (or output) difference between the arms and the pass's remarks.
``--kernels`` adds each arm's GPU kernel time per step (``torch.profiler``,
arms interleaved: device time, free of host noise) and the kernels whose
time the pass changed most, so that a step's difference is traced to the
kernels it decided.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

ARMS = ("off", "on")
# A persistent, a looped and a fixed-configuration kernel of the same nodes
# differ only in this prefix of their names (``triton_per_fused_...``,
# ``triton_red_fused_...``, ``triton_unk_fused_...``).
_KERNEL_FORM = re.compile(r"^triton_(per|red|unk)_")


def kernel_changes(
    off: list[dict[str, Any]], on: list[dict[str, Any]], top: int = 8
) -> list[dict[str, Any]]:
    """The kernels whose time per step differs most between the arms (the
    ``kernels`` lists of :func:`measure.kernel_time_rounds`), a persistent
    and a looped form of the same nodes matched by name: ``name``,
    ``off_us``, ``on_us`` (``None`` where the arm has no such kernel)."""
    times: dict[str, list[float | None]] = collections.defaultdict(lambda: [None, None])
    for i, kernels in enumerate((off, on)):
        for k in kernels:
            key = _KERNEL_FORM.sub("triton_*_", k["name"])
            times[key][i] = (times[key][i] or 0.0) + k["s"] * 1e6
    rows = [
        {"name": name, "off_us": a, "on_us": b}
        for name, (a, b) in times.items()
        if a != b
    ]
    rows.sort(key=lambda r: -abs((r["on_us"] or 0.0) - (r["off_us"] or 0.0)))
    return rows[:top]


def _tokens(batch: int, seq: int, vocab: int, device: str) -> Any:
    import torch

    seeded = torch.Generator(device="cpu").manual_seed(0)
    return torch.randint(0, vocab, (batch, seq), generator=seeded).to(device)


# name -> (the default set's model in models.py, the Hugging Face class that
# puts its language-model head and loss on it; None: the model as it is,
# for inference), at batch 8.
MODELS: dict[str, tuple[str, str | None]] = {
    "gpt2_lm": ("gpt2", "GPT2LMHeadModel"),
    "llama_lm": ("llama_small", "LlamaForCausalLM"),
    "t5_lm": ("t5_small", "T5ForConditionalGeneration"),
    "bert": ("bert", None),
}


def build(name: str, vocab: int | None = None) -> tuple[Any, int, bool]:
    """The model of ``name``, its vocabulary and whether its step trains.
    The architecture is the default set's (``models.MODELS``, full shapes):
    its config is taken from the built model, so the two never differ;
    ``vocab`` replaces its vocabulary (Llama 3's 128256 on the default
    set's Llama)."""
    import transformers
    from models import MODELS as DEFAULT_SET

    base, head = MODELS[name]
    wrapped, _ = DEFAULT_SET[base].make(True)
    config = wrapped.model.config
    if head is None:
        return wrapped.model, config.vocab_size, False
    if vocab is not None:
        config.vocab_size = vocab
    if name == "t5_lm":
        # Generation with labels shifts them right from this token.
        config.decoder_start_token_id = config.pad_token_id = 0
    return getattr(transformers, head)(config), config.vocab_size, True


@contextlib.contextmanager
def capturable_backward() -> Iterator[None]:
    """Steps captured in CUDA graphs with autograd's stale streams redirected
    to the capturing stream (``torch.autograd.graph.
    set_override_stale_capture_stream``, in 2.14.1 and later; off again
    after).  Why: a step's first call, which compiles it, runs on the
    default stream, and a parameter's gradient accumulator created then can
    stay alive: torch 2.15.0 refused to capture GPT-2's training step (its
    tied embedding and LM head) with "AccumulateGrad has a stale reference
    to the default stream (stream 0) from warmup", gradients set to None or
    not."""
    from torch.autograd import graph

    override = getattr(graph, "set_override_stale_capture_stream", None)
    if override is None:
        yield
        return
    override(True)
    try:
        yield
    finally:
        override(False)


def step_of(model: Any, tokens: Any, train: bool) -> Callable[[], Any]:
    """One step: forward with the loss and backward (``train``), or the
    forward's last hidden state.  A training step first sets the gradients
    to None, so that each step (and each replay of its CUDA graph) computes
    them anew rather than adding to the last."""
    import torch

    if train:
        params = [p for p in model.parameters() if p.requires_grad]

        def step() -> Any:
            for p in params:
                p.grad = None
            loss = model(tokens, labels=tokens).loss
            loss.backward()
            return loss.detach()

        return step

    def infer() -> Any:
        with torch.no_grad():
            return model(tokens).last_hidden_state

    return infer


def _pass_remarks(report: Any) -> list[dict[str, Any]]:
    """The pass's remarks: reason, the kernel's ops and the decision's args."""
    return [
        {"reason": r["reason"], "ops": r.get("ops", []), "args": r.get("args", {})}
        for graph in report.to_json()["graphs"]
        for r in graph["remarks"]
        if r["stage"] == "one_pass_reduction"
    ]


def run_model(
    name: str,
    device: str,
    dtype: str,
    rounds: int,
    batch: int,
    seq: int,
    kernels: bool = False,
    vocab: int | None = None,
) -> dict[str, Any]:
    import torch
    from harness import median_call_s
    from torch._inductor import fusion_report

    torch.manual_seed(0)
    module, vocab, train = build(name, vocab)
    module = module.to(device=device, dtype=getattr(torch, dtype))
    module.train(train)
    if train:
        # Dropout off: both arms compute the same step.
        for sub in module.modules():
            if isinstance(sub, torch.nn.Dropout):
                sub.p = 0.0
    tokens = _tokens(batch, seq, vocab, device)
    steps: dict[str, Callable[[], Any]] = {}
    result: dict[str, Any] = {
        "model": name,
        "dtype": dtype,
        "train": train,
        "batch": batch,
        "seq": seq,
        "vocab": vocab,
        "arms": {},
    }
    outputs = {}
    for arm in ARMS:
        torch._dynamo.reset()
        compiled = torch.compile(
            module,
            options={"one_pass_reductions": arm == "on", "fx_graph_cache": False},
        )
        step = step_of(compiled, tokens, train)
        start = time.perf_counter()
        with fusion_report.capture() as report:
            outputs[arm] = step().float()
        module.zero_grad(set_to_none=False)
        result["arms"][arm] = {
            "compile_s": time.perf_counter() - start,
            "remarks": dict(
                sorted(
                    collections.Counter(
                        r["reason"] for r in _pass_remarks(report)
                    ).items()
                )
            ),
            "remark_details": _pass_remarks(report),
            "ms": [],
        }
        steps[arm] = step
    result["max_abs_diff"] = (outputs["on"] - outputs["off"]).abs().max().item()
    with capturable_backward():
        for _ in range(rounds):
            for arm in ARMS:
                ms = median_call_s(device, steps[arm], cuda_graph=True) * 1e3
                result["arms"][arm]["ms"].append(ms)
    for arm in ARMS:
        times = result["arms"][arm]["ms"]
        entry = result["arms"][arm]
        entry["median_ms"] = statistics.median(times)
        entry["spread"] = (max(times) - min(times)) / entry["median_ms"]
    result["speedup"] = (
        result["arms"]["off"]["median_ms"] / (result["arms"]["on"]["median_ms"])
    )
    if kernels:
        # After the timing: a profiler session slows the launches after it.
        from harness import kernel_time_rounds

        profiled = kernel_time_rounds(steps, rounds=3, per_round=2, top=1000)
        for arm in ARMS:
            result["arms"][arm]["gpu_us"] = profiled[arm]["gpu_s"]["median"] * 1e6
            result["arms"][arm]["launches"] = profiled[arm]["launches"]
        result["kernel_changes"] = kernel_changes(
            profiled["off"]["kernels"], profiled["on"]["kernels"]
        )
    return result


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "# Model steps: config.one_pass_reductions on against off",
        "",
        "Median ms per step over rounds (CUDA graph replays, arms interleaved "
        "round by round), spread (max - min) / median in brackets.",
        "",
        "| model | step | dtype | batch x seq | vocabulary | off ms | on ms | "
        "on speed-up | max diff | remarks (on) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        off, on = r["arms"]["off"], r["arms"]["on"]
        remarks = ", ".join(f"{k} {v}" for k, v in on["remarks"].items())
        lines.append(
            f"| {r['model']} | {'training' if r['train'] else 'inference'} | "
            f"{r['dtype']} | {r['batch']} x {r['seq']} | {r.get('vocab', '')} | "
            f"{off['median_ms']:.3f} ({off['spread']:.0%}) | "
            f"{on['median_ms']:.3f} ({on['spread']:.0%}) | {r['speedup']:.3f}x | "
            f"{r['max_abs_diff']:.2e} | {remarks or 'none'} |"
        )
    profiled = [r for r in results if "kernel_changes" in r]
    if profiled:
        lines += [
            "",
            "GPU kernel time per step (torch.profiler, arms interleaved) and the "
            "kernels whose time the pass changed most (`triton_*_`: the "
            "persistent and looped forms of the same nodes).",
            "",
            "| model | dtype | kernel | off us | on us |",
            "|---|---|---|---|---|",
        ]
        for r in profiled:
            off, on = r["arms"]["off"], r["arms"]["on"]
            lines.append(
                f"| {r['model']} | {r['dtype']} | all ({off['launches']:.0f} and "
                f"{on['launches']:.0f} launches) | {off['gpu_us']:.1f} | "
                f"{on['gpu_us']:.1f} |"
            )
            for k in r["kernel_changes"]:
                cells = [
                    "-" if k[arm] is None else f"{k[arm]:.1f}"
                    for arm in ("off_us", "on_us")
                ]
                lines.append(f"| | | `{k['name']}` | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def vocabularies(text: str) -> dict[str, int]:
    """``--vocab``: ``N`` (every model, key ``*``) or ``MODEL=N,...``; a
    value that is not a whole number above 0 is an error naming it."""
    pairs = [part.partition("=") for part in text.split(",") if part.strip()]
    out = {}
    for model, eq, number in pairs:
        name, value = (model.strip(), number) if eq else ("*", model)
        if not value.strip().isdigit() or int(value) < 1:
            raise argparse.ArgumentTypeError(
                f"--vocab: {value.strip()!r} is not a vocabulary size (N or MODEL=N)"
            )
        out[name] = int(value)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=lambda s: s.split(","), default=list(MODELS))
    p.add_argument("--dtypes", type=lambda s: s.split(","), default=["float32"])
    p.add_argument("--device", default="cuda")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument(
        "--vocab",
        type=vocabularies,
        default={},
        help="the vocabulary of the language-model heads: N for every model, or "
        "MODEL=N,... for those named (default: each model's own)",
    )
    p.add_argument("--json")
    p.add_argument(
        "--kernels",
        action="store_true",
        help="also profile each arm's GPU kernel time per step",
    )
    args = p.parse_args(argv)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    if args.device != "cuda":
        p.error("the steps are timed from CUDA graphs: --device cuda")
    results = []
    for dtype in args.dtypes:
        for name in args.models:
            try:
                results.append(
                    run_model(
                        name,
                        args.device,
                        dtype,
                        args.rounds,
                        args.batch,
                        args.seq,
                        kernels=args.kernels,
                        vocab=args.vocab.get(name, args.vocab.get("*")),
                    )
                )
            except Exception as e:  # a model's failure is a row, not the end
                results.append({"model": name, "dtype": dtype, "error": repr(e)[:500]})
                print(f"{name} {dtype}: {e!r}"[:500], flush=True)
                continue
            print(markdown(results[-1:]).splitlines()[-1], flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1))
    ok = [r for r in results if "error" not in r]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        Path(args.json).with_suffix(".md").write_text(markdown(ok))
    print(markdown(ok))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
