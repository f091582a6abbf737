"""Tags for every word: a token-classification bundle read at each word's first piece.

A word split into several pieces ("unaffable" -> un ##aff ##able) gets the tag of its FIRST
piece; the other pieces' scores are never read (in training their labels are -100, ignored by
the loss). A word is a span of characters: the tokenizer's words (split at spaces and
punctuation) for a typed text, or the given words of a tagged file, joined by single spaces. A
word's attention is read from its first piece too, to the sum of each word's pieces.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .errors import InputError
from .tokenizer.tokenizer import Encoding

IGNORED = -100  # a label no loss reads: specials, a word's later pieces, padding


class TaggedWord(NamedTuple):
    word: str
    tag: str
    prob: float  # the model's probability of that tag at the word's first piece


def join_words(words: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """The words as one text (joined by a space) and each word's (start, end) in it."""
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    return " ".join(words), spans


def first_pieces(enc: Encoding, spans: list[tuple[int, int]]) -> list[int | None]:
    """For each word span, the index of its first piece in `enc` (None when the tokenizer made no
    piece of it, or it was cut by max_length). Pieces of the second text of a pair are not read."""
    starts = [(s, i) for i, ((s, e), seq) in enumerate(zip(enc.offsets, enc.sequence_ids)) if seq == 0 and e > s]
    out: list[int | None] = []
    k = 0
    for a, b in spans:
        while k < len(starts) and starts[k][0] < a:
            k += 1
        out.append(starts[k][1] if k < len(starts) and starts[k][0] < b else None)
    return out


def text_words(enc: Encoding) -> list[tuple[int, int]]:
    """The (start, end) of every word of a typed text's encoding: its pieces grouped by word id."""
    spans: dict[int, list[int]] = {}
    for (s, e), w, seq in zip(enc.offsets, enc.word_ids, enc.sequence_ids):
        if seq == 0 and w is not None:
            span = spans.setdefault(w, [s, e])
            span[0], span[1] = min(span[0], s), max(span[1], e)
    return [tuple(spans[w]) for w in sorted(spans)]


def word_labels(enc: Encoding, firsts: list[int | None], tags: list[int]) -> list[int]:
    """One label per token: the word's tag on its first piece, IGNORED everywhere else."""
    labels = [IGNORED] * len(enc.ids)
    for pos, tag in zip(firsts, tags):
        if pos is not None:
            labels[pos] = tag
    return labels


def pad_inputs(rows: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """The model's three inputs for (ids, type ids) rows of different lengths, padded to the longest."""
    T = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), T), dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.long)
    for i, (row, row_types) in enumerate(rows):
        n = len(row)
        ids[i, :n] = torch.tensor(row)
        types[i, :n] = torch.tensor(row_types)
        mask[i, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


def _encode_whole(tok, text: str, limit: int, number: int = 1) -> Encoding:
    enc = tok.encode(text, max_length=limit)
    if enc.truncated:
        raise InputError(f"text {number} is longer than this model's {limit} tokens: split it into sentences")
    return enc


@torch.inference_mode()
def tag_texts(bundle, texts: list[str], batch_size: int = 16) -> list[list[TaggedWord]]:
    """Per text, per word: (word as typed, its tag, that tag's probability) at its first piece.
    A text longer than the model's window is refused (InputError): split it into sentences."""
    if not bundle.is_tagger:
        raise InputError(f"{bundle.name} is not a fine-tuned tagger")
    if isinstance(texts, str):
        texts = [texts]
    tok, limit = bundle.tokenizer, bundle.config.max_tokens
    labels = bundle.labels
    bundle.model.eval()
    out: list[list[TaggedWord]] = []
    for i in range(0, len(texts), batch_size):
        chunk = texts[i : i + batch_size]
        encs = [_encode_whole(tok, t, limit, i + n + 1) for n, t in enumerate(chunk)]
        probs = bundle.model(**pad_inputs([(e.ids, e.type_ids) for e in encs], tok.pad_id)).probs  # (B, T, K)
        for text, enc, p in zip(chunk, encs, probs):
            spans = text_words(enc)
            row = []
            for (s, e), pos in zip(spans, first_pieces(enc, spans)):
                best = int(p[pos].argmax())
                row.append(TaggedWord(text[s:e], labels[best], float(p[pos, best])))
            out.append(row)
    return out


class WordAttention(NamedTuple):
    words: list[str]  # the text's words as typed
    labels: list[str]  # what a word looks at: "[CLS]", the words, "[SEP]"
    weights: torch.Tensor  # (L, H, W, W + 2): row w from word w's first piece; rows sum to 1


@torch.inference_mode()
def word_attention(bundle, text: str) -> WordAttention:
    """Every head's attention of a typed text read by word: FROM each word's first piece (where its
    tag is read) TO [CLS], each word (the sum over its pieces) and [SEP]."""
    tok = bundle.tokenizer
    enc = _encode_whole(tok, text, bundle.config.max_tokens)
    spans = text_words(enc)
    firsts = first_pieces(enc, spans)
    if not spans or None in firsts:
        raise InputError("type a sentence with at least one word")
    rank = {w: k for k, w in enumerate(sorted({w for w, q in zip(enc.word_ids, enc.sequence_ids) if q == 0}))}
    group = torch.zeros(len(enc.ids), len(spans) + 2)  # (T, W + 2): which column each token adds to
    for i, (w, seq) in enumerate(zip(enc.word_ids, enc.sequence_ids)):
        group[i, 1 + rank[w] if seq == 0 else (0 if i == 0 else len(spans) + 1)] = 1.0
    bundle.model.eval()
    out = bundle.model.bert(**pad_inputs([(enc.ids, enc.type_ids)], tok.pad_id), output_attentions=True)
    att = torch.stack(out.attentions, 1)[0].float()  # (L, H, T, T)
    weights = att[:, :, firsts, :] @ group
    return WordAttention([text[s:e] for s, e in spans], ["[CLS]", *(text[s:e] for s, e in spans), "[SEP]"], weights)
