"""Questions over passages for a reader: an uploaded SQuAD-format JSON file, read and checked.

    data = read_squad(raw_bytes, "questions.json")
    q = data.questions[0]; q.question, q.context, q.answers, q.impossible

SQuAD v1.1 and v2.0: {"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}], "is_impossible"}]}]}]}. An answer whose text is not at
its answer_start is looked for nearby (within 50 characters, as old exports were often off by a
few) and else dropped; a question left with no answer and not marked impossible is dropped; both
are counted in `notes`. v2.0's unanswerable questions are kept (their gold answer is "").
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from ..errors import DataError
from .decode import decode_bytes, human_bytes, json_value

MAX_BYTES = 50 * 1024**2
MAX_QUESTIONS = 20_000
MAX_CONTEXT_CHARS = 20_000
NEAR = 50


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]  # (text, character start in the context)
    impossible: bool = False

    @property
    def answer_texts(self) -> list[str]:
        return [a for a, _ in self.answers] or [""]


@dataclass
class QAData:
    questions: list[Question]
    notes: list[str] = field(default_factory=list)
    source: str = ""
    version: str = ""
    encoding: str = ""

    def __len__(self) -> int:
        return len(self.questions)

    def subset(self, indices) -> QAData:
        return QAData([self.questions[i] for i in indices], list(self.notes), self.source, self.version, self.encoding)

    def summary(self) -> str:
        none = sum(q.impossible for q in self.questions)
        passages = len({q.context for q in self.questions})
        return f"{len(self):,} questions over {passages:,} passages" + (f", {none:,} without an answer" if none else "")


def _located(context: str, text: str, start) -> int | None:
    """The answer's start in the context: as given, else the nearest occurrence within NEAR characters."""
    if not isinstance(start, int) or isinstance(start, bool):
        return None
    if context[start : start + len(text)] == text:
        return start
    near = [k for k in range(max(0, start - NEAR), min(len(context), start + NEAR) + 1) if context.startswith(text, k)]
    return min(near, key=lambda k: abs(k - start)) if near else None


def read_squad(data: bytes, name: str = "upload.json", max_bytes: int = MAX_BYTES, seed: int = 0) -> QAData:
    """Read and check a SQuAD-format file's bytes (see the module's rules)."""
    if len(data) > max_bytes:
        raise DataError(f"{name} is {human_bytes(len(data))}; the limit is {human_bytes(max_bytes)}.")
    if not data.strip():
        raise DataError(f"{name} is empty.")
    text, encoding = decode_bytes(data, "SQuAD-format JSON")
    try:
        root = json_value(text.lstrip("\ufeff"), name)
    except json.JSONDecodeError as e:
        raise DataError(f"{name} is not JSON ({str(e)[:80]}): a SQuAD file is one JSON object.") from None
    articles = root.get("data") if isinstance(root, dict) else None
    if not isinstance(articles, list):
        raise DataError(f'{name} is not in SQuAD form: a JSON object with a "data" list of articles is expected.')
    counts = {"answers not found in their passage": 0, "questions without a usable answer": 0, "malformed entries": 0}
    questions, long = [], 0
    for article in articles:
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        for para in paragraphs if isinstance(paragraphs, list) else ():
            context = para.get("context") if isinstance(para, dict) else None
            qas = para.get("qas") if isinstance(para, dict) else None
            if not isinstance(context, str) or not context.strip() or not isinstance(qas, list):
                counts["malformed entries"] += 1
                continue
            if len(context) > MAX_CONTEXT_CHARS:
                long += 1
                continue
            for n, qa in enumerate(qas):
                q = _question(qa, context, f"{len(questions)}-{n}", counts)
                if q is not None:
                    questions.append(q)
    notes = [f"{v:,} {k} skipped." for k, v in counts.items() if v]
    if long:
        notes.append(f"{long:,} passages longer than {MAX_CONTEXT_CHARS:,} characters skipped.")
    if not questions:
        raise DataError(f"{name} holds no usable question" + (f" ({' '.join(notes)})" if notes else "."))
    if len(questions) > MAX_QUESTIONS:
        keep = sorted(random.Random(seed).sample(range(len(questions)), MAX_QUESTIONS))
        notes.append(f"{len(questions):,} questions: a random {MAX_QUESTIONS:,} of them are used.")
        questions = [questions[i] for i in keep]
    version = "2.0" if any(q.impossible for q in questions) else str(root.get("version", "1.1"))[:10]
    return QAData(questions, notes, name, version, encoding)


def _question(qa, context: str, fallback_id: str, counts: dict[str, int]) -> Question | None:
    if not isinstance(qa, dict) or not isinstance(qa.get("question"), str) or not qa["question"].strip():
        counts["malformed entries"] += 1
        return None
    impossible = bool(qa.get("is_impossible", False))
    answers = []
    for a in qa.get("answers") or () if not impossible else ():
        if not isinstance(a, dict) or not isinstance(a.get("text"), str) or not a["text"].strip():
            counts["malformed entries"] += 1
            continue
        start = _located(context, a["text"], a.get("answer_start"))
        if start is None:
            counts["answers not found in their passage"] += 1
            continue
        answers.append((a["text"], start))
    if not answers and not impossible:
        counts["questions without a usable answer"] += 1
        return None
    return Question(str(qa.get("id", fallback_id))[:100], qa["question"].strip(), context, tuple(answers), impossible)


def split_questions(data: QAData, valid_fraction: float = 0.2, seed: int = 0) -> tuple[QAData, QAData]:
    """Training and validation questions, split by PASSAGE (no passage in both)."""
    passages = sorted({q.context for q in data.questions})
    if len(passages) < 2:
        raise DataError("at least two passages are needed (one to train on, one to check)")
    random.Random(seed).shuffle(passages)
    n_valid = min(len(passages) - 1, max(1, round(len(passages) * valid_fraction)))
    held = set(passages[:n_valid])
    train = [i for i, q in enumerate(data.questions) if q.context not in held]
    valid = [i for i, q in enumerate(data.questions) if q.context in held]
    return data.subset(train), data.subset(valid)
