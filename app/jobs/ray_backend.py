"""The Ray backend (BERT_EXPLORER_BACKEND=ray, RAY_ADDRESS), the side in each app replica: jobs
submitted to the Ray cluster (app/jobs/ray_actors.py) and mirrored for the pages.

Each job is a detached Ray actor named by its run code (`num_cpus=1`, or `num_gpus=1` when its
spec asks for a GPU), running the same `run_job(spec)` as the local backend in a thread of its
own and keeping its events as `to_dict()` dicts. Ray queues an actor until a worker has a free
core, so the cluster's cores are the slots. One `Registry` actor holds the class-wide caps for
every replica (one job per student, the queue length) and who owns which job; being one actor,
its methods run one at a time, so two replicas never both queue a student's second job. One
poller thread per replica mirrors its sessions' jobs into `RemoteJob`s, which the pages read as
they read a local `Job`. A job whose actor died (its machine went away) ends as "lost". The
result comes back through the run store (`BERT_EXPLORER_CACHE` on a mount every node sees).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import replace

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from bert import BertExplorerError, settings
from bert.data.corpus.fetch import bert_cache_dir

from . import budget
from .budget import LimitError
from .ray_actors import NAMESPACE, REGISTRY, JobActor, Registry, write_marker
from .remote_job import RemoteJob
from .saved_runs import CLEANUP_EVERY_S
from .spec import PRETRAIN, JobSpec
from .worker import SESSION, USER, Reaper, session_alive

log = logging.getLogger("bert_explorer")

LOST = "lost"
LOST_MESSAGE = "Lost: the machine training it went away. Start it again."
POLL_EVERY_S = 1.0
KEEP_FINISHED_S = 120.0  # a finished job nobody polled (its replica went): its actor is let go


ASK_TIMEOUT_S = 10.0  # a registry call the page waits for, at most
UNREACHABLE = (
    "The training cluster cannot be reached right now, so jobs cannot be started or followed; "
    "every other page works. Try again in a few minutes (a job that was running may be lost)."
)


class ClusterNotReady(BertExplorerError):
    """The Ray cluster cannot be used (not reachable, or its workers do not see our folder)."""


def ask(ref, timeout: float = ASK_TIMEOUT_S):
    """ray.get of a registry call a page waits for: ClusterNotReady (UNREACHABLE) when the head does
    not answer (gone, or restarting), never a hung page or Ray's own exception."""
    try:
        return ray.get(ref, timeout=timeout)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError, ray.exceptions.RaySystemError):
        raise ClusterNotReady(UNREACHABLE) from None


# ==== in each app replica (its mirror of one job: app/jobs/remote_job.py) ===========================


class RayJobs:
    """The backend the pages use in ray mode (app/jobs/backend.py's JobBackend, as the local one)."""

    def __init__(
        self,
        address: str | None = None,
        heartbeat_timeout: float = 30.0,
        session_grace_s: float = 3.0,
        max_queue: int | None = None,
        max_seconds: float | None = None,
        alive=None,
        check_marker: bool = True,
        load_base=None,
    ):
        if not ray.is_initialized():
            address = address or settings.outside("RAY_ADDRESS")
            if not address:  # ray.init() without one would start a cluster of its own, here
                raise ClusterNotReady("BERT_EXPLORER_BACKEND=ray needs RAY_ADDRESS, the Ray head's host:port.")
            try:
                ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)
            except Exception as e:  # noqa: BLE001 - said on the page, not as a traceback
                raise ClusterNotReady(f"The Ray cluster at {address} cannot be reached ({type(e).__name__}).") from None
        named = {"name": REGISTRY, "namespace": NAMESPACE, "lifetime": "detached", "get_if_exists": True}
        # on the head node, as Ray Train places its own state actor: it lives while the cluster does
        self.registry = Registry.options(**named, resources={"node:__internal_head__": 0.001}).remote()
        self.heartbeat_timeout = heartbeat_timeout
        self.session_grace_s = session_grace_s
        self.max_queue = max_queue or budget.max_queue()
        self.max_seconds = max_seconds or budget.max_job_seconds()
        # the time cap is the actor's own (app/jobs/worker.py's drive, by the worker's clock)
        self.reaper = Reaper(heartbeat_timeout, session_grace_s, alive or session_alive)
        self.load_base = load_base  # the workers' loader of base models when a submit gives none
        self._jobs: dict[str, RemoteJob] = {}
        self._pending: dict[str, object] = {}  # run code -> its outstanding poll call
        self._lock = threading.Lock()
        self.last_cleanup: dict | None = None
        if check_marker:
            self.check_shared_folder()
        self._closed = threading.Event()
        self._poller = threading.Thread(target=self._poll_loop, name="ray-jobs-poller", daemon=True)
        self._poller.start()

    # ---- the cluster ----
    @property
    def max_running(self) -> int:
        """The cluster's cores: each job takes one."""
        return int(ray.cluster_resources().get("CPU", 0)) or 1

    @staticmethod
    def _gpus_for(spec: JobSpec) -> int:
        """The GPUs a job's actor asks for: none unless the job asks for one and a node has one; a
        pre-training job up to BERT_EXPLORER_GPUS_PER_PRETRAIN, as many as one node has."""
        if not spec.gpu:
            return 0
        most = max((n["Resources"].get("GPU", 0) for n in ray.nodes() if n["Alive"]), default=0)
        want = settings.whole("BERT_EXPLORER_GPUS_PER_PRETRAIN", default=1) if spec.kind == PRETRAIN else 1
        return int(min(want, most))

    def check_shared_folder(self) -> None:
        """A worker writes a marker into our BERT_EXPLORER_CACHE: if we cannot see it, runs saved
        on the workers would never reach this replica, so ray mode refuses to start."""
        path = bert_cache_dir() / f".cluster-marker-{uuid.uuid4().hex[:8]}"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            workers = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
            if not workers:
                raise ClusterNotReady("The Ray cluster has no worker with a CPU to train on.")
            on_worker = NodeAffinitySchedulingStrategy(node_id=workers[0], soft=False)
            task = write_marker.options(runtime_env=self._env(), scheduling_strategy=on_worker)
            ray.get(task.remote(str(path)), timeout=60)
        except ClusterNotReady:
            raise
        except Exception as e:  # noqa: BLE001
            raise ClusterNotReady(f"The Ray cluster did not answer ({type(e).__name__}).") from None
        if not path.is_file():
            raise ClusterNotReady(
                f"A Ray worker cannot write to this app's folder {bert_cache_dir()}: set BERT_EXPLORER_CACHE to "
                "a folder every node mounts at the same path."
            )
        path.unlink(missing_ok=True)

    @staticmethod
    def _env() -> dict:
        """The replica's BERT_EXPLORER_* settings, the same on the worker (caps, folders)."""
        env = settings.all_set()
        env["BERT_EXPLORER_CACHE"] = str(bert_cache_dir())
        return {"env_vars": env}

    # ---- the interface ----
    def submit_spec(
        self, owner: str, spec: JobSpec, session_id: str | None = None, recorder=None, load_base=None, **_local
    ) -> tuple[RemoteJob, bool]:
        """Queue `spec` on the cluster (the page's own base model and corpus in `_local` stay here:
        a worker resolves them from the spec, the base model by `load_base`, which travels to it by
        reference; the worker records attention as `recorder` says, and the polls fill `recorder`).
        LimitError when a class-wide cap refuses it."""
        existing = self.active_of(owner, spec.kind)
        if existing is not None:
            return existing, False
        if recorder is not None:
            spec = replace(spec, probe=recorder.settings())
        refused = ask(
            self.registry.enqueue.remote(spec.code, spec.student, spec.kind, owner, self.max_queue, self.max_running)
        )
        if refused:
            raise LimitError(refused)
        options = {"name": spec.code, "namespace": NAMESPACE, "lifetime": "detached", "runtime_env": self._env()}
        gpus = self._gpus_for(spec)
        if gpus:
            options.update(num_cpus=0, num_gpus=gpus)
            spec = replace(spec, processes=gpus)  # more than one: pre-training under torchrun, a GPU each
        actor = JobActor.options(**options).remote(spec.to_dict(), self.max_seconds, load_base or self.load_base)
        job = RemoteJob(
            owner=owner,
            kind=spec.kind,
            id=spec.code,
            title=spec.title,
            student=spec.student,
            info=dict(spec.info),
            session_id=session_id,
            actor=actor,
            recorder=recorder,
        )
        with self._lock:
            self._jobs[job.id] = job
        return job, True

    def find(self, student: str, kind: str) -> str | None:
        """The run code of `student`'s active job of `kind` on any replica, or None."""
        return ask(self.registry.find.remote(student, kind))

    def reattach(self, owner: str, code: str, kind: str, session_id: str | None = None) -> RemoteJob | None:
        """Follow job `code` (started on another replica, or before a refresh) from this session."""
        try:
            actor = ray.get_actor(code, namespace=NAMESPACE)
        except ValueError:
            return None
        ask(self.registry.adopt.remote(code, owner))
        job = RemoteJob(owner=owner, kind=kind, id=code, session_id=session_id, actor=actor, title=code)
        with self._lock:
            self._jobs[code] = job
        self._poll(job, timeout=10)
        return job

    def poll(self, code: str, since: int = 0) -> tuple[list[dict], str]:
        """(events as dicts after the first `since`, state) of job `code`."""
        try:
            actor = ray.get_actor(code, namespace=NAMESPACE)
            out = ray.get(actor.poll.remote(since), timeout=10)
        except ValueError:  # no actor (any more): its follower collected it, or it never was
            return [], ask(self.registry.state_of.remote(code)) or LOST
        except ray.exceptions.GetTimeoutError:
            return [], "queued"
        except ray.exceptions.ActorUnavailableError:  # for now: its node is late, or going; asked again next time
            return [], ask(self.registry.state_of.remote(code)) or "running"
        except ray.exceptions.RayActorError:  # let go once collected (its end state is kept), or died with its node
            state = ask(self.registry.state_of.remote(code))
            return [], state if state not in (None, "queued", "running") else LOST
        return out["events"], out["state"]

    def stop(self, code: str, reason: str = USER) -> None:
        job = self._jobs.get(code)
        if job is not None:
            job.stop(reason)

    def heartbeat(self, codes: list[str]) -> None:
        self.registry.heartbeat.remote(list(codes))

    def counts(self) -> dict:
        n = ask(self.registry.counts.remote())
        return {
            **n,
            "max_running": self.max_running,
            "max_queue": self.max_queue,
            "max_minutes": self.max_seconds / 60,
        }

    # ---- what the pages call on a local manager too ----
    def active_of(self, owner: str, kind: str) -> RemoteJob | None:
        with self._lock:
            return next((j for j in self._jobs.values() if j.owner == owner and j.kind == kind and j.active), None)

    def jobs_of(self, owner: str) -> list[RemoteJob]:
        with self._lock:
            return [j for j in self._jobs.values() if j.owner == owner]

    def get(self, owner: str, job_id) -> RemoteJob | None:
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.owner == owner else None

    def queue_position(self, job: RemoteJob) -> int:
        if job.status != "queued":
            return 0
        return ask(self.registry.position.remote(job.id))

    def forget(self, job: RemoteJob) -> None:
        if job.active:
            return
        with self._lock:
            self._jobs.pop(job.id, None)
        self._let_go(job.id)

    def _let_go(self, code: str) -> None:
        self.registry.forget.remote(code)
        self._kill(code)

    @staticmethod
    def _kill(code: str) -> None:
        try:
            ray.kill(ray.get_actor(code, namespace=NAMESPACE))
        except Exception:  # noqa: BLE001 - already gone
            pass

    def reap(self, now: float | None = None) -> list[RemoteJob]:
        """One round of the reaper (app/jobs/worker.py): stop the jobs nobody follows any more;
        the registry hears of the others (a job no replica follows is stopped, `_expire`)."""
        with self._lock:
            jobs = [(j, j.session_id) for j in self._jobs.values()]
        sweep = self.reaper.sweep(jobs, now)
        if sweep.followed:
            self.heartbeat([j.id for j in sweep.followed])
        return sweep.stopped

    def cleanup(self) -> dict:
        from . import saved_runs

        self.last_cleanup = {**saved_runs.cleanup(busy=set()), "at": time.time()}
        return self.last_cleanup

    def wait(self, job: RemoteJob, timeout: float = 60.0) -> bool:
        end = time.time() + timeout
        while job.active and time.time() < end:
            time.sleep(0.05)
        return not job.active

    # ---- the poller ----
    def _poll(self, job: RemoteJob, timeout: float = 0.0) -> None:
        self._poll_all([job], timeout)

    def _poll_all(self, jobs: list[RemoteJob], timeout: float = 0.0) -> None:
        """One round: a poll call to each job's actor (one outstanding at a time: a queued actor
        answers only once it starts), then every answer that came within the round."""
        refs = {}
        with self._lock:
            for job in jobs:
                ref = self._pending.get(job.id)
                if ref is None:
                    after = job.snapshots_after if job.recorder is not None else None
                    ref = self._pending[job.id] = job.actor.poll.remote(job.seen, after)
                refs[ref] = job
        if not refs:
            return
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=max(timeout, POLL_EVERY_S / 2))
        for ref in ready:
            job = refs[ref]
            with self._lock:
                self._pending.pop(job.id, None)
            try:
                out = ray.get(ref)
            except ray.exceptions.ActorUnavailableError:
                continue  # its node is late, or going: asked again next round (a dead node's actor answers died)
            except ray.exceptions.RayActorError:  # died with its node
                if job.active:
                    job.status, job.error, job.finished = LOST, LOST_MESSAGE, time.time()
                    self.registry.set_state.remote(job.id, LOST)
                continue
            job.update(out)
            if not job.active:  # every event is here now: its actor gives its core back at once
                self.registry.collected.remote(job.id, job.owner)

    def node_of(self, job: RemoteJob) -> str | None:
        return job.node

    def wait_all(self, timeout: float = 60.0) -> bool:
        end = time.time() + timeout
        with self._lock:
            jobs = list(self._jobs.values())
        return all(self.wait(j, max(0.0, end - time.time())) for j in jobs)

    def close(self) -> None:
        """Stop this replica's poller (tests; a server keeps it for its life)."""
        self._closed.set()
        self._poller.join(timeout=5)

    def _poll_loop(self) -> None:
        last_expiry = last_cleanup = time.time()
        while not self._closed.wait(POLL_EVERY_S / 2):
            with self._lock:
                jobs = [j for j in self._jobs.values() if j.active]
            try:
                self._poll_all(jobs)
            except Exception:  # noqa: BLE001 - the poller must never die
                log.exception("polling %d jobs", len(jobs))
            try:
                self.reap()
                if time.time() - last_expiry > 60:
                    last_expiry = time.time()
                    self._expire()
                if time.time() - last_cleanup > CLEANUP_EVERY_S:  # the shared folder, as local does
                    last_cleanup = time.time()
                    self.cleanup()
            except ClusterNotReady:  # the head is away: one line a round, the pages say it
                log.warning("ray jobs watchdog: the Ray head does not answer")
            except Exception:  # noqa: BLE001
                log.exception("ray jobs watchdog")

    def _expire(self) -> None:
        """Let go what nobody will collect: finished actors after KEEP_FINISHED_S, and jobs no
        replica heartbeats any more (their replica went away): stopped, their run is kept."""
        for code in ask(self.registry.expired.remote(KEEP_FINISHED_S)):
            self._let_go(code)
        for code in ask(self.registry.unseen.remote(self.heartbeat_timeout * 4)):
            if code not in self._jobs:
                try:
                    ray.get_actor(code, namespace=NAMESPACE).stop.remote(SESSION)
                except ValueError:
                    self.registry.set_state.remote(code, LOST)


_backend: RayJobs | None = None
_backend_lock = threading.Lock()


def ray_jobs() -> RayJobs:
    """This replica's one RayJobs (connects to RAY_ADDRESS on first use)."""
    global _backend
    with _backend_lock:
        if _backend is None:
            _backend = RayJobs()
        return _backend
