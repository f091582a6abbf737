"""Lessons: a guided path through BERT, step by step on the real model, with questions."""

import streamlit as st

import app
from app.lessons import LESSONS
from app.lessons import view as lv
from app.model_sources import current_model
from app.ui import access, class_tools, layout, links
from app.ui.errors import show_errors

app.run_through_entry()  # before anything else: see app/__init__.py

ss = st.session_state
SCROLL = "lesson_scroll"  # set by Previous/Next: the next run scrolls to the new step's top
links.view(*lv.params())
ss.setdefault(lv.LESSON, LESSONS[0].key)
ss.setdefault(lv.STEP, 0)
lesson = lv.by_key(ss[lv.LESSON])
n = len(lesson.steps)
ss[lv.STEP] = min(max(int(ss[lv.STEP]), 0), n)  # n: the questions


def go_to(step: int) -> None:
    ss[lv.STEP] = step
    ss[SCROLL] = True  # the new step is shown from its top


def pick_lesson() -> None:
    ss[lv.STEP] = 0


def next_lesson() -> None:
    keys = [lesson.key for lesson in LESSONS]
    ss[lv.LESSON] = keys[(keys.index(ss[lv.LESSON]) + 1) % len(keys)]
    go_to(0)


def step_buttons(suffix: str = "") -> None:
    """Previous, the progress bar, Next (or Questions, then Next lesson)."""
    left, mid, right = st.columns([1, 2, 1], vertical_alignment="center")
    left.button(
        "Previous",
        icon=":material/arrow_back:",
        disabled=step == 0,
        on_click=go_to,
        args=(step - 1,),
        width="stretch",
        key=f"lesson_prev{suffix}",
    )
    mid.progress(min(step, n) / n, text=f"Step {min(step + 1, n)} of {n}" if step < n else "Questions")
    if step < n:
        right.button(
            "Next" if step < n - 1 else "Questions",
            icon=":material/arrow_forward:",
            on_click=go_to,
            args=(step + 1,),
            width="stretch",
            key=f"lesson_next{suffix}",
        )
    else:
        right.button(
            "Next lesson",
            icon=":material/skip_next:",
            on_click=next_lesson,
            width="stretch",
            key=f"lesson_next{suffix}",
        )


presenter = bool(ss.get(lv.PRESENTER))
if presenter:  # one step a screen: no title, the step beside its figure
    st.markdown(class_tools.PROJECTOR_CSS, unsafe_allow_html=True)
else:
    st.title("Lessons")
    st.markdown(
        "Seven short lessons through BERT, from text to tokens to what its heads learned, and on to decoders. "
        "Every figure is the "
        "real model on a prepared input, and every question's answer is worked out on that model. Each step "
        "links to the full page with the same input, to go further."
    )
c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
c1.selectbox(
    "Lesson",
    [lesson.key for lesson in LESSONS],
    key=lv.LESSON,
    format_func=lambda k: lv.by_key(k).title,
    on_change=pick_lesson,
)
c2.toggle("Presenter view", key=lv.PRESENTER, help="One step per screen in large type, for a class.")
if not presenter:
    st.caption(lesson.summary)
    access.screen_reader_heading(f"Lesson: {lesson.title}")  # h1, this h2, then the steps' h3
step = ss[lv.STEP]
if ss.pop(SCROLL, False):
    layout.scroll_here(f"{lesson.key}-{step}")  # Previous/Next: the new step from its top, not the old scroll
step_buttons()  # above the step: Next in view on the first screen

with show_errors("this lesson"):
    model = current_model()
    if step < n:
        lv.show_step(model, lesson, step, beside=presenter)
    else:
        st.subheader("Check yourself")
        for i, q in enumerate(lesson.questions, 1):
            lv.show_question(model, lesson, i, q.key)

step_buttons("_end")  # again below a long step
if not presenter:
    lv.sidebar_progress()
