"""Lesson 5's two per-token steps: what a tagger's head and a reader's head give for one example.
A model that wears the head shows its own scores; any other shows a fresh head's (seeded) on its
encoder's vectors: the shape of the output, random until trained."""

from __future__ import annotations

import torch

from bert.answering import windows
from bert.tagging import first_pieces, text_words

from ..figures.task_heads import span_probs, tag_heatmap

SENTENCE = "Ada Lovelace met Charles Babbage in London."
QUESTION = "Where did Ada meet Charles?"
PASSAGE = "Ada Lovelace met Charles Babbage in London in 1833, at a party."
FRESH_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _fresh_scores(bundle, h: torch.Tensor, k: int) -> torch.Tensor:
    """(T, k) scores of a freshly initialised linear head (BERT's initialisation, seed 0) on vectors h."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(k, h.shape[-1], generator=g) * bundle.config.initializer_range
    return h @ w.T


@torch.inference_mode()
def tag_scores(bundle):
    """Each word's first piece: the probability of every tag."""
    enc = bundle.tokenizer.encode(SENTENCE, max_length=bundle.config.max_tokens)
    ids = torch.tensor([enc.ids])
    if bundle.is_tagger:
        probs, tags = bundle.model(ids).probs[0], bundle.labels
    else:
        h = bundle.model.bert(ids).last_hidden_state[0]
        probs, tags = torch.softmax(_fresh_scores(bundle, h, len(FRESH_TAGS)), -1), FRESH_TAGS
    firsts = first_pieces(enc, text_words(enc))
    rows = [enc.tokens[p] for p in firsts]
    return tag_heatmap(rows, tags, probs[firsts].float().numpy())


@torch.inference_mode()
def span_scores(bundle):
    """Every passage token's probability of starting and of ending the answer."""
    w = windows(bundle.tokenizer, QUESTION, PASSAGE, min(128, bundle.config.max_tokens))[0]
    ids, types = torch.tensor([w.enc.ids]), torch.tensor([w.enc.type_ids])
    if bundle.is_reader:
        out = bundle.model(ids, types)
        start, end = out.start_logits[0], out.end_logits[0]
    else:
        start, end = _fresh_scores(bundle, bundle.model.bert(ids, types).last_hidden_state[0], 2).unbind(-1)
    lo, hi = w.context_start, w.context_start + w.n
    return span_probs(
        w.enc.tokens[lo:hi],
        torch.softmax(start[lo:hi].float(), -1).tolist(),
        torch.softmax(end[lo:hi].float(), -1).tolist(),
    )
