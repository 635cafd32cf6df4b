"""In-place distillation for supernet training, kept strictly fair.

BigNAS (Yu et al. 2020) and OFA (Cai et al. 2020) train a weight-sharing supernet's sampled
paths on the soft targets of its largest path, which itself trains on the labels in the same
step ("in-place distillation"). Trained as they do it, the largest path's ops get one more
update per step than the others, which breaks strict fairness (every op of a layer trained
exactly once per step; DESIGN.md). nasflow keeps fairness: the teacher is the largest path
of the same supernet run **without gradient** on the step's batch (its ops train only as
members of the fair paths), and every fair path trains on a mix of the labels and the
teacher's softened distribution::

    loss = (1 - weight) * CE(student, labels) + weight * T^2 * KL(softmax(t / T) || softmax(s / T))

The labels' share keeps the supernet anchored to the task: with ``weight = 1`` nothing in
the step would see a label. BigNAS's sandwich rule (also training the smallest path each
step) is not offered: an extra trained path breaks strict fairness the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from nasflow.space import Arch, SearchSpace, largest_arch

#: What ``SupernetConfig.distill`` accepts (``None``: no distillation).
DISTILL_MODES = ("inplace",)


@dataclass(frozen=True)
class Distillation:
    """What a supernet step distils from, resolved for one space.

    Attributes:
        path: The teacher path (the space's largest path by parameter count).
        weight: The soft targets' share of each path's loss, in ``(0, 1)``.
        temperature: The softmax temperature of both distributions.
    """

    path: Arch
    weight: float
    temperature: float

    def loss(
        self, logits: torch.Tensor, teacher: torch.Tensor, hard: torch.Tensor
    ) -> torch.Tensor:
        """One path's loss: ``hard`` (the label loss already computed on ``logits``) mixed
        with the KL divergence to ``teacher``'s softened distribution (``logits`` and
        ``teacher`` are ``(N, C)``)."""
        t = self.temperature
        soft = F.kl_div(
            F.log_softmax(logits.float() / t, dim=-1),
            F.log_softmax(teacher.float() / t, dim=-1),
            reduction="batchmean",
            log_target=True,
        )
        return (1.0 - self.weight) * hard + self.weight * (t * t) * soft


def largest_path(space: SearchSpace) -> Arch:
    """The path with the most parameters (:func:`nasflow.space.largest_arch`), its path
    choices only: choices off the path do not change the supernet's forward."""
    largest = largest_arch(space)
    return Arch({c.label: largest[c.label] for c in space.path_choices})


def check_weight(weight: object) -> bool:
    """Whether ``weight`` is a number strictly between 0 and 1."""
    return (
        not isinstance(weight, bool)
        and isinstance(weight, int | float)
        and math.isfinite(weight)
        and 0 < weight < 1
    )
