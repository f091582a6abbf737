"""One way to turn failures into friendly messages: never a traceback on screen.

    with show_errors("the attention maps"):
        ...   # anything that may raise

A `bert.BertExplorerError` (bad input, unreadable checkpoint, ...) is shown as it is (its
message was written for the user), without the server's paths. Anything else is logged with
its traceback for us and shown as a short apology. Streamlit's own control-flow exceptions (st.rerun, st.stop,
st.switch_page) derive from BaseException and pass through untouched.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import streamlit as st

from bert import BertExplorerError
from bert.public import public_text

from ..formatting import md_escape

log = logging.getLogger("bert_explorer")


def _say(message: str) -> None:
    """Every message below, through one filter: no server path (public_text), no markup (md_escape)."""
    st.error(md_escape(public_text(message)), icon=":material/error:")


@contextmanager
def show_errors(what: str = "this part of the page"):
    try:
        yield
    except BertExplorerError as e:
        _say(str(e) or "That input cannot be used.")
    except MemoryError:
        log.exception("out of memory while computing %s", what)
        _say(f"Not enough memory to compute {what}. Try a shorter input or a smaller model.")
    except Exception as e:  # noqa: BLE001 - the whole point is to catch what we did not foresee
        log.exception("unexpected error while computing %s", what)
        _say(
            f"Something went wrong while computing {what} ({type(e).__name__}). "
            f"Try another input; the details are in the server log."
        )
