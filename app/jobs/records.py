"""A job's run as the pages keep it: the job's own events after the trainer's (its report, the
run saved or not), the record of a finished run, and that record as run.json holds it and read
back (its events and settings as dicts, then as objects again); and the model card of a
pre-trained run."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

from bert import DataError
from bert.train import events as ev
from bert.train.events import last as last_event
from bert.train.finetune_args import FinetuneArgs
from bert.train.next_word import NEXT_WORD
from bert.train.pretrain_args import PretrainArgs
from bert.train.seq2seq import Seq2SeqArgs
from bert.train.seq2seq import event_from_dict as seq2seq_event
from bert.train.task_head_args import TaskHeadArgs

from .dictionary_events import event_from_dict as dictionary_event
from .spec import DICTIONARY, PRETRAIN, SEQ2SEQ, TASK_HEAD, known_fields, trainer_of


class Report(ev.Event, event="report"):
    """evaluate_classifier's report on the validation texts, after fine-tuning."""

    seconds: float
    report: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "seconds": self.seconds, **self.report}


class Saved(ev.Event, event="saved"):
    """The run is saved under its run code."""

    code: str


class SaveFailed(ev.Event, event="save_failed"):
    """The run could not be saved (the model is still in the session)."""

    message: str


JOB_EVENTS = (Report, Saved, SaveFailed)


def run_record(
    kind: str, events: list[ev.Event], info: dict, status: str, error: str | None, stop_reason: str | None
) -> dict:
    """What a finished job's results view shows (kept in the session; `stored_record` is what is
    saved with the run): "metrics" the trainer's events, "done" its Done event, "report" the
    Report's dict (fine-tuning)."""
    report = last_event(events, Report)
    return {
        "kind": kind,
        "status": status,
        "error": error,
        "stop_reason": stop_reason,
        "metrics": [m for m in events if not isinstance(m, JOB_EVENTS)],
        "report": report.to_dict() if report else None,
        "done": last_event(events, ev.Done),
        "info": info,
    }


def stored_record(record: dict) -> dict:
    """`record` with its events (`to_dict`) and its settings (info["args"]) as dicts: what run.json holds."""
    done, info = record.get("done"), record.get("info") or {}
    if is_dataclass(info.get("args")):
        info = {**info, "args": asdict(info["args"])}
    return {
        **record,
        "metrics": [m.to_dict() for m in record["metrics"]],
        "done": done and done.to_dict(),
        "info": info,
    }


def read_event(d: dict, kind: str) -> ev.Event:
    """A run's event dict (run.json, a worker's poll) as the event of its kind's trainer;
    ValueError for an event that trainer does not write or one missing fields."""
    if kind == SEQ2SEQ:
        return seq2seq_event(d)
    if kind == DICTIONARY:
        return dictionary_event(d)
    return ev.from_dict(d, trainer_of(kind))


def _settings(kind: str, d: dict) -> FinetuneArgs | PretrainArgs | Seq2SeqArgs | TaskHeadArgs:
    """A run's settings from run.json (settings it does not know are left out)."""
    cls = {PRETRAIN: PretrainArgs, SEQ2SEQ: Seq2SeqArgs, TASK_HEAD: TaskHeadArgs}.get(kind, FinetuneArgs)
    required = {PretrainArgs: {"out": ""}, FinetuneArgs: {"data": ""}}.get(cls, {})
    return known_fields(cls, {**required, **d})


def loaded_record(record: dict) -> dict:
    """A run.json's record with its events (bert.train.events.from_dict) and settings read back; an event
    it cannot read (a run written by another version) is left out. DataError without a readable Done."""

    def read(d):
        try:
            return read_event(d, record.get("kind"))
        except (ValueError, AttributeError):
            return None

    metrics = [m for m in map(read, record.get("metrics") or []) if m is not None]
    done = read(record["done"]) if isinstance(record.get("done"), dict) else None
    if not isinstance(done, ev.Done):
        raise DataError(f"Run {record.get('code', '')} was saved in a form this version cannot read.")
    info = record.get("info") or {}
    info = {**info, "args": _settings(record.get("kind"), info.get("args") or {})}
    return {**record, "metrics": metrics, "done": done, "info": info}


def _vocab_words(vocab: str) -> str:
    if vocab == "default":
        return "bert-base-uncased (30,522)"
    return f"WordPiece trained on the corpus ({vocab.split(':', 1)[-1]})"


def _game(args: PretrainArgs) -> str:
    """How the card names the objective: nothing for BERT's own two games."""
    if args.objective == NEXT_WORD:
        return (
            " to predict the next word (left to right: the causal attention mask, no next-sentence game;"
            " read it causally, as the Pre-training page's continue box does)"
        )
    return ""


def pretrain_card(name: str, args: PretrainArgs, corpus_label: str, done: ev.PretrainDone) -> str:
    """The model card of a pre-trained model (the fine-tuning backend writes its own)."""
    return "\n".join(
        [
            f"# {name}",
            "",
            f"A small BERT pre-trained from random weights in BERT Explorer{_game(args)}, on {corpus_label}: "
            f"{args.layers} layers, hidden size {args.hidden}, {args.heads} heads, vocabulary "
            f"{_vocab_words(args.vocab)}.",
            "",
            f"- Steps: {done.step or 0:,} of {args.steps:,}"
            + (" (stopped early)" if done.stopped else "")
            + f", batch {args.batch_size}, sequences of {args.max_seq_length} tokens, learning rate {args.lr:g}, "
            f"in {args.precision}.",
            (
                f"- Validation: next-word top-1 {done.mlm_top1:.3f}, top-5 {done.mlm_top5:.3f}, loss "
                f"{done.mlm_loss:.3f}."
                if done.mlm_top1 is not None and args.objective == NEXT_WORD
                else f"- Validation: masked-LM top-1 {done.mlm_top1:.3f}, top-5 {done.mlm_top5:.3f}, loss "
                f"{done.mlm_loss:.3f}; next-sentence accuracy {done.nsp_acc:.3f}."
                if done.mlm_top1 is not None
                else "- Validation: not measured (stopped before the end)."
            ),
            "",
            "Licence: that of the corpus it was trained on.",
            "",
        ]
    )
