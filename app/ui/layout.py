"""Layout helpers that keep a page's control and its result on one screen."""

from __future__ import annotations

import re

import streamlit as st


def scroll_here(tag: str) -> None:
    """Scroll the page so that this point is at the top of the window (below Streamlit's header),
    once: the script runs when its element is new, so `tag` must differ between the places scrolled
    to (a lesson's step). Only [A-Za-z0-9-] of `tag` is used: nothing typed reaches the script."""
    anchor = "scroll-" + re.sub(r"[^A-Za-z0-9-]", "", tag)[:80]
    st.html(
        f'<div id="{anchor}" style="scroll-margin-top: 4rem"></div>'
        f'<script id="bx-{anchor}">document.getElementById("{anchor}")?.scrollIntoView({{block: "start"}});</script>',
        unsafe_allow_javascript=True,
    )
