"""The model picker shown in the sidebar of every page."""

from __future__ import annotations

import functools
import logging

import streamlit as st

import bert
from bert.public import public_text

from . import state
from .formatting import card_summary, fmt_params, md_escape, md_safe
from .model_sources import FOLDER, current_summary, load_model, model_options, option_for, option_label, source_of
from .ui.errors import show_errors
from .ui.widgets import PATH_CHARS

log = logging.getLogger("bert_explorer")


@functools.cache
def app_icon():
    """A 64x64 favicon drawn in memory (a blue tile with a white grid of 'attention' cells)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle((0, 0, 63, 63), radius=12, fill=(31, 119, 180, 255))
    shades = [255, 160, 90, 200, 120, 255, 70, 180, 230]
    for n, a in enumerate(shades):
        x, y = 10 + 15 * (n % 3), 10 + 15 * (n // 3)
        d.rectangle((x, y, x + 12, y + 12), fill=(255, 255, 255, a))
    return img


def strip_front_matter(card: str) -> str:
    lines = (card or "").splitlines()
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                return "\n".join(lines[i + 1 :]).strip()
    return (card or "").strip()


def _on_choice() -> None:
    choice = st.session_state[state.W_MODEL_CHOICE]
    if choice != FOLDER:
        st.session_state[state.MODEL_SOURCE] = source_of(choice)


def _on_load_folder() -> None:
    path = (st.session_state.get(state.W_LOCAL_PATH) or "").strip()
    st.session_state[state.LOCAL_PATH] = path
    st.session_state["_folder_error"] = None
    if not path:
        st.session_state["_folder_error"] = "Type the name of a model folder first."
        return
    try:
        load_model(path)  # only what the server offers; one message for everything else
    except bert.BertExplorerError as e:
        st.session_state["_folder_error"] = public_text(str(e))
        return
    except Exception:  # noqa: BLE001 - a broken folder must not break the page
        log.exception("could not load the model folder %r", path)
        st.session_state["_folder_error"] = "That model folder could not be loaded. The details are in the server log."
        return
    st.session_state[state.MODEL_SOURCE] = path


def render() -> None:
    state.init()
    ss = st.session_state
    options = model_options()  # built-ins, the models folder's listed folders, the session's own, FOLDER
    want = option_for(ss[state.MODEL_SOURCE])
    # Follow MODEL_SOURCE when code changed it (e.g. a training page selected a new model);
    # otherwise leave the widget alone ("A local folder…" may be picked but not loaded yet).
    if ss.get(state.W_MODEL_CHOICE) not in options or ss.get("_picker_seen_source") != ss[state.MODEL_SOURCE]:
        ss[state.W_MODEL_CHOICE] = want if want in options else options[0]
    ss["_picker_seen_source"] = ss[state.MODEL_SOURCE]
    with st.sidebar:
        st.markdown("### Model")
        choice = st.selectbox(
            "Model",
            options,
            key=state.W_MODEL_CHOICE,
            format_func=option_label,
            on_change=_on_choice,
            label_visibility="collapsed",
        )
        if choice == FOLDER:
            if state.W_LOCAL_PATH not in ss:
                ss[state.W_LOCAL_PATH] = ss[state.LOCAL_PATH]
            st.text_input(
                "Model folder (ours or Hugging Face format)",
                key=state.W_LOCAL_PATH,
                max_chars=PATH_CHARS,
                placeholder="my-model",
                help="The name of a folder in the models folder of this server (the "
                "person running it puts models there), with config.json, "
                "vocab.txt and model.safetensors (or pytorch_model.bin). The folders already "
                "there are in the list above (looked at again every 30 s): type one added since.",
            )
            st.button("Load folder", on_click=_on_load_folder, width="stretch")
            if ss.get("_folder_error"):
                st.error(md_escape(ss["_folder_error"]), icon=":material/error:")
        with show_errors("the model"):
            b = current_summary()  # a built-in without loading it: see app/model_sources.py
            cfg = b.config
            total = b.counts["total"]
            st.markdown(f"**{md_escape(b.name)}**")
            st.caption(
                f"{fmt_params(total)} parameters ({total:,}) · {cfg.num_hidden_layers} layers · "
                f"hidden {cfg.hidden_size} · {cfg.num_attention_heads} heads · "
                f"vocabulary {cfg.vocab_size:,}"
            )
            card = md_safe(public_text(b.card))  # others' labels and names are in it: no link, no image
            summary = card_summary(card, fallback="")
            if summary:
                st.caption(summary)
            if b.is_classifier:
                st.caption("A fine-tuned classifier: labels " + ", ".join(md_escape(x) for x in b.labels))
            for note in b.notes:
                st.info(md_escape(note), icon=":material/info:")
            if card:
                with st.expander("Model card"):
                    st.markdown(strip_front_matter(card)[:6000])
