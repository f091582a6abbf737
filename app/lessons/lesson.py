"""What a lesson is made of: steps (an idea, a real figure, a link to the full page) and questions
whose right answer is computed from the model on the lesson's input, so they stay right when the
model changes. No streamlit here: the lessons are tested on their own (tests/test_lessons.py)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Link:
    """The full page with the lesson's input filled in: `query` becomes the page's link."""

    page: str  # e.g. "pages/attention.py"
    label: str
    query: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    title: str
    text: str  # two or three sentences, markdown
    show: Callable  # show(bundle) -> a plotly Figure, a pandas DataFrame, or None
    link: Link | Callable | None = None  # or link(bundle) -> Link, for a head found on the model
    figure_name: str = "lesson"
    # What show and link are given: "model", the loaded model's bundle; "seq2seq", the encoder-decoder
    # run this session trained (app/seq2seq/session.py's dict), or None when there is none.
    uses: str = "model"
    none_note: str = ""  # said in place of the figure when show gives None
    # The key of the claim (app/lessons/claims.py) that says, worked out on the model, what the
    # figure shows the model doing; shown after `text`. `text` itself states nothing the model does.
    claim: str = ""


@dataclass
class Asked:
    """One question, worked out on the model: the choices, which is right, and why."""

    prompt: str
    choices: list[str]
    answer: int
    why: str
    figure: object = None  # a figure or table that shows the answer


@dataclass(frozen=True)
class Question:
    key: str
    ask: Callable  # ask(bundle) -> Asked


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    summary: str
    steps: tuple[Step, ...]
    questions: tuple[Question, ...]


def ask(prompt: str, choices: tuple[list[str], int], why: str, figure: object = None) -> Asked:
    """The Asked of `prompt` with `choices` as choices_with gives them: (the choices, the right one's index)."""
    options, answer = choices
    return Asked(prompt, options, answer, why, figure)


def choices_with(right: str, wrong: list[str], key: str, n: int = 4) -> tuple[list[str], int]:
    """`right` among up to n-1 distinct wrong answers, in an order fixed by `key` (the same for
    every student, different per question). Returns (choices, index of the right one)."""
    others = []
    for w in wrong:
        if w != right and w not in others:
            others.append(w)
    options = [right, *others[: n - 1]]
    random.Random(key).shuffle(options)
    return options, options.index(right)
