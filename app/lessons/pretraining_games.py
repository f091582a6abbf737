"""Lesson 4: the two pre-training games, filling in a hidden word and telling whether one sentence
follows another, and where in the layers the guess appears."""

from __future__ import annotations

from bert.analysis.explain import logit_lens
from bert.analysis.mlm import mlm_topk, nsp_probability

from ..figures.core import values_bar
from ..figures.explain import logit_lens_heatmap
from ..figures.masked_lm import mlm_topk_bar
from .claims import Said, claim, ordinal, percent
from .encoders_decoders import rank_of
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with

GAP = "She opened the [MASK] and walked in."
TWO_GAPS = "Paris is a city in [MASK], and there [MASK] many people in it."
FIRST = "The dog ran across the park."
FOLLOWS = "It chased a red ball."
RANDOM = "The stock market closed higher on Friday."
AGREEING = ("are", "were")  # the second gap of TWO_GAPS: verbs that agree with "many people"


def _topk_bar(bundle, text: str, gap: int = 0):
    m = mlm_topk(bundle, text, k=5)
    return mlm_topk_bar(m.top_tokens[gap], m.top_probs[gap], f"gap {gap + 1}")


def _nsp_figure(bundle):
    return values_bar(
        [f"A + “{FOLLOWS[:18]}…”", f"A + “{RANDOM[:18]}…”"],
        [nsp_probability(bundle, FIRST, FOLLOWS), nsp_probability(bundle, FIRST, RANDOM)],
        title="probability that B follows A",
        y_title="IsNext",
        range_y=[0, 1],
    )


def _lens(bundle):
    lens = logit_lens(bundle, GAP, k=5)
    return logit_lens_heatmap(lens.top_tokens[0], lens.top_probs[0], lens.top_tokens[0][-1][0])


@claim("games.second-gap-agrees")
def second_gap_agrees(bundle) -> Said:
    m = mlm_topk(bundle, TWO_GAPS, k=1)
    top, p = m.top_tokens[1][0], float(m.top_probs[1][0])
    facts = {"top": top, "p": p}
    if top in AGREEING:
        return Said(True, f"This model puts “{top}” first ({percent(p)}).", facts)
    rank, p_are = rank_of(bundle, TWO_GAPS, AGREEING[0], gap=1)
    where = (
        f"“{AGREEING[0]}” is {ordinal(rank)} ({percent(p_are)})"
        if rank
        else f"“{AGREEING[0]}” is not in its vocabulary"
    )
    return Said(
        False, f"This model puts “{top}” first ({percent(p)}), which does not agree; {where}.", facts | {"rank": rank}
    )


def settles(top_per_layer: list[str]) -> int:
    """The first layer (0 = the embeddings) from which every layer's top guess is the last layer's."""
    final = top_per_layer[-1]
    k = len(top_per_layer) - 1
    while k > 0 and top_per_layer[k - 1] == final:
        k -= 1
    return k


@claim("games.guess-appears-late")
def guess_appears_late(bundle) -> Said:
    lens = logit_lens(bundle, GAP, k=1)
    tops = [row[0] for row in lens.top_tokens[0]]
    L, k = len(tops) - 1, settles(tops)
    facts = {"word": tops[-1], "layer": k, "layers": L}
    said = f"Here “{tops[-1]}” is the guess from {'the embeddings' if k == 0 else f'layer {k}'} of {L} on"
    if k > L / 2:
        return Said(True, f"{said}: only in the upper layers.", facts)
    return Said(False, f"{said}: on this model it appears in the lower half already.", facts)


def _ask_gap(bundle) -> Asked:
    m = mlm_topk(bundle, GAP, k=20)
    words = m.top_tokens[0]
    return ask(
        f"“{GAP}”: which of these words does the model rank first for the [MASK]?",
        choices_with(words[0], [words[4], words[9], words[19]], "gap"),
        f"“{words[0]}” ({m.top_probs[0][0]:.0%}); “{words[4]}” is 5th, “{words[9]}” 10th, “{words[19]}” 20th.",
        _topk_bar(bundle, GAP),
    )


def _ask_nsp(bundle) -> Asked:
    p = nsp_probability(bundle, FIRST, RANDOM)
    right = "Yes" if p >= 0.5 else "No"
    return ask(
        f"A: “{FIRST}” B: “{RANDOM}” Does the model think B follows A?",
        choices_with(right, ["No" if right == "Yes" else "Yes"], "nsp", n=2),
        f"It gives IsNext {p:.0%}: "
        + ("it is fooled here." if p >= 0.5 else "B was picked at random, and it sees it."),
        _nsp_figure(bundle),
    )


GAMES = Lesson(
    "games",
    "4. The two pre-training games",
    "Where BERT's knowledge comes from: fill the gap, and does B follow A.",
    (
        Step(
            "Fill the gap",
            "During pre-training 15 % of the tokens are hidden behind [MASK] and the model guesses them from the "
            "words on both sides. These are its guesses for one gap, with their probabilities.",
            lambda b: _topk_bar(b, GAP),
            Link("pages/masked_lm.py", "Open on the Masked LM page", {"mask": GAP}),
            "lesson-fill-the-gap",
        ),
        Step(
            "Several gaps at once",
            "Each gap is guessed on its own: a gap cannot see what was guessed for the others. Here the second "
            "gap needs a verb that agrees with “many people”.",
            lambda b: _topk_bar(b, TWO_GAPS, 1),
            Link("pages/masked_lm.py", "Open on the Masked LM page", {"mask": TWO_GAPS}),
            "lesson-second-gap",
            claim="games.second-gap-agrees",
        ),
        Step(
            "Does B follow A?",
            "The second game: given two sentences, say whether B really came next or was picked at random. "
            "The [CLS] vector answers.",
            _nsp_figure,
            Link("pages/masked_lm.py", "Open on the Masked LM page", {"a": FIRST, "b": FOLLOWS}),
            "lesson-next-sentence",
        ),
        Step(
            "The guess, layer by layer",
            "Put the masked-word head on every layer's vector, not only the last, and read what each layer would "
            "guess: where does the final answer first appear?",
            _lens,
            Link("pages/explanations.py", "Open on the Explanations page", {"mask": GAP, "view": "lens"}),
            "lesson-logit-lens",
            claim="games.guess-appears-late",
        ),
    ),
    (Question("gap", _ask_gap), Question("nsp", _ask_nsp)),
)
