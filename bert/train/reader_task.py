"""The reader's task for bert/train/task_head_train.py: questions over passages as inputs (each passage in
stride windows, bert/answering.py; a window without the whole answer points at [CLS], as transformers'
SQuAD recipe does), and its scores on the validation questions: SQuAD's exact match and F1
(bert/train/qa_metrics.py), in percent, with a few answered examples for the results view."""

from __future__ import annotations

import torch

from ..answering import MAX_QUESTION_TOKENS, answer_question, windows
from ..bundle import Bundle
from ..data.squad import QAData
from ..errors import DataError
from .batching import pad_encoded
from .device import module_device
from .precision import autocast
from .qa_metrics import best_scores, squad_scores
from .task_head_args import TaskHeadArgs

EXAMPLES = 8  # validation questions shown with their answers
# Windows a run builds at most, training and validation each (about a kilobyte each): a long
# passage read in short windows by many questions makes millions, built before the first step.
MAX_WINDOWS = 50_000


def count_windows(tok, data: QAData, max_length: int, stride: int) -> int:
    """How many windows `windows` makes of `data`'s questions (each passage tokenized once)."""
    lengths: dict[str, int] = {}
    total = 0
    for q in data.questions:
        n = lengths.get(q.context)
        if n is None:
            n = lengths[q.context] = len(tok.encode(q.context, max_length=None, add_special_tokens=False).ids)
        asked = len(tok.encode(q.question, max_length=MAX_QUESTION_TOKENS, add_special_tokens=False).ids)
        room = max(1, max_length - asked - 3)
        step = max(1, room - min(stride, room // 2))
        total += 1 if n <= room else 1 + -(-(n - room) // step)
    return total


def too_many_windows(n: int, max_length: int) -> str:
    return (
        f"these questions make {n:,} windows of {max_length} tokens (a passage is read in windows, once per "
        f"question), and a run builds at most {MAX_WINDOWS:,}: use more tokens per input or fewer questions"
    )


class ReaderTask:
    head = "reader"
    labels: list[str] = []
    primary = "f1"

    def __init__(self, train: QAData, valid: QAData, args: TaskHeadArgs):
        self.train, self.valid = args.samples(train, valid)
        self.args = args
        self.allow_none = any(q.impossible for q in train.questions)
        self.train_examples, self.valid_examples = len(self.train), len(self.valid)
        self._valid_inputs = None

    def _encode(self, tok, data: QAData) -> list[dict]:
        n = count_windows(tok, data, self.args.max_length, self.args.stride)  # counted before any is built
        if n > MAX_WINDOWS:
            raise DataError(too_many_windows(n, self.args.max_length))
        out = []
        for q in data.questions:
            for w in windows(tok, q.question, q.context, self.args.max_length, self.args.stride):
                span = None
                if q.answers:
                    text, start = q.answers[0]
                    span = w.token_span(start, start + len(text))
                s, e = span or (0, 0)
                out.append(
                    {
                        "input_ids": w.enc.ids,
                        "token_type_ids": w.enc.type_ids,
                        "start_positions": s,
                        "end_positions": e,
                    }
                )
        return out

    def inputs(self, tokenizer) -> list[dict]:
        return self._encode(tokenizer, self.train)

    def batch(self, items: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
        out = pad_encoded(items, pad_id, self.args.max_length)  # lengths rounded, as every job's
        for k in ("start_positions", "end_positions"):
            out[k] = torch.tensor([x[k] for x in items], dtype=torch.long)
        return out

    @torch.inference_mode()
    def evaluate(self, bundle: Bundle, stop, precision: str = "fp32") -> tuple[dict, float, dict] | None:
        if self._valid_inputs is None:
            self._valid_inputs = self._encode(bundle.tokenizer, self.valid)
        model = bundle.model
        was_training = model.training
        model.eval()
        device = module_device(model)
        loss_sum, n = 0.0, 0
        for s in range(0, len(self._valid_inputs), 32):
            if stop is not None and stop.is_set():
                model.train(was_training)
                return None
            chunk = self._valid_inputs[s : s + 32]
            inputs = {k: v.to(device) for k, v in self.batch(chunk, bundle.tokenizer.pad_id).items()}
            with autocast(device, precision):
                loss_sum += float(model(**inputs).loss) * len(chunk)
            n += len(chunk)
        predictions, examples = [], []
        for k, q in enumerate(self.valid.questions):
            if stop is not None and stop.is_set():
                model.train(was_training)
                return None
            a = answer_question(
                bundle, q.question, q.context, self.args.max_length, self.args.stride, allow_none=self.allow_none
            )
            predictions.append(a.text)
            if k < EXAMPLES:
                examples.append(_example(q, a))
        model.train(was_training)
        scores = squad_scores(predictions, [q.answer_texts for q in self.valid.questions])
        return scores, loss_sum / max(n, 1), {"examples": examples}

    def card(self) -> list[str]:
        return [
            f"Data: {self.train.source or self.args.data}: {len(self.train):,} training questions, "
            f"{len(self.valid):,} validation questions (split by passage).",
            f"Windows of {self.args.max_length} tokens, {self.args.stride} shared between consecutive ones; "
            "an answer is at most 30 tokens"
            + ("; unanswerable questions (SQuAD 2.0) answer [CLS]." if self.allow_none else "."),
        ]


def _example(q, a) -> dict:
    """One answered question for the results view: passage, gold and predicted spans, and the winning
    window's tokens with their start and end probabilities."""
    w = a.windows[a.window]
    lo, hi = w.context_start, w.context_start + w.n
    em, f1 = best_scores(a.text, q.answer_texts)
    return {
        "question": q.question,
        "context": q.context,
        "gold": [[t, s] for t, s in q.answers],
        "predicted": [a.text, a.start, a.end],
        "score": a.score,
        "exact_match": em,
        "f1": f1,
        "tokens": w.enc.tokens[lo:hi],
        "start_probs": [round(float(p), 4) for p in a.start_probs[a.window][lo:hi]],
        "end_probs": [round(float(p), 4) for p in a.end_probs[a.window][lo:hi]],
    }
