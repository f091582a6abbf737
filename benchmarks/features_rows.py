"""The Features page's row on minilm-l6, against its target:

- dictionary-run: the page's default dictionary (layer 3, 1,024 features, 32 active a token, 200
  steps on 1,500 held-in sentences) trained on ONE torch thread, then its quality on 300 held-out
  sentences (variance explained, L0, dead features, the splice cost on held-out text and on the
  everyday cloze set), seconds for both, target 180 s; the control (the same recipe on random
  weights of the same shape) is trained after it and its figures are in the note, not the time.

Not in --tiny: a tiny random model reads the corpora as unknown words.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch

from .report import Row, check

if TYPE_CHECKING:
    from .bench import Bench
    from .models import Setup

FEATURES_ROWS = ["dictionary-run"]
TARGET_S = 180.0
DEFAULTS = dict(layer=3, n_features=1024, sparsity=32, steps=200, sentences=1500, held_out=300)


def _one(bundle, train, held):
    """(seconds, Quality) of the default dictionary on `bundle`."""
    from bert.analysis import dictionary as dic

    d = DEFAULTS
    t0 = time.perf_counter()
    done = list(dic.train_dictionary(bundle, d["layer"], train, d["n_features"], d["sparsity"], d["steps"]))[-1]
    acts = dic.gather_activations(bundle, d["layer"], held)
    q = dic.dictionary_quality(bundle, done.dictionary, acts, held[: acts.texts_read])
    return time.perf_counter() - t0, q


def _said(q) -> str:
    s, c = q.splice, q.cloze
    return (
        f"variance explained {q.variance_explained:.3f}, L0 {q.l0:.0f}, dead {q.dead_share:.1%}, held-out top-1 "
        f"{s.top1:.3f} -> {s.spliced_top1:.3f}, cloze top-1 {c.top1:.3f} -> {c.spliced_top1:.3f}"
    )


def features(b: Bench, setup: Setup) -> None:
    if not b.wants_any(FEATURES_ROWS):
        return
    if setup.tiny:
        b.skip("dictionary-run", "a tiny random model: the corpora are unknown words to it")
        return
    from bert.analysis.dictionary import corpus_texts, random_control

    train, held = corpus_texts(DEFAULTS["sentences"], DEFAULTS["held_out"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cpu0 = time.process_time()
        wall, q = _one(setup.bundle, train, held)
        cpu = time.process_time() - cpu0
        _, qc = _one(random_control(setup.bundle), train, held)
    finally:
        torch.set_num_threads(threads)
    note = f"{_said(q)}; control: {_said(qc)}; one thread, {cpu:.1f} s of CPU"
    extra = {
        "variance_explained": q.variance_explained,
        "l0": q.l0,
        "dead": q.dead,
        "splice_top1": [q.splice.top1, q.splice.spliced_top1],
        "cloze_top1": [q.cloze.top1, q.cloze.spliced_top1],
        "control_variance_explained": qc.variance_explained,
        "cpu_s": cpu,
    }
    what = f"{setup.label} the Features page's default dictionary and its quality (theirs: the target)"
    b.add(check(Row("dictionary-run", what, "s", wall, TARGET_S, wall / TARGET_S, note=note, extra=extra), 1.0))
