"""Saved runs' models in memory: one copy per run for the whole server, shared read-only by every
session that reopened the run or trained it, under one server-wide cap; loaded again from the
run's folder when used after it was let go.

A copy per session would multiply a run's model by the sessions that reopened it. A session
holds a `SavedBundle` instead: its own name, card and notes, and a handle on the run (`shared`
for a reopened run, `adopt` for a job that just finished and saved it); its `model` is looked up
here at each use. Like the built-in models
in st.cache_resource, a shared model is never changed: fine-tuning from it copies its weights
(bert.train.finetune), the pages only run it.

What counts against BERT_EXPLORER_OPEN_RUNS_MB is every such model in memory: those kept here
(the most recently used; the least recently used are let go first when room is needed) and any
that a page or a job is using right now (tracked by a weak reference until it lets go). When the
ones in use leave no room, a load is refused with a message; loading is one at a time, so the
cap is checked before each load. No streamlit here.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import bert
from bert import settings

from .budget import LimitError


def max_open_mb() -> int:
    return settings.whole("BERT_EXPLORER_OPEN_RUNS_MB")


def model_bytes(model) -> int:
    """Bytes of a model's parameters and buffers."""
    tensors = list(model.parameters()) + list(model.buffers())
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass
class _Opened:
    model: weakref.ref  # alive while this module or any session holds the model
    parts: bert.Bundle  # the rest of the bundle (tokenizer, card, source), model left out
    nbytes: int


_lock = threading.Lock()  # one reopen at a time: the cap is checked before each load
_opened: dict[str, _Opened] = {}  # every reopened model still in memory, by run
_kept: OrderedDict[str, object] = OrderedDict()  # the models kept for the next session (LRU, oldest first)


def in_memory() -> dict[str, int]:
    """Reopened models in memory now: how many, their bytes, and how many of them only this module
    holds (the status page)."""
    with _lock:
        _prune()
        return {"runs": len(_opened), "bytes": _held_bytes(), "kept": len(_kept)}


def _prune() -> None:
    """Drop the entries whose model is gone (under _lock: only this module changes _opened)."""
    for key in [k for k, e in _opened.items() if e.model() is None]:
        del _opened[key]


def _held_bytes() -> int:
    return sum(e.nbytes for e in _opened.values() if e.model() is not None)


class SavedBundle(bert.Bundle):
    """A session's Bundle of a saved run: its name, card and notes are its own; its `model` is the
    server's one copy of the run's model, looked up at each use and loaded again from the run's
    folder when it was let go (`model_of`; LimitError or DataError, with a message, when it
    cannot be). Between two runs of a page a session holds no model at all. Not for
    dataclasses.replace (it is built from its parts)."""

    def __init__(self, parts: bert.Bundle, key: str, load: Callable[[], bert.Bundle], estimate: int):
        for f in fields(bert.Bundle):
            if f.name != "model":
                setattr(self, f.name, getattr(parts, f.name))
        self.notes = list(parts.notes)
        self._run = (key, load, estimate)
        self._kind = type(parts)  # what `loaded` gives back: a Bundle, or an encoder-decoder's

    @property
    def model(self):
        return model_of(*self._run)

    def loaded(self) -> bert.Bundle:
        """A plain Bundle (of the saved run's own class) holding the model, for one run of a page
        (the model cannot be let go half way through it); LimitError / DataError, with a message,
        when it cannot be loaded."""
        parts = {f.name: getattr(self, f.name) for f in fields(bert.Bundle) if f.name != "model"}
        return self._kind(model=self.model, **parts)

    def __repr__(self) -> str:
        return f"SavedBundle({self.name!r}, run {self._run[0]!r})"


def _room(estimate: int, cap: float) -> None:
    """Let the least recently used kept models go until `estimate` more bytes fit (or none is
    left to let go). Under _lock."""
    while _kept and _held_bytes() + estimate > cap:
        _kept.popitem(last=False)  # freed unless a page or a job is using it right now
    _prune()


def _add(key: str, bundle: bert.Bundle) -> _Opened:
    entry = _Opened(
        model=weakref.ref(bundle.model), parts=replace(bundle, model=None), nbytes=model_bytes(bundle.model)
    )
    _opened[key] = entry
    _kept[key] = bundle.model
    return entry


def _loaded(key: str, load: Callable[[], bert.Bundle], estimate: int) -> tuple[_Opened, object]:
    """(entry, model) of run `key`, loading it if it is not in memory (under _lock)."""
    entry = _opened.get(key)
    model = entry.model() if entry is not None else None
    if model is not None:
        _kept[key] = model
        _kept.move_to_end(key)
        return entry, model
    cap = max_open_mb() * 2**20
    _room(estimate, cap)
    held = _held_bytes()
    if held + estimate > cap:
        raise LimitError(
            f"This server already holds {held / 2**20:,.0f} MB of saved runs' models that classmates "
            f"are using (at most {cap / 2**20:,.0f} MB), and this run needs about "
            f"{estimate / 2**20:,.0f} MB more. Try again in a few minutes: the run stays saved."
        )
    bundle = load()
    return _add(key, bundle), bundle.model


def model_of(key: str, load: Callable[[], bert.Bundle], estimate: int):
    """The model of run `key`: the one in memory, else `load()`'s (estimated at `estimate`
    bytes) if the server's cap leaves room once the models nobody uses are let go; LimitError
    otherwise."""
    with _lock:
        return _loaded(key, load, estimate)[1]


def shared(key: str, load: Callable[[], bert.Bundle], estimate: int) -> SavedBundle:
    """A Bundle of its own, for one session, of run `key` (its model loaded now if it is not in
    memory: LimitError when the cap leaves no room)."""
    with _lock:
        entry, model = _loaded(key, load, estimate)
        return SavedBundle(replace(entry.parts, model=model), key, load, estimate)


def adopt(key: str, bundle: bert.Bundle, load: Callable[[], bert.Bundle]) -> SavedBundle:
    """A just-finished job's `bundle`, saved as run `key`, handed to the server's copies: its
    session gets a SavedBundle, so the model is let go like a reopened one (and loaded again by
    `load` when used after that). Never refused: the model is in memory already."""
    with _lock:
        estimate = model_bytes(bundle.model)
        _room(estimate, max_open_mb() * 2**20)
        entry = _add(key, bundle)
        return SavedBundle(bundle, key, load, entry.nbytes)


def forget_all() -> None:
    """Let go of every kept model (tests; a model a session holds stays with it)."""
    with _lock:
        _kept.clear()
