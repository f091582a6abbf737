"""Layout helpers that keep a page's control and its result on one screen."""

from __future__ import annotations

import re

import streamlit as st


def scroll_here(tag: str) -> None:
    """Scroll the page so that this point is at the top of the window (below Streamlit's header),
    once: the script runs when its element is new, so `tag` must differ between the places scrolled
    to (a lesson's step). The elements of the run that follow the point, and the old ones they
    replace, change the page's height after the first scroll (the browser then clamps the scroll and
    the point slides down), so the point is scrolled back to the top on every change of the main
    column's size until the reader scrolls, taps or types (or half a minute passes). Only
    [A-Za-z0-9-] of `tag` is used: nothing typed reaches the script."""
    anchor = "scroll-" + re.sub(r"[^A-Za-z0-9-]", "", tag)[:80]
    st.html(
        f'<div id="{anchor}" style="scroll-margin-top: 4rem"></div>'
        f'<script id="bx-{anchor}">{_SCROLL_JS.replace("ANCHOR", anchor)}</script>',
        unsafe_allow_javascript=True,
    )


# Keeps the anchor at the top while the run's elements settle; the reader's own scroll ends it.
_SCROLL_JS = """(() => {
  const point = document.getElementById("ANCHOR");
  if (!point) return;
  const main = point.closest('[data-testid="stMain"]') || document.body;
  const column = main.querySelector('[data-testid="stMainBlockContainer"]') || main;
  const there = () => point.scrollIntoView({block: "start"});
  const watch = new ResizeObserver(there);
  const done = () => {
    watch.disconnect();
    for (const kind of ["wheel", "touchstart", "keydown", "mousedown"]) window.removeEventListener(kind, done, true);
  };
  for (const kind of ["wheel", "touchstart", "keydown", "mousedown"]) window.addEventListener(kind, done, true);
  watch.observe(column);
  there();
  setTimeout(done, 30000);
})();"""
