"""Minimal-pair paradigms written for this project from templates: each pair is a grammatical
sentence and one that breaks one rule, differing as little as possible. Each paradigm crosses a
few short word lists (every combination, in order) for PAIRS_EACH pairs. And the reading of pairs
a student types, one "good | bad" a line.

A paradigm's name says the rule; its `about` says it for a class.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ..errors import InputError

PAIRS_EACH = 20
PAIR_SEP = "|"
MAX_LINE_CHARS = 1_200


@dataclass(frozen=True)
class Paradigm:
    name: str
    about: str
    pairs: tuple[tuple[str, str], ...]  # (good, bad)


_NOUNS = [("author", "authors"), ("teacher", "teachers"), ("dog", "dogs"), ("pilot", "pilots")]
_PLACES = ["cabinet", "house", "garden"]
_BE = [("is", "are"), ("was", "were")]


def _agreement_simple():
    for (sg, pl), (v_sg, v_pl), adj in product(_NOUNS, _BE, ["tired", "happy", "late"]):
        yield f"The {sg} {v_sg} {adj}.", f"The {sg} {v_pl} {adj}."
        yield f"The {pl} {v_pl} {adj}.", f"The {pl} {v_sg} {adj}."


def _agreement_across_pp():
    for (sg, pl), place, (v_sg, v_pl) in product(_NOUNS, _PLACES, _BE):
        yield f"The {sg} near the {place}s {v_sg} here.", f"The {sg} near the {place}s {v_pl} here."
        yield f"The {pl} near the {place} {v_pl} here.", f"The {pl} near the {place} {v_sg} here."


def _agreement_across_clause():
    for (sg, pl), (who_sg, who_pl), (v_sg, v_pl) in product(
        _NOUNS, [("guard", "guards"), ("doctor", "doctors"), ("child", "children")], _BE
    ):
        yield f"The {sg} that the {who_pl} like {v_sg} old.", f"The {sg} that the {who_pl} like {v_pl} old."
        yield f"The {pl} that the {who_sg} likes {v_pl} old.", f"The {pl} that the {who_sg} likes {v_sg} old."


def _determiner_noun():
    things = [("book", "books"), ("chair", "chairs"), ("car", "cars"), ("song", "songs"), ("picture", "pictures")]
    for (sg, pl), (this, these), who in product(things, [("this", "these"), ("that", "those")], ["Anna", "Tom"]):
        yield f"{who} liked {this} {sg}.", f"{who} liked {these} {sg}."
        yield f"{who} liked {these} {pl}.", f"{who} liked {this} {pl}."


def _anaphor_gender():
    people = [("man", "himself", "herself"), ("woman", "herself", "himself"), ("boy", "himself", "herself")]
    people += [("girl", "herself", "himself")]
    for (who, right, wrong), verb in product(people, ["hurt", "saw", "praised", "blamed", "helped", "washed"]):
        yield f"The {who} {verb} {right}.", f"The {who} {verb} {wrong}."


def _anaphor_number():
    people = [("boys", "themselves", "himself"), ("girls", "themselves", "herself"), ("boy", "himself", "themselves")]
    people += [("girl", "herself", "themselves")]
    for (who, right, wrong), verb in product(people, ["hurt", "saw", "praised", "blamed", "helped", "washed"]):
        yield f"The {who} {verb} {right}.", f"The {who} {verb} {wrong}."


def _transitive_object():
    pairs = [("found", "arrived"), ("broke", "slept"), ("took", "fell"), ("liked", "laughed")]
    for (tr, intr), who, obj in product(pairs, ["The girl", "My brother"], ["the book", "a cup", "the key"]):
        yield f"{who} {tr} {obj}.", f"{who} {intr} {obj}."


def _irregular_past():
    verbs = [("broke", "broken"), ("wrote", "written"), ("took", "taken"), ("ate", "eaten"), ("saw", "seen")]
    objs = {"broke": "the window", "wrote": "a letter", "took": "the bus", "ate": "the bread", "saw": "the bird"}
    for (past, part), who in product(verbs, ["The boy", "She", "Our neighbour", "The old man"]):
        yield f"{who} {past} {objs[past]}.", f"{who} {part} {objs[past]}."


def _do_support():
    verbs = [("leave", "left"), ("eat", "ate"), ("win", "won"), ("see", "saw")]
    for (base, past), who in product(verbs, ["the boy", "your sister", "the team"]):
        yield f"Did {who} {base}?", f"Did {who} {past}?"
        yield f"{who.capitalize()} did not {base}.", f"{who.capitalize()} did not {past}."


def _article_form():
    nouns = ["apple", "egg", "orange", "idea", "hour", "umbrella"]
    for noun, (verb, who) in product(nouns, [("saw", "I"), ("wanted", "She"), ("found", "We"), ("had", "They")]):
        yield f"{who} {verb} an {noun}.", f"{who} {verb} a {noun}."


def _negative_polarity():
    for (who, what), verb in product(
        [
            ("No student", "The student"),
            ("Nobody", "Somebody"),
            ("No child", "The child"),
            ("No teacher", "The teacher"),
        ],
        ["has ever left", "has ever complained", "will ever know", "has ever lied", "would ever agree", "can ever win"],
    ):
        yield f"{who} {verb}.", f"{what} {verb}."


def _made(name: str, about: str, make) -> Paradigm:
    pairs = tuple(dict.fromkeys(make()))[:PAIRS_EACH]  # in order, each pair once
    return Paradigm(name, about, pairs)


PARADIGMS = {
    p.name: p
    for p in (
        _made("subject-verb agreement", "The verb agrees with its subject: 'The dogs are tired.'", _agreement_simple),
        _made(
            "agreement across a prepositional phrase",
            "A noun in between does not decide the verb: 'The dog near the houses is here.'",
            _agreement_across_pp,
        ),
        _made(
            "agreement across a relative clause",
            "The verb agrees with the head noun, past a clause: 'The author that the guards like is old.'",
            _agreement_across_clause,
        ),
        _made("determiner-noun agreement", "this/that with one, these/those with many.", _determiner_noun),
        _made(
            "anaphor gender", "A reflexive matches its antecedent's gender: 'The man hurt himself.'", _anaphor_gender
        ),
        _made("anaphor number", "A reflexive matches its antecedent's number.", _anaphor_number),
        _made(
            "argument structure", "A transitive verb takes an object; an intransitive one does not.", _transitive_object
        ),
        _made("irregular past tense", "The simple past, not the participle: 'She wrote a letter.'", _irregular_past),
        _made("do-support", "After do/did, the bare verb: 'Did the boy leave?'", _do_support),
        _made("a or an", "'an' before a vowel sound, 'a' before a consonant sound.", _article_form),
        _made(
            "negative polarity: ever",
            "'ever' needs a negative before it: 'Nobody has ever left.'",
            _negative_polarity,
        ),
    )
}


def parse_pairs(text: str, max_pairs: int) -> list[tuple[str, str]]:
    """Typed pairs, one "good sentence | bad sentence" a line (blank lines and lines starting
    with # skipped): an InputError naming the first line that is not one."""
    pairs = []
    for n, line in enumerate((text or "").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if len(line) > MAX_LINE_CHARS:
            raise InputError(f"line {n} is longer than {MAX_LINE_CHARS} characters: one short pair a line")
        parts = [p.strip() for p in line.split(PAIR_SEP)]
        if len(parts) != 2 or not all(parts):
            raise InputError(f"line {n} is not 'good sentence {PAIR_SEP} bad sentence': {line[:80]}")
        if parts[0] == parts[1]:
            raise InputError(f"line {n} has the same sentence twice: a minimal pair differs somewhere")
        pairs.append((parts[0], parts[1]))
        if len(pairs) > max_pairs:
            raise InputError(f"more than {max_pairs} pairs: score at most {max_pairs} at once")
    if not pairs:
        raise InputError(f"no pairs yet: write one a line, 'good sentence {PAIR_SEP} bad sentence'")
    return pairs
