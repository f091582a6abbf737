"""Sentence splitting with regexes and abbreviation lists (no model, no downloads)."""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

# Abbreviations after which a period never ends a sentence. Titles before a name count only when
# capitalised ("Dr. Who" but "the main st. was"), so they are matched case-sensitively.
_TITLES = set(
    (
        "Mr Mrs Ms Messrs Mme Mlle Dr Prof Rev Fr Hon St Sr Gen Col Capt Cpt Lt Sgt Cmdr Adm Maj Brig Gov Sen "
        "Rep Pres Supt Det Insp Mt Ft Sta Ste Msgr Atty Cllr Rt Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov "
        "Dec Ave Blvd Rd Univ Dept Assn Ald"
    ).split()
)
# Lower-case Latin-style abbreviations followed by more of the same sentence.
_NEVER_END = {"e.g", "i.e", "cf", "vs", "viz", "approx", "ca", "esp", "al", "c.f", "incl", "resp"}
# Abbreviations that precede a number: "No. 5", "p. 14", "Vol. 2", "Fig. 3".
_BEFORE_NUMBER = set(("no nos p pp vol vols fig figs ch sec art eq eqs op nr para pt ed ref tab").split())
# Abbreviations that often end a sentence too: a boundary only if a typical sentence opener follows.
_ABBREV_MAYBE_END = set(
    ("etc inc ltd co corp jr plc llc bros dept a.m p.m u.s u.k u.n e.u d.c ph.d b.a m.a b.sc m.sc").split()
)
# Words that typically open a sentence: after an acronym or initial, these signal a new sentence.
_SENTENCE_OPENERS = set(
    (
        "a an the he she it they we i you this that these those there his her its their our my but and or so "
        "yet in on at for after before when while if as however although since then now today yesterday "
        "meanwhile what why how who where some many most all no not one both each such also during by with "
        "from under last next other another mr mrs ms dr"
    ).split()
)

# A candidate boundary: terminal punctuation, then closing quotes/brackets, then whitespace.
_CANDIDATE = re.compile(r"""(\.{2,}|…|[.!?]+)(["'”’»)\]]*)(\s+)""")
_ACRONYM = re.compile(r"^(?:[A-Za-z]\.){2,}$|^(?:[A-Za-z]\.)+[A-Za-z]$")  # U.S. / e.g. / a.m / Ph.D
_INITIAL = re.compile(r"^[A-Z]$")


def _prev_word(text: str, end: int) -> str:
    """The whitespace-delimited word that ends at ``end`` (without leading brackets/quotes)."""
    start = text.rfind(" ", 0, end) + 1
    start = max(start, text.rfind("\n", 0, end) + 1, text.rfind("\t", 0, end) + 1)
    return text[start:end].lstrip("\"'“‘([{«")


def _next_word(text: str, start: int) -> str:
    m = re.match(r"\S+", text[start:])
    return m.group(0) if m else ""


def _is_boundary(text: str, m: re.Match) -> bool:
    punct, closers = m.group(1), m.group(2)
    nxt = _next_word(text, m.end())
    if not nxt:
        return True
    first = nxt.lstrip("\"'“‘([{«")[:1] or nxt[:1]
    opener_quote = nxt[:1] in "\"'“‘([{«"
    if first.islower():
        return False  # "Wait... what?" / "e.g. apples" / "approx. five": the sentence goes on
    if "!" in punct or "?" in punct:
        return True
    if punct in ("..", "...", "…") or len(punct) > 1:
        return True  # an ellipsis followed by a capital (or digit/quote) starts a new sentence
    if closers:
        return True  # 'He said "no." Then' : the period is inside the quote and ends the sentence
    word = _prev_word(text, m.start(1))  # e.g. "Mr", "U.S", "J", "3", "Washington"
    low = word.lower()
    nxt_low = re.sub(r"[^\w]", "", nxt.lower())
    if word in _TITLES or low in _NEVER_END:
        return False
    if low in _BEFORE_NUMBER and nxt[:1].isdigit():
        return False
    if low in _ABBREV_MAYBE_END or _ACRONYM.match(word + "."):
        return nxt_low in _SENTENCE_OPENERS or opener_quote
    if _INITIAL.match(word):
        return nxt_low in _SENTENCE_OPENERS and not _INITIAL.match(nxt.rstrip("."))
    return True


def _split_paragraph(par: str) -> list[str]:
    out, start = [], 0
    for m in _CANDIDATE.finditer(par):
        if _is_boundary(par, m):
            sent = par[start : m.start(3)].strip()
            if sent:
                out.append(sent)
            start = m.end()
    tail = par[start:].strip()
    if tail:
        out.append(tail)
    return out


_TERMINAL_END = re.compile(r"""[.!?…:;]["'”’)\]]*$""")


def _paragraphs(text: str) -> list[str]:
    """Blank lines always separate paragraphs. A single newline joins the two lines (hard-wrapped
    text) unless the first line ends without punctuation and the next starts with a capital
    (a heading or list item), in which case it is a break too."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    pars = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = [ln.strip() for ln in block.split("\n") if ln.strip()]
        cur = ""
        for ln in lines:
            if not cur:
                cur = ln
                continue
            soft = (
                _TERMINAL_END.search(cur)
                or cur.endswith((",", "-", "—", "–"))
                or ln[:1].islower()
                or not ln[:1].isalpha()
                and ln[:1] not in "\"'“‘("
            )
            if soft:
                cur = cur[:-1] if cur.endswith("-") and ln[:1].islower() else cur + " "
                cur += ln
            else:
                pars.append(cur)
                cur = ln
        if cur:
            pars.append(cur)
    return pars


def split_sentences(text: str) -> list[str]:
    """Split text into sentences with regexes and an abbreviation list (no model, no downloads).

    Handles titles ("Mr. Smith"), acronyms ("U.S."), "e.g."/"i.e.", initials ("J. R. R. Tolkien"),
    decimals ("3.14"), ellipses, closing quotes after the period, "?"/"!", and newlines as
    paragraph breaks (see ``_paragraphs``). Whitespace inside a sentence is collapsed.
    """
    out = []
    for par in _paragraphs(text):
        par = re.sub(r"[ \t\u00a0]+", " ", par)
        out.extend(_split_paragraph(par))
    return out
