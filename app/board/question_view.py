"""Predict, then reveal, the Streamlit side: the teacher's "Ask the class" (worked out on the
loaded model, app/board/questions.py), each student's answer box, the projector's live chart of
the class's answers, and the reveal: the model's answer, the figure that explains it, and, for
each student alone, whether they were right.

The open question is drawn inside the class panel's fragment (app/board/class_panel.py, polled
every second); its reveal by the whole page (`revealed`), which the panel reruns when the
question's state changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import plotly.io as pio
import streamlit as st

from bert import BertExplorerError, InputError

from .. import state
from ..class_store.classroom import ANSWER_CHARS, is_right
from ..class_store.errors import BoardError
from ..class_store.service import classroom
from ..formatting import md_escape, table_csv
from ..model_sources import current_model
from ..run_session.dictionaries import FEATURE, shown_dictionary
from ..server.new_students import client_address
from ..students import real_name, student_key
from ..ui import show_figure
from . import charts as board_charts

KIND = "ask_kind"
WORD = "ask_word"
LESSON = "ask_lesson"
LAYER, HEAD, FROM = "ask_layer", "ask_head", "ask_from"
WRITING = "ask_writing"  # the word (1-based) a "writes" question asks about
GAP = "ask_gap"  # which [MASK] (1-based) a "mask", "left" or "heads" question asks about
PAIR = "ask_pair"  # the patching preset a "knows" question is worked out on
PARADIGM, PAIR_NUMBER = "ask_paradigm", "ask_pair_number"  # the minimal pair a "prefers" question scores
SEEN = "ask_seen"  # (question id, state) the page was drawn for
DISMISSED = "ask_dismissed"  # the revealed question a student put away
NOTE = "ask_note"
ANSWER_NOTE = "ask_answer_note"  # (question id, why the last answer was refused)
TYPED = "ask_typed"
FIRES = "ask_fires_words"  # the words a "fires" question offers
FIRES_CHARS = 6 * 41  # six words of at most questions.WORD_CHARS characters, and their commas


def _body(kind: str, lessons: Callable[[], Sequence]) -> dict:
    from . import questions  # the model's analyses (torch): imported when the teacher asks

    ss = st.session_state
    if kind == "writes":
        return _writes_body(questions)
    model = current_model()
    b, label = model.bundle, model.label
    text = ss.get(state.MLM_TEXT, state.DEFAULT_MLM_TEXT)
    gap = int(ss.get(GAP) or 1) if text.count("[MASK]") > 1 else 1
    if kind == "mask":
        return questions.mask_question(b, text, label, gap)
    if kind == "left":
        return questions.left_question(b, text, label, gap)
    if kind == "look":
        text = ss.get(state.TEXT_A, state.DEFAULT_TEXT_A)
        return questions.look_question(b, text, ss[LAYER] - 1, ss[HEAD] - 1, ss.get(FROM) or 0, label)
    if kind == "follows":
        return questions.follows_question(b, ss.get(state.TEXT_A, ""), ss.get(state.TEXT_B, ""), label)
    if kind == "pieces":
        return questions.pieces_question(b, ss.get(WORD, ""), label)
    if kind == "heads":
        return questions.heads_question(b, text, label, gap)
    if kind == "knows":
        from bert.analysis.patching import PRESETS

        return questions.knows_question(b, PRESETS[ss.get(PAIR) or next(iter(PRESETS))], label)
    if kind == "prefers":
        paradigm = ss.get(PARADIGM) or next(iter(questions.PARADIGMS))
        return questions.prefers_question(b, paradigm, int(ss.get(PAIR_NUMBER) or 1), label)
    if kind == "fires":
        dictionary = shown_dictionary(model)
        feature = int(ss.get(FEATURE) or 0)
        return questions.fires_question(b, dictionary, feature, ss.get(FIRES, ""), label)
    return questions.lesson_question(b, ss[LESSON], label, lessons())


def decoder_source(run: dict) -> str:
    """What the class's decoder writes from: the Decoder on top page's source, else the run's first held-out one."""
    from .. import trained_decoder as s2s

    return (st.session_state.get("s2s_text") or "").strip() or s2s.example_source(run)


def _writes_body(questions) -> dict:
    from .. import trained_decoder as s2s

    run = s2s.trained()
    if run is None:
        raise InputError(NO_DECODER)
    b = run["bundle"]
    return questions.writes_question(b, decoder_source(run), int(st.session_state.get(WRITING) or 3), b.name)


NO_DECODER = (
    "The decoder question needs an encoder-decoder trained in this session, and there is none yet: train "
    "one on the Decoder on top page (the defaults take about a minute), and the question is offered here."
)


def _ask(code: str, key: str, lessons: Callable[[], Sequence]) -> None:
    try:
        with st.spinner("Working out the model's answer…"):
            body = _body(st.session_state.get(KIND, "mask"), lessons)
        classroom().ask(code, key, body)
    except BertExplorerError as e:  # BoardError, InputError, ...
        st.session_state[NOTE] = str(e)


def ask_popover(code: str, key: str, lessons: Callable[[], Sequence] = tuple) -> None:
    """The teacher's "Ask the class" (in the sidebar's class section): a kind, worked out on the
    sentences and model on screen now; `lessons()` (app.lessons.LESSONS, from the entry, read when
    asked: torch only then) offer their questions too."""
    from . import questions  # the same lazy import as above: torch only once the teacher asks

    ss = st.session_state
    with st.popover("Ask the class", icon=":material/quiz:", width="stretch"):
        from .. import trained_decoder as s2s

        run = s2s.trained()
        kinds = [k for k in questions.KINDS if k != "writes" or run is not None]  # a decoder the class can compute on
        kind = st.selectbox("Question", kinds, key=KIND, format_func=questions.KINDS.get)
        if run is None:
            st.caption(NO_DECODER)
        if not _kind_settings(kind, questions, run, lessons):
            return
        st.button("Ask", key="ask_go", type="primary", on_click=_ask, args=(code, key, lessons))
        note = ss.pop(NOTE, None)
        if note:
            st.error(md_escape(note), icon=":material/error:")


def _kind_settings(kind: str, questions, run, lessons: Callable[[], Sequence]) -> bool:
    """The settings of one question kind, under its selectbox (False: the model cannot be read,
    the error is on screen)."""
    ss = st.session_state
    if kind in ("mask", "heads", "left"):
        text = ss.get(state.MLM_TEXT, state.DEFAULT_MLM_TEXT)
        st.caption(f"On the Masked LM sentence: {md_escape(text)}")
        if text.count("[MASK]") > 1:
            if int(ss.get(GAP) or 1) > text.count("[MASK]"):
                ss[GAP] = 1  # a sentence with fewer gaps than the one asked before
            st.number_input("About the [MASK] number", 1, text.count("[MASK]"), key=GAP, value=1)
    elif kind == "writes":
        st.caption(f"On your decoder {md_escape(run['bundle'].name)}, writing from: {md_escape(decoder_source(run))}")
        st.number_input("While writing word", 1, 48, key=WRITING, value=3)
    elif kind == "follows":
        st.caption("On the sidebar's sentences A and B.")
    elif kind == "knows":
        from bert.analysis.patching import PRESETS

        st.selectbox("On the Causes page's pair", list(PRESETS), key=PAIR)
        st.caption("Patching the [MASK]'s vector, layer by layer: the first layer restoring half the answer.")
    elif kind == "prefers":
        paradigm = st.selectbox("Minimal pairs of", list(questions.PARADIGMS), key=PARADIGM)
        pairs = questions.PARADIGMS[paradigm].pairs
        number = st.number_input("Pair", 1, len(pairs), key=PAIR_NUMBER, value=1)
        both = " / ".join(sorted(pairs[number - 1]))
        st.caption(f"The class sees both, in alphabetical order: {md_escape(both)}")
    elif kind == "fires":
        st.caption(
            f"About feature {int(ss.get(FEATURE) or 0)}, the one the Features page's card shows; each word is "
            "read alone."
        )
        st.text_input(
            "The words, separated by commas", key=FIRES, max_chars=FIRES_CHARS, placeholder=questions.FIRES_WORDS
        )
    elif kind == "pieces":
        st.text_input("The word", key=WORD, max_chars=questions.WORD_CHARS, placeholder="e.g. unhappiness")
    elif kind == "look":
        st.caption(f"On sentence A: {md_escape(ss.get(state.TEXT_A, state.DEFAULT_TEXT_A))}")
        try:
            bundle = current_model().bundle
            tokens = bundle.tokenizer.encode(ss.get(state.TEXT_A, state.DEFAULT_TEXT_A)).tokens[:128]
            L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
        except BertExplorerError as e:
            st.error(md_escape(str(e)))
            return
        c1, c2 = st.columns(2)
        c1.number_input("Layer", 1, L, key=LAYER, value=min(4, L))
        c2.number_input("Head", 1, H, key=HEAD, value=min(2, H))
        st.selectbox("From the token", range(len(tokens)), key=FROM, format_func=lambda i: f"{tokens[i]} ({i})")
    else:
        st.selectbox("Lesson question", list(questions.lesson_questions(lessons())), key=LESSON)
    return True


def _answer(code: str, qid: int) -> None:
    try:
        typed = st.session_state.get(f"{TYPED}_{qid}") or ""
        classroom().answer(code, qid, student_key(), typed, address=client_address(), **real_name())  # per address
    except BoardError as e:
        st.session_state[ANSWER_NOTE] = (qid, str(e))  # shown until the next answer (the panel redraws each second)
        return
    st.session_state.pop(ANSWER_NOTE, None)


def _reveal(code: str, key: str, qid: int) -> None:
    try:
        classroom().reveal(code, key, qid)
    except BoardError as e:
        st.session_state[NOTE] = str(e)


def _tally_chart(q: dict, model_answer: str | None = None) -> None:
    tally, n = classroom().tally(q["id"], q["version"])
    if n:
        fig = board_charts.answers_figure(tally, model_answer)
        show_figure.show(fig, "class-answers", key=f"ask_tally_{q['id']}_{model_answer is not None}")
    st.caption(f"{n} answer(s) so far." if model_answer is None else f"{n} student(s) answered.")


def live(code: str, q: dict | None, key: str | None) -> None:
    """The open question, in the class panel's fragment: the teacher sees the class's answers
    grow; a student answers. A question asked or revealed since the page was drawn reruns it."""
    ss = st.session_state
    now = None if q is None else (q["id"], q["state"])
    if now != ss.get(SEEN):
        st.rerun(scope="app")
    if q is None or q["state"] != "open":
        return
    body = classroom().question(q["id"])
    with st.container(border=True):
        st.markdown(f"**Question:** {md_escape(body['prompt'])}")
        note = ss.pop(NOTE, None)
        if note:
            st.error(md_escape(note), icon=":material/error:")
        if key:
            _tally_chart(q)
            st.button(
                "Reveal the model's answer",
                key="ask_reveal",
                type="primary",
                on_click=_reveal,
                args=(code, key, q["id"]),
            )
            return
        mine = classroom().my_answer(q["id"], student_key())
        note = ss.get(ANSWER_NOTE)
        if note and note[0] == q["id"]:
            st.error(md_escape(note[1]), icon=":material/error:")
        with st.form(f"ask_form_{q['id']}", border=False):
            if body["choices"]:
                st.radio("Your answer", body["choices"], key=f"{TYPED}_{q['id']}", horizontal=len(body["choices"]) <= 6)
            else:
                st.text_input("Your answer", key=f"{TYPED}_{q['id']}", max_chars=ANSWER_CHARS)
            st.form_submit_button("Answer", on_click=_answer, args=(code, q["id"]))
        if mine is not None:
            st.caption(f"Your answer: **{md_escape(mine)}**. You can change it until the teacher reveals the model's.")


def _dismiss(qid: int) -> None:
    st.session_state[DISMISSED] = qid


def answers_csv(code: str, key: str) -> bytes:
    """The class's answers today as the teacher's CSV (table_csv: no cell runs as a formula).
    Built when the teacher downloads it, never on a page run: it reads every answer of the day."""
    try:
        rows = classroom().answers_table(code, key)
    except BoardError:
        rows = []
    return table_csv(pd.DataFrame(rows))


def revealed(code: str, key: str | None) -> None:
    """The newest question once revealed, drawn by the whole page: the model's answer, why, its
    figure, the class's answers; a student's own answer and whether it was the model's."""
    ss = st.session_state
    try:
        q = classroom().class_poll(code)["question"]
    except BoardError:
        return
    ss[SEEN] = None if q is None else (q["id"], q["state"])
    if q is None or q["state"] != "revealed" or (not key and ss.get(DISMISSED) == q["id"]):
        return
    body = classroom().question(q["id"])
    with st.container(border=True):
        st.markdown(f"**Question:** {md_escape(body['prompt'])}")
        st.success(
            f"The model ({md_escape(body['model'])}) says: **{md_escape(body['answer'])}**. {md_escape(body['why'])}"
        )
        if not key:
            mine = classroom().my_answer(q["id"], student_key())
            if mine is None:
                st.caption("You did not answer this one.")
            elif is_right(body, mine):
                st.info(f"You answered **{md_escape(mine)}**: the model's answer too.", icon=":material/check_circle:")
            else:
                st.info(f"You answered **{md_escape(mine)}**: the model thought otherwise.", icon=":material/help:")
        c1, c2 = st.columns(2)
        with c1:
            if body.get("figure"):
                show_figure.show(pio.from_json(body["figure"]), "question-answer", key=f"ask_fig_{q['id']}")
        with c2:
            _tally_chart(q, body["answer"])
        if key:
            st.download_button(
                "The class's answers today (CSV)",
                data=lambda: answers_csv(code, key),
                file_name=f"class-{code}-answers.csv",
                mime="text/csv",
                on_click="ignore",
                key="ask_csv",
            )
            st.caption("Ask the next question from the sidebar's class section.")
        else:
            st.button("Put it away", key="ask_dismiss", on_click=_dismiss, args=(q["id"],))
