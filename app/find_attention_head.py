"""The Attention page's "Find a head": pick a word and a target word, see the heads that send the
most attention from one to the other (bert/analysis/attention_heads.py), and show one with a click."""

from __future__ import annotations

import zlib

import numpy as np
import streamlit as st

from bert.analysis.attention_heads import heads_by_link, input_words, link_weights

from .formatting import md_escape

TOP = 5


def _pick(layer_key: str, head_key: str, layer: int, head: int) -> None:
    st.session_state[layer_key] = layer + 1
    st.session_state[head_key] = head + 1


def find_a_head(an, layer_key: str, head_key: str) -> None:
    """The helper for analysis `an`; its buttons set the page's layer and head sliders (their
    session keys, 1-based values)."""
    words = input_words(an.tokens, an.word_ids, an.sequence_ids)
    if len(words) < 2:
        return
    labels = [f"{w.text} (word {i})" for i, w in enumerate(words)]
    spoken = [i for i, w in enumerate(words) if w.text not in ("[CLS]", "[SEP]")] or list(range(len(words)))
    source = next((i for i in spoken if words[i].text.lower() == "it"), spoken[0])
    # the target it starts on: the word (not itself) that some head links it to most strongly
    best = {j: float(link_weights(an.attentions, words[source].positions, words[j].positions).max()) for j in spoken}
    target = max((j for j in spoken if j != source), key=best.get, default=source)
    tag = zlib.crc32("\x1f".join(an.tokens).encode())  # a new sentence: the choices start again
    c1, c2 = st.columns(2)
    src = c1.selectbox(
        "From the word", range(len(words)), index=source, format_func=labels.__getitem__, key=f"fh_from_{tag}"
    )
    dst = c2.selectbox(
        "to the word", range(len(words)), index=target, format_func=labels.__getitem__, key=f"fh_to_{tag}"
    )
    ranked = heads_by_link(an.attentions, words[src].positions, words[dst].positions, top=TOP)
    st.caption(
        f"The heads where “{md_escape(words[src].text)}” gives the most attention to “{md_escape(words[dst].text)}” "
        "(its weight on that word, 0 to 1; a word cut into pieces counts them together). Click one to show it."
    )
    for layer, head, weight in ranked:
        st.button(
            f"Layer {layer + 1}, head {head + 1}: {weight:.2f}",
            key=f"fh_{layer}_{head}",
            on_click=_pick,
            args=(layer_key, head_key, layer, head),
            width="stretch",
        )
    if ranked and np.isclose(ranked[0][2], 0.0):
        st.caption("No head gives this word any attention here (an attention mask may hide it).")
