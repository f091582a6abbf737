"""Lesson 7: encoders, decoders and both. The same weights read both ways (an encoder's, BERT's)
and left only (a decoder's, GPT's); what a left-to-right reader guesses for a gap; a prefix read
both ways with the rest left only; and an encoder-decoder's cross-attention, on the run this
session trained on the Decoder on top page. The head shown is found on the model, not fixed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from bert.analysis import mlm
from bert.analysis.common import bare_word, need_mlm
from bert.analysis.full import analyze
from bert.attention_masks import BIDIRECTIONAL, CAUSAL, allowed
from bert.seq2seq.tasks import SAMPLE_SOURCE
from bert.train.seq2seq import held_out_source

from ..figures import seq2seq as s2s_figures
from ..figures.attention import attention_heatmap
from ..figures.masked_lm import two_readings
from .claims import Said, claim, ordinal, percent
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with

SENTENCE = "The keys to the old cabinet were on the kitchen table."
PROMPT_END = " were"  # the prefix step: the tokens before this word are read both ways
# Gaps whose clue stands right of them: (sentence, the word the clue asks for, the clue). The
# lesson shows the first one the loaded model fills right read both ways and not left only.
GAPS = (
    ("The [MASK] barked at the mailman all morning.", "dog", "barked"),
    ("The [MASK] is shining and the sky is blue.", "sun", "shining"),
    ("The [MASK] States of America.", "united", "States"),
    ("The [MASK] swam in the ocean with the other fish.", "fish", "swam"),
)
TOP = 5
FACTOR = 2  # two probabilities within a factor of 2 are "about as likely": a small guess's points say little
WRITING = 3  # the encoder-decoder step's question: the word being written (1-based)


def _analysis(bundle, mask_kind=BIDIRECTIONAL):
    return analyze(bundle, SENTENCE, None, mask_kind)


def right_reader(bundle) -> tuple[int, int, float]:
    """(layer, head, share) of the head that, reading both ways, gives the most attention to real
    tokens right of each token (the final [SEP] left out: many heads rest there doing nothing):
    the head a decoder's mask takes most from."""
    an = _analysis(bundle)
    att = an.attentions  # (L, H, T, T)
    T = att.shape[-1]
    right = np.triu(np.ones((T, T), dtype=bool), k=1)
    right[:, T - 1] = False
    share = (att * right).sum(-1).mean(-1)  # (L, H)
    lay, h = np.unravel_index(int(np.argmax(share)), share.shape)
    return int(lay), int(h), float(share[lay, h])


def prefix_length(bundle) -> int:
    """Tokens before PROMPT_END ([CLS] included): the prefix read both ways."""
    an = _analysis(bundle)
    at = SENTENCE.index(PROMPT_END) + 1
    return 1 + sum(1 for (s, e), w in zip(an.offsets, an.word_ids) if w is not None and e <= at)


def _map(bundle, mask_kind, title: str):
    lay, h, _ = right_reader(bundle)
    an = _analysis(bundle, mask_kind)
    see = allowed(mask_kind, an.n_tokens)
    hidden = None if see is None else ~see.numpy()
    return attention_heatmap(
        an.attentions[lay, h], an.tokens, title=f"{title}: layer {lay + 1}, head {h + 1}", hidden=hidden
    )


def _link(bundle, read: str, label: str, k: int | None = None) -> Link:
    lay, h, _ = right_reader(bundle)
    query = {"a": SENTENCE, "layer": str(lay + 1), "head": str(h + 1), "read": read}
    if k is not None:
        query["k"] = str(k)
    return Link("pages/attention.py", label, query)


def _both_ways(bundle):
    return _map(bundle, BIDIRECTIONAL, "both ways")


def _left_only(bundle):
    return _map(bundle, CAUSAL, "left only")


def _prefix(bundle):
    return _map(bundle, prefix_length(bundle), f"prefix of {prefix_length(bundle)}")


@dataclass(frozen=True)
class Gap:
    """The lesson's gap on one model: its sentence, the word its clue asks for, the clue, and
    whether the model puts that word first read both ways and not first read left only."""

    sentence: str
    answer: str
    clue: str
    shows: bool


def _readings(bundle, sentence: str) -> tuple[mlm.MLMPredictions, mlm.MLMPredictions]:
    return mlm.mlm_topk(bundle, sentence, k=TOP), mlm.mlm_topk(bundle, sentence, k=TOP, mask_kind=CAUSAL)


def gap(bundle, candidates=GAPS) -> Gap:
    """The first of `candidates` whose word the model puts first read both ways and not first read
    left only; when none does, the first candidate (its claim then says what the model did)."""
    need_mlm(bundle, "This lesson's gap")
    for sentence, answer, clue in candidates:
        both, left = _readings(bundle, sentence)
        if bare_word(both.top_tokens[0][0]) == answer != bare_word(left.top_tokens[0][0]):
            return Gap(sentence, answer, clue, True)
    return Gap(*candidates[0], False)


def guesses(bundle) -> tuple[mlm.MLMPredictions, mlm.MLMPredictions]:
    """The lesson's gap's top guesses read both ways and read left only, on the same weights."""
    return _readings(bundle, gap(bundle).sentence)


def rank_of(bundle, sentence: str, word: str, mask_kind=BIDIRECTIONAL, gap: int = 0) -> tuple[int | None, float]:
    """(1-based rank, probability) of `word` (a token, or a word as bare_word gives it) at [MASK]
    number `gap` (0-based) of `sentence`; (None, 0.0) for a word the vocabulary does not hold as one token."""
    every = mlm.mlm_topk(bundle, sentence, k=bundle.config.vocab_size, mask_kind=mask_kind)
    words = every.top_tokens[gap]
    i = next((j for j, w in enumerate(words) if w == word), None)  # as spelled, else as a word (RoBERTa's "Ġdog")
    if i is None:
        i = next((j for j, w in enumerate(words) if bare_word(w) == word), None)
    if i is None:
        return None, 0.0
    return i + 1, float(every.top_probs[gap][i])


@claim("both.clue-after-the-gap")
def clue_after_the_gap(bundle, candidates=GAPS) -> Said:
    """Read both ways the model uses a clue right of the gap; read left only it cannot."""
    if not bundle.has_mlm:
        return Said(False, "")  # the step's none_note speaks: no masked-word head
    g = gap(bundle, candidates)
    both, left = _readings(bundle, g.sentence)
    top, p_top = bare_word(both.top_tokens[0][0]), float(both.top_probs[0][0])
    guess, p_guess = bare_word(left.top_tokens[0][0]), float(left.top_probs[0][0])
    seen = g.sentence[: g.sentence.index("[MASK]")].strip()
    sees = f"only “{seen}”" if seen else "nothing at all"
    facts = {"sentence": g.sentence, "both": top, "left": guess}
    if g.shows:
        return Said(
            True,
            f"In “{g.sentence}” the clue, “{g.clue}”, comes after the gap. Read both ways the model puts “{top}” "
            f"first ({percent(p_top)}); read left only it sees {sees} and guesses “{guess}” ({percent(p_guess)}).",
            facts,
        )
    rank, p = rank_of(bundle, g.sentence, g.answer)
    where = f"“{g.answer}” only {ordinal(rank)} ({percent(p)})" if rank else f"“{g.answer}” is not in its vocabulary"
    return Said(
        False,
        f"In “{g.sentence}” the clue, “{g.clue}”, comes after the gap, yet read both ways this model puts “{top}” "
        f"first ({percent(p_top)}) and {where}: the clue did not settle it. Read left only it sees {sees} and "
        f"guesses “{guess}” ({percent(p_guess)}).",
        facts | {"rank": rank},
    )


def guesses_figure(bundle) -> go.Figure | None:
    """The lesson's gap read both ways and left only (None for a model without an MLM head)."""
    return two_readings(*guesses(bundle)) if bundle.has_mlm else None


def decoding(run) -> tuple[list, list, np.ndarray, int]:
    """The run's decoding of its first held-out source: (source tokens, written tokens, the last
    decoder layer's cross-attention (T, S) averaged over heads, its layer count)."""
    tr = run["bundle"].trace(held_out_source(run["metrics"]) or SAMPLE_SOURCE)
    L = tr.cross.shape[0]
    return tr.source, tr.outputs, tr.cross[L - 1].mean(0).numpy(), L


def _cross(run):
    if run is None:
        return None
    source, outputs, cross, L = decoding(run)
    t = min(WRITING, len(outputs)) - 1
    return s2s_figures.attention(
        cross, outputs, source, f"cross-attention, layer {L} (mean over heads)", t, "source token"
    )


def _ask_left(bundle) -> Asked:
    g = gap(bundle)
    both, left = guesses(bundle)
    word = bare_word(left.top_tokens[0][0])
    wrong = [bare_word(w) for w in both.top_tokens[0] + left.top_tokens[0][1:]]
    return ask(
        f"Reading left only, which word does the model put in the gap of “{g.sentence}”?",
        choices_with(word, wrong, "left-guess"),
        f"“{word}” ({left.top_probs[0][0]:.0%}): left only it never reads “{g.clue}”; both ways it guesses "
        f"“{bare_word(both.top_tokens[0][0])}” ({both.top_probs[0][0]:.0%}).",
        guesses_figure(bundle),
    )


LIKELY = ["more than twice as likely", "about as likely (within a factor of 2)", "less than half as likely"]


def likelihood_change(p_both: float, p_left: float) -> str:
    """Which of LIKELY says how p_left compares with p_both."""
    if p_left > FACTOR * p_both:
        return LIKELY[0]
    return LIKELY[2] if p_left * FACTOR < p_both else LIKELY[1]


def _ask_loses(bundle) -> Asked:
    sentence = gap(bundle).sentence
    both, _ = guesses(bundle)
    word, p_both = both.top_tokens[0][0], float(both.top_probs[0][0])
    _, p_left = rank_of(bundle, sentence, word, CAUSAL)
    return ask(
        f"Both ways, the model's first guess for the gap of “{sentence}” is “{bare_word(word)}”. Reading left only, "
        "how likely does it find that word?",
        (LIKELY, LIKELY.index(likelihood_change(p_both, p_left))),
        f"{p_both:.1%} both ways; {p_left:.1%} left only, where the words after the gap are hidden.",
        guesses_figure(bundle),
    )


def _steps() -> tuple[Step, ...]:
    return (
        Step(
            "An encoder reads both ways",
            "BERT is an encoder: every token sees every other token, left and right. This is the head that, on "
            "this sentence, looks most to the right of each token.",
            _both_ways,
            lambda b: _link(b, "both", "Open this head on the Attention page"),
            "lesson-both-ways",
        ),
        Step(
            "A decoder reads left only",
            "A decoder such as GPT hides everything right of each token (the grey triangle), so it can write "
            "one word after another. Same weights, same head: what it gave to the right now goes to the left.",
            _left_only,
            lambda b: _link(b, "left", "Open it read left only on the Attention page"),
            "lesson-left-only-head",
        ),
        Step(
            "What a left-to-right reader guesses",
            "A reader that goes left to right cannot use a clue that comes after the gap: it must guess without it.",
            guesses_figure,
            lambda b: Link(
                "pages/masked_lm.py",
                "Compare both readings on the Masked LM page",
                {"mask": gap(b).sentence if b.has_mlm else GAPS[0][0]},
            ),
            "lesson-left-guesses",
            none_note="This model is a classifier with no masked-word head: pick a pre-trained model to see "
            "its guesses.",
            claim="both.clue-after-the-gap",
        ),
        Step(
            "Both at once: a prefix",
            "A prefix model reads a prompt both ways and writes the rest left only (T5's prefix variant, UniLM). "
            "Here the words before “were” see each other; every later token reads left only.",
            _prefix,
            lambda b: _link(b, "prefix", "Open it with this prefix on the Attention page", prefix_length(b)),
            "lesson-prefix",
        ),
        Step(
            "Encoder and decoder: cross-attention",
            "T5 and BART keep both halves: the encoder reads the source both ways, the decoder writes left only "
            f"and looks at the source through cross-attention. The outlined row is word {WRITING} being written, "
            "on the decoder this session trained.",
            _cross,
            Link("pages/decoder.py", "Watch it decode on the Decoder on top page"),
            "lesson-cross-attention",
            uses="seq2seq",
            none_note="No encoder-decoder is trained in this session yet: train one on the Decoder on top page "
            "(the defaults take about a minute), then come back to see its cross-attention here.",
        ),
    )


BOTH = Lesson(
    "both",
    "7. Encoders, decoders and both",
    "Reading both ways, left only, or both: what BERT, GPT and T5 or BART do with the same parts.",
    _steps(),
    (Question("left", _ask_left), Question("loses", _ask_loses)),
)
