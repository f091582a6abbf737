"""Cached models and cached analyses.

- `load_model(source)`: one `bert.Bundle` per source string, shared by every session and
  thread (st.cache_resource), and only what the server offers (`allowed_source`): built-ins,
  folders under BERT_EXPLORER_MODELS_DIR, hub ids if BERT_EXPLORER_ALLOW_HUB=1. Treat it as
  read-only: never train it, never call .train(), never change a weight. A user's own model
  (fine-tuned, pre-trained) lives in their session_state and is reached through
  `current_model()` under its own unique key.
- `analyze(...)`: the model runs ONCE per (model, sentence A, sentence B) with everything the
  pages draw (attentions, hidden states, embedding parts, queries/keys/values), converted to
  read-only float32 numpy arrays. Switching layer, head or view reuses it.

Analyses are kept in memory shared by all sessions (no pickling/copying per rerun) and are
made read-only so no page can alter them by mistake. A 512-token analysis of MiniLM is about
95 MB, so they are kept by SIZE, not by count (`budget_cached`): the least recently used go
once all together pass BERT_EXPLORER_CACHE_MB (default 256 MB) — a class typing long texts
cannot run the server out of memory, which st.cache_resource's max_entries could not promise.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit as st
import torch

import bert
from bert import CheckpointError, InputError

from . import state
from .helpers import clean_text, cosine, cosine_matrix, pca_2d, shuffle_words
from .memory import release_memory

TTL = 3600


# --- a cache bounded by bytes -------------------------------------------------------------------

def cache_budget_bytes() -> int:
    env = os.environ.get("BERT_EXPLORER_CACHE_MB", "")
    mb = int(env) if env.isdigit() else 256
    return mb * 2 ** 20


def nbytes(obj, _depth: int = 0) -> int:
    """The bytes of the numpy arrays and tensors in a result (dataclass, dict, list, tuple)."""
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
        return len(obj)
    return 64


class BudgetCache:
    """Least-recently-used results, evicted once their bytes pass `budget` (the newest is
    always kept, even alone over budget). Thread-safe; one per server."""

    def __init__(self, budget: int):
        self.budget = budget
        self.bytes = 0
        self._items: OrderedDict = OrderedDict()         # key -> (value, size)
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key, value) -> None:
        size = nbytes(value)
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


def budget_cached(spinner: str | None = None):
    """Like st.cache_resource for results with big arrays: keyed by the function's name and
    its arguments except those starting with "_" (the model), bounded by bytes in total."""
    def wrap(fn):
        import inspect
        names = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            bound = dict(zip(names, args), **kwargs)
            key = (fn.__module__, fn.__qualname__) + tuple(
                (k, v) for k, v in bound.items() if not k.startswith("_"))
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
            store.put(key, value)
            return value
        return cached
    return wrap


@dataclass(frozen=True)
class CurrentModel:
    bundle: bert.Bundle
    key: str            # cache key for analyses: "builtin:<name>", "path:<folder>", "session:<name>:<id>"
    label: str          # what the picker shows


def inference_threads() -> int:
    env = os.environ.get("BERT_EXPLORER_TORCH_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else 1


_threads_set = False


def serve_with_few_threads() -> None:
    """In the server, page inference runs on BERT_EXPLORER_TORCH_THREADS torch threads (default
    1). Every session's script runs in its own thread; with torch's default (one per core) each
    run starts a team of threads that fight the others for the cores. Measured with 20 sessions
    on 2 cores (scripts/loadtest.py): p95 page time 1.0 s with 2 threads, 0.4 s with 1, and
    0.37 -> 0.30 s of processor per page step. A job sets its own (BERT_EXPLORER_JOB_THREADS).
    Not in tests or scripts (no Streamlit runtime there): they keep their own setting."""
    global _threads_set
    if _threads_set:
        return
    _threads_set = True
    try:
        from streamlit.runtime import Runtime
        if Runtime.exists():
            torch.set_num_threads(inference_threads())
    except Exception:  # noqa: BLE001 - an internal API: then keep torch's default
        pass


# --- which models a student may load --------------------------------------------------------------

NOT_OFFERED = ("This server does not offer that model. Pick a built-in model, or type the name of a "
               "model folder that the person running the server has put in its models folder.")


def models_root() -> Path:
    """BERT_EXPLORER_MODELS_DIR: the one folder whose model folders students may load
    (default <repo>/models)."""
    env = os.environ.get("BERT_EXPLORER_MODELS_DIR", "").strip()
    return Path(env) if env else Path(__file__).resolve().parent.parent / "models"


def hub_allowed() -> bool:
    """BERT_EXPLORER_ALLOW_HUB=1: students may name Hugging Face Hub ids (downloads)."""
    return os.environ.get("BERT_EXPLORER_ALLOW_HUB", "").strip() == "1"


def _folder_under_root(typed: str) -> Path | None:
    """The readable folder `typed` names inside models_root() (symlinks and `..` resolved),
    relative names being taken from that root; None for anything else, whatever the reason."""
    try:
        root = models_root().resolve()
        folder = (root / typed).resolve()
        if folder != root and folder.is_relative_to(root) and folder.is_dir() \
                and os.access(folder, os.R_OK | os.X_OK):
            return folder
    except (OSError, RuntimeError, ValueError):       # permissions, symlink loops, NUL bytes
        pass
    return None


def allowed_source(source: str) -> tuple[str, str]:
    """("builtin", name), ("folder", resolved path) or ("hub", id); every other source raises
    the same CheckpointError (NOT_OFFERED), which says nothing about what exists."""
    s = (source or "").strip()
    if s in bert.checkpoint.BUILTINS:
        return "builtin", s
    folder = _folder_under_root(s) if s else None
    if folder is not None:
        return "folder", str(folder)
    if hub_allowed() and bert.checkpoint.is_hub_id(s):
        return "hub", s
    hub = " Hugging Face Hub ids (owner/name) work too." if hub_allowed() else ""
    raise CheckpointError(NOT_OFFERED + hub)


def load_model(source: str) -> bert.Bundle:
    """A built-in name, a folder under models_root() or (opted in) a hub id, loaded once and
    shared by all sessions (read-only). Anything else: CheckpointError(NOT_OFFERED)."""
    return _load_allowed(*allowed_source(source))


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load_allowed(kind: str, target: str) -> bert.Bundle:
    serve_with_few_threads()
    if kind == "builtin":
        bundle = bert.checkpoint.load_builtin(target)
    elif kind == "hub":
        bundle = bert.checkpoint.load_hub(target)         # its size checked before downloading
    else:
        bundle = bert.checkpoint.load_folder(target)
    release_memory()               # the file's fp16 copy, upcast and gone: about 45 MB for minilm-l6
    return bundle


def current_model() -> CurrentModel:
    """The model picked in the sidebar (raises a bert error with a readable message)."""
    state.init()
    src = st.session_state[state.MODEL_SOURCE]
    if src.startswith("session:"):
        name = src[len("session:"):]
        models = st.session_state[state.USER_MODELS]
        if name not in models:
            st.session_state[state.MODEL_SOURCE] = state.DEFAULT_MODEL
            raise CheckpointError(f"your model {name!r} is no longer in this session; "
                                  f"switched back to {state.DEFAULT_MODEL}")
        return CurrentModel(models[name], st.session_state[state.USER_MODEL_IDS][name], f"{name} (yours)")
    bundle = load_model(src)
    kind = "builtin" if src in bert.checkpoint.BUILTINS else "path"
    return CurrentModel(bundle, f"{kind}:{src}", bundle.name)


def max_tokens(bundle: bert.Bundle) -> int:
    return int(bundle.config.max_position_embeddings)


# --- one forward pass with everything ------------------------------------------------------------

def _ro(t: torch.Tensor, decimals: int | None = None) -> np.ndarray:
    a = t.detach().float().cpu().numpy()
    if decimals is not None:
        a = np.round(a, decimals)
    a = np.ascontiguousarray(a, dtype=np.float32)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Analysis:
    """Everything one forward pass gives the pages, for one input. Arrays are read-only.

    Shapes: attentions (L, H, T, T); hidden (L+1, T, C), [0] = embedding output;
    parts[name] (T, C) for token/segment/position/sum/normed; queries/keys/values (L, H, T, D).
    """
    tokens: list[str]
    ids: list[int]
    type_ids: list[int]
    offsets: list[tuple[int, int]]
    word_ids: list[int | None]
    sequence_ids: list[int | None]
    text_a: str
    text_b: str | None
    truncated: bool
    num_truncated: int
    max_length: int
    attentions: np.ndarray
    hidden: np.ndarray
    parts: dict[str, np.ndarray]
    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)


def encode(bundle: bert.Bundle, text_a: str, text_b: str | None):
    """Encode with truncation at the model's maximum; refuses empty input with a message."""
    enc = bundle.tokenizer.encode(text_a, text_b or None, max_length=max_tokens(bundle))
    if not any(s is not None for s in enc.sequence_ids):
        raise InputError("The text gave no tokens at all (only spaces or control characters?). "
                         "Type some words.")
    return enc


def _tensors(enc):
    ids = torch.tensor([enc.ids], dtype=torch.long)
    types = torch.tensor([enc.type_ids], dtype=torch.long)
    return ids, types


@budget_cached(spinner="Running the model…")
def _analyze(model_key: str, text_a: str, text_b: str | None, _bundle: bert.Bundle) -> Analysis:
    t0 = time.perf_counter()
    enc = encode(_bundle, text_a, text_b)
    ids, types = _tensors(enc)
    with torch.inference_mode():
        out = _bundle.model.bert(ids, token_type_ids=types, output_attentions=True,
                                 output_hidden_states=True, output_embedding_parts=True,
                                 output_qkv=True)
    p = out.embedding_parts
    parts = {name: _ro(getattr(p, name)[0]) for name in ("token", "segment", "position", "sum", "normed")}
    return Analysis(
        tokens=list(enc.tokens), ids=list(enc.ids), type_ids=list(enc.type_ids),
        offsets=list(enc.offsets), word_ids=list(enc.word_ids), sequence_ids=list(enc.sequence_ids),
        text_a=text_a, text_b=text_b, truncated=enc.truncated, num_truncated=enc.num_truncated,
        max_length=max_tokens(_bundle),
        attentions=_ro(torch.stack([a[0] for a in out.attentions])),             # (L, H, T, T)
        hidden=_ro(torch.stack([h[0] for h in out.hidden_states])),              # (L+1, T, C)
        parts=parts,
        queries=_ro(torch.stack([q[0] for q in out.queries])),                   # (L, H, T, D)
        keys=_ro(torch.stack([k[0] for k in out.keys])),
        values=_ro(torch.stack([v[0] for v in out.values])),
        seconds=time.perf_counter() - t0,
    )


def analyze(model: CurrentModel, text_a: str, text_b: str | None = None) -> Analysis:
    """Validated texts in, the cached analysis out (an InputError for empty sentence A)."""
    a = clean_text(text_a, "sentence A")
    b = clean_text(text_b, required=False) or None
    return _analyze(model.key, a, b, model.bundle)


# --- embedding tables ------------------------------------------------------------------------------

@st.cache_resource(max_entries=8, ttl=TTL, show_spinner=False)
def position_table(model_key: str, _bundle: bert.Bundle) -> dict:
    """The whole learned position table: PCA coordinates and cosine-similarity matrix."""
    w = _bundle.model.bert.embeddings.position_embeddings.weight.detach().float().cpu().numpy()  # (P, C)
    coords, ratio = pca_2d(w)
    sim = cosine_matrix(w)
    seg = _bundle.model.bert.embeddings.token_type_embeddings.weight.detach().float().cpu().numpy()  # (S, C)
    return {"coords": coords, "ratio": ratio, "sim": sim, "norms": np.linalg.norm(w, axis=1),
            "segments": seg, "P": w.shape[0]}


# --- demos ------------------------------------------------------------------------------------------

def _word_vectors(hidden: torch.Tensor, word_ids, n_words: int) -> np.ndarray:
    """Mean over each word's pieces: (L+1, T, C) -> (L+1, n_words, C)."""
    out = np.zeros((hidden.shape[0], n_words, hidden.shape[-1]), dtype=np.float32)
    for w in range(n_words):
        idx = [i for i, x in enumerate(word_ids) if x == w]
        if idx:
            out[:, w] = hidden[:, idx].mean(dim=1).numpy()
    return out


@st.cache_resource(max_entries=16, ttl=TTL, show_spinner="Running both word orders…")
def word_order(model_key: str, text: str, seed: int, _bundle: bert.Bundle) -> dict:
    """Run the sentence and a shuffle of its words; compare each word's vector layer by layer."""
    tok = _bundle.tokenizer
    words = tok.basic_tokenize(text)[: 120]
    if len(words) < 2:
        raise InputError("The word-order demo needs at least two words in sentence A.")
    shuffled, order = shuffle_words(words, seed)
    if shuffled == words:
        raise InputError("All words in sentence A are the same, so shuffling changes nothing.")
    hs, wids = [], []
    for ws in (words, shuffled):
        enc = tok.encode(" ".join(ws), max_length=max_tokens(_bundle))
        ids, types = _tensors(enc)
        with torch.inference_mode():
            out = _bundle.model.bert(ids, token_type_ids=types, output_hidden_states=True)
        hs.append(torch.stack([h[0] for h in out.hidden_states]))              # (L+1, T, C)
        wids.append(enc.word_ids)
    n = len(words)
    orig = _word_vectors(hs[0], wids[0], n)                                    # (L+1, n, C)
    shuf = _word_vectors(hs[1], wids[1], n)
    # shuffled[j] = words[order[j]]: bring the shuffled run back into the original order
    back = np.zeros_like(shuf)
    for j, i in enumerate(order):
        back[:, i] = shuf[:, j]
    layers = orig.shape[0]
    per_layer = [float(np.mean([cosine(orig[l, i], back[l, i]) for i in range(n)])) for l in range(layers)]
    per_word = [cosine(orig[-1, i], back[-1, i]) for i in range(n)]
    sent = cosine(hs[0][-1].mean(0).numpy(), hs[1][-1].mean(0).numpy())
    return {"words": words, "shuffled": shuffled, "per_layer": per_layer, "per_word": per_word,
            "sentence_cosine": sent}


@st.cache_resource(max_entries=16, ttl=TTL, show_spinner="Comparing contexts…")
def same_word(model_key: str, sentences: tuple[str, ...], word: str, _bundle: bert.Bundle) -> dict:
    """The vector of `word` in each sentence, layer by layer, and the pairwise cosines."""
    tok = _bundle.tokenizer
    target = tok.basic_tokenize(word)
    if len(target) != 1:
        raise InputError("Type exactly one word to follow (for example: bank).")
    target = target[0]
    vecs = []
    for n, s in enumerate(sentences):
        s = clean_text(s, f"context sentence {n + 1}")
        words = tok.basic_tokenize(s)
        if target not in words:
            raise InputError(f"The word {target!r} is not in context sentence {n + 1}.")
        w = words.index(target)
        enc = tok.encode(s, max_length=max_tokens(_bundle))
        ids, types = _tensors(enc)
        with torch.inference_mode():
            out = _bundle.model.bert(ids, token_type_ids=types, output_hidden_states=True)
        h = torch.stack([x[0] for x in out.hidden_states])                      # (L+1, T, C)
        idx = [i for i, x in enumerate(enc.word_ids) if x == w]
        if not idx:
            raise InputError(f"The word {target!r} was cut off in context sentence {n + 1}.")
        vecs.append(h[:, idx].mean(dim=1).numpy())                              # (L+1, C)
    pairs = {}
    for i in range(len(vecs)):
        for j in range(i + 1, len(vecs)):
            pairs[(i, j)] = [cosine(vecs[i][l], vecs[j][l]) for l in range(vecs[i].shape[0])]
    return {"word": target, "pairs": pairs}




# --- masked LM and next sentence ---------------------------------------------------------------

@st.cache_resource(max_entries=32, ttl=TTL, show_spinner="Predicting the masked words…")
def mlm_predict(model_key: str, text: str, k: int, _bundle: bert.Bundle) -> dict:
    """Top-k words for every [MASK] in `text`, and the sentence with the best guesses filled in."""
    tok = _bundle.tokenizer
    enc = encode(_bundle, text, None)
    mask_id = tok.mask_id
    where = [i for i, t in enumerate(enc.ids) if t == mask_id]
    if not where:
        raise InputError("There is no [MASK] in the sentence (or it was cut off at the model's maximum length).")
    ids, types = _tensors(enc)
    positions = torch.zeros_like(ids, dtype=torch.bool)
    positions[0, where] = True
    with torch.inference_mode():
        out = _bundle.model(ids, types, mlm_positions=positions)
    probs = torch.softmax(out.mlm_logits.float(), dim=-1)                      # (N, V)
    top = torch.topk(probs, k=min(k, probs.shape[-1]), dim=-1)
    preds = []
    filled = list(enc.ids)
    for n, pos in enumerate(where):
        cand = tok.convert_ids_to_tokens(top.indices[n].tolist())
        preds.append({"position": pos, "tokens": cand, "probs": top.values[n].numpy().astype(np.float32)})
        filled[pos] = int(top.indices[n, 0])
    inner = [i for i, s in zip(filled, enc.sequence_ids) if s is not None]
    is_pred = [j in where for j, s in enumerate(enc.sequence_ids) if s is not None]
    toks = tok.convert_ids_to_tokens(inner)
    return {"predictions": preds, "tokens": enc.tokens, "filled_tokens": toks, "filled_is_pred": is_pred,
            "filled": tok.decode(inner), "truncated": enc.truncated}


@st.cache_resource(max_entries=32, ttl=TTL, show_spinner=False)
def nsp_probability(model_key: str, text_a: str, text_b: str, _bundle: bert.Bundle) -> float:
    """P(IsNext): the NSP head's belief that B really follows A (index 0, as in Google's BERT)."""
    enc = encode(_bundle, text_a, text_b)
    ids, types = _tensors(enc)
    with torch.inference_mode():
        out = _bundle.model(ids, types)
    return float(torch.softmax(out.nsp_logits.float(), dim=-1)[0, 0])


def parameter_counts(model: CurrentModel) -> dict[str, int]:
    return _param_counts(model.key, model.bundle)


@st.cache_resource(max_entries=16, show_spinner=False)
def _param_counts(model_key: str, _bundle: bert.Bundle) -> dict[str, int]:
    return bert.parameter_counts(_bundle.model)
