"""Lesson 5: fine-tuning by swapping the head: the model bottom to top, one vector for the whole
text and what [CLS] reads, a task head for every word and one for an answer's span, then a live run."""

from __future__ import annotations

from bert.analysis.full import analyze

from ..figures.core import values_bar
from ..figures.model_diagram import model_diagram
from .lesson import Asked, Lesson, Link, Question, Step, ask, choices_with
from .pretraining_games import FIRST
from .task_heads import span_scores, tag_scores


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
