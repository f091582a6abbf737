"""Which models a student may use, loaded once and shared.

- `load_model(source)`: one `bert.Bundle` per source string, shared by every session and
  thread (st.cache_resource), and only what the server offers (`allowed_source`): built-ins,
  folders under BERT_EXPLORER_MODELS_DIR, hub ids if BERT_EXPLORER_ALLOW_HUB=1. Treat it as
  read-only: never train it, never call .train(), never change a weight. A user's own model
  (fine-tuned, pre-trained) lives in their session_state and is reached through
  `current_model()` (the sidebar's pick) or `model_for()` (a picker's option) under its own
  unique key.
- `offered_folders()`: the model folders of BERT_EXPLORER_MODELS_DIR that the pickers list by
  name (`model_options()`), described without loading them and scanned once per 30 s for the
  whole server; a folder added since can be typed by name.

What the pages compute from a model is in bert.analysis, and kept by app.analysis_cache.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import streamlit as st

import bert
from bert import CheckpointError, settings
from bert.checkpoint import models_folder
from bert.checkpoint.builtins import BUILTINS, ModelSummary, describe_builtin
from bert.checkpoint.hub import is_hub_id
from bert.checkpoint.models_folder import models_dir
from bert.public import public_text

from . import state
from .current_model import CurrentModel
from .export import context as view_context
from .formatting import card_summary, clean_text
from .server.memory import release_memory


def inference_threads() -> int:
    return settings.whole("BERT_EXPLORER_TORCH_THREADS")


_threads_set = False


def serve_with_few_threads() -> None:
    """In the server, page inference runs on BERT_EXPLORER_TORCH_THREADS torch threads (default
    1): every session's script runs in a thread of its own, and with torch's default (one per
    core) each run's team of threads fights the others for the cores (scripts/loadtest.py shows
    the slower pages). A job sets its own (BERT_EXPLORER_JOB_THREADS). Not in tests or scripts
    (no Streamlit runtime there): they keep their own setting."""
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


def hub_allowed() -> bool:
    """BERT_EXPLORER_ALLOW_HUB=1: students may name Hugging Face Hub ids (downloads)."""
    return settings.flag("BERT_EXPLORER_ALLOW_HUB")


def _folder_under_root(typed: str) -> Path | None:
    """The readable folder `typed` names inside models_dir() (symlinks and `..` resolved),
    relative names being taken from that root; None for anything else, whatever the reason."""
    try:
        root = models_dir().resolve()
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
    """A built-in name, a folder under models_dir() or (opted in) a hub id, loaded once and
    shared by all sessions (read-only). Anything else: CheckpointError(NOT_OFFERED)."""
    return _load_allowed(*allowed_source(source))


# --- the models folder, listed for the pickers ------------------------------------------------------

FOLDER_SCAN_SECONDS = 30.0  # one scan of the models folder serves every session this long
log = logging.getLogger("bert_explorer")
_scan_lock = threading.Lock()
_scanned: dict = {}  # {"at": monotonic seconds, "root": Path, "models": [ModelSummary]}
_logged: set[tuple[str, str]] = set()  # (folder, reason) already in the server log


def offered_folders(max_age_s: float = FOLDER_SCAN_SECONDS) -> list[ModelSummary]:
    """The model folders of models_dir() that the pickers offer by name, in name order: each
    described without loading it (bert/checkpoint/models_folder.py) and offered by `allowed_source` (a
    folder named like a built-in, or a link out of the models folder, is not). One scan serves
    the whole server for `max_age_s`, so 30 students do not each scan; a folder added since
    is listed at the next scan and can be typed in the meantime. A folder skipped is said once
    in the server log, with its reason."""
    root = models_dir()
    with _scan_lock:
        now = time.monotonic()
        if _scanned.get("root") == root and now - _scanned["at"] < max_age_s:
            return _scanned["models"]
        found = models_folder.scan(root)
        models, skipped = [], list(found.skipped)
        for m in found.models:
            try:
                offered = allowed_source(m.name)[0] == "folder"
            except CheckpointError:
                offered = False
            if offered:
                models.append(m)
            else:
                skipped.append((m.name, "not offered: a built-in model's name, or outside the models folder"))
        for name, why in skipped:
            if (name, why) not in _logged:
                _logged.add((name, why))
                log.warning("models folder: skipped %r: %s", name, why)
        _scanned.update(at=now, root=root, models=models)
        return models


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load_allowed(kind: str, target: str) -> bert.Bundle:
    import bert.checkpoint.load

    serve_with_few_threads()
    if kind == "builtin":
        bundle = bert.checkpoint.load.load_builtin(target)
    elif kind == "hub":
        bundle = bert.checkpoint.load.load_hub(target)  # its size checked before downloading
    else:
        bundle = bert.checkpoint.load.load_folder(target)
    release_memory()  # the file's fp16 copy, upcast and gone: about 45 MB for minilm-l6
    return bundle


def current_model() -> CurrentModel:
    """The model picked in the sidebar (raises a bert error with a readable message)."""
    state.init()
    src = st.session_state[state.MODEL_SOURCE]
    name = state.session_model_name(src)
    if name is not None:
        models = st.session_state[state.USER_MODELS]
        if name not in models:
            st.session_state[state.MODEL_SOURCE] = state.DEFAULT_MODEL
            raise CheckpointError(
                f"your model {name!r} is no longer in this session; switched back to {state.DEFAULT_MODEL}"
            )
        picked = CurrentModel(in_hand(models[name]), st.session_state[state.USER_MODEL_IDS][name], f"{name} (yours)")
    else:
        bundle = load_model(src)
        picked = CurrentModel(bundle, f"{'builtin' if src in BUILTINS else 'path'}:{src}", bundle.name)
    view_context.note_model(picked.label, picked.key, picked.bundle.model)  # for the page's saved views
    return picked


def in_hand(bundle: bert.Bundle) -> bert.Bundle:
    """A session's model ready for one run of a page: a saved run's (app/jobs/run_models.py) with its
    model loaded again if the server let it go (a bert error with a message if it cannot be)."""
    from .jobs.run_models import SavedBundle  # here: it subclasses bert.Bundle (torch), and Home draws without torch

    return bundle.loaded() if isinstance(bundle, SavedBundle) else bundle


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
    """The summary of a loaded model (its parameter counts from app.analysis_cache, as the pages get them)."""
    from .analysis_cache import parameter_counts  # torch, numpy and bert.analysis: only once a model is loaded

    b = model.bundle
    return ModelSummary(model.label, b.config, b.card, tuple(b.notes), b.is_classifier, parameter_counts(model))


def max_tokens(bundle: bert.Bundle) -> int:
    return int(bundle.config.max_tokens)


# --- picking any model (the Compare page's two pickers) -----------------------------------------

FOLDER = "__folder__"  # picker option: a model folder of the server's models folder, typed by name
LISTED = "models:"  # picker option: a folder offered_folders() lists, "models:<name>"


def model_options() -> list[str]:
    """Built-ins, the listed folders of the models folder ("models:<name>"), this session's own
    models ("session:<name>"), and a server model folder typed by name."""
    import bert.checkpoint.builtins

    listed = [LISTED + m.name for m in offered_folders()]
    return (
        list(bert.checkpoint.builtins.available_builtins())
        + listed
        + [state.session_key(n) for n in state.user_models()]
        + [FOLDER]
    )


def option_for(source: str) -> str:
    """The picker option that shows `source` (a MODEL_SOURCE value): itself for a built-in or a
    session model, "models:<name>" for a listed folder, FOLDER for a folder typed by name."""
    if state.session_model_name(source) is not None or source in BUILTINS:
        return source
    if source in {m.name for m in offered_folders()}:
        return LISTED + source
    return FOLDER


def source_of(option: str) -> str:
    """The MODEL_SOURCE value a picker option stands for (FOLDER: the name typed next to it)."""
    return option[len(LISTED) :] if option.startswith(LISTED) else option


LISTED_SUMMARY_CHARS = 80


def listed_label(option: str) -> str:
    """A listed folder's name with its card's one-line summary (plain text: a select box's
    options are not Markdown)."""
    name = source_of(option)
    card = next((m.card for m in offered_folders() if m.name == name), "")
    prose = "\n".join(line for line in public_text(card).splitlines() if not line.lstrip().startswith("#"))
    summary = card_summary(prose)  # its first line of prose: the heading is mostly the name again
    if len(summary) > LISTED_SUMMARY_CHARS:
        summary = summary[: LISTED_SUMMARY_CHARS - 1].rstrip() + "…"
    return f"{name}: {summary}" if summary else f"{name} (models folder)"


def option_label(option: str) -> str:
    """What a model picker (the sidebar's, Compare's) shows for `option`."""
    if option == FOLDER:
        return "A folder from the server's models folder…"
    if option.startswith(LISTED):
        return listed_label(option)
    name = state.session_model_name(option)
    if name is not None:
        return f"{name} (your model, this session)"
    return f"{option}: built-in" if BUILTINS.get(option) else f"{option} (built-in)"


def model_for(option: str, folder: str = "") -> CurrentModel:
    """The model behind a picker option (raises a bert error with a readable message)."""
    name = state.session_model_name(option)
    if name is not None:
        models = state.user_models()
        if name not in models:
            raise CheckpointError(f"your model {name!r} is no longer in this session")
        return CurrentModel(in_hand(models[name]), st.session_state[state.USER_MODEL_IDS][name], f"{name} (yours)")
    src = clean_text(folder, "the folder of the model") if option == FOLDER else source_of(option)
    bundle = load_model(src)
    kind = "builtin" if src in BUILTINS else "path"
    return CurrentModel(bundle, f"{kind}:{src}", bundle.name)
