"""Cached wrappers around bert.analysis for the analysis pages.

Each result is kept with st.cache_resource, keyed by the model's cache key (see
app.resources.CurrentModel.key: built-ins, folders and this session's own models all have
one) and the input; the model itself is passed as `_bundle` and is not hashed. Results are
shared by every session, so their numpy arrays are made read-only. Head masks travel as a
sorted tuple of switched-off (layer, head) pairs, which hashes cheaply.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import streamlit as st

import bert
from bert import CheckpointError
from bert import analysis as A

from . import state
from .helpers import clean_text
from .resources import TTL, CurrentModel, analyze, budget_cached, load_model

FOLDER = "__folder__"          # picker option: "a local folder…"
# st.session_state[SNAPSHOTS]: dict run name -> bert.attention_snapshots.AttentionSnapshots, filled
# by a training page that records its probe sentence's attention (the Compare page replays them)
SNAPSHOTS = "attention_snapshots"


def _freeze(obj):
    """Make the numpy arrays of a result (dataclass, dict, tuple) read-only; returns obj."""
    if isinstance(obj, np.ndarray):
        obj.setflags(write=False)
    elif isinstance(obj, dict):
        for v in obj.values():
            _freeze(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            _freeze(v)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            _freeze(getattr(obj, f.name))
    return obj


def head_mask(L: int, H: int, off) -> np.ndarray:
    """(L, H) of 1.0 (on) with 0.0 at every (layer, head) in `off`."""
    m = np.ones((L, H), dtype=np.float32)
    for l, h in off:
        m[l, h] = 0.0
    return m


def off_key(off) -> tuple[tuple[int, int], ...]:
    return tuple(sorted({(int(l), int(h)) for l, h in off}))


# --- picking any model (side by side) -----------------------------------------------------------

def model_options() -> list[str]:
    """Built-ins, this session's own models ("session:<name>"), and a local folder."""
    return (list(bert.checkpoint.available_builtins()) + [f"session:{n}" for n in state.user_models()]
            + [FOLDER])


def option_label(option: str) -> str:
    if option == FOLDER:
        return "A local folder…"
    if option.startswith("session:"):
        return f"{option[len('session:'):]} (your model, this session)"
    return f"{option} (built-in)"


def model_for(option: str, folder: str = "") -> CurrentModel:
    """The model behind a picker option (raises a bert error with a readable message)."""
    if option.startswith("session:"):
        name = option[len("session:"):]
        models = state.user_models()
        if name not in models:
            raise CheckpointError(f"your model {name!r} is no longer in this session")
        return CurrentModel(models[name], st.session_state[state.USER_MODEL_IDS][name], f"{name} (yours)")
    src = clean_text(folder, "the folder of the model") if option == FOLDER else option
    bundle = load_model(src)
    kind = "builtin" if src in bert.checkpoint.BUILTINS else "path"
    return CurrentModel(bundle, f"{kind}:{src}", bundle.name)


# --- 1. head patterns ---------------------------------------------------------------------------

@st.cache_resource(max_entries=8, ttl=TTL, show_spinner="Averaging head patterns over the probe sentences…")
def probe_patterns(model_key: str, _bundle) -> A.HeadPatterns:
    return _freeze(A.head_patterns_over(_bundle))


@st.cache_resource(max_entries=24, ttl=TTL, show_spinner=False)
def _input_patterns(model_key: str, text_a: str, text_b, _an):
    stats = A.head_pattern_stats(_an.attentions, _an.tokens)
    return _freeze((stats, A.label_heads(stats)))


def input_patterns(model: CurrentModel, text_a: str, text_b: str | None = None):
    """(stats, labels) of the typed input, from the cached forward pass the Attention page uses."""
    an = analyze(model, text_a, text_b)
    stats, labels = _input_patterns(model.key, an.text_a, an.text_b, an)
    return stats, labels, an


# --- 2 and 3. explanations --------------------------------------------------------------------------

@st.cache_resource(max_entries=32, ttl=TTL, show_spinner="Computing rollout and saliency…")
def saliency(model_key: str, text: str, position: int | None, target, _bundle) -> A.Saliency:
    """MLM models: one [MASK] (position) and a word (target); classifiers: a class (target)."""
    if _bundle.is_classifier:
        return _freeze(A.saliency_classifier(_bundle, text, class_index=target))
    return _freeze(A.saliency_mlm(_bundle, text, position=position, target=target))


@st.cache_resource(max_entries=32, ttl=TTL, show_spinner="Reading every layer with the MLM head…")
def logit_lens(model_key: str, text: str, k: int, _bundle) -> A.LogitLens:
    return _freeze(A.logit_lens(_bundle, text, k=k))


# --- 4. ablation --------------------------------------------------------------------------------------

@st.cache_resource(max_entries=64, ttl=TTL, show_spinner=False)
def mlm_topk(model_key: str, text: str, k: int, off: tuple, _bundle) -> A.MLMPredictions:
    cfg = _bundle.config
    hm = head_mask(cfg.num_hidden_layers, cfg.num_attention_heads, off) if off else None
    return _freeze(A.mlm_topk(_bundle, text, k=k, head_mask=hm))


@st.cache_resource(max_entries=64, ttl=TTL, show_spinner=False)
def class_probs(model_key: str, text: str, off: tuple, _bundle) -> np.ndarray:
    cfg = _bundle.config
    hm = head_mask(cfg.num_hidden_layers, cfg.num_attention_heads, off) if off else None
    return _freeze(A.classifier_probs(_bundle, text, head_mask=hm))


@st.cache_resource(max_entries=16, ttl=TTL, show_spinner="Switching each head off in turn…")
def importance(model_key: str, text: str, _bundle) -> A.HeadImportance:
    return _freeze(A.head_importance(_bundle, text))


# --- 6. side by side ----------------------------------------------------------------------------------

@budget_cached(spinner="Running the model…")      # (L, H, T, T): tens of MB for long inputs
def attentions(model_key: str, text: str, _bundle) -> tuple[list[str], np.ndarray]:
    return _freeze(A.attentions_of(_bundle, text))


@st.cache_resource(max_entries=16, ttl=TTL, show_spinner=False)
def outputs(model_key: str, text: str, k: int, _bundle) -> A.ModelOutputs:
    """One model's own answer: MLM top-k at each [MASK], or class probabilities."""
    tokens = _bundle.tokenizer.encode(text, max_length=_bundle.config.max_position_embeddings).tokens
    if _bundle.is_classifier:
        return _freeze(A.ModelOutputs(name=_bundle.name, tokens=list(tokens), kind="classifier",
                                      probs=A.classifier_probs(_bundle, text), labels=list(_bundle.labels)))
    return _freeze(A.ModelOutputs(name=_bundle.name, tokens=list(tokens), kind="mlm",
                                  mlm=A.mlm_topk(_bundle, text, k=k)))


# --- 7. contextual embedding map ----------------------------------------------------------------------

@st.cache_resource(max_entries=16, ttl=TTL, show_spinner="Following the word through the layers…")
def word_map(model_key: str, sentences: tuple[str, ...], word: str, _bundle) -> dict:
    """The word's vectors per layer (L+1, N, C) and their 2-D PCA per layer (L+1, N, 2)."""
    vecs = A.word_vectors_by_layer(_bundle, list(sentences), word)
    return _freeze({"vectors": vecs, "coords": A.pca_by_layer(vecs)})
