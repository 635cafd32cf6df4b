"""Data-parallel training: one gradient all-reduce per (fair) step, launch helpers.

PyTorch's ``DistributedDataParallel`` reduces gradients from autograd hooks and needs
``find_unused_parameters=True`` whenever a step leaves some parameters without a gradient,
which every supernet path does (and which costs up to 2x, whittle#97). nasflow does not
wrap the model at all: every rank accumulates the gradients of all paths of a step
locally (what ``no_sync()`` would do for the first M-1 paths) and then calls
``GradReducer.reduce`` once, which all-reduces every gradient of the step, a presence mask
and a few scalars (loss, sample count, a non-finite flag) in **one** ``all_reduce``.
Parameters that no path used stay ``grad=None`` on every rank, so the optimizer skips them
(no weight-decay drift); the mask proves that all ranks agree on which ones those are.

BatchNorm layers use per-rank batch statistics, as under ``DistributedDataParallel``
without ``SyncBatchNorm``: with BN, ``W`` ranks on a global batch ``B`` equal one process
that accumulates ``W`` micro-batches of ``B / W``.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from nasflow import settings
from nasflow._checks import check_int
from nasflow._loss import flat_logits
from nasflow.errors import ConfigError, StateError
from nasflow.space import Arch
from nasflow.train._errors import NonFiniteLossError


class GradReducer:
    """Averages gradients across ranks with one ``all_reduce`` per call.

    Attributes:
        calls: How many all-reduces this reducer has issued.

    Args:
        group: Process group; ``None`` is the default group.
    """

    def __init__(self, group: Any = None) -> None:
        if not dist.is_initialized():
            raise ConfigError("GradReducer needs torch.distributed to be initialised first")
        self.group = group
        self.world_size = dist.get_world_size(group)
        self.calls = 0

    def reduce(self, params: Sequence[torch.Tensor], extras: Sequence[float]) -> list[float]:
        """All-reduce the gradients of ``params`` (averaged) and ``extras`` (summed).

        Layout of the single buffer: ``[mask (P), extras (E), grad of param 0, ...]``, where a
        parameter without a gradient contributes zeros and a 0 in the mask. The buffer has
        the same size on every rank whatever the gradients, so a disagreement cannot hang
        the collective; it raises on every rank instead.

        Returns:
            The summed extras.

        Raises:
            RuntimeError: Ranks disagree on which parameters have gradients.
        """
        if not params:
            raise ConfigError("reduce got no parameters")
        dtype = params[0].dtype
        sizes = [p.numel() for p in params]
        head = len(params) + len(extras)
        buf = torch.zeros(head + sum(sizes), dtype=dtype, device=params[0].device)
        off = head
        for i, (p, n) in enumerate(zip(params, sizes, strict=True)):
            if p.grad is not None:
                buf[i] = 1.0
                buf[off : off + n] = p.grad.reshape(-1)  # (numel,) view of the gradient
            off += n
        buf[len(params) : head] = torch.tensor(list(extras), dtype=dtype)
        dist.all_reduce(buf, op=dist.ReduceOp.SUM, group=self.group)
        self.calls += 1
        mask = buf[: len(params)].round().to(torch.int64).tolist()
        bad = [i for i, m in enumerate(mask) if m not in (0, self.world_size)]
        if bad:
            raise StateError(
                f"ranks disagree on which parameters have gradients (parameter indices "
                f"{bad[:5]} have them on only some of {self.world_size} ranks); all ranks "
                "must train the same paths"
            )
        off = head
        for p, n, m in zip(params, sizes, mask, strict=True):
            if m:
                p.grad.copy_(buf[off : off + n].view_as(p.grad)).div_(self.world_size)
            off += n
        return buf[len(params) : head].tolist()


def broadcast_module(module: nn.Module, src: int = 0, group: Any = None) -> None:
    """Copy ``module``'s parameters and buffers from rank ``src`` to every rank."""
    with torch.no_grad():
        for t in [*module.parameters(), *module.buffers()]:
            dist.broadcast(t, src=src, group=group)


def shard(x: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Rank ``rank``'s contiguous slice of a global batch (sizes must divide evenly)."""
    if x.shape[0] % world_size:
        raise ConfigError(
            f"global batch of {x.shape[0]} does not split evenly over {world_size} ranks"
        )
    n = x.shape[0] // world_size
    return x[rank * n : (rank + 1) * n]


def _path_loss(
    supernet: nn.Module,
    path: Arch,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    return loss_fn(*flat_logits(supernet(x, path), y))


def ddp_supernet_step(
    supernet: nn.Module,
    paths: Sequence[Arch],
    x: torch.Tensor,
    y: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    reducer: GradReducer,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy,
) -> float:
    """``supernet_step`` across ranks: this rank's shard, every path, one all-reduce.

    Every rank must pass the same ``paths`` (draw them from a sampler with the global step:
    samplers are pure functions of ``(seed, step)``) and an equal-sized shard of the global
    batch. Gradients are summed over the paths locally, averaged over ranks in one
    all-reduce, and one optimizer step is taken: the same update as ``supernet_step`` on the
    global batch in one process (for networks without batch norm; see the module notes).

    Returns:
        The mean loss over the paths and the global batch.

    Raises:
        NonFiniteLossError: Some rank's loss was NaN or infinite (raised on every rank; no
            step is taken).
    """
    optimizer.zero_grad(set_to_none=True)
    total, bad = 0.0, 0.0
    for path in paths:
        loss = _path_loss(supernet, path, x, y, loss_fn)
        value = float(loss.detach())
        if not math.isfinite(value):
            bad = 1.0  # keep going: every rank must reach the all-reduce
            continue
        loss.backward()
        total += value
    params = [p for g in optimizer.param_groups for p in g["params"]]
    loss_sum, flagged = reducer.reduce(params, [total, bad])
    if flagged:
        optimizer.zero_grad(set_to_none=True)
        raise NonFiniteLossError(f"a rank's loss was not finite on one of paths {paths}")
    optimizer.step()
    return loss_sum / (reducer.world_size * len(paths))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def default_backend() -> str:
    """``"nccl"`` when CUDA is available, else ``"gloo"``."""
    return "nccl" if torch.cuda.is_available() else "gloo"


#: Seconds a finished rank waits for the others to tear their process group down.
_EXIT_WAIT_S = 120.0


def _spawned(
    rank: int,
    fn: Callable[..., Any],
    world_size: int,
    backend: str,
    port: int,
    args: tuple[Any, ...],
    torn_down: Any,
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(rank),
    )
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    finished = False
    try:
        fn(rank, world_size, *args)
        # Every rank done before any tears its connections down: a rank leaving while the
        # other still talks to it aborted one of seven runs of the DDP test ("terminate called
        # without an active exception", gloo on a loaded CPU).
        dist.barrier()
        finished = True
    finally:
        dist.destroy_process_group()
    if finished:
        # And no rank exits (closing its sockets; rank 0 also the TCP store) before every
        # rank has torn its group down: with the barrier alone, rank 1 still aborted the
        # same way once, after both ranks had written their results (a CI run, 2026-11-26).
        # ``torn_down`` is a multiprocessing barrier, outside the process group.
        # (Broken or timed out: a rank failed, and ``mp.spawn`` reports that.)
        with contextlib.suppress(threading.BrokenBarrierError):
            torn_down.wait(timeout=_EXIT_WAIT_S)


def launch(
    fn: Callable[..., Any],
    world_size: int,
    args: tuple[Any, ...] = (),
    backend: str | None = None,
) -> None:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` fresh processes on this machine.

    Each process joins a process group (gloo on CPU, nccl on GPU) before ``fn`` runs and
    leaves it afterwards. ``fn`` must be importable (a module-level function). Multi-machine
    runs use ``torchrun`` and :func:`init_from_env` instead.
    """
    check_int("world_size", world_size)
    import torch.multiprocessing as mp

    backend = backend or default_backend()
    torn_down = mp.get_context("spawn").Barrier(world_size)
    mp.spawn(
        _spawned,
        args=(fn, world_size, backend, free_port(), args, torn_down),
        nprocs=world_size,
    )


def init_from_env(backend: str | None = None) -> tuple[int, int]:
    """Join the process group described by ``torchrun``'s environment variables.

    Returns:
        ``(rank, world_size)``; ``(0, 1)`` without initialising anything when the process
        was not started by ``torchrun`` (no ``WORLD_SIZE`` or ``WORLD_SIZE=1``).
    """
    world = settings.world_size()
    if world <= 1:
        return 0, 1
    if not dist.is_initialized():
        dist.init_process_group(backend or default_backend(), init_method="env://")
    return dist.get_rank(), dist.get_world_size()


def is_rank_zero() -> bool:
    """Whether this process writes (studies, checkpoints, reports): rank 0, or no DDP."""
    return not dist.is_initialized() or dist.get_rank() == 0
