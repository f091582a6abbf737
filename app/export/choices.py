"""The menus and sliders of Explanations and Compare, precomputed into their saved files (Attention's
layer and head are `app.figures.attention.head_maps`): each a `Choice` whose draw(...) gives the figure
the page would draw for that position, with the page's own figure builders.

What a draw reads (the page's analyses, its model) is held weakly, as head_maps holds its attention:
a page's button keeps nothing alive past the caches; a figure drawn after they let it go raises
ReleasedError, and the file then keeps the figure shown, with a note (view_file). A saliency is
computed when its figure is drawn (when the file is asked for), through the app's analysis cache.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go

from ..figures.attention import ReleasedError, attention_heatmap
from ..figures.compare import (
    attention_diff_heatmap,
    change_over_training,
    moved_heatmap,
    sense_scatter,
    separation_line,
)
from ..figures.explain import answer_by_layer, logit_lens_heatmap, saliency_bars
from .view_file import Choice


def _weak(obj) -> Callable:
    """obj() while the caches hold it, else ReleasedError."""
    held = weakref.ref(obj)

    def get():
        value = held()
        if value is None:
            raise ReleasedError("the analysis behind this view was released")
        return value

    return get


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


# ---- Explanations ------------------------------------------------------------------------------


def mask_saliency(
    model_key: str, bundle, text: str, positions: list[int], guesses: list[list[str]], start: tuple[int, int]
) -> Choice:
    """Rollout vs saliency for each [MASK] (its token `positions`) and each of its guesses (by rank,
    `guesses[m]`): the page's "Which [MASK]" and "Word to explain"."""
    from ..analysis_cache import saliency

    model = _weak(bundle)

    def draw(m: int, r: int) -> go.Figure:
        sal = saliency(model_key, text, positions[m], guesses[m][r], model())
        return saliency_bars(sal.tokens, sal.rollout, sal.saliency, sal.position, f"“{guesses[m][r]}” at the [MASK]")

    k = min(len(g) for g in guesses)
    names = (tuple(f"{n + 1} (token {p})" for n, p in enumerate(positions)), tuple(_ordinal(r + 1) for r in range(k)))
    return Choice((("[MASK]", len(positions)), ("Guess", k)), draw, start, (model_key, text, "saliency"), names)


def class_saliency(model_key: str, bundle, text: str, labels: list[str], start: int) -> Choice:
    """A classifier's rollout vs saliency for each class: the page's "Class to explain"."""
    from ..analysis_cache import saliency

    model = _weak(bundle)

    def draw(c: int) -> go.Figure:
        sal = saliency(model_key, text, None, c, model())
        return saliency_bars(sal.tokens, sal.rollout, sal.saliency, sal.position, f"class “{labels[c]}”")

    return Choice((("Class", len(labels)),), draw, (start,), (model_key, text, "classes"), (tuple(labels),))


def lens_views(lens, masks: list[int], start: int) -> tuple[Choice, Choice]:
    """The logit lens's map and the answer's probability by layer, for each [MASK] (token `masks`)."""
    held = _weak(lens)

    def at(m: int) -> tuple:
        ln = held()
        i = ln.positions.index(masks[m])
        return ln, i, ln.top_tokens[i][-1][0]

    def heatmap(m: int) -> go.Figure:
        ln, i, answer = at(m)
        return logit_lens_heatmap(ln.top_tokens[i], ln.top_probs[i], answer, f"[MASK] {m + 1} (token {masks[m]})")

    def line(m: int) -> go.Figure:
        ln, i, answer = at(m)
        return answer_by_layer(ln.answer_prob[i], ln.answer_rank[i], answer)

    axes, names = (("[MASK]", len(masks)),), (tuple(f"{n + 1} (token {p})" for n, p in enumerate(masks)),)
    return Choice(axes, heatmap, (start,), None, names), Choice(axes, line, (start,), None, names)


# ---- Compare -----------------------------------------------------------------------------------


def two_models(aa, ab, ta: list[str], tb: list[str], titles: tuple[str, str], start: tuple[int, int]):
    """(A, B): Choices over (Layer, Head) of model A's and B's attention (L, H, T, T) as the page draws
    them (`titles`, escaped), over the layers and heads both have."""
    axes = (("Layer", min(aa.shape[0], ab.shape[0])), ("Head", min(aa.shape[1], ab.shape[1])))
    a, b = _weak(aa), _weak(ab)
    draw_a = lambda l, h: attention_heatmap(a()[l, h], ta, title=titles[0])
    draw_b = lambda l, h: attention_heatmap(b()[l, h], tb, title=titles[1])
    return Choice(axes, draw_a, start), Choice(axes, draw_b, start)


def model_difference(aa, ab, tokens: list[str], moved, start: tuple[int, int]):
    """(difference, moved): Choices over (Layer, Head) of A − B for two models of one shape on the same
    tokens, and the share of each head's attention moved (`moved`, (L, H)) with the head picked."""
    axes = (("Layer", aa.shape[0]), ("Head", aa.shape[1]))
    a, b, moved = _weak(aa), _weak(ab), np.array(moved)  # (L, H): small, kept

    def diff(l: int, h: int) -> go.Figure:
        d = np.asarray(a()[l, h], np.float64) - np.asarray(b()[l, h], np.float64)
        return attention_diff_heatmap(d, tokens, f"A − B, layer {l + 1}, head {h + 1}")

    return Choice(axes, diff, start), Choice(axes, lambda l, h: moved_heatmap(moved, (l, h)), start)


def word_senses(word_map, senses: list[str], sentences: list[str], word: str, layer: int, separations=None) -> dict:
    """{"map"[, "separation"]: Choice over the layer (0 = embeddings)}: the word's sentences placed
    at each layer, and where the senses separate (`separations`, one a layer) with that layer marked."""
    held = _weak(word_map)
    count = len(word_map.coords)
    names = (("0 (embeddings)", *(str(l) for l in range(1, count))),)
    draws = {"map": lambda l: sense_scatter(held().coords[l], senses, sentences, word, l)}
    if separations is not None:
        separations = np.array(separations)
        draws["separation"] = lambda l: separation_line(separations, l)
    return {name: Choice((("Layer", count),), draw, (layer,), None, names) for name, draw in draws.items()}


def training_snapshots(steps: list[int], snaps: list, tokens: list[str], start: tuple[int, int, int]) -> tuple:
    """(map, moved, line): Choices over (Step, Layer, Head) of a training run's recorded attention
    (`snaps`: the recorder's own (L, H, T, T) arrays, kept by reference, small), as the page draws
    them: the head's map at that step, every head's share moved since the first snapshot, and
    the change over training with the step and the head marked."""
    L, H = snaps[0].shape[:2]
    first = np.asarray(snaps[0], np.float32)

    def moved(i: int) -> np.ndarray:  # (L, H), as AttentionSnapshots.change_since_start
        return 0.5 * np.abs(np.asarray(snaps[i], np.float32) - first).sum(-1).mean(-1)

    def att(i: int, l: int, h: int) -> go.Figure:
        title = f"step {steps[i]}, layer {l + 1}, head {h + 1}"
        return attention_heatmap(np.asarray(snaps[i][l, h], np.float32), tokens, title=title)

    change = None

    def line(i: int, l: int, h: int) -> go.Figure:
        nonlocal change
        if change is None:
            change = np.stack([moved(s) for s in range(len(snaps))])  # (S, L, H), once per file
        return change_over_training(steps, change, (l, h), i)

    axes = (("Step", len(steps)), ("Layer", L), ("Head", H))
    names = (tuple(str(s) for s in steps), None, None)
    draw_moved = lambda i, l, h: moved_heatmap(moved(i), (l, h), "moved since the first snapshot")
    return tuple(Choice(axes, draw, start, None, names) for draw in (att, draw_moved, line))
