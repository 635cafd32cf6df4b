"""``SearchSpace``: the declared choices of a space, and how archs are drawn from it."""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from nasflow.errors import ConfigError
from nasflow.space._arch import Arch
from nasflow.space._choices import AnyChoice, Choice, FloatRange

if TYPE_CHECKING:
    import optuna
    import torch
    from torch import nn


class SearchSpace(ABC):
    """A set of architectures (and optional training hyper-parameters) to search over.

    A concrete space declares its choices and knows how to build its weight-sharing
    supernet. Everything else (sampling, Optuna suggestion, validation, fingerprint,
    stand-alone building) is derived from the choices.

    Args:
        choices: The space's choices; labels must be unique.
        name: Registry name of the space (``"mnist1d"``).
        description: One line shown by ``nasflow spaces``.
        config: JSON-serializable settings that change the networks (base width, number
            of classes...). They enter the fingerprint. Record every constructor argument
            here under its parameter name: ``from_config`` passes those keys back to the
            constructor, which is how a stored study or an exported architecture re-creates
            the space. An ``input_shape`` key (one sample, no batch dimension) lets the
            space's networks be exported.
    """

    #: Whether the cost model's op tracer sees this space's ops (``cost="model"``). A
    #: supernet that computes with sliced weights instead of calling choice modules (the
    #: GPT-2 space) sets it ``False``: a study refuses ``cost="model"`` for it at its start
    #: (one not flagged is refused there too where ``config["input_shape"]`` lets one path
    #: be traced: ``nasflow.cost.sees_ops``).
    cost_model_traceable: ClassVar[bool] = True

    def __init__(
        self,
        choices: Sequence[AnyChoice],
        *,
        name: str,
        description: str = "",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"space name must be a non-empty string, got {name!r}")
        choices = tuple(choices)
        if not choices:
            raise ConfigError(f"space {name!r} declares no choices")
        seen: set[str] = set()
        for c in choices:
            if not isinstance(c, Choice | FloatRange):
                raise ConfigError(f"space {name!r}: {c!r} is not a Choice or FloatRange")
            if c.label in seen:
                raise ConfigError(f"space {name!r}: duplicate choice label {c.label!r}")
            seen.add(c.label)
        self.name = name
        self.description = description
        self.config: dict[str, Any] = dict(config or {})
        try:
            json.dumps(self.config, sort_keys=True)
        except TypeError as e:
            raise ConfigError(f"space {name!r}: config is not JSON-serializable: {e}") from None
        self._choices = choices
        self._by_label = {c.label: c for c in choices}
        self._path_labels = frozenset(c.label for c in choices if c.in_path)

    # ------------------------------------------------------------------ declared choices
    @property
    def choices(self) -> tuple[AnyChoice, ...]:
        return self._choices

    @property
    def path_choices(self) -> tuple[Choice, ...]:
        """Choices that select part of the network (ops, edges, values)."""
        return tuple(c for c in self._choices if isinstance(c, Choice) and c.in_path)

    @property
    def hyper_choices(self) -> tuple[AnyChoice, ...]:
        """Training hyper-parameters searched together with the architecture."""
        return tuple(c for c in self._choices if not c.in_path)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(c.label for c in self._choices)

    def choice(self, label: str) -> AnyChoice:
        try:
            return self._by_label[label]
        except KeyError:
            raise ConfigError(f"space {self.name!r} has no choice {label!r}") from None

    @property
    def size(self) -> float:
        """Number of distinct points (``math.inf`` if a continuous range is present)."""
        if any(not c.is_discrete for c in self._choices):
            return math.inf
        return math.prod(len(c.values) for c in self._choices)  # type: ignore[union-attr]

    @property
    def input_dtype(self) -> torch.dtype:
        """The dtype of the networks' input: ``config["input_dtype"]``, ``"float32"``
        (the default) or ``"int64"`` (token ids).

        Raises:
            ConfigError: Another value.
        """
        import torch

        name = self.config.get("input_dtype", "float32")
        dtypes = {"float32": torch.float32, "int64": torch.long}
        if name not in dtypes:
            raise ConfigError(
                f"space {self.name!r}: config input_dtype {name!r}; choose from {sorted(dtypes)}"
            )
        return dtypes[name]

    @property
    def num_paths(self) -> int:
        """Number of distinct architectures (supernet paths), hyper-parameters aside."""
        return math.prod(len(c.values) for c in self.path_choices)

    # ------------------------------------------------------------------ drawing points
    def sample(self, rng: np.random.Generator | int) -> Arch:
        """A uniformly random point of the space.

        Args:
            rng: A numpy generator, or a seed for a fresh one.
        """
        gen = np.random.default_rng(rng) if isinstance(rng, int) else rng
        out: dict[str, Any] = {}
        for c in self._choices:
            if isinstance(c, Choice):
                out[c.label] = c.values[int(gen.integers(len(c.values)))]
            elif c.log:
                out[c.label] = float(math.exp(gen.uniform(math.log(c.low), math.log(c.high))))
            else:
                out[c.label] = float(gen.uniform(c.low, c.high))
        return Arch(out)

    def suggest(self, trial: optuna.trial.BaseTrial) -> Arch:
        """Ask an Optuna trial for every choice; a ``FixedTrial(arch)`` gives back ``arch``."""
        out: dict[str, Any] = {}
        for c in self._choices:
            if isinstance(c, Choice):
                out[c.label] = trial.suggest_categorical(c.label, c.values)
            else:
                out[c.label] = trial.suggest_float(c.label, c.low, c.high, log=c.log)
        return Arch(out)

    def enumerate(self, limit: int = 1_000_000) -> Iterator[Arch]:
        """Every point of a discrete space, in a fixed order.

        Raises:
            ValueError: The space has a continuous range or more than ``limit`` points.
        """
        if self.size == math.inf:
            raise ConfigError(f"space {self.name!r} has a continuous range; it cannot be listed")
        if self.size > limit:
            raise ConfigError(
                f"space {self.name!r} has {self.size} points, more than limit={limit}"
            )
        labels = [c.label for c in self._choices]
        for combo in itertools.product(*(c.values for c in self._choices)):  # type: ignore[union-attr]
            yield Arch(dict(zip(labels, combo, strict=True)))

    # ------------------------------------------------------------------ identity and checks
    def spec(self) -> dict[str, Any]:
        """The JSON-serializable definition of the space."""
        return {
            "name": self.name,
            "config": self.config,
            "choices": [c.spec() for c in self._choices],
        }

    def fingerprint(self) -> str:
        """A stable hash of the definition: same choices and config, same fingerprint."""
        blob = json.dumps(self.spec(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SearchSpace:
        """Re-create a space from its ``config`` (as stored with a study or an export).

        The default calls the constructor with the config keys that are parameters of
        ``cls.__init__``; other keys are derived facts (``input_shape``) and are left out.
        A space whose constructor takes something that its config does not record under
        the parameter's name overrides this. Callers compare the fingerprint of the result
        with the recorded one, so a config that does not re-create the same space is caught.

        Raises:
            ValueError: ``config`` is not a mapping, or the constructor rejects it.
        """
        if not isinstance(config, Mapping):
            raise ConfigError(f"a space config must be a mapping, got {config!r}")
        params = inspect.signature(cls.__init__).parameters
        kwargs = {k: v for k, v in config.items() if k in params and k != "self"}
        try:
            return cls(**kwargs)
        except TypeError as e:
            raise ConfigError(f"{cls.__name__} does not accept config {kwargs!r}: {e}") from None

    def validate(self, arch: Mapping[str, Any], *, path_only: bool = False) -> Arch:
        """Check that ``arch`` is a point of this space and return it as an ``Arch``.

        Args:
            arch: The mapping to check.
            path_only: Accept a supernet path: the path choices only, no hyper-parameters.

        Raises:
            ValueError: Naming the first unknown label, missing label or foreign value.
        """
        if not isinstance(arch, Mapping):
            raise ConfigError(f"an arch must be a mapping of label to value, got {arch!r}")
        for label in arch:
            if label not in self._by_label:
                raise ConfigError(f"label {label!r} is not a choice of space {self.name!r}")
            if path_only and label not in self._path_labels:
                raise ConfigError(
                    f"label {label!r} is a hyper-parameter, not part of a supernet path"
                )
        wanted = self._path_labels if path_only else self._by_label.keys()
        for label in wanted:
            if label not in arch:
                raise ConfigError(f"arch for space {self.name!r} is missing label {label!r}")
            if not self._by_label[label].contains(arch[label]):
                c = self._by_label[label]
                accepted = list(c.values) if isinstance(c, Choice) else f"[{c.low}, {c.high}]"
                raise ConfigError(
                    f"value {arch[label]!r} for {label!r} is not in space {self.name!r}; "
                    f"accepted: {accepted}"
                )
        return arch if isinstance(arch, Arch) else Arch(arch)

    def path(self, arch: Mapping[str, Any]) -> Arch:
        """The supernet path of a full arch (its hyper-parameters dropped); a path is
        validated and returned as it is."""
        if isinstance(arch, Mapping) and set(arch) == self._path_labels:
            return self.validate(arch, path_only=True)
        return self.validate(arch).subset(self._path_labels)

    # ------------------------------------------------------------------ networks
    @abstractmethod
    def supernet(self) -> nn.Module:
        """A freshly initialised weight-sharing supernet over every path of the space.

        Return a :class:`nasflow.supernet.Supernet`. (``nasflow.supernet`` builds on this
        package, so the annotation says ``nn.Module`` rather than import it back.)
        """

    def build(self, arch: Mapping[str, Any]) -> nn.Module:
        """A freshly initialised stand-alone network for ``arch``, free of supernet code.

        The default extracts the path from a new supernet and re-initialises every
        parameter with its module's own ``reset_parameters`` (so fan-in based inits see
        the stand-alone sizes, not the supernet's largest ones).
        """
        path = self.path(arch)
        net = self.supernet().extract(path)
        for m in net.modules():
            reset = getattr(m, "reset_parameters", None)
            if callable(reset):
                reset()
        return net

    def hf_model(self, net: nn.Module) -> Any | None:
        """The Hugging Face ``PreTrainedModel`` inside a network of this space, if any.

        Export writes it as a ``save_pretrained`` directory (``hf/``) next to the other
        files. The default, ``None``, means the space's networks are plain PyTorch only.
        """
        return None

    def __repr__(self) -> str:
        size = self.size
        return (
            f"{type(self).__name__}(name={self.name!r}, choices={len(self._choices)}, size={size})"
        )
