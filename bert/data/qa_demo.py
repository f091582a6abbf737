"""The built-in question-answering set: made by this project from templates, not a published one.

No installed package ships a freely licensed SQuAD-style set, so short biographies of invented people
are written from fixed templates and word lists (names, towns, subjects, jobs, countries, years), each
with five questions whose answers are spans of its passage. It teaches the SHAPE of the task (find
the words that answer) on easy, regular text; it says nothing about reading real prose. Deterministic
in its seed; every answer's character offset is exact by construction.
"""

from __future__ import annotations

import random

from .squad import QAData, Question

SOURCE = "project-made demo questions (templates over invented biographies)"
FIRST = "Ada Ben Clara David Elena Farid Grace Hugo Ines Jonas Kira Leon Maya Nils Olga Pavel Rosa Samir".split()
LAST = "Adler Brandt Costa Dahl Ekberg Fontaine Gallo Horvat Ivanova Jensen Kowalski Lind Moreau Novak Ortega".split()
TOWNS = "Lyon Porto Graz Bergen Gdansk Leeds Turku Bilbao Ghent Brno Cork Malmo Basel Split Tartu Padua".split()
SUBJECTS = ["chemistry", "music", "law", "medicine", "history", "geology", "painting", "mathematics", "botany"]
JOBS = ["teacher", "engineer", "nurse", "pilot", "baker", "librarian", "architect", "farmer", "journalist"]
COUNTRIES = ["Canada", "Norway", "Chile", "Japan", "Kenya", "Iceland", "Peru", "Portugal", "New Zealand"]
THINGS = ["a small boat", "an old violin", "a red bicycle", "a pet tortoise", "a telescope", "a box of letters"]

_PASSAGES = [
    "{name} was born in {town} in {year}. {first} studied {subject} in {town2} and later worked as a {job}. "
    "In {year2}, {first} moved to {country}, taking {thing} along.",
    "Born in {year} in the town of {town}, {name} first studied {subject}. After some years in {town2}, "
    "{first} became a {job}, and in {year2} settled in {country} with {thing}.",
]
_QUESTIONS = [
    ("Where was {name} born?", "town"),
    ("In which year was {name} born?", "year"),
    ("What did {first} study?", "subject"),
    ("What was {first}'s job?", "job"),
    ("Which country did {first} move to?", "country"),
]


def qa_demo(passages: int = 120, seed: int = 0) -> QAData:
    """`passages` invented biographies with five questions each."""
    rng = random.Random(seed)
    questions = []
    for k in range(passages):
        first = rng.choice(FIRST)
        slots = {
            "first": first,
            "name": f"{first} {rng.choice(LAST)}",
            "town": (town := rng.choice(TOWNS)),
            "town2": rng.choice([t for t in TOWNS if t != town]),
            "year": str(rng.randint(1850, 1990)),
            "subject": rng.choice(SUBJECTS),
            "job": rng.choice(JOBS),
            "country": rng.choice(COUNTRIES),
            "thing": rng.choice(THINGS),
        }
        slots["year2"] = str(int(slots["year"]) + rng.randint(20, 40))
        template = _PASSAGES[k % len(_PASSAGES)]
        context = template.format(**slots)
        for n, (q, slot) in enumerate(_QUESTIONS):
            answer = slots[slot]
            start = _slot_offset(template, slots, slot)
            questions.append(Question(f"demo-{k}-{n}", q.format(**slots), context, ((answer, start),)))
    note = "Made by this project from templates over invented biographies: easy, regular text."
    return QAData(questions, [note], "builtin:qa-demo", "1.1", "utf-8")


def _slot_offset(template: str, slots: dict[str, str], slot: str) -> int:
    """Where `slot`'s first use lands in the formatted template."""
    head = template[: template.index("{" + slot + "}")]
    return len(head.format(**slots))
