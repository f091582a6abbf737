"""A finished tagger's or reader's run (the Fine-tuning page's "label every word" and "find the
answer") as a notebook, like app/export/notebook.py's finetune_report: the run's curves redrawn
from its recorded events with the page's figure builder, its scores printed (a tagger's worked
out again from its confusion matrix), then the run's model loaded to tag or answer the try-it
input. A session's model cannot be loaded by name: the notebook says how to load its download.
Typed text reaches the code cells only as Python string literals (repr)."""

from __future__ import annotations

import json

from bert.train.events import TaskHeadEval, TaskHeadStart, TaskHeadStep

from .notebook import CONFUSION_SCORES, ModelRef, notebook_without_model, run_intro
from .notebook_prose import READER_MD, TAGGER_MD
from .stamp import Stamp


def _try_md(run: ModelRef, what: str) -> str:
    """The try-it cells' heading: `what` they show, and for a session's model how to load it."""
    note = (
        " The model was trained in a session of the app: download it there (*Keep it*, BERT Explorer "
        "format), unzip it and point the next cell at its folder."
        if run.note()
        else ""
    )
    return f"**Try it** with the run's model: {what}.{note}"


def _run_intro(explanation: str, name: str, events, steps: int) -> list[tuple[str, str]]:
    """A run's first cells: the page's explanation with the run's name, and its curves from the
    events task_head_curves reads."""
    kept = [e for e in events if isinstance(e, (TaskHeadStart, TaskHeadStep, TaskHeadEval))]
    curves = f"task_head_curves(events, {int(steps)})"
    return run_intro(
        explanation, name, kept, "TASK_HEAD", curves, "from app.figures.task_heads import task_head_curves\n"
    )


def tagger_report(
    model: ModelRef, stamp: Stamp, name: str, key: str, events, scores: dict, report: dict, steps: int, sentence: str
) -> str:
    """A finished tagger run `name` (its model's key `key`): its curves from the run's events, its
    scores and report (bert/train/tag_metrics.py's, as a dict), and the model tagging `sentence`.
    The page's `model` is not the run's."""
    run = ModelRef(key, name)
    cells = [
        *_run_intro(TAGGER_MD, name, events, steps),
        (
            "code",
            "import numpy as np\nimport pandas as pd\n\n"
            f"scores = json.loads({json.dumps(scores)!r})  # the kept model's, on every validation sentence\n"
            f"report = json.loads({json.dumps(report)!r})\n"
            "tags = report['tags']\n"
            + CONFUSION_SCORES
            + "entity = f\", entity F1 {scores['f1']:.1%}\" if scores.get('f1') is not None else ''\n"
            "print(f'word accuracy {accuracy:.1%}{entity}')\n"
            "numbers = {'scores': scores, 'accuracy': accuracy, 'precision': precision.tolist(),\n"
            "           'recall': recall.tolist()}  # for your own code\n"
            "training.confusion_matrix(report['confusion'], tags).show()\n"
            "pd.DataFrame({'tag': tags, 'precision': precision, 'recall': recall, 'words in validation': conf.sum(1)})",
        ),
        ("markdown", _try_md(run, "each word's tag and its probability, and where the first word looks")),
        (
            "code",
            f"{run.code('tagger')}\n\nfrom bert.tagging import word_attention\n\n"
            f"sentence = {sentence!r}\n"
            "words = tagger.tag([sentence])[0]  # (word, tag, probability) a word\n"
            "numbers = {'words': [w.word for w in words], 'tags': [w.tag for w in words],\n"
            "           'probs': [float(w.prob) for w in words]}  # for your own code\n"
            "pd.DataFrame(words, columns=['word', 'tag', 'prob'])",
        ),
        (
            "code",
            "from app.figures.core import esc, values_bar\n\n"
            "wa = word_attention(tagger, sentence)  # weights: (layers, heads, words, [CLS] + words + [SEP])\n"
            "word, layer = 1, wa.weights.shape[0]  # the word (counted from 1) and the layer, as the page starts\n"
            "row = wa.weights[layer - 1].mean(0)[word - 1]  # the mean of the layer's heads\n"
            "title = esc(f'Where «{wa.words[word - 1]}» looks: layer {layer}, mean of its heads')\n"
            "values_bar(wa.labels, row.tolist(), title=title, y_title='attention', range_y=[0, 1])",
        ),
    ]
    return notebook_without_model(f"Tagger run {name}", stamp, run, cells)


def reader_report(
    model: ModelRef,
    stamp: Stamp,
    name: str,
    key: str,
    events,
    scores: dict,
    report: dict,
    steps: int,
    question: str,
    passage: str,
) -> str:
    """A finished reader run `name` (its model's key `key`): its curves from the run's events, its
    scores and answered validation questions (report["examples"]), and the model answering
    `question` on `passage`. The page's `model` is not the run's."""
    run = ModelRef(key, name)
    cells = [
        *_run_intro(READER_MD, name, events, steps),
        (
            "code",
            "import pandas as pd\n\nfrom app.figures.task_heads import span_probs\n\n"
            f"scores = json.loads({json.dumps(scores)!r})  # the kept model's, in percent\n"
            f"examples = json.loads({json.dumps(report.get('examples', []))!r})\n"
            "print(f\"exact match {scores.get('exact_match')}, F1 {scores.get('f1')}\")\n"
            "numbers = {'scores': scores, 'predicted': [ex['predicted'][0] for ex in examples]}  # for your own code\n"
            "for ex in examples[:1]:  # the first answered question's start and end probabilities\n"
            "    span_probs(ex['tokens'], ex['start_probs'], ex['end_probs']).show()\n"
            "pd.DataFrame({'question': [ex['question'] for ex in examples],\n"
            "              'predicted': [ex['predicted'][0] for ex in examples],\n"
            "              'gold': [', '.join(t for t, _ in ex['gold']) for ex in examples],\n"
            "              'exact match': [ex['exact_match'] for ex in examples],\n"
            "              'F1': [ex['f1'] for ex in examples]})",
        ),
        ("markdown", _try_md(run, "the span of the passage that answers the question")),
        (
            "code",
            f"{run.code('reader')}\n\n"
            f"question = {question!r}\npassage = {passage!r}\n"
            "ans = reader.answer(question, passage)\n"
            "print(f'Answer: {ans.text!r} (characters {ans.start}-{ans.end}, score {ans.score:.2f})')\n"
            "w = ans.windows[ans.window]  # the passage's window the answer came from\n"
            "lo, hi = w.context_start, w.context_start + w.n\n"
            "start, end = ans.start_probs[ans.window][lo:hi].tolist(), ans.end_probs[ans.window][lo:hi].tolist()\n"
            "numbers = {'text': ans.text, 'start': ans.start, 'end': ans.end, 'score': float(ans.score),\n"
            "           'start_probs': start, 'end_probs': end}  # for your own code\n"
            "span_probs(w.enc.tokens[lo:hi], start, end)",
        ),
    ]
    return notebook_without_model(f"Reader run {name}", stamp, run, cells)
