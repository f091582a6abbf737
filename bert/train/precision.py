"""The arithmetic a training job runs in: `precision="auto" | "fp32" | "bf16"` in every trainer's args.

    resolve_precision("auto", torch.device("cpu"))   # "bf16" where torch reports bf16 (AMX / AVX-512 BF16), else "fp32"
    with autocast(device, "bf16"):
        out = model(...)                              # matmuls in bf16; parameters and optimizer state stay fp32

`auto` is bf16 on a CUDA GPU that has it and on a CPU where torch reports bf16 support (oneDNN:
AMX or AVX-512 BF16), fp32 elsewhere (Apple's MPS included). The answer is torch's, asked once a
process (`cpu_has_bf16`), never read from /proc. `bf16` on a machine without it is a TrainingError
that says why. Under bf16 only the forward (and the backward through it) changes: the parameters
are fp32 master weights, the optimizer's state is fp32, losses are taken from fp32 logits and
softmax statistics stay fp32 (autocast's rules); saved files are written as before.

The server's value is the setting BERT_EXPLORER_PRECISION (`server_precision`); a job carries the
resolved value ("fp32" or "bf16") in its args, so its card says which.
"""

from __future__ import annotations

import contextlib
import functools

import torch
from torch import Tensor, nn

from .. import settings
from ..errors import TrainingError

PRECISIONS = ("auto", "fp32", "bf16")
SETTING = "BERT_EXPLORER_PRECISION"


@functools.cache
def cpu_has_bf16() -> bool:
    """Torch's report: this CPU runs bf16 matmuls natively (oneDNN with AMX or AVX-512 BF16)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def has_bf16(device: torch.device) -> bool:
    """Whether `device` runs bf16 natively (MPS: not counted, its autocast is fp16)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return device.type == "cpu" and cpu_has_bf16()


def resolve_precision(name: str | None, device: torch.device) -> str:
    """ "fp32" or "bf16" for a name of PRECISIONS on `device`; TrainingError for another name, or
    bf16 asked for where the processor lacks it."""
    key = (name or "auto").strip().lower()
    if key not in PRECISIONS:
        raise TrainingError(f"unknown precision {name!r}: choose one of {', '.join(PRECISIONS)}")
    if key == "auto":
        return "bf16" if has_bf16(device) else "fp32"
    if key == "bf16" and not has_bf16(device):
        where = "this CPU" if device.type == "cpu" else f"this {device.type} device"
        raise TrainingError(
            f"bf16 was asked for but {where} has no native bf16 arithmetic (torch reports none: no AMX or "
            f"AVX-512 BF16); set {SETTING}=auto or fp32"
        )
    return key


def setting_precision() -> str:
    """The setting BERT_EXPLORER_PRECISION as written ("auto" when unset): what the server's jobs
    and the command line's training commands run in unless told otherwise."""
    return settings.text(SETTING) or "auto"


def server_precision(device: str | None = None) -> str:
    """This server's training precision, "fp32" or "bf16": the setting resolved on `device` (None:
    the setting BERT_EXPLORER_DEVICE's) from torch's report (asked once a process); TrainingError
    when it cannot be."""
    from .device import resolve_device, server_device

    device = device or server_device()
    return resolve_precision(setting_precision(), resolve_device(device))


def autocast(device: torch.device, precision: str):
    """bf16 autocast on `device` for precision "bf16" (the parameters stay fp32); a no-op for "fp32"."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def analysis_autocast(precision: str, device: torch.device | None = None):
    """autocast for an analysis's forward passes (probes' vectors, scoring, patching) in `precision`
    ("fp32", the default of every analysis: none; "bf16"; "auto"), resolved as a training job's, on
    the CPU unless `device`. One context around all of an analysis's passes: autocast then casts each
    weight once, not once a pass."""
    device = device or torch.device("cpu")
    return autocast(device, resolve_precision(precision, device))


def bf16_copies(model: nn.Module, frozen_only: bool) -> dict[str, Tensor]:
    """bf16 copies of the weights and biases of `model`'s Linear layers (`frozen_only`: of those
    that do not train), by parameter name, for `call_with`. Made once, they spare autocast casting
    the same fp32 weights again at every step (a frozen weight) or every batch (evaluation): it keeps
    a cast only of a weight that trains, and only until the step ends."""
    return {
        f"{name}.{key}" if name else key: p.detach().to(torch.bfloat16)
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear)
        for key, p in module.named_parameters(recurse=False)
        if not (frozen_only and p.requires_grad)
    }


def call_with(model: nn.Module, weights: dict[str, Tensor], *args, method: str = "", **kwargs):
    """model(*args, **kwargs) with `weights` (parameter name -> tensor, e.g. `bf16_copies`) in place
    of its own for this call only; the model's own parameters are back afterwards. `method`: a
    method of the model's to call instead, by its dotted path ("bert.run", "classify_from")."""
    if method:
        model, weights = _Method(model, method), {f"inner.{k}": v for k, v in weights.items()}
    if not weights:
        return model(*args, **kwargs)
    return torch.func.functional_call(model, weights, args, kwargs, strict=False)


class _Method(nn.Module):
    """A module whose forward is a method of `inner` (a dotted path), for `call_with`."""

    def __init__(self, inner: nn.Module, path: str):
        super().__init__()
        self.inner, self.path = inner, path

    def forward(self, *args, **kwargs):
        return functools.reduce(getattr, self.path.split("."), self.inner)(*args, **kwargs)


def nonfinite_advice(precision: str) -> str:
    """What a run that stopped on a non-finite loss adds to its message: under bf16, how to rerun
    it in fp32 ("" under fp32)."""
    if precision != "bf16":
        return ""
    return (
        f" It ran in bf16 (about 3 significant digits): to rerun it in fp32, set {SETTING}=fp32 "
        f"(or pass precision=fp32)."
    )
