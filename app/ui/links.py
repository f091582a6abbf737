"""Links that reopen a view: each page keeps what it shows in the URL's query (st.query_params).

A teacher copies the address (or the sidebar's "Link for students") and every student who opens
it sees the same view: the same built-in model, sentences, layer, head, view. Only what a page
declares goes into a link, and never uploads, session models or folder names: a link may be
pasted anywhere.

A page declares its parameters and calls `apply` before its widgets are drawn (so a link's
values become the widgets' values) and `publish` after (so the address always matches what is on
screen). What was last applied or published is remembered, so a value in the address is applied
once: afterwards the widgets rule, and the address follows them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from ..formatting import md_escape

LINK_TEXT_CHARS = 300  # a sentence longer than this is cut in the link (the link says so)
_SEEN = "_link_seen"  # {param name: the value last applied or published}
_NOTES = "_link_notes"  # what the last publish had to leave out or cut
DECLARED = "_link_params"  # session key: the parameters the page declared in this run
_ARRIVING = "_link_arriving"  # {param name: value} a follower arrives with (`arrive_with`), until published
STREAMLIT_PARAMS = {"embed", "embed_options"}  # Streamlit's own (an app embedded in a page keeps them)
_INT = re.compile(r"-?[0-9]{1,4}")  # a link's number: ASCII digits, short


@dataclass(frozen=True)
class Param:
    """One value of a view: `name` in the address, `key` in st.session_state.

    kind: "text" (cut to LINK_TEXT_CHARS), "int" (from lo to hi), "bool", or "choice" (one of
    `choices`). `default`: left out of the address when the value equals it, to keep links short.
    """

    name: str
    key: str
    kind: str = "text"
    default: object = None
    choices: Sequence | None = None
    lo: int = 0
    hi: int = 0
    label: str = ""  # for notes ("Sentence A was cut …")
    codes: tuple = ()  # for a choice: short codes for the address, one per choice, in order

    def parse(self, raw: str):
        """The typed value of `raw`, or None when it is not a valid value of this parameter."""
        if self.kind == "int":
            if not _INT.fullmatch(raw.strip()):
                return None  # "--1", "²", "١", 5,000 nines: int() refuses some, accepts others
            n = int(raw)
            return n if self.lo <= n <= self.hi else None
        if self.kind == "bool":
            return {"1": True, "0": False}.get(raw.strip())
        if self.kind == "choice":
            if self.codes:
                raw = dict(zip(self.codes, self.choices or (), strict=True)).get(raw, "")
            return raw if raw in (self.choices or ()) else None
        return raw[:LINK_TEXT_CHARS]

    def show(self, value) -> str:
        if self.kind == "bool":
            return "1" if value else "0"
        if self.kind == "choice" and self.codes:
            return dict(zip(self.choices or (), self.codes, strict=True)).get(value, str(value))
        return str(value)


def declared() -> list:
    """The parameters the page declared in this run (with `use` or `view`)."""
    return st.session_state.setdefault(DECLARED, [])


def use(*params: Param) -> None:
    """Declare what this page's view is made of; streamlit_app.py publishes it after the page ran."""
    have = declared()
    have.extend(p for p in params if p not in have)


def view(*params: Param) -> None:
    """A page's own part of the link: apply the address's values (a note for any that does not
    fit) and declare them. Call it before the widgets these parameters belong to."""
    for note in apply(params):
        st.info(note, icon=":material/link:")
    use(*params)


def start_run() -> None:
    st.session_state[DECLARED] = []


def arrive_with(values: dict[str, str]) -> None:
    """The next run applies `values` (a whole view, defaults included) before the address: a
    follower moved to the teacher's view (app/board/class_panel.py) with the teacher's own address,
    so this run's publish leaves that address as it is."""
    st.session_state[_ARRIVING] = dict(values)


def apply(params: Sequence[Param]) -> list[str]:
    """Put the address's values (or those `arrive_with` gave) into session state, before the
    widgets are drawn. Returns notes for values that are not valid here (they are ignored)."""
    ss = st.session_state
    seen = ss.setdefault(_SEEN, {})
    arriving = ss.get(_ARRIVING) or {}
    notes = []
    for p in params:
        raw = arriving.get(p.name, st.query_params.get(p.name))
        if raw is None or seen.get(p.name) == raw:
            continue
        seen[p.name] = raw
        value = p.parse(raw)
        if value is None:
            what = f"{p.label or p.name} ({md_escape(raw[:40])})"
            notes.append(f"The link's {what} does not fit here, so it was left out.")
            continue
        ss[p.key] = value
    return notes


def publish(params: Sequence[Param] | None = None) -> None:
    """Write the current values into the address (defaults left out); a parameter the page did not
    declare leaves the address. Default: what was declared with `use` in this run."""
    ss = st.session_state
    ss.pop(_ARRIVING, None)
    params = list(declared() if params is None else params)
    for name in list(st.query_params.keys()):
        if name not in {p.name for p in params} and name not in STREAMLIT_PARAMS:
            del st.query_params[name]
    seen = ss.setdefault(_SEEN, {})
    notes = ss.setdefault(_NOTES, {})
    for p in params:
        value = ss.get(p.key)
        notes.pop(p.name, None)
        private = p.kind == "choice" and value not in (p.choices or ())  # e.g. a session's model
        if value is None or private or value == p.default or (p.kind == "text" and not str(value).strip()):
            if p.name in st.query_params:
                del st.query_params[p.name]
            seen.pop(p.name, None)
            continue
        shown = p.show(value)
        if p.kind == "text" and len(shown) > LINK_TEXT_CHARS:
            shown = shown[:LINK_TEXT_CHARS]
            notes[p.name] = f"{p.label or p.name} is cut to its first {LINK_TEXT_CHARS} characters in the link."
        if st.query_params.get(p.name) != shown:
            st.query_params[p.name] = shown
        seen[p.name] = shown


def view_values() -> dict[str, str]:
    """This view as a follower applies it (app/board/class_panel.py): every declared value as a
    link writes it, defaults and empty texts included (a follower's own values are replaced),
    never a private one (a session's model) nor projector mode (the teacher's set-up)."""
    ss = st.session_state
    out = {}
    for p in declared():
        value = ss.get(p.key)
        if value is None or p.name == PROJECTOR_PARAM.name or (p.kind == "choice" and value not in (p.choices or ())):
            continue
        out[p.name] = p.show(value)[:LINK_TEXT_CHARS] if p.kind == "text" else p.show(value)
    return out


def address_values() -> dict[str, str]:
    """The address's query as this run published it, as a follower's address should read: never
    projector mode (the teacher's set-up) nor Streamlit's own parameters."""
    skip = STREAMLIT_PARAMS | {PROJECTOR_PARAM.name}
    return {k: st.query_params.get(k) for k in st.query_params.keys() if k not in skip}


def notes() -> list[str]:
    """What the link leaves out or cuts, for the "Link for students" box."""
    return list(st.session_state.get(_NOTES, {}).values())


def current_url() -> str:
    """The address of this view as the browser sees it, with the query as published so far."""
    try:
        base = st.context.url or ""
    except Exception:  # noqa: BLE001 - no browser (tests, scripts): a relative link
        base = ""
    parts = urlsplit(base)
    query = urlencode({k: st.query_params.get(k) for k in st.query_params.keys()})
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", query, ""))


# --- what every page shares -------------------------------------------------------------------------


def model_param() -> Param:
    """The built-in model (session models and folders are never put in a link)."""
    from bert.checkpoint.builtins import available_builtins

    from .. import state

    return Param(
        "model",
        state.MODEL_SOURCE,
        "choice",
        default=state.DEFAULT_MODEL,
        choices=tuple(available_builtins()),
        label="model",
    )


def _shared():
    from .. import state

    a = Param("a", state.TEXT_A, default=state.DEFAULT_TEXT_A, label="Sentence A")
    b = Param("b", state.TEXT_B, default=state.DEFAULT_TEXT_B, label="Sentence B")
    mask = Param("mask", state.MLM_TEXT, default=state.DEFAULT_MLM_TEXT, label="The sentence with [MASK]")
    projector = Param("projector", PROJECTOR, "bool", default=False, label="projector mode")
    return a, b, mask, projector


PROJECTOR = "projector"  # session key of the sidebar's projector toggle
TEXT_A, TEXT_B, MLM_TEXT, PROJECTOR_PARAM = _shared()


def arrive() -> list[str]:
    """Top of every run (streamlit_app.py): apply what the address holds that every page shares.
    Returns notes for the page (a model this server does not have, a value that does not fit)."""
    from .. import state

    start_run()
    model = model_param()
    raw = (st.session_state.get(_ARRIVING) or {}).get(model.name, st.query_params.get(model.name))
    notes = apply([TEXT_A, TEXT_B, MLM_TEXT, PROJECTOR_PARAM])
    if raw is not None and apply([model]):
        notes.append(
            f"The link names a model this server does not have ({md_escape(raw[:40])}): "
            f"showing {state.DEFAULT_MODEL} instead."
        )
        st.session_state[state.MODEL_SOURCE] = state.DEFAULT_MODEL
    use(model, PROJECTOR_PARAM)
    return notes
