"""Analytic costs against hand-computed formulas."""

from __future__ import annotations

import pytest
from torch import nn

from nasflow.cost import activation_bytes, count_flops, count_params
from nasflow.cost._analytic import FlopCount


@pytest.mark.parametrize("input_grad", [False, True])
def test_conv1d_flops_match_the_formula(input_grad: bool) -> None:
    b, cin, cout, k, length = 4, 3, 8, 5, 16
    conv = nn.Conv1d(cin, cout, k, padding=k // 2, bias=False)
    fwd = 2 * b * cout * length * cin * k  # 2 FLOPs per multiply-accumulate
    got = count_flops(conv, (b, cin, length), input_requires_grad=input_grad)
    # Backward: the weight gradient costs one forward; the input gradient another.
    assert got == FlopCount(fwd, fwd * (2 if input_grad else 1))
    assert got.total == fwd * (3 if input_grad else 2)


def test_strided_conv2d_flops_use_the_output_size() -> None:
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=False)
    out_hw = 8 * 8  # 16x16 input, stride 2
    fwd = 2 * 2 * 6 * out_hw * 4 * 3 * 3
    assert count_flops(conv, (2, 4, 16, 16)).forward == fwd


@pytest.mark.parametrize("input_grad", [False, True])
def test_linear_flops_match_the_formula(input_grad: bool) -> None:
    b, fin, fout = 4, 10, 6
    got = count_flops(nn.Linear(fin, fout), (b, fin), input_requires_grad=input_grad)
    fwd = 2 * b * fin * fout  # the bias add is element-wise: not counted
    assert got == FlopCount(fwd, fwd * (2 if input_grad else 1))


def test_flops_of_a_network_add_up_and_ignore_elementwise_ops() -> None:
    net = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.BatchNorm1d(20), nn.Linear(20, 3))
    got = count_flops(net, (8, 10))
    first, second = 2 * 8 * 10 * 20, 2 * 8 * 20 * 3
    # The first layer's input needs no gradient; the second's does.
    assert got == FlopCount(first + second, first + 2 * second)


def test_counting_never_touches_the_real_module() -> None:
    net = nn.Linear(5, 5)
    before = net.weight.detach().clone()
    count_flops(net, (2, 5))
    activation_bytes(net, (2, 5))
    assert net.weight.device.type == "cpu" and net.weight.grad is None
    assert (net.weight.detach() == before).all()


def test_params_formula() -> None:
    net = nn.Sequential(nn.Conv1d(3, 8, 5, bias=False), nn.BatchNorm1d(8), nn.Linear(7, 2))
    assert count_params(net) == 3 * 8 * 5 + 2 * 8 + (7 * 2 + 2)


def test_activation_bytes_count_saved_tensors_once_without_weights() -> None:
    # Linear saves its input (4x10 floats); ReLU saves its output (4x6 floats).
    assert activation_bytes(nn.Linear(10, 6), (4, 10)) == 4 * 10 * 4
    assert activation_bytes(nn.Sequential(nn.Linear(10, 6), nn.ReLU()), (4, 10)) == (40 + 24) * 4
    # Conv saves its input, BN its input plus per-channel mean and inverse std, ReLU its
    # output; the running statistics (buffers) and weights are not activations.
    block = nn.Sequential(nn.Conv1d(3, 8, 5, padding=2), nn.BatchNorm1d(8), nn.ReLU())
    assert activation_bytes(block, (4, 3, 16)) == (4 * 3 * 16 + 2 * 4 * 8 * 16 + 2 * 8) * 4


def test_activation_bytes_scale_with_the_batch() -> None:
    net = nn.Sequential(nn.Conv1d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv1d(4, 4, 3, padding=1))
    assert activation_bytes(net, (16, 1, 32)) == 4 * activation_bytes(net, (4, 1, 32))


@pytest.mark.parametrize("shape", [(), (4, 0), (4, -1), (4, 2.5), "abc", None])
def test_bad_shapes_are_refused_naming_them(shape: object) -> None:
    with pytest.raises(ValueError, match="input_shape"):
        count_flops(nn.Identity(), shape)  # type: ignore[arg-type]
