"""What every page gets for WCAG 2.2 AA (docs/ACCESSIBILITY.md): text contrast of at least 4.5:1,
a focus ring that no one mistakes for the current page, tap targets of at least 24x24 CSS px, and
Streamlit's "Skip to main content" link (the first Tab stop) given its target.

All of it is constant CSS and script (nothing typed reaches it), drawn once per run by
streamlit_app.py before the page.
"""

from __future__ import annotations

import html

import streamlit as st

# Text: Streamlit's captions, widget help and small print are its text colour faded (below 4.5:1
# on white); INK_FADED is 6.9:1 on white and 6.4:1 on the sidebar's grey. FOCUS, a blue ring of
# 3 px, is the keyboard's mark; the current page keeps Streamlit's grey fill and gains a bar at its
# left, so the two never look alike. Tap targets: help icons, heading anchors and the slider's
# thumb get 24 px boxes (WCAG 2.5.8) without changing how they look.
INK_FADED = "#55565f"
FOCUS = "#1a56db"
SR_ONLY = "bx-sr-only"  # a heading for screen readers alone (screen_reader_heading)
INK_CHOSEN = "#a3262f"  # a chosen pill's text: 6.5:1 on its pink (Streamlit's red is 4.47:1)
CSS = f"""
<style>
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p,
[data-testid="stWidgetLabel"] small, [data-testid="stTooltipHoverTarget"],
[data-testid="stFileUploaderDropzoneInstructions"] span, [data-testid="stFileUploaderDropzoneInstructions"] small,
[data-testid="stSliderTickBarMin"], [data-testid="stSliderTickBarMax"],
[data-testid="stSidebarNavSeparator"], [data-testid="stMarkdownContainer"] small {{ color: {INK_FADED}; opacity: 1; }}
button[data-variant="pills"][aria-pressed="true"], button[data-variant="pills"][aria-pressed="true"] p,
button[data-variant="segmented_control"][aria-pressed="true"],
button[data-variant="segmented_control"][aria-pressed="true"] p {{
  color: {INK_CHOSEN};
}}
[data-testid="stSidebarNavLink"][aria-current="page"] {{ box-shadow: inset 4px 0 0 {INK_FADED}; }}
a:focus-visible, button:focus-visible, [role="tab"]:focus-visible, [role="radio"]:focus-visible,
[role="checkbox"]:focus-visible, [role="switch"]:focus-visible, [role="slider"]:focus-visible,
summary:focus-visible, input:focus-visible, textarea:focus-visible,
[data-testid="stSidebarNavLink"]:focus-visible {{
  outline: 3px solid {FOCUS} !important; outline-offset: 2px !important;
}}
[data-testid="stTooltipHoverTarget"], [data-testid="stHeaderActionElements"] a {{
  min-width: 24px; min-height: 24px; display: inline-flex; align-items: center; justify-content: center;
}}
[data-testid="stSlider"] [role="slider"] {{ min-width: 24px; min-height: 24px; }}
[data-testid="stElementContainer"]:has(#bx-skip-target) {{ display: none; }}
[data-testid="stElementContainer"]:has(.{SR_ONLY}) {{
  position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap;
}}
</style>
"""

# Streamlit draws its own "Skip to main content" link as the first Tab stop, which focuses the
# element with id "stMain"; in this layout no element has that id, so the link went nowhere. The
# script gives the main column that id; it runs in the page itself (no frame of its own, so the
# page's frames stay the page's views).
SKIP_TARGET_SCRIPT = """<script id="bx-skip-target">
(() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (main && !document.getElementById("stMain")) {
    main.id = "stMain";
    main.setAttribute("tabindex", "-1");
  }
})();
</script>"""


def apply() -> None:
    """The styles and the skip link's target, on every page (call once per run, before the page)."""
    st.html(CSS)  # a style-only html element takes no room on the page and is no markdown
    st.html(SKIP_TARGET_SCRIPT, unsafe_allow_javascript=True)


def screen_reader_heading(text: str, level: int = 2) -> None:
    """A heading only screen readers meet (one clipped pixel, out of the page's flow): the outline's
    missing level where a page goes from its title (h1) straight to sections drawn as h3."""
    st.html(f'<h{level} class="{SR_ONLY}">{html.escape(text)}</h{level}>')
