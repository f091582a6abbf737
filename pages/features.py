"""Features: a dictionary of what one layer writes (a sparse autoencoder), learned live on the
loaded model beside the same recipe on a model with random weights; feature cards and steering."""

import streamlit as st

import app
from app.features import builtin_view, explore_view, training_view
from app.model_sources import current_model
from app.ui import links, widgets
from app.ui.errors import show_errors

app.run_through_entry()  # before anything else: see app/__init__.py

st.title("Features, not neurons")
st.markdown(
    "A layer's vector mixes many things at once, so one number of it (a neuron) rarely means one "
    "thing. A **dictionary of features** (a sparse autoencoder) learns a set of directions (usually "
    "more than the vector has numbers) and writes each token's vector as a few of them added up: each direction is "
    "a *feature*, and a token's features are the few it is made of. Train one on a layer, then read "
    "a feature's card, find the features of your sentence, or turn one up or off and watch the "
    "[MASK] guesses change. The **control** beside it is the same recipe on this model's shape with "
    "random weights: a feature is interesting only if it is more than what the control finds."
)

with show_errors("the dictionary"):
    model = current_model()
    if widgets.lacks_mlm(model.bundle, "The splice cost, the feature cards and steering"):
        st.stop()
    links.view(*builtin_view.link_params())
    builtin_view.follow_link(model)
    args = training_view.settings_form(model)
    training_view.train_panel(model, args)
    run = st.session_state.get(training_view.RUN)
    if run is None or run.model_key != model.key:
        opened = builtin_view.builtin_run(model)
        if opened is None:
            st.caption(
                "Press Train: the dictionary (and its control) train as a job, with their curves drawn as they go."
            )
            st.stop()
        run, builtin = opened
        builtin_view.show_builtin(run, builtin)
    else:
        training_view.show_run(run)
    builtin_view.shown_run(run)

card, sentence, steer = st.tabs(["Feature card", "Features of a sentence", "Steering"])
with card, show_errors("the feature card"):
    explore_view.card(run)
with sentence, show_errors("the sentence's features"):
    explore_view.sentence(run)
with steer, show_errors("steering"):
    explore_view.steering(run)
