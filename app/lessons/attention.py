"""Lesson 3: attention: what a head is, and heads that look at the previous token, at [SEP], at a
pronoun's noun. Which heads are shown is worked out on the model, not fixed."""

from __future__ import annotations

import weakref

import numpy as np

from bert.analysis.attention_heads import head_pattern_stats
from bert.analysis.common import bare_word
from bert.analysis.full import analyze

from ..figures.attention import attention_grid, attention_heatmap
from .claims import Said, claim, percent
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with

SENTENCE = "The animal didn't cross the street because it was too tired."
PRONOUN = "it"
MEANINGS = ("animal", "street")  # what the pronoun may stand for
HABIT = 0.5  # a head "has" a habit when it gives it more than half of its attention


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
    return attention_heatmap(an.attentions[layer, head], an.tokens, title=f"layer {layer + 1}, head {head + 1}")


def _link(layer: int, head: int, label: str) -> Link:
    return Link("pages/attention.py", label, {"a": SENTENCE, "layer": str(layer + 1), "head": str(head + 1)})


def _first_head(bundle):
    return _map(bundle, 0, 0)


def _previous_head(bundle):
    lay, h, _ = best_head(bundle, "previous")
    return _map(bundle, lay, h)


def resting(bundle) -> tuple[np.ndarray, int, int, str, float]:
    """(share (L, H) of each head's attention on [CLS] and [SEP] together, and the layer, head,
    token and share of the head that rests most on one of them) in this sentence."""
    an = _analysis(bundle)
    stats = head_pattern_stats(an.attentions, an.tokens)
    share = stats["[CLS]"] + stats["[SEP]"]
    lay, h = np.unravel_index(int(np.argmax(share)), share.shape)
    token = "[CLS]" if stats["[CLS]"][lay, h] >= stats["[SEP]"][lay, h] else "[SEP]"
    return share, int(lay), int(h), token, float(stats[token][lay, h])


def _resting_head(bundle):
    _, lay, h, _, _ = resting(bundle)
    return _map(bundle, lay, h)


@claim("attention.previous-token-head")
def previous_token_head(bundle) -> Said:
    lay, h, share = best_head(bundle, "previous")
    where = f"layer {lay + 1}, head {h + 1}"
    if share > HABIT:
        return Said(
            True,
            f"Here it is {where}: each token gives {percent(share)} of its attention to the one before it.",
            {"layer": lay, "head": h, "share": share},
        )
    return Said(
        False,
        f"On this model the strongest such stripe, {where}, carries only {percent(share)} of each "
        "token's attention: no head has made a habit of it.",
        {"layer": lay, "head": h, "share": share},
    )


@claim("attention.heads-rest")
def heads_rest(bundle) -> Said:
    share, lay, h, token, top = resting(bundle)
    n, total = int((share > HABIT).sum()), share.size
    facts = {"heads": n, "of": total, "layer": lay, "head": h, "token": token, "share": top}
    if n >= max(2, total // 4) and top > HABIT:
        return Said(
            True,
            f"Here {n} of {total} heads give more than half of their attention to [CLS] or [SEP]; "
            f"layer {lay + 1}, head {h + 1} gives {percent(top)} to {token}: one {{high}} column.",
            facts,
        )
    return Said(
        False,
        f"On this model only {n} of {total} heads give more than half of their attention to [CLS] "
        f"or [SEP] in this sentence; the one that rests most, layer {lay + 1}, head {h + 1}, gives "
        f"{percent(top)} to {token}.",
        facts,
    )


@claim("attention.pronoun-head")
def pronoun_link(bundle) -> Said:
    lay, h, word, weight = pronoun_head(bundle)
    facts = {"layer": lay, "head": h, "word": word, "weight": weight}
    where = f"In layer {lay + 1}, head {h + 1}, “{PRONOUN}” gives {percent(weight)} of its attention to “{word}”"
    if word in MEANINGS:
        return Said(True, f"{where}, one of the words it may stand for.", facts)
    return Said(
        False,
        f"{where}, which is not what it stands for: this model's strongest link from “{PRONOUN}” "
        f"is not to the {' or the '.join(MEANINGS)}.",
        facts,
    )


def by_layer(bundle) -> tuple[np.ndarray, np.ndarray]:
    """Per layer, the mean share of attention on the neighbours (previous + next) and on [CLS] + [SEP]."""
    an = _analysis(bundle)
    stats = head_pattern_stats(an.attentions, an.tokens)
    return (stats["previous"] + stats["next"]).mean(1), (stats["[CLS]"] + stats["[SEP]"]).mean(1)


@claim("attention.habits-by-layer")
def habits_by_layer(bundle) -> Said:
    near, special = by_layer(bundle)
    half = len(near) // 2
    lo_n, hi_n, lo_s, hi_s = near[:half].mean(), near[half:].mean(), special[:half].mean(), special[half:].mean()
    facts = {"near": (lo_n, hi_n), "special": (lo_s, hi_s)}
    told = (
        f"In the lower half of this model's layers the neighbours get {percent(lo_n)} of the attention, in the "
        f"upper half {percent(hi_n)}; [CLS] and [SEP] get {percent(lo_s)} and {percent(hi_s)}"
    )
    if lo_n > hi_n and hi_s > lo_s:
        return Said(True, f"{told}: neighbours low down, resting higher up.", facts)
    return Said(False, f"{told}: not the usual shape of neighbours low down and resting higher up.", facts)


def _pronoun_head(bundle):
    lay, h, _, _ = pronoun_head(bundle)
    return _map(bundle, lay, h)


def _grid(bundle):
    an = _analysis(bundle)
    return attention_grid(an.attentions, tokens=an.tokens)


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
    meaning = (
        "a head can link a pronoun to the words it may stand for"
        if word in MEANINGS
        else f"not what “{PRONOUN}” stands for: attention is not meaning"
    )
    return ask(
        f"In layer {lay + 1}, head {head_label(h)}, which word does “{PRONOUN}” look at most, of those at least "
        "two words away?",
        choices_with(word, wrong, "pronoun"),
        f"“{word}”, with {weight:.0%} of its attention: {meaning}.",
        _map(bundle, lay, h),
    )


_CLOZE_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its table (232 runs)


def reading_left_only(bundle):
    """The everyday cloze set read both ways and left only (bert/attention_masks.py) on this model, by
    where each gap's clue stands: a table; None for a model without an MLM head. Kept per model
    while it lives: the step's table and its claim read the same runs."""
    if not bundle.has_mlm:
        return None
    if bundle.model not in _CLOZE_TABLES:
        _CLOZE_TABLES[bundle.model] = _cloze_table(bundle)
    return _CLOZE_TABLES[bundle.model].copy()


def _cloze_table(bundle):
    import pandas as pd

    from bert.analysis.cloze import evaluate_cloze

    rows = []
    for mask_kind, name in (("bidirectional", "both ways"), ("causal", "left only")):
        r = evaluate_cloze(bundle, mask_kind=mask_kind)
        for side, (t1, t5, n) in sorted(r.by_side.items()):
            rows.append({"reads": name, "clue": f"{side} of the gap", "gaps": n, "top-1": t1, "top-5": t5})
        rows.append({"reads": name, "clue": "all", "gaps": r.n, "top-1": r.top1, "top-5": r.top5})
    return pd.DataFrame(rows).round(3)


@claim("attention.left-only-cloze")
def left_only_cloze(bundle) -> Said:
    """Reading left only costs the gaps whose clue is on the right more than those whose clue is on the left."""
    t = reading_left_only(bundle)
    if t is None:
        return Said(False, "")  # the step's none_note speaks: no masked-word head
    top1 = t.set_index(["reads", "clue"])["top-1"]
    rb, rl = top1["both ways", "right of the gap"], top1["left only", "right of the gap"]
    lb, ll = top1["both ways", "left of the gap"], top1["left only", "left of the gap"]
    facts = {"right": (rb, rl), "left": (lb, ll)}
    told = (
        f"On this model, gaps whose clue is on the right go from {percent(rb)} to {percent(rl)} top-1, gaps "
        f"whose clue is on the left from {percent(lb)} to {percent(ll)}"
    )
    if rb - rl > lb - ll:
        return Said(True, f"{told}: hiding the right costs most where the clue stood there.", facts)
    return Said(False, f"{told}: here the clue's side made no bigger difference.", facts)


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
            "A head can learn a simple habit: every token looks at the one just before it, a stripe just "
            "below the diagonal. This is the head with the strongest such stripe for this sentence.",
            _previous_head,
            lambda b: _link(*best_head(b, "previous")[:2], "Open this head on the Attention page"),
            "lesson-previous-token-head",
            claim="attention.previous-token-head",
        ),
        Step(
            "Heads that rest on [CLS] or [SEP]",
            "A head with nothing better to do can put its attention on [CLS] or [SEP]: one column takes "
            "the weight of every row. It is a way of doing nothing. This is the head that rests most.",
            _resting_head,
            lambda b: _link(*resting(b)[1:3], "Open this head on the Attention page"),
            "lesson-resting-head",
            claim="attention.heads-rest",
        ),
        Step(
            "A head that finds what “it” means",
            "“It” could be the animal or the street. Here is the head in which “it” gives the most attention to "
            "one other word: look at the row of “it”.",
            _pronoun_head,
            lambda b: _link(*pronoun_head(b)[:2], "Open this head on the Attention page"),
            "lesson-pronoun-head",
            claim="attention.pronoun-head",
        ),
        Step(
            "Every head at once",
            "Each small square is one head; rows are layers. Look for stripes next to the diagonal (neighbours) "
            "and single columns (resting). Click one on the Attention page to open it.",
            _grid,
            Link("pages/attention.py", "Open all heads", {"a": SENTENCE, "view": "heads"}),
            "lesson-all-heads",
            claim="attention.habits-by-layer",
        ),
        Step(
            "Reading left only: what a decoder sees",
            "A decoder such as GPT reads left only: each token sees itself and the tokens before it. The same "
            "weights fill the 116 gaps of the everyday cloze set both ways and left only, split by where the "
            "words that decide the answer stand. The table is measured on the model you picked.",
            reading_left_only,
            Link("pages/masked_lm.py", "Compare both readings on the Masked LM page"),
            "lesson-left-only",
            none_note="This model has no masked-word head to fill gaps with: pick a pre-trained model.",
            claim="attention.left-only-cloze",
        ),
    )


ATTENTION = Lesson(
    "attention",
    "3. Attention: heads and what they look at",
    "How every token mixes in the others, and the habits heads learn.",
    _steps(),
    (Question("previous", _ask_previous), Question("pronoun", _ask_pronoun)),
)
