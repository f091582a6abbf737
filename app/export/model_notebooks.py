"""Notebooks of the views that read a model's vectors across inputs (Compare's "One word in many
sentences"); built as app/export/notebook.py's docstring says."""

from __future__ import annotations

from .notebook import ModelRef, notebook
from .notebook_prose import WORD_SENSES_MD
from .stamp import Stamp


def word_in_sentences(
    model: ModelRef, stamp: Stamp, word: str, sentences: list[str], senses: list[str], layer: int
) -> str:
    """Compare's "One word in many sentences": `word` in each of `sentences` (with its sense, "" for
    none), mapped at `layer` (0 = embeddings), and the senses' separation at every layer."""
    cells = [
        ("markdown", WORD_SENSES_MD),
        (
            "code",
            "from app.figures.compare import sense_scatter, separation_line\n"
            "from bert.analysis.vectors import separation\n"
            "from bert.analysis.words import word_map\n\n"
            f"word = {word!r}\n"
            f"sentences = {list(sentences)!r}\n"
            f"senses = {list(senses)!r}  # one a sentence ('' for none): the colours and the separation\n"
            f"layer = {int(layer)}  # 0 = the embeddings\n"
            "res = word_map(bundle, sentences, word)  # vectors (L+1, N, C); coords (L+1, N, 2): PCA of each layer\n"
            "sense_scatter(res.coords[layer], senses, sentences, word, layer)",
        ),
        (
            "code",
            "sep = separation(res.vectors, senses) if len(set(senses)) >= 2 else None  # one score a layer\n"
            "numbers = {'coords': res.coords.tolist(),\n"
            "           'separation': None if sep is None else sep.tolist()}  # for your own code\n"
            "if sep is not None:\n"
            "    best = int(sep.argmax())\n"
            "    print(f'Separation {sep[layer]:.2f} at layer {layer}; the most, {sep[best]:.2f}, at layer {best}')\n"
            "    separation_line(sep, layer).show()\n"
            "else:\n"
            "    print('Write a sense next to each sentence (at least two different ones) to measure the separation.')",
        ),
    ]
    return notebook("One word in many sentences", stamp, model, cells)
