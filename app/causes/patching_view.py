"""The Causes page's Patching view: a clean and a corrupted sentence, the answer and its foil, a
site; the share of the answer each patch restores as a heatmap, and one patched run's ranking of
the answer and the foil with its top-k. A pair whose clean run does not prefer the answer (or whose
corrupted run does not prefer the foil) is said so above the map: a share restored is then a share
of a gap that does not run from the foil to the answer. While only one of the two sentences was
edited since the pair's token counts last matched, a mismatch is a hint to edit the other, not an
error."""

from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

from app.analysis_cache import patching
from app.export import notebook as nb
from app.figures.causes import patching_heatmap
from app.figures.masked_lm import mlm_topk_bar
from app.formatting import clean_text, md_escape
from app.ui import links, show_figure
from app.ui.widgets import SENTENCE_CHARS, WORD_CHARS
from bert.analysis.patching import PRESETS, SITES, Pair, Patching
from bert.errors import BertExplorerError, TokenCountMismatch

KEYS = Pair("pt_clean", "pt_corrupted", "pt_answer", "pt_foil")
LINK_NAMES = ("clean", "corrupted", "answer", "foil")
PRESET, SITE = "pt_preset", "pt_site"
EDITED = "pt_edited"  # session key: the sentences edited since the two last had as many tokens
SITE_NAMES = {
    "residual": "Residual stream (a layer's output at one token)",
    "attention": "Attention output (at one token)",
    "ffn": "Feed-forward output (at one token)",
    "heads": "One head (at every token)",
}


def _load_preset() -> None:
    for key, value in zip(KEYS, PRESETS[st.session_state[PRESET]], strict=True):
        st.session_state[key] = value
    st.session_state[EDITED] = set()


def _edited(key: str) -> None:
    st.session_state.setdefault(EDITED, set()).add(key)


def prefers(m: float, answer: str, foil: str) -> str:
    """Which of the two a run ranks first by m = logit[answer] - logit[foil] (markdown, escaped)."""
    a, f = md_escape(answer), md_escape(foil)
    if m > 0:
        return f"ranks **{a}** above **{f}** ({m:+.2f})"
    if m < 0:
        return f"ranks **{f}** above **{a}** ({m:+.2f})"
    return f"ties **{a}** and **{f}** (0.00)"


def baseline_warnings(r: Patching) -> list[str]:
    """What makes this pair's shares mislead, one sentence each (markdown): a clean run that does
    not prefer the answer, a corrupted run that does not prefer the foil."""
    a, f = md_escape(r.answer), md_escape(r.foil)
    out = []
    if r.clean <= 0:
        out.append(
            f"The clean sentence does not prefer **{a}**: it already {prefers(r.clean, r.answer, r.foil)}. "
            f"A cell that restores 1.00 brings back that run, which still does not put **{a}** first; "
            "pick a clean sentence where the model chooses the answer, or swap the answer and the foil."
        )
    if r.corrupted >= 0:
        out.append(
            f"The corrupted sentence does not prefer **{f}**: it {prefers(r.corrupted, r.answer, r.foil)}. "
            f"The corruption did not turn the model to **{f}**, so a patch has no foil to undo; "
            "change the corrupted sentence until the model prefers the foil there."
        )
    return out


def patched_line(r: Patching, row: int, col: int) -> str:
    """One patched run's ranking of the answer and the foil beside its share restored (markdown)."""
    m = float(r.patched[row, col])
    same = "as the clean run does" if np.sign(m) == np.sign(r.clean) else "unlike the clean run"
    return (
        f"Patched at {md_escape(r.rows[row])}, {md_escape(r.columns[col])}: {float(r.effect[row, col]):.2f} "
        f"of the gap restored; this run {prefers(m, r.answer, r.foil)}, {same}."
    )


def _pick_from_chart(chart_key: str, pick_key: str, R: int, X: int) -> None:
    """A click on the map selects a marker of trace 1: x is the column, y the row (0-based)."""
    for p in (st.session_state.get(chart_key) or {}).get("selection", {}).get("points", []):
        try:
            r, c = int(p["y"]), int(p["x"])
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= r < R and 0 <= c < X:
            st.session_state[pick_key] = r * X + c
            return


def _strongest(result) -> int:
    """The flat index of the cell that restores most, the residual's last row left out (there
    the [MASK] is 1 by construction)."""
    e = np.array(result.effect, dtype=np.float64)
    if result.site == "residual":
        e[-1] = -np.inf
    return int(np.argmax(e))


def _link_params() -> list[links.Param]:
    """The pair and the site in the link; the first preset's values are the defaults (left out)."""
    first = next(iter(PRESETS.values()))
    texts = [links.Param(name, key, "text", default=value) for name, key, value in zip(LINK_NAMES, KEYS, first)]
    return [*texts, links.Param("site", SITE, "choice", default=SITES[0], choices=SITES)]


def _inputs() -> tuple[Pair, str]:
    st.selectbox("Start from", list(PRESETS), key=PRESET, on_change=_load_preset)
    links.view(*_link_params())
    for key, value in zip(KEYS, PRESETS[st.session_state[PRESET]], strict=True):
        st.session_state.setdefault(key, value)
    sentences = (
        (KEYS.clean, "Clean sentence: the answer holds"),
        (KEYS.corrupted, "Corrupted sentence: one change, the same number of tokens"),
    )
    clean, corrupted = (
        col.text_input(label, key=key, max_chars=SENTENCE_CHARS, on_change=_edited, args=(key,))
        for col, (key, label) in zip(st.columns(2), sentences)
    )
    c3, c4, c5 = st.columns([1, 1, 2])
    answer = c3.text_input("Answer (one word)", key=KEYS.answer, max_chars=WORD_CHARS)
    foil = c4.text_input("Foil (one word)", key=KEYS.foil, max_chars=WORD_CHARS)
    site = c5.selectbox("Where to patch", SITES, key=SITE, format_func=SITE_NAMES.get)
    pair = Pair(
        clean_text(clean, "the clean sentence"),
        clean_text(corrupted, "the corrupted sentence"),
        clean_text(answer, "the answer"),
        clean_text(foil, "the foil"),
    )
    return pair, site


def _patched(model, pair: Pair, site: str):
    """The patching result, or None (with a hint) while only one sentence of the pair was edited
    and their token counts still differ."""
    try:
        r = patching(model.key, *pair, site, model.bundle)
    except TokenCountMismatch as e:
        edited = st.session_state.get(EDITED, set())
        if len(edited & {KEYS.clean, KEYS.corrupted}) != 1:
            raise
        other = "corrupted" if KEYS.clean in edited else "clean"
        n_clean, n_corrupted = e.counts
        st.info(
            f"Now edit the {other} sentence to match: patching needs the same number of tokens in both "
            f"(the clean sentence has {n_clean}, the corrupted one {n_corrupted}).",
            icon=":material/edit:",
        )
        return None
    except BertExplorerError:
        st.session_state[EDITED] = set()  # the counts matched: the next mismatch waits again
        raise
    st.session_state[EDITED] = set()
    return r


def _heatmap(r, pair: Pair, site: str) -> tuple[int, int]:
    """The effect heatmap with its picked cell (the strongest until one is clicked or chosen), and
    the picker; returns the picked (row, column)."""
    R, X = r.effect.shape
    pick_key, chart_key = f"pt_cell_{site}_{R}_{X}", f"pt_map_{site}_{R}_{X}"
    strongest = _strongest(r)
    if pick_key not in st.session_state:
        st.session_state[pick_key] = strongest
    row, col = divmod(int(st.session_state[pick_key]), X)
    where = "tokens" if site != "heads" else "heads"
    show_figure.show(
        patching_heatmap(
            r.effect,
            r.rows,
            r.columns,
            r.position if site != "heads" else None,
            (row, col),
            ranking=(r.patched, r.answer, r.foil),
        ),
        f"patching-{site}",
        key=chart_key,
        caption=f"Patching the {where} layer by layer; the strongest restore is {r.rows[strongest // X]}, "
        f"{r.columns[strongest % X]} ({r.effect.flat[strongest]:.2f}).",
        on_select=lambda: _pick_from_chart(chart_key, pick_key, R, X),
        selection_mode="points",
        notebook=partial(
            nb.patching, clean=pair.clean, corrupted=pair.corrupted, answer=pair.answer, foil=pair.foil, site=site
        ),
    )
    st.selectbox(
        "The patched run to show (or click a cell)",
        list(range(R * X)),
        key=pick_key,
        format_func=lambda i: (
            f"{r.rows[i // X]}, {r.columns[i % X]}: {r.effect.flat[i]:.2f} restored, "
            f"{r.answer if r.patched.flat[i] > 0 else r.foil} first ({r.patched.flat[i]:+.2f})"
        ),
    )
    return row, col


def render(model) -> None:
    st.markdown(
        "Run the model on a **clean** sentence and on a **corrupted** one that changes a single "
        "word. Then rerun the corrupted sentence again and again, each time putting in *one* "
        "activation copied from the clean run. Where the copy brings the clean answer back, that "
        "activation *carries* the information: this is an experiment, not a picture."
    )
    pair, site = _inputs()
    r = _patched(model, pair, site)
    if r is None:
        return
    st.markdown(
        f"Measured: logit(**{md_escape(r.answer)}**) − logit(**{md_escape(r.foil)}**) at the [MASK]: "
        f"**{r.clean:+.2f}** on the clean sentence, **{r.corrupted:+.2f}** on the corrupted one. "
        "Each cell: the share of that gap a patch there closes (1 all of it, 0 nothing)."
    )
    for warning in baseline_warnings(r):
        st.warning(warning, icon=":material/warning:")
    row, col = _heatmap(r, pair, site)
    st.markdown(patched_line(r, row, col))
    show_figure.show(
        mlm_topk_bar(r.top_tokens[row][col], r.top_probs[row, col], f"[MASK], {r.rows[row]} {r.columns[col]} patched"),
        f"patching-{site}-top",
        key="pt_top",
    )
    st.caption(
        "Read the heatmap bottom up: low layers restore the answer at the word that changed; "
        "where the colour moves to the [MASK] column, the information has been moved there. "
        "The last row is 1 at the [MASK] and 0 elsewhere by construction: only the [MASK]'s "
        "final vector reaches the word prediction."
    )
