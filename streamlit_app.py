"""BERT Explorer: see inside BERT while it runs.  `streamlit run streamlit_app.py`"""

import streamlit as st

from app import board, links, sidebar, state, teach
from app.sidebar import app_icon

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
    st.Page("pages/finetune.py", title="Fine-tuning", icon=":material/tune:"),
    st.Page("pages/pretrain.py", title="Pre-training", icon=":material/school:"),
    st.Page("pages/head_patterns.py", title="Head patterns", icon=":material/grid_view:"),
    st.Page("pages/explanations.py", title="Explanations", icon=":material/insights:"),
    st.Page("pages/ablation.py", title="Head ablation", icon=":material/block:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
    st.Page("pages/status.py", title="Server status", icon=":material/monitor_heart:"),
]
if board.enabled():  # opt-in: BERT_EXPLORER_BOARD=1
    PAGES.append(st.Page("pages/board.py", title="Class board", icon=":material/leaderboard:"))

page = st.navigation(PAGES)
sidebar.render()
teach.apply_projector_css()
for note in link_notes:
    st.info(note, icon=":material/link:")
page.run()
links.publish()  # the address now holds this view (what the page declared with links.use)
with st.sidebar:
    teach.render()  # after the page: its "Link for students" shows the address just published
