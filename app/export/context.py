"""What a page noted while it ran, for the views it saves: the model it runs on and the texts typed.

The model picker (`app.model_sources.current_model`) and the shared text boxes
(`app.ui.widgets`) note them; `app.ui.show_figure` reads them when it offers a figure's file.
Notes are kept per session (weakly, by the run's session state) and tagged with the page that ran: a
page reads only its own, so a file never names another page's inputs.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

_notes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a run's session state -> Notes
_lock = threading.Lock()


@dataclass
class Notes:
    page: str  # the page's script hash
    model_label: str | None = None
    model_key: str | None = None  # the app's key: "builtin:<name>", "path:<folder>", "session:..."
    model: Any = None  # the torch module, hashed only when a file is asked for
    inputs: dict[str, str] = field(default_factory=dict)


def _ctx():
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    except ImportError:  # a future Streamlit that moved it: files go without notes
        return None
    return get_script_run_ctx(suppress_warning=True)


def _mine(create: bool) -> Notes | None:
    ctx = _ctx()
    if ctx is None:
        return None
    page = str(getattr(ctx, "page_script_hash", ""))
    with _lock:
        notes = _notes.get(ctx.session_state)
        if notes is None or notes.page != page:
            if not create:
                return None
            notes = _notes[ctx.session_state] = Notes(page)
        return notes


def note_model(label: str, key: str, model) -> None:
    """The model this page runs on (its label, the app's key for it and its torch module)."""
    notes = _mine(create=True)
    if notes is not None:
        notes.model_label, notes.model_key, notes.model = label, key, model


def note_input(label: str, text: str) -> None:
    """A text the student typed on this page, under its box's label."""
    notes = _mine(create=True)
    if notes is not None:
        notes.inputs[label] = text


def current() -> Notes | None:
    """This page's notes, or None (no Streamlit run, or nothing noted on this page yet)."""
    return _mine(create=False)
