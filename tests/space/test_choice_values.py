"""A choice's values are a list of distinct JSON scalars: a string is not a list, and
values equal in Python (``1``, ``1.0``, ``True``) are one value."""

from __future__ import annotations

import pytest

from nasflow.space import op_choice, value_choice
from nasflow.space._choices import Choice


@pytest.mark.parametrize("values", ["abc", b"abc", {"a": 1}, 3, None])
def test_values_that_are_not_a_list_are_refused(values) -> None:
    with pytest.raises(ValueError, match=r"choice 'x' needs a list of values, got .*not a list"):
        op_choice("x", values)


@pytest.mark.parametrize(
    ("values", "dup"),
    [([1, 1.0], "1.0"), ([0.5, 1, 1.0], "1.0"), ([2.0, 2], "2"), ([0, False], "False")],
)
def test_values_equal_in_python_are_duplicates(values, dup) -> None:
    with pytest.raises(ValueError, match=rf"choice 'w' has duplicate value {dup} \(equal to"):
        value_choice("w", values)


def test_distinct_values_are_kept_in_order() -> None:
    assert value_choice("w", [0.5, 1, 2.0, "1", None]).values == (0.5, 1, 2.0, "1", None)
    assert op_choice("x", ("a", "b")).values == ("a", "b")
    assert Choice("g", (x for x in ("p", "q"))).values == ("p", "q")
