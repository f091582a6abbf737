"""bert/dropout.py: inverted dropout from a quarter of the random draws."""

import torch

from bert.dropout import Dropout, dropout, keep_mask


def test_rate_scale_and_gradient():
    torch.manual_seed(0)
    x = torch.randn(300, 1000, requires_grad=True)
    y = dropout(x, 0.1)
    dropped = y == 0
    assert abs(dropped.float().mean().item() - 0.1) < 0.003  # 300,000 draws: sd 0.0005
    assert torch.allclose(y[~dropped], x[~dropped] / 0.9)
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad == 0, dropped) and torch.allclose(x.grad[~dropped], torch.tensor(1 / 0.9))


def test_each_16_bit_slice_is_uniform_and_seeding_repeats():
    torch.manual_seed(1)
    m = keep_mask((4, 250_000), 0.5)  # every 4th element comes from the same 16-bit slice
    for k in range(4):
        assert abs(m.view(-1, 4)[:, k].float().mean().item() - 0.5) < 0.01
    torch.manual_seed(3)
    a = keep_mask((7, 9), 0.3)
    torch.manual_seed(3)
    assert torch.equal(a, keep_mask((7, 9), 0.3))
    assert not torch.equal(a, keep_mask((7, 9), 0.3))


def test_eval_and_edge_rates():
    x = torch.randn(5, 6)
    d = Dropout(0.2).eval()
    assert d(x) is x and dropout(x, 0.0) is x and dropout(x, 0.5, training=False) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))
    assert "p=0.2" in repr(d)
