"""Reading a weights file safely: safetensors, or `torch.load(weights_only=True)`; a pickle that
would run code, or anything that is not a dictionary of tensors, is refused with CheckpointError."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from ..errors import CheckpointError


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Read a weights file safely; anything that is not plain tensors is refused."""
    path = Path(path)
    if path.suffix == ".safetensors":
        try:
            return load_file(str(path), device="cpu")
        except (SafetensorError, OSError, ValueError, RuntimeError) as e:
            raise CheckpointError(
                f"{path.name} is not a readable safetensors file (truncated or corrupt?): {e}"
            ) from None
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        # torch's own message advises weights_only=False (running the file's code): not for us
        m = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\. |\n\n|$)", str(e), re.S)
        detail = (m.group(1) if m else str(e)).strip().replace("\n", " ")[:160]
        raise CheckpointError(
            f"{path.name} was refused: it is not a plain file of tensors (it holds other Python "
            f"objects, which could run code if loaded, or it is not a weights file at all). Nothing "
            f"in it was run. Save the weights as safetensors. ({detail})"
        ) from None
    except Exception as e:  # zip errors, EOF, garbage bytes
        raise CheckpointError(
            f"{path.name} is not a readable PyTorch weights file: {type(e).__name__}: {str(e)[:200]}"
        ) from None
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(f"{path.name} does not hold a dictionary of tensors")
    return obj
