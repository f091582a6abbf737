"""The Pre-training page's "Continue this text" box, on a model trained on the next word: it writes
greedily or by sampling (temperature, top-k) with bert.analysis.generate.continue_text (kept by its
inputs and computed in one of the server's analysis places: app/analysis_cache.py), and shows
each step's ten likeliest next tokens and the causal attention that chose it (drawn as the Decoder
page draws a decoding: a step slider, a layer, the mean over heads, the step outlined)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from bert.analysis.generate import MAX_NEW
from bert.train.next_word import NEXT_WORD, next_word_probe

from ..analysis_cache import continuation, run_key
from ..figures.core import safe_labels
from ..formatting import md_escape
from ..run_session import session as ts
from ..ui import show_figure
from ..ui.errors import show_errors

TEXT_CHARS = 2000  # what the box takes; a prompt longer than the model reads is cut with a note
GREEDY, SAMPLE = "greedy", "sample"


def is_next_word(args) -> bool:
    """A run (its PretrainArgs) trained on the next word."""
    return getattr(args, "objective", None) == NEXT_WORD


def continue_box(res: dict) -> None:
    """The box under a finished next-word run: settings, the text written, and one step's view."""
    b, jid, args = res["bundle"], res["job_id"], res["info"]["args"]
    st.subheader("Continue this text")
    k = f"pt_cont_{jid}"
    ts.seed(f"{k}_text", next_word_probe(args.probe or ""))
    ts.seed(f"{k}_how", GREEDY, [GREEDY, SAMPLE])
    for name, value in (("n", 20), ("temp", 1.0), ("topk", 20), ("seed", 0)):
        ts.seed(f"{k}_{name}", value)
    text = st.text_area("Text to continue", key=f"{k}_text", max_chars=TEXT_CHARS, height=80)
    c1, c2, c3, c4, c5 = st.columns(5)
    how = c1.radio(
        "How it chooses",
        [GREEDY, SAMPLE],
        key=f"{k}_how",
        format_func=lambda h: {GREEDY: "Most likely word", SAMPLE: "Sample"}[h],
    )
    n = c2.number_input("Tokens to write", 1, MAX_NEW, key=f"{k}_n")
    sampling = how == SAMPLE
    temp = c3.number_input("Temperature", key=f"{k}_temp", step=0.1, format="%.2f", disabled=not sampling)
    top_k = c4.number_input("Top-k", key=f"{k}_topk", step=1, disabled=not sampling)
    seed = c5.number_input("Seed", 0, 2**31 - 1, key=f"{k}_seed", disabled=not sampling)
    ts.remember(*(f"{k}_{name}" for name in ("text", "how", "n", "temp", "topk", "seed")))
    if not (text or "").strip():
        st.info("Type the start of a text: the model writes what comes next, one token at a time.")
        return
    with show_errors("the continuation"):
        how = (float(temp), int(top_k), int(seed)) if sampling else (1.0, 0, 0)  # greedy: the rest is unused
        cont = continuation(run_key(res), text, int(n), not sampling, *how, b)
        _show(cont, b, k)
    if sampling:
        st.caption(
            "Sampling draws each token from the model's probabilities divided by the temperature (below 1: "
            "bolder favourites; above 1: flatter), among the top-k likeliest only. The same seed writes the same text."
        )


def _show(cont, bundle, k: str) -> None:
    """The written text, a note when the prompt was cut, the step slider, table and attention."""
    if cont.cut:
        st.info(
            f"The text was too long for this model, which reads {bundle.config.max_tokens} tokens: its first "
            f"{cont.cut:,} tokens were left out, so that it reads the end of the text and has room to write."
        )
    st.markdown(continued_text(bundle.tokenizer, cont.prompt_ids, [s.token_id for s in cont.steps]))
    if cont.ended:
        st.caption("It wrote [SEP], the end of a text, and stopped there.")
    T, L = len(cont.steps), cont.steps[0].attention.shape[0]
    c1, c2 = st.columns(2)
    t = c1.slider("Step", 1, T, T, key=f"{k}_step") - 1 if T > 1 else 0
    layer = c2.selectbox("Layer", list(range(1, L + 1)), index=L - 1, key=f"{k}_layer") - 1
    step = cont.steps[t]
    st.markdown(
        f"Step {t + 1}: after **{md_escape(cont.tokens[len(cont.prompt) + t - 1])}** it wrote "
        f"**{md_escape(step.token)}** (p = {step.prob:.2f})."
    )
    left, right = st.columns([2, 3])
    table = pd.DataFrame(
        {
            "next token": [tok for tok, _ in step.top],
            "probability": [p for _, p in step.top],
            "chosen": ["✓" if tok == step.token else "" for tok, _ in step.top],
        }
    )
    left.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={"probability": st.column_config.ProgressColumn(format="%.3f", min_value=0.0, max_value=1.0)},
    )
    left.caption("The ten likeliest next tokens at this step, in the distribution it chose from.")
    show_figure.show(
        attention_figure(attention_matrix(cont, layer), [s.token for s in cont.steps], cont.tokens[:-1], layer, t),
        "pretrain-continue-attention",
        where=right,
        key=f"{k}_att",
    )
    right.caption(
        "Each row: where the last token read looked (mean over heads) when it chose the row's token. "
        "It sees only its left: the upper right stays empty."
    )


def continued_text(tokenizer, prompt_ids: list[int], written_ids: list[int]) -> str:
    """The prompt and, in bold, what was written after it (markdown, escaped), decoded as one text
    so that a written piece joins the word it continues ("the" + "##re" reads the**re**). [UNK]
    stays visible: a word the model does not know."""
    prompt = tokenizer.decode(prompt_ids)
    whole = tokenizer.decode([*prompt_ids, *written_ids])
    if not whole.startswith(prompt):  # a decoder that rewrites across the join: show the two apart
        return f"{md_escape(prompt)} **{md_escape(tokenizer.decode(written_ids))}**"
    written = whole[len(prompt) :]
    gap = " " if written[:1].isspace() or not prompt else ""
    return f"{md_escape(prompt)}{gap}**{md_escape(written.strip())}**"


def attention_figure(z: np.ndarray, written: list[str], read: list[str], layer: int, upto: int) -> go.Figure:
    """The steps' attention rows (steps, tokens read) as the Decoder page draws a decoding's: rows
    after `upto` blank, row `upto` outlined; tokens escaped and made unique (safe_labels)."""
    z = np.array(z, dtype=float)
    z[upto + 1 :] = np.nan
    y, x = safe_labels(written), safe_labels(read)
    fig = go.Figure(
        go.Heatmap(
            z=z, x=x, y=y, colorscale="Blues", zmin=0, zmax=1, hovertemplate="%{y} ← %{x}: %{z:.2f}<extra></extra>"
        )
    )
    fig.add_shape(type="rect", x0=-0.5, x1=len(x) - 0.5, y0=upto - 0.5, y1=upto + 0.5, line=dict(color="#d62728"))
    fig.update_yaxes(autorange="reversed", title_text="token written", type="category")
    fig.update_xaxes(title_text="read", type="category", tickangle=-45)
    fig.update_layout(
        title=f"causal attention, layer {layer + 1}", height=120 + 26 * len(y), margin=dict(l=10, r=10, t=40, b=10)
    )
    return fig


def attention_matrix(cont, layer: int) -> np.ndarray:
    """(steps, tokens read before the last step) of one layer, mean over heads: row t is step t's
    attention row, NaN beyond what it read."""
    width = len(cont.tokens) - 1
    z = np.full((len(cont.steps), width), np.nan)
    for i, s in enumerate(cont.steps):
        row = s.attention[layer].mean(0).numpy()
        z[i, : len(row)] = row
    return z
