"""Optimiser and learning-rate schedule shared by pre-training and fine-tuning."""

from __future__ import annotations

import torch
from torch import nn


def adamw(
    model: nn.Module,
    lr: float,
    weight_decay: float = 0.01,
    lr_scale: dict[str, float] | None = None,
    fused: bool = False,
) -> torch.optim.AdamW:
    """AdamW as BERT uses it: no weight decay on biases and LayerNorm weights.

    lr_scale maps a parameter-name prefix to a multiplier (e.g. {"mlm.": 5.0} for a fresh head).
    fused: torch's one-kernel AdamW (several times faster on a CPU, equal to rounding); bf16 runs use
    it, fp32 runs keep the per-parameter loop their reference figures were made with.
    """
    groups: dict[tuple[float, float], list] = {}
    seen = set()
    for name, p in model.named_parameters():
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        decay = 0.0 if (p.dim() < 2 or "norm" in name.lower()) else weight_decay
        scale = 1.0
        for prefix, s in (lr_scale or {}).items():
            if name.startswith(prefix):
                scale = s
        groups.setdefault((decay, scale), []).append(p)
    params = [{"params": ps, "weight_decay": d, "lr": lr * s, "lr_scale": s} for (d, s), ps in groups.items()]
    return torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-6, fused=fused or None)


def lr_at(step: int, base_lr: float, warmup: int, total: int) -> float:
    """Linear warm-up to base_lr, then linear decay to 0 at `total` steps."""
    if warmup > 0 and step < warmup:
        return base_lr * (step + 1) / warmup
    if total <= warmup:
        return base_lr
    return base_lr * max(0.0, (total - step) / (total - warmup))


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    for g in opt.param_groups:
        g["lr"] = lr * g.get("lr_scale", 1.0)
