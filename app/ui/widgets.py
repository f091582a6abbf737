"""Small widgets the pages share, and the caps on what a student can type.

Every text box of the explorer pages has a `max_chars`: the browser stops typing and pasting
there, and Streamlit cuts a longer value a client sends. A text that reaches the cap another
way (kept in the session, set by code) is cut here too, and a warning says so.
"""

from __future__ import annotations

import streamlit as st

from bert import InputError, settings
from bert.tokenizer.vocab import MASK_TOKEN as MASK

from .. import state
from ..export import context
from ..formatting import md_escape
from . import links

# Caps, one place. A sentence of 2,000 characters is at most ~2,000 tokens (a few model windows);
# a longer paste is cut with a message. Words longer than 100 characters are [UNK] anyway.
SENTENCE_CHARS = 2_000  # any sentence or text box
WORD_CHARS = 100  # one word (the shared word, the word to trace, a vocabulary search)
PATH_CHARS = 500  # a folder path
TABLE_ROWS = 50  # sentences of a list a student fills (Compare's word map)
# Compare's box of sentences, one a line: a text box, not an editable table, because Streamlit
# builds every row a client adds to a table (5,000 rows: tens of seconds of processor) before
# the page can refuse them, while a text box's value is cut to max_chars as it arrives.
SENSE_BOX_CHARS = 20_000


def cap_help(limit: int, text: str = "") -> str:
    """A help text that names the cap."""
    return f"{text} At most {limit:,} characters.".strip()


def cap_text(text: str | None, what: str = "The text", limit: int = SENTENCE_CHARS, where=None) -> str:
    """`text` cut to `limit` characters, with a warning once it reaches the limit (the box stops
    there, so a text at the limit has most likely lost its end)."""
    text = text or ""
    if len(text) >= limit:
        (where or st).warning(
            f"{what} reached the {limit:,}-character limit of its box: anything longer is cut off there.",
            icon=":material/content_cut:",
        )
    return text[:limit]


def _capped_seed(widget_key: str, store_key: str) -> None:
    """Put the stored text into its box, cut to the cap first (so the box shows what is used).
    Always written, even when equal: on a page switch the widget is a new element (its id depends
    on the page), and only a value set through session_state carries over to it."""
    ss = st.session_state
    ss[store_key] = (ss.get(store_key) or "")[:SENTENCE_CHARS]
    ss[widget_key] = ss[store_key]


def _copy(widget_key: str, store_key: str) -> None:
    st.session_state[store_key] = st.session_state[widget_key]


def _stored_text_box(label: str, widget_key: str, store_key: str, help_text: str, what: str) -> str:
    """A text box whose text is kept under `store_key` (so it carries over to the other pages),
    capped at SENTENCE_CHARS. Returns the text, capped (`what` names it in the warning)."""
    _capped_seed(widget_key, store_key)
    st.text_area(
        label,
        key=widget_key,
        on_change=_copy,
        args=(widget_key, store_key),
        height=80,
        max_chars=SENTENCE_CHARS,
        help=cap_help(SENTENCE_CHARS, help_text),
    )
    text = cap_text(st.session_state[store_key], what)
    context.note_input(label, text)  # for the page's saved views
    return text


def sentence_inputs(
    pair: bool = True, label_a: str = "Sentence A", label_b: str = "Sentence B (optional)"
) -> tuple[str, str]:
    """Text boxes for sentence A (and B), shared by every page. Returns the texts, capped."""
    links.use(links.TEXT_A, *([links.TEXT_B] if pair else []))
    cols = st.columns(2) if pair else [st.container()]
    with cols[0]:
        help_a = "Type any text. It carries over to the other pages."
        a = _stored_text_box(label_a, state.W_TEXT_A, state.TEXT_A, help_a, label_a.split(" (")[0])
    b = ""
    if pair:
        with cols[1]:
            help_b = "A second sentence makes a pair: [CLS] A [SEP] B [SEP]."
            b = _stored_text_box(label_b, state.W_TEXT_B, state.TEXT_B, help_b, label_b.split(" (")[0])
    return a, b


def mlm_input(label: str = "A sentence with [MASK] in it") -> str:
    """The text box for the sentence with [MASK]s (Masked LM, Explanations, Ablation, Compare)."""
    links.use(links.MLM_TEXT)
    return _stored_text_box(label, state.W_MLM_TEXT, state.MLM_TEXT, "", "The sentence")


def ablation_text(bundle, text: str, where=None) -> str:
    """The start of `text` that Head ablation reads: its first BERT_EXPLORER_ABLATION_TOKENS
    tokens (ranking the heads runs the model once per head), with a note when the rest is left
    out; an InputError when every [MASK] is past the cut."""
    from bert.analysis.ablation import first_tokens

    cap = settings.whole("BERT_EXPLORER_ABLATION_TOKENS")
    cut, total = first_tokens(bundle, text, cap)
    if total > cap:
        if bundle.has_mlm and MASK in text and MASK not in cut:
            raise InputError(
                f"Head ablation reads the first {cap:,} tokens of a text, and every [MASK] of yours comes "
                f"later (the text has {total:,} tokens): move a [MASK] nearer the start, or shorten the text."
            )
        (where or st).info(
            f"Head ablation reads the first {cap:,} tokens of your text (it has {total:,}): ranking the heads "
            f"runs the model once per head, so the rest is left out. It stops after "
            f"“…{md_escape(cut[-40:])}”.",
            icon=":material/content_cut:",
        )
    return cut


def index_slider(where, label: str, n: int, key: str, value: int = 1) -> int:
    """A 1..n slider for a layer or head, returned 0-based. A model with one layer (or one head)
    leaves nothing to choose, and Streamlit refuses a slider whose minimum equals its maximum:
    then a caption says so and 0 is returned."""
    if n <= 1:
        where.caption(f"{label}: 1 (the model has only one)")
        return 0
    if key in st.session_state:  # set by a link or an earlier run: no second default for Streamlit
        return int(where.slider(label, 1, n, key=key)) - 1
    return int(where.slider(label, 1, n, min(max(value, 1), n), key=key)) - 1


def csv_download(df, label: str, file_name: str, key: str) -> None:
    """A table as an escaped CSV download (no formula runs in a spreadsheet: helpers.table_csv)."""
    from ..formatting import table_csv

    st.download_button(
        label,
        table_csv(df),
        file_name=file_name,
        mime="text/csv",
        icon=":material/download:",
        key=key,
        on_click="ignore",
    )
