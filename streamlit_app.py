"""BERT Explorer: see inside BERT while it runs.  `streamlit run streamlit_app.py`"""

from pathlib import Path

import streamlit as st

from app import board, links, sidebar, state, teach
from app.sidebar import app_icon

ROOT = Path(__file__).resolve().parent

# The icon is drawn here, not named: a :material/...: or emoji favicon is fetched from the
# internet by the browser, and the app must work (and make no request) offline.
# Projector mode from a link starts with the sidebar folded away (the set-up is the teacher's).
projector = st.query_params.get(links.PROJECTOR) == "1" or bool(st.session_state.get(links.PROJECTOR))
st.set_page_config(
    page_title="BERT Explorer",
    page_icon=app_icon(),
    layout="wide",
    initial_sidebar_state="collapsed" if projector else "auto",
)
state.init()
link_notes = links.arrive()  # a link's model, sentences and projector mode, before anything is drawn

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/lessons.py", title="Lessons", icon=":material/menu_book:"),
    st.Page("pages/tokenization.py", title="Tokenization", icon=":material/text_fields:"),
    st.Page("pages/embeddings.py", title="Embeddings", icon=":material/scatter_plot:"),
    st.Page("pages/attention.py", title="Attention", icon=":material/hub:"),
    st.Page("pages/masked_lm.py", title="Masked LM & next sentence", icon=":material/edit_note:"),
]

# --- later pages: each is added only once its file exists -----------------------------------------
LATER_PAGES = [
    ("pages/finetune.py", "Fine-tuning", ":material/tune:"),
    ("pages/pretrain.py", "Pre-training", ":material/school:"),
    ("pages/head_patterns.py", "Head patterns", ":material/grid_view:"),
    ("pages/explanations.py", "Explanations", ":material/insights:"),
    ("pages/ablation.py", "Head ablation", ":material/block:"),
    ("pages/compare.py", "Compare", ":material/compare:"),
    ("pages/status.py", "Server status", ":material/monitor_heart:"),
]
if board.enabled():  # opt-in: BERT_EXPLORER_BOARD=1
    LATER_PAGES.append(("pages/board.py", "Class board", ":material/leaderboard:"))
for path, title, icon in LATER_PAGES:
    if (ROOT / path).exists():
        PAGES.append(st.Page(path, title=title, icon=icon))

page = st.navigation(PAGES)
sidebar.render()
teach.apply_projector_css()
for note in link_notes:
    st.info(note, icon=":material/link:")
page.run()
links.publish()  # the address now holds this view (what the page declared with links.use)
with st.sidebar:
    teach.render()  # after the page: its "Link for students" shows the address just published
