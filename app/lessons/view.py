"""The Streamlit side of the lessons: one step at a time, the questions with immediate feedback,
progress kept in the session (and shown in the sidebar), and a presenter view for a teacher."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ..analysis_cache import budget_cached
from ..formatting import md_escape
from ..ui import links, show_figure
from . import LESSONS, claims
from .lesson import Asked, Lesson

PROGRESS = "lesson_progress"  # {lesson key: {"seen": set of step indexes, "right": {question key: bool}}}
LESSON = "lesson_key"  # the lesson on screen
STEP = "lesson_step"  # its step (0-based)
PRESENTER = "lesson_presenter"  # presenter view on


def progress() -> dict:
    return st.session_state.setdefault(PROGRESS, {})


def lesson_progress(key: str) -> dict:
    return progress().setdefault(key, {"seen": set(), "right": {}})


def by_key(key: str) -> Lesson:
    return next((lesson for lesson in LESSONS if lesson.key == key), LESSONS[0])


@budget_cached(spinner="Running the model for this step…")
def step_output(model_key: str, lesson_key: str, step: int, _bundle):
    """(What a step shows on this model, its link, its claim's sentence worked out on the model or
    ""), cached per model; `_bundle` is what the step uses: a bundle, or a seq2seq run's dict keyed
    by its run."""
    s = by_key(lesson_key).steps[step]
    link = s.link(_bundle) if callable(s.link) else s.link
    said = claims.say(s.claim, _bundle).text if s.claim and _bundle is not None else ""
    return s.show(_bundle), link, said


def step_text(text: str, said: str, figure) -> str:
    """A step's words on screen (markdown): its text, then its claim's sentence, colour words from the
    scale `figure` is drawn with (the projector's in projector mode)."""
    words = show_figure.colour_words(figure)
    fill = words.fill if words is not None else str
    return f"{fill(text)} {md_escape(fill(said))}".strip()  # the claim quotes the model's words: escaped


@budget_cached(spinner="Working out the question on this model…")
def asked(model_key: str, lesson_key: str, question: str, _bundle) -> Asked:
    q = next(q for q in by_key(lesson_key).questions if q.key == question)
    return q.ask(_bundle)


PRESENTER_HEIGHT = 330  # px of a step's figure or table in presenter view: a step fits 1280x720


def show_output(out, name: str, key: str, height: int | None = None) -> None:
    """A step's figure or table (`height`: at most this tall, in px)."""
    if isinstance(out, go.Figure):
        if height is not None and (out.layout.height or 450) > height:
            out = go.Figure(out).update_layout(height=height)  # a copy: the cached figure is shared
        show_figure.show(out, name, key=key)
    elif isinstance(out, pd.DataFrame):
        st.dataframe(out, hide_index=True, width="stretch", **({"height": height} if height else {}))


def _output(model, lesson: Lesson, i: int):
    """(what step i shows, its link, its claim's sentence) on what the step uses: the loaded model, or the
    encoder-decoder this session trained (none: no figure, the step's own link)."""
    s = lesson.steps[i]
    if s.uses != "seq2seq":
        return step_output(model.key, lesson.key, i, model.bundle)
    from .. import trained_decoder as s2s

    run = s2s.trained()
    if run is None:
        return None, s.link(None) if callable(s.link) else s.link, ""
    return step_output(s2s.run_key(run), lesson.key, i, run)


def show_step(model, lesson: Lesson, i: int, beside: bool = False) -> None:
    """Step i: its title and text, then what it shows (`beside`: the text left of it, so that
    a step fits one projector screen)."""
    s = lesson.steps[i]
    words, shown = st.columns([2, 3]) if beside else (st.container(), st.container())
    words.subheader(f"{i + 1}. {s.title}")
    out, link, said = _output(model, lesson, i)
    words.markdown(step_text(s.text, said, out))
    with shown:
        show_output(out, s.figure_name, key=f"lesson_fig_{lesson.key}_{i}", height=PRESENTER_HEIGHT if beside else None)
    if out is None and s.none_note:
        words.info(s.none_note, icon=":material/info:")
    if link is not None:
        query = dict(link.query)
        if model.key.startswith("builtin:"):
            query.setdefault("model", model.key.split(":", 1)[1])
        words.page_link(link.page, label=link.label, icon=":material/open_in_new:", query_params=query)
    lesson_progress(lesson.key)["seen"].add(i)


def _check(lesson_key: str, question: str, answer: int) -> None:
    pick = st.session_state.get(f"lq_{lesson_key}_{question}")
    if pick is not None:
        lesson_progress(lesson_key)["right"][question] = pick == answer


def show_question(model, lesson: Lesson, n: int, question: str) -> None:
    a = asked(model.key, lesson.key, question, model.bundle)
    key = f"lq_{lesson.key}_{question}"
    st.markdown(f"**Question {n}.** {md_escape(a.prompt)}")
    st.radio(
        "Your answer",
        list(range(len(a.choices))),
        format_func=lambda j: a.choices[j],
        index=None,
        key=key,
        on_change=_check,
        args=(lesson.key, question, a.answer),
        label_visibility="collapsed",
    )
    got = lesson_progress(lesson.key)["right"].get(question)
    if got is None:
        return
    if got:
        st.success(f"Right. {md_escape(a.why)}", icon=":material/check_circle:")
    else:
        st.error(
            f"Not quite: the answer is “{md_escape(a.choices[a.answer])}”. {md_escape(a.why)}", icon=":material/cancel:"
        )
    show_output(a.figure, f"lesson-{lesson.key}-{question}", key=f"lq_fig_{lesson.key}_{question}")


def sidebar_progress() -> None:
    """Lessons started and questions right, in the sidebar."""
    p = progress()
    total_q = sum(len(lesson.questions) for lesson in LESSONS)
    right = sum(sum(1 for ok in v["right"].values() if ok) for v in p.values())
    started = sum(1 for v in p.values() if v["seen"])
    with st.sidebar:
        st.markdown("### Your progress")
        st.caption(f"{started} of {len(LESSONS)} lessons started · {right} of {total_q} questions right")
        for lesson in LESSONS:
            v = p.get(lesson.key, {"seen": set(), "right": {}})
            mark = (
                "✓"
                if len(v["seen"]) == len(lesson.steps) and all(v["right"].get(q.key) for q in lesson.questions)
                else ""
            )
            st.caption(f"{lesson.title}: {len(v['seen'])}/{len(lesson.steps)} steps {mark}")


def params() -> list[links.Param]:
    keys = tuple(lesson.key for lesson in LESSONS)
    return [
        links.Param("lesson", LESSON, "choice", default=LESSONS[0].key, choices=keys),
        links.Param("step", STEP, "int", default=0, lo=0, hi=20),
        links.Param("present", PRESENTER, "bool", default=False),
    ]
