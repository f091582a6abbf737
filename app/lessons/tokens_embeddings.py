"""Lessons 1 and 2: from text to tokens, and the three embeddings added at the bottom of BERT."""

from __future__ import annotations

import numpy as np

from bert.analysis.full import analyze, position_table
from bert.analysis.words import word_order

from .. import formatting
from ..figures.embeddings import cosine_heatmap, embedding_parts_heatmaps, layer_similarity, position_pca
from .claims import Said, claim
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with

SENTENCE = "The unbelievably happy dog played in the park."
PAIR_A, PAIR_B = "The dog played in the park.", "It was tired afterwards."
LONG_WORD = "unbelievably"
COMMON_WORDS = ("the", "dog", "park")  # words of SENTENCE a vocabulary of ordinary English holds whole
SHOWN_POSITIONS = 64  # the similarity map's first positions
CURVE = 0.5  # "a smooth curve": neighbours in 2-D at most this share of the mean distance of any two
DRIFT = 0.05  # "drift apart": the last layer's cosine at least this much below the first's


def _table(bundle, text_a: str, text_b: str | None = None):
    an = analyze(bundle, text_a, text_b)
    return formatting.token_table(
        an.tokens, an.ids, an.type_ids, an.offsets, an.word_ids, an.sequence_ids, text_a, text_b
    )[["position", "token", "id", "segment", "word"]]


def _pieces(bundle, word: str) -> list[str]:
    return bundle.tokenizer.tokenize(word)


@claim("tokens.vocabulary")
def vocabulary(bundle) -> Said:
    n = len(bundle.tokenizer.vocab)
    pieces = {w: _pieces(bundle, w) for w in COMMON_WORDS}
    split = {w: p for w, p in pieces.items() if len(p) != 1}
    said = f"This model's vocabulary holds {n:,} pieces"
    facts = {"vocabulary": n, "split": split}
    if not split:
        words = " and ".join(f"“{w}”" for w in COMMON_WORDS[1:])
        return Said(True, f"{said}; common words such as {words} are one token each.", facts)
    w, p = next(iter(split.items()))
    return Said(False, f"{said}; it holds few whole words: even “{w}” becomes {' + '.join(p)}.", facts)


@claim("tokens.rare-word-split")
def rare_word_split(bundle) -> Said:
    pieces = _pieces(bundle, LONG_WORD)
    if len(pieces) > 1:
        return Said(True, f"This model cuts it into {len(pieces)}: {' + '.join(pieces)}.", {"pieces": pieces})
    return Said(
        False, f"This model's vocabulary holds “{LONG_WORD}” whole: one token, nothing to cut.", {"pieces": pieces}
    )


def _ask_pieces(bundle) -> Asked:
    pieces = _pieces(bundle, LONG_WORD)
    n = len(pieces)
    return ask(
        f"How many pieces does “{LONG_WORD}” become?",
        choices_with(str(n), [str(k) for k in (1, 2, 3, 4, 5) if k != n], "pieces"),
        f"WordPiece takes the longest piece the vocabulary has, then goes on with the rest: {' + '.join(pieces)}.",
        formatting.trace_frame(bundle.tokenizer, LONG_WORD),
    )


def _ask_first_token(bundle) -> Asked:
    first = analyze(bundle, SENTENCE).tokens[0]
    return ask(
        "Which token starts every input?",
        choices_with(first, ["the", "[SEP]", "[MASK]", "[PAD]"], "first"),
        f"{first} is added in front of every input; its final vector is what a classifier reads.",
        _table(bundle, SENTENCE),
    )


def _ask_segment(bundle) -> Asked:
    an = analyze(bundle, PAIR_A, PAIR_B)
    seg_b = next(t for t, s in zip(an.type_ids, an.sequence_ids, strict=True) if s == 1)
    return ask(
        f"In the pair “{PAIR_A}” + “{PAIR_B}”, which segment id do the tokens of sentence B get?",
        choices_with(str(seg_b), ["0", "1", "2"], "segment", n=3),
        f"Sentence A's tokens get segment {an.type_ids[1]}, sentence B's get {seg_b}: that is how the model "
        "knows which sentence a token came from.",
        _table(bundle, PAIR_A, PAIR_B),
    )


TOKENS = Lesson(
    "tokens",
    "1. From text to tokens",
    "How a sentence becomes the numbers BERT reads: WordPiece, [CLS] and [SEP], segments.",
    (
        Step(
            "Words become pieces",
            "BERT does not read letters or whole words: it reads **tokens** from a fixed vocabulary. Each token "
            "is a number, its id in the vocabulary.",
            lambda b: _table(b, SENTENCE),
            Link("pages/tokenization.py", "Open on the Tokenization page", {"a": SENTENCE}),
            claim="tokens.vocabulary",
        ),
        Step(
            "Rare words are split",
            f"A word the vocabulary lacks is cut into known pieces, longest first; pieces inside a word start "
            f"with ##. Here is how “{LONG_WORD}” is cut, step by step.",
            lambda b: formatting.trace_frame(b.tokenizer, LONG_WORD),
            Link("pages/tokenization.py", "Trace your own word", {"a": LONG_WORD}),
            claim="tokens.rare-word-split",
        ),
        Step(
            "[CLS] and [SEP]",
            "Every input starts with [CLS] and each sentence ends with [SEP]. They are tokens like the others, "
            "with their own vectors; a classifier later reads the final vector of [CLS].",
            lambda b: _table(b, PAIR_A),
            Link("pages/tokenization.py", "Open on the Tokenization page", {"a": PAIR_A}),
        ),
        Step(
            "Two sentences, two segments",
            "BERT can read two sentences at once: [CLS] A [SEP] B [SEP]. Each token carries a **segment id**, "
            "0 for sentence A and 1 for sentence B, and a **position**, its place in the input.",
            lambda b: _table(b, PAIR_A, PAIR_B),
            Link("pages/tokenization.py", "Open the pair", {"a": PAIR_A, "b": PAIR_B}),
        ),
    ),
    (Question("pieces", _ask_pieces), Question("first", _ask_first_token), Question("segment", _ask_segment)),
)


# --- 2. embeddings ----------------------------------------------------------------------------


def _parts_figure(bundle):
    an = analyze(bundle, PAIR_A, PAIR_B)
    return embedding_parts_heatmaps({k: an.parts[k] for k in ("token", "segment", "position")}, an.tokens)


def _positions_figure(bundle):
    pt = position_table(bundle)
    return position_pca(pt.coords, pt.ratio, used=32)


def _position_similarity(bundle, n: int = 64):
    pt = position_table(bundle)
    n = min(n, pt.P)
    return cosine_heatmap(pt.sim[:n, :n], title="cosine similarity between positions", axis_title="position")


def _order_figure(bundle):
    wo = word_order(bundle, SENTENCE, seed=1)
    return layer_similarity(
        {"same word, original vs shuffled (mean)": wo.per_layer}, title="how much each word's vector stays the same"
    )


def nearest_positions(bundle, n: int = SHOWN_POSITIONS) -> np.ndarray:
    """For each of the first n positions, the other position (of those n) its vector is most like."""
    pt = position_table(bundle)
    n = min(n, pt.P)
    sim = pt.sim[:n, :n].copy()
    np.fill_diagonal(sim, -np.inf)
    return np.argmax(sim, 1)


@claim("embeddings.neighbours-alike")
def neighbours_alike(bundle) -> Said:
    nearest = nearest_positions(bundle)
    n = len(nearest)
    k = int((np.abs(nearest - np.arange(n)) == 1).sum())
    facts = {"neighbours": k, "of": n}
    if k > n // 2:
        return Said(
            True,
            f"For {k} of the first {n} positions the most similar other one is a neighbour: the "
            "{high} band along the diagonal.",
            facts,
        )
    return Said(
        False,
        f"On this model only {k} of the first {n} positions are most like a neighbour: no clear band "
        "along the diagonal.",
        facts,
    )


@claim("embeddings.positions-curve")
def positions_curve(bundle) -> Said:
    pt = position_table(bundle)
    xy = pt.coords[: min(SHOWN_POSITIONS, pt.P)]
    step = float(np.linalg.norm(np.diff(xy, axis=0), axis=1).mean())
    spread = float(np.linalg.norm(xy[:, None] - xy[None], axis=-1).mean())
    r = step / spread
    facts = {"ratio": r}
    said = f"Here neighbouring positions lie {r:.0%} as far apart as any two of the first {len(xy)} on average"
    if r < CURVE:
        return Said(True, f"{said}: nearby positions sit near each other.", facts)
    return Said(False, f"{said}: squeezed to 2-D they do not follow a smooth curve on this model.", facts)


@claim("embeddings.order-drift")
def order_drift(bundle) -> Said:
    per = word_order(bundle, SENTENCE, seed=1).per_layer
    first, last = float(per[0]), float(per[-1])
    low = int(np.argmin(per))
    facts = {"first": first, "last": last}
    said = f"Here a word and itself have cosine {first:.2f} at the bottom and {last:.2f} at the top"
    if last < first - DRIFT:
        return Said(True, f"{said}: they drift apart as the layers mix words by position.", facts)
    return Said(
        False,
        f"{said} (lowest {float(per[low]):.2f}, at {'the embeddings' if low == 0 else f'layer {low}'}): "
        "on this model they do not keep drifting apart.",
        facts,
    )


def _ask_neighbour(bundle) -> Asked:
    pt = position_table(bundle)
    p = 10
    sim = pt.sim[p].copy()
    sim[p] = -np.inf
    best = int(np.argmax(sim))
    wrong = [str(x) for x in (0, p + 40, pt.P - 1, p + 5, 3)]
    why = (
        "learned position vectors change smoothly, so neighbours look alike"
        if abs(best - p) == 1
        else f"not a neighbour of {p}: on this model the position vectors do not change smoothly here"
    )
    return ask(
        f"Which position's vector is most like position {p}'s (other than itself)?",
        choices_with(str(best), wrong, "neighbour"),
        f"Position {best}: {why} (cosine {pt.sim[p, best]:.2f}). They were learned, not given by a formula.",
        _position_similarity(bundle, 32),
    )


def _ask_order(bundle) -> Asked:
    wo = word_order(bundle, SENTENCE, seed=1)
    last = wo.per_layer[-1]
    changed = last < 0.99
    right = "Yes: the words' vectors change when the order changes" if changed else "No: they stay the same"
    other = "No: they stay the same" if changed else "Yes: the words' vectors change when the order changes"
    return ask(
        "Shuffle the words of a sentence: do the words' vectors at the last layer change?",
        choices_with(right, [other], "order", n=2),
        f"At the last layer a word and itself in the shuffled sentence have cosine {last:.2f} on average: "
        + (
            "the position embeddings make the model depend on word order."
            if changed
            else "this model hardly depends on word order here."
        ),
        _order_figure(bundle),
    )


EMBEDDINGS = Lesson(
    "embeddings",
    "2. Embeddings: token + segment + position",
    "The first thing BERT does with the ids: three learned vectors added together.",
    (
        Step(
            "Three vectors, added",
            "Each token id picks a **token** vector, its segment picks a **segment** vector and its place picks "
            "a **position** vector; the three are added and normalised. Rows are tokens, columns dimensions.",
            _parts_figure,
            Link("pages/embeddings.py", "Open on the Embeddings page", {"a": PAIR_A, "b": PAIR_B}),
        ),
        Step(
            "Positions are learned",
            "BERT has one learned vector per position, up to its maximum length. Squeezed to 2-D, each dot is "
            "one position: training decides where they sit.",
            _positions_figure,
            Link("pages/embeddings.py", "Open on the Embeddings page", {"part": "position"}),
            claim="embeddings.positions-curve",
        ),
        Step(
            "“BERT has no positional encodings” is wrong",
            "Some texts say so. This map shows how alike the first position vectors are. Without them, BERT "
            "could not tell “dog bites man” from “man bites dog”.",
            _position_similarity,
            claim="embeddings.neighbours-alike",
        ),
        Step(
            "Word order changes everything above",
            "Shuffle the words of a sentence and run both, then compare each word's vector with itself in the "
            "shuffle, layer by layer: every layer mixes words by position.",
            _order_figure,
            Link("pages/embeddings.py", "Try your own sentence", {"a": SENTENCE}),
            claim="embeddings.order-drift",
        ),
    ),
    (Question("neighbour", _ask_neighbour), Question("order", _ask_order)),
)
