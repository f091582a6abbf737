"""One way to turn failures into friendly messages: never a traceback on screen.

    with show_errors("the attention maps"):
        ...   # anything that may raise

A `bert.BertExplorerError` (bad input, unreadable checkpoint, ...) is shown as it is: its
message was written for the user. Anything else is logged with its traceback for us and
shown as a short apology. Streamlit's own control-flow exceptions (st.rerun, st.stop,
st.switch_page) derive from BaseException and pass through untouched.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import streamlit as st

from bert import BertExplorerError

from .helpers import md_escape

log = logging.getLogger("bert_explorer")


@contextmanager
def show_errors(what: str = "this part of the page"):
    try:
        yield
    except BertExplorerError as e:
        st.error(md_escape(str(e) or "That input cannot be used."), icon=":material/error:")
    except MemoryError:
        log.exception("out of memory while computing %s", what)
        st.error(
            f"Not enough memory to compute {what}. Try a shorter input or a smaller model.", icon=":material/error:"
        )
    except Exception as e:  # noqa: BLE001 - the whole point is to catch what we did not foresee
        log.exception("unexpected error while computing %s", what)
        st.error(
            f"Something went wrong while computing {what} ({type(e).__name__}). "
            f"Try another input; the details are in the server log.",
            icon=":material/error:",
        )
