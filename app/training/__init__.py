"""The training pages' side of the app: data, background jobs, results, downloads.

The pages use it as `from app import training as tr`; every name they, the tests and the
scripts use is exported here. By concern:

- jobs: the server-wide job manager (`manager()`), its watchdog, this session's jobs
- uploads: uploaded files kept in the session, parsed once, freed when a job starts
- data: built-in data sets and corpora, the train/validation split, the Data tables
- start: the caps checked, then a fine-tuning or pre-training job queued
- runs: the job functions (training in a job's thread), each run saved under its code
- progress: the live panels' progress lines and probe table
- finished: finished runs collected into the session, reopened from their codes
- reports: a fine-tuned model's report tables and [CLS] attention before and after
- downloads: a model's card and zips
- names: plain file names and unique model names

Widgets the two pages share are in app/train_view.py.
"""

from bert.finetune import FinetuneArgs
from bert.pretrain import PretrainArgs, pretrain

from ..helpers import table_csv
from ..memory import release_memory
from .data import builtin_corpus, builtin_data, class_table, dropped_text, split_data
from .downloads import model_zip, pretrain_card
from .finished import (
    MAX_MODELS,
    _add_result,
    collect,
    notice_key,
    reopen,
    reopen_callback,
    result_status,
    results,
    results_key,
    run_code_line,
    use_model,
)
from .jobs import (
    CLEANUP_EVERY_S,
    FINETUNE,
    POLL_S,
    PRETRAIN,
    TrainingJobs,
    browser_id,
    current_job,
    current_jobs_dir,
    current_session_id,
    job_key,
    job_threads,
    jobs_dir,
    live_job,
    manager,
    notice_errors,
    session_alive,
    student_key,
    tick,
)
from .names import display_name, safe_filename, unique_model_name
from .progress import finetune_progress, finetune_start_line, fmt_seconds, last_event, pretrain_progress, probe_frame
from .reports import base_bundle, cls_attention, mistakes_frame, per_class_frame
from .run_size import (
    DEFAULT_SIZE,
    EVAL_SAMPLE,
    EVALS_HELP,
    PAGE_EVALS,
    RUN_SIZES,
    VALID_FRACTION,
    RunSize,
    eval_every_for,
    page_finetune_args,
)
from .runs import _job_folder, finetune_job, keep_run, pretrain_job, run_record
from .start import (
    check_finetune,
    check_finetune_settings,
    check_pretrain,
    check_pretrain_settings,
    default_finetune_base,
    few_steps_message,
    start_finetune,
    start_pretrain,
    vocab_size,
)
from .uploads import MIN_DOCUMENTS, free_uploads, parse_upload, remember_upload, sniff_columns, upload_corpus

__all__ = [
    # constants
    "CLEANUP_EVERY_S",
    "FINETUNE",
    "MAX_MODELS",
    "MIN_DOCUMENTS",
    "POLL_S",
    "PRETRAIN",
    # jobs
    "TrainingJobs",
    "browser_id",
    "current_job",
    "current_jobs_dir",
    "current_session_id",
    "job_key",
    "job_threads",
    "jobs_dir",
    "live_job",
    "manager",
    "notice_errors",
    "session_alive",
    "student_key",
    "tick",
    # uploads and data
    "builtin_corpus",
    "builtin_data",
    "class_table",
    "dropped_text",
    "free_uploads",
    "parse_upload",
    "remember_upload",
    "sniff_columns",
    "split_data",
    "upload_corpus",
    # starting jobs and the job functions
    "check_finetune",
    "check_finetune_settings",
    "few_steps_message",
    "EVAL_SAMPLE",
    "EVALS_HELP",
    "DEFAULT_SIZE",
    "PAGE_EVALS",
    "RUN_SIZES",
    "VALID_FRACTION",
    "RunSize",
    "eval_every_for",
    "page_finetune_args",
    "check_pretrain",
    "check_pretrain_settings",
    "default_finetune_base",
    "finetune_job",
    "keep_run",
    "pretrain_job",
    "run_record",
    "start_finetune",
    "start_pretrain",
    "vocab_size",
    "_job_folder",
    # progress and results
    "finetune_progress",
    "finetune_start_line",
    "fmt_seconds",
    "last_event",
    "pretrain_progress",
    "probe_frame",
    "collect",
    "notice_key",
    "reopen",
    "reopen_callback",
    "result_status",
    "results",
    "results_key",
    "run_code_line",
    "use_model",
    "_add_result",
    "base_bundle",
    "cls_attention",
    "mistakes_frame",
    "per_class_frame",
    # files and names
    "display_name",
    "model_zip",
    "pretrain_card",
    "safe_filename",
    "table_csv",
    "unique_model_name",
    # used by the tests through this package
    "FinetuneArgs",
    "PretrainArgs",
    "pretrain",
    "release_memory",
]
