"""Dropout that draws one random 64-bit number per four elements.

torch's dropout draws one Bernoulli variate per element; on a CPU those draws are a large part of
a training step's non-matmul time (`python -m benchmarks --profile`). Here every 64-bit random
number is cut into four 16-bit ones, each compared with p * 2^16: a quarter of the draws, the
same expectation (the rate is p rounded to a multiple of 1/65,536: 0.1 -> 0.100006) and the same
seeding (torch's default generator, so `torch.manual_seed` makes it repeatable).

A training run in a thread of its own (the app runs several at once) draws from a generator of
that thread (`thread_generator`), so another run's draws never change its masks: each run stays
the same for its seed whatever runs beside it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch
from torch import Tensor

_LOW, _HIGH = -(2**63), 2**63 - 1
_local = threading.local()


@contextlib.contextmanager
def thread_generator(seed: int) -> Iterator[torch.Generator]:
    """While inside, dropout on the CPU in this thread draws from a generator seeded with `seed`."""
    before = getattr(_local, "generator", None)
    _local.generator = torch.Generator().manual_seed(seed)
    try:
        yield _local.generator
    finally:
        _local.generator = before


def _generator(device) -> torch.Generator | None:
    g = getattr(_local, "generator", None)
    return g if g is not None and torch.device(device or "cpu").type == "cpu" else None


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, device=None) -> Tensor:
    """A bool tensor of `shape`, each element False with probability p (to 1/65,536)."""
    n = 1
    for s in shape:
        n *= s
    draws = torch.randint(_LOW, _HIGH, ((n + 3) // 4,), dtype=torch.int64, device=device, generator=_generator(device))
    cut = -32768 + int(round(p * 65536))
    return draws.view(torch.int16)[:n].view(shape) >= cut


class _Dropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:
        keep = keep_mask(x.shape, p, x.device)
        scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return torch.mul(x, keep).mul_(scale)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (keep,) = ctx.saved_tensors
        return torch.mul(grad, keep).mul_(ctx.scale), None


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout as F.dropout(x, p, training), with a quarter of the random draws."""
    if not training or p <= 0.0:
        return x
    if p >= 1.0:
        return x * 0.0  # zeros that stay in the graph, as F.dropout's
    return _Dropout.apply(x, p)


class Dropout(torch.nn.Module):
    """nn.Dropout with `dropout` above; same state (none) and same repr."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
