"""Splitting one supernet path into the op instances whose latency the table stores.

A path is cut into *units*: every ``LayerChoice`` (the candidate it selects, extracted
as a plain module) and every maximal part of the network that holds no choice (the stem,
a transition, the head), with runs of such parts inside a ``SuperSequential`` merged into
one unit. Each unit is identified by its structure (the extracted module's ``repr`` and
parameter shapes) and its input (shape, and whether the input needs a gradient); two
layers running the same op at the same shape share one table row. Whatever a container
does between its units (a residual sum, a cell's node sums) is not a unit: the calibrated
per-step overhead absorbs it.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import torch
from torch import nn

from nasflow.supernet import LayerChoice, SuperSequential


@dataclass(frozen=True)
class OpInstance:
    """One unit of a path at the shape it runs at.

    Attributes:
        name: Where it sits (``"body.layers.3"``, with ``[label=value]`` for a choice).
        kind: ``"choice"`` (a ``LayerChoice`` candidate) or ``"fixed"`` (no choice inside).
        module: The extracted plain module, on the ``meta`` device.
        input_shape: Its input shape, batch dimension included.
        input_requires_grad: Whether its backward pass must produce the input's gradient.
        input_dtype: Its input's dtype.
        signature: Structure and input, human-readable.
        key: Hash of ``signature``: the latency table's row key.
    """

    name: str
    kind: str
    module: nn.Module
    input_shape: tuple[int, ...]
    input_requires_grad: bool
    input_dtype: torch.dtype
    signature: str
    key: str

    @property
    def is_identity(self) -> bool:
        return isinstance(self.module, nn.Identity)


def make_instance(
    name: str,
    kind: str,
    module: nn.Module,
    shape: tuple[int, ...],
    requires_grad: bool,
    dtype: torch.dtype,
) -> OpInstance:
    """An ``OpInstance`` whose key hashes the module's structure and its input."""
    params = ",".join(f"{n}:{tuple(p.shape)}" for n, p in module.named_parameters())
    sig = (
        f"{type(module).__module__}.{type(module).__qualname__}|{module!r}|{params}"
        f"|in={list(shape)}|{str(dtype).removeprefix('torch.')}|grad={int(requires_grad)}"
    )
    key = hashlib.sha256(sig.encode()).hexdigest()[:32]
    return OpInstance(name, kind, module, shape, requires_grad, dtype, sig, key)


def _has_choice(module: nn.Module) -> bool:
    return any(isinstance(m, LayerChoice) for m in module.modules())


@dataclass(frozen=True)
class _Node:
    """A unit position in the supernet: one module, or a run of fixed sequential layers."""

    name: str
    kind: str
    modules: tuple[nn.Module, ...]


def unit_nodes(root: nn.Module, prefix: str = "") -> list[_Node]:
    """The unit positions of a supernet (or any module), in module order."""
    if isinstance(root, LayerChoice):
        return [_Node(prefix or "root", "choice", (root,))]
    if not _has_choice(root):
        return [_Node(prefix or "root", "fixed", (root,))]
    nodes: list[_Node] = []
    if isinstance(root, SuperSequential):
        run: list[tuple[str, nn.Module]] = []

        def flush() -> None:
            if run:
                name = run[0][0] if len(run) == 1 else f"{run[0][0]}..{run[-1][0].rsplit('.')[-1]}"
                nodes.append(_Node(name, "fixed", tuple(m for _, m in run)))
                run.clear()

        for i, child in enumerate(root.layers):
            name = f"{prefix}.layers.{i}" if prefix else f"layers.{i}"
            if _has_choice(child):
                flush()
                nodes.extend(unit_nodes(child, name))
            else:
                run.append((name, child))
        flush()
        return nodes
    for child_name, child in root.named_children():
        nodes.extend(unit_nodes(child, f"{prefix}.{child_name}" if prefix else child_name))
    return nodes


@functools.lru_cache(maxsize=1024)
def null_unit(shape: tuple[int, ...], grad: bool, dtype: torch.dtype) -> OpInstance:
    """An identity at ``shape``: what the timing harness costs by itself."""
    return make_instance("null", "null", nn.Identity(), shape, grad, dtype)


def null_optimizer_unit() -> OpInstance:
    """A one-element linear layer: its AdamW step is the optimizer call's fixed overhead."""
    with torch.device("meta"):
        module = nn.Linear(1, 1, bias=False)
    return make_instance("null-optimizer", "null", module, (1, 1), False, torch.float32)
