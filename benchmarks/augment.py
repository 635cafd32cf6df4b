"""The training batches' crop-and-flip: torchvision per image against nasflow's one gather.

``nasflow.data``'s image datasets augment each training batch with a random crop (zero
padding) and a horizontal flip per image. torchvision's v2 transforms draw one crop per
call, so with them a batch is a Python loop over its images; nasflow's ``CropFlip`` draws
every image's crop and flip at once and gathers them in one indexing operation. This
benchmark times both on the same batches, interleaved round by round in one process, in
CPU-seconds, and sets them beside one training step of a candidate on the same batch, so
the table says what share of a step the augmentation was and is.

Cases: the image proving ground's batches (``studies/cifar10_cpu.py``: 64 images at
16x16, padding 2, a median candidate of its space) and the GPU study's
(``studies/mbconv_cifar10_gpu.py``: 256 images at 32x32, padding 4; its step is not timed
here: on a CPU it says nothing about a GPU).

Usage::

    python benchmarks/augment.py            # seconds
    python benchmarks/augment.py --quick    # seconds: the CI smoke run
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn
from torchvision.transforms import v2

from nasflow.data._image_cache import CropFlip
from nasflow.search_spaces.cifar_cnn import CIFARCNNSpace


def per_image(size: int, padding: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """torchvision's transforms called on each image of the batch (nasflow's old way)."""
    t = v2.Compose([v2.RandomCrop(size, padding=padding), v2.RandomHorizontalFlip()])
    return lambda x: torch.stack([t(img) for img in x])


def cpu_ms(fn: Callable[[], object], repeat: int) -> float:
    """CPU milliseconds per call of ``fn`` (process time: other jobs' load is not counted)."""
    t0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t0) / repeat * 1e3


def step_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    """One SGD step of ``model`` on the batch (forward, backward, update)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def _case(
    n: int, size: int, padding: int, model: nn.Module | None, rounds: int, repeat: int
) -> dict[str, float]:
    """Median CPU ms of the loop, the gather and (with a model) a step, interleaved."""
    x = torch.randn(n, 3, size, size)
    y = torch.randint(0, 10, (n,))
    loop, gather = per_image(size, padding), CropFlip(size, padding)
    fns: dict[str, Callable[[], object]] = {"loop": lambda: loop(x), "gather": lambda: gather(x)}
    if model is not None:
        fns["step"] = step_fn(model, x, y)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()  # warm-up
    names = list(fns)
    for r in range(rounds):
        for k in names[r % len(names) :] + names[: r % len(names)]:  # the turn rotates
            times[k].append(cpu_ms(fns[k], repeat))
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a seconds-long smoke run")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 7; 2 with --quick)")
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 7)
    repeat = 2 if args.quick else 10
    torch.manual_seed(0)
    space = CIFARCNNSpace(base_channels=16, image_size=16)
    cases = [("image proving ground", 64, 16, 2, space.build(space.sample(0)))]
    if not args.quick:
        cases.append(("GPU study's batches", 256, 32, 4, None))
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {threads} intra-op threads; CPU ms per batch, median of")
    print(f"{rounds} interleaved rounds of {repeat} calls")
    print("| batches | per-image loop ms | one gather ms | speedup | step ms | loop/step "
          "| gather/step |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n, size, padding, model in cases:
        med = _case(n, size, padding, model, rounds, repeat)
        loop, gather, step = med["loop"], med["gather"], med.get("step")
        per_step = f"{step:.2f} | {loop / step:.2f} | {gather / step:.2f}" if step else "- | - | -"
        print(f"| {name} ({n} x {size}x{size}, padding {padding}) | {loop:.2f} | {gather:.2f} "
              f"| x{loop / gather:.1f} | {per_step} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
