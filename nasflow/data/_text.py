"""Character-level language-modelling data from a local UTF-8 text file."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from pathlib import Path

import torch
from torch.utils.data import Dataset

from nasflow._checks import check_fraction, check_int
from nasflow.data._base import DataBundle
from nasflow.errors import ConfigError, MissingFileError

MIN_BLOCKS = 2  # each split must hold at least this many whole blocks


class CharVocab:
    """A character vocabulary: the sorted set of characters of a corpus.

    Attributes:
        itos: Token id to character.
        stoi: Character to token id.
    """

    def __init__(self, chars: Iterable[str]) -> None:
        """Build the vocabulary.

        Args:
            chars: Characters (or a text); duplicates are dropped and the rest sorted.
        """
        self.itos: list[str] = sorted(set(chars))
        self.stoi: dict[str, int] = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> torch.Tensor:
        """Token ids of ``text`` as an int64 tensor of shape ``(len(text),)``.

        Raises:
            ValueError: ``text`` holds a character outside the vocabulary.
        """
        try:
            return torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        except KeyError as e:
            raise ConfigError(f"character {e.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids: Iterable[int] | torch.Tensor) -> str:
        """The text of token ids (a sequence or a 1-D tensor).

        Raises:
            ValueError: An id outside ``range(len(self))``.
        """
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        bad = [i for i in values if not 0 <= int(i) < len(self.itos)]
        if bad:
            raise ConfigError(f"token id {bad[0]!r} is outside 0..{len(self.itos) - 1}")
        return "".join(self.itos[int(i)] for i in values)


class CharBlocks(Dataset):
    """Non-overlapping blocks of a token stream for next-token prediction.

    Item ``i`` is ``(x, y)`` with ``x = tokens[s:s + block_size]`` and
    ``y = tokens[s + 1:s + block_size + 1]`` for ``s = i * block_size`` (both int64).

    Attributes:
        tokens: The token stream, int64 of shape ``(N,)``.
        block_size: Tokens per sample.
        vocab: The vocabulary the tokens come from.
    """

    def __init__(self, tokens: torch.Tensor, block_size: int, vocab: CharVocab) -> None:
        """Wrap a token stream.

        Args:
            tokens: 1-D token ids.
            block_size: Tokens per sample; the stream needs at least ``block_size + 1``.
            vocab: The vocabulary the tokens come from.

        Raises:
            ValueError: ``tokens`` too short for one block.
        """
        if tokens.dim() != 1 or len(tokens) < block_size + 1:
            raise ConfigError(
                f"a token stream of shape {tuple(tokens.shape)} is too short for one block "
                f"of {block_size} (needs a 1-D stream of at least {block_size + 1} tokens)"
            )
        self.tokens = tokens.to(torch.long)
        self.block_size = block_size
        self.vocab = vocab

    def __len__(self) -> int:
        return (len(self.tokens) - 1) // self.block_size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"block {index} is out of range for {len(self)} blocks")
        start = (index % len(self)) * self.block_size
        chunk = self.tokens[start : start + self.block_size + 1]  # (block_size + 1,)
        return chunk[:-1], chunk[1:]


def load_text(
    path: os.PathLike | str,
    block_size: int = 64,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    max_chars: int | None = None,
) -> DataBundle:
    """A character-level corpus split contiguously into train, validation and test.

    The vocabulary is the sorted set of the file's characters. The token stream is cut in
    order: the first ``1 - val_fraction - test_fraction`` is train, then validation, then
    test. Each split yields non-overlapping ``(x, y)`` blocks (see :class:`CharBlocks`);
    every dataset carries the vocabulary as ``.vocab``.

    Args:
        path: A UTF-8 text file.
        block_size: Tokens per sample (the context length).
        val_fraction: Share of the stream for validation, in (0, 1).
        test_fraction: Share of the stream for test, in (0, 1).
        max_chars: Read only the file's first this many characters (``None``: all); the
            vocabulary and the three splits come from that prefix.

    Returns:
        A bundle with ``input_shape == (block_size,)`` and ``num_classes`` the vocab size.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: Bad arguments, not UTF-8, or a file too short for
            ``MIN_BLOCKS`` blocks in every split.
    """
    p = Path(path)
    if not p.exists():
        raise MissingFileError(f"text file {p} does not exist")
    if not p.is_file():
        raise ConfigError(f"text path {p} must be a file")
    check_int("block_size", block_size)
    check_fraction("val_fraction", val_fraction)
    check_fraction("test_fraction", test_fraction)
    if max_chars is not None:
        check_int("max_chars", max_chars)
    if val_fraction + test_fraction >= 1:
        raise ConfigError(
            f"val_fraction + test_fraction must be below 1, got {val_fraction} + {test_fraction}"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"text file {p} is not UTF-8: {e}") from None
    text = text[:max_chars]
    if not text:
        raise ConfigError(f"text file {p} is empty")

    vocab = CharVocab(text)
    tokens = vocab.encode(text)  # (N,)
    n = len(tokens)
    n_val, n_test = int(n * val_fraction), int(n * test_fraction)
    n_train = n - n_val - n_test
    need = MIN_BLOCKS * block_size + 1
    if min(n_train, n_val, n_test) < need:
        raise ConfigError(
            f"text file {p} is too short: {n} characters give train/val/test splits of "
            f"{n_train}/{n_val}/{n_test}, each needs at least {need} "
            f"({MIN_BLOCKS} blocks of block_size={block_size} plus one)"
        )
    cuts = (0, n_train, n_train + n_val, n)
    train, val, test = (
        CharBlocks(tokens[a:b].clone(), block_size, vocab) for a, b in itertools.pairwise(cuts)
    )
    name = p.stem if max_chars is None else f"{p.stem}[:{max_chars}]"
    return DataBundle(train, val, test, (block_size,), len(vocab), name)
