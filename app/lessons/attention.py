"""Lesson 3: attention: what a head is, and heads that look at the previous token, at [SEP], at a
pronoun's noun. Which heads are shown is worked out on the model, not fixed."""

from __future__ import annotations

import numpy as np

from bert.analysis.common import bare_word
from bert.analysis.full import analyze
from bert.analysis.heads import head_pattern_stats

from ..figures import core
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with

SENTENCE = "The animal didn't cross the street because it was too tired."
PRONOUN = "it"


def _analysis(bundle):
    return analyze(bundle, SENTENCE)


def best_head(bundle, pattern: str, layer: int | None = None) -> tuple[int, int, float]:
    """(layer, head, share) of the head that puts most attention on `pattern` ("previous",
    "[SEP]", ...) in this sentence; within `layer` when given."""
    an = _analysis(bundle)
    stats = head_pattern_stats(an.attentions, an.tokens)[pattern]
    if layer is not None:
        h = int(np.argmax(stats[layer]))
        return layer, h, float(stats[layer, h])
    lay, h = np.unravel_index(int(np.argmax(stats)), stats.shape)
    return int(lay), int(h), float(stats[lay, h])


def pronoun_head(bundle) -> tuple[int, int, str, float]:
    """(layer, head, word, weight): the head whose attention from the pronoun to a real word at
    least two tokens away is strongest, and that word (neighbours are the previous-token habit)."""
    an = _analysis(bundle)
    i, spans = _pronoun(an)
    real = [j for j, s, e in spans if SENTENCE[s:e].strip() not in ("", ".") and abs(j - i) > 1]
    rows = an.attentions[:, :, i, :][:, :, real]  # (L, H, R)
    lay, h, r = np.unravel_index(int(np.argmax(rows)), rows.shape)
    return int(lay), int(h), bare_word(an.tokens[real[r]]), float(rows[lay, h, r])


def _pronoun(an) -> tuple[int, list[tuple[int, int, int]]]:
    """The pronoun's token, found by where it stands in the text (any tokenizer's spelling: "it",
    RoBERTa's "Ġit", ALBERT's "▁it"), and (token, start, end) of every token of the text."""
    at = SENTENCE.index(f" {PRONOUN} ") + 1
    spans = [(j, s, e) for j, ((s, e), w) in enumerate(zip(an.offsets, an.word_ids)) if w is not None]
    return next(j for j, s, e in spans if s <= at < e), spans


def _map(bundle, layer: int, head: int):
    an = _analysis(bundle)
    return core.attention_heatmap(an.attentions[layer, head], an.tokens, title=f"layer {layer + 1}, head {head + 1}")


def _link(layer: int, head: int, label: str) -> Link:
    return Link("pages/attention.py", label, {"a": SENTENCE, "layer": str(layer + 1), "head": str(head + 1)})


def _first_head(bundle):
    return _map(bundle, 0, 0)


def _previous_head(bundle):
    lay, h, _ = best_head(bundle, "previous")
    return _map(bundle, lay, h)


def _sep_head(bundle):
    lay, h, _ = best_head(bundle, "[SEP]")
    return _map(bundle, lay, h)


def _pronoun_head(bundle):
    lay, h, _, _ = pronoun_head(bundle)
    return _map(bundle, lay, h)


def _grid(bundle):
    return core.attention_grid(_analysis(bundle).attentions)


def _ask_previous(bundle) -> Asked:
    lay, _, _ = best_head(bundle, "previous")
    _, h, share = best_head(bundle, "previous", layer=lay)
    H = bundle.config.num_attention_heads
    wrong = [f"head {k + 1}" for k in range(H) if k != h]
    return ask(
        f"In layer {lay + 1}, which head attends most to the previous token?",
        choices_with(f"head {h + 1}", wrong, f"previous-{lay}"),
        f"Head {h + 1}: on average each token gives {share:.0%} of its attention to the token just before it "
        "(the stripe just below the diagonal).",
        _map(bundle, lay, h),
    )


def _ask_pronoun(bundle) -> Asked:
    lay, h, word, weight = pronoun_head(bundle)
    an = _analysis(bundle)
    i, _ = _pronoun(an)
    words = [bare_word(t) for t in an.tokens]
    wrong = [t for j, t in enumerate(words) if t.isalpha() and t not in (PRONOUN, word) and abs(j - i) > 1]
    return ask(
        f"In layer {lay + 1}, head {head_label(h)}, which word does “{PRONOUN}” look at most, of those at least "
        "two words away?",
        choices_with(word, wrong, "pronoun"),
        f"“{word}”, with {weight:.0%} of its attention: a head can link a pronoun to the words it may stand for.",
        _map(bundle, lay, h),
    )


def reading_left_only(bundle):
    """The everyday cloze set read both ways and left only (bert/patterns.py) on this model, by
    where each gap's clue stands: a table; None for a model without an MLM head."""
    import pandas as pd

    from bert.analysis.cloze import evaluate_cloze

    if not bundle.has_mlm:
        return None
    rows = []
    for pattern, name in (("bidirectional", "both ways"), ("causal", "left only")):
        r = evaluate_cloze(bundle, attention_pattern=pattern)
        for side, (t1, t5, n) in sorted(r.by_side.items()):
            rows.append({"reads": name, "clue": f"{side} of the gap", "gaps": n, "top-1": t1, "top-5": t5})
        rows.append({"reads": name, "clue": "all", "gaps": r.n, "top-1": r.top1, "top-5": r.top5})
    return pd.DataFrame(rows).round(3)


def head_label(h: int) -> str:
    return str(h + 1)


def _steps() -> tuple[Step, ...]:
    return (
        Step(
            "A head is a map of who looks at whom",
            "Each row is one token looking at all the others: its weights are positive and add up to 1. The "
            "token then takes that mix of the others' vectors. This is layer 1, head 1.",
            _first_head,
            _link(0, 0, "Open on the Attention page"),
            "lesson-attention-L1-H1",
        ),
        Step(
            "A head that looks at the previous token",
            "Some heads learn a simple habit: every token looks at the one just before it, a stripe just "
            "below the diagonal. This is the head with the strongest such stripe for this sentence.",
            _previous_head,
            lambda b: _link(*best_head(b, "previous")[:2], "Open this head on the Attention page"),
            "lesson-previous-token-head",
        ),
        Step(
            "Heads that rest on [SEP]",
            "Many heads put most of their attention on [SEP] (or [CLS]) when they have nothing better to do: "
            "one dark column. It is a way of doing nothing.",
            _sep_head,
            lambda b: _link(*best_head(b, "[SEP]")[:2], "Open this head on the Attention page"),
            "lesson-sep-head",
        ),
        Step(
            "A head that finds what “it” means",
            "“It” could be the animal or the street. Here is the head in which “it” gives the most attention to "
            "one other word: look at the row of “it”.",
            _pronoun_head,
            lambda b: _link(*pronoun_head(b)[:2], "Open this head on the Attention page"),
            "lesson-pronoun-head",
        ),
        Step(
            "Every head at once",
            "Each small square is one head; rows are layers. Early layers often look at neighbours, later "
            "ones more often at [SEP]. Click one on the Attention page to open it.",
            _grid,
            Link("pages/attention.py", "Open all heads", {"a": SENTENCE, "view": "heads"}),
            "lesson-all-heads",
        ),
        Step(
            "Reading left only: what a decoder sees",
            "A decoder such as GPT reads left only: each token sees itself and the tokens before it. The same "
            "weights fill the 116 gaps of the everyday cloze set both ways and left only, split by where the "
            "words that decide the answer stand (on minilm-l6, gaps whose clue is on the right fall from 71 % to "
            "26 % top-1, gaps whose clue is on the left from 31 % to 24 %). The table is measured on the model "
            "you picked.",
            reading_left_only,
            Link("pages/masked_lm.py", "Compare both readings on the Masked LM page"),
            "lesson-left-only",
        ),
    )


ATTENTION = Lesson(
    "attention",
    "3. Attention: heads and what they look at",
    "How every token mixes in the others, and the habits heads learn.",
    _steps(),
    (Question("previous", _ask_previous), Question("pronoun", _ask_pronoun)),
)
