"""What every analysis shares: encoding one input, padding a batch, checking arguments, and
running the encoder layers by hand (for gradients and ablations without hooks).

Dimension letters: L layers, H heads, T tokens, C hidden size, B batch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from ..attention_masks import CAUSAL, trained_mask_kind
from ..errors import InputError
from ..outputs import BertOutput
from ..tokenizer.vocab import CLS_TOKEN, PAD_TOKEN, SEP_TOKEN

# The tokens the tokenizer adds around a text or pads with (a typed [MASK] or an [UNK] stands for a word).
ADDED_TOKENS = (CLS_TOKEN, SEP_TOKEN, PAD_TOKEN)
# The family's own special tokens (RoBERTa's, ALBERT's padding) under BERT's names, for what
# classifies tokens by their role (head patterns, what an explanation leaves out)
FAMILY_SPECIALS = {"<s>": CLS_TOKEN, "</s>": SEP_TOKEN, "<pad>": PAD_TOKEN, "<mask>": "[MASK]", "<unk>": "[UNK]"}


def bare_word(token: str) -> str:
    """A token as the text it spells: without WordPiece's "##" nor the marks of a word's start of
    RoBERTa ("Ġ") and ALBERT ("▁")."""
    return token[2:] if token.startswith("##") else token.lstrip("Ġ▁")


def bert_names(tokens) -> list[str]:
    """`tokens` with the family's special tokens written as BERT's ([CLS], [SEP], ...)."""
    return [FAMILY_SPECIALS.get(t, t) for t in tokens]


NO_TOKENS = "The text gave no tokens at all (only spaces or control characters?). Type some words."


def encode(bundle, text_a: str, text_b: str | None = None):
    """The Encoding of one input, cut at the model's maximum length; refuses an input that
    gives no tokens at all (an InputError with a message)."""
    enc = bundle.tokenizer.encode(text_a, text_b or None, max_length=bundle.config.max_tokens)
    if not any(s is not None for s in enc.sequence_ids):
        raise InputError(NO_TOKENS)
    return enc


def encode_tensors(bundle, text: str, text_b: str | None = None):
    """Encoding and (1, T) id / segment tensors for one input."""
    enc = encode(bundle, text, text_b)
    ids = torch.tensor([enc.ids], dtype=torch.long)  # (1, T)
    types = torch.tensor([enc.type_ids], dtype=torch.long)  # (1, T)
    return enc, ids, types


def pad_tensors(encs, tokenizer):
    """Right-pad encodings (tokenizer.pad) into (B, T) ids, segments and attention mask."""
    b = tokenizer.pad(encs)
    return tuple(torch.tensor(b[k], dtype=torch.long) for k in ("input_ids", "token_type_ids", "attention_mask"))


def readonly(t: Tensor | np.ndarray, decimals: int | None = None) -> np.ndarray:
    """A contiguous read-only float32 array (results may be shared by every session)."""
    a = t.detach().float().cpu().numpy() if isinstance(t, Tensor) else np.asarray(t)
    if decimals is not None:
        a = np.round(a, decimals)
    a = np.ascontiguousarray(a, dtype=np.float32)
    a.setflags(write=False)
    return a


def left_to_right_refusal(bundle, what: str) -> str | None:
    """Why `what` (a view that reads a text both ways with BERT's heads: a gap's guesses, the
    next-sentence answer, the cloze set) means nothing on this model, or None when it does: a
    next-word model's head guesses the token AFTER each position and its next-sentence head was
    never trained. The one rule every page and analysis asks."""
    if not bundle.has_mlm or trained_mask_kind(bundle.config) != CAUSAL:
        return None
    return (
        f"{what} reads a text both ways with BERT's heads, and {bundle.name} was trained on the next word, "
        "reading left to right: its head guesses the token after each position (not the word in a gap) and "
        "its next-sentence head was never trained, so the answer would mean nothing. Continue a text with it "
        "on the Pre-training page, or pick a BERT in the sidebar."
    )


def need_mlm(bundle, what: str) -> None:
    """A model whose heads fill gaps (and say whether B follows A): not a classifier, not a next-word model."""
    if not bundle.has_mlm:
        raise InputError(
            f"{what} needs a masked-language-model head, and {bundle.name} has none (it was trained to "
            f"{getattr(getattr(bundle, 'head', None), 'task', 'do another task')}); pick a pre-training model"
        )
    why = left_to_right_refusal(bundle, what)
    if why:
        raise InputError(why)


def need_classifier(bundle, what: str) -> None:
    if not bundle.is_classifier:
        raise InputError(f"{what} needs a fine-tuned classifier, and {bundle.name} is not one")


def mask_positions(enc, tokenizer, positions=None) -> list[int]:
    """The given positions (checked), or every [MASK] in the input."""
    T = len(enc.ids)
    if positions is None:
        found = [i for i, t in enumerate(enc.ids) if t == tokenizer.mask_id]
        if not found:
            raise InputError(
                "there is no [MASK] in the text (or it was cut off at the model's "
                "maximum length): write [MASK] where the model should guess a word "
                "(e.g. 'She opened the [MASK] and walked in.')"
            )
        return found
    if isinstance(positions, (int, np.integer)):
        positions = [int(positions)]
    out = []
    for p in positions:
        p = int(p)
        if not 0 <= p < T:
            raise InputError(f"position {p} is outside the {T} tokens of the input")
        out.append(p)
    if not out:
        raise InputError("no positions given")
    return out


def as_head_mask(bundle, head_mask) -> Tensor:
    """(L, H) float tensor of head weights (1 = on, 0 = off), shape checked."""
    L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
    m = torch.as_tensor(np.asarray(head_mask, dtype=np.float32))
    if tuple(m.shape) != (L, H):
        raise InputError(
            f"head_mask must have one entry per head: shape (layers, heads) = ({L}, {H}), got {tuple(m.shape)}"
        )
    return m


def as_attention(attentions) -> np.ndarray:
    """(L, H, T, T) float64 from a tensor/array, or from the model's tuple of L (1, H, T, T)."""
    if isinstance(attentions, (tuple, list)):
        attentions = [a.detach().float().cpu().numpy() if isinstance(a, Tensor) else np.asarray(a) for a in attentions]
        attentions = np.stack([a[0] if a.ndim == 4 else a for a in attentions])
    elif isinstance(attentions, Tensor):
        attentions = attentions.detach().float().cpu().numpy()
    a = np.asarray(attentions, dtype=np.float64)
    if a.ndim == 5 and a.shape[1] == 1:  # (L, 1, H, T, T): a batch of one
        a = a[:, 0]
    if a.ndim == 2:  # one head (T, T)
        a = a[None, None]
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise InputError(f"attention must be (layers, heads, tokens, tokens), got {a.shape}")
    return a


def run_layers(
    bert_model, x: Tensor, layers: range | None = None, head_mask: Tensor | None = None, need_weights: bool = False
):
    """Run encoder layers by hand from hidden state `x` (B, T, C), no padding mask.

    Returns the final state, the list of states after each layer and the attentions (or [])."""
    layers = range(len(bert_model.layers)) if layers is None else layers
    states, atts = [], []
    for i in layers:
        hm = head_mask[i] if head_mask is not None else None
        x, probs, _ = bert_model.layers[i](x, None, need_weights, hm)
        states.append(x)
        if need_weights:
            atts.append(probs)
    return x, states, atts


def classifier_logits(model, h: Tensor) -> Tensor:
    """The classifier head on final hidden states h (B, T, C) with no padding -> (B, K)."""
    pooled = torch.tanh(model.bert.pooler(h[:, 0]))  # (B, C)
    out = BertOutput(last_hidden_state=h, pooler_output=pooled)
    return model.classifier(model.dropout(model.pool(out, None)))


def token_id(tokenizer, target) -> int:
    """The vocabulary id of a token given as an id or a string that is one token."""
    if isinstance(target, (int, np.integer)):
        if not 0 <= int(target) < len(tokenizer.ids_to_tokens):
            raise InputError(f"token id {target} is not in the vocabulary")
        return int(target)
    t = str(target).strip()
    if t in tokenizer.vocab:
        return tokenizer.vocab[t]
    pieces = tokenizer.tokenize(t)
    if len(pieces) != 1 or pieces[0] == tokenizer.unk_token:
        raise InputError(f"{target!r} is not a single token of this vocabulary (it splits into {pieces})")
    return tokenizer.vocab[pieces[0]]


def class_index(bundle, c) -> int:
    """The index of a class given as a label or an index."""
    labels = bundle.labels
    if isinstance(c, str):
        if c not in labels:
            raise InputError(f"unknown class {c!r}; classes: {', '.join(labels)}")
        return labels.index(c)
    if not 0 <= int(c) < len(labels):
        raise InputError(f"class index {c} is outside 0..{len(labels) - 1}")
    return int(c)
