"""The dictionary of features a session is looking at, shared by the Features page and the class's
question about a feature: the session's keys and the dictionary those keys name for a model."""

from __future__ import annotations

import streamlit as st

from bert.errors import InputError

RUN = "ft_run"  # session key: the Features page's FeaturesRun shown (app/features/training_view.py)
FEATURE = "ft_feature"  # widget key: the feature a card shows (the sentence view may set it)

NO_DICTIONARY = (
    "The feature question needs a dictionary of features of this model: train one on the Features page "
    "(or pick a built-in model that ships with one)."
)


def shown_dictionary(model):
    """The dictionary the Features page shows for `model`: this session's trained one, else the
    model's built-in one (InputError: neither)."""
    from bert.analysis.dictionary_builtin import builtin_dictionary

    run = st.session_state.get(RUN)
    if run is not None and run.model_key == model.key:
        return next(iter(run.dictionaries.values())).dictionary
    shipped = builtin_dictionary(model.bundle.name) if model.key.startswith("builtin:") else None
    if shipped is None:
        raise InputError(NO_DICTIONARY)
    return shipped.dictionary
