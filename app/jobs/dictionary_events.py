"""What a dictionary job reports (app/jobs/dictionary_job.py), as events of the one job life cycle:
`to_dict()` is their wire form (a Ray worker's poll, run.json), `event_from_dict` reads one back.
A job trains up to two dictionaries in turn, its phases: the loaded model's, then the control's
(the same recipe on a model of its shape with random weights), and when asked mini-scratch's
(the same recipe on the small model this project pre-trained from random weights, at the same
depth of its layers); each event names its phase."""

from __future__ import annotations

from typing import Any

from bert.train import events as ev

TRAINED, CONTROL, SCRATCH = "this model", "random-weights control", "mini-scratch"  # a job's phases, in order
PHASES = (TRAINED, CONTROL, SCRATCH)


class DictionaryStart(ev.Start):
    """A phase begins: its vectors are read, then it trains `steps` steps."""

    phase: str
    steps: int


class DictionaryStep(ev.Event, event="train"):
    """bert.analysis.dictionary.DictionaryStep of one phase."""

    phase: str
    step: int
    steps: int
    variance_explained: float
    l0: float
    dead: float
    seconds: float


class DictionaryQuality(ev.Event, event="quality"):
    """A phase's dictionary scored on held-out text (bert.analysis.dictionary_quality.Quality as a dict)."""

    phase: str
    quality: dict[str, Any]
    seconds: float


class DictionaryPurity(ev.Event, event="purity"):
    """A phase's dictionary's part-of-speech purity (bert.analysis.dictionary_purity.Purity.summary())."""

    phase: str
    purity: dict[str, Any]
    seconds: float


class DictionaryDone(ev.Done):
    """The last event of the training: the phases trained (stopped: Stop came before the end)."""

    phases: list[str]


EVENTS = {
    c.event: c for c in (DictionaryStart, DictionaryStep, DictionaryQuality, DictionaryPurity, DictionaryDone, ev.Error)
}


def event_from_dict(d: dict) -> ev.Event:
    """A dictionary job's event back from its `to_dict()`; ValueError for another event or one
    missing fields."""
    return ev.from_dict_of(EVENTS, d, "dictionary")
