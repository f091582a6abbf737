"""The data of the offline bertviz views (app/bertviz/views.py): checked, capped and packed.

Attention and queries/keys arrive as per-layer tensors or arrays and leave as one JSON
block that is safe inside a `<script>` element (`script_json`), the arrays as base64
int16 (`pack_int16`). Large inputs are capped (`prepare`): the first `max_tokens` tokens and
at most `max_values` numbers, dropping whole layers evenly spaced but always keeping the
layer asked for; what was cut is said in one sentence for the page.

Dimension letters: L layers, H heads, T tokens, D head size.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def script_json(obj: Any) -> str:
    """JSON that is safe inside an HTML <script> element: no `<`, `>`, `&`, U+2028 or
    U+2029 appear literally (they become \\u escapes, which JSON.parse reads back), so
    no string in it can close the element or open a comment."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch here
        x = x.detach().to("cpu").float().numpy()
    return np.asarray(x, dtype=np.float64)


def stack_layers(per_layer: Any, what: str, last: str) -> np.ndarray:
    """Per-layer arrays -> one (L, H, T, `last`) array.

    Accepts a sequence of L tensors/arrays each (1, H, T, X) or (H, T, X) (what our
    model and transformers return), or one array (L, H, T, X) or (L, 1, H, T, X).
    """
    if isinstance(per_layer, (list, tuple)):
        if not per_layer:
            raise ValueError(f"{what}: no layers given")
        layers = []
        for i, a in enumerate(per_layer):
            a = _to_numpy(a)
            if a.ndim == 4:
                if a.shape[0] != 1:
                    raise ValueError(f"{what}[{i}] has batch size {a.shape[0]}; pass one sequence (batch 1)")
                a = a[0]
            if a.ndim != 3:
                raise ValueError(f"{what}[{i}] must be (1, H, T, {last}) or (H, T, {last}), got {a.shape}")
            layers.append(a)
        try:
            arr = np.stack(layers)
        except ValueError as e:
            raise ValueError(f"{what}: layers differ in shape") from e
    else:
        arr = _to_numpy(per_layer)
        if arr.ndim == 5:
            if arr.shape[1] != 1:
                raise ValueError(f"{what} has batch size {arr.shape[1]}; pass one sequence (batch 1)")
            arr = arr[:, 0]
        if arr.ndim != 4:
            raise ValueError(f"{what} must be (L, H, T, {last}) or a sequence of per-layer arrays, got {arr.shape}")
    return arr


def pack_int16(arr: np.ndarray, scale: int) -> dict:
    """floats -> {shape, scale, data}: data is base64 of round(x * scale) as little-endian
    int16 (fewer characters a value than JSON, and far quicker to write than a JSON list)."""
    ints = np.rint(np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0) * scale)
    ints = np.clip(ints, -32768, 32767).astype("<i2")
    return {"shape": list(arr.shape), "scale": scale, "data": base64.b64encode(ints.tobytes()).decode("ascii")}


def _choose_layers(
    num_layers: int, per_layer_values: int, max_values: int, requested: Sequence[int] | None, focus: int | None
) -> list[int]:
    """The layers to include: `requested` (default all), thinned to fit `max_values`,
    evenly spaced, always keeping `focus` (the layer the page has selected)."""
    if requested is None:
        wanted = list(range(num_layers))
    else:
        wanted = sorted({int(x) for x in requested})
        bad = [x for x in wanted if not 0 <= x < num_layers]
        if bad or not wanted:
            raise ValueError(f"layers must be a non-empty subset of 0..{num_layers - 1}, got {list(requested)}")
    if focus is not None and not 0 <= focus < num_layers:
        raise ValueError(f"layer {focus} is out of range 0..{num_layers - 1}")
    fit = max(1, max_values // max(1, per_layer_values))
    if len(wanted) > fit:
        picks = np.linspace(0, len(wanted) - 1, fit).round().astype(int)
        chosen = sorted({wanted[i] for i in picks})
        if focus is not None and focus not in chosen:
            nearest = min(range(len(chosen)), key=lambda i: abs(chosen[i] - focus))
            chosen[nearest] = focus
            chosen = sorted(set(chosen))
        wanted = chosen
    elif focus is not None and focus not in wanted:
        wanted = sorted(wanted + [focus])
    return wanted


def _capped_message(
    total_tokens: int,
    num_tokens: int,
    num_layers: int,
    layers: list[int],
    requested: Sequence[int] | None,
    b_dropped: bool,
) -> str | None:
    parts = []
    if num_tokens < total_tokens:
        parts.append(f"the first {num_tokens} of {total_tokens} tokens")
    expected = num_layers if requested is None else len(set(requested))
    if len(layers) < expected:
        parts.append(f"{len(layers)} of {num_layers} layers ({', '.join(map(str, layers))})")
    if not parts:
        return None
    msg = "To keep the view light it shows " + " and ".join(parts) + "."
    if b_dropped:
        msg += " Sentence B starts after the cut, so the sentence A/B filter is off."
    return msg


@dataclass
class Prepared:
    tokens: list[str]
    attn: np.ndarray  # (L', H, T', T') the kept layers and tokens
    layers: list[int]
    b_start: int | None
    message: str | None
    total_tokens: int


def prepare(
    tokens: Sequence[str],
    attentions: Any,
    sentence_b_start: int | None,
    layers: Sequence[int] | None,
    max_tokens: int,
    max_values: int,
    focus: int | None,
    extra_per_layer: int = 0,
) -> tuple[Prepared, np.ndarray]:
    tokens = [str(t) for t in tokens]
    attn = stack_layers(attentions, "attentions", "T")  # (L, H, T, T)
    L, H, T, T2 = attn.shape
    if T != T2:
        raise ValueError(f"attention must be square over tokens, got {attn.shape}")
    if len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens but attention covers {T} positions")
    if T == 0:
        raise ValueError("no tokens to show")
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    n = min(T, int(max_tokens))
    b = sentence_b_start
    b_dropped = False
    if b is not None:
        b = int(b)
        if not 0 < b < T:
            raise ValueError(f"sentence_b_start must lie in 1..{T - 1}, got {sentence_b_start}")
        if b >= n:
            b, b_dropped = None, True
    per_layer = H * n * n + extra_per_layer * n
    kept = _choose_layers(L, per_layer, max_values, layers, focus)
    message = _capped_message(T, n, L, kept, layers, b_dropped)
    prepared = Prepared(
        tokens=tokens[:n], attn=attn[kept][:, :, :n, :n], layers=kept, b_start=b, message=message, total_tokens=T
    )
    return prepared, attn
