"""Notebooks of the Causes page's Minimal pairs and Probes views, drawn with its figure builders
(app/figures/causes.py); built as app/export/notebook.py's docstring says."""

from __future__ import annotations

from .notebook import ModelRef, md_text, notebook
from .notebook_prose import PAIRS_MD, PROBES_MD
from .stamp import Stamp


def _pairs_literal(pairs) -> str:
    """Typed (good, bad) pairs as a Python list literal, one pair a line."""
    return "[\n" + "".join(f"    ({str(g)!r}, {str(b)!r}),\n" for g, b in pairs) + "]"


def minimal_pairs(model: ModelRef, stamp: Stamp, paradigm: str | None, pairs, word_level: bool, pick: int) -> str:
    """The Minimal pairs view: the built-in `paradigm`'s pairs (None: the typed `pairs`, (good,
    bad) each) scored by PLL (word-level with `word_level`): the accuracy, every pair's scores, and
    pair `pick` (0-based) word by word."""
    if paradigm is not None:
        source = (
            "from bert.analysis.paradigms import PARADIGMS\n\n"
            f"paradigm = {paradigm!r}\n"
            "pairs = PARADIGMS[paradigm].pairs  # written from a template: (good sentence, bad sentence)\n"
            "print(PARADIGMS[paradigm].about)"
        )
        about = f"\n\nThe built-in paradigm **{md_text(paradigm)}**."
    else:
        source = f"pairs = {_pairs_literal(pairs)}  # (good sentence, bad sentence), as typed"
        about = f"\n\nYour {len(pairs)} pair{'s' if len(pairs) != 1 else ''}."
    cells = [
        ("markdown", PAIRS_MD + about),
        (
            "code",
            "import pandas as pd\n\n"
            "from app.figures.causes import pair_word_scores\n"
            "from bert.analysis.scoring import score_pairs\n\n"
            f"{source}\nword_level = {bool(word_level)}\n"
            "res = score_pairs(bundle, pairs, word_level)\n"
            "print(f'The model prefers the good sentence in {int(res.correct.sum())} of {len(res.correct)} pairs '\n"
            "      f'({res.accuracy:.0%})')\n"
            "pd.DataFrame({'good sentence': [s.text for s in res.good], 'bad sentence': [s.text for s in res.bad],\n"
            "              'PLL good': [s.total for s in res.good], 'PLL bad': [s.total for s in res.bad],\n"
            "              'difference': res.differences, 'model right': res.correct})",
        ),
        (
            "code",
            f"pick = {int(pick) + 1}  # the pair to show word by word, counted from 1\n"
            "g, b = res.good[pick - 1], res.bad[pick - 1]\n"
            "print(f'good {g.total:.2f}, bad {b.total:.2f}: the model prefers the '\n"
            "      f\"{'good' if res.correct[pick - 1] else 'bad'} one by {abs(res.differences[pick - 1]):.2f}\")\n"
            "numbers = {'good': [s.total for s in res.good], 'bad': [s.total for s in res.bad],\n"
            "           'accuracy': res.accuracy,\n"
            "           'good_words': g.words, 'good_word_scores': g.word_scores.tolist(),\n"
            "           'bad_words': b.words, 'bad_word_scores': b.word_scores.tolist()}  # for your own code\n"
            "pair_word_scores(g.words, g.word_scores, b.words, b.word_scores)",
        ),
    ]
    return notebook("Minimal pairs", stamp, model, cells)


def every_paradigm(model: ModelRef, stamp: Stamp, word_level: bool) -> str:
    """The Minimal pairs view's "Every paradigm": each built-in paradigm's accuracy."""
    cells = [
        ("markdown", PAIRS_MD + "\n\nBelow: every built-in paradigm, the share of its pairs the model gets right."),
        (
            "code",
            "from app.figures.causes import paradigm_accuracy_bars\n"
            "from bert.analysis.paradigms import PARADIGMS\n"
            "from bert.analysis.scoring import score_pairs\n\n"
            f"word_level = {bool(word_level)}\n"
            "names = list(PARADIGMS)\n"
            "scores = [score_pairs(bundle, PARADIGMS[name].pairs, word_level) for name in names]\n"
            "numbers = {'names': names, 'accuracy': [s.accuracy for s in scores],\n"
            "           'differences': [s.differences.tolist() for s in scores]}  # for your own code\n"
            "for name, s in zip(names, scores):\n"
            "    print(f'{name}: {int(s.correct.sum())} of {len(s.correct)} pairs right ({s.accuracy:.0%})')\n"
            "paradigm_accuracy_bars(names, [s.accuracy for s in scores], [len(s.correct) for s in scores])",
        ),
    ]
    return notebook("Minimal pairs: every paradigm", stamp, model, cells)


def probes(model: ModelRef, stamp: Stamp, prop: str, n_sentences: int, beside: ModelRef | None = None) -> str:
    """The Probes view: a probe per layer for `prop` and its control task, trained on
    `n_sentences` Brown sentences with the page's settings (probe_model's test share and seed), for
    the model and the one `beside` it (None: none)."""
    other = ""
    if beside is not None:
        other = f"\n\n{beside.code('other')}\ncurves.append((other.name, probe_model(other, prop, n_sentences)))"
    cells = [
        ("markdown", PROBES_MD),
        (
            "code",
            "import pandas as pd\n\n"
            "from app.figures.causes import probe_curves\n"
            "from bert.analysis.probes import probe_model\n\n"
            f"prop, n_sentences = {prop!r}, {int(n_sentences)}  # the property, the Brown sentences read\n"
            "curves = [(bundle.name, probe_model(bundle, prop, n_sentences))]  # the page's split and seed" + other,
        ),
        (
            "code",
            "first = curves[0][1]\n"
            "print(f'{first.n_train} words to train on, {first.n_test} to test on, {len(first.classes)} classes: '\n"
            "      f\"{', '.join(first.classes)}; chance {first.majority:.2f}, \"\n"
            '      f"the control\'s {first.control_majority:.2f}")\n'
            "numbers = [{'name': name, 'rows': c.rows, 'accuracy': c.accuracy.tolist(),\n"
            "            'control': c.control.tolist(), 'majority': c.majority, 'classes': c.classes,\n"
            "            'n_train': c.n_train, 'n_test': c.n_test}\n"
            "           for name, c in curves]  # for your own code\n"
            "probe_curves(curves)",
        ),
        (
            "code",
            "pd.DataFrame([{'model': name, 'vectors': r, 'accuracy': c.accuracy[i], 'control': c.control[i],\n"
            "               'selectivity': c.selectivity[i]} for name, c in curves for i, r in enumerate(c.rows)])",
        ),
    ]
    return notebook("Probes", stamp, model, cells)
