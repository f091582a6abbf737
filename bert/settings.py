"""Every setting of a BERT Explorer server, in one place: its name, default and what it does.

The person running the server sets them as environment variables (docs/SETTINGS.md lists them
all). They are read when used, through the four readers below, so a test or a server may change
them at any time; a value that is not of the right kind (or not positive, where that matters)
means the default. Nothing else in `bert/`, `app/` or `pages/` reads a BERT_EXPLORER_* variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    default: object  # None: computed where it is used (said in `what`)
    what: str


SETTINGS = {
    s.name: s
    for s in [
        # model sources (app/model_sources.py, bert/checkpoint/load.py)
        Setting(
            "BERT_EXPLORER_MODELS_DIR",
            "models/",
            "the models folder: the sidebar lists its model folders; `python -m bert get` downloads into it",
        ),
        Setting("BERT_EXPLORER_ALLOW_HUB", False, "1: students may name Hugging Face Hub ids (downloads)"),
        Setting(
            "BERT_EXPLORER_MAX_HUB_MB", 500, "the most one hub download may weigh, in MB, checked before it starts"
        ),
        Setting(
            "BERT_EXPLORER_MAX_MODEL_MB", 2000, "the largest model loaded at all (fp32 parameters, heads included), MB"
        ),
        # training jobs (app/jobs/budget.py, app/jobs/local.py, app/training/)
        Setting("BERT_EXPLORER_MAX_JOBS", None, "training jobs at once, others queue (default: one a core)"),
        Setting("BERT_EXPLORER_MAX_QUEUE", 10, "jobs waiting for a slot; more are refused with a message"),
        Setting("BERT_EXPLORER_MAX_STEP_TOKENS", 2048, "tokens per training step (batch x tokens per sequence)"),
        Setting("BERT_EXPLORER_MAX_JOB_MB", 1024, "estimated memory of one training job, MB; shown before Start"),
        Setting(
            "BERT_EXPLORER_MAX_JOB_MINUTES", 15, "training time of one job; then it stops itself and keeps its model"
        ),
        Setting("BERT_EXPLORER_JOB_THREADS", 1, "torch threads of one training job"),
        Setting(
            "BERT_EXPLORER_JOB_NICE",
            10,
            "local jobs: the niceness a training thread adds to its own, so the pages' runs get the processor first "
            "(0: as the pages)",
        ),
        Setting(
            "BERT_EXPLORER_GPUS_PER_PRETRAIN",
            1,
            "ray mode: GPUs of one pre-training job that asks for cuda (more than 1: torchrun, a process a GPU)",
        ),
        Setting("BERT_EXPLORER_FINETUNE_BASE", "all-minilm-l6-v2", "the Fine-tuning page's starting model"),
        Setting("BERT_EXPLORER_DEVICE", "auto", "training device: auto (cuda, else mps, else cpu), cpu, cuda or mps"),
        Setting(
            "BERT_EXPLORER_PRECISION",
            "auto",
            "training arithmetic: auto (bf16 on a CUDA GPU or a CPU torch reports bf16 on: AMX / AVX-512 BF16; "
            "else fp32), fp32 or bf16 (refused at start-up where the processor lacks it)",
        ),
        Setting(
            "BERT_EXPLORER_BACKEND",
            "local",
            "where jobs train: local (this process) or ray (the Ray cluster at RAY_ADDRESS)",
        ),
        # pages, memory and disk (app/model_sources.py, app/analysis_cache.py, app/jobs/saved_runs.py,
        # bert/data/corpus/fetch.py)
        Setting("BERT_EXPLORER_TORCH_THREADS", 1, "torch threads for the pages' inference"),
        Setting("BERT_EXPLORER_CACHE_MB", 256, "memory of the cached analyses, MB (0: no cache)"),
        Setting(
            "BERT_EXPLORER_MAX_ANALYSES", 2, 'analyses computed at once, server-wide; others wait ("Busy: N ahead")'
        ),
        Setting("BERT_EXPLORER_DICT_MAX_TEXTS", 2000, "sentences one dictionary of features reads (Features page)"),
        Setting(
            "BERT_EXPLORER_DICT_MAX_TOKENS",
            30000,
            "word pieces one dictionary of features trains on; more are left out",
        ),
        Setting(
            "BERT_EXPLORER_DICT_MAX_FEATURES", 4096, "features of one dictionary (its memory: features x hidden x 4)"
        ),
        Setting(
            "BERT_EXPLORER_DICT_MAX_STEPS", 1000, "training steps of one dictionary of features (1,024 tokens a step)"
        ),
        Setting("BERT_EXPLORER_ABLATION_TOKENS", 128, "tokens of the text Head ablation reads (the rest is left out)"),
        Setting("BERT_EXPLORER_ABLATIONS_PER_MINUTE", 6, "new texts one session may rank on Head ablation a minute"),
        Setting(
            "BERT_EXPLORER_PAIR_TOKENS",
            33_000,
            "tokens the model may read to score typed minimal pairs in one go (a sentence of T tokens: T x T)",
        ),
        Setting("BERT_EXPLORER_PAIRS_PER_MINUTE", 6, "new sets of typed minimal pairs one session may score a minute"),
        Setting("BERT_EXPLORER_MAX_DISK_MB", 2000, "saved runs + job folders + tokenized files on disk, MB"),
        Setting("BERT_EXPLORER_RUNS_PER_STUDENT", 3, "saved runs kept per student; a new one removes their oldest"),
        Setting(
            "BERT_EXPLORER_RUN_SAFE_HOURS",
            3,
            "hours a saved run is never removed to make room for another student's (the disk full of such runs: "
            "a new run is not saved, with a message)",
        ),
        Setting(
            "BERT_EXPLORER_OPEN_RUNS_MB", 512, "memory of the reopened runs, one copy each shared by all sessions, MB"
        ),
        Setting("BERT_EXPLORER_CACHE", ".cache/", "folder for corpora, data sets, runs and job folders"),
        # what a client may send the server (app/server/guard.py, app/server/new_students.py,
        # app/class_store/classroom.py)
        Setting("BERT_EXPLORER_UPLOAD_FILES_PER_SESSION", 4, "uploaded files one session may hold; more are refused"),
        Setting("BERT_EXPLORER_UPLOAD_MB_PER_SESSION", 110, "MB of uploaded files one session may hold"),
        Setting("BERT_EXPLORER_UPLOAD_FILES", 60, "uploaded files the whole server holds at most"),
        Setting("BERT_EXPLORER_UPLOAD_MB", 250, "MB of uploaded files the whole server holds at most"),
        Setting(
            "BERT_EXPLORER_UPLOAD_FILES_PER_ADDRESS",
            20,
            "uploaded files the sessions of one client address hold at most (well under the server's files)",
        ),
        Setting(
            "BERT_EXPLORER_UPLOAD_MB_PER_ADDRESS",
            125,
            "MB of uploaded files the sessions of one client address hold at most (under the server's MB)",
        ),
        Setting("BERT_EXPLORER_NEW_STUDENTS_BURST", 4, "new students (browsers) one address may start jobs as at once"),
        Setting(
            "BERT_EXPLORER_NEW_STUDENT_EVERY_S", 20, "then one more new student per address every this many seconds"
        ),
        Setting(
            "BERT_EXPLORER_NEW_ANSWERERS_BURST",
            60,
            "students (browsers) one address may answer one class question as at once (a class behind one router)",
        ),
        Setting(
            "BERT_EXPLORER_NEW_ANSWERER_EVERY_S",
            30,
            "then one more answerer of the question per address every this many seconds (at most half its 200)",
        ),
        # what a student takes home (app/export/notebook.py)
        Setting(
            "BERT_EXPLORER_PROJECT_URL",
            "",
            "where pip installs the project from at home (e.g. git+https://github.com/you/bert-explorer): a saved "
            "notebook's first cell uses it when the app's wheel is not beside the notebook; unset: the wheel only",
        ),
        # the class board (app/board/, pages/board.py)
        Setting("BERT_EXPLORER_BOARD", False, "1: the Class board page, where students post fine-tuning runs"),
        Setting(
            "BERT_EXPLORER_DATABASE_URL",
            "",
            "a PostgreSQL URL (psycopg 3): the class board lives there, shared by app replicas; unset: an "
            "SQLite file in the cache folder",
        ),
        # the teacher (app/server/teacher.py): starts class boards, sees the Server status page
        Setting(
            "BERT_EXPLORER_TEACHER_KEY",
            "",
            "the teacher's key (12+ characters), typed once a session to start a class board or see the "
            "Server status page; unset: nobody can",
        ),
        # signed in through the school (app/students.py; on when .streamlit/secrets.toml has [auth])
        Setting(
            "BERT_EXPLORER_TEACHER_EMAILS",
            "",
            "signed-in users who are the teacher, by verified email (comma-separated)",
        ),
        Setting(
            "BERT_EXPLORER_TEACHER_GROUPS",
            "",
            "signed-in users who are the teacher, by a group in their group claim (comma-separated)",
        ),
        Setting("BERT_EXPLORER_GROUPS_CLAIM", "groups", "the ID token's claim that lists a user's groups"),
        Setting(
            "BERT_EXPLORER_SIGNIN_HOURS",
            12,
            "hours a sign-in (or a launch from the course) counts; then the user signs in (or launches) again",
        ),
    ]
}


def _raw(name: str) -> str:
    if name not in SETTINGS:
        raise KeyError(f"{name} is not a BERT Explorer setting")
    return os.environ.get(name, "").strip()


def all_set() -> dict[str, str]:
    """Every setting that is set, as set: what a worker process of this server must see too
    (app/jobs/ray_backend.py passes them on)."""
    return {name: os.environ[name] for name in SETTINGS if name in os.environ}


# Other programs' variables the app reads (and only these)
OUTSIDE = {"RAY_ADDRESS": "the Ray cluster's head, host:port (BERT_EXPLORER_BACKEND=ray)"}


# Other programs' variables the app sets for itself when they are unset: (name, value, why)
OUTSIDE_DEFAULTS = [
    (
        "RAY_gcs_rpc_server_reconnect_timeout_s",
        "86400",
        "a replica (a Ray driver) outlives a lost Ray head instead of ending 60 s after it; the head "
        "and every node need it too (README, Many classes)",
    ),
]


def set_outside_defaults() -> None:
    """Set OUTSIDE_DEFAULTS that are unset (before the program that reads them starts: ray)."""
    for name, value, _why in OUTSIDE_DEFAULTS:
        os.environ.setdefault(name, value)


def outside(name: str) -> str:
    """Another program's variable the app must read (OUTSIDE), '' when unset."""
    if name not in OUTSIDE:
        raise KeyError(f"{name} is not a variable BERT Explorer reads")
    return os.environ.get(name, "").strip()


def number(name: str, default: float | None = None) -> float:
    """A positive number, else the default."""
    default = SETTINGS[name].default if default is None else default
    try:
        value = float(_raw(name))
    except ValueError:
        return float(default)
    return value if value > 0 else float(default)


def whole(name: str, default: int | None = None, minimum: int = 1) -> int:
    """A whole number ≥ `minimum`, else the default."""
    default = SETTINGS[name].default if default is None else default
    value = _raw(name)
    return int(value) if value.isdigit() and int(value) >= minimum else int(default)


def text(name: str) -> str:
    """The value as typed (stripped), '' when unset."""
    return _raw(name)


def flag(name: str) -> bool:
    """True only for 1."""
    return _raw(name) == "1"
