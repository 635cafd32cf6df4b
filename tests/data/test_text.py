"""Character-level text: vocabulary, contiguous splits, shifted blocks, errors."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from nasflow.data import CharVocab, load_text
from nasflow.data._text import CharBlocks

SHAKESPEARE_CHARS = 1_115_394


@pytest.fixture
def small_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.txt"
    path.write_text("".join(chr(ord("a") + i % 7) for i in range(1000)) + "ü\n", "utf-8")
    return path


def test_vocab_round_trip_and_errors() -> None:
    vocab = CharVocab("hello, world")
    assert vocab.itos == sorted(set("hello, world")) and len(vocab) == 9
    assert all(vocab.itos[vocab.stoi[c]] == c for c in vocab.itos)
    ids = vocab.encode("world")
    assert ids.dtype == torch.int64 and ids.shape == (5,)
    assert vocab.decode(ids) == "world" and vocab.decode([0, 1]) == " ,"
    with pytest.raises(ValueError, match="'!'"):
        vocab.encode("low!")
    with pytest.raises(ValueError, match=r"token id 9 is outside 0\.\.8"):
        vocab.decode([9])
    with pytest.raises(ValueError, match="-1"):
        vocab.decode(torch.tensor([0, -1]))


def test_small_file_splits_are_contiguous_and_shifted(small_file: Path) -> None:
    text = small_file.read_text("utf-8")
    n = len(text)  # 1002
    bundle = load_text(small_file, block_size=16, val_fraction=0.2, test_fraction=0.1)
    assert (bundle.input_shape, bundle.name) == ((16,), "small")
    assert bundle.num_classes == 9 == len(set(text))
    n_val, n_test = int(n * 0.2), int(n * 0.1)
    n_train = n - n_val - n_test
    assert len(bundle.train) == (n_train - 1) // 16
    assert len(bundle.val) == (n_val - 1) // 16 and len(bundle.test) == (n_test - 1) // 16
    vocab = bundle.train.vocab
    starts = {"train": 0, "val": n_train, "test": n_train + n_val}
    for name, split in (("train", bundle.train), ("val", bundle.val), ("test", bundle.test)):
        assert split.vocab is vocab
        for i in range(len(split)):
            x, y = split[i]
            s = starts[name] + 16 * i
            assert x.dtype == y.dtype == torch.int64 and x.shape == y.shape == (16,)
            assert vocab.decode(x) == text[s : s + 16]
            assert vocab.decode(y) == text[s + 1 : s + 17]
    assert torch.equal(bundle.test[-1][0], bundle.test[len(bundle.test) - 1][0])
    with pytest.raises(IndexError):
        bundle.test[len(bundle.test)]


def test_blocks_pickle_and_batch(small_file: Path) -> None:
    bundle = load_text(small_file, block_size=8)
    clone = pickle.loads(pickle.dumps(bundle.val))
    assert torch.equal(clone[2][0], bundle.val[2][0]) and clone.vocab.itos == bundle.val.vocab.itos
    x, y = next(iter(DataLoader(bundle.train, batch_size=4)))
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(x[:, 1:], y[:, :-1])


def test_tinyshakespeare(shared_data_file: Callable[[str], Path]) -> None:
    path = shared_data_file("tinyshakespeare.txt")
    text = path.read_text("utf-8")
    assert len(text) == SHAKESPEARE_CHARS
    bundle = load_text(path, block_size=64)
    assert bundle.num_classes == 65 and bundle.input_shape == (64,)
    n_val = n_test = int(SHAKESPEARE_CHARS * 0.1)
    n_train = SHAKESPEARE_CHARS - n_val - n_test
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (
        (n_train - 1) // 64,
        (n_val - 1) // 64,
        (n_test - 1) // 64,
    )
    vocab = bundle.train.vocab
    assert vocab.decode(bundle.train[0][0]).startswith("First Citizen:")
    assert vocab.decode(bundle.val[0][0]) == text[n_train : n_train + 64]
    assert vocab.decode(bundle.test[3][1]) == text[n_train + n_val + 193 : n_train + n_val + 257]
    assert torch.equal(bundle.train.tokens, vocab.encode(text[:n_train]))


@pytest.mark.parametrize(
    ("content", "match"),
    [("", "empty"), ("abc" * 20, "too short"), ("x" * 300, "too short")],
)
def test_short_or_empty_file_names_the_file(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "tiny.txt"
    path.write_text(content, "utf-8")
    with pytest.raises(ValueError, match=match) as err:
        load_text(path, block_size=16)
    assert str(path) in str(err.value)


def test_bad_arguments(small_file: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.txt"):
        load_text(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="must be a file"):
        load_text(tmp_path)
    binary = tmp_path / "latin1.txt"
    binary.write_bytes("café".encode("latin-1") * 500)
    with pytest.raises(ValueError, match="not UTF-8"):
        load_text(binary)
    for kwargs, name in [
        ({"block_size": 0}, "block_size"),
        ({"block_size": 2.0}, "block_size"),
        ({"val_fraction": 0}, "val_fraction"),
        ({"test_fraction": 1.0}, "test_fraction"),
        ({"val_fraction": 0.5, "test_fraction": 0.5}, "below 1"),
    ]:
        with pytest.raises(ValueError, match=name):
            load_text(small_file, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="too short"):
        CharBlocks(torch.arange(8), 8, CharVocab("abcdefgh"))


def test_max_chars_reads_a_prefix(small_file: Path) -> None:
    text = small_file.read_text("utf-8")
    whole = load_text(small_file, block_size=8)
    head = load_text(small_file, block_size=8, max_chars=len(text) // 2)
    n = len(text) // 2
    n_train = n - 2 * int(n * 0.1)
    assert torch.equal(head.train.tokens, head.train.vocab.encode(text[:n_train]))
    assert len(head.train) < len(whole.train)
    assert head.name.endswith(f"[:{n}]")
    with pytest.raises(ValueError, match="max_chars"):
        load_text(small_file, block_size=8, max_chars=0)
