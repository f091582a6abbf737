"""BERT Explorer: see inside BERT while it runs.  `streamlit run streamlit_app.py`"""

import streamlit as st

from app import sidebar, state
from app.board import class_panel
from app.class_store import service as board_service
from app.jobs import backend
from app.lti import arrive as lti_arrive
from app.lti import view as lti_view
from app.server import guard, memory, page_fragments
from app.sidebar import app_icon
from app.ui import access, class_tools, links, signin
from app.ui.errors import show_errors


def lessons():
    """The lessons whose questions the class board's "Ask the class" offers: read when the teacher
    opens it (the lessons import torch; a page's start does not)."""
    from app.lessons import LESSONS

    return LESSONS


guard.install()  # once per process: no client clears the caches; uploads capped
page_fragments.install()  # once per process: a page's fragments end with the page

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
refused = backend.ready()  # ray mode: the cluster answers and its workers see our folder
if refused:
    st.error(f"This server cannot start: {refused}", icon=":material/error:")
    st.stop()
lti_arrive.arrive()  # a launch from the course: its user and the course's board, before the links
link_notes = links.arrive()  # a link's model, sentences and projector mode, before anything is drawn

# Every page: its file under pages/, title and Material icon. Home is the default; the class
# board is opt-in (BERT_EXPLORER_BOARD=1).
PAGE_TABLE = [
    ("home", "Home", "home"),
    ("lessons", "Lessons", "menu_book"),
    ("tokenization", "Tokenization", "text_fields"),
    ("embeddings", "Embeddings", "scatter_plot"),
    ("attention", "Attention", "hub"),
    ("masked_lm", "Masked LM & next sentence", "edit_note"),
    ("finetune", "Fine-tuning", "tune"),
    ("pretrain", "Pre-training", "school"),
    ("decoder", "Decoder on top", "translate"),
    ("head_patterns", "Head patterns", "grid_view"),
    ("explanations", "Explanations", "insights"),
    ("causes", "Causes", "science"),
    ("features", "Features", "category"),
    ("ablation", "Head ablation", "block"),
    ("compare", "Compare", "compare"),
    ("status", "Server status", "monitor_heart"),
    ("board", "Class board", "leaderboard"),
]
PAGES = {
    name: st.Page(f"pages/{name}.py", title=title, icon=f":material/{icon}:", default=name == "home")
    for name, title, icon in PAGE_TABLE
    if name != "board" or board_service.enabled()
}

page = st.navigation(list(PAGES.values()), expanded=True)  # every page listed: none folded behind "View more"
page_name = next(name for name, p in PAGES.items() if p is page)
sidebar.render()
with st.sidebar:
    lti_view.render()  # launched from the course (LTI 1.3)
    signin.render()  # sign-in through the school, when secrets.toml configures it
access.apply()  # contrast, focus, tap targets, the skip link (WCAG 2.2 AA)
class_tools.apply_projector_css()
class_tools.projector_bar()
for note in link_notes:
    st.info(note, icon=":material/link:")
with show_errors("the class panel"):
    class_panel.panel(PAGES)  # a class joined: the teacher's moves, the open question
with show_errors("this page"), memory.page_run():  # the last boundary: a message, never a traceback
    page.run()  # page_run empties the page's namespace afterwards (app/server/memory.py)
links.publish()  # the address now holds this view (what the page declared with links.use)
class_panel.after_run(page_name)  # the teacher's lead written; a follower who changed it has left
with st.sidebar:
    # after the page: its "Link for students" shows the address just published; the class part the board's
    class_tools.render(lambda: class_panel.sidebar_section(lessons))
