"""Questions the teacher asks the class, worked out on the loaded model: each kind makes a body
(what app/class_store/classroom.py keeps and every screen draws), computed once by the teacher's
session, so the model's answer and the figure that explains it are the model's own and the same
on every screen. No streamlit here.

A body: kind, prompt, choices (None: free text), answer (the model's), accept (answers that count
as the model's), why (one sentence), figure (plotly JSON, or None), model (its label).

    mask      which word fills the [MASK]? (free text; the model's top guess; a sentence with several
              [MASK]s names and marks the one asked, `asked_gap`)
    left      which word would a left-to-right reader put in the [MASK]? (free text; the top guess
              of the same weights read left only, a decoder's mask)
    look      from a token, which token does layer L head H look at most? (the sentence's tokens)
    follows   does B follow A? (yes / no; the NSP head)
    pieces    how many WordPiece pieces is a word? (1-6+; the tokenizer)
    heads     which of these heads, switched off, hurts the masked word most? (three heads)
    writes    which source token does the decoder look at most while writing word N? (the source's
              tokens; the encoder-decoder this session trained, its last layer's cross-attention)
    knows     at which layer does the [MASK] know the answer? (the layers; activation patching of
              a clean/corrupted pair: the first residual row where the clean run's state at the
              [MASK] alone restores at least KNOWS_SHARE of logit[answer] - logit[foil])
    prefers   which of two sentences does the model find more likely? (the two sentences of a
              built-in minimal pair, in alphabetical order; the higher pseudo-log-likelihood, which
              the reveal compares with the grammatical one)
    fires     which of these words makes feature N fire most? (the words the teacher gives; each read
              alone through the model to the dictionary's layer: the Features page's dictionary, or
              the model's built-in one)
    lesson    any of the lessons' model-checked questions (app/lessons/)
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from bert import InputError
from bert.analysis import ablation, mlm
from bert.analysis.common import bare_word, need_mlm
from bert.analysis.compare import attentions_of
from bert.analysis.paradigms import PARADIGMS
from bert.analysis.patching import Pair, activation_patching
from bert.analysis.scoring import score_pairs
from bert.attention_masks import CAUSAL

from ..figures import seq2seq as s2s_figures
from ..figures.causes import pair_word_scores
from ..figures.core import safe_labels, values_bar
from ..figures.masked_lm import mlm_topk_bar, nsp_bar, two_readings

KINDS = {
    "mask": "Which word fills the [MASK]?",
    "left": "Which word would a left-to-right reader guess here?",
    "look": "Which token does a head look at most?",
    "follows": "Does sentence B follow sentence A?",
    "pieces": "How many pieces is a word?",
    "heads": "Which head, switched off, hurts the masked word most?",
    "writes": "Which input word does the decoder look at while writing word N?",
    "knows": "At which layer does the [MASK] know the answer?",
    "prefers": "Which of two sentences does the model find more likely?",
    "fires": "Which word makes a feature fire most?",
    "lesson": "A question from the lessons",
}
PIECE_CHOICES = ["1", "2", "3", "4", "5", "6 or more"]
WORD_CHARS = 40
TABLE_ROWS = 20  # of a lesson's table shown at the reveal
HEADS_ASKED = 3  # the heads offered in a "heads" question: the one that hurts most and two others
KNOWS_SHARE = 0.5  # a "knows" question's layer: the first whose [MASK] restores at least this share


def _figure(fig) -> str | None:
    """A question's figure as plotly JSON: a lesson's table becomes a plotly table (escaped)."""
    if isinstance(fig, pd.DataFrame):
        head = fig.head(TABLE_ROWS)
        cells = [safe_labels([str(v) for v in head[c]]) for c in head.columns]
        fig = go.Figure(
            go.Table(header=dict(values=safe_labels([str(c) for c in head.columns])), cells=dict(values=cells))
        )
        fig.update_layout(height=int(80 + 30 * len(head)), margin=dict(l=10, r=10, t=10, b=10))
    return fig.to_json() if isinstance(fig, go.Figure) else None


def _body(kind, prompt, choices, answer, why, figure, model, accept=None) -> dict:
    return {
        "kind": kind,
        "prompt": prompt,
        "choices": choices,
        "answer": answer,
        "accept": accept or [answer],
        "why": why,
        "figure": _figure(figure),
        "model": model,
    }


MARK = "▶[MASK]◀"  # the [MASK] a question asks about, when its sentence has several


def asked_gap(text: str, gap: int) -> tuple[str, str]:
    """(how a question names [MASK] number `gap` (1-based) of `text`, the sentence as the class sees
    it): "the [MASK]" and the sentence itself when it has one; with several, the asked one is
    marked (MARK) and named by its place, so no one guesses at the wrong gap."""
    n = text.count("[MASK]")
    if n == 0:
        raise InputError("Put [MASK] where a word should be guessed (the Masked LM page's sentence).")
    if not 1 <= gap <= n:
        raise InputError(f"This sentence has {n} [MASK]s: ask about one of 1 to {n}, not {gap}.")
    if n == 1:
        return "the [MASK]", text
    parts = text.split("[MASK]")
    marked = "".join(part + ("" if i == n else MARK if i == gap - 1 else "[MASK]") for i, part in enumerate(parts))
    return f"the {PLACES.get(gap, f'number {gap}')} of its {n} [MASK]s (marked ▶◀)", marked


PLACES = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}


def _gap_index(p: mlm.MLMPredictions, gap: int) -> int:
    """The 0-based index of [MASK] number `gap` among the model's predictions, or InputError when
    the model did not read that far (a long sentence cut at its maximum length)."""
    if gap > len(p.positions):
        raise InputError(f"The model reads only {len(p.positions)} [MASK](s) of this sentence: it was cut.")
    return gap - 1


def mask_question(bundle, text: str, model: str, gap: int = 1) -> dict:
    """[MASK] number `gap` (1-based) of `text`: the model's top guess is the answer."""
    need_mlm(bundle, "a [MASK] question")
    which, shown = asked_gap(text, gap)
    p = mlm.mlm_topk(bundle, text, k=10)
    g = _gap_index(p, gap)
    words, probs = p.top_tokens[g], p.top_probs[g]
    top = bare_word(words[0])
    return _body(
        "mask",
        f"Which word does the model put in {which}? «{shown}»",
        None,
        top,
        f"The model's first guess is «{top}» ({probs[0]:.0%}); its next ones are "
        + ", ".join(f"«{bare_word(w)}»" for w in words[1:4])
        + ".",
        mlm_topk_bar(words, probs, title=f"The model's guesses for {which}"),
        model,
    )


def left_question(bundle, text: str, model: str, gap: int = 1) -> dict:
    """[MASK] number `gap` (1-based) of `text` read left only, each token seeing only itself and its
    left (a decoder's mask on the same weights): that reading's top guess is the answer."""
    need_mlm(bundle, "a left-to-right question")
    which, shown = asked_gap(text, gap)
    both = mlm.mlm_topk(bundle, text, k=5)
    left = mlm.mlm_topk(bundle, text, k=5, mask_kind=CAUSAL)
    g = _gap_index(both, gap)
    top, also = bare_word(left.top_tokens[g][0]), bare_word(both.top_tokens[g][0])
    return _body(
        "left",
        f"Reading left only, as a decoder does, which word does the model put in {which}? «{shown}»",
        None,
        top,
        f"Left only, never seeing the words after the gap, its first guess is «{top}» ({left.top_probs[g][0]:.0%}); "
        f"read both ways it guesses «{also}» ({both.top_probs[g][0]:.0%}).",
        two_readings(both, left, g),
        model,
    )


def writes_question(s2s_bundle, source: str, word: int, model: str) -> dict:
    """Decode `source` with a trained encoder-decoder: while it writes word `word` (1-based), the
    source token its last decoder layer's cross-attention (mean over heads) weighs most is the answer."""
    if not source.strip():
        raise InputError("Type a source on the Decoder on top page for the decoder to write from.")
    tr = s2s_bundle.trace(source)
    T = len(tr.outputs)
    if not 1 <= word <= T:
        raise InputError(
            f"For this source the decoder writes {T} token(s), the end mark [SEP] included: pick a word from 1 to {T}."
        )
    L = tr.cross.shape[0]
    cross = tr.cross[L - 1].mean(0).numpy()  # (T, S)
    row = cross[word - 1]
    labels = _choice_labels(tr.source)
    best, wrote = int(row.argmax()), tr.outputs[word - 1]
    return _body(
        "writes",
        f"While writing word {word} («{wrote}»), which source token does the decoder look at most? «{source}»",
        labels,
        labels[best],
        f"Writing «{wrote}», its last layer gives «{labels[best]}» {row[best]:.0%} of its cross-attention "
        "(mean over heads).",
        s2s_figures.attention(
            cross, tr.outputs, tr.source, f"cross-attention, layer {L}, writing word {word}", word - 1, "source token"
        ),
        model,
    )


def _choice_labels(tokens: list[str]) -> list[str]:
    """One label a token, distinct: a token seen before gets its position ("the (7)")."""
    seen: set[str] = set()
    out = []
    for i, t in enumerate(tokens):
        out.append(t if t not in seen else f"{t} ({i})")
        seen.add(t)
    return out


def look_question(bundle, text: str, layer: int, head: int, from_token: int, model: str) -> dict:
    """From token `from_token` of `text`, layer `layer` head `head` (0-based): the token it
    attends to most is the answer."""
    tokens, att = attentions_of(bundle, text)  # (L, H, T, T)
    L, H, T, _ = att.shape
    if not (0 <= layer < L and 0 <= head < H and 0 <= from_token < T):
        raise InputError("That layer, head or token is not in this model or sentence.")
    row = att[layer, head, from_token]
    labels = _choice_labels(tokens)
    best = int(row.argmax())
    return _body(
        "look",
        f"From «{labels[from_token]}», which token does layer {layer + 1} head {head + 1} look at most? «{text}»",
        labels,
        labels[best],
        f"Layer {layer + 1} head {head + 1} gives «{labels[best]}» {row[best]:.0%} of the attention "
        f"of «{labels[from_token]}».",
        values_bar(labels, row, title=f"Where «{tokens[from_token]}» looks: layer {layer + 1} head {head + 1}"),
        model,
    )


def follows_question(bundle, text_a: str, text_b: str, model: str) -> dict:
    """Does B follow A? The NSP head's answer."""
    if not text_b.strip():
        raise InputError("Type a sentence B (the sidebar's sentences) to ask whether it follows A.")
    p = mlm.nsp_probability(bundle, text_a, text_b)
    answer = "yes" if p >= 0.5 else "no"
    return _body(
        "follows",
        f"Does the model think B follows A? A: «{text_a}» B: «{text_b}»",
        ["yes", "no"],
        answer,
        f"The next-sentence head gives {p:.0%} to 'B follows A'.",
        nsp_bar(p),
        model,
    )


def pieces_question(bundle, word: str, model: str) -> dict:
    """How many WordPiece pieces the model's tokenizer cuts `word` into."""
    word = word.strip()
    if not word or len(word) > WORD_CHARS or len(word.split()) != 1:
        raise InputError(f"Type one word (at most {WORD_CHARS} characters) to ask how many pieces it is.")
    pieces = bundle.tokenizer.tokenize(word)
    if not pieces:
        raise InputError("That word gives no pieces at all: try another.")
    n = min(len(pieces), len(PIECE_CHOICES))
    fig = go.Figure(go.Bar(x=safe_labels(pieces), y=[1] * len(pieces), text=safe_labels(pieces), hoverinfo="skip"))
    fig.update_layout(title=f"«{safe_labels([word])[0]}» in pieces", height=240, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(type="category")
    fig.update_yaxes(visible=False)
    return _body(
        "pieces",
        f"How many pieces does the tokenizer cut «{word}» into?",
        PIECE_CHOICES,
        PIECE_CHOICES[n - 1],
        f"«{word}» becomes " + " + ".join(f"«{p}»" for p in pieces) + ".",
        fig,
        model,
    )


def heads_question(bundle, text: str, model: str, gap: int = 1) -> dict:
    """Of three heads (the one whose removal hurts the top word of [MASK] number `gap` (1-based)
    most, and two that hurt it least), which one, switched off, hurts it most?"""
    need_mlm(bundle, "a heads question")
    which, shown = asked_gap(text, gap)
    p = mlm.mlm_topk(bundle, text, k=1)
    at = p.positions[_gap_index(p, gap)]
    imp = ablation.head_importance(bundle, text, position=at)  # scores (L, H): what the top word loses
    ranked = imp.ranking()
    picks = [ranked[0], ranked[-1], ranked[len(ranked) // 2]][:HEADS_ASKED]
    names = [f"layer {layer + 1} head {head + 1}" for layer, head, _ in picks]
    return _body(
        "heads",
        f"Which of these heads, switched off, lowers the model's answer for {which} most? «{shown}»",
        sorted(names),
        names[0],
        f"With {names[0]} off, the log-probability of «{imp.target}» falls by {picks[0][2]:.2f}, the most of any head.",
        values_bar(
            names,
            [s for _, _, s in picks],
            title=f"What «{imp.target}» loses with each head off",
            y_title="fall in log-probability",
        ),
        model,
    )


def knows_question(bundle, pair: Pair, model: str) -> dict:
    """Patch the clean run's residual stream into the corrupted run at the [MASK] alone, layer by
    layer: the first row (the embeddings' output, then layer 1, ...) that restores at least
    KNOWS_SHARE of the clean answer over the foil is the answer. The last layer restores all of it
    by construction, so there always is one. On a pair this model does not split (the clean run not
    preferring the answer, or the corrupted one not preferring the foil) the why says so."""
    r = activation_patching(bundle, *pair, site="residual")
    caveat = ""
    if not r.clean > 0 > r.corrupted:  # the question's premise fails: say what the model did
        caveat = (
            f" Careful: on this model «{r.answer}» over «{r.foil}» is {r.clean:+.2f} in the clean sentence and "
            f"{r.corrupted:+.2f} in the corrupted one (logits), so the clean run does not prefer «{r.answer}» or the "
            "corrupted one does not prefer the foil: restoring only moves it back toward the clean run's value."
        )
    share = r.effect[:, r.position]  # (L+1,)
    first = int((share >= KNOWS_SHARE).argmax())
    return _body(
        "knows",
        f"At which layer does the [MASK] know «{r.answer}» rather than «{r.foil}»? Clean: «{pair.clean}» "
        f"Corrupted: «{pair.corrupted}»",
        list(r.rows),
        r.rows[first],
        f"Copying the clean run's vector at the [MASK] into the corrupted run restores {share[first]:.0%} of "
        f"«{r.answer}» over «{r.foil}» from {r.rows[first]} on"
        + (f" ({share[first - 1]:.0%} at {r.rows[first - 1]})" if first else "")
        + f": before it, the [MASK]'s own vector brings back less. (At least {KNOWS_SHARE:.0%} counts.)"
        + caveat,
        values_bar(
            r.rows,
            share,
            title="What the [MASK]'s clean vector restores, layer by layer",
            y_title="share restored",
        ),
        model,
    )


def prefers_question(bundle, paradigm: str, number: int, model: str) -> dict:
    """Pair `number` (1-based) of a built-in paradigm, both sentences scored by pseudo-log-likelihood
    (each token masked in turn): the model's answer is the sentence it scores higher, grammatical or
    not; the choices come in alphabetical order, so their order gives nothing away."""
    if paradigm not in PARADIGMS:
        raise InputError(f"no paradigm called {paradigm!r}: pick one of {', '.join(PARADIGMS)}")
    pairs = PARADIGMS[paradigm].pairs
    if not 1 <= number <= len(pairs):
        raise InputError(f"the paradigm {paradigm!r} has pairs 1 to {len(pairs)}, not {number}")
    good, bad = pairs[number - 1]
    scored = score_pairs(bundle, [(good, bad)])
    g, b = scored.good[0], scored.bad[0]
    preferred = good if scored.correct[0] else bad
    verdict = "the grammatical one" if preferred == good else f"not the grammatical one, «{good}»"
    return _body(
        "prefers",
        f"Which sentence does the model find more likely? ({paradigm})",
        sorted([good, bad]),
        preferred,
        f"With each token masked in turn, the model's log-probabilities add up to {g.total:.2f} for «{good}» "
        f"and {b.total:.2f} for «{bad}»: it prefers «{preferred}», {verdict}. "
        f"The rule: {PARADIGMS[paradigm].about}",
        pair_word_scores(g.words, g.word_scores, b.words, b.word_scores),
        model,
    )


FIRES_WORDS = "dog, ran, the, quickly"  # the words a "fires" question offers unless the teacher types others


def fires_words(typed: str) -> list[str]:
    """The words of a "fires" question: comma-separated, 2 to 6 distinct single words."""
    words = [w.strip() for w in (typed or FIRES_WORDS).split(",") if w.strip()]
    if not 2 <= len(words) <= 6 or len(set(words)) != len(words) or any(len(w.split()) != 1 for w in words):
        raise InputError("Give 2 to 6 different single words, separated by commas (e.g. dog, ran, the, quickly).")
    if any(len(w) > WORD_CHARS for w in words):
        raise InputError(f"A word is at most {WORD_CHARS} characters.")
    return words


def fires_question(bundle, dictionary, feature: int, typed: str, model: str) -> dict:
    """Which of the typed words, each read alone, sets `feature` of `dictionary` highest?"""
    from bert.analysis.dictionary_words import word_activations

    words = fires_words(typed)
    acts = word_activations(bundle, dictionary, feature, words)
    best = max(range(len(words)), key=acts.__getitem__)
    if acts[best] <= 0:
        raise InputError(f"Feature {feature} fires on none of these words read alone: give other words.")
    if sorted(acts)[-2] == acts[best]:
        raise InputError(f"Two of these words set feature {feature} equally high: give other words.")
    return _body(
        "fires",
        f"Read alone, which of these words makes feature {feature} (layer {dictionary.layer}) fire most?",
        words,
        words[best],
        "Read alone: " + ", ".join(f"«{w}» {a:.2f}" for w, a in zip(words, acts, strict=True)) + ".",
        values_bar(words, acts, title=f"Feature {feature}, each word read alone", y_title="activation"),
        model,
    )


def lesson_questions(lessons: Sequence) -> dict[str, tuple]:
    """{label: (lesson, question)} of every question of `lessons` (app.lessons.LESSONS, handed down
    by the entry: the board stands beside the lessons, it does not import them)."""
    return {f"{lesson.title}: {q.key}": (lesson, q) for lesson in lessons for q in lesson.questions}


def lesson_question(bundle, label: str, model: str, lessons: Sequence) -> dict:
    lesson, q = lesson_questions(lessons)[label]
    asked = q.ask(bundle)
    return _body(
        "lesson",
        asked.prompt,
        list(asked.choices),
        asked.choices[asked.answer],
        asked.why,
        asked.figure,
        model,
    )
