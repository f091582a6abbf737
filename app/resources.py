"""Which models a student may use, loaded once and shared.

- `load_model(source)`: one `bert.Bundle` per source string, shared by every session and
  thread (st.cache_resource), and only what the server offers (`allowed_source`): built-ins,
  folders under BERT_EXPLORER_MODELS_DIR, hub ids if BERT_EXPLORER_ALLOW_HUB=1. Treat it as
  read-only: never train it, never call .train(), never change a weight. A user's own model
  (fine-tuned, pre-trained) lives in their session_state and is reached through
  `current_model()` (the sidebar's pick) or `model_for()` (a picker's option) under its own
  unique key.

What the pages compute from a model is in bert.analysis, and kept by app.cache.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

import bert
from bert import CheckpointError, settings
from bert.builtins import BUILTINS, ModelSummary, describe_builtin
from bert.hub import is_hub_id

from . import state
from .helpers import clean_text
from .memory import release_memory


@dataclass(frozen=True)
class CurrentModel:
    bundle: bert.Bundle
    key: str  # cache key for analyses: "builtin:<name>", "path:<folder>", "session:<name>:<id>"
    label: str  # what the picker shows


def inference_threads() -> int:
    return settings.whole("BERT_EXPLORER_TORCH_THREADS")


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
        import torch
        from streamlit.runtime import Runtime

        if Runtime.exists():
            torch.set_num_threads(inference_threads())
    except Exception:  # noqa: BLE001 - an internal API: then keep torch's default
        pass


# --- which models a student may load --------------------------------------------------------------

NOT_OFFERED = (
    "This server does not offer that model. Pick a built-in model, or type the name of a "
    "model folder that the person running the server has put in its models folder."
)


def models_root() -> Path:
    """BERT_EXPLORER_MODELS_DIR: the one folder whose model folders students may load
    (default <repo>/models)."""
    env = settings.text("BERT_EXPLORER_MODELS_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "models"


def hub_allowed() -> bool:
    """BERT_EXPLORER_ALLOW_HUB=1: students may name Hugging Face Hub ids (downloads)."""
    return settings.flag("BERT_EXPLORER_ALLOW_HUB")


def _folder_under_root(typed: str) -> Path | None:
    """The readable folder `typed` names inside models_root() (symlinks and `..` resolved),
    relative names being taken from that root; None for anything else, whatever the reason."""
    try:
        root = models_root().resolve()
        folder = (root / typed).resolve()
        if folder != root and folder.is_relative_to(root) and folder.is_dir() and os.access(folder, os.R_OK | os.X_OK):
            return folder
    except (OSError, RuntimeError, ValueError):  # permissions, symlink loops, NUL bytes
        pass
    return None


def allowed_source(source: str) -> tuple[str, str]:
    """("builtin", name), ("folder", resolved path) or ("hub", id); every other source raises
    the same CheckpointError (NOT_OFFERED), which says nothing about what exists."""
    s = (source or "").strip()
    if s in BUILTINS:
        return "builtin", s
    folder = _folder_under_root(s) if s else None
    if folder is not None:
        return "folder", str(folder)
    if hub_allowed() and is_hub_id(s):
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
        bundle = bert.checkpoint.load_hub(target)  # its size checked before downloading
    else:
        bundle = bert.checkpoint.load_folder(target)
    release_memory()  # the file's fp16 copy, upcast and gone: about 45 MB for minilm-l6
    return bundle


def current_model() -> CurrentModel:
    """The model picked in the sidebar (raises a bert error with a readable message)."""
    state.init()
    src = st.session_state[state.MODEL_SOURCE]
    if src.startswith("session:"):
        name = src[len("session:") :]
        models = st.session_state[state.USER_MODELS]
        if name not in models:
            st.session_state[state.MODEL_SOURCE] = state.DEFAULT_MODEL
            raise CheckpointError(
                f"your model {name!r} is no longer in this session; switched back to {state.DEFAULT_MODEL}"
            )
        return CurrentModel(models[name], st.session_state[state.USER_MODEL_IDS][name], f"{name} (yours)")
    bundle = load_model(src)
    kind = "builtin" if src in BUILTINS else "path"
    return CurrentModel(bundle, f"{kind}:{src}", bundle.name)


def current_summary() -> ModelSummary:
    """What the sidebar and the Home page show of the model picked in the sidebar. A built-in
    shipped in our format is described from its files (`describe_builtin`): no torch, no
    weights, so the first page a student opens does not wait for a model it does not use.
    Any other model is loaded (`current_model`) and described from its bundle."""
    state.init()
    src = st.session_state[state.MODEL_SOURCE]
    if src in BUILTINS:
        summary = _described_builtin(src)
        if summary is not None:
            return summary
    return summary_of(current_model())


@st.cache_resource(show_spinner=False)
def _described_builtin(name: str) -> ModelSummary | None:
    return describe_builtin(name)


def summary_of(model: CurrentModel) -> ModelSummary:
    """The summary of a loaded model (its parameter counts from app.cache, as the pages get them)."""
    from .cache import parameter_counts  # torch, numpy and bert.analysis: only once a model is loaded

    b = model.bundle
    return ModelSummary(model.label, b.config, b.card, tuple(b.notes), b.is_classifier, parameter_counts(model))


def max_tokens(bundle: bert.Bundle) -> int:
    return int(bundle.config.max_position_embeddings)


# --- picking any model (the Compare page's two pickers) -----------------------------------------

FOLDER = "__folder__"  # picker option: a model folder in the server's models folder


def model_options() -> list[str]:
    """Built-ins, this session's own models ("session:<name>"), and a server model folder."""
    return list(bert.builtins.available_builtins()) + [f"session:{n}" for n in state.user_models()] + [FOLDER]


def option_label(option: str) -> str:
    if option == FOLDER:
        return "A model in the server's models folder…"
    if option.startswith("session:"):
        return f"{option[len('session:') :]} (your model, this session)"
    return f"{option} (built-in)"


def model_for(option: str, folder: str = "") -> CurrentModel:
    """The model behind a picker option (raises a bert error with a readable message)."""
    if option.startswith("session:"):
        name = option[len("session:") :]
        models = state.user_models()
        if name not in models:
            raise CheckpointError(f"your model {name!r} is no longer in this session")
        return CurrentModel(models[name], st.session_state[state.USER_MODEL_IDS][name], f"{name} (yours)")
    src = clean_text(folder, "the folder of the model") if option == FOLDER else option
    bundle = load_model(src)
    kind = "builtin" if src in BUILTINS else "path"
    return CurrentModel(bundle, f"{kind}:{src}", bundle.name)
