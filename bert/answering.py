"""Answers found in a passage: a question-answering bundle's start and end scores read as a span.

The input is [CLS] question [SEP] passage-window [SEP]. A passage longer than the window is read
in overlapping windows (`stride` tokens shared by consecutive windows, as transformers' stride):
every window gets its best span and the best of them wins. A span is SQuAD's usual rule: both ends
in the passage, start <= end, at most MAX_ANSWER_TOKENS (30) tokens, score = start logit + end
logit. With `allow_none` (a model trained on SQuAD 2.0's unanswerable questions), "no answer" wins
when [CLS]'s start + end score beats every span's in every window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .errors import InputError
from .tagging import pad_inputs
from .tokenizer.tokenizer import Encoding

MAX_ANSWER_TOKENS = 30
MAX_QUESTION_TOKENS = 64
# A passage is read whole, one window after another: its cost grows with its length, so a longer one
# is refused before it is tokenized (100,000 characters is a long chapter, about 70 windows of 384).
MAX_PASSAGE_CHARS = 100_000
WINDOW = 384  # tokens in one window (at most the model's positions)
STRIDE = 128  # tokens two consecutive windows share


@dataclass
class Window:
    """One model input: [CLS] question [SEP] passage[first : first + n] [SEP]."""

    enc: Encoding  # ids, type_ids, tokens; offsets into the passage on the passage's tokens
    context_start: int  # index in enc of the window's first passage token
    first: int  # index of that token among the passage's pieces
    n: int  # passage tokens in this window

    def char_span(self, i: int, j: int) -> tuple[int, int]:
        """The passage characters of tokens i..j (indices into enc)."""
        return self.enc.offsets[i][0], self.enc.offsets[j][1]

    def token_span(self, char_start: int, char_end: int) -> tuple[int, int] | None:
        """(i, j) in enc of the tokens covering passage characters [char_start, char_end), or None
        when the span is not wholly inside this window."""
        lo, hi = self.context_start, self.context_start + self.n
        offs = self.enc.offsets
        if self.n == 0 or offs[lo][0] > char_start or offs[hi - 1][1] < char_end:
            return None
        i = next(k for k in range(lo, hi) if offs[k][1] > char_start)
        j = next(k for k in range(hi - 1, lo - 1, -1) if offs[k][0] < char_end)
        return (i, j) if i <= j else None


@dataclass
class Answer:
    text: str  # passage[start:end]; "" for "no answer"
    start: int  # character offsets into the passage
    end: int
    score: float  # start logit + end logit
    prob: float  # P(start) * P(end) in its window (softmax over the window's tokens)
    window: int  # which window it came from
    windows: list[Window] = field(default_factory=list, repr=False)
    start_probs: list[torch.Tensor] = field(default_factory=list, repr=False)  # per window, (T,)
    end_probs: list[torch.Tensor] = field(default_factory=list, repr=False)


def windows(tokenizer, question: str, passage: str, max_length: int = WINDOW, stride: int = STRIDE) -> list[Window]:
    """The passage in windows of at most `max_length` tokens with the question in front of each;
    consecutive windows share `stride` passage tokens (fewer when the room is small)."""
    if not question.strip() or not passage.strip():
        raise InputError("a question and a passage are both needed")
    if len(passage) > MAX_PASSAGE_CHARS:
        raise InputError(
            f"the passage is {len(passage):,} characters; at most {MAX_PASSAGE_CHARS:,} are read at once "
            f"(each window of {max_length} tokens is one run of the model): split it and ask each part"
        )
    q = tokenizer.encode(question, max_length=MAX_QUESTION_TOKENS, add_special_tokens=False)
    p = tokenizer.encode(passage, max_length=None, add_special_tokens=False)
    room = max_length - len(q.ids) - 3
    if room < 8:
        raise InputError(f"the question leaves no room for the passage in {max_length} tokens")
    step = max(1, room - min(stride, room // 2))
    out, first = [], 0
    while True:
        n = min(room, len(p.ids) - first)
        enc = Encoding(
            ids=[tokenizer.cls_id, *q.ids, tokenizer.sep_id, *p.ids[first : first + n], tokenizer.sep_id],
            tokens=[tokenizer.cls_token, *q.tokens, tokenizer.sep_token, *p.tokens[first : first + n]]
            + [tokenizer.sep_token],
            type_ids=[0] * (len(q.ids) + 2) + [1] * (n + 1),
            offsets=[(0, 0)] * (len(q.ids) + 2) + list(p.offsets[first : first + n]) + [(0, 0)],
            sequence_ids=[None, *[0] * len(q.ids), None, *[1] * n, None],
        )
        enc.attention_mask = [1] * len(enc.ids)
        out.append(Window(enc, len(q.ids) + 2, first, n))
        if first + n >= len(p.ids):
            return out
        first += step


def best_span(start: torch.Tensor, end: torch.Tensor, w: Window, max_tokens: int = MAX_ANSWER_TOKENS):
    """(i, j, score) of the best passage span of one window: start <= end < start + max_tokens."""
    lo, hi = w.context_start, w.context_start + w.n
    s, e = start[lo:hi].float(), end[lo:hi].float()
    scores = s[:, None] + e[None, :]  # (n, n): rows start, columns end
    k = torch.arange(w.n)
    valid = (k[None, :] >= k[:, None]) & (k[None, :] < k[:, None] + max_tokens)
    flat = int(scores.masked_fill(~valid, float("-inf")).argmax())
    i, j = divmod(flat, w.n)
    return lo + i, lo + j, float(scores[i, j])


@torch.inference_mode()
def answer_question(
    bundle,
    question: str,
    passage: str,
    max_length: int = WINDOW,
    stride: int = STRIDE,
    max_answer_tokens: int = MAX_ANSWER_TOKENS,
    allow_none: bool = False,
) -> Answer:
    """The best span of `passage` for `question` (see the module's rule), with each window's start
    and end probabilities over its tokens."""
    if not bundle.is_reader:
        raise InputError(f"{bundle.name} is not a question-answering model")
    if stride < 0 or max_answer_tokens < 1:
        raise InputError("the stride must be at least 0 and an answer at least 1 token long")
    ws = windows(bundle.tokenizer, question, passage, min(max_length, bundle.config.max_tokens), stride)
    bundle.model.eval()
    best, none_score = None, float("-inf")
    starts, ends = [], []
    for k in range(0, len(ws), 8):
        batch = ws[k : k + 8]
        out = bundle.model(**pad_inputs([(w.enc.ids, w.enc.type_ids) for w in batch], bundle.tokenizer.pad_id))
        for b, w in enumerate(batch):
            T = len(w.enc.ids)
            sl, el = out.start_logits[b, :T], out.end_logits[b, :T]
            sp, ep = torch.softmax(sl.float(), -1), torch.softmax(el.float(), -1)
            starts.append(sp)
            ends.append(ep)
            none_score = max(none_score, float(sl[0] + el[0]))
            i, j, score = best_span(sl, el, w, max_answer_tokens)
            if best is None or score > best[0]:
                best = (score, k + b, i, j, float(sp[i] * ep[j]))
    score, wi, i, j, prob = best
    if allow_none and none_score > score:
        return Answer("", 0, 0, none_score, 0.0, wi, ws, starts, ends)
    a, b = ws[wi].char_span(i, j)
    return Answer(passage[a:b], a, b, score, prob, wi, ws, starts, ends)
