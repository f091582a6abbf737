"""A class led by its teacher, under load: students following the teacher's page and view and
answering one question while fine-tuning jobs run (the load-test row of docs/DEPLOY.md).

    python scripts/class_loadtest.py                              # 30 students, 2 jobs: docs/DEPLOY.md's row
    python scripts/class_loadtest.py --students 3 --jobs 0 --changes 2 --json out.json   # a quick one

Only on 127.0.0.1 and bounded (every wait has a limit; it stops by itself):
1. starts the real server (BERT_EXPLORER_BOARD=1, a teacher key, MAX_JOBS=1; the cache folder
   `make data` filled, where its board gets one more class);
2. `--jobs` sessions start the default fine-tuning run (the first trains, the others queue) and
   follow it to its end as the live panel does (scripts/loadtest.py protocol_training);
3. the teacher, over Streamlit's websocket protocol (scripts/loadtest.py ProtocolPage), unlocks
   the server's teacher key, starts a board and ticks "Lead the class"; the students join with the
   class code and tick "Follow the teacher", and then each polls the class panel once a second,
   as the browser's auto-rerun of that fragment does;
4. the teacher changes page or view `--changes` times, `--gap` seconds apart; a follower's
   latency is from the teacher's run finishing to the follower's own run of the new view
   finishing (the page it computed on its session);
5. the teacher asks the [MASK] question, each student answers (the time from pressing Answer to
   seeing it taken), the teacher's chart must count every answer, the teacher reveals, and each
   student must see the model's answer;
6. reports p50/p95/max of the follow latencies and answer times, the server's peak memory (VmHWM
   over its process tree), the jobs' ends and every error (an error box, an exception, a page
   that never came, a traceback in the server log). Exit status 0 only with no error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import loadtest as lt  # noqa: E402 - scripts/ is not a package: its sibling, by path

TEACHER_KEY = "a load test's teacher key"
CHANGES = [("page", "attention"), ("view", "All heads"), ("page", "masked_lm"), ("page", "tokenization")]
DEBUG = bool(__import__("os").environ.get("CLASS_LOADTEST_DEBUG"))
POLL_S = 1.0  # the class panel's auto-rerun (app/board/class_panel.py POLL_S)


def pct(xs: list[float]) -> dict:
    xs = sorted(xs)
    if not xs:
        return {}
    return {
        "n": len(xs),
        **{f"p{q}": round(xs[min(len(xs) - 1, int(q / 100 * len(xs)))], 3) for q in (50, 95)},
        "max": round(xs[-1], 3),
    }


def panel_fragment(pg) -> str | None:
    """The class panel's fragment: the page's auto-rerun fragment of POLL_S seconds."""
    return next((f for f, every in pg.fragments.items() if abs(every - POLL_S) < 1e-6), None)


def body_of(elements) -> str:
    return "\n".join(el.body for k, el in elements if k in ("markdown", "alert", "heading"))


def page_errors(pg, elements) -> list[str]:
    return pg.state(elements)["errors"]


class Follower:
    def __init__(self, url: str, name: str, timeout_s: float):
        self.pg = lt.ProtocolPage(url)
        self.name = name
        self.timeout_s = timeout_s
        self.moves: list[float] = []  # when each whole run the teacher's lead began finished
        self.errors: list[str] = []
        self.answer_s: float | None = None
        self.saw_reveal = False
        self.polling = True
        self.last: list = []

    async def join(self, code: str) -> None:
        pg = self.pg
        await pg.connect()
        await pg.run(self.timeout_s, page="")
        await pg.type("Code of your class", code, self.timeout_s)
        await pg.click("Join the class", self.timeout_s)
        toggle = pg.find("checkbox", "Follow the teacher")
        if toggle is None:
            raise LookupError(f"{self.name}: no 'Follow the teacher' after joining: {body_of(pg.elements)[:300]}")
        await pg.run(self.timeout_s, set_widget=(toggle.id, "bool_value", True))
        self.base = pg.full_runs

    async def poll(self) -> None:
        """Once a second, as the browser: the class panel's fragment; a whole run it began (the
        teacher moved, a question changed) is noted."""
        while self.polling:
            t = time.monotonic()
            runs = self.pg.full_runs
            frag = panel_fragment(self.pg)
            try:
                self.last = await self.pg.run(self.timeout_s, fragment=frag) if frag else self.last
            except Exception as e:  # noqa: BLE001 - a poll that fails is an error of the run
                self.errors.append(f"poll: {type(e).__name__}: {str(e)[:200]}")
                return
            if self.pg.full_runs > runs:
                self.moves.append(time.monotonic())
            if DEBUG:
                print(self.name, self.pg.current, self.pg.full_runs, frag, body_of(self.last)[:80].replace("\n", " "))
            errs = page_errors(self.pg, self.last)
            if errs:
                self.errors.append(f"error on the page: {errs}")
                return
            await asyncio.sleep(max(0.0, POLL_S - (time.monotonic() - t)))

    async def answer(self, text: str) -> None:
        pg = self.pg
        end = time.monotonic() + self.timeout_s
        while pg.find("text_input", "Your answer", self.last) is None:
            if time.monotonic() > end:
                self.errors.append("the question never showed")
                return
            await asyncio.sleep(0.2)
        self.polling = False
        await asyncio.sleep(POLL_S)  # the poll in flight ends
        box = pg.find("text_input", "Your answer", self.last)
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        pg.widgets[box.id] = WidgetState(id=box.id, string_value=text)
        t = time.monotonic()
        got = await pg.click("Answer", self.timeout_s, fragment=panel_fragment(pg), within=self.last)
        if f"Your answer: **{text}**" not in body_of(got):
            self.errors.append(f"the answer was not taken: {body_of(got)[:300]}")
        self.answer_s = time.monotonic() - t
        self.last = got


async def teacher_step(pg, change, timeout_s: float) -> None:
    kind, what = change
    if kind == "page":
        await pg.run(timeout_s, page=what)
        return
    radio = pg.find("radio", "View")
    await pg.run(timeout_s, set_widget=(radio.id, "string_value", what))


async def drive(args, url: str, rep: dict) -> None:
    t_out = args.timeout
    jobs = [lt.JobRun(f"job{i + 1}") for i in range(args.jobs)]
    go = asyncio.Event()
    job_tasks = [asyncio.create_task(lt.protocol_training(url, j, args.job_wait, go)) for j in jobs]
    go.set()

    teacher = lt.ProtocolPage(url)
    await teacher.connect()
    await teacher.run(t_out, page="board")
    await teacher.type("Teacher key", TEACHER_KEY, t_out)
    await teacher.click("Unlock", t_out)
    await teacher.click("Start a board", t_out)
    code = next(el.body.split()[-1] for k, el in teacher.elements if k == "heading" and el.body.startswith("Board "))
    students = [Follower(url, f"student{i + 1}", t_out) for i in range(args.students)]
    for i in range(0, len(students), 10):  # they arrive ten at a time
        await asyncio.gather(*(s.join(code) for s in students[i : i + 10]))
    lead = teacher.find("checkbox", "Lead the class")
    await teacher.run(t_out, set_widget=(lead.id, "bool_value", True))
    polls = [asyncio.create_task(s.poll()) for s in students]

    await asyncio.sleep(args.gap)
    changed: list[float] = []
    for change in (CHANGES * 4)[: args.changes]:
        await teacher_step(teacher, change, t_out)
        changed.append(time.monotonic())
        rep["jobs_at_changes"].append([j.state for j in jobs])  # training (or queued) while the class follows
        await asyncio.sleep(args.gap)
    latencies = []
    for s in students:
        moves = [m for m in s.moves]
        for k, t in enumerate(changed):
            after = [m - t for m in moves if m > t - POLL_S]
            if not after or (k + 1 < len(changed) and after[0] > changed[k + 1] - t):
                s.errors.append(f"did not follow change {k + 1} ({(CHANGES * 4)[k]})")
                continue
            latencies.append(max(0.0, after[0]))
            moves = [m for m in moves if m - t > after[0]]
        if s.pg.current != teacher.current:
            s.errors.append(f"on {s.pg.current!r}, the teacher on {teacher.current!r}")
    rep["follow_latency_s"] = pct(latencies)

    # predict, then reveal
    await teacher.click("Ask", t_out)
    word = "are"  # any answer: the test is the class's answers counted, not who was right
    await asyncio.gather(*(s.answer(word) for s in students))
    end = time.monotonic() + t_out
    want = f"{len(students)} answer(s) so far."
    shown = ""
    while time.monotonic() < end and want not in shown:
        frag = panel_fragment(teacher)
        shown = body_of(await teacher.run(t_out, fragment=frag))
        await asyncio.sleep(POLL_S)
    if want not in shown:
        rep["errors"].append(f"the teacher's panel did not count {len(students)} answers: {shown[:300]}")
    else:
        await teacher.click("Reveal the model's answer", t_out, fragment=panel_fragment(teacher), within=None)
    for s in students:
        s.polling = True
    polls += [asyncio.create_task(s.poll()) for s in students]
    end = time.monotonic() + t_out
    while time.monotonic() < end and not all("says:" in body_of(s.pg.elements) for s in students):
        await asyncio.sleep(0.5)
    for s in students:
        s.polling = False
        if "says:" not in body_of(s.pg.elements):
            s.errors.append("never saw the reveal")
    await asyncio.gather(*polls)
    rep["answer_s"] = pct([s.answer_s for s in students if s.answer_s is not None])
    pages = await asyncio.wait_for(asyncio.gather(*job_tasks), timeout=args.job_wait + 60)
    for p in [*pages, teacher, *(s.pg for s in students)]:
        await p.close()
    rep["jobs"] = [{"state": j.state, "steps": j.steps[-1:], "errors": j.errors} for j in jobs]
    for j in jobs:
        rep["errors"] += [f"{j.name}: {e}" for e in j.errors]
        if j.state != "done" and not j.errors:
            rep["errors"].append(f"{j.name}: ended {j.state!r}, not done")
    for s in students:
        rep["errors"] += [f"{s.name}: {e}" for e in s.errors]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--changes", type=int, default=3)
    ap.add_argument("--gap", type=float, default=6.0, help="seconds between the teacher's changes")
    ap.add_argument("--timeout", type=float, default=120.0, help="the longest one page run may take")
    ap.add_argument("--job-wait", type=float, default=900.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rep: dict = {
        "students": args.students,
        "jobs": args.jobs,
        "changes": args.changes,
        "errors": [],
        "jobs_at_changes": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        port = lt.free_port()
        log = Path(tmp) / "server.log"
        env = {
            "BERT_EXPLORER_BOARD": "1",
            "BERT_EXPLORER_TEACHER_KEY": TEACHER_KEY,
            "BERT_EXPLORER_MAX_JOBS": "1",
        }
        proc = lt.start_server(port, log, env)
        url = f"http://{lt.HOST}:{port}"
        try:
            lt.wait_healthy(proc, url)
            watch = lt.MemoryWatch(proc.pid)
            watch.start()
            t0 = time.monotonic()
            try:
                lt.run_async(asyncio.wait_for(drive(args, url, rep), timeout=args.job_wait + 600))
            except Exception as e:  # noqa: BLE001 - reported, exit status 1
                rep["errors"].append(f"{type(e).__name__}: {str(e)[:300]}")
            rep["wall_s"] = round(time.monotonic() - t0, 1)
            watch.stop()
            rep["server_peak_mb"] = round(watch.hwm_mb(), 1)
        finally:
            lt.stop_server(proc)
        text = log.read_text(errors="replace")
        n = text.count("Traceback (most recent call last)")
        if n:
            first = text[text.index("Traceback (most recent call last)") :]
            raised = [ln for ln in first.splitlines()[1:200] if ln and not ln.startswith(" ")]
            first = raised[0] if raised else first[:300]  # what was raised
            rep["errors"].append(f"the server log has {n} traceback(s); the first: {first}")
    print(json.dumps(rep, indent=1))
    if args.json:
        args.json.write_text(json.dumps(rep, indent=1))
    return 0 if not rep["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
