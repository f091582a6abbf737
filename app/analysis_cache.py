"""One cache over bert.analysis for every page: each result is kept by (function, model key,
input), shared by all sessions and threads, made read-only, and bounded by BYTES in total.

The model key comes from app.current_model.CurrentModel.key (built-ins, server folders and a
session's own models each have one); the model itself is passed as `_bundle` and is not part
of the key. A 512-token analysis of MiniLM is about 95 MB, so results are kept by size, not by
count: the least recently used go once all together pass BERT_EXPLORER_CACHE_MB (default 256
MB). A class typing long texts cannot run the server out of memory, which st.cache_resource's
max_entries could not promise. Head masks travel as a sorted tuple of switched-off (layer, head)
pairs (`off_key`), which hashes cheaply.

Nothing is computed here: every function is a keyed call of one bert.analysis function. What
is not in the cache waits for a place (app/server/analysis_gate.py): the gate bounds how many are being
computed, and each one in progress reserves its peak in the budget (kept results make room), so
what is kept and what is being computed stay within BERT_EXPLORER_CACHE_MB together.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import streamlit as st

import bert
from bert import settings
from bert.analysis import explain, full, mlm, words
from bert.analysis.ablation import HeadImportance, head_importance, head_mask
from bert.analysis.attention_heads import HeadPatterns, head_pattern_stats, head_patterns_over, label_heads
from bert.analysis.compare import ModelOutputs, attentions_of, model_outputs
from bert.analysis.full import analysis_bytes
from bert.analysis.generate import Continuation, continue_text
from bert.analysis.paradigms import PARADIGMS
from bert.analysis.patching import Patching, activation_patching
from bert.analysis.probes import ProbeCurve, probe_model
from bert.analysis.scoring import PairScores, score_pairs, scoring_peak_bytes, sentence_tokens
from bert.attention_masks import BIDIRECTIONAL, MaskKind

from .current_model import CurrentModel
from .formatting import clean_text
from .server.analysis_gate import ANALYSES, busy_notice
from .server.memory import nbytes, trim_heaps

ENTRY_BYTES = 256  # what one entry costs besides its contents (key, bookkeeping)


# --- a cache bounded by bytes -------------------------------------------------------------------


def cache_budget_bytes() -> int:
    return settings.whole("BERT_EXPLORER_CACHE_MB", minimum=0) * 2**20


class BudgetCache:
    """Least-recently-used results, evicted once their bytes and those reserved by analyses in
    progress pass `budget` (the newest is always kept, even alone over budget). Thread-safe;
    one per server."""

    def __init__(self, budget: int):
        self.budget = budget
        self.bytes = 0
        self.reserved = 0  # bytes that analyses in progress will hold at their peak
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
            self._evict(keep=1)

    def _evict(self, keep: int) -> int:
        """Drop the least recently used until within budget; returns how many went."""
        n = 0
        while self.bytes + self.reserved > self.budget and len(self._items) > keep:
            _, (_, s) = self._items.popitem(last=False)
            self.bytes -= s
            n += 1
        return n

    @contextmanager
    def reserve(self, size: int) -> Iterator[None]:
        """Room for an analysis in progress: what is kept makes way (least recently used
        first), so kept results and work in progress together stay within the budget."""
        with self._lock:
            self.reserved += size
            evicted = self._evict(keep=0)
        if evicted:
            trim_heaps()  # what the evicted results held, back to the system before the work starts
        try:
            yield
        finally:
            with self._lock:
                self.reserved -= size

    def __len__(self) -> int:
        return len(self._items)

    def by_kind(self) -> dict[str, tuple[int, int]]:
        """Function name (without its leading "_") -> (results kept, their bytes), biggest first."""
        with self._lock:
            out: dict[str, list[int]] = {}
            for key, (_, size) in self._items.items():
                kind = str(key[1]).lstrip("_") if len(key) > 1 else "?"
                n_b = out.setdefault(kind, [0, 0])
                n_b[0] += 1
                n_b[1] += size
        return {k: (n, b) for k, (n, b) in sorted(out.items(), key=lambda kv: -kv[1][1])}

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


_budget_cache: BudgetCache | None = None
_budget_cache_lock = threading.Lock()


def budget_cache() -> BudgetCache:
    """The server's one size-bounded cache. Module-level, not in st.cache_resource: a client
    cannot clear it (app/server/guard.py)."""
    global _budget_cache
    with _budget_cache_lock:
        if _budget_cache is None:
            _budget_cache = BudgetCache(cache_budget_bytes())
        return _budget_cache


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


def budget_cached(spinner: str | None = None, peak_bytes: Callable[..., int] | None = None):
    """Like st.cache_resource for results with big arrays: keyed by the function's name and
    its arguments except those starting with "_" (the model), bounded by bytes in total, the
    result made read-only. A result not in the cache is computed in one of the server's few
    places for analyses (app/server/analysis_gate.py), after any students ahead, with
    `peak_bytes(*args)` reserved in the cache's budget while it runs. The uncached function
    stays reachable as `__wrapped__`."""

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

            in_page = get_script_run_ctx(suppress_warning=True) is not None
            with busy_notice() as notice, ANALYSES.place(notice if in_page else None):
                hit = store.get(key)  # computed by another student while this one waited
                if hit is not None:
                    return hit
                with store.reserve(peak_bytes(*args, **kwargs) if peak_bytes else 0):
                    if spinner and in_page:
                        with st.spinner(spinner):
                            value = fn(*args, **kwargs)
                    else:
                        value = fn(*args, **kwargs)
                    trim_heaps()  # the forward pass's working memory, back before the next one starts
                store.put(key, freeze(value))
            return value

        return cached

    return wrap


def off_key(off) -> tuple[tuple[int, int], ...]:
    """Switched-off heads as a sorted tuple of (layer, head): the cache key of a head mask."""
    return tuple(sorted({(int(l), int(h)) for l, h in off}))


def _mask(bundle, off: tuple):
    cfg = bundle.config
    return head_mask(cfg.num_hidden_layers, cfg.num_attention_heads, off) if off else None


# --- one forward pass with everything, and the model's tables ----------------------------------


def _analysis_peak(model_key: str, text_a: str, text_b: str | None, _bundle: bert.Bundle, mask_kind=None) -> int:
    cfg = _bundle.config
    n = len(_bundle.tokenizer.encode(text_a, text_b, max_length=cfg.max_tokens).ids)
    return analysis_bytes(cfg, n)


@budget_cached(spinner="Running the model…", peak_bytes=_analysis_peak)
def _analyze(
    model_key: str, text_a: str, text_b: str | None, _bundle: bert.Bundle, mask_kind: MaskKind = BIDIRECTIONAL
) -> full.Analysis:
    return full.analyze(_bundle, text_a, text_b, mask_kind=mask_kind)


def analyze(
    model: CurrentModel, text_a: str, text_b: str | None = None, mask_kind: MaskKind = BIDIRECTIONAL
) -> full.Analysis:
    """Validated texts in, the cached analysis out (an InputError for empty sentence A), read
    under `mask_kind` (bert/attention_masks.py), which is part of the key. The default is
    not passed on, so the bidirectional result is the one every other page already keeps."""
    a = clean_text(text_a, "sentence A")
    b = clean_text(text_b, required=False) or None
    if mask_kind == BIDIRECTIONAL:
        return _analyze(model.key, a, b, model.bundle)
    return _analyze(model.key, a, b, model.bundle, mask_kind=mask_kind)


@budget_cached()
def position_table(model_key: str, _bundle: bert.Bundle) -> full.PositionTable:
    return full.position_table(_bundle)


def parameter_counts(model: CurrentModel) -> dict[str, int]:
    return _param_counts(model.key, model.bundle)


@budget_cached()
def _param_counts(model_key: str, _bundle: bert.Bundle) -> dict[str, int]:
    return bert.parameter_counts(_bundle.model)


# --- words in context ----------------------------------------------------------------------------


@budget_cached(spinner="Running both word orders…")
def word_order(model_key: str, text: str, seed: int, _bundle: bert.Bundle) -> words.WordOrder:
    return words.word_order(_bundle, text, seed)


@budget_cached(spinner="Comparing contexts…")
def same_word(model_key: str, sentences: tuple[str, ...], word: str, _bundle: bert.Bundle) -> words.SameWord:
    sents = [clean_text(s, f"context sentence {n + 1}") for n, s in enumerate(sentences)]
    return words.same_word(_bundle, sents, word)


@budget_cached(spinner="Following the word through the layers…")
def word_map(model_key: str, sentences: tuple[str, ...], word: str, _bundle) -> words.WordMap:
    return words.word_map(_bundle, list(sentences), word)


# --- the model's heads: masked words, next sentence, classes -------------------------------------


@budget_cached(spinner="Predicting the masked words…")
def mlm_predict(model_key: str, text: str, k: int, _bundle: bert.Bundle, mask_kind: MaskKind = BIDIRECTIONAL) -> dict:
    """The Masked LM page's view of mlm_topk: one {"position", "tokens", "probs"} per gap, and
    the filled-in text; read under `mask_kind` (part of the key when given)."""
    m = mlm.mlm_topk(_bundle, text, k=k, mask_kind=mask_kind)
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
    return mlm.nsp_probability(_bundle, text_a, text_b)


@budget_cached()
def replaced_tokens(model_key: str, text: str, _bundle: bert.Bundle) -> mlm.ReplacedTokens:
    return mlm.replaced_probabilities(_bundle, text)


@budget_cached()
def mlm_topk(model_key: str, text: str, k: int, off: tuple, _bundle) -> mlm.MLMPredictions:
    return mlm.mlm_topk(_bundle, text, k=k, head_mask=_mask(_bundle, off))


@budget_cached()
def class_probs(model_key: str, text: str, off: tuple, _bundle) -> np.ndarray:
    return mlm.classifier_probs(_bundle, text, head_mask=_mask(_bundle, off))


@budget_cached(spinner="Running the model…")  # (L, H, T, T): tens of MB for long inputs
def attentions(model_key: str, text: str, _bundle) -> tuple[list[str], np.ndarray]:
    return attentions_of(_bundle, text)


@budget_cached()
def outputs(model_key: str, text: str, k: int, _bundle) -> ModelOutputs:
    """One model's own answer: MLM top-k at each [MASK], or class probabilities."""
    return model_outputs(_bundle, text, k)


# --- head patterns, explanations, ablation -------------------------------------------------------


@budget_cached(spinner="Averaging head patterns over the probe sentences…")
def probe_patterns(model_key: str, _bundle) -> HeadPatterns:
    return head_patterns_over(_bundle)


@budget_cached()
def _input_patterns(model_key: str, text_a: str, text_b, _an: full.Analysis):
    stats = head_pattern_stats(_an.attentions, _an.tokens)
    return stats, label_heads(stats)


def input_patterns(model: CurrentModel, text_a: str, text_b: str | None = None):
    """(stats, labels, analysis) of the typed input, from the cached forward pass the Attention
    page uses."""
    an = analyze(model, text_a, text_b)
    stats, labels = _input_patterns(model.key, an.text_a, an.text_b, an)
    return stats, labels, an


@budget_cached(spinner="Computing rollout and saliency…")
def saliency(model_key: str, text: str, position: int | None, target, _bundle) -> explain.Saliency:
    """MLM models: one [MASK] (position) and a word (target); classifiers: a class (target)."""
    if _bundle.is_classifier:
        return explain.saliency_classifier(_bundle, text, class_index=target)
    return explain.saliency_mlm(_bundle, text, position=position, target=target)


@budget_cached(spinner="Reading every layer with the MLM head…")
def logit_lens(model_key: str, text: str, k: int, _bundle) -> explain.LogitLens:
    return explain.logit_lens(_bundle, text, k=k)


@budget_cached(spinner="Switching each head off in turn…")
def importance(model_key: str, text: str, _bundle) -> HeadImportance:
    return head_importance(_bundle, text)


@budget_cached(spinner="Patching every layer and place from one run into the other…")
def patching(
    model_key: str, clean: str, corrupted: str, answer: str, foil: str, site: str, _bundle: bert.Bundle
) -> Patching:
    return activation_patching(_bundle, clean, corrupted, answer, foil, site)


def _pairs_peak(model_key: str, pairs: tuple[tuple[str, str], ...], word_level: bool, _bundle, _cancelled=None) -> int:
    longest = max((sentence_tokens(_bundle.tokenizer, s) for pair in pairs for s in pair), default=0)
    return scoring_peak_bytes(_bundle.config, longest)  # one sentence at a time


@budget_cached(spinner="Scoring every sentence, one masked word at a time…", peak_bytes=_pairs_peak)
def pair_scores(
    model_key: str, pairs: tuple[tuple[str, str], ...], word_level: bool, _bundle, _cancelled=None
) -> PairScores:
    """Typed pairs; the built-in paradigms through paradigm_scores. `_cancelled`: score_pairs's
    (the page's: its tab closed), so a closed tab frees its analysis place at the next sentence."""
    return score_pairs(_bundle, pairs, word_level, _cancelled)


@budget_cached(spinner="Scoring the paradigm's pairs, one masked word at a time…")
def paradigm_scores(model_key: str, name: str, word_level: bool, _bundle) -> PairScores:
    return score_pairs(_bundle, PARADIGMS[name].pairs, word_level)


@budget_cached(spinner="Reading Brown sentences through every layer, then training a probe per layer…")
def probe_curve(model_key: str, prop: str, n_sentences: int, _bundle) -> ProbeCurve:
    return probe_model(_bundle, prop, n_sentences)


# --- writing: a next-word run's continuation, a decoder's step-by-step decoding ----------------


def run_key(res: dict) -> str:
    """The cache key of a finished run's model: its result's "run" name, given once if it has none
    (a later run's, or another session's, results are never this one's)."""
    return f"run:{res.setdefault('run', uuid.uuid4().hex)}"


def _writing_peak(
    model_key: str, text: str, n: int, greedy: bool, temperature: float, top_k: int, seed: int, _bundle
) -> int:
    cfg = _bundle.config
    return analysis_bytes(cfg, cfg.max_tokens)  # each step reads at most the model's positions


@budget_cached(spinner="Writing, one token at a time…", peak_bytes=_writing_peak)
def continuation(
    model_key: str, text: str, n: int, greedy: bool, temperature: float, top_k: int, seed: int, _bundle
) -> Continuation:
    """bert.analysis.generate.continue_text, kept by its inputs (sampling settings ignored when greedy)."""
    return continue_text(_bundle, text, n, greedy=greedy, temperature=temperature, top_k=top_k, seed=seed)


def _decoding_peak(model_key: str, text: str, _bundle) -> int:
    cfg = _bundle.config
    return analysis_bytes(cfg, cfg.max_tokens) + analysis_bytes(_bundle.decoder_config, cfg.max_tokens)


@budget_cached(spinner="Decoding…", peak_bytes=_decoding_peak)
def decoder_trace(model_key: str, text: str, _bundle):
    """A Seq2SeqBundle's trace of `text` (its greedy decoding with every step's attention)."""
    return _bundle.trace(text)
