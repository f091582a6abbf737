"""The Features page before anything is trained: the built-in dictionary the loaded built-in model
ships with (bert/analysis/dictionary_builtin.py) opened as the page's run, its quality and the
part-of-speech purity beside the controls' as measured when it was built, and the command that
built it. A link names the dictionary it reopens ("run": a run code, or none for the built-in)
and the feature its card shows."""

from __future__ import annotations

import streamlit as st

import bert
from app.current_model import CurrentModel
from app.figures.features import purity_bars
from app.formatting import md_escape
from app.jobs.dictionary_events import CONTROL, TRAINED
from app.run_session.dictionaries import FEATURE, RUN
from app.server.analysis_gate import ANALYSES, busy_notice
from app.ui import links, show_figure
from bert.analysis.dictionary import caps
from bert.analysis.dictionary_builtin import BuiltinDictionary, builtin_dictionary
from bert.analysis.dictionary_features import encode_all
from bert.analysis.dictionary_vectors import gather_activations

from .training_view import HELD_OUT, FeaturesRun, Trained, corpus_sentences, quality_table, reopen_code

RUN_LINK = "ft_run_link"  # session key: the run code a link names (published with the view)


@st.cache_resource(max_entries=2, show_spinner="Opening the built-in dictionary…")
def _opened(model_key: str, _bundle: bert.Bundle) -> tuple[FeaturesRun, BuiltinDictionary] | None:
    b = builtin_dictionary(_bundle.name)
    if b is None:
        return None
    d = b.dictionary
    held = corpus_sentences(0, HELD_OUT)[1]
    acts = gather_activations(_bundle, d.layer, held)
    trained = Trained(_bundle, d, b.quality, acts, encode_all(d, acts), b.purity.get(TRAINED))
    return FeaturesRun(model_key, d.layer, held, d.texts, {TRAINED: trained}, d.seconds, builtin=True), b


def builtin_run(model: CurrentModel) -> tuple[FeaturesRun, BuiltinDictionary] | None:
    """The loaded built-in model's own dictionary as a run (None: it is not a built-in, or ships none)."""
    if not model.key.startswith("builtin:"):
        return None
    with busy_notice() as notice, ANALYSES.place(notice):
        return _opened(model.key, model.bundle)


def show_builtin(run: FeaturesRun, b: BuiltinDictionary) -> None:
    """The built-in dictionary's quality, its purity beside the controls', and how it was made."""
    d = b.dictionary
    st.header(f"The built-in dictionary: layer {d.layer}, {d.n_features:,} features, {d.k} active a token")
    st.caption(
        "This model ships with a dictionary trained on its layer "
        f"{d.layer} ({d.tokens:,} word pieces of {d.texts:,} held-in sentences, {d.steps} steps): its features "
        "are here at once. Train your own below (a smaller one, beside the control)."
    )
    st.table(quality_table(run))
    named = [(name, p["mean"], p["chance"]) for name, p in b.purity.items() if p]
    if named:
        st.markdown("**How much of a feature is one part of speech: this model beside the controls**")
        show_figure.show(purity_bars(named), "dictionary_purity", key="ft_purity_builtin")
        st.caption(
            "Each dictionary's features judged by their 50 strongest words on the Brown Corpus files pre-training "
            "held out: the share with the feature's commonest part of speech, averaged over the features active on "
            "at least 50 of those words (the same rule for every dictionary); the tick is the same share for 50 "
            "words drawn at random. "
            + "; ".join(
                f"{md_escape(name)}: layer {p['layer']} of {md_escape(p['model'])}, {p['counted']:,} of "
                f"{p['n_features']:,} features judged"
                for name, p in b.purity.items()
                if p
            )
            + ". "
            + like_for_like(b)
        )
    with st.expander("How it was built"):
        st.code(b.command, language="bash")
        if b.controls_command != b.command:
            st.markdown("The controls' purity beside it:")
            st.code(b.controls_command, language="bash")
        rows = {
            f"layer {r['layer']}": {
                "variance explained": f"{r['quality']['variance_explained']:.3f}",
                "L0": f"{r['quality']['l0']:.1f}",
                "everyday cloze top-1: model → spliced": (
                    f"{r['quality']['cloze']['top1']:.3f} → {r['quality']['cloze']['spliced_top1']:.3f}"
                ),
                "part-of-speech purity": f"{r['purity']['mean']:.3f}",
                "CPU seconds to train (one thread)": f"{r['train_cpu_s']:.0f}",
            }
            for r in b.figures.get("layers", [])
        }
        if rows:
            st.markdown(
                "The layers compared (the same recipe on each; the one shipped is the purest that "
                "explains at least 0.8 of the variance at a cloze cost of at most 5 points):"
            )
            st.table(rows)


def like_for_like(b: BuiltinDictionary) -> str:
    """Whether the random-weights control beside the built-in dictionary was trained at its layer."""
    control = b.purity.get(CONTROL)
    if not control:
        return "Measured by the command below."
    if control["layer"] == b.dictionary.layer:
        ours = b.purity.get(TRAINED)
        gap = f" This model's purity minus the control's: {ours['mean'] - control['mean']:+.3f}." if ours else ""
        return (
            "Each control is the dictionary's recipe (its features, sparsity, steps, sentences and seed) on another "
            "model at the same layer (mini-scratch: at the same depth of its layers), measured by the commands "
            f"below.{gap}"
        )
    return (
        f"Not like for like: the control was trained at layer {control['layer']}, the dictionary at layer "
        f"{b.dictionary.layer}, by the command below."
    )


def link_params() -> list[links.Param]:
    """What a link to this view holds: the run (a run code; none: the built-in) and the feature."""
    return [
        links.Param("run", RUN_LINK, "text", default="", label="run code"),
        links.Param("feature", FEATURE, "int", default=0, lo=0, hi=caps()["features"] - 1, label="feature"),
    ]


def follow_link(model: CurrentModel) -> None:
    """A link's run code reopens that run when this session shows another one or none."""
    code = str(st.session_state.get(RUN_LINK) or "").strip().upper()
    shown = st.session_state.get(RUN)
    if code and (shown is None or shown.code != code or shown.model_key != model.key):
        reopen_code(model, code)
        opened = st.session_state.get(RUN)
        if opened is None or opened.code != code:
            st.session_state[RUN_LINK] = ""  # not reopened (the notice says why): not tried again


def shown_run(run: FeaturesRun) -> None:
    """The link names the run shown (its code; the built-in has none)."""
    st.session_state[RUN_LINK] = run.code
