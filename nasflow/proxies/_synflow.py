"""SynFlow (Tanaka et al. 2020, "Pruning neural networks without any data by iteratively
conserving synaptic flow"), as a zero-cost architecture score (Abdelfattah et al. 2021,
"Zero-Cost Proxies for Lightweight NAS").

The score of a network ``f`` at initialisation: make every parameter positive
(``|theta|``), feed one all-ones input, and sum ``|theta * dR/dtheta|`` over the weights of
the layers that compute a linear map, where ``R = 1^T f(1)``. In float64 (the reference
code's ``net.double()``: products of hundreds of weights underflow float32).

What the reference code does, and what is done here:

- Normalisation. Tanaka et al.'s pruning loop runs the network in eval mode, where a
  freshly initialised batch norm is ``x / sqrt(1 + eps)``; the zero-cost-proxy code
  (``synflow``, ``bn=False``) replaces every batch norm's forward by the identity. Here
  every normalisation layer (batch, layer, group and instance norm) is the identity,
  and the network is in eval mode (dropout off). For a layer norm this is not a choice
  but a necessity: the all-ones input is constant over the features, so a layer norm
  would map it to its bias (zero at initialisation) and every score would be 0.
- Which weights are scored. The reference sums over the weights of ``Conv2d`` and
  ``Linear`` layers (``mode="param"``; no biases, no normalisation parameters). Here: every
  parameter of two or more dimensions, which in our spaces are exactly the weights of the
  1-D and 2-D convolutions, the linear layers and GPT-2's ``Conv1D`` projections (the
  embedding tables are bypassed, below, and receive no gradient).
- Token inputs. A network that takes token ids (integers) has no continuous input to set
  to ones: its input layer is an embedding look-up, which is not a linear map of the ids.
  The all-ones input goes in at the embeddings' output: every ``nn.Embedding``'s output is
  replaced by ``1 / k`` (``k`` embedding modules), so that the summed embedding a GPT-2
  block receives, ``wte[ids] + wpe[positions]``, is all ones. The network is scored from
  there on, as synflow scores a network from its input on.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from nasflow.proxies._errors import ProxyError

#: The normalisation layers that synflow treats as the identity.
NORMS: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._BatchNorm,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.modules.instancenorm._InstanceNorm,
)


def _identity(_module: nn.Module, args: tuple[torch.Tensor, ...], _out: object) -> torch.Tensor:
    return args[0]


def _constant(value: float) -> Callable[[nn.Module, tuple, torch.Tensor], torch.Tensor]:
    def hook(_module: nn.Module, _args: tuple, out: torch.Tensor) -> torch.Tensor:
        return torch.full_like(out, value)

    return hook


def synflow(net: nn.Module, example: torch.Tensor) -> float:
    """The SynFlow score of ``net`` at its current weights (``net`` is not modified: a
    float64 copy is scored).

    Args:
        net: The network (a fresh, initialised one: the score is defined at
            initialisation).
        example: A batch of inputs (only its per-sample shape and dtype are used); an
            integer dtype means token ids (the all-ones input replaces the embeddings'
            output).

    Returns:
        The score (may be ``inf`` or ``nan`` where float64 overflows: the caller checks).

    Raises:
        ProxyError: Token inputs but no ``nn.Embedding`` to feed the all-ones input to, or
            an output that is not a tensor.
    """
    model = copy.deepcopy(net).double().eval()
    params = list(model.parameters())
    if not params:
        raise ProxyError("synflow: the network has no parameters")
    with torch.no_grad():
        for p in params:
            p.abs_()
    embeddings = [m for m in model.modules() if isinstance(m, nn.Embedding)]
    tokens = not torch.is_floating_point(example)
    if tokens and not embeddings:
        raise ProxyError(
            f"synflow: the input is {example.dtype} (token ids) but the network has no "
            "nn.Embedding to feed the all-ones input to"
        )
    handles: list[RemovableHandle] = []
    try:
        for m in model.modules():
            if isinstance(m, NORMS):
                handles.append(m.register_forward_hook(_identity))
        if tokens:
            for m in embeddings:
                handles.append(m.register_forward_hook(_constant(1.0 / len(embeddings))))
            x = torch.zeros((1, *example.shape[1:]), dtype=example.dtype)
        else:
            x = torch.ones((1, *example.shape[1:]), dtype=torch.float64)
        out = model(x.to(params[0].device))
        if not isinstance(out, torch.Tensor):
            raise ProxyError(f"synflow: the network returned {type(out).__name__}, not a tensor")
        out.sum().backward()
    finally:
        for h in handles:
            h.remove()
    with torch.no_grad():
        total = sum(
            float((p * p.grad).abs().sum()) for p in params if p.dim() >= 2 and p.grad is not None
        )
    return float(total)
