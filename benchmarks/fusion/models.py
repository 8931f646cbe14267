"""The default model set of the fusion benchmarks (study, ablation, coverage).

Every model is built from its config with random weights: nothing is
downloaded (``HF_HUB_OFFLINE=1``).  Two shape sets: ``full`` (the benchmark
shapes, e.g. the seed's resnet18 at batch 16 x 3x128x128) and ``ci`` (small
batches and, for the deep models, fewer layers, so that a 2-core CPU compiles
the whole set in minutes; the op mix per layer is the same).

Each model returns a tensor or a tuple of tensors; Hugging Face models are
wrapped to return their last hidden state (T5: the decoder's).

    from models import MODELS, build
    module, inputs = build("bert", "cpu", "ci")
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, TYPE_CHECKING

import torch
from torch import nn


if TYPE_CHECKING:
    from collections.abc import Callable


os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str  # cnn, vision-transformer, transformer, rnn, micro
    make: Callable[[bool], tuple[nn.Module, tuple[Any, ...]]]  # full -> model, inputs
    description: str
    # torch._dynamo.config for compiling it (see compile_config).
    dynamo_config: dict[str, Any] = dataclasses.field(default_factory=dict)
    # torch._inductor.config for compiling it (see compile_config).
    inductor_config: dict[str, Any] = dataclasses.field(default_factory=dict)


class LastHiddenState(nn.Module):
    """A Hugging Face model returning its last hidden state as a tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.model(*args).last_hidden_state


class DecoderLastHiddenState(nn.Module):
    """An encoder-decoder Hugging Face model returning the decoder's last state."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, tokens: torch.Tensor, decoder_tokens: torch.Tensor
    ) -> torch.Tensor:
        out = self.model(input_ids=tokens, decoder_input_ids=decoder_tokens)
        return out.last_hidden_state


class GRUEncoder(nn.Module):
    """Embedding, a 2-layer GRU and a linear projection onto the vocabulary."""

    def __init__(self, vocab: int = 10000, embed: int = 256, hidden: int = 512):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.gru = nn.GRU(embed, hidden, num_layers=2, batch_first=True)
        self.projection = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.embedding(tokens))
        return self.projection(hidden)


class SinCos(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x) + torch.cos(x)


class Softmax(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


class LayerNormGelu(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(self.norm(x))


class TwoAxisReductions(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(0).sum() + x.sum(1).sum()


class SinAndCos(nn.Module):
    """Two outputs that read x at the same index: fused, x is read once."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.sin(x), torch.cos(x)


class ScaledHalves(nn.Module):
    """Two outputs that read different halves of x: fused, each half is still
    read once (upstream's no_shared_data keeps them apart)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        half = x.shape[0] // 2
        return x[:half] * 2, x[half:] * 3


def _images(full: bool, batch: int, size: int) -> tuple[torch.Tensor]:
    return (
        torch.randn(
            batch if full else 2, 3, size if full else 64, size if full else 64
        ),
    )


def _tokens(full: bool, vocab: int) -> tuple[torch.Tensor]:
    batch, seq = (8, 128) if full else (2, 32)
    return (torch.randint(0, vocab, (batch, seq)),)


def _resnet18(full: bool):
    import torchvision

    return torchvision.models.resnet18(weights=None), _images(full, 16, 128)


def _mobilenet_v3_small(full: bool):
    import torchvision

    return torchvision.models.mobilenet_v3_small(weights=None), _images(full, 16, 224)


def _vit(full: bool):
    import timm

    kwargs = {} if full else {"depth": 2, "img_size": 64}
    model = timm.create_model("vit_small_patch16_224", pretrained=False, **kwargs)
    return model, _images(full, 8, 224)


def _convnext_tiny(full: bool):
    import timm

    kwargs = {} if full else {"depths": (1, 1, 1, 1)}
    model = timm.create_model("convnext_tiny", pretrained=False, **kwargs)
    return model, _images(full, 8, 224)


def _bert(full: bool):
    import transformers

    config = transformers.BertConfig(**({} if full else {"num_hidden_layers": 2}))
    model = LastHiddenState(transformers.BertModel(config))
    return model, _tokens(full, config.vocab_size)


def _gpt2(full: bool):
    import transformers

    config = transformers.GPT2Config(**({} if full else {"n_layer": 2}))
    model = LastHiddenState(transformers.GPT2Model(config))
    return model, _tokens(full, config.vocab_size)


def _t5_small(full: bool):
    import transformers

    # t5-small's published architecture.
    config = transformers.T5Config(
        d_model=512,
        d_ff=2048,
        num_heads=8,
        d_kv=64,
        num_layers=6 if full else 2,
        num_decoder_layers=6 if full else 2,
        # T5's attention dropout is functional, not an nn.Dropout module the
        # harnesses can switch off for a training step (p = 0), so a training
        # step would be random and never equal eager's: no dropout at all.
        dropout_rate=0.0,
    )
    model = DecoderLastHiddenState(transformers.T5Model(config))
    tokens = _tokens(full, config.vocab_size)[0]
    return model, (tokens, tokens)


def _llama_small(full: bool):
    import transformers

    config = transformers.LlamaConfig(
        hidden_size=512,
        intermediate_size=1408,
        num_hidden_layers=4 if full else 2,
        num_attention_heads=8,
        num_key_value_heads=4,
        vocab_size=32000,
    )
    return LastHiddenState(transformers.LlamaModel(config)), _tokens(full, 32000)


def _gru(full: bool):
    batch, seq = (16, 64) if full else (2, 16)
    return GRUEncoder(), (torch.randint(0, 10000, (batch, seq)),)


def _micro(module: nn.Module, full_shape: tuple[int, ...], ci_shape: tuple[int, ...]):
    def make(full: bool):
        return module, (torch.randn(full_shape if full else ci_shape),)

    return make


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("resnet18", "cnn", _resnet18, "torchvision resnet18, b16 3x128x128"),
        ModelSpec(
            "mobilenet_v3_small",
            "cnn",
            _mobilenet_v3_small,
            "torchvision, b16 3x224x224",
        ),
        ModelSpec(
            "vit_small", "vision-transformer", _vit, "timm vit_small_patch16_224, b8"
        ),
        ModelSpec(
            "convnext_tiny", "cnn", _convnext_tiny, "timm convnext_tiny, b8 3x224x224"
        ),
        ModelSpec(
            "bert", "transformer", _bert, "Hugging Face BERT-base, b8 x 128 tokens"
        ),
        ModelSpec("gpt2", "transformer", _gpt2, "Hugging Face GPT-2, b8 x 128 tokens"),
        ModelSpec(
            "t5_small",
            "transformer",
            _t5_small,
            "Hugging Face T5-small, b8 x 128 tokens",
        ),
        ModelSpec(
            "llama_small",
            "transformer",
            _llama_small,
            "Llama architecture, 4 layers x 512, b8 x 128",
        ),
        ModelSpec(
            "gru",
            "rnn",
            _gru,
            "embedding + 2-layer GRU + vocabulary projection, b16 x 64",
            # By default Dynamo does not trace nn.GRU (allow_rnn=False): the
            # frame runs in eager and nothing is compiled.  Traced, the GRU
            # decomposes into matmuls and gate pointwise ops that Inductor
            # fuses, which is what the benchmarks measure.
            dynamo_config={"allow_rnn": True},
        ),
        ModelSpec(
            "sin_cos",
            "micro",
            _micro(SinCos(), (1024, 1024), (64, 64)),
            "sin(x) + cos(x)",
        ),
        ModelSpec(
            "softmax",
            "micro",
            _micro(Softmax(), (256, 4096), (8, 64)),
            "softmax over the last axis",
        ),
        ModelSpec(
            "layer_norm_gelu",
            "micro",
            _micro(LayerNormGelu(1024), (8, 512, 1024), (2, 16, 1024)),
            "layer_norm then gelu",
        ),
        ModelSpec(
            "two_axis_reductions",
            "micro",
            _micro(TwoAxisReductions(), (2048, 2048), (64, 64)),
            "x.sum(0).sum() + x.sum(1).sum()",
        ),
    )
}


def _calibration() -> dict[str, ModelSpec]:
    """Micro-benchmarks for calibrating predicted against measured gains over
    a range of sizes (``predictions.py --models calibration``), apart from
    the default model set: one heuristic boundary each, legal to force.

    * ``shared_read_<MiB>``: sin(x) and cos(x) kept apart by
      ``max_fusion_size=1``; fused, x (the size given, float32) is read once
      instead of twice and one launch is saved.
    * ``halves_<MiB>``: ``x[:n/2] * 2`` and ``x[n/2:] * 3``, apart by
      ``no_shared_data``; fused, only a launch is saved (on a GPU;
      on the CPU both are loop nests of one function and nothing is).
    """
    specs = []
    for mib in (1, 4, 16, 64, 256):
        rows = mib * 2**20 // 4 // 1024
        specs.append(
            ModelSpec(
                f"shared_read_{mib}",
                "calibration",
                _micro(SinAndCos(), (rows, 1024), (8, 1024)),
                f"sin(x), cos(x); x {mib} MiB float32; max_fusion_size=1",
                inductor_config={"max_fusion_size": 1},
            )
        )
        specs.append(
            ModelSpec(
                f"halves_{mib}",
                "calibration",
                _micro(ScaledHalves(), (rows, 1024), (8, 1024)),
                f"x[:n/2] * 2, x[n/2:] * 3; x {mib} MiB float32",
            )
        )
    return {spec.name: spec for spec in specs}


# Not in the default set: see _calibration.
CALIBRATION: dict[str, ModelSpec] = _calibration()

# Short names used by earlier tools.
ALIASES = {"vit": "vit_small"}


def spec_of(name: str) -> ModelSpec:
    """The spec of a model of the default set or of the calibration set."""
    name = ALIASES.get(name, name)
    spec = MODELS.get(name) or CALIBRATION.get(name)
    if spec is None:
        raise SystemExit(
            f"unknown model {name!r}: choose from {', '.join(MODELS)} "
            f"or the calibration set {', '.join(CALIBRATION)}"
        )
    return spec


def build(
    name: str, device: str, shapes: str = "ci", seed: int = 0
) -> tuple[nn.Module, tuple[Any, ...]]:
    """The model ``name`` (eval mode) and an input batch, on ``device``."""
    spec = spec_of(name)
    if shapes not in ("ci", "full"):
        raise SystemExit(f"unknown shapes {shapes!r}: choose ci or full")
    torch.manual_seed(seed)
    model, inputs = spec.make(shapes == "full")
    model = model.eval().to(device)
    return model, tuple(t.to(device) for t in inputs)


def for_training(model: nn.Module, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Put ``model`` in training mode for a training step comparable with
    eager's, and return the inputs to differentiate by.

    Dropout would make every step random, so each ``nn.Dropout`` gets
    ``p = 0`` (T5's functional attention dropout is off in its config); a
    micro-benchmark has no weights, so its floating-point inputs require grad.
    """
    model.train()
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    if any(p.requires_grad for p in model.parameters()):
        return inputs
    return tuple(t.requires_grad_() if t.is_floating_point() else t for t in inputs)


def compile_config(name: str) -> Any:
    """A context in which to ``torch.compile`` model ``name`` (its Dynamo and
    Inductor config)."""
    import contextlib

    import torch._dynamo
    import torch._inductor.config

    spec = spec_of(name)
    stack = contextlib.ExitStack()
    stack.enter_context(torch._dynamo.config.patch(spec.dynamo_config))
    stack.enter_context(torch._inductor.config.patch(spec.inductor_config))
    return stack


def loss_of(output: Any) -> torch.Tensor:
    """A scalar to backpropagate from a model's output, for a training step."""
    tensors = output if isinstance(output, (tuple, list)) else (output,)
    return sum(t.float().mean() for t in tensors if t.is_floating_point())
