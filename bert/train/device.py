"""Where training runs: `device="auto" | "cpu" | "cuda" | "mps"` in PretrainArgs and FinetuneArgs.

    resolve_device("auto")   # cuda if there is a CUDA GPU, else mps (Apple), else cpu

Which arithmetic runs there (fp32 or bf16 autocast) is bert/train/precision.py. Saved files are
always written from CPU tensors (`cpu_bundle`, `to_cpu`), so a model trained on a GPU loads anywhere.
"""

from __future__ import annotations

import copy
import dataclasses

import torch
from torch import nn

from .. import settings
from ..errors import TrainingError

DEVICES = ("auto", "cpu", "cuda", "mps")


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def server_device() -> str:
    """This server's training device, a name of DEVICES: the setting BERT_EXPLORER_DEVICE ("auto" unset)."""
    return settings.text("BERT_EXPLORER_DEVICE") or "auto"


def resolve_device(name: str | None = "auto") -> torch.device:
    """The torch.device for a name of DEVICES; TrainingError for another name or a device this
    machine lacks."""
    key = (name or "auto").strip().lower()
    if key not in DEVICES:
        raise TrainingError(f"unknown device {name!r}: choose one of {', '.join(DEVICES)}")
    if key == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if mps_available() else "cpu")
    if key == "cuda" and not torch.cuda.is_available():
        raise TrainingError("cuda was asked for but this machine has no CUDA GPU")
    if key == "mps" and not mps_available():
        raise TrainingError("mps was asked for but this machine has no Apple GPU (MPS)")
    return torch.device(key)


def module_device(model: nn.Module) -> torch.device:
    """The device of a model's parameters (cpu for one without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """The batch's tensors on `device` (the same tensors where they already are)."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def to_cpu(obj):
    """`obj` (a tensor, or dicts and lists of them, e.g. an optimizer's state_dict) with every tensor
    on the CPU; CPU tensors are kept as they are."""
    if isinstance(obj, torch.Tensor):
        return obj.cpu()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def cpu_bundle(bundle):
    """`bundle` itself when its model is on the CPU; else a copy whose model holds CPU copies of the
    weights (tied weights stay tied), for writing it to disk. Draws no random numbers."""
    model = bundle.model
    if module_device(model).type == "cpu":
        return bundle
    memo = {}
    for t in [*model.parameters(), *model.buffers()]:
        cpu = t.detach().cpu()
        memo[id(t)] = nn.Parameter(cpu, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else cpu
    return dataclasses.replace(bundle, model=copy.deepcopy(model, memo))
