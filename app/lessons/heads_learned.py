"""Lesson 6: what attention heads learned: their habits, which ones a prediction needs when one is
switched off or copied, a minimal pair, where a noun's number is written (probes), and features."""

from __future__ import annotations

import numpy as np

from bert.analysis.ablation import head_importance
from bert.analysis.attention_heads import head_patterns_over
from bert.analysis.full import analyze
from bert.analysis.patching import PRESETS, activation_patching
from bert.analysis.probes import probe_model
from bert.analysis.scoring import score_pairs
from bert.errors import DataError, InputError

from ..figures.attention import attention_heatmap
from ..figures.attention_heads import importance_heatmap, pattern_map
from ..figures.causes import pair_word_scores, patching_heatmap, probe_curves
from ..figures.core import values_bar
from .claims import Said, claim, percent
from .features import STEP as FEATURES_STEP
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with

ABLATE = "The capital of France is [MASK]."
PAIRS_PARADIGM = "agreement across a prepositional phrase"
PAIR = ("The author near the cabinets is here.", "The author near the cabinets are here.")
PROBE_SENTENCES = 60  # Brown sentences: enough for noun-number probes at every layer, few enough to train on a click
FEW = 0.1  # "a few heads matter a lot": the top tenth of the heads carries most of the harm


def _patterns(bundle):
    hp = head_patterns_over(bundle)
    return hp, pattern_map(hp.labels, hp.stats)


def _importance(bundle):
    imp = head_importance(bundle, ABLATE)
    return imp, importance_heatmap(imp.scores, imp.unit, imp.target)


def _important_head_map(bundle):
    imp = head_importance(bundle, ABLATE)
    lay, h = np.unravel_index(int(np.argmax(imp.scores)), imp.scores.shape)
    an = analyze(bundle, ABLATE)
    return attention_heatmap(an.attentions[lay, h], an.tokens, title=f"layer {lay + 1}, head {h + 1}")


def _habits_by_layer(bundle):
    busy = busy_heads(bundle)
    return values_bar(
        [f"layer {l + 1}" for l in range(len(busy))],
        busy,
        title="heads per layer that do not rest on [CLS] or [SEP]",
        y_title="heads",
    )


def _agreement_patched(bundle):
    """The number-agreement preset patched layer by layer and token by token; None when this
    model cannot patch it (its tokens do not line up, or its answer does not move)."""
    r = _patched(bundle)
    if r is None:
        return None
    return patching_heatmap(r.effect, r.rows, r.columns, r.position, title="share of “are” over “is” restored")


def _pair_word_by_word(bundle):
    """PAIR's two sentences scored word by word (pseudo-log-likelihood); None when the model
    cannot score them (no masked-word head)."""
    try:
        res = score_pairs(bundle, [PAIR])
    except InputError:
        return None
    g, b = res.good[0], res.bad[0]
    return pair_word_scores(g.words, g.word_scores, b.words, b.word_scores)


def _number_probes(bundle):
    """A noun-number probe (singular or plural) and its control per layer on PROBE_SENTENCES Brown
    sentences; None when the corpus is not on this server or the model cannot read the words."""
    try:
        curve = probe_model(bundle, "number", PROBE_SENTENCES)
    except (DataError, InputError):
        return None
    return probe_curves([(bundle.name, curve)])


def _ask_cls_heads(bundle) -> Asked:
    hp, fig = _patterns(bundle)
    counts = hp.counts()
    n = counts["[CLS]"]
    total = hp.labels.size
    wrong = [str(x) for x in (0, total // 2, total, max(1, n // 2), n + 5)]
    common = max(counts, key=counts.get)
    habit = (
        "resting on a special token is this model's most common habit"
        if common in ("[CLS]", "[SEP]")
        else f"on this model the most common habit is “{common}” ({counts[common]} heads)"
    )
    return ask(
        "Over the probe sentences, how many heads put most of their attention on [CLS]?",
        choices_with(str(n), wrong, "cls-heads"),
        f"{n} of {total}: {habit}.",
        fig,
    )


@claim("heads.few-heads-matter")
def few_heads_matter(bundle) -> Said:
    if not bundle.has_mlm:
        return Said(False, "")
    return harm_spread(head_importance(bundle, ABLATE))


def harm_spread(imp) -> Said:
    """The few-heads-matter claim on a head importance already computed."""
    drops = np.sort(np.clip(imp.scores.ravel(), 0, None))[::-1]
    k = max(1, int(np.ceil(FEW * drops.size)))
    share = float(drops[:k].sum() / drops.sum()) if drops.sum() > 0 else 0.0
    facts = {"heads": k, "share": share, "largest": float(drops[0])}
    said = (
        f"Here the {k} heads that matter most carry {percent(share)} of all the harm done by switching heads "
        f"off one at a time (the largest drop {drops[0]:.2f}, the median head's {float(np.median(drops)):.2f})"
    )
    if share > 0.5:
        return Said(True, f"{said}: a few heads matter a lot, most hardly at all.", facts)
    return Said(False, f"{said}: on this model the harm is spread over many heads.", facts)


def _ask_ablation(bundle) -> Asked:
    imp, fig = _importance(bundle)
    lay, h = np.unravel_index(int(np.argmax(imp.scores)), imp.scores.shape)
    L, H = imp.scores.shape
    wrong = [f"layer {(lay + d) % L + 1}, head {(h + 2 * d) % H + 1}" for d in (1, 2, 3)]
    return ask(
        f"“{ABLATE}”: switching off which head hurts the guess “{imp.target}” most?",
        choices_with(f"layer {lay + 1}, head {h + 1}", wrong, "ablation"),
        f"Layer {lay + 1}, head {h + 1}: without it the log-probability of “{imp.target}” drops by "
        f"{imp.scores[lay, h]:.2f}. {harm_spread(imp).text}",
        fig,
    )


def busy_heads(bundle) -> list[int]:
    """Per layer, the heads whose habit over the probe sentences is not resting on [CLS] or [SEP]."""
    hp = head_patterns_over(bundle)
    return [int(((row != "[CLS]") & (row != "[SEP]")).sum()) for row in hp.labels]


@claim("heads.busy-heads-low")
def busy_heads_low(bundle) -> Said:
    busy = busy_heads(bundle)
    half = len(busy) // 2
    low, high = sum(busy[:half]), sum(busy[len(busy) - half :])
    facts = {"low": low, "high": high}
    said = f"{low} busy heads in the lower {half} layers, {high} in the upper {half}"
    if low > high:
        return Said(True, f"This one does: {said}.", facts)
    return Said(False, f"This one does not: {said}.", facts)


def _patched(bundle):
    """The number-agreement preset patched at the residual stream, or None when this model cannot."""
    try:
        return activation_patching(bundle, *PRESETS["Number agreement"], "residual")
    except InputError:
        return None


@claim("heads.patching-subject-then-mask")
def subject_then_mask(bundle) -> Said:
    r = _patched(bundle)
    if r is None:
        return Said(False, "")  # the step's none_note speaks
    if not (r.clean > 0 > r.corrupted):
        return Said(
            False,
            f"On this model the pair does not split as it should: “{r.answer}” over “{r.foil}” is {r.clean:+.2f} "
            f"in “The keys …” and {r.corrupted:+.2f} in “The key …” (logits), so there is little to bring back.",
            {"clean": r.clean, "corrupted": r.corrupted},
        )
    subject = next(j for j, (a, b) in enumerate(zip(r.clean_tokens, r.corrupted_tokens)) if a != b)
    at_subject, at_mask = r.effect[:, subject], r.effect[:, r.position]
    over = [i for i in range(len(r.rows)) if at_mask[i] > at_subject[i]]
    facts = {"subject": float(at_subject[0]), "mask": float(at_mask[-1]), "crossing": over[0] if over else None}
    said = (
        f"Here the subject's vector brings back {percent(at_subject[0])} at {r.rows[0]}, the [MASK]'s "
        f"{percent(at_mask[-1])} at {r.rows[-1]}"
    )
    if at_subject[0] > 0.5 and at_mask[-1] > 0.5 and over:
        return Said(
            True,
            f"{said}; the [MASK] takes over from {r.rows[over[0]]}: low down the subject carries "
            "the number, higher up the [MASK] does.",
            facts,
        )
    return Said(
        False, f"{said}: on this model the number does not move from the subject to the [MASK] so simply.", facts
    )


@claim("heads.pair-verb")
def pair_verb(bundle) -> Said:
    try:
        res = score_pairs(bundle, [PAIR])
    except InputError:
        return Said(False, "")  # the step's none_note speaks
    g, b = res.good[0], res.bad[0]
    i = next(j for j, (x, y) in enumerate(zip(g.words, b.words)) if x != y)
    sg, sb = float(g.word_scores[i]), float(b.word_scores[i])
    facts = {"good": sg, "bad": sb}
    said = f"Here “{g.words[i]}” scores {sg:.2f} and “{b.words[i]}” {sb:.2f}"
    if sg > sb:
        return Said(True, f"{said}: it still knows the subject is one author.", facts)
    return Said(False, f"{said}: past “near the cabinets” this model takes the plural nearby for the subject.", facts)


HEADS = Lesson(
    "heads",
    "6. What heads learned",
    "Name each head's habit, then switch heads off and see which ones a prediction needs.",
    (
        Step(
            "A habit for every head",
            "Measured over a dozen varied sentences, each head gets the name of what it attends to most: "
            "[CLS], [SEP], the previous or next token, itself, punctuation, or broad.",
            lambda b: _patterns(b)[1],
            Link("pages/head_patterns.py", "Open the Head patterns page", {"on": "probe"}),
            "lesson-head-patterns",
        ),
        Step(
            "Switch a head off",
            "Each cell is the model's guess for the [MASK] with that one head switched off: {high} means the "
            "guess got worse.",
            lambda b: _importance(b)[1],
            Link("pages/ablation.py", "Open the Head ablation page", {"mask": ABLATE}),
            "lesson-head-ablation",
            claim="heads.few-heads-matter",
        ),
        Step(
            "The head that matters most",
            "Here is what that most important head looks at, for the same sentence: its row for [MASK] shows "
            "which words it carries to the gap.",
            _important_head_map,
            figure_name="lesson-important-head",
        ),
        Step(
            "Busy heads sit low",
            "Count, layer by layer, the heads that do something other than rest on [CLS] or [SEP]. In many "
            "BERTs the busy ones sit in the lower layers: does this model agree?",
            _habits_by_layer,
            Link("pages/head_patterns.py", "Open the Head patterns page", {"on": "probe"}),
            "lesson-habits-by-layer",
            claim="heads.busy-heads-low",
        ),
        Step(
            "Copy instead of switching off",
            "Run “The keys …” and “The key …”, then rerun the second with one vector copied from the first. "
            "Each cell says how much of the plural answer that copy brings back.",
            _agreement_patched,
            Link("pages/causes.py", "Open the Causes page", {"view": "patch"}),
            "lesson-patching",
            claim="heads.patching-subject-then-mask",
            none_note="This model cannot patch this pair: its two sentences split into different numbers of "
            "tokens, or both get the same answer. Try a pair of your own on the Causes page.",
        ),
        Step(
            "Which sentence sounds right?",
            "Score a sentence by hiding each word in turn and adding up how likely the model finds the real "
            f"one (its pseudo-log-likelihood). Here “{PAIR[0]}” meets its twin with “are”: each bar is one "
            "word's score in each sentence. The verb's bars answer whether the model still knows, past "
            "“near the cabinets”, that the subject is one author.",
            _pair_word_by_word,
            Link("pages/causes.py", "Open Minimal pairs", {"view": "pairs", "paradigm": PAIRS_PARADIGM}),
            "lesson-minimal-pair",
            claim="heads.pair-verb",
            none_note="This model has no masked-word head to score a sentence with: pick a pre-trained model.",
        ),
        Step(
            "Where a noun's number is written",
            "Train a small linear classifier (a probe) on each layer's word vectors to tell a singular noun "
            "from a plural one, and a control probe that must learn a random tag for every word. The solid "
            "line is what each layer's vectors tell; the dashed line is what a probe memorises without them. "
            "Where the gap between them (selectivity) is widest, the number is written in.",
            _number_probes,
            Link("pages/causes.py", "Open Probes", {"view": "probes", "property": "number"}),
            "lesson-probes",
            none_note="The Brown Corpus the probes learn from is not on this server: `make data` fetches it.",
        ),
        FEATURES_STEP,
    ),
    (Question("cls-heads", _ask_cls_heads), Question("ablation", _ask_ablation)),
)
