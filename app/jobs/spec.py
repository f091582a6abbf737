"""What a training job is, for both backends: its kinds, the messages of the caps that refuse one,
and the `JobSpec`: a job as data, naming its kind, run code, student, settings, the base model (a
source name the worker resolves), and carrying its texts. No closures and no live models, so the same spec runs in this
process (app/jobs/local.py) or on a Ray worker (app/jobs/ray_backend.py); `to_dict` / `from_dict`
are its wire form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from bert.data.corpus.base import Corpus
from bert.data.corpus.registry import CORPORA
from bert.data.labelled import LabelledData
from bert.train import events as ev
from bert.train.finetune_args import FinetuneArgs
from bert.train.pretrain_args import PretrainArgs

if TYPE_CHECKING:
    from bert import Bundle

# A job's base model, loaded when first asked: the page's own where the process has it, else found by
# its source name (app.jobs.worker.base_model).
BaseOf = Callable[[], "Bundle"]

FINETUNE, PRETRAIN = "finetune", "pretrain"  # the kinds of job
SEQ2SEQ = "seq2seq"  # an encoder-decoder on pairs (app/jobs/seq2seq_job.py)
TASK_HEAD = "head"  # a per-token head: a tagger or a reader (app/jobs/task_head_job.py)
DICTIONARY = "dictionary"  # a dictionary of features and its control (app/jobs/dictionary_job.py)
KINDS = {
    FINETUNE: "fine-tuning",
    PRETRAIN: "pre-training",
    SEQ2SEQ: "decoder training",
    TASK_HEAD: "fine-tuning",
    DICTIONARY: "dictionary training",
}


def trainer_of(kind: str) -> str:
    """The trainer whose events a job of `kind` reports (bert.train.events.from_dict's name)."""
    return {PRETRAIN: ev.PRETRAIN, TASK_HEAD: ev.TASK_HEAD}.get(kind, ev.FINETUNE)


def one_job_message(kind: str, status: str, where: str = "") -> str:
    """Why a student's second job is refused (`where`: " in another tab ..." when not this one)."""
    state = "waiting for a slot" if status == "queued" else "running"
    return (
        f"You already have a {KINDS.get(kind, kind)} job {state}{where}: one job per student at a time. "
        f"Stop it or let it finish first."
    )


def busy_message(waiting: int, max_queue: int) -> str:
    return (
        f"The server is busy: {waiting} jobs are already waiting for a free slot "
        f"(at most {max_queue}). Try again in a few minutes."
    )


# what of a LabelledData travels with a job (its preview table stays with the page)
_DATA_FIELDS = [f.name for f in fields(LabelledData) if f.name != "preview"]


@dataclass
class JobSpec:
    kind: str  # FINETUNE or PRETRAIN
    code: str  # the run code: the job's name everywhere, and where its result is kept ("": not kept)
    student: str = ""  # who counts for one job per student (a browser, or a session)
    title: str = ""
    args: dict[str, Any] = field(default_factory=dict)  # FinetuneArgs / PretrainArgs as a dict
    base: str = ""  # fine-tuning: the base model's source name (resolved by run_job's `load_base`)
    train: dict[str, Any] | None = None  # fine-tuning: a LabelledData's fields
    valid: dict[str, Any] | None = None
    corpus: dict[str, Any] | None = None  # pre-training on an upload (else args["corpora"], by name)
    corpus_label: str = ""
    info: dict[str, Any] = field(default_factory=dict)  # what the results view shows (JSON only)
    gpu: bool = False  # ask for a GPU worker (the Ray backend; locally: BERT_EXPLORER_DEVICE)
    processes: int = 1  # pre-training under torchrun in this many processes (a GPU actor's GPUs)
    probe: dict[str, Any] | None = None  # attention over training: AttentionSnapshots.settings() (a worker records)
    pairs: dict[str, Any] | None = None  # seq2seq: uploaded pairs (a built-in task is made where the job runs)
    examples: dict[str, Any] | None = None  # a per-token head: an upload's TaggedData / QAData (else built-in);
    # a dictionary: its held-in and held-out sentences (else the corpora's)

    def finetune_args(self) -> FinetuneArgs:
        return FinetuneArgs(**self.args)

    def pretrain_args(self) -> PretrainArgs:
        return PretrainArgs(**self.args)

    def settings(self) -> FinetuneArgs | PretrainArgs:
        return self.finetune_args() if self.kind == FINETUNE else self.pretrain_args()

    def data(self) -> tuple[LabelledData, LabelledData]:
        return LabelledData(**self.train), LabelledData(**self.valid)

    def uploaded_corpus(self) -> Corpus | None:
        return Corpus(**self.corpus) if self.corpus else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobSpec:
        return known_fields(cls, d)


def known_fields(cls, d: dict[str, Any]):
    """The dataclass `cls` from `d`, the keys it does not know left out (written by another version)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def labelled_fields(data: LabelledData) -> dict[str, Any]:
    return {name: getattr(data, name) for name in _DATA_FIELDS}


def new_spec(
    kind: str, code: str, args, student: str = "", title: str = "", info: dict[str, Any] | None = None, **data
) -> JobSpec:
    """A JobSpec of `kind`: `args` (a dataclass) as a dict, a copy of `info`, a GPU worker asked for
    when args.device is cuda; `data` the kind's own fields (base, train, corpus, pairs, examples...)."""
    gpu = getattr(args, "device", "cpu") == "cuda"
    return JobSpec(kind, code, student, title, asdict(args), info=dict(info or {}), gpu=gpu, **data)


def finetune_spec(
    code: str,
    base: str,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    student: str = "",
    title: str = "",
    info: dict[str, Any] | None = None,
) -> JobSpec:
    sets = {"train": labelled_fields(train), "valid": labelled_fields(valid)}
    return new_spec(FINETUNE, code, args, student, title, info, base=base, **sets)


def pretrain_spec(
    code: str,
    args: PretrainArgs,
    corpus: Corpus | None,
    name: str,
    corpus_label: str,
    student: str = "",
    info: dict[str, Any] | None = None,
) -> JobSpec:
    """`corpus` travels only when it is an upload; a built-in corpus (args.corpora) is read by name
    where the job runs."""
    uploaded = corpus is not None and not all(c in CORPORA for c in args.corpora)
    corpus_fields = asdict(corpus) if uploaded else None
    return new_spec(PRETRAIN, code, args, student, name, info, corpus=corpus_fields, corpus_label=corpus_label)
