"""The shape pass of the cost model runs spaces whose ops modify tensors in place."""

from __future__ import annotations

from torch import nn

from nasflow.cost import CostModel
from nasflow.space import SearchSpace, op_choice
from nasflow.supernet import LayerChoice, Supernet, SuperSequential


class _InPlaceSpace(SearchSpace):
    """Conv -> BatchNorm -> ReLU(inplace=True), as torchvision's blocks are built."""

    def __init__(self) -> None:
        super().__init__(
            [op_choice("l", ["k1", "k3"])], name="inplace", config={"input_shape": [1, 8]}
        )

    def supernet(self) -> Supernet:
        def block(k: int) -> nn.Module:
            conv = nn.Conv1d(1, 4, k, padding=k // 2)
            return nn.Sequential(conv, nn.BatchNorm1d(4), nn.ReLU(inplace=True))

        choice = LayerChoice("l", {"k1": block(1), "k3": block(3)})
        return Supernet(self, SuperSequential(choice, nn.Flatten(), nn.Linear(32, 3)))


def test_in_place_activation_after_batch_norm_is_traced(tmp_path) -> None:
    model = CostModel.for_space(
        _InPlaceSpace(), batch_size=4, storage_url=str(tmp_path / "cost.db")
    )
    for op in ("k1", "k3"):
        units = model.units({"l": op})
        assert units, op
        assert any("ReLU(inplace=True)" in u.signature for u in units)
    assert model.params({"l": "k3"}) == 4 * 3 + 4 + 4 + 4 + 32 * 3 + 3
