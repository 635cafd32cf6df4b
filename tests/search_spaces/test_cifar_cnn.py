"""The image proving ground's space: 2-D supernet paths equal their extracted networks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nasflow.search_spaces.cifar_cnn import CIFARCNNSpace
from nasflow.supernet import Channels, ElasticBatchNorm2d, ElasticConv2d


@pytest.mark.parametrize("seed", range(4))
def test_supernet_path_equals_the_extracted_and_the_built_network(seed: int) -> None:
    space = CIFARCNNSpace(base_channels=8, image_size=8)
    arch = space.sample(np.random.default_rng(seed))
    torch.manual_seed(seed)
    sn = space.supernet().eval()
    x = torch.randn(4, 3, 8, 8)
    sub = sn.extract(arch).eval()
    torch.testing.assert_close(sn(x, arch), sub(x))
    built = space.build(arch)
    assert sum(p.numel() for p in built.parameters()) == sum(p.numel() for p in sub.parameters())


def test_the_space_has_62500_architectures_and_refuses_bad_ops() -> None:
    assert CIFARCNNSpace().size == 5**6 * 4
    with pytest.raises(ValueError, match="k4_e2"):
        CIFARCNNSpace(ops=("k4_e2",))
    with pytest.raises(ValueError, match="image_size"):
        CIFARCNNSpace(image_size=1)


def test_elastic_2d_layers_slice_their_widest_weights() -> None:
    ch = Channels.scaled("w", 8, (0.5, 1.0))
    conv, bn = ElasticConv2d(Channels.fixed(3), ch, 3), ElasticBatchNorm2d(ch).eval()
    x = torch.randn(2, 3, 5, 5)
    narrow = conv(x, {"w": 0.5})
    assert narrow.shape == (2, 4, 5, 5)
    torch.testing.assert_close(narrow, conv(x, {"w": 1.0})[:, :4])
    torch.testing.assert_close(bn(narrow, {"w": 0.5}), bn.extract({"w": 0.5}).eval()(narrow))
    dw = ElasticConv2d(ch, ch, 3, groups="depthwise")
    y = torch.randn(2, 8, 5, 5)
    torch.testing.assert_close(dw(y[:, :4], {"w": 0.5}), dw.extract({"w": 0.5})(y[:, :4]))
    with pytest.raises(ValueError, match="depthwise"):
        ElasticConv2d(Channels.fixed(3), ch, 3, groups="depthwise")
