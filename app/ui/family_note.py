"""What a page says when its model is not BERT itself but a member of its family (bert/family.py):
one line, where the member differs from what the page explains, and nothing for BERT."""

from __future__ import annotations

import streamlit as st

from bert.family import MEMBERS, member


def embeddings(config) -> None:
    """The Embeddings page: a DistilBERT's missing segment table, ELECTRA's narrow tables."""
    kin = member(config)
    if not kin.segments:
        st.info(
            f"{kin.name}: no segment embeddings, only token + position (its segment part below is zero).",
            icon=":material/family_history:",
        )
    if config.embedding_width != config.hidden_size:
        st.info(
            f"{kin.name}: its embedding tables are {config.embedding_width} wide, narrower than its layers "
            f"({config.hidden_size}); a learned projection lifts the LayerNorm output to {config.hidden_size} "
            "before the first layer. Small tables, same layers: fewer parameters where they matter least.",
            icon=":material/family_history:",
        )


def no_next_sentence(config) -> bool:
    """The Masked LM page's next-sentence part: a line (and True) when the model has no such head."""
    kin = member(config)
    if kin.next_sentence:
        return False
    st.info(
        f"{kin.name} has no next-sentence head: it was pre-trained with "
        f"{kin.objective}, not next-sentence prediction, so there is nothing to show here.",
        icon=":material/family_history:",
    )
    return True


# Where each member's difference shows: (page, what to do there)
SHOWN_ON = {
    "bert": ("pages/masked_lm.py", "Masked LM & next sentence: both of its games"),
    "distilbert": ("pages/compare.py", "Compare: put it beside a BERT on one sentence"),
    "electra": ("pages/masked_lm.py", "Masked LM: the replaced-token view"),
}


def card() -> None:
    """BERT's family on the Home page: what each member changed from BERT and why, and the page
    that shows it. A teacher puts real checkpoints in the models folder (README)."""
    st.subheader("BERT's family")
    st.markdown(
        "Soon after BERT came models that kept its encoder and changed one or two things. This app "
        "runs these in its own code too; pick one from the models folder in the sidebar."
    )
    for kin in MEMBERS.values():
        page, label = SHOWN_ON[kin.model_type]
        st.markdown(f"**{kin.name}**: {kin.changed}. *Why:* {kin.why}.")
        st.page_link(page, label=label, icon=":material/arrow_forward:")
    st.caption("RoBERTa and ALBERT are not in this app yet: their tokenizers (byte-level BPE, SentencePiece) are next.")
