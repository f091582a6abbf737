"""The sidebar's "For the class" tools: a link for students (with a QR code drawn here, offline),
projector mode, and the format of figure downloads."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable

import streamlit as st

from . import links, show_figure

# Projector mode: everything larger (Streamlit sizes in rem, so the root size scales labels,
# text and widgets together: 22 px root -> 19 px widget labels), the toolbar's menu and actions
# hidden but its sidebar opener kept (and enlarged): the teacher's controls live in the sidebar.
# A constant: nothing a user typed goes into it.
PROJECTOR_CSS = """
<style>
html { font-size: 22px; }
[data-testid="stToolbarActions"], [data-testid="stMainMenu"], [data-testid="stAppDeployButton"],
[data-testid="stStatusWidget"], [data-testid="stDecoration"] { display: none; }
[data-testid="stExpandSidebarButton"] { transform: scale(1.6); transform-origin: left center; }
[data-testid="stCaptionContainer"] { font-size: 0.95rem; }
[data-testid="stMainBlockContainer"] { padding-top: 1.5rem; }
</style>
"""


def apply_projector_css() -> None:
    if show_figure.projector_on():
        st.markdown(PROJECTOR_CSS, unsafe_allow_html=True)


def _leave_projector() -> None:
    st.session_state[links.PROJECTOR] = False


def projector_bar() -> None:
    """In projector mode, a line at the top of every page: where the teacher's tools are (the
    sidebar, opened by the arrow at the top left) and a button that leaves projector mode."""
    if not show_figure.projector_on():
        return
    c1, c2 = st.columns([3, 1], vertical_alignment="center")
    c1.caption("Projector mode: the arrow at the top left opens the sidebar (pages, model, class).")
    c2.button(
        "Leave projector mode", icon=":material/close_fullscreen:", on_click=_leave_projector, key="leave_projector"
    )


@functools.lru_cache(maxsize=64)
def qr_png(url: str) -> bytes:
    """The link as a QR code (PNG bytes), made by segno on the server: no network."""
    import segno

    buf = io.BytesIO()
    segno.make(url, error="m").save(buf, kind="png", scale=6, border=2)
    return buf.getvalue()


def _link_box() -> None:
    url = links.current_url()
    st.caption("Students open this address to see the same view: same model, sentences, layer, head.")
    st.code(url, language=None, wrap_lines=True)
    if "localhost" in url or "127.0.0.1" in url:
        st.caption(
            "This address only works on this computer: replace `localhost` with this computer's "
            "name or address on the class network."
        )
    for note in links.notes():
        st.caption(note)
    st.caption("Uploaded files and models trained in this session are never part of a link.")
    try:
        st.image(qr_png(url), caption="Scan to open", width=220)
    except Exception:  # noqa: BLE001 - a link too long for a QR code: the text above still works
        st.caption("This link is too long for a QR code; copy the address above.")


def render(class_section: Callable[[], None] | None = None) -> None:
    """The sidebar section (called inside `with st.sidebar`, after the page has run); the class's
    own part (joining, leading, following: the board's) is drawn by `class_section`."""
    ss = st.session_state
    st.markdown("### For the class")
    with st.popover("Link for students", icon=":material/link:", width="stretch"):
        _link_box()
    if class_section is not None:
        class_section()
    st.toggle(
        "Projector mode",
        key=links.PROJECTOR,
        help="Larger type in the page and in every figure, thicker lines, colour scales that "
        "colour-blind viewers read too. It is part of the link.",
    )
    ss.setdefault(show_figure.FORMAT, "png")
    st.radio(
        "Figure downloads (the camera icon above each figure)",
        list(show_figure.FORMATS),
        key=show_figure.FORMAT,
        format_func=show_figure.FORMATS.get,
    )
