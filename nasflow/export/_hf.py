"""The Hugging Face directory of an export (``hf/``), for spaces whose networks wrap a
``transformers`` model (``SearchSpace.hf_model``); and token-id example inputs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nasflow.export._format import HF_DIR, ExportError, sha256_file
from nasflow.space import SearchSpace

#: Largest allowed |from_pretrained(hf/) - exported| on the check input.
HF_TOLERANCE = 1e-5


def token_vocab(space: SearchSpace) -> int | None:
    """The vocabulary size of a space whose networks take token ids, else ``None``.

    A space marks token-id inputs with ``config["input_dtype"] == "int64"`` and records
    ``config["vocab_size"]``.

    Raises:
        ExportError: ``input_dtype`` is neither absent, ``"float32"`` nor ``"int64"``, or
            ``"int64"`` without a positive int ``vocab_size``.
    """
    dtype = space.config.get("input_dtype", "float32")
    if dtype == "float32":
        return None
    vocab = space.config.get("vocab_size")
    if dtype != "int64" or isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 1:
        raise ExportError(
            f"space {space.name!r}: config input_dtype {dtype!r} with vocab_size {vocab!r}; "
            "accepted: 'float32', or 'int64' with a positive int vocab_size"
        )
    return vocab


def save_hf(
    space: SearchSpace, net: nn.Module, folder: Path, check: torch.Tensor
) -> tuple[dict[str, str], float] | None:
    """Write ``space.hf_model(net)`` to ``folder/hf`` with ``save_pretrained`` (safetensors)
    and check that ``AutoModelForCausalLM.from_pretrained`` (offline) gives ``net``'s
    logits on ``check``.

    Returns:
        ``None`` when the space has no Hugging Face model, else the SHA-256 of each written
        file (keyed ``hf/NAME``) and the largest logit deviation.

    Raises:
        ExportError: The reloaded model's logits differ by more than ``HF_TOLERANCE``.
    """
    model = space.hf_model(net)
    if model is None:
        return None
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    out = folder / HF_DIR
    attn: Any = getattr(model.config, "_attn_implementation", None)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # save/load print tqdm bars otherwise
    try:
        model.save_pretrained(out, safe_serialization=True)
        loaded = AutoModelForCausalLM.from_pretrained(
            out, local_files_only=True, attn_implementation=attn
        ).eval()
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    with torch.no_grad():
        gap = float((loaded(input_ids=check).logits - net(check)).abs().max())
    if not gap <= HF_TOLERANCE:
        raise ExportError(
            f"the Hugging Face directory's model differs from the network by {gap:.3g} "
            f"(> {HF_TOLERANCE})"
        )
    files = {
        f"{HF_DIR}/{p.relative_to(out).as_posix()}": sha256_file(p)
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }
    return files, gap


def example_tokens(
    input_shape: Sequence[int], vocab: int, batch: int = 2, seed: int = 0
) -> torch.Tensor:
    """Reproducible int64 token ids in ``[0, vocab)`` of shape ``(batch, *input_shape)``."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, *input_shape), generator=g)
