"""Home: what BERT is, the loaded model drawn from its config, and the way around the app."""

import pandas as pd
import streamlit as st

import app
from app.figures.model_diagram import model_diagram
from app.formatting import fmt_params
from app.model_sources import current_summary
from app.ui import family_note, show_figure
from app.ui.errors import show_errors

app.run_through_entry()  # before anything else: see app/__init__.py

st.title("BERT Explorer")
st.markdown(
    "BERT reads a whole piece of text at once and turns every token into a vector that depends on "
    "all the other tokens around it. This app runs a real BERT while you watch, and lets you open "
    "it up at each step."
)

left, right = st.columns([1.1, 1])
with left:
    st.header("BERT in five sentences")
    st.markdown(
        "1. **Encoder only.** BERT is the encoder half of a transformer: a stack of identical "
        "layers that each let every token look at every other token (self-attention) and then "
        "process what it gathered (a small feed-forward network). There is no decoder: it does "
        "not write text word by word.\n"
        "2. **Tokens, not words.** Text is cut into WordPiece tokens from a fixed vocabulary, "
        "with `[CLS]` in front and `[SEP]` after each sentence.\n"
        "3. **Three embeddings added up.** Each token's starting vector is the sum of a word "
        "vector, a segment vector (sentence A or B) and a *learned position vector*, one per "
        "slot (512 slots in a standard BERT). That is how BERT knows word order: shuffle the words and its "
        "outputs change (see the Embeddings page).\n"
        "4. **Pre-trained on two games.** *Masked language modelling*: hide some tokens and "
        "guess them from both sides. *Next-sentence prediction*: decide whether sentence B "
        "really came after sentence A.\n"
        "5. **Fine-tuned by swapping the head.** For a new task, the prediction head on top is "
        "replaced by a fresh small one (say, positive/negative) and the whole network is "
        "trained a little more on labelled examples."
    )
    st.header("The pages")
    st.page_link("pages/tokenization.py", label="Tokenization: from text to token ids", icon=":material/text_fields:")
    st.page_link("pages/embeddings.py", label="Embeddings: word + segment + position", icon=":material/scatter_plot:")
    st.page_link("pages/attention.py", label="Attention: who looks at whom, head by head", icon=":material/hub:")
    st.page_link(
        "pages/masked_lm.py", label="Masked LM & next sentence: BERT's two training games", icon=":material/edit_note:"
    )
    st.caption("Pick the model in the sidebar. Sentences you type carry over between pages.")
    family_note.card()

with right:
    with show_errors("the model diagram"):
        model = current_summary()  # config and parameter counts: no weights needed to draw them
        cfg = model.config
        counts = model.counts
        st.header("The loaded model")
        st.caption(f"{counts['total']:,} parameters in all")
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Layers", cfg.num_hidden_layers)
        c2.metric("Hidden size", cfg.hidden_size)
        c3.metric("Heads", cfg.num_attention_heads)
        c4.metric("Parameters", fmt_params(counts["total"]), help=f"{counts['total']:,} exactly")
        show_figure.show(model_diagram(cfg, counts, narrow=show_figure.on_phone()), "home")
        table = pd.DataFrame({"component": list(counts), "parameters": list(counts.values())})
        table["share"] = (table["parameters"] / counts["total"]).map("{:.1%}".format)
        st.dataframe(
            table,
            hide_index=True,
            width="stretch",
            column_config={"parameters": st.column_config.NumberColumn(format="localized")},
        )
        st.caption(
            "The MLM decoder reuses the word-embedding matrix (tied weights), so it adds "
            "only a small transform and a bias. Most of a small BERT's parameters sit in "
            "the word embeddings."
        )
