"""The `st.session_state` keys the pages share (the model, the sentences, per-page settings), with
their defaults. Keys one module owns live there: app/run_session/session.py (the training pages), app/ui/class_tools.py,
app/ui/links.py, app/run_session/snapshots.py, app/ui/show_figure.py, app/training/page.py, app/lessons/view.py.

Sentences typed on one page carry over to the next: each text lives under a plain key
(TEXT_A, TEXT_B) that no widget owns, and the widgets (W_TEXT_A, W_TEXT_B) are re-seeded from
it on every page. Streamlit deletes a widget's state when a page without that widget runs,
so a widget key alone would forget the text on a page switch.
"""

from __future__ import annotations

import uuid

import streamlit as st

# --- model -------------------------------------------------------------------------------------
DEFAULT_MODEL = "minilm-l6"
MODEL_SOURCE = "model_source"  # str: a built-in name, a folder path, or "session:<name>"
USER_MODELS = "user_models"  # dict name -> bert.Bundle: models made in this session
USER_MODEL_IDS = "user_model_ids"  # dict name -> unique id string (cache key for analyses)
LOCAL_PATH = "local_model_path"  # last folder typed in the sidebar
W_MODEL_CHOICE = "w_model_choice"  # sidebar selectbox
W_LOCAL_PATH = "w_local_path"  # sidebar text input

# --- the user's sentences (shared by all pages) ---------------------------------------------
TEXT_A = "text_a"
TEXT_B = "text_b"
W_TEXT_A = "w_text_a"
W_TEXT_B = "w_text_b"

# --- per-page settings ---------------------------------------------------------------------
MLM_TEXT = "mlm_text"  # the sentence with [MASK]s on the Masked LM page
W_MLM_TEXT = "w_mlm_text"
SHUFFLE_SEED = "shuffle_seed"  # Embeddings page: which shuffle of the words
NSP_PICK = "nsp_pick"  # index into the random sentence list, for reruns

DEFAULT_TEXT_A = "The animal didn't cross the street because it was too tired."
DEFAULT_TEXT_B = ""
# Examples the pages offer, with the words the default built-in must guess first (tests/test_default_examples.py
# checks them against the shipped model, so a new checkpoint that gets one wrong fails CI).
# The shipped minilm-l6 tends to repeat a sentence's subject ("Paris is a city in [MASK]" -> paris 0.59,
# france 0.33: its card says so), so the example names the country and asks for a verb and a place.
DEFAULT_MLM_TEXT = "Paris is a city in France, and there [MASK] many people in [MASK]."
DEFAULT_MLM_ANSWERS = ("are", "france")
HINT_MLM_TEXT = "She opened the [MASK] and walked in."
HINT_MLM_ANSWERS = ("door",)
PICK_WORD_DEFAULT = "was"  # "Pick words of sentence A": the word hidden first in DEFAULT_TEXT_A

DEFAULTS = {
    MODEL_SOURCE: DEFAULT_MODEL,
    LOCAL_PATH: "",
    TEXT_A: DEFAULT_TEXT_A,
    TEXT_B: DEFAULT_TEXT_B,
    MLM_TEXT: DEFAULT_MLM_TEXT,
    SHUFFLE_SEED: 1,
    NSP_PICK: 0,
}


def init() -> None:
    """Fill in defaults once per session (called at the top of streamlit_app.py)."""
    ss = st.session_state
    for key, value in DEFAULTS.items():
        if key not in ss:
            ss[key] = value
    if USER_MODELS not in ss:
        ss[USER_MODELS] = {}
    if USER_MODEL_IDS not in ss:
        ss[USER_MODEL_IDS] = {}


# --- this session's own models ------------------------------------------------------------------


SESSION_MODEL = "session:"  # a MODEL_SOURCE (and picker option) naming one of this session's models


def session_key(name: str) -> str:
    """The MODEL_SOURCE / picker option of this session's model `name`."""
    return SESSION_MODEL + name


def session_model_name(source: str) -> str | None:
    """The name in a "session:<name>" source, None for any other source."""
    return source[len(SESSION_MODEL) :] if source.startswith(SESSION_MODEL) else None


def add_user_model(name: str, bundle, select: bool = True) -> str:
    """Register a model made in this session (fine-tuned, pre-trained) under `name`.

    It stays in this session only (never in the shared cache). Returns its picker key.
    """
    init()
    st.session_state[USER_MODELS][name] = bundle
    key = session_key(name)
    st.session_state[USER_MODEL_IDS][name] = f"{key}:{uuid.uuid4().hex[:10]}"
    if select:
        st.session_state[MODEL_SOURCE] = key
    return key


def user_models() -> dict:
    return st.session_state.get(USER_MODELS, {})


# --- the shared sentences -----------------------------------------------------------------------


def set_text(store_key: str, value: str) -> None:
    """Change a shared sentence from code (e.g. in a button callback)."""
    st.session_state[store_key] = value


def default_pick(words: list) -> int:
    """Index of the word to hide first: PICK_WORD_DEFAULT when the sentence has it, else the middle."""
    names = [w[0].lower() for w in words]
    return names.index(PICK_WORD_DEFAULT) if PICK_WORD_DEFAULT in names else len(words) // 2
