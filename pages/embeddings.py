"""Embeddings: word + segment + position, the learned position table, word order, context."""

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

import app
from app import state
from app.analysis_cache import analyze, position_table, same_word, word_order
from app.export import notebook as nb
from app.figures.core import values_bar
from app.figures.embeddings import cosine_heatmap, embedding_part_heatmap, layer_similarity, norms_bar, position_pca
from app.formatting import BANK_SENTENCES
from app.model_sources import current_model
from app.ui import family_note, links, show_figure, widgets
from app.ui.errors import show_errors
from app.ui.widgets import SENTENCE_CHARS, WORD_CHARS, cap_help
from bert import BertExplorerError, InputError
from bert.analysis.vectors import cosine

app.run_through_entry()  # before anything else: see app/__init__.py

MAX_ROWS = 128  # heatmaps show at most this many tokens

st.title("Embeddings")
st.markdown(
    "Before any attention happens, each token gets a starting vector. BERT builds it by **adding "
    "three learned vectors**: one for the token itself, one for its segment (sentence A or B) and "
    "one for its **position** (slot 0, 1, 2, …). The sum is normalised (LayerNorm) and handed to "
    "the first encoder layer."
)
text_a, text_b = widgets.sentence_inputs(pair=True)

st.header("The three parts, their sum and the LayerNorm output")
with show_errors("the embedding parts"):
    model = current_model()
    family_note.embeddings(model.bundle.config)
    an = analyze(model, text_a, text_b)
    if an.truncated:
        st.warning(
            f"The input was cut at the model's maximum of {an.max_length} tokens "
            f"({an.num_truncated:,} tokens dropped).",
            icon=":material/content_cut:",
        )
    names = {"token": "token", "segment": "segment", "position": "position", "sum": "sum", "normed": "after LayerNorm"}
    links.view(links.Param("part", "emb_part", "choice", default="token", choices=tuple(names)))
    part = st.radio("Part", list(names), format_func=names.get, horizontal=True, key="emb_part")
    n = min(an.n_tokens, MAX_ROWS)
    if an.n_tokens > MAX_ROWS:
        st.caption(f"Showing the first {MAX_ROWS} of {an.n_tokens} tokens.")
    show_figure.show(
        embedding_part_heatmap(an.parts[part][:n], an.tokens[:n], part),
        f"embeddings-{part}",
        key="emb_heat",
        notebook=partial(nb.embeddings, text_a=an.text_a, text_b=an.text_b, part=part, rows=n),
    )
    table = pd.DataFrame(an.parts[part][:n], columns=[f"dim {d}" for d in range(an.parts[part].shape[1])])
    table.insert(0, "token", an.tokens[:n])
    widgets.csv_download(table, f"Download the {names[part]} vectors (CSV)", f"embeddings-{part}.csv", key="emb_csv")
    st.caption(
        "Rows are tokens, columns the dimensions of the vector; red is positive, blue negative. "
        "The segment rows are identical within a sentence; the position rows differ on every row."
    )
    norms = {k: np.linalg.norm(an.parts[k][:n], axis=1) for k in ("token", "segment", "position", "normed")}
    show_figure.show(norms_bar(norms, an.tokens[:n]), "embeddings-norms", key="emb_norms")

st.header("The learned position embeddings")
st.markdown(
    "BERT has **no fixed formula for positions**: it has a table with one trainable vector per "
    "position (up to the model's maximum, usually 512), learned during pre-training like any other "
    "weight. These are *absolute* positions: slot 7 always gets the same vector, whatever the "
    "sentence. Below is the whole table: squeezed into 2-D, and as similarities between every pair "
    "of positions."
)
with show_errors("the position table"):
    model = current_model()
    pt = position_table(model.key, model.bundle)
    try:  # mark the positions the input uses; the section above already explained any problem
        used = analyze(model, text_a, text_b).n_tokens
    except BertExplorerError:
        used = None
    c1, c2 = st.columns(2)
    show_figure.show(position_pca(pt.coords, pt.ratio, used=used), "embeddings-pca", where=c1, key="emb_pca")
    similarity = cosine_heatmap(pt.sim, title="cosine similarity between positions", axis_title="position")
    show_figure.show(similarity, "embeddings-possim", where=c2, key="emb_possim")
    st.caption(
        f"Neighbouring positions get similar vectors (the {show_figure.colour_words(similarity).high} band "
        "along the diagonal), so "
        "the model can tell both where a token is and how far apart two tokens are. Red rings "
        "mark the positions your input uses."
    )

with st.expander("Segment embeddings: sentence A vs B"):
    with show_errors("the segment embeddings"):
        seg = pt.segments
        if seg.shape[0] == 0:
            st.info(
                "This model (a DistilBERT) has no segment embeddings: it was trained without next-sentence "
                "prediction, so it never needed to tell sentence A from B. Its segment part is zero."
            )
        elif seg.shape[0] < 2:
            st.info("This model has a single segment type: it cannot mark sentence B.")
        else:
            c1, c2, c3 = st.columns(3)
            c1.metric("Length of A's vector", f"{np.linalg.norm(seg[0]):.2f}")
            c2.metric("Length of B's vector", f"{np.linalg.norm(seg[1]):.2f}")
            c3.metric("Cosine(A, B)", f"{cosine(seg[0], seg[1]):.3f}")
            st.markdown(
                "Every token of sentence A gets the first vector added, every token of "
                "sentence B the second. Type a sentence B above and look at the *segment* "
                "rows of the heatmap change where B starts."
            )

st.header("Word order matters")
st.markdown(
    "Self-attention on its own treats its input as a *set*: shuffle the tokens and each one would "
    "come out with the same vector, just in a different place. The position embeddings are what "
    "break this symmetry. So BERT **is** sensitive to word order: below, the words of sentence A "
    "are shuffled and each word's vector is compared with its vector in the original order."
)
with show_errors("the word-order demo"):
    model = current_model()
    if st.button("Shuffle again", key="emb_shuffle"):
        st.session_state[state.SHUFFLE_SEED] += 1
    try:
        wo = word_order(model.key, (text_a or "").strip(), st.session_state[state.SHUFFLE_SEED], model.bundle)
    except InputError as e:  # too few different words: a note, not an error
        st.info(str(e))
        wo = None
    if wo is not None:
        st.code(
            "original: " + " ".join(wo.words) + "\nshuffled: " + " ".join(wo.shuffled), language=None, wrap_lines=True
        )
        c1, c2 = st.columns(2)
        show_figure.show(
            layer_similarity(
                {"same word, original vs shuffled (mean)": wo.per_layer},
                title="how much each word's vector stays the same",
            ),
            "embeddings-order-layers",
            where=c1,
            key="emb_order_layers",
        )
        show_figure.show(
            values_bar(
                wo.words,
                wo.per_word,
                title="per word, last layer",
                y_title="cosine similarity",
                range_y=[min(0, min(wo.per_word)), 1],
            ),
            "embeddings-order-words",
            where=c2,
            key="emb_order_words",
        )
        st.caption(
            f"Mean sentence vectors (last layer): cosine {wo.sentence_cosine:.3f}. At layer 0 the "
            "token parts are identical and only the position parts differ; with every layer the "
            "change spreads, because each word now has different neighbours at different distances."
        )

st.header("The same word in different contexts")
st.markdown(
    "A word's starting vector is the same everywhere it appears. After a few layers its "
    "vector depends on the sentence around it: *bank* by a river drifts away from *bank* "
    "with an account."
)
with show_errors("the context demo"):
    model = current_model()
    c = st.columns(3)
    sents = tuple(
        c[i].text_input(
            f"Context {i + 1}",
            BANK_SENTENCES[i],
            key=f"emb_ctx_{i}",
            max_chars=SENTENCE_CHARS,
            help=cap_help(SENTENCE_CHARS),
        )
        for i in range(3)
    )
    word = st.text_input("Word to follow", "bank", key="emb_ctx_word", max_chars=WORD_CHARS, help=cap_help(WORD_CHARS))
    res = same_word(model.key, sents, word, model.bundle)
    series = {f"context {i + 1} vs {j + 1}": v for (i, j), v in res.pairs.items()}
    show_figure.show(
        layer_similarity(series, title=f"cosine similarity of “{res.word}” by layer"),
        "embeddings-ctx-plot",
        key="emb_ctx_plot",
    )
    st.caption(
        "Layer 0 is the embedding output: the only differences there come from position "
        "and segment. Higher layers mix in the context."
    )
