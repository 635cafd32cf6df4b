"""Import of NNI 3.0 model spaces: ``from_nni(model_space)`` gives a nasflow ``SearchSpace``.

NNI is an optional dependency (``pip install 'nasflow[nni]'``); it is imported only when
``from_nni`` is called, never when ``nasflow.space`` is imported.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nasflow.errors import ConfigError, MissingDependencyError, UnsupportedError
from nasflow.space._choices import Choice
from nasflow.space._space import SearchSpace

if TYPE_CHECKING:
    from torch import nn


_INSTALL_HINT = "from_nni needs NNI 3.0: pip install 'nasflow[nni]'"

#: Most subsets one ``InputChoice`` may expand to (its values are listed one by one).
MAX_INPUT_SUBSETS = 4096


def _import_nni() -> tuple[Any, Any, Any, Any]:
    """``(ModelSpace, LayerChoice, Categorical, CategoricalMultiple)`` from NNI."""
    try:
        from nni.mutable import Categorical, CategoricalMultiple
        from nni.nas.nn.pytorch import LayerChoice, ModelSpace
    except ImportError as e:
        raise MissingDependencyError(f"{_INSTALL_HINT} (import failed: {e})") from e
    return ModelSpace, LayerChoice, Categorical, CategoricalMultiple


def _subset_values(label: str, values: list[Any], n_chosen: int | None) -> list[str]:
    """Every selection an ``InputChoice`` accepts, each as a JSON list string."""
    sizes = range(len(values) + 1) if n_chosen is None else [n_chosen]
    count = sum(len(list(itertools.combinations(range(len(values)), k))) for k in sizes)
    if count > MAX_INPUT_SUBSETS:
        raise ConfigError(
            f"NNI input choice {label!r} has {count} possible selections, more than "
            f"{MAX_INPUT_SUBSETS}; give it an n_chosen"
        )
    return [json.dumps(list(c)) for k in sizes for c in itertools.combinations(values, k)]


class NniSpace(SearchSpace):
    """A nasflow space over the choices of an NNI 3.0 ``ModelSpace``.

    Each NNI ``Categorical`` (an ``nni.choice``, a ``LayerChoice``, a ``Repeat`` depth)
    becomes a ``Choice`` with the same label and the same values: a ``LayerChoice`` gives an
    ``"op"`` choice whose values are its candidate names or indices, anything else a
    ``"value"`` choice. Each ``CategoricalMultiple`` (an ``InputChoice``) becomes an
    ``"edge"`` choice whose values are the accepted selections written as JSON list
    strings (``"[0, 2]"``), since an arch holds scalars only.

    ``build(arch)`` is NNI's ``model_space.freeze(sample)`` on the same choices, so it
    returns the network NNI would build, freshly initialised. Sampling, Optuna suggestion,
    enumeration, validation, fingerprint and stand-alone training of built networks work as
    for any space. There is no weight-sharing supernet: ``supernet()`` raises
    ``NotImplementedError``, so one-shot (supernet) searches do not apply to these spaces.

    Args:
        model_space: The NNI ``ModelSpace`` instance.
        name: Space name; ``"nni:<ClassName>"`` by default.
        description: One line describing the space.

    Raises:
        ImportError: NNI is not installed.
        ValueError: ``model_space`` is not an NNI ``ModelSpace``, or it holds a mutable that
            is not categorical (``nni.uniform``, a constraint...).
    """

    def __init__(self, model_space: Any, *, name: str | None = None, description: str = ""):
        model_space_cls, layer_choice_cls, categorical, categorical_multiple = _import_nni()
        if not isinstance(model_space, model_space_cls):
            raise ConfigError(f"from_nni needs an NNI 3.0 ModelSpace, got {model_space!r}")
        op_labels = {m.label for m in model_space.modules() if isinstance(m, layer_choice_cls)}
        choices: list[Choice] = []
        self._multiple: set[str] = set()
        for label, mutable in model_space.simplify().items():
            if isinstance(mutable, categorical_multiple):
                values = _subset_values(label, list(mutable.values), mutable.n_chosen)
                choices.append(Choice(label, tuple(values), "edge"))
                self._multiple.add(label)
            elif isinstance(mutable, categorical):
                kind = "op" if label in op_labels else "value"
                choices.append(Choice(label, tuple(mutable.values), kind))
            else:
                raise ConfigError(
                    f"NNI mutable {label!r} is a {type(mutable).__name__}; from_nni supports "
                    "categorical choices only (nni.choice, LayerChoice, InputChoice, Repeat)"
                )
        cls = type(model_space)
        super().__init__(
            choices,
            name=name or f"nni:{cls.__name__}",
            description=description or f"NNI model space {cls.__qualname__}",
            config={"nni_model_space": f"{cls.__module__}.{cls.__qualname__}"},
        )
        self.model_space = model_space

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SearchSpace:
        """Not supported: a config cannot hold the NNI model space object.

        Raises:
            ValueError: Always; call ``from_nni`` on the model space again instead.
        """
        raise ConfigError(
            f"an NNI space cannot be re-created from its config {dict(config)!r}; "
            "call nasflow.space.from_nni on the model space again"
        )

    def nni_sample(self, arch: Mapping[str, Any]) -> dict[str, Any]:
        """The NNI sample (label to value, lists for input choices) of a nasflow arch.

        Raises:
            ValueError: ``arch`` is not a point of this space.
        """
        arch = self.validate(arch)
        return {
            label: json.loads(value) if label in self._multiple else value
            for label, value in arch.items()
        }

    def build(self, arch: Mapping[str, Any]) -> nn.Module:
        """NNI's ``freeze`` of the model space on ``arch``'s choices (a new network)."""
        return self.model_space.freeze(self.nni_sample(arch))

    def supernet(self) -> nn.Module:
        """Not available for an imported NNI space.

        Raises:
            NotImplementedError: Always; search these spaces stand-alone (build each arch).
        """
        raise UnsupportedError(
            f"space {self.name!r} was imported from NNI and has no weight-sharing supernet; "
            "search it stand-alone: build(arch) gives each candidate network"
        )


def from_nni(model_space: Any, *, name: str | None = None, description: str = "") -> NniSpace:
    """Convert an NNI 3.0 ``ModelSpace`` into a nasflow space (see ``NniSpace``).

    Example:
        >>> space = from_nni(MyNniSpace())  # doctest: +SKIP
        >>> net = space.build(space.sample(0))  # same as MyNniSpace().freeze(sample)

    Args:
        model_space: An instance of an NNI ``ModelSpace`` subclass built from
            ``LayerChoice``, ``InputChoice``, ``Repeat`` and ``nni.choice`` values.
        name: Space name; ``"nni:<ClassName>"`` by default.
        description: One line describing the space.

    Raises:
        ImportError: NNI is not installed (``pip install 'nasflow[nni]'``).
        ValueError: ``model_space`` is not an NNI ``ModelSpace`` or holds a non-categorical
            mutable.
    """
    return NniSpace(model_space, name=name, description=description)
