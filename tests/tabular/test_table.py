from __future__ import annotations

import csv
import itertools
import re
from pathlib import Path

import pytest

from nasflow.search_spaces.nas_bench_201 import NASBench201Space, string_to_arch
from nasflow.space import Arch
from nasflow.tabular import TableError, TabularBenchmark
from tests._spaces import CellSpace

METRIC = "cifar10_test_acc_200ep"
BEST = (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|"
    "+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|"
)
OTHER = "|none~0|+|skip_connect~0|none~1|+|none~0|none~1|avg_pool_3x3~2|"


def write_csv(
    path: Path, rows: list[list[str]], header: tuple[str, ...] = ("arch", "acc")
) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_the_nas_bench_201_table_loads_with_its_published_optimum(shared_data_file) -> None:
    space = NASBench201Space()
    table = TabularBenchmark(shared_data_file("nb201_cifar10.csv"), space, metric=METRIC)
    assert len(table) == 15_625
    assert round(table.optimum, 2) == 94.37
    assert table.best_key == BEST
    best = space.from_string(BEST)
    assert best in table and table.key(best) == BEST and table.arch(BEST) == best
    assert table.lookup(best) == table.optimum and table.regret(table.optimum) == 0.0
    other = string_to_arch(OTHER)
    assert table.regret(table.lookup(other)) > 0
    assert max(table.values()) == table.optimum and len(table.values()) == 15_625


def test_partial_table_and_a_second_reported_metric(tmp_path) -> None:
    space = NASBench201Space()
    path = write_csv(
        tmp_path / "t.csv",
        [[BEST, "91.5", "94.0"], [OTHER, "80", "79.5"]],
        ("arch", "val", "test"),
    )
    with pytest.raises(TableError, match="has 2 architectures; space 'nb201' has 15625"):
        TabularBenchmark(path, space, metric="val")
    table = TabularBenchmark(path, space, metric="val", report_metric="test", complete=False)
    assert table.optimum == 91.5 and table.best_key == BEST
    assert table.lookup(string_to_arch(OTHER), "test") == 79.5
    missing = string_to_arch(OTHER.replace("skip_connect~0", "nor_conv_1x1~0"))
    assert missing not in table
    with pytest.raises(KeyError, match="has no row"):
        table.lookup(missing)
    with pytest.raises(ValueError, match="metric 'train' was not loaded"):
        table.lookup(missing, "train")


@pytest.mark.parametrize(
    ("rows", "header", "match"),
    [
        ([], ("arch", "acc"), "has no rows"),
        ([[BEST, "90"]], ("key", "acc"), r"no column 'arch'; columns: \['key', 'acc'\]"),
        ([[BEST, "90"], [BEST, "91"]], ("arch", "acc"), "line 3: architecture .* repeats"),
        ([[BEST, "nan"]], ("arch", "acc"), "line 2: acc='nan' is not a finite number"),
        ([[BEST, ""]], ("arch", "acc"), "line 2: acc='' is not a finite number"),
        ([[BEST.replace("skip", "jump"), "90"]], ("arch", "acc"), "line 2: .*unknown op 'jump"),
    ],
)
def test_malformed_tables_are_refused_naming_the_line(tmp_path, rows, header, match) -> None:
    path = write_csv(tmp_path / "bad.csv", rows, header)
    with pytest.raises(TableError, match=match):
        TabularBenchmark(path, NASBench201Space(), metric="acc", complete=False)


def test_non_canonical_keys_and_missing_files_are_refused(tmp_path) -> None:
    space = NASBench201Space()
    path = write_csv(tmp_path / "t.csv", [[f" {BEST}", "90"]])
    with pytest.raises(
        TableError, match=re.escape(f"not canonical; the space writes it {BEST!r}")
    ):
        TabularBenchmark(
            path,
            space,
            metric="acc",
            complete=False,
            from_key=lambda k: space.from_string(k.strip()),
        )
    with pytest.raises(TableError, match=r"nope\.csv' does not exist"):
        TabularBenchmark(tmp_path / "nope.csv", space, metric="acc")
    with pytest.raises(ValueError, match="metric must be a non-empty column name, got ''"):
        TabularBenchmark(path, space, metric="")


def test_spaces_need_key_functions_and_no_hyper_parameters(tmp_path) -> None:
    space = CellSpace(with_hypers=False)  # ops named like NB201's test cell, no to_string
    labels = [c.label for c in space.choices]
    rows = [
        ["/".join(ops), "1"]
        for ops in itertools.islice(itertools.product(*(c.values for c in space.choices)), 3)
    ]
    path = write_csv(tmp_path / "cell.csv", rows)
    with pytest.raises(ValueError, match="space 'test-cell' has no to_string/from_string"):
        TabularBenchmark(path, space, metric="acc")

    def from_key(key: str) -> Arch:
        return space.validate(dict(zip(labels, key.split("/"), strict=True)))

    table = TabularBenchmark(
        path,
        space,
        metric="acc",
        complete=False,
        to_key=lambda a: "/".join(str(a[k]) for k in labels),
        from_key=from_key,
    )
    assert len(table) == 3
    with pytest.raises(ValueError, match=r"hyper-parameters \['batch_size', 'lr'\]"):
        TabularBenchmark(path, CellSpace(), metric="acc")
