"""The Features page's training: a dictionary of features (bert/analysis/dictionary.py) trained on
one layer of the loaded model, and the same recipe on a model of the same shape with random
weights beside it, their quality side by side.

Training runs in the page, in one of the server's places for analyses (app/server/analysis_gate.py:
"Busy: N ahead of you" while others train), under the server's caps on sentences, tokens,
features and steps (bert/settings.py BERT_EXPLORER_DICT_*); the curves are drawn as it goes.
The result stays in this session (a refresh trains again): the dictionaries, and the held-out
vectors their cards read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd
import streamlit as st

import bert
from app.current_model import CurrentModel
from app.figures.features import training_curves
from app.server.analysis_gate import ANALYSES, busy_notice
from app.training.data import not_on_server
from app.ui import show_figure
from bert.analysis import dictionary as dic
from bert.data.corpus.base import CorpusError

RUN = "ft_run"  # session key: the last FeaturesRun
ASKED = "ft_asked"  # session key: Train was pressed (a callback: the press survives the page's rerun)
HELD_OUT = 300  # held-out sentences the quality and the cards read
FEATURES = [256, 512, 1024, 2048, 4096]
SPARSITY = [8, 16, 32, 64]
DEFAULTS = dict(features=1024, sparsity=32, steps=200, sentences=1500)
TRAINED, CONTROL = "this model", "random-weights control"


@dataclass
class Trained:
    """One dictionary with what its cards and quality read."""

    bundle: bert.Bundle
    dictionary: dic.Dictionary
    quality: dic.Quality
    held_out: dic.Activations
    codes: dic.Codes


@dataclass
class FeaturesRun:
    model_key: str
    layer: int
    held_out_texts: list[str]
    sentences_asked: int
    dictionaries: dict[str, Trained]  # TRAINED, and CONTROL when asked
    seconds: float


@st.cache_resource(max_entries=2, show_spinner=False)
def control_model(model_key: str, _bundle: bert.Bundle) -> bert.Bundle:
    """The control of a model: its shape with random weights, one per model for every session."""
    return dic.random_control(_bundle, seed=0)


def _nearest(options: list[int], value: int) -> int:
    return min(range(len(options)), key=lambda i: abs(options[i] - value))


def _ask() -> None:
    st.session_state[ASKED] = True


@st.cache_resource(max_entries=4, show_spinner="Reading the corpora…")
def _sentences(n_train: int, n_held_out: int) -> tuple[list[str], list[str]]:
    return dic.corpus_texts(n_train, n_held_out)


def corpus_sentences(n_train: int, n_held_out: int) -> tuple[list[str], list[str]]:
    """The held-in and held-out sentences (bert.analysis.dictionary.corpus_texts), read once for
    every session; corpora this server has not fetched get one plain message."""
    try:
        return _sentences(n_train, n_held_out)
    except CorpusError:
        raise CorpusError(not_on_server("+".join(dic.CORPORA))) from None


def settings_form(model: CurrentModel) -> dict | None:
    """The dictionary's settings; the request (a dict) when Train was pressed, else None."""
    caps = dic.caps()
    L = model.bundle.config.num_hidden_layers
    c1, c2, c3, c4, c5 = st.columns(5)
    layer = c1.number_input("Layer", 1, L, value=max(1, L // 2), key="ft_layer", help="the state leaving this layer")
    feats = [f for f in FEATURES if f <= caps["features"]] or [caps["features"]]
    n_features = c2.selectbox("Features", feats, index=_nearest(feats, DEFAULTS["features"]), key="ft_features")
    sparsity = c3.selectbox(
        "Active a token (k)",
        SPARSITY,
        index=SPARSITY.index(DEFAULTS["sparsity"]),
        key="ft_k",
        help="TopK: exactly k features a token",
    )
    steps = c4.number_input("Steps", 1, caps["steps"], min(DEFAULTS["steps"], caps["steps"]), 50, key="ft_steps")
    sentences = c5.number_input(
        "Sentences",
        1,
        caps["texts"],
        min(DEFAULTS["sentences"], caps["texts"]),
        250,
        key="ft_sentences",
        help="held-in text",
    )
    control = st.checkbox(f"Train the same dictionary on a {CONTROL} beside it", value=True, key="ft_control")
    st.caption(
        f"Training reads sentences of the pre-training corpora (wiki, Brown, BBC) from the documents "
        f"pre-training trained on, at most {caps['tokens']:,} word pieces; the quality and the feature "
        f"cards read {HELD_OUT} sentences of the documents it held out. 1,024 word pieces a step."
    )
    st.button("Train the dictionary", type="primary", key="ft_train", on_click=_ask)
    if not st.session_state.pop(ASKED, False):
        return None
    return dict(
        layer=int(layer),
        n_features=int(n_features),
        sparsity=int(sparsity),
        steps=int(steps),
        sentences=int(sentences),
        control=bool(control),
    )


def train(model: CurrentModel, ask: dict) -> FeaturesRun:
    """Train (and the control), drawing the curves as they come; in a place for analyses."""
    t0 = time.perf_counter()
    texts, held = corpus_sentences(ask["sentences"], HELD_OUT)
    names = [(TRAINED, model.bundle)]
    if ask["control"]:
        names.append((CONTROL, control_model(model.key, model.bundle)))
    bar, chart = st.progress(0.0, text="Waiting for a place…"), st.empty()
    curves: list[tuple[str, list]] = []
    out = {}
    with busy_notice() as notice, ANALYSES.place(notice):
        for n, (name, bundle) in enumerate(names):
            steps: list[dic.DictionaryStep] = []
            curves.append((name, steps))
            bar.progress(n / len(names), text=f"{name}: reading the sentences through layer {ask['layer']}…")
            done = None
            for m in dic.train_dictionary(
                bundle,
                ask["layer"],
                texts,
                ask["n_features"],
                ask["sparsity"],
                ask["steps"],
                log_every=max(10, ask["steps"] // 20),
            ):
                if isinstance(m, dic.DictionaryStep):
                    steps.append(m)
                    bar.progress(
                        (n + m.step / m.steps) / len(names),
                        text=f"{name}: step {m.step} of {m.steps}, variance explained {m.variance_explained:.2f}",
                    )
                    chart.plotly_chart(training_curves(curves), width="stretch", key=f"ft_live_{name}_{m.step}")
                else:
                    done = m.dictionary
            bar.progress((n + 1) / len(names), text=f"{name}: its quality on held-out text…")
            acts = dic.gather_activations(bundle, ask["layer"], held)
            quality = dic.dictionary_quality(bundle, done, acts, held[: acts.texts_read])
            out[name] = Trained(bundle, done, quality, acts, dic.encode_all(done, acts))
    bar.empty()
    chart.empty()
    return FeaturesRun(model.key, ask["layer"], held, ask["sentences"], out, time.perf_counter() - t0)


def quality_table(run: FeaturesRun) -> pd.DataFrame:
    rows = {}
    for name, t in run.dictionaries.items():
        q, d, s = t.quality, t.dictionary, t.quality.splice
        rows[name] = {
            "variance explained (held out)": f"{q.variance_explained:.3f}",
            "L0: features active a token": f"{q.l0:.1f}",
            "dead features (active on no held-out token)": f"{q.dead} of {q.n_features} ({q.dead_share:.1%})",
            "masked-word top-1: model → spliced": f"{s.top1:.3f} → {s.spliced_top1:.3f}",
            "masked-word top-5: model → spliced": f"{s.top5:.3f} → {s.spliced_top5:.3f}",
            "spliced first guess = the model's": f"{s.agreement:.1%}",
            "everyday cloze top-1: model → spliced": f"{q.cloze.top1:.3f} → {q.cloze.spliced_top1:.3f}",
            "everyday cloze top-5: model → spliced": f"{q.cloze.top5:.3f} → {q.cloze.spliced_top5:.3f}",
            "trained on": f"{d.tokens:,} word pieces of {d.texts:,} sentences, {d.steps} steps",
            "seconds": f"{d.seconds:.0f}",
        }
    return pd.DataFrame(rows)


def show_run(run: FeaturesRun) -> None:
    trained = run.dictionaries[TRAINED]
    d = trained.dictionary
    st.subheader(f"Layer {run.layer}: {d.n_features:,} features, {d.k} active a token")
    if d.capped:
        st.info(
            f"This server trains a dictionary on at most {dic.caps()['tokens']:,} word pieces "
            f"(BERT_EXPLORER_DICT_MAX_TOKENS): it read the first {d.texts:,} of the {run.sentences_asked:,} "
            "sentences asked for.",
            icon=":material/info:",
        )
    st.table(quality_table(run))
    n_masked = trained.quality.splice.masked
    st.caption(
        f"Held out: {trained.quality.tokens:,} word pieces of {trained.held_out.texts_read} sentences; the splice "
        f"cost masks {n_masked:,} of them and replaces layer {run.layer}'s output at every word piece by its "
        "reconstruction. The control is the same recipe on a model of this shape with random weights: "
        "what a dictionary finds there comes from the text and the architecture, not from training."
    )
    show_figure.show(
        training_curves([(name, t.dictionary.curve) for name, t in run.dictionaries.items()]),
        "dictionary_training",
        key="ft_curves",
    )
