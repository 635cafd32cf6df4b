"""NWOT (Mellor et al. 2021, "Neural Architecture Search without Training", the ICML
version's score, also called NASWOT): how differently an untrained network's rectified
units partition one batch of inputs.

Every input ``i`` of a batch of ``N`` gets a binary code ``c_i``: for every unit of every
activation layer, whether its pre-activation is positive. The kernel
``K_H[i, j] = N_A - d_H(c_i, c_j)`` (``N_A`` units, ``d_H`` the Hamming distance) counts the
units on which two inputs agree; the score is ``log |det K_H|``. As in the reference code
(BayesWatch/nas-without-training, ``score_networks.py``): the codes are read at the
*input* of every activation module (``input > 0``), ``K_H`` is accumulated as
``c c^T + (1 - c)(1 - c)^T`` per layer, the network runs in train mode (batch norm on the
batch's statistics: the reference never switches to eval) and the determinant is taken
with ``slogdet``.

Activations: ``ReLU`` and its kin, as the paper; for GELU, SiLU and other smooth
activations (GPT-2's MLP uses the tanh-approximated GELU) the code is likewise the sign of
the pre-activation, the linear region a ReLU there would select. Only activations that
are modules are seen (a ``torch.relu`` call inside a ``forward`` is not).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from nasflow.proxies._errors import ProxyError

#: Activation modules whose input signs are the codes (also any module whose class name
#: contains one of ``ACTIVATION_NAMES``: Hugging Face's ``NewGELUActivation`` and kin).
ACTIVATIONS: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    nn.ReLU6,
    nn.LeakyReLU,
    nn.PReLU,
    nn.RReLU,
    nn.ELU,
    nn.CELU,
    nn.SELU,
    nn.GELU,
    nn.SiLU,
    nn.Mish,
    nn.Hardswish,
)
ACTIVATION_NAMES: tuple[str, ...] = ("ReLU", "GELU", "SiLU", "Swish")


def is_activation(module: nn.Module) -> bool:
    """Whether ``module`` is an activation whose input signs NWOT reads."""
    name = type(module).__name__
    return isinstance(module, ACTIVATIONS) or any(a in name for a in ACTIVATION_NAMES)


def hamming_kernel(codes: torch.Tensor) -> torch.Tensor:
    """``K_H`` of binary codes ``(N, units)``: ``units - Hamming distance`` for every pair,
    ``(N, N)`` in float64."""
    c = codes.to(torch.float64)
    return c @ c.T + (1 - c) @ (1 - c).T


def nwot(net: nn.Module, x: torch.Tensor) -> float:
    """The NWOT score of ``net`` on the batch ``x`` (``net`` is not modified: a copy runs
    in train mode).

    Args:
        net: The network (a fresh, initialised one).
        x: One batch of inputs ``(N, ...)``, ``N >= 2``.

    Returns:
        ``log det K_H``: ``-inf`` where ``K_H`` is singular (two inputs share every code),
        ``nan`` where the forward pass produced one (the caller checks).

    Raises:
        ProxyError: A batch of fewer than 2 inputs, or a network without activation
            modules.
    """
    n = x.shape[0]
    if n < 2:
        raise ProxyError(f"nwot needs a batch of at least 2 inputs, got {n}")
    model = copy.deepcopy(net).train()
    acts = [m for m in model.modules() if is_activation(m)]
    if not acts:
        raise ProxyError("nwot: the network has no activation modules to read codes from")
    kernel = torch.zeros((n, n), dtype=torch.float64)
    finite = True

    def record(_module: nn.Module, args: tuple[torch.Tensor, ...], _out: object) -> None:
        nonlocal kernel, finite
        pre = args[0].detach().reshape(n, -1)  # (N, ...) -> (N, units)
        finite = finite and bool(torch.isfinite(pre).all())
        kernel = kernel + hamming_kernel(pre > 0)

    handles: list[RemovableHandle] = []
    try:
        for m in acts:
            handles.append(m.register_forward_hook(record))
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    if not finite:  # a NaN pre-activation has no sign: no code, no score
        return float("nan")
    return float(torch.linalg.slogdet(kernel).logabsdet)
