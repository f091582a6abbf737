"""BERT Explorer's Streamlit side: the pages' state, models, analyses, figures, training jobs and class tools.

Data flows one way: text -> bert.tokenizer -> bert.model / bert.analysis (with the
intermediates asked for) -> app.analysis_cache -> app.figures -> page. app.model_sources says which models a
student may load; app.analysis_cache keeps what bert.analysis computes. `app.figures` and `app.formatting`
never import streamlit, so they can be tested on their own.
"""


def run_through_entry() -> None:
    """Call at the top of every page: make sure it runs through streamlit_app.py.

    Because a folder named pages/ sits next to streamlit_app.py, Streamlit starts in its old
    multipage mode and may run a pages/*.py file ALONE, without set_page_config, the sidebar
    or the session defaults: on a fresh server when the first request is for /attention, and
    in streamlit.testing's AppTest on every run after the first (it resets the mode before
    each run). st.navigation leaves that mode, but only once streamlit_app.py has run. So when
    a page finds itself running in that mode, it leaves it and reruns: the rerun goes through
    streamlit_app.py and lands on the same page (the page's id is its URL path either way).

    It also installs app.server.guard (once per process), so a page run alone is guarded too,
    and hands the page's namespace to app.server.memory.page_run, which empties it after the
    run (the cycle its functions make with it would otherwise keep what it bound).
    """
    import sys

    from .server import guard, memory

    guard.install()
    memory.note_page_globals(sys._getframe(1).f_globals)
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    except ImportError:  # a future Streamlit without these internals: nothing to fix
        return
    if get_script_run_ctx(suppress_warning=True) is None:
        return
    # The flag is one for the whole server: when several sessions open a page of a fresh server
    # at once, the first one clears it while the others are already inside the old mode's
    # runner. So look at how THIS run started too, not only at the flag.
    if PagesManager.uses_pages_directory or _started_by_old_multipage_mode():
        PagesManager.uses_pages_directory = False
        import streamlit as st

        st.rerun()


def _started_by_old_multipage_mode() -> bool:
    """True when this page runs under Streamlit's `_mpa_v1` (the pages/ folder mode)."""
    import sys

    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "_mpa_v1" and "scriptrunner" in f.f_code.co_filename:
            return True
        f = f.f_back
    return False
