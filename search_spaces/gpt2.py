"""A GPT-2-style transformer space with a weight-sharing supernet, built with ``transformers``.

Four elastic dimensions, in the spirit of Hardware-Aware Transformers (Wang et al. 2020):

- ``n_layer``: depth; a path runs the first ``n_layer`` blocks of the supernet;
- ``n_embd``: embedding width; every layer works on the leading ``n_embd`` columns of the
  embeddings, LayerNorms normalise over that width (leading slices of their weight and
  bias);
- ``n_head``: attention heads; the q, k and v projections are each sliced to their leading
  ``n_embd`` output columns and split into ``n_head`` heads of ``n_embd // n_head``
  (HF's ``GPT2Config`` ties the head size to the width, so it follows from both choices);
- ``mlp_ratio``: the MLP's hidden units, ``mlp_ratio * n_embd``, leading slices of the
  largest ``c_fc`` / ``c_proj``.

Each dimension is one global choice shared by every layer, because a ``GPT2Config`` holds
one width, one head count and one MLP size for the whole model: that is what lets
``extract(arch)`` return a genuine ``transformers.GPT2LMHeadModel`` (HAT's per-layer
choices would need a custom model class).

Weights use GPT-2's ``Conv1D`` layout, ``(in, out)``; ``c_attn`` packs ``[q | k | v]``,
each ``max(n_embd)`` wide, so a path's ``c_attn`` is the three leading blocks
concatenated. Input and output embeddings are untied (the character vocabulary is small,
and exports store each weight once in safetensors). Dropout is ``dropout`` everywhere HF
puts it; attention is computed eagerly, so in eval mode the extracted model's logits equal
the supernet's on that path.

Networks take token ids ``(B, T)`` with ``T <= block_size`` and return next-token logits
``(B, T, vocab_size)``. Stand-alone networks are :class:`GPT2Logits`, a thin module whose
``.model`` is the ``GPT2LMHeadModel`` (nasflow's trainer and exporters want a tensor out;
``GPT2LMHeadModel`` returns a ``ModelOutput``); :meth:`GPT2Space.hf_model` unwraps it, and
``nasflow export`` writes it as a Hugging Face directory (``hf/``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nasflow.errors import ConfigError, MissingDependencyError
from nasflow.space import SearchSpace, value_choice
from nasflow.supernet import SuperModule, Supernet

try:
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.activations import ACT2FN
    from transformers.pytorch_utils import Conv1D
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "the GPT-2 space needs transformers: pip install 'nasflow[transformers]'"
    ) from e

#: Choice labels, one per elastic dimension.
LAYERS, EMBD, HEADS, MLP = "n_layer", "n_embd", "n_head", "mlp_ratio"
ACTIVATION = "gelu_new"  # GPT-2's tanh-approximated GELU
LN_EPS = 1e-5
INIT_STD = 0.02  # GPT-2's initializer_range


class GPT2Logits(nn.Module):
    """A ``GPT2LMHeadModel`` that maps token ids ``(B, T)`` to logits ``(B, T, V)``.

    Args:
        model: The Hugging Face model (``.model``; save it with ``save_pretrained``).
    """

    def __init__(self, model: GPT2LMHeadModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        # An explicit all-ones mask changes nothing in the logits, but spares HF's
        # data-dependent packed-sequence check, so the model also runs on the meta device
        # (the cost model's shape pass).
        mask = torch.ones_like(input_ids)
        return self.model(input_ids=input_ids, attention_mask=mask, use_cache=False).logits


def _check_ints(name: str, values: Any, low: int = 1) -> tuple[int, ...]:
    vals = tuple(values) if isinstance(values, Sequence) and not isinstance(values, str) else ()
    if not vals or any(isinstance(v, bool) or not isinstance(v, int) or v < low for v in vals):
        raise ConfigError(f"{name} must be a non-empty list of ints >= {low}, got {values!r}")
    if len(set(vals)) != len(vals):
        raise ConfigError(f"{name} has duplicate values: {values!r}")
    return tuple(sorted(vals))


# ---------------------------------------------------------------------------- supernet
class SuperGPT2Block(nn.Module):
    """One pre-LN GPT-2 block at its largest size; ``run`` executes a sliced path."""

    def __init__(self, max_embd: int, max_inner: int, dropout: float, n_layer: int) -> None:
        super().__init__()
        self.max_embd, self.dropout = max_embd, dropout
        self.ln_1 = nn.LayerNorm(max_embd, eps=LN_EPS)
        self.c_attn = Conv1D(3 * max_embd, max_embd)  # weight (E, 3E): [q | k | v]
        self.attn_proj = Conv1D(max_embd, max_embd)
        self.ln_2 = nn.LayerNorm(max_embd, eps=LN_EPS)
        self.c_fc = Conv1D(max_inner, max_embd)  # weight (E, 4E)
        self.mlp_proj = Conv1D(max_embd, max_inner)
        self.act = ACT2FN[ACTIVATION]
        for conv in (self.c_attn, self.attn_proj, self.c_fc, self.mlp_proj):
            nn.init.normal_(conv.weight, std=INIT_STD)
            nn.init.zeros_(conv.bias)
        for proj in (self.attn_proj, self.mlp_proj):  # GPT-2's residual scaling
            nn.init.normal_(proj.weight, std=INIT_STD / math.sqrt(2 * n_layer))

    def sliced(self, e: int, inner: int) -> dict[str, torch.Tensor]:
        """This block's weights for width ``e`` and ``inner`` MLP units, named as in
        ``GPT2Block``'s state dict (views of the supernet's tensors)."""
        big = self.max_embd
        qkv = [slice(i * big, i * big + e) for i in range(3)]
        return {
            "ln_1.weight": self.ln_1.weight[:e],
            "ln_1.bias": self.ln_1.bias[:e],
            "attn.c_attn.weight": torch.cat([self.c_attn.weight[:e, s] for s in qkv], 1),
            "attn.c_attn.bias": torch.cat([self.c_attn.bias[s] for s in qkv]),  # (3e,)
            "attn.c_proj.weight": self.attn_proj.weight[:e, :e],
            "attn.c_proj.bias": self.attn_proj.bias[:e],
            "ln_2.weight": self.ln_2.weight[:e],
            "ln_2.bias": self.ln_2.bias[:e],
            "mlp.c_fc.weight": self.c_fc.weight[:e, :inner],  # (e, inner)
            "mlp.c_fc.bias": self.c_fc.bias[:inner],
            "mlp.c_proj.weight": self.mlp_proj.weight[:inner, :e],  # (inner, e)
            "mlp.c_proj.bias": self.mlp_proj.bias[:e],
        }

    def run(self, x: torch.Tensor, heads: int, inner: int) -> torch.Tensor:
        """The block on ``x`` of shape ``(B, T, e)`` with ``heads`` heads."""
        b, t, e = x.shape
        w = self.sliced(e, inner)
        h = F.layer_norm(x, (e,), w["ln_1.weight"], w["ln_1.bias"], LN_EPS)
        qkv = h @ w["attn.c_attn.weight"] + w["attn.c_attn.bias"]  # (B, T, 3e)
        q, k, v = (
            z.view(b, t, heads, e // heads).transpose(1, 2)  # (B, T, e) -> (B, H, T, e/H)
            for z in qkv.split(e, dim=2)
        )
        att = (q @ k.transpose(-1, -2)) * (e // heads) ** -0.5  # (B, H, T, T)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        att = F.dropout(att, self.dropout, self.training)
        y = (att @ v).transpose(1, 2).reshape(b, t, e)  # (B, H, T, e/H) -> (B, T, e)
        y = y @ w["attn.c_proj.weight"] + w["attn.c_proj.bias"]
        x = x + F.dropout(y, self.dropout, self.training)
        h = F.layer_norm(x, (e,), w["ln_2.weight"], w["ln_2.bias"], LN_EPS)
        h = self.act(h @ w["mlp.c_fc.weight"] + w["mlp.c_fc.bias"])  # (B, T, inner)
        h = h @ w["mlp.c_proj.weight"] + w["mlp.c_proj.bias"]  # (B, T, e)
        return x + F.dropout(h, self.dropout, self.training)


class SuperGPT2(SuperModule):
    """The GPT-2 supernet at its largest size; a path reads the four labels.

    Args:
        vocab_size: Tokens in the vocabulary.
        block_size: Longest context (position embeddings).
        max_embd: Largest width.
        max_layers: Largest depth.
        max_inner: Largest MLP hidden size.
        dropout: Dropout probability (embeddings, attention weights, residual branches).
    """

    def __init__(
        self,
        vocab_size: int,
        block_size: int,
        max_embd: int,
        max_layers: int,
        max_inner: int,
        dropout: float,
    ) -> None:
        super().__init__()
        self.vocab_size, self.block_size, self.dropout = vocab_size, block_size, dropout
        self.wte = nn.Embedding(vocab_size, max_embd)
        self.wpe = nn.Embedding(block_size, max_embd)
        self.h = nn.ModuleList(
            SuperGPT2Block(max_embd, max_inner, dropout, max_layers) for _ in range(max_layers)
        )
        self.ln_f = nn.LayerNorm(max_embd, eps=LN_EPS)
        self.lm_head = nn.Linear(max_embd, vocab_size, bias=False)
        for emb in (self.wte, self.wpe, self.lm_head):
            nn.init.normal_(emb.weight, std=INIT_STD)

    @staticmethod
    def sizes(arch: Mapping[str, Any]) -> tuple[int, int, int, int]:
        """``(layers, width, heads, MLP hidden units)`` of a path."""
        e = int(arch[EMBD])
        return int(arch[LAYERS]), e, int(arch[HEADS]), int(arch[MLP]) * e

    def forward(self, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        layers, e, heads, inner = self.sizes(arch)
        t = x.shape[1]
        if t > self.block_size:
            raise ConfigError(f"sequence length {t} exceeds block_size={self.block_size}")
        pos = torch.arange(t, device=x.device)
        h = self.wte.weight[:, :e][x] + self.wpe.weight[:t, :e][pos]  # (B, T, e)
        h = F.dropout(h, self.dropout, self.training)
        for block in self.h[:layers]:
            h = block.run(h, heads, inner)
        h = F.layer_norm(h, (e,), self.ln_f.weight[:e], self.ln_f.bias[:e], LN_EPS)
        return h @ self.lm_head.weight[:, :e].T  # (B, T, V)

    def config_for(self, arch: Mapping[str, Any]) -> GPT2Config:
        """The ``GPT2Config`` of a path."""
        layers, e, heads, inner = self.sizes(arch)
        return gpt2_config(self.vocab_size, self.block_size, layers, e, heads, inner, self.dropout)

    def extract(self, arch: Mapping[str, Any]) -> GPT2Logits:
        layers, e, _, inner = self.sizes(arch)
        state = {
            "transformer.wte.weight": self.wte.weight[:, :e],
            "transformer.wpe.weight": self.wpe.weight[:, :e],
            "transformer.ln_f.weight": self.ln_f.weight[:e],
            "transformer.ln_f.bias": self.ln_f.bias[:e],
            "lm_head.weight": self.lm_head.weight[:, :e],
        }
        for i, block in enumerate(self.h[:layers]):
            state.update({f"transformer.h.{i}.{k}": v for k, v in block.sliced(e, inner).items()})
        device = self.wte.weight.device
        with torch.device(device):
            model = GPT2LMHeadModel(self.config_for(arch))
        model.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=True)
        return GPT2Logits(model.train(self.training))


def gpt2_config(
    vocab_size: int,
    block_size: int,
    layers: int,
    width: int,
    heads: int,
    inner: int,
    dropout: float,
) -> GPT2Config:
    """A ``GPT2Config`` for one architecture: eager attention, untied embeddings, no
    special tokens, no cache."""
    return GPT2Config(
        vocab_size=vocab_size,
        n_positions=block_size,
        n_embd=width,
        n_layer=layers,
        n_head=heads,
        n_inner=inner,
        activation_function=ACTIVATION,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        layer_norm_epsilon=LN_EPS,
        initializer_range=INIT_STD,
        tie_word_embeddings=False,
        use_cache=False,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation="eager",
    )


# ---------------------------------------------------------------------------- space
class GPT2Space(SearchSpace):
    """GPT-2-style character language models: elastic depth, width, heads and MLP ratio.

    Args:
        vocab_size: Tokens in the vocabulary (65 for tinyshakespeare's characters).
        block_size: Context length; networks take ``(B, T)`` token ids, ``T <= block_size``.
        n_layer: Depth choices.
        n_embd: Width choices; each must be divisible by every head count.
        n_head: Head-count choices.
        mlp_ratio: MLP hidden units per width unit (GPT-2 uses 4).
        dropout: Dropout probability in [0, 1) (0 keeps training and scoring exact).
    """

    #: Elastic sizes slice one weight per layer: the cost model's op tracer finds no op to
    #: time, so a study measures each candidate's steps (``cost="measure"``).
    cost_model_traceable = False

    def __init__(
        self,
        vocab_size: int = 65,
        block_size: int = 64,
        n_layer: Sequence[int] = (2, 3, 4),
        n_embd: Sequence[int] = (64, 96, 128),
        n_head: Sequence[int] = (2, 4),
        mlp_ratio: Sequence[int] = (2, 3, 4),
        dropout: float = 0.0,
    ) -> None:
        for name, value in (("vocab_size", vocab_size), ("block_size", block_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")
        choices = {
            LAYERS: _check_ints("n_layer", n_layer),
            EMBD: _check_ints("n_embd", n_embd),
            HEADS: _check_ints("n_head", n_head),
            MLP: _check_ints("mlp_ratio", mlp_ratio),
        }
        for e in choices[EMBD]:
            for h in choices[HEADS]:
                if e % h:
                    raise ConfigError(
                        f"n_embd {e} is not divisible by n_head {h}; every width must "
                        "split evenly into every head count"
                    )
        if isinstance(dropout, bool) or not isinstance(dropout, int | float):
            raise ConfigError(f"dropout must be a number in [0, 1), got {dropout!r}")
        if not 0 <= dropout < 1:
            raise ConfigError(f"dropout must be a number in [0, 1), got {dropout!r}")
        super().__init__(
            [value_choice(label, values) for label, values in choices.items()],
            name="gpt2",
            description="GPT-2-style character LM (transformers GPT2LMHeadModel): elastic "
            "depth, width, heads and MLP ratio, HAT-style weight sharing",
            config={
                "vocab_size": vocab_size,
                "block_size": block_size,
                **{label: list(values) for label, values in choices.items()},
                "dropout": float(dropout),
                "input_shape": [block_size],
                "input_dtype": "int64",  # token ids in [0, vocab_size)
            },
        )
        self.vocab_size, self.block_size, self.dropout = vocab_size, block_size, float(dropout)
        self.sizes = choices

    def supernet(self) -> Supernet:
        body = SuperGPT2(
            self.vocab_size,
            self.block_size,
            max(self.sizes[EMBD]),
            max(self.sizes[LAYERS]),
            max(self.sizes[MLP]) * max(self.sizes[EMBD]),
            self.dropout,
        )
        return Supernet(self, body)

    def gpt2_config(self, arch: Mapping[str, Any]) -> GPT2Config:
        """The ``GPT2Config`` of an architecture of this space."""
        layers, e, heads, inner = SuperGPT2.sizes(self.path(arch))
        return gpt2_config(self.vocab_size, self.block_size, layers, e, heads, inner, self.dropout)

    def build(self, arch: Mapping[str, Any]) -> GPT2Logits:
        """A fresh ``GPT2LMHeadModel`` of ``arch`` with GPT-2's own initialisation (no
        supernet built); same parameter names and shapes as ``supernet().extract(arch)``."""
        return GPT2Logits(GPT2LMHeadModel(self.gpt2_config(arch)))

    def hf_model(self, net: nn.Module) -> GPT2LMHeadModel:
        """The Hugging Face model inside a network of this space (``build`` or ``extract``).

        Raises:
            ValueError: ``net`` is not a :class:`GPT2Logits`.
        """
        if not isinstance(net, GPT2Logits):
            raise ConfigError(f"expected a GPT2Logits network of space 'gpt2', got {net!r}")
        return net.model
