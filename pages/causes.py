"""Causes: experiments on the live model that say which part of it makes a prediction."""

import streamlit as st

import app
from app.causes import pairs_view, patching_view, probes_view
from app.model_sources import current_model
from app.ui import links, widgets
from app.ui.errors import show_errors

app.run_through_entry()  # before anything else: see app/__init__.py

VIEWS = ["Patching", "Minimal pairs", "Probes"]

st.title("Causes")
st.markdown(
    "The other pages show what the model looks at; here you *intervene* and watch what changes. "
    "**Patching** copies one activation from one sentence's run into another's; **Minimal pairs** "
    "asks which of two near-identical sentences the model finds more likely; **Probes** train a "
    "small classifier on each layer to find where a word's grammar is written."
)
links.view(
    links.Param("view", "cz_view", "choice", default=VIEWS[0], choices=VIEWS, codes=("patch", "pairs", "probes"))
)
view = st.radio("View", VIEWS, horizontal=True, key="cz_view")

with show_errors("the experiment"):
    model = current_model()
    if view == VIEWS[2]:
        probes_view.render(model)
    elif not widgets.lacks_mlm(model.bundle, "This experiment", "probe its layers (Probes)"):
        (patching_view.render if view == VIEWS[0] else pairs_view.render)(model)
