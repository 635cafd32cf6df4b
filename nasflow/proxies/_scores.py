"""``zero_cost_scores``: the zero-cost proxies of many architectures, and the record of
what they did (``ProxyScores``)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import torch
from torch import nn

from nasflow.errors import ConfigError
from nasflow.proxies._errors import ProxyError
from nasflow.proxies._nwot import nwot
from nasflow.proxies._synflow import synflow
from nasflow.space import Arch, SearchSpace

_LOG = logging.getLogger(__name__)

#: Proxy name -> ``score(net, batch_inputs) -> float``.
PROXIES: Mapping[str, Callable[[nn.Module, torch.Tensor], float]] = MappingProxyType(
    {"synflow": synflow, "nwot": nwot}
)


def rank_last(values: Sequence[float | None]) -> list[float]:
    """The fallback for failed scores: every ``None``, ``nan`` or infinite value becomes one
    value below every finite one (the failed architectures rank last and tie), the finite
    values are kept.

    Args:
        values: Scores, higher predicting better.
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    low = min(finite) if finite else 0.0
    fallback = low - abs(low) - 1.0
    return [float(v) if v is not None and math.isfinite(v) else fallback for v in values]


@dataclass(frozen=True)
class ProxyFailure:
    """One proxy that gave no score for one architecture.

    Attributes:
        proxy: The proxy's name.
        index: The architecture's position in ``ProxyScores.archs``.
        reason: Why (a non-finite value, or what the proxy could not do).
    """

    proxy: str
    index: int
    reason: str

    def line(self) -> str:
        """The one line that says what happened and what the ranking does with it."""
        return (
            f"{self.proxy} failed on architecture {self.index} ({self.reason}): ranked below "
            "every architecture it scored"
        )


@dataclass(frozen=True)
class ProxyScores:
    """What ``zero_cost_scores`` did.

    Attributes:
        proxies: The proxies computed, in order.
        archs: The architectures scored, in order.
        values: Proxy -> one raw score per architecture (higher predicts better), ``nan``
            where it failed.
        failures: Every (proxy, architecture) without a score, and why.
        seconds: Wall seconds per proxy, and ``"build"`` for building the networks.
        seed: The torch seed every network was initialised from.
        batch_size: Inputs in the batch (NWOT's kernel is ``batch_size x batch_size``).
    """

    proxies: tuple[str, ...]
    archs: tuple[Arch, ...]
    values: Mapping[str, tuple[float, ...]]
    failures: tuple[ProxyFailure, ...]
    seconds: Mapping[str, float]
    seed: int
    batch_size: int

    def ranking(self, proxy: str) -> list[float]:
        """``proxy``'s scores with the fallback for its failures (``rank_last``).

        Raises:
            ConfigError: ``proxy`` was not computed.
        """
        if proxy not in self.values:
            raise ConfigError(f"proxy {proxy!r} was not computed; computed: {list(self.proxies)}")
        return rank_last(self.values[proxy])

    def lines(self) -> list[str]:
        """One line per failure."""
        return [f.line() for f in self.failures]


def _inputs(batch: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    x = batch if isinstance(batch, torch.Tensor) else batch[0] if len(batch) else None
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise ConfigError(
            f"batch must be an input tensor (N, ...) or an (inputs, targets) pair, got {batch!r}"
        )
    return x


def _one(name: str, net: nn.Module, x: torch.Tensor) -> tuple[float, str | None]:
    """``(score, None)`` or ``(nan, reason)``."""
    try:
        value = PROXIES[name](net, x)
    except ProxyError as e:
        return math.nan, str(e)
    if not math.isfinite(value):
        return math.nan, f"the score is {value}"
    return value, None


def zero_cost_scores(
    space: SearchSpace,
    archs: Sequence[Arch],
    batch: torch.Tensor | Sequence[torch.Tensor],
    proxies: Sequence[str] = ("synflow", "nwot"),
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> ProxyScores:
    """Score ``archs`` with zero-cost proxies at initialisation.

    Each architecture's stand-alone network (``space.build``) is initialised from the
    torch seed ``seed`` (inside ``torch.random.fork_rng``: the caller's random state is left
    as it was) and scored by every proxy (each works on its own copy). A proxy that cannot
    score an architecture, or gives a non-finite value, is recorded as a failure with one
    line (to the ``nasflow`` logger), not raised.

    Args:
        space: The search space.
        archs: Architectures of ``space``.
        batch: One batch of training inputs (or an ``(inputs, targets)`` pair): NWOT's
            batch, and synflow's input shape and dtype.
        proxies: Names from ``PROXIES``: ``"synflow"`` and/or ``"nwot"``.
        seed: Initialisation seed.
        device: Where the networks run.

    Returns:
        The record of scores, failures and seconds.

    Raises:
        ConfigError: An unknown or repeated proxy, or a batch that is not a tensor.
    """
    names = tuple(proxies)
    unknown = [p for p in names if p not in PROXIES]
    if unknown or not names or len(set(names)) != len(names):
        raise ConfigError(
            f"proxies must be distinct names among {sorted(PROXIES)}, got {list(proxies)!r}"
        )
    x = _inputs(batch).to(device)
    values: dict[str, list[float]] = {p: [] for p in names}
    seconds = dict.fromkeys(("build", *names), 0.0)
    failures: list[ProxyFailure] = []
    for i, arch in enumerate(archs):
        t0 = time.perf_counter()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            net = space.build(arch).to(device)
        seconds["build"] += time.perf_counter() - t0
        for name in names:
            t0 = time.perf_counter()
            value, reason = _one(name, net, x)
            seconds[name] += time.perf_counter() - t0
            values[name].append(value)
            if reason is not None:
                failures.append(ProxyFailure(name, i, reason))
                _LOG.info(failures[-1].line())
    return ProxyScores(
        proxies=names,
        archs=tuple(archs),
        values=MappingProxyType({p: tuple(v) for p, v in values.items()}),
        failures=tuple(failures),
        seconds=MappingProxyType(seconds),
        seed=seed,
        batch_size=int(x.shape[0]),
    )
