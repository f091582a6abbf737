"""The encoder-decoder this session trained on the Decoder on top page, as the lessons and the
class questions read it: they compute only on a run this session trained. The page keeps the
finished run under RESULT (app/seq2seq/session.py collects it); nothing here starts or follows a job."""

from __future__ import annotations

import streamlit as st

from bert.seq2seq.tasks import SAMPLE_SOURCE
from bert.train.seq2seq import held_out_source

RESULT = "s2s_result"  # dict | None: the finished run (bundle, metrics, args, status, error, stop_reason)


def trained() -> dict | None:
    """This session's finished encoder-decoder run (RESULT, with its model), or None: what the
    lessons and the class questions decode with, since the class can compute only on a run that
    this session trained."""
    res = st.session_state.get(RESULT)
    return res if res and res.get("bundle") is not None else None


def example_source(res: dict) -> str:
    """The run's first held-out source (what it was scored on last), the text to decode first."""
    return held_out_source(res["metrics"]) or SAMPLE_SOURCE


def run_key(res: dict) -> str:
    """A cache key for this run's figures (a run built by hand, without one, gets its object's id)."""
    return f"s2s:{res.get('run') or id(res['bundle'])}"
