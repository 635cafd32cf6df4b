"""The one reshape every loss and accuracy of a language model goes through."""

from __future__ import annotations

import torch


def flat_logits(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits and targets with one row per prediction.

    A language model's ``(B, T, V)`` logits and ``(B, T)`` targets become ``(B*T, V)`` and
    ``(B*T,)``; a classifier's ``(B, C)`` logits and ``(B,)`` targets are returned as they
    are. ``F.cross_entropy(*flat_logits(logits, y))`` is the loss of either.
    """
    if logits.dim() == 3:
        # (B, T, V) -> (B*T, V); (B, T) -> (B*T,)
        return logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
    return logits, y
