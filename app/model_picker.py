"""A picker of one model beside another (Compare's models A and B): a built-in, a models-folder
model, this session's own, or a folder typed under the models folder."""

from __future__ import annotations

import streamlit as st

from .current_model import CurrentModel
from .model_sources import FOLDER, model_for, model_options, option_label
from .ui.widgets import PATH_CHARS, cap_help


def model_picker(col, which: str, default: str) -> CurrentModel:
    """A picker of model `which` ("A", "B") in `col`, `default` first; a folder box under it for "Folder"."""
    options = model_options()
    key = f"cmp_model_{which}"
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]
    choice = col.selectbox(f"Model {which}", options, key=key, format_func=option_label)
    folder = (
        col.text_input(
            f"Folder of model {which}", key=f"cmp_folder_{which}", max_chars=PATH_CHARS, help=cap_help(PATH_CHARS)
        )
        if choice == FOLDER
        else ""
    )
    return model_for(choice, folder)
