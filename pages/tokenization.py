"""Tokenization: text -> tokens (WordPiece, or the family's BPE and Unigram) -> ids, with segments,
positions and spans."""

from functools import partial

import streamlit as st

import app
from app.export import notebook as nb
from app.formatting import (
    TRACE_VIEWS,
    clean_text,
    md_escape,
    token_table,
    traced,
    vocab_facts,
    vocab_search,
    word_groups,
)
from app.model_sources import current_model, max_tokens
from app.ui import show_figure, widgets
from app.ui.errors import show_errors
from app.ui.widgets import WORD_CHARS, cap_help
from bert.analysis.common import encode

app.run_through_entry()  # before anything else: see app/__init__.py

PIECES_SHOWN = 40  # the first tokens of a word too long to trace, shown in place of its steps

st.title("Tokenization")
st.markdown(
    "BERT never sees letters or whole words: it sees **tokens** from a fixed vocabulary. A word "
    "the vocabulary knows stays whole; a rarer word is cut into pieces, and every piece after the "
    "first starts with `##` (it glues onto the piece before). Each token becomes an **id**, the "
    "row of the embedding table the model will look up."
)

text_a, text_b = widgets.sentence_inputs(pair=True)

with show_errors("the tokens"):
    model = current_model()
    tok = model.bundle.tokenizer
    a = clean_text(text_a, "sentence A")
    b = clean_text(text_b, required=False) or None
    enc = encode(model.bundle, a, b)
    if enc.truncated:
        st.warning(
            f"The input is longer than this model's maximum of {max_tokens(model.bundle)} "
            f"tokens: the last {enc.num_truncated:,} tokens were cut off.",
            icon=":material/content_cut:",
        )
    df = token_table(
        enc.tokens, enc.ids, enc.type_ids, enc.offsets, enc.word_ids, enc.sequence_ids, a, b, unk_token=tok.unk_token
    )
    n_unk = int(df["unknown"].sum())
    n_words = df.loc[df["word"] != "", "word"].nunique()
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Tokens (with specials)", len(df))
    c2.metric("Words", n_words)
    c3.metric("Split into pieces", int((df["piece"] == "continuation (##)").sum()))
    c4.metric("[UNK] tokens", n_unk)
    if n_unk:
        st.warning(
            f"{n_unk} token(s) became [UNK]: the vocabulary has no pieces to spell them "
            "(often emoji or rare symbols). The model sees them all as the same token.",
            icon=":material/help:",
        )

    stripes = word_groups(df)

    def _style(row):
        if row["unknown"]:
            return ["background-color: #ffd6d6"] * len(row)
        if row["piece"] == "special":
            return ["background-color: #eeeeee"] * len(row)
        return ["background-color: #e8f1fb" if stripes[row.name] else ""] * len(row)

    view = df.style.apply(_style, axis=1) if len(df) <= 600 else df
    st.dataframe(
        view,
        hide_index=True,
        width="stretch",
        height=min(420, 36 + 35 * len(df)),
        column_config={
            "position": st.column_config.NumberColumn(help="position id: which learned position vector is added"),
            "segment": st.column_config.NumberColumn(help="segment (token type) id: 0 for sentence A, 1 for B"),
            "word": st.column_config.TextColumn(help="pieces of one word share this label (A3 = word 3 of sentence A)"),
            "span": st.column_config.TextColumn(help="character offsets into the sentence it came from"),
        },
    )
    widgets.csv_download(df, "Download the table (CSV)", "tokens.csv", key="tok_csv")
    show_figure.save_table(df, "tokens", key="tok_table", notebook=partial(nb.tokenization, text_a=a, text_b=b))
    st.caption(
        "Rows with the same blue or white band are pieces of one word; grey rows are the "
        "special tokens BERT adds; red rows are [UNK]."
    )

with st.expander("The special tokens", expanded=False):
    st.markdown(
        "- `[CLS]` always sits at position 0. Its final vector is what the pooler and the next-"
        "sentence head read, and what a classifier fine-tuned with *cls* pooling reads.\n"
        "- `[SEP]` closes each sentence, so the model can tell where A ends and B starts. The "
        "segment id (0 for A, 1 for B) tells it the same thing a second way.\n"
        "- `[MASK]` hides a token during pre-training; the model must guess what was there.\n"
        "- `[PAD]` fills short inputs up to the length of the longest in a batch; attention ignores it.\n"
        "- `[UNK]` stands for anything the vocabulary cannot spell."
    )

with show_errors("the tokenizer's steps"):
    model = current_model()
    tok = model.bundle.tokenizer
    heading, how, table = TRACE_VIEWS[tok.kind]
    st.header(heading)
    st.markdown(how)
    words = []
    if (text_a or "").strip():
        words = [w for w in dict.fromkeys(tok.basic_tokenize(text_a)) if w.strip()][:500]
    c1, c2 = st.columns(2)
    pick = c1.selectbox("A word from sentence A", ["unaffable"] + words, index=0)
    own = c2.text_input("…or type any word", "", max_chars=WORD_CHARS, help=cap_help(WORD_CHARS))
    word = (own or pick).strip()
    if word:
        basic = tok.basic_tokenize(word)
        if len(basic) != 1:
            st.info(
                f"That is {len(basic)} words for this tokenizer (punctuation is split off first): "
                f"{md_escape(' · '.join(basic)) or 'nothing'}. Type a single word."
            )
        else:
            trace = traced(tok, word)
            if trace.capped:  # too long a word to trace (bert/tokenizer/bpe.py MAX_TRACE_CHARS): its tokens only
                shown = md_escape(" + ".join(trace.pieces[:PIECES_SHOWN]))
                more = len(trace.pieces) - PIECES_SHOWN
                st.info(
                    f"Steps not shown for this word: {md_escape(trace.reason)}. Pick or type a shorter word to watch "
                    f"its merges. Result: {len(trace.pieces):,} tokens, {shown}"
                    + (f" … and {more:,} more" if more > 0 else ""),
                    icon=":material/content_cut:",
                )
            else:
                frame = table(trace)
                st.dataframe(frame, hide_index=True, width="stretch", height=min(400, 36 + 35 * max(1, len(frame))))
                result = md_escape(" + ".join(trace.pieces))
                if trace.unk:
                    unknown = f"{md_escape(tok.unk_token)} ({md_escape(trace.reason)})"
                    st.warning(f"Result: {unknown}", icon=":material/help:")
                else:
                    st.success(f"Result: {result}   (ids {', '.join(map(str, trace.ids))})")

st.header("The vocabulary")
with show_errors("the vocabulary"):
    vocab = current_model().bundle.tokenizer.vocab
    f = vocab_facts(vocab)
    c1, c2, c3 = st.columns(3)
    c1.metric("Size", f"{f['size']:,}")
    c2.metric(
        "Continuation pieces (##)",
        f"{f['continuations']:,} ({f['continuation share']:.1%})",
        help="Pieces that can only follow another piece inside a word.",
    )
    c3.metric("Unused slots", f"{f['unused slots']:,}")
    q = st.text_input("Search the vocabulary", "play", max_chars=WORD_CHARS, help=cap_help(WORD_CHARS))
    hits = vocab_search(vocab, q)
    if q.strip() and hits.empty:
        st.info("No token contains that text.")
    elif not hits.empty:
        st.dataframe(hits, hide_index=True, width="stretch", height=min(300, 36 + 35 * len(hits)))
