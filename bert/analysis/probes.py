"""Linear probes per layer (after Tenney et al. 2019): a logistic regression trained on the frozen
vectors of one layer to read a property of each word, with a control task (Hewitt & Liang 2019).

The control task gives every word type one random label, drawn once from the real labels'
frequencies: the same number of classes and the same balance, but nothing linguistic to find. A
probe that does well on the control memorises word identities; selectivity = accuracy on the
property - accuracy on the control says how much of the accuracy is the layer's, not the
probe's. Train and test words come from different sentences (the last `test_share` of them).

The probe: features standardised on the training words, a multinomial logistic regression with
a small L2 penalty, fitted full-batch by L-BFGS from zeros (deterministic).

Dimension letters: L layers (L+1 states with the embeddings), N words, C hidden size, K classes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from .common import readonly
from .probe_data import MAX_WORDS, brown_words, word_vectors

L2 = 1e-3
STEPS = 60  # L-BFGS iterations
MIN_WORDS = 20


@dataclass
class ProbeCurve:
    """A probe's test accuracy at every depth, on the property and on its control task."""

    property: str
    rows: list[str]  # "embeddings", "layer 1", ...
    accuracy: np.ndarray  # (L+1,)
    control: np.ndarray  # (L+1,)
    majority: float  # the property's most frequent class's share of the test words: chance
    control_majority: float  # the same for the control task
    classes: list[str]
    n_train: int
    n_test: int
    seconds: float = 0.0

    @property
    def selectivity(self) -> np.ndarray:
        return self.accuracy - self.control


def fit_probe(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, k: int) -> float:
    """Test accuracy of a logistic regression (C -> k) trained on (x_train, y_train)."""
    xtr = torch.as_tensor(x_train, dtype=torch.float32)
    mu, sd = xtr.mean(0), xtr.std(0).clamp_min(1e-6)
    xtr = (xtr - mu) / sd
    xte = (torch.as_tensor(x_test, dtype=torch.float32) - mu) / sd
    ytr = torch.as_tensor(y_train, dtype=torch.long)
    w = torch.zeros(xtr.shape[1], k, requires_grad=True)
    b = torch.zeros(k, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=STEPS, line_search_fn="strong_wolfe")

    def loss():
        opt.zero_grad()
        out = torch.nn.functional.cross_entropy(xtr @ w + b, ytr) + L2 * (w * w).sum()
        out.backward()
        return out

    with torch.enable_grad():
        opt.step(loss)
    with torch.no_grad():
        return float(((xte @ w + b).argmax(1).numpy() == np.asarray(y_test)).mean())


def control_labels(types: list[str], y: np.ndarray, train: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Every word's control label (N,): one random label per word type (N,), drawn with the
    frequencies of the training words' labels y[train]."""
    rng = np.random.default_rng(seed)
    freq = np.bincount(y[train], minlength=k) / train.sum()
    uniq = sorted(set(types))
    drawn = dict(zip(uniq, rng.choice(k, size=len(uniq), p=freq), strict=True))
    return np.array([drawn[t] for t in types])


def _majority(y: np.ndarray) -> float:
    return float(np.bincount(y).max() / len(y))


def probe_layers(
    features: np.ndarray, labels: list[str], types: list[str], is_test: np.ndarray, prop: str = "", seed: int = 0
) -> ProbeCurve:
    """Train a probe per depth on features (L+1, N, C) for labels (N,) and on the control task of
    the word types (N,); test on the words where is_test (N,) is True."""
    t0 = time.perf_counter()
    classes = sorted(set(labels))
    if len(classes) < 2:
        raise InputError(f"the words have {len(classes)} class(es): a probe needs at least two")
    y = np.array([classes.index(c) for c in labels])
    test = np.asarray(is_test, dtype=bool)
    if test.sum() < MIN_WORDS or (~test).sum() < MIN_WORDS:
        raise InputError(f"too few words: a probe needs at least {MIN_WORDS} to train and {MIN_WORDS} to test")
    k = len(classes)
    yc = control_labels(types, y, ~test, k, seed)
    acc, ctl = [], []
    for x in features:
        acc.append(fit_probe(x[~test], y[~test], x[test], y[test], k))
        ctl.append(fit_probe(x[~test], yc[~test], x[test], yc[test], k))
    return ProbeCurve(
        property=prop,
        rows=["embeddings"] + [f"layer {i}" for i in range(1, len(features))],
        accuracy=readonly(acc),
        control=readonly(ctl),
        majority=_majority(y[test]),
        control_majority=_majority(yc[test]),
        classes=classes,
        n_train=int((~test).sum()),
        n_test=int(test.sum()),
        seconds=time.perf_counter() - t0,
    )


def probe_model(
    bundle,
    prop: str = "pos",
    n_sentences: int = 300,
    test_share: float = 0.2,
    seed: int = 0,
    path=None,
    precision: str = "fp32",
) -> ProbeCurve:
    """Probe every layer of `bundle` for `prop` (probe_data.PROPERTIES) on Brown sentences (from
    the tarball at `path`, default the fetched corpus). The vectors are read in `precision`
    (word_vectors); the probes are fitted in float32 either way."""
    t0 = time.perf_counter()
    fits = min(MAX_WORDS, (bundle.config.max_tokens - 2) * 2 // 3)  # about 1.5 pieces a word at most
    data = brown_words(prop, n_sentences, path, fits)
    vectors, kept = word_vectors(bundle, data.sentences, precision=precision)
    labels, types, is_test = [], [], []
    n_test_from = int(round(int(kept.sum()) * (1 - test_share)))  # the last kept sentences test
    cols = []  # which word of `vectors` each labelled word is
    col = 0
    order = np.cumsum(kept) - 1  # each kept sentence's place among the kept
    for s, (words, tags) in enumerate(zip(data.sentences, data.labels, strict=True)):
        if not kept[s]:
            continue
        for w, t in zip(words, tags, strict=True):
            if t is not None:
                cols.append(col)
                labels.append(t)
                types.append(w.lower())
                is_test.append(order[s] >= n_test_from)
            col += 1
    curve = probe_layers(vectors[:, cols], labels, types, np.array(is_test), prop, seed)
    curve.seconds = time.perf_counter() - t0
    return curve
