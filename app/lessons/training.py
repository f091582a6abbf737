"""Lessons 4, 5 and 6: the two pre-training games, fine-tuning by swapping the head, and what the
heads learned (patterns, what happens when one is switched off or copied, a minimal pair, probes)."""

from __future__ import annotations

import numpy as np

from bert.analysis.ablation import head_importance
from bert.analysis.attention_heads import head_patterns_over
from bert.analysis.explain import logit_lens
from bert.analysis.full import analyze
from bert.analysis.mlm import mlm_topk, nsp_probability
from bert.analysis.patching import PRESETS, activation_patching
from bert.analysis.probes import probe_model
from bert.analysis.scoring import score_pairs
from bert.errors import DataError, InputError

from ..figures.attention import attention_heatmap
from ..figures.attention_heads import importance_heatmap, pattern_map
from ..figures.causes import pair_word_scores, patching_heatmap, probe_curves
from ..figures.core import values_bar
from ..figures.explain import logit_lens_heatmap
from ..figures.masked_lm import mlm_topk_bar
from ..figures.model_diagram import model_diagram
from .claims import Said, claim, ordinal, percent
from .encoders_decoders import rank_of
from .features import STEP as FEATURES_STEP
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with
from .task_heads import span_scores, tag_scores

GAP = "She opened the [MASK] and walked in."
TWO_GAPS = "Paris is a city in [MASK], and there [MASK] many people in it."
FIRST = "The dog ran across the park."
FOLLOWS = "It chased a red ball."
RANDOM = "The stock market closed higher on Friday."
ABLATE = "The capital of France is [MASK]."
PAIRS_PARADIGM = "agreement across a prepositional phrase"
PAIR = ("The author near the cabinets is here.", "The author near the cabinets are here.")
PROBE_SENTENCES = 60  # Brown sentences: enough for noun-number probes at every layer, few enough to train on a click
AGREEING = ("are", "were")  # the second gap of TWO_GAPS: verbs that agree with "many people"
FEW = 0.1  # "a few heads matter a lot": the top tenth of the heads carries most of the harm


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


# --- 5. fine-tuning ---------------------------------------------------------------------------


def _diagram(bundle):
    from bert.model import parameter_counts

    return model_diagram(bundle.config, parameter_counts(bundle.model))


def _cls_reads(bundle):
    an = analyze(bundle, FIRST)
    row = an.attentions[-1, :, 0, :].mean(0)  # last layer, [CLS]'s row, mean over heads
    return values_bar(
        an.tokens, row, title="what [CLS] takes from each token (last layer, mean of heads)", y_title="attention"
    )


def _head_sizes(bundle) -> tuple[int, int]:
    """(numbers in a 2-class head on the pooled vector, numbers in the MLM head's transform)."""
    C = bundle.config.hidden_size
    return 2 * C + 2, C * C + C + 2 * C


def _ask_head(bundle) -> Asked:
    n, _ = _head_sizes(bundle)
    C = bundle.config.hidden_size
    return ask(
        f"Fine-tuning for positive/negative puts a new task head on a {C}-number vector. How many numbers does "
        "that task head learn from scratch?",
        choices_with(f"{n:,}", [f"{C:,}", f"{C * C:,}", f"{bundle.config.vocab_size * C:,}"], "head"),
        f"2 × {C} weights + 2 biases = {n:,}: tiny next to the {sum(p.numel() for p in bundle.model.parameters()):,} "
        "numbers of the model, which start from pre-training.",
    )


def _ask_mean(bundle) -> Asked:
    n = len(analyze(bundle, FIRST).tokens)
    words = len(FIRST.split())
    return ask(
        f"Mean pooling averages the final vectors of every token of the input (padding aside). For “{FIRST}”, "
        "how many vectors is that?",
        choices_with(str(n), [str(words), "1", str(n - 2), str(bundle.config.hidden_size)], "mean"),
        f"{n}: every token, [CLS] and [SEP] included, one vector each (the words are {words}, but the full stop "
        "and the special tokens count too).",
        _cls_reads(bundle),
    )


FINETUNE = Lesson(
    "finetune",
    "5. Fine-tuning: swap the task head",
    "The same encoder, a new small task head, a few minutes of training on labelled examples.",
    (
        Step(
            "The model, bottom to top",
            "Embeddings, then the same layer repeated, then a task head. Pre-training trained one for the two games; "
            "fine-tuning throws it away and puts a small new one on top.",
            _diagram,
            Link("pages/home.py", "Open the Home page"),
            "lesson-model",
        ),
        Step(
            "One vector for the whole text",
            "A classifier needs one vector per text: the final [CLS] vector, or the mean or maximum of all tokens' "
            "vectors (pooling). The new task head turns that vector into one score per class.",
            lambda b: None,
        ),
        Step(
            "What [CLS] reads",
            "The [CLS] vector is built like any other: in the last layer it takes a mix of all tokens' vectors. "
            "Fine-tuning teaches it to collect what the task needs (here, before any fine-tuning).",
            _cls_reads,
            Link("pages/attention.py", "Open on the Attention page", {"a": FIRST}),
            "lesson-cls-reads",
        ),
        Step(
            "One score per tag, on every word",
            "To label every word (parts of speech, names), the new task head reads every token's vector, not one "
            "for the text: one score per tag. A word split into pieces is read at its first piece. Below: each "
            "word's tag probabilities (a fresh task head's, random until trained, unless the model was fine-tuned "
            "to tag).",
            tag_scores,
            Link("pages/finetune.py", "Open “Label every word”", {"shape": "words"}),
            "lesson-tag-scores",
        ),
        Step(
            "Two scores per token: where the answer starts and ends",
            "To find an answer in a passage, the question and the passage go in together and the new task head "
            "gives every passage token two scores: how likely the answer starts there, and how likely it ends there. "
            "The answer is the best span, start before end. Below: a fresh task head's probabilities (or a trained "
            "reader's).",
            span_scores,
            Link("pages/finetune.py", "Open “Find the answer”", {"shape": "answer"}),
            "lesson-span-scores",
        ),
        Step(
            "Train it, live",
            "On the Fine-tuning page, pick the built-in film reviews (or upload your own CSV) and press Start: "
            "the curves show the task head and the encoder learning, and you can try the result at once.",
            lambda b: None,
            Link("pages/finetune.py", "Open the Fine-tuning page"),
        ),
    ),
    (Question("head", _ask_head), Question("mean", _ask_mean)),
)


# --- 6. what heads learned -----------------------------------------------------------------------


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
