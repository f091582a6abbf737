"""One cache over bert.analysis for every page: each result is kept by (function, model key,
input), shared by all sessions and threads, made read-only, and bounded by BYTES in total.

The model key comes from app.resources.CurrentModel.key (built-ins, server folders and a
session's own models each have one); the model itself is passed as `_bundle` and is not part
of the key. A 512-token analysis of MiniLM is about 95 MB, so results are kept by size, not by
count: the least recently used go once all together pass BERT_EXPLORER_CACHE_MB (default 256
MB). A class typing long texts cannot run the server out of memory, which st.cache_resource's
max_entries could not promise. Head masks travel as a sorted tuple of switched-off (layer, head)
pairs (`off_key`), which hashes cheaply.

Nothing is computed here: every function is a keyed call of one bert.analysis function.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from collections import OrderedDict

import numpy as np
import streamlit as st
import torch

import bert
from bert import analysis as A
from bert import settings

from .helpers import clean_text
from .resources import CurrentModel

ENTRY_BYTES = 256  # what one entry costs besides its contents (key, bookkeeping)


# --- a cache bounded by bytes -------------------------------------------------------------------


def cache_budget_bytes() -> int:
    return settings.whole("BERT_EXPLORER_CACHE_MB", minimum=0) * 2**20


def nbytes(obj, _depth: int = 0) -> int:
    """The bytes of a result: its numpy arrays and tensors, strings, and 64 for anything else
    (walking dataclasses, dicts, lists and tuples)."""
    if _depth > 6:
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, torch.Tensor):
        return int(obj.element_size() * obj.nelement())
    if isinstance(obj, dict):
        return sum(nbytes(v, _depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v, _depth + 1) for v in obj) + 8 * len(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(nbytes(getattr(obj, f.name), _depth + 1) for f in dataclasses.fields(obj))
    if isinstance(obj, str):
        return 49 + len(obj)  # a Python str's own header
    return 64


class BudgetCache:
    """Least-recently-used results, evicted once their bytes pass `budget` (the newest is
    always kept, even alone over budget). Thread-safe; one per server."""

    def __init__(self, budget: int):
        self.budget = budget
        self.bytes = 0
        self._items: OrderedDict = OrderedDict()  # key -> (value, size)
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key, value) -> None:
        size = nbytes(value) + ENTRY_BYTES
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._items[key] = (value, size)
            self.bytes += size
            while self.bytes > self.budget and len(self._items) > 1:
                _, (_, s) = self._items.popitem(last=False)
                self.bytes -= s

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


@st.cache_resource(show_spinner=False)
def budget_cache() -> BudgetCache:
    """The server's one size-bounded cache (cleared with Streamlit's "Clear cache" too)."""
    return BudgetCache(cache_budget_bytes())


def freeze(obj):
    """Make the numpy arrays of a result (dataclass, dict, tuple, list) read-only; returns obj."""
    if isinstance(obj, np.ndarray):
        obj.setflags(write=False)
    elif isinstance(obj, dict):
        for v in obj.values():
            freeze(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            freeze(v)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            freeze(getattr(obj, f.name))
    return obj


def budget_cached(spinner: str | None = None):
    """Like st.cache_resource for results with big arrays: keyed by the function's name and
    its arguments except those starting with "_" (the model), bounded by bytes in total, the
    result made read-only. The uncached function stays reachable as `__wrapped__`."""

    def wrap(fn):
        names = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            bound = dict(zip(names, args, strict=False), **kwargs)
            key = (fn.__module__, fn.__qualname__) + tuple((k, v) for k, v in bound.items() if not k.startswith("_"))
            store = budget_cache()
            hit = store.get(key)
            if hit is not None:
                return hit
            from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

            if spinner and get_script_run_ctx(suppress_warning=True) is not None:
                with st.spinner(spinner):
                    value = fn(*args, **kwargs)
            else:
                value = fn(*args, **kwargs)
            store.put(key, freeze(value))
            return value

        return cached

    return wrap


def off_key(off) -> tuple[tuple[int, int], ...]:
    """Switched-off heads as a sorted tuple of (layer, head): the cache key of a head mask."""
    return tuple(sorted({(int(l), int(h)) for l, h in off}))


def _mask(bundle, off: tuple):
    cfg = bundle.config
    return A.head_mask(cfg.num_hidden_layers, cfg.num_attention_heads, off) if off else None


# --- one forward pass with everything, and the model's tables ----------------------------------


@budget_cached(spinner="Running the model…")
def _analyze(model_key: str, text_a: str, text_b: str | None, _bundle: bert.Bundle) -> A.Analysis:
    return A.analyze(_bundle, text_a, text_b)


def analyze(model: CurrentModel, text_a: str, text_b: str | None = None) -> A.Analysis:
    """Validated texts in, the cached analysis out (an InputError for empty sentence A)."""
    a = clean_text(text_a, "sentence A")
    b = clean_text(text_b, required=False) or None
    return _analyze(model.key, a, b, model.bundle)


@budget_cached()
def position_table(model_key: str, _bundle: bert.Bundle) -> A.PositionTable:
    return A.position_table(_bundle)


def parameter_counts(model: CurrentModel) -> dict[str, int]:
    return _param_counts(model.key, model.bundle)


@budget_cached()
def _param_counts(model_key: str, _bundle: bert.Bundle) -> dict[str, int]:
    return bert.parameter_counts(_bundle.model)


# --- words in context ----------------------------------------------------------------------------


@budget_cached(spinner="Running both word orders…")
def word_order(model_key: str, text: str, seed: int, _bundle: bert.Bundle) -> A.WordOrder:
    return A.word_order(_bundle, text, seed)


@budget_cached(spinner="Comparing contexts…")
def same_word(model_key: str, sentences: tuple[str, ...], word: str, _bundle: bert.Bundle) -> A.SameWord:
    sents = [clean_text(s, f"context sentence {n + 1}") for n, s in enumerate(sentences)]
    return A.same_word(_bundle, sents, word)


@budget_cached(spinner="Following the word through the layers…")
def word_map(model_key: str, sentences: tuple[str, ...], word: str, _bundle) -> A.WordMap:
    return A.word_map(_bundle, list(sentences), word)


# --- the model's heads: masked words, next sentence, classes -------------------------------------


@budget_cached(spinner="Predicting the masked words…")
def mlm_predict(model_key: str, text: str, k: int, _bundle: bert.Bundle) -> dict:
    """The Masked LM page's view of mlm_topk: one {"position", "tokens", "probs"} per gap, and
    the filled-in text."""
    m = A.mlm_topk(_bundle, text, k=k)
    gaps = [
        {"position": p, "tokens": t, "probs": pr.astype(np.float32)}
        for p, t, pr in zip(m.positions, m.top_tokens, m.top_probs, strict=True)
    ]
    return {
        "predictions": gaps,
        "tokens": m.tokens,
        "filled_tokens": m.filled_tokens,
        "filled_is_pred": m.filled_is_pred,
        "filled": m.filled,
        "truncated": m.truncated,
    }


@budget_cached()
def nsp_probability(model_key: str, text_a: str, text_b: str, _bundle: bert.Bundle) -> float:
    return A.nsp_probability(_bundle, text_a, text_b)


@budget_cached()
def mlm_topk(model_key: str, text: str, k: int, off: tuple, _bundle) -> A.MLMPredictions:
    return A.mlm_topk(_bundle, text, k=k, head_mask=_mask(_bundle, off))


@budget_cached()
def class_probs(model_key: str, text: str, off: tuple, _bundle) -> np.ndarray:
    return A.classifier_probs(_bundle, text, head_mask=_mask(_bundle, off))


@budget_cached(spinner="Running the model…")  # (L, H, T, T): tens of MB for long inputs
def attentions(model_key: str, text: str, _bundle) -> tuple[list[str], np.ndarray]:
    return A.attentions_of(_bundle, text)


@budget_cached()
def outputs(model_key: str, text: str, k: int, _bundle) -> A.ModelOutputs:
    """One model's own answer: MLM top-k at each [MASK], or class probabilities."""
    return A.model_outputs(_bundle, text, k)


# --- head patterns, explanations, ablation -------------------------------------------------------


@budget_cached(spinner="Averaging head patterns over the probe sentences…")
def probe_patterns(model_key: str, _bundle) -> A.HeadPatterns:
    return A.head_patterns_over(_bundle)


@budget_cached()
def _input_patterns(model_key: str, text_a: str, text_b, _an: A.Analysis):
    stats = A.head_pattern_stats(_an.attentions, _an.tokens)
    return stats, A.label_heads(stats)


def input_patterns(model: CurrentModel, text_a: str, text_b: str | None = None):
    """(stats, labels, analysis) of the typed input, from the cached forward pass the Attention
    page uses."""
    an = analyze(model, text_a, text_b)
    stats, labels = _input_patterns(model.key, an.text_a, an.text_b, an)
    return stats, labels, an


@budget_cached(spinner="Computing rollout and saliency…")
def saliency(model_key: str, text: str, position: int | None, target, _bundle) -> A.Saliency:
    """MLM models: one [MASK] (position) and a word (target); classifiers: a class (target)."""
    if _bundle.is_classifier:
        return A.saliency_classifier(_bundle, text, class_index=target)
    return A.saliency_mlm(_bundle, text, position=position, target=target)


@budget_cached(spinner="Reading every layer with the MLM head…")
def logit_lens(model_key: str, text: str, k: int, _bundle) -> A.LogitLens:
    return A.logit_lens(_bundle, text, k=k)


@budget_cached(spinner="Switching each head off in turn…")
def importance(model_key: str, text: str, _bundle) -> A.HeadImportance:
    return A.head_importance(_bundle, text)
