"""Greedy decoding: the encoder reads the source once, then the decoder runs on its own output so
far and appends its most likely next token, until [SEP] (end) or `max_new` tokens.

Each step re-runs the decoder on the whole prefix (no key/value cache): toy outputs are short, and
the causal mask makes step t's attention rows the same as row t of one pass over the final output,
which is how `trace` draws every step (bert/seq2seq/decoder.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .model import EncoderDecoder


@torch.inference_mode()
@torch.inference_mode()
def greedy(model: EncoderDecoder, input_ids: Tensor, attention_mask: Tensor | None, max_new: int) -> list[list[int]]:
    """input_ids (B, S) -> each row's generated ids, without the start token and without [SEP]
    (under inference mode: no graph is kept of the logits it reads)."""
    model.eval()
    B = input_ids.shape[0]
    encoded = model.encode(input_ids, attention_mask)
    out = torch.full((B, 1), model.start_id, dtype=torch.long, device=input_ids.device)
    done = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
    limit = min(max_new, model.decoder_config.max_tokens - 1)
    for _ in range(limit):
        logits = model(input_ids, attention_mask, decoder_input_ids=out, encoded=encoded).logits  # (B, t, V)
        nxt = logits[:, -1].argmax(-1).masked_fill(done, model.pad_id)  # (B,)
        out = torch.cat([out, nxt[:, None]], dim=1)
        done |= nxt == model.eos_id
        if bool(done.all()):
            break
    rows = []
    for r in out[:, 1:].tolist():
        rows.append(r[: r.index(model.eos_id)] if model.eos_id in r else r)
    return rows


@dataclass
class Trace:
    """One greedy decoding with its attention: row t of each matrix is step t."""

    source: list[str]  # the encoder's tokens, [CLS] ... [SEP] (S)
    inputs: list[str]  # what the decoder read at each step: the start token, then its outputs (T)
    outputs: list[str]  # what it wrote at each step (T; the last is [SEP] unless it ran out)
    probs: list[float]  # the probability of each written token
    cross: Tensor  # (L, H, T, S)
    selfs: Tensor  # (L, H, T, T)
    unknown: list[str]  # the typed words read as [UNK] (not in the vocabulary), each once, in order


@torch.inference_mode()
def trace(model: EncoderDecoder, tokenizer, text: str, max_new: int = 48) -> Trace:
    """Decode `text` greedily, then one pass over the output for each step's attention."""
    enc = tokenizer.encode(text, max_length=model.config.max_tokens)
    ids = torch.tensor([enc.ids])
    (gen,) = greedy(model, ids, None, max_new)
    dec = [model.start_id, *gen]
    ended = len(dec) <= model.decoder_config.max_tokens - 1 and len(gen) < max_new
    written = [*gen, model.eos_id] if ended else gen
    dec = dec[: len(written)]
    out = model(ids, decoder_input_ids=torch.tensor([dec]), output_attentions=True)
    p = torch.softmax(out.logits[0].float(), -1)  # (T, V)
    probs = [float(p[t, w]) for t, w in enumerate(written)]
    unknown: list[str] = []
    for i, (a, b) in zip(enc.ids, enc.offsets, strict=True):
        if i == tokenizer.unk_id and b > a and text[a:b] not in unknown:
            unknown.append(text[a:b])
    return Trace(
        source=tokenizer.convert_ids_to_tokens(enc.ids),
        inputs=tokenizer.convert_ids_to_tokens(dec),
        outputs=tokenizer.convert_ids_to_tokens(written),
        probs=probs,
        cross=torch.stack([a[0] for a in out.cross_attentions]).float(),
        selfs=torch.stack([a[0] for a in out.decoder_attentions]).float(),
        unknown=unknown,
    )
