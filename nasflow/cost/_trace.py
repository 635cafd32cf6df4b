"""The shape pass: which op instances a path runs, memoised per module.

A path's op instances are found by running the supernet on the ``meta`` device (shapes
only). Running a whole network even there takes tens of milliseconds (many ``meta``
kernels are Python decompositions), so each unit module's result is memoised: its output
shape is a function of its input (shape, dtype, whether it needs a gradient) and of the
values of the labels it reads, which are recorded while it runs. A new path then
re-runs only the modules whose inputs or read labels are new; the rest are dictionary
look-ups. Modules are deterministic functions of what they read, so a memo hit replays
exactly what running the module would do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from nasflow.cost._analytic import check_shape
from nasflow.cost._units import OpInstance, _Node, make_instance, unit_nodes
from nasflow.errors import ConfigError
from nasflow.space import SearchSpace
from nasflow.supernet import SuperModule, Supernet, call, extract_module

#: Shape-preserving functions whose ``meta`` kernels run a slow Python decomposition.
_SAME_SHAPE = {
    torch.nn.functional.batch_norm,
    torch.nn.functional.layer_norm,
    torch.nn.functional.group_norm,
    torch.nn.functional.instance_norm,
    torch.batch_norm,
    torch.layer_norm,
    torch.group_norm,
    torch.instance_norm,
}


class _ShapeOnly(TorchFunctionMode):
    """Normalisation layers on ``meta`` tensors return an empty tensor of their input's
    shape (needing a gradient when any argument does): all a shape pass needs, and
    several times faster than their ``meta`` decompositions."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if func in _SAME_SHAPE and isinstance(args[0], torch.Tensor) and args[0].is_meta:
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            out = torch.empty_like(args[0])
            if any(t.requires_grad for t in tensors):
                # A non-leaf, as the real op returns: in-place ops may follow (ReLU(True)).
                return out.requires_grad_(True).clone()
            return out
        return func(*args, **kwargs)


class _Reads(Mapping[str, Any]):
    """An arch that records which labels are read from it, in order."""

    def __init__(self, arch: Mapping[str, Any]) -> None:
        self.arch = arch
        self.read: dict[str, Any] = {}

    def __getitem__(self, label: str) -> Any:
        value = self.arch[label]
        self.read.setdefault(label, value)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.arch)

    def __len__(self) -> int:
        return len(self.arch)


class _Memo:
    """Results keyed by a fixed part and by the values of the labels that were read."""

    def __init__(self) -> None:
        self._entries: dict[Any, list[tuple[tuple[str, ...], dict[tuple, Any]]]] = {}

    def get(self, key: Any, arch: Mapping[str, Any]) -> Any:
        for labels, table in self._entries.get(key, ()):
            values = tuple(arch.get(label) for label in labels)
            if values in table:
                return table[values]
        return None

    def put(self, key: Any, read: Mapping[str, Any], result: Any) -> None:
        labels = tuple(read)
        values = tuple(read[label] for label in labels)
        for known, table in self._entries.setdefault(key, []):
            if known == labels:
                table[values] = result
                return
        self._entries[key].append((labels, {values: result}))


def meta_supernet(space: SearchSpace) -> Supernet:
    """A space's supernet on the ``meta`` device (no memory for weights)."""
    try:
        with torch.device("meta"):
            return space.supernet()
    except Exception:  # an initialisation that needs real data: build, then drop the data
        return space.supernet().to("meta")


def _signature_of(x: torch.Tensor) -> tuple:
    return (tuple(x.shape), x.dtype, bool(x.requires_grad))


class PathTracer:
    """Finds the op instances of any path of one supernet, memoising per unit module.

    Args:
        supernet: The supernet, on the ``meta`` device.
    """

    def __init__(self, supernet: SuperModule) -> None:
        self.supernet = supernet.train()
        self.nodes = unit_nodes(supernet)
        self._node_of_first = {id(n.modules[0]): i for i, n in enumerate(self.nodes)}
        self._shapes = _Memo()
        self._units = _Memo()

    def _run(self, module: nn.Module, x: torch.Tensor, arch: Mapping[str, Any]) -> torch.Tensor:
        """Run one unit member on ``meta``, through the memo."""
        key = (id(module), _signature_of(x))
        hit = self._shapes.get(key, arch)
        if hit is None:
            reads = _Reads(arch)
            forward = type(module).forward
            out = (
                forward(module, x, reads)
                if isinstance(module, SuperModule)
                else forward(module, x)
            )
            if not isinstance(out, torch.Tensor):
                raise ConfigError(
                    f"{type(module).__name__} returned {type(out).__name__}; the cost model "
                    "needs every op of a path to return one tensor"
                )
            hit = _signature_of(out)
            self._shapes.put(key, reads.read, hit)
        shape, dtype, grad = hit
        return torch.empty(shape, dtype=dtype, device="meta").requires_grad_(grad)

    def _unit(self, node: _Node, x: tuple, arch: Mapping[str, Any]) -> OpInstance:
        shape, dtype, grad = x
        key = (id(node), shape, dtype, grad)
        hit = self._units.get(key, arch)
        if hit is None:
            reads = _Reads(arch)
            with torch.device("meta"):
                parts = [extract_module(m, reads) for m in node.modules]
            module = parts[0] if len(parts) == 1 else nn.Sequential(*parts)
            name = node.name
            if node.kind == "choice":
                label = node.modules[0].label  # type: ignore[attr-defined]
                name = f"{name}[{label}={reads[label]}]"
            hit = make_instance(name, node.kind, module, shape, grad, dtype)
            self._units.put(key, reads.read, hit)
        return hit

    def units(
        self, arch: Mapping[str, Any], input_shape: tuple[int, ...], dtype: torch.dtype
    ) -> list[OpInstance]:
        """The op instances a training step of path ``arch`` runs, in execution order.

        Args:
            arch: A validated path of the supernet's space.
            input_shape: Network input shape, batch dimension included.
            dtype: Network input dtype.
        """
        shape = check_shape(input_shape)
        calls: list[tuple[int, tuple]] = []
        members = {id(m): m for n in self.nodes for m in n.modules}

        def patched(module: nn.Module) -> Any:
            def forward(x: torch.Tensor, *rest: Any) -> torch.Tensor:
                node = self._node_of_first.get(id(module))
                if node is not None:
                    calls.append((node, _signature_of(x)))
                return self._run(module, x, rest[0] if rest else arch)

            return forward

        for m in members.values():
            m.forward = patched(m)  # type: ignore[method-assign]
        try:
            x = torch.empty(shape, device="meta", dtype=dtype)
            with _ShapeOnly():
                body = self.supernet.body if isinstance(self.supernet, Supernet) else self.supernet
                call(body, x, arch)
        finally:
            for m in members.values():
                del m.forward
        # Extract only now: a deep copy taken while ``forward`` is patched would keep it.
        return [self._unit(self.nodes[i], x, arch) for i, x in calls]


def sees_ops(space: SearchSpace, input_shape: Sequence[int]) -> bool:
    """Whether the op tracer finds any op in one path of ``space`` (a batch of two samples
    of ``input_shape``, on ``meta``): not in a supernet that computes with sliced weights
    instead of choice modules, whose cost the cost model cannot predict.

    Costs one traced path: the first in a process warms torch's ``meta`` kernels (2.3 s,
    the MNIST-1D space on a 2-vCPU VM), later ones 0.08-0.11 s (the CIFAR-10 and GPT-2
    spaces after it); a study with ``cost="model"`` now pays that before its data loads.
    """
    tracer = PathTracer(meta_supernet(space))
    shape = (2, *check_shape(input_shape))
    return bool(tracer.units(space.path(space.sample(0)), shape, space.input_dtype))
