"""Starting a dictionary job from the Features page: the session's one job of that kind."""

from __future__ import annotations

import bert

from ..jobs import saved_runs
from ..jobs.backend import JobBackend, JobHandle, job_backend
from ..jobs.dictionary_job import DictionaryArgs, check_dictionary, dictionary_spec
from ..jobs.spec import DICTIONARY
from ..jobs.worker import job_threads
from ..run_session.follow import active_job, submit
from ..students import student_key


def start_dictionary(
    base: bert.Bundle,
    base_source: str,
    args: DictionaryArgs,
    texts: tuple[list[str], list[str]],
    jm: JobBackend | None = None,
) -> tuple[JobHandle, bool]:
    """Submit (or return the already active) dictionary job of this session: `texts` the held-in and
    held-out sentences it reads. InputError / LimitError over a cap (the memory estimate first)."""
    jm = jm or job_backend()
    existing = active_job(jm, DICTIONARY)
    if existing is not None:
        return existing, False
    args.threads = args.threads or job_threads()
    mb = check_dictionary(base.config, args)
    code = saved_runs.new_code()
    title = f"{base.name}, layer {args.layer}"
    info = {"base_source": base_source, "base_name": base.name, "code": code, "title": title, "mb": mb}
    spec = dictionary_spec(code, base_source, args, texts, student_key(), title, info)
    return submit(jm, spec, args, title, None, base=base)
