"""A class at once: the real app under N concurrent sessions while fine-tuning jobs run.

    python scripts/loadtest.py                      # 20 students, 2 fine-tuning jobs (docs/DEPLOY.md's figures)
    python scripts/loadtest.py --sessions 4 --browser-sessions 1 --json out.json
    python scripts/loadtest.py --sessions 20 --browser-sessions 0 --jobs 0 --ramp 0   # pages only, all at once

What it does, only on 127.0.0.1 and bounded in count and time (every wait has a limit):

1. starts the real server (`python -m streamlit run streamlit_app.py --server.port P
   --server.headless true`, bound to 127.0.0.1) with BERT_EXPLORER_MAX_JOBS=1, and one visit
   to load the model (a teacher opening the app before class);
2. two "teacher" sessions in ONE Chromium (Debian's, driven by Playwright; one browser context
   per session) upload a labelled CSV on the Fine-tuning page and press Start, one after the
   other: the first must train, the second wait and show its place in the queue;
3. then the students arrive (`--ramp` seconds apart, default 2) and all work at once: open the
   Attention page, type a sentence with a word of their own (a different word per student),
   switch to "All heads", go to the Masked LM page (same session) and ask for a [MASK] in a
   sentence with their word. Each step is timed from the action until the page shows that
   student's answer. `--browser-sessions` of them (default 4) do it in Chromium contexts; the
   others speak Streamlit's own websocket protocol (`ProtocolPage`): the same session, script
   runs, model and plotly figures on the server, without drawing. One Chromium drawing 20
   Streamlit pages needs more processor than the server it tests (on a 2-core machine 20
   browser contexts did not finish loading in 5 minutes), which a real class does on its own
   machines;
4. checks that each student sees their own word and no other student's word (plotly data, code
   blocks, text boxes), that no page shows an exception or an error box, has a JavaScript error,
   opens a dialog or makes a request leaving localhost, and that the server log has no traceback;
5. stops the running job: the waiting one must start; then stops that one too;
6. reports p50/p95/max of the page times (per step, and for browser and protocol students), the
   server's memory (VmHWM, the kernel's peak, summed over the server process and its children,
   and the peak of the sampled VmRSS, by phase), the server's processor time per page step, how
   far the running job got meanwhile, and every error. Exit status 0 only with no error.

Page times are measured on whatever else the machine is doing (the load average is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.server import (
    HOST,
    QUIET_CHROMIUM_ARGS,
    MemoryWatch,
    app_pages,
    chromium_path,
    drawn_element,
    forward_message,
    free_port,
    is_local,
    reviews_csv,
    run_async,
    start_server,
    stop_server,
    wait_healthy,
)

ROOT = Path(__file__).resolve().parent.parent
# and every page drawn at full speed, also in the background
CHROMIUM_ARGS = QUIET_CHROMIUM_ARGS + [
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
]
# Opening a page's own URL makes Streamlit's frontend probe /<page>/_stcore/... first (404):
# streamlit/streamlit#7074, harmless (the same list as tests/browser/conftest.py).
HARMLESS = [re.compile(r"status of 404 .*/[\w-]+/_stcore/(health|host-config)"), re.compile(r"404 \(Not Found\)")]

# Words of the bert-base-uncased vocabulary, one per session; each is a whole token, so it shows
# as itself in the attention map's labels and in the filled-in sentence.
WORDS = [
    "zebra",
    "lamb",
    "elephant",
    "tiger",
    "lion",
    "penguin",
    "dolphin",
    "rabbit",
    "turtle",
    "kangaroo",
    "squirrel",
    "donkey",
    "camel",
    "monkey",
    "parrot",
    "eagle",
    "spider",
    "salmon",
    "gorilla",
    "leopard",
    "buffalo",
    "beaver",
    "owl",
    "wolf",
    "fox",
    "bear",
    "horse",
    "sheep",
    "goat",
    "pig",
    "duck",
    "goose",
    "swan",
    "frog",
    "snake",
    "lizard",
    "shark",
    "whale",
    "crab",
    "deer",
    "moose",
    "bison",
    "otter",
    "badger",
    "hawk",
    "falcon",
    "crow",
    "pigeon",
    "bee",
    "ant",
    "butterfly",
    "mosquito",
    "cow",
    "bull",
    "cat",
    "dog",
    "mouse",
    "rat",
    "chicken",
    "panda",
]

STEPS = ["open Attention", "analyse own sentence", "switch to All heads", "open Masked LM", "predict own [MASK]"]


# ==== isolation ===================================================================================


def _check_isolation(s, w: str, all_words, st: dict) -> None:
    """After the last step: the session shows its own word `w` and no other session's word (in
    the filled-in sentence without the model's «guesses», which may be any word, and the text
    boxes); marks the session done."""
    filled = " ".join(re.sub(r"«[^»]*»", " ", c) for c in st["codes"])
    s.seen_words |= _words(filled) | _words(" ".join(st["boxes"]))
    others = {x for x in all_words if x != w} & s.seen_words
    if others:
        s.errors.append(f"isolation: session of {w!r} shows other sessions' words {sorted(others)}")
    if w not in s.seen_words:
        s.errors.append(f"isolation: session of {w!r} does not show its own word")
    s.done = True


# ==== the browser ===================================================================================


def niced(exe: str, folder: Path, nice: int) -> str:
    """A wrapper that runs Chromium at a lower priority (the pipes Playwright uses survive exec)."""
    if nice <= 0 or not shutil.which("nice"):
        return exe
    wrapper = folder / "chromium-niced"
    wrapper.write_text(f'#!/bin/sh\nexec nice -n {int(nice)} "{exe}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@dataclass
class Session:
    name: str
    word: str | None = None
    times: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    seen_words: set[str] = field(default_factory=set)
    done: bool = False
    browser: bool = True


async def new_session(browser, s: Session, viewport=(1280, 900)):
    ctx = await browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, service_workers="block")

    async def route(r):
        if is_local(r.request.url):
            await r.continue_()
        else:
            s.foreign.append(r.request.url)
            await r.abort("blockedbyclient")

    await ctx.route("**/*", route)
    page = await ctx.new_page()
    page.set_default_timeout(120_000)

    def on_console(m):
        if m.type == "error":
            text = f"{m.text} @ {m.location.get('url', '')}"
            if not any(p.search(text) for p in HARMLESS):
                s.errors.append(f"console: {text[:300]}")

    page.on("console", on_console)
    page.on("pageerror", lambda e: s.errors.append(f"page error: {str(e)[:300]}"))

    async def on_dialog(d):
        s.errors.append(f"dialog: {d.type} {d.message[:100]}")
        await d.dismiss()

    page.on("dialog", on_dialog)
    return ctx, page


# state of the page as one JS call: is Streamlit idle, is there an exception or error box, and
# every string the session's answers can be read from (plotly traces and axis labels, code
# blocks, text boxes)
PAGE_STATE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const texts = [];
    for (const el of document.querySelectorAll('.js-plotly-plot')) {
        for (const t of (el.data || [])) {
            for (const k of ['x', 'y', 'text', 'customdata']) {
                const v = t[k];
                if (Array.isArray(v)) texts.push(v.flat(3).filter(x => typeof x === 'string').join(' '));
            }
        }
        const lay = el.layout || {};
        for (const ax of Object.keys(lay).filter(k => /^[xy]axis/.test(k))) {
            const a = lay[ax];
            if (a && Array.isArray(a.ticktext)) texts.push(a.ticktext.join(' '));
        }
    }
    const codes = [...document.querySelectorAll('[data-testid="stCode"]')].map(e => e.innerText);
    const boxes = [...document.querySelectorAll('textarea')].map(e => e.value);
    const errs = [...document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]')]
        .map(e => e.innerText.slice(0, 300));
    return {
        connected: app ? app.getAttribute('data-test-connection-state') : null,
        script: app ? app.getAttribute('data-test-script-state') : null,
        running: document.querySelectorAll('[data-testid="stStatusWidget"]').length > 0,
        skeleton: document.querySelectorAll('[data-testid="stAppSkeleton"]').length > 0,
        plots: document.querySelectorAll('.js-plotly-plot').length,
        plotText: texts.join(' '), codes: codes, boxes: boxes, errors: errs,
        body: (document.querySelector('[data-testid="stMainBlockContainer"]') || {innerText: ''}).innerText,
    };
}"""


async def settle(page, ready, timeout_s: float, what: str, s: Session) -> dict:
    """Poll until Streamlit is idle and `ready(state)` holds; an exception/error box is an error."""
    end = time.monotonic() + timeout_s
    st = {}
    while time.monotonic() < end:
        try:
            st = await page.evaluate(PAGE_STATE_JS)
        except Exception as e:  # noqa: BLE001 - navigation in progress
            await asyncio.sleep(0.15)
            st = {"error": str(e)}
            continue
        if st.get("errors"):
            s.errors.append(f"{what}: error on the page: {st['errors']}")
            return st
        idle = (
            st.get("connected") == "CONNECTED"
            and st.get("script") == "notRunning"
            and not st.get("running")
            and not st.get("skeleton")
        )
        if idle and ready(st):
            return st
        await asyncio.sleep(0.15)
    s.errors.append(f"{what}: timed out after {timeout_s:.0f} s (script {st.get('script')!r})")
    raise TimeoutError(what)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


async def student(
    browser, url: str, s: Session, all_words: list[str], timeout_s: float, start: asyncio.Event, delay: float = 0.0
):
    ctx, page = await new_session(browser, s)
    w = s.word
    sentence = f"The {w} crossed the road because the {w} was tired."
    masked = f"The {w} sat quietly on the [MASK] near the river."
    try:
        await start.wait()
        await asyncio.sleep(delay)
        t = time.monotonic()
        await page.goto(url + "/attention", wait_until="commit")
        await settle(
            page, lambda st: st["plots"] > 0 and "animal" in _words(st["plotText"]), timeout_s, "open Attention", s
        )
        s.times["open Attention"] = time.monotonic() - t

        box = page.get_by_role("textbox", name="Sentence A", exact=True)
        await box.fill(sentence)
        t = time.monotonic()
        await box.press("Control+Enter")
        st = await settle(page, lambda st: w in _words(st["plotText"]), timeout_s, "analyse own sentence", s)
        s.times["analyse own sentence"] = time.monotonic() - t
        s.seen_words |= _words(st["plotText"])  # the heatmap's labels: the tokens typed

        t = time.monotonic()
        await page.locator('[data-testid="stRadio"] label', has_text="All heads").first.click()
        await settle(page, lambda st: "Every head of every layer" in st["body"], timeout_s, "switch to All heads", s)
        s.times["switch to All heads"] = time.monotonic() - t

        t = time.monotonic()
        await page.locator('[data-testid="stSidebarNav"] a', has_text="Masked LM").first.click()
        await settle(
            page,
            lambda st: any("«" in c for c in st["codes"]) and any(w in _words(b) for b in st["boxes"]),
            timeout_s,
            "open Masked LM",
            s,
        )
        s.times["open Masked LM"] = time.monotonic() - t

        box = page.get_by_role("textbox", name="A sentence with [MASK] in it", exact=True)
        await box.fill(masked)
        t = time.monotonic()
        await box.press("Control+Enter")
        st = await settle(
            page, lambda st: any("«" in c and w in _words(c) for c in st["codes"]), timeout_s, "predict own [MASK]", s
        )
        s.times["predict own [MASK]"] = time.monotonic() - t
        _check_isolation(s, w, all_words, st)  # the top-k bars are left out: any word may be there
    except TimeoutError:
        pass
    except Exception as e:  # noqa: BLE001 - a broken step is an error of the run, not a crash of it
        s.errors.append(f"{type(e).__name__}: {str(e)[:300]}")
    finally:
        await ctx.close()


# ==== students without a browser: Streamlit's own websocket protocol =====================================
#
# One Chromium drawing 20 Streamlit pages needs more processor than the server it tests (each page
# parses megabytes of JavaScript and draws plotly charts): on a small machine the browsers, not the
# server, would be measured. So most students can speak Streamlit's protocol instead, exactly as the
# frontend does: a websocket to /_stcore/stream, BackMsg.rerun_script with the page and the widget
# values, ForwardMsg deltas until script_finished. The server does the same work for them (a
# session, the script run, the model, the plotly figure serialised); only the drawing is skipped.


class ProtocolPage:
    """A Streamlit session over the websocket: run the script, read what it drew."""

    def __init__(self, url: str, headers: dict[str, str] | None = None):
        self.ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.headers = headers or {}  # sent with the handshake: a Cookie, X-Forwarded-For
        self.ws = None
        self.session_id = ""  # the server's id of this session (in upload URLs)
        self.pages: dict[str, str] = {}  # url path ("" for home) -> page script hash
        self.current = ""  # the url path of the page shown
        self.elements: list[tuple[str, object]] = []
        self.widgets: dict[str, object] = {}  # widget id -> WidgetState last sent
        self.fragments: dict[str, float] = {}  # fragment id -> seconds: the page's auto-rerun fragments
        self.full_runs = 0  # whole-page runs finished (one the server began itself, st.switch_page, counts)

    async def connect(self):
        import websockets

        self.ws = await websockets.connect(
            self.ws_url,
            subprotocols=["streamlit"],
            max_size=None,
            open_timeout=120,
            ping_interval=None,
            additional_headers=self.headers,
        )

    async def close(self):
        if self.ws is not None:
            await self.ws.close()

    async def run(
        self, timeout_s: float, page: str | None = None, set_widget: tuple | None = None, fragment: str | None = None
    ) -> list:
        """Rerun (on `page`, a url path, if given) with a widget changed: (id, kind, value); with
        `fragment`, only that fragment (what the frontend sends for an auto-rerun or a widget in
        it). Returns what the run drew; a fragment's run that moved the session to another page
        (st.switch_page) returns that page's whole run."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ClientState_pb2 import ClientState
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates

        if set_widget is not None:
            wid, kind, value = set_widget
            ws = WidgetState(id=wid)
            setattr(ws, kind, value)
            self.widgets[wid] = ws
        cs = ClientState(query_string="", widget_states=WidgetStates(widgets=list(self.widgets.values())))
        if fragment is not None:
            cs.fragment_id = fragment
        self.current = self.current if page is None else page
        if self.current in self.pages:
            cs.page_script_hash = self.pages[self.current]
        else:
            cs.page_name = self.current  # the first run: the page's url path
        await self.ws.send(BackMsg(rerun_script=cs).SerializeToString())
        end = time.monotonic() + timeout_s
        elements: list = []
        frags: dict[str, float] = {}
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no script_finished")
            fm, kind = forward_message(await asyncio.wait_for(self.ws.recv(), timeout=left))
            if kind == "new_session":
                elements = []
                frags: dict[str, float] = {}
                self.session_id = fm.new_session.initialize.session_id or self.session_id
                by_hash = {h: path for path, h in self.pages.items()}
                self.current = by_hash.get(fm.new_session.page_script_hash, self.current)
            elif kind == "auto_rerun":
                frags[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            elif kind == "navigation":
                self.pages.update(app_pages(fm))
            elif (element := drawn_element(fm)) is not None:
                elements.append(element)
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                    self.elements = elements
                    self.full_runs += 1
                    self.fragments = frags  # a whole run registers every auto-rerun fragment of its page
                    return elements
                if fm.script_finished == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                    return elements
                if fm.script_finished not in (ForwardMsg.FINISHED_EARLY_FOR_RERUN,):
                    raise RuntimeError(f"script finished with status {fm.script_finished}")

    async def click(
        self, label: str, timeout_s: float, fragment: str | None = None, within: list | None = None
    ) -> list:
        """Press the button `label` (found in `within`, else the last whole run): its trigger is
        sent with one run only, as the frontend does."""
        button = self.find("button", label, within)
        if button is None:
            raise LookupError(f"no button {label!r} on the page")
        try:
            return await self.run(timeout_s, set_widget=(button.id, "trigger_value", True), fragment=fragment)
        finally:
            self.widgets.pop(button.id, None)

    async def type(self, label: str, value: str, timeout_s: float) -> list:
        """Type `value` into the text box `label` (the rerun the frontend makes on Enter)."""
        box = self.find("text_input", label) or self.find("text_area", label)
        if box is None:
            raise LookupError(f"no text box {label!r} on the page")
        return await self.run(timeout_s, set_widget=(box.id, "string_value", value))

    # --- reading what was drawn
    def find(self, kind: str, label: str | None = None, within: list | None = None):
        for k, el in self.elements if within is None else within:
            if k == kind and (label is None or getattr(el, "label", None) == label):
                return el
        return None

    def state(self, within: list | None = None) -> dict:
        """The same fields PAGE_STATE_JS reads in a browser (of `within`, else the last whole run)."""
        texts, codes, boxes, body, errors = [], [], [], [], []
        plots = 0
        for k, el in self.elements if within is None else within:
            if k == "plotly_chart":
                plots += 1
                try:
                    spec = json.loads(el.spec)
                except ValueError:
                    continue
                for t in spec.get("data", []):
                    for key in ("x", "y", "text", "customdata"):
                        texts.extend(str(v) for v in _flat(t.get(key)) if isinstance(v, str))
                for name, ax in spec.get("layout", {}).items():
                    if name.startswith(("xaxis", "yaxis")) and isinstance(ax, dict):
                        texts.extend(str(v) for v in ax.get("ticktext", []) or [])
            elif k == "code":
                codes.append(el.code_text)
            elif k == "text_area":
                boxes.append(el.value if el.set_value else el.default)
            elif k in ("markdown", "heading"):
                body.append(el.body)
            elif k == "progress":
                body.append(el.text)
            elif k == "alert":
                body.append(el.body)
                if el.format == 1:  # Alert.ERROR
                    errors.append(el.body[:300])
            elif k == "exception":
                errors.append(f"{el.type}: {el.message[:300]}")
        return {
            "plots": plots,
            "plotText": " ".join(texts),
            "codes": codes,
            "boxes": boxes,
            "body": "\n".join(body),
            "errors": errors,
        }


def _flat(v):
    if isinstance(v, list):
        for x in v:
            yield from _flat(x)
    elif v is not None:
        yield v


def student_tasks(browser, url: str, studs, words: list[str], timeout_s: float, go: asyncio.Event, ramp: float):
    """Every student's task, one arriving every `ramp` seconds: in Chromium or over the websocket."""
    return [
        asyncio.create_task(
            student(browser, url, s, words, timeout_s, go, i * ramp)
            if s.browser
            else protocol_student(url, s, words, timeout_s, go, i * ramp)
        )
        for i, s in enumerate(studs)
    ]


async def protocol_student(
    url: str, s: Session, all_words: list[str], timeout_s: float, start: asyncio.Event, delay: float = 0.0
):
    """The browser student's steps, over the websocket (see ProtocolPage)."""
    w = s.word
    sentence = f"The {w} crossed the road because the {w} was tired."
    masked = f"The {w} sat quietly on the [MASK] near the river."
    pg = ProtocolPage(url)

    async def step(name, ready, **kw):
        t = time.monotonic()
        await pg.run(timeout_s, **kw)
        st = pg.state()
        if st["errors"]:
            s.errors.append(f"{name}: error on the page: {st['errors']}")
            raise TimeoutError(name)
        if not ready(st):
            s.errors.append(f"{name}: the page did not show what was expected")
            raise TimeoutError(name)
        s.times[name] = time.monotonic() - t
        return st

    try:
        await start.wait()
        await asyncio.sleep(delay)
        t = time.monotonic()
        await pg.connect()
        await pg.run(timeout_s, page="attention")
        st = pg.state()
        if not (st["plots"] and "animal" in _words(st["plotText"])) or st["errors"]:
            s.errors.append(f"open Attention: unexpected page {st['errors'] or ''}")
            raise TimeoutError("open Attention")
        s.times["open Attention"] = time.monotonic() - t

        box = pg.find("text_area", "Sentence A")
        st = await step(
            "analyse own sentence",
            lambda st: w in _words(st["plotText"]),
            set_widget=(box.id, "string_value", sentence),
        )
        s.seen_words |= _words(st["plotText"])
        radio = pg.find("radio", "View")
        await step(
            "switch to All heads",
            lambda st: "Every head of every layer" in st["body"],
            set_widget=(radio.id, "string_value", "All heads"),
        )
        await step(
            "open Masked LM",
            lambda st: any("«" in c for c in st["codes"]) and any(w in _words(b) for b in st["boxes"]),
            page="masked_lm",
        )
        box = pg.find("text_area", "A sentence with [MASK] in it")
        st = await step(
            "predict own [MASK]",
            lambda st: any("«" in c and w in _words(c) for c in st["codes"]),
            set_widget=(box.id, "string_value", masked),
        )
        _check_isolation(s, w, all_words, st)
    except TimeoutError as e:
        if not s.errors:
            s.errors.append(f"timed out: {e}")
    except Exception as e:  # noqa: BLE001
        s.errors.append(f"{type(e).__name__}: {str(e)[:300]}")
    finally:
        await pg.close()


# ==== fine-tuning jobs =================================================================================


async def set_number(page, label: str, value) -> None:
    box = page.get_by_label(label, exact=True)
    await box.fill(str(value))
    await box.press("Enter")
    await asyncio.sleep(0.4)


QUEUED = "Waiting for a free slot"


async def open_job(browser, url: str, s: Session, csv_path: Path, timeout_s: float):
    """A session on the Fine-tuning page with the file uploaded and small settings: ready to Start."""
    ctx, page = await new_session(browser, s, viewport=(1280, 1000))
    await page.goto(url + "/finetune", wait_until="commit")
    await settle(page, lambda st: "1. Data" in st["body"], timeout_s, "open Fine-tuning", s)
    await page.locator('[data-testid="stRadio"] label', has_text="Upload a file").first.click()
    await settle(page, lambda st: "Upload a file with a text column" in st["body"], timeout_s, "choose upload", s)
    await page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(str(csv_path))
    await settle(page, lambda st: "Usable texts" in st["body"], timeout_s, "read the upload", s)
    await page.locator('[data-testid="stExpander"] summary', has_text="Model and training settings").click()
    await set_number(page, "Max tokens per text", 32)
    await set_number(page, "Epochs", 20)
    await settle(page, lambda st: True, timeout_s, "settings", s)
    return ctx, page


async def click_start(page, s: Session, timeout_s: float) -> None:
    await page.get_by_role("button", name="Start fine-tuning").click()
    await settle(
        page,
        lambda st: "Step" in st["body"] or QUEUED in st["body"] or "Preparing" in st["body"],
        timeout_s,
        "start the job",
        s,
    )


async def job_step(page) -> int | None:
    """The step the page's progress line shows ("Step 12 of 500 · …"), if any."""
    try:
        body = (await page.evaluate(PAGE_STATE_JS))["body"]
    except Exception:  # noqa: BLE001
        return None
    m = re.search(r"Step ([\d,]+) of", body)
    return int(m.group(1).replace(",", "")) if m else None


async def job_state(page) -> str:
    body = await page.evaluate(PAGE_STATE_JS)
    text = body["body"]
    if QUEUED in text:
        m = re.search(r"you are number (\d+) in the queue", text)
        return f"queued #{m.group(1) if m else '?'}"
    if "5. Results" in text and "Stop (keeps" not in text and "Stopping" not in text:
        return "finished"
    if "Stop (keeps the best model so far)" in text or "Stopping" in text:
        return "running"
    return "unknown"


async def wait_job(page, want: set[str], timeout_s: float) -> str:
    end = time.monotonic() + timeout_s
    state = ""
    while time.monotonic() < end:
        try:
            state = await job_state(page)
        except Exception:  # noqa: BLE001 - a rerun in progress
            state = "unknown"
        if any(state.startswith(w) for w in want):
            return state
        await asyncio.sleep(0.5)
    return state


# ---- the same over Streamlit's websocket protocol (the students' jobs of a course, scripts and tests)

STOP = "Stop (keeps the best model so far)"
TRAIN_BUTTONS = {  # page: its Start and Stop buttons
    "finetune": ("Start fine-tuning", STOP),
    "pretrain": ("Start pre-training", "Stop (keeps the model as it is now)"),
}
SAVED = re.compile(r"Run code \*\*(\w+)\*\*: this run is saved on the server")
LIVE_CODE = re.compile(r"Run code \*\*(\w+)\*\*: when training ends")


@dataclass
class JobRun:
    """What one student saw of their training job (fine-tuning or pre-training), page run after page run."""

    name: str
    state: str = "not started"  # queued, running, done (saved, with a run code), or what went wrong
    code: str | None = None
    steps: list[int] = field(default_factory=list)  # the distinct steps the live panel showed, in order
    queued: list[int] = field(default_factory=list)  # the places in the queue it showed
    start_s: float = 0.0  # Start pressed -> the page answered
    first_step_s: float | None = None  # Start pressed -> the first step shown
    done_s: float | None = None  # Start pressed -> the result shown
    stopped_at: int | None = None  # the step shown when Stop was pressed
    errors: list[str] = field(default_factory=list)


def _job_view(pg: ProtocolPage, job: JobRun, stop_label: str = STOP) -> None:
    """Read a training page's train and results sections into `job`."""
    st = pg.state()
    body = st["body"]
    if st["errors"]:
        job.errors.append(f"error on the page: {st['errors']}")
    m = re.search(r"Step ([\d,]+) of", body)
    if m and int(m.group(1).replace(",", "")) not in job.steps[-1:]:
        job.steps.append(int(m.group(1).replace(",", "")))
    if m := re.search(r"you are number (\d+) in the queue", body):
        job.queued.append(int(m.group(1)))
    if m := LIVE_CODE.search(body):
        job.code = m.group(1)
    running = pg.find("button", stop_label) is not None or "Stopping" in body
    if (m := SAVED.search(body)) and not running:
        job.code, job.state = m.group(1), "done"
    elif QUEUED in body:
        job.state = "queued"
    elif running:
        job.state = "running"


async def protocol_training(
    url: str,
    job: JobRun,
    timeout_s: float,
    start: asyncio.Event | None = None,
    headers: dict[str, str] | None = None,
    stop_after: int | None = None,
    settings: dict[str, str] | None = None,
    every_s: float = 2.0,
    pg: ProtocolPage | None = None,
    page: str = "finetune",
) -> ProtocolPage:
    """A student on the Fine-tuning page (or the Pre-training page, `page="pretrain"`): the default
    run (or `settings`: number box label -> value) started, the page run again every `every_s` (as
    the live panel does) until the result and its run code show; Stop pressed once the live panel
    shows step `stop_after`. Returns the open page (the caller closes it)."""
    start_label, stop_label = TRAIN_BUTTONS[page]
    pg = pg or ProtocolPage(url, headers)
    if start is not None:
        await start.wait()
    try:
        if pg.ws is None:
            await pg.connect()
        await pg.run(timeout_s, page=page)
        for label, value in (settings or {}).items():
            box = pg.find("number_input", label)
            if box is None:
                raise LookupError(f"no number box {label!r}")
            whole = box.data_type == box.INT
            await pg.run(
                timeout_s,
                set_widget=(box.id, *(("int_value", int(value)) if whole else ("double_value", float(value)))),
            )
        t0 = time.monotonic()
        await pg.click(start_label, timeout_s)
        job.start_s = time.monotonic() - t0
        end = t0 + timeout_s
        while True:
            _job_view(pg, job, stop_label)
            if job.steps and job.first_step_s is None:
                job.first_step_s = time.monotonic() - t0
            if job.errors or job.state == "done":
                break
            if time.monotonic() > end:
                job.errors.append(f"not done after {timeout_s:.0f} s (last state {job.state}, steps {job.steps[-1:]})")
                break
            if stop_after is not None and job.stopped_at is None and job.steps and job.steps[-1] >= stop_after:
                job.stopped_at = job.steps[-1]
                await pg.click(stop_label, timeout_s)
                continue
            await asyncio.sleep(every_s)
            await pg.run(timeout_s)
        if job.state == "done":
            job.done_s = time.monotonic() - t0
    except Exception as e:  # noqa: BLE001 - a broken step is an error of the run
        job.errors.append(f"{type(e).__name__}: {str(e)[:300]}")
    return pg


# ==== the run ===========================================================================================


@dataclass
class Report:
    sessions: int
    jobs: int
    completed_sessions: int = 0
    errors: list[str] = field(default_factory=list)
    steps: dict[str, dict] = field(default_factory=dict)
    all_steps: dict = field(default_factory=dict)
    browser_steps: dict = field(default_factory=dict)  # the students in Chromium (page drawn)
    protocol_steps: dict = field(default_factory=dict)  # the students over the websocket
    browser_sessions: int = 0
    baseline_threads: list = field(default_factory=list)  # the busiest threads' seconds while only the job ran
    students_threads: list = field(default_factory=list)  # ... and in the students' phase
    queue: dict = field(default_factory=dict)
    isolation_ok: bool = False
    server_rss_start_mb: float = 0.0
    server_rss_idle_mb: float = 0.0  # after the warm-up visit: the model loaded, no session
    cold_start_s: float = 0.0
    server_peak_rss_mb: float = 0.0
    server_hwm_mb: float = 0.0
    server_rss_end_mb: float = 0.0
    phases: dict = field(default_factory=dict)
    job_cpu_rate: float = 0.0  # processor seconds per second used by the server with only the job running
    job_cpu_rate_students: float = 0.0  # the training thread's share during the students' phase
    server_cpu_rate_students: float = 0.0  # the whole server's processor seconds per second then
    students_wall_s: float = 0.0
    students_cpu_s: float = 0.0  # the server's processor seconds in the students' phase, less the training thread's
    cpu_per_step_s: float = 0.0  # ... per page step
    wall_s: float = 0.0
    cpus: int = 0
    load_before: tuple = ()
    load_after: tuple = ()
    env: dict = field(default_factory=dict)
    ramp_s: float = 0.0
    url: str = ""  # an existing server's (--url): not started by the load test
    replicas: list = field(default_factory=list)  # with --url: each watched process tree's pid, VmHWM, peak RSS
    job_runs: list = field(default_factory=list)  # with --url: what each job's student saw (JobRun)

    def ok(self) -> bool:
        return not self.errors and self.completed_sessions == self.sessions and self.isolation_ok


def _pcts(xs: list[float]) -> dict:
    if not xs:
        return {"n": 0}
    xs = sorted(xs)

    def q(p):
        k = min(len(xs) - 1, max(0, int(round(p * (len(xs) - 1)))))
        return xs[k]

    return {
        "n": len(xs),
        "p50": round(statistics.median(xs), 2),
        "p95": round(q(0.95), 2),
        "max": round(xs[-1], 2),
        "mean": round(statistics.fmean(xs), 2),
    }


async def _run(args, url: str, mem: MemoryWatch, rep: Report, tmp: Path) -> None:
    exe = chromium_path()
    if exe is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium, or `make browser`)")
    csv_path = tmp / "reviews.csv"
    csv_path.write_bytes(reviews_csv())
    words = WORDS[: args.sessions]
    jobs = [Session(f"job{i + 1}") for i in range(args.jobs)]
    studs = [Session(f"student{i + 1}", word=w, browser=i < args.browser_sessions) for i, w in enumerate(words)]
    try:
        await _drive(args, url, mem, rep, tmp, exe, csv_path, words, jobs, studs)
    finally:
        _collect(args, rep, jobs, studs)


async def _drive(args, url, mem, rep, tmp, exe, csv_path, words, jobs, studs) -> None:
    from playwright.async_api import async_playwright

    timeout_s = args.step_timeout
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=niced(exe, tmp, args.nice), headless=True, args=CHROMIUM_ARGS
        )
        try:
            # --- the jobs: upload, then Start one after the other; the first trains, the rest wait
            # --- warm-up: one visit loads the model (a teacher opening the app before class)
            warm = Session("warm-up")
            ctx, page = await new_session(browser, warm)
            t = time.monotonic()
            await page.goto(url + "/attention", wait_until="commit")
            await settle(page, lambda st: st["plots"] > 0, timeout_s, "warm-up", warm)
            rep.cold_start_s = round(time.monotonic() - t, 1)
            await ctx.close()
            if warm.errors:  # reported with the jobs' sessions (after them: indices kept)
                jobs.append(warm)
            rep.server_rss_idle_mb = round(mem.rss_mb(), 1)

            mem.mark("job pages open")
            opened = await asyncio.gather(*(open_job(browser, url, j, csv_path, timeout_s) for j in jobs))
            mem.mark("jobs started")
            for (_ctx, page), j in zip(opened, jobs):
                await click_start(page, j, timeout_s)
            states = [await wait_job(p, {"running", "queued"}, 60) for _, p in opened]
            rep.queue["after start"] = states
            # what the job alone costs: processor seconds per second over a few seconds; the
            # training thread is the one thread that used most of it
            await asyncio.sleep(2)
            c0, t0, th0 = mem.cpu_s(), time.monotonic(), mem.thread_cpu()
            await asyncio.sleep(args.baseline_s)
            window = time.monotonic() - t0
            rep.job_cpu_rate = round((mem.cpu_s() - c0) / window, 2)
            deltas = {t: c - th0.get(t, 0.0) for t, c in mem.thread_cpu().items()}
            rep.baseline_threads = sorted((round(d, 2) for d in deltas.values()), reverse=True)[:6]
            busiest = max(deltas, key=deltas.get, default=None)
            job_tids = [busiest] if busiest is not None and deltas[busiest] > 0.1 * window else []

            # --- the students, all at once
            step0 = await job_step(opened[0][1]) if opened else None
            mem.mark("students")
            go = asyncio.Event()
            tasks = student_tasks(browser, url, studs, words, timeout_s, go, args.ramp)
            await asyncio.sleep(0.2)
            c0, t0, th0 = mem.cpu_s(), time.monotonic(), mem.thread_cpu()
            go.set()
            try:
                await asyncio.wait_for(asyncio.gather(*tasks), timeout=args.max_seconds)
            finally:
                wall = time.monotonic() - t0
                th1 = mem.thread_cpu()
                job_cpu = sum(th1.get(t, 0.0) - th0.get(t, 0.0) for t in job_tids)
                rep.students_wall_s = round(wall, 1)
                rep.students_cpu_s = round(mem.cpu_s() - c0 - job_cpu, 1)
                rep.job_cpu_rate_students = round(job_cpu / wall, 2)
                rep.server_cpu_rate_students = round((mem.cpu_s() - c0) / wall, 2)
                n = sum(len(s.times) for s in studs)
                rep.cpu_per_step_s = round(rep.students_cpu_s / n, 3) if n else 0.0
            mem.mark("stopping jobs")
            if opened:
                rep.queue["job1 steps during the students' phase"] = [step0, await job_step(opened[0][1])]
            th2 = mem.thread_cpu()
            rep.students_threads = sorted((round(c - th0.get(t, 0.0), 1) for t, c in th2.items()), reverse=True)[:6]
            rep.queue["after students"] = [await job_state(p) for _, p in opened]

            # --- the queue: stop the running job; the waiting one starts; stop that too
            order = list(range(len(opened)))
            for k in order:
                _, page = opened[k]
                st = await wait_job(page, {"running"}, args.job_wait)
                rep.queue[f"job{k + 1} ran"] = st
                if st != "running":
                    jobs[k].errors.append(f"job{k + 1} never ran (state {st!r}): the queue did not move")
                    continue
                await page.get_by_role("button", name="Stop (keeps the best model so far)").click()
                end_state = await wait_job(page, {"finished"}, args.job_wait)
                rep.queue[f"job{k + 1} after Stop"] = end_state
                if end_state != "finished":
                    jobs[k].errors.append(f"job{k + 1} did not finish after Stop within {args.job_wait:.0f} s")
            for ctx, _ in opened:
                await ctx.close()
        finally:
            await browser.close()


def _collect(args, rep: Report, jobs: list[Session], studs: list[Session]) -> None:
    if args.jobs >= 2 and not args.url:  # against a server of its own: the browser's queue
        first = rep.queue.get("after start", [])
        if not (first and first[0] == "running" and all(s.startswith("queued") for s in first[1:])):
            rep.errors.append(f"queue: expected the first job running and the others queued, got {first}")
        if any(s.startswith("queued") for s in first[1:]) and "queued #1" not in first[1:]:
            rep.errors.append(f"queue: the waiting job did not show its place, got {first}")
    for s in studs + jobs:
        rep.errors += [f"{s.name}: {e}" for e in s.errors]
        rep.errors += [f"{s.name}: request left localhost: {u}" for u in s.foreign]
    rep.completed_sessions = sum(s.done for s in studs)
    rep.isolation_ok = rep.completed_sessions == len(studs) and not any(
        "isolation" in e for s in studs for e in s.errors
    )
    for step in STEPS:
        rep.steps[step] = _pcts([s.times[step] for s in studs if step in s.times])
    rep.all_steps = _pcts([t for s in studs for t in s.times.values()])
    rep.browser_steps = _pcts([t for s in studs if s.browser for t in s.times.values()])
    rep.protocol_steps = _pcts([t for s in studs if not s.browser for t in s.times.values()])


# run()'s numbers, each also a command-line option (its help adds the default): keyword -> (type, default, help).
RUN_OPTIONS = {
    "sessions": (int, 20, "concurrent student sessions"),
    "jobs": (int, 2, "fine-tuning jobs submitted"),
    "browser_sessions": (int, 4, "students using Chromium; the others speak Streamlit's websocket (see ProtocolPage)"),
    "max_jobs": (int, 1, "BERT_EXPLORER_MAX_JOBS of the server"),
    "ramp": (float, 2.0, "seconds between two students' arrivals, then all work at once; 0: all at one instant"),
    "max_seconds": (float, 900, "bound on the students' phase"),
    "step_timeout": (float, 300, "bound on one page step"),
    "job_wait": (float, 240, "bound on each job's start/finish"),
    "nice": (int, 0, "Chromium's niceness, so the server gets the processor first (on a busy machine it starves)"),
}


def run(
    env: dict | None = None,
    log_dir: Path | None = None,
    url: str | None = None,
    pids: list[int] | None = None,
    server_logs: list[Path] | None = None,
    baseline_s: float | None = None,
    **options,
) -> Report:
    """The load test against a server it starts, or with `url` against one that runs (e.g.
    HAProxy in front of replicas: `pids` are the processes whose trees' memory is watched,
    `server_logs` the logs checked for tracebacks). options: RUN_OPTIONS' numbers by keyword
    (sessions, jobs, ...), each at its default there when not given. `baseline_s`: how long the
    job's own processor use is measured before the students come (default 8 s with jobs, else 2 s)."""
    unknown = sorted(set(options) - set(RUN_OPTIONS))
    if unknown:
        raise TypeError(f"run() takes no option {', '.join(unknown)}; options: {', '.join(RUN_OPTIONS)}")
    o = {name: options.get(name, default) for name, (_, default, _) in RUN_OPTIONS.items()}
    if o["sessions"] > len(WORDS):
        raise ValueError(f"at most {len(WORDS)} sessions (one distinct word each)")
    o["browser_sessions"] = max(0, min(o["browser_sessions"], o["sessions"]))
    args = argparse.Namespace(
        **o, baseline_s=baseline_s if baseline_s is not None else (8.0 if o["jobs"] else 2.0), url=url
    )
    env_extra = {"BERT_EXPLORER_MAX_JOBS": str(args.max_jobs), **(env or {})}
    rep = Report(
        sessions=args.sessions,
        jobs=args.jobs,
        cpus=os.cpu_count() or 0,
        load_before=os.getloadavg(),
        env=env_extra,
        ramp_s=args.ramp,
        browser_sessions=args.browser_sessions,
    )
    if url is not None:
        rep.url, rep.env = url, env or {}
        return _run_at(args, rep, url.rstrip("/"), list(pids or []), [Path(p) for p in server_logs or []])
    port = free_port()
    url = f"http://{HOST}:{port}"
    with tempfile.TemporaryDirectory(prefix="bert-loadtest-") as d:
        tmp = Path(d)
        log_path = (Path(log_dir) if log_dir else tmp) / "loadtest-server.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        proc = start_server(port, log_path, env_extra)
        mem = MemoryWatch(proc.pid)
        try:
            wait_healthy(proc, url)
            mem.start()
            mem.mark("server started")
            rep.server_rss_start_mb = round(mem.rss_mb(), 1)
            try:
                run_async(_run(args, url, mem, rep, tmp))
            except TimeoutError:
                rep.errors.append(f"the run did not end within {args.max_seconds:.0f} s")
            except Exception as e:  # noqa: BLE001
                rep.errors.append(f"the run failed: {type(e).__name__}: {str(e)[:300]}")
            rep.server_hwm_mb = round(mem.hwm_mb(), 1)
            rep.server_rss_end_mb = round(mem.rss_mb(), 1)
        finally:
            mem.stop()
            stop_server(proc)
        rep.server_peak_rss_mb = round(mem.peak_kb / 1024, 1)
        rep.phases = mem.phases()
        rep.wall_s = round(time.monotonic() - t0, 1)
        rep.load_after = os.getloadavg()
        logged = log_path.read_text(errors="replace")
        tracebacks = logged.count("Traceback (most recent call last)")
        if tracebacks:
            rep.errors.append(f"the server log has {tracebacks} traceback(s): {log_path}")
    return rep


# ---- against a server that runs (--url): every student and job over the websocket, jobs to the end


def _run_at(args, rep: Report, url: str, pids: list[int], logs: list[Path]) -> Report:
    t0 = time.monotonic()
    watches = [MemoryWatch(p).start() for p in pids]
    sizes = {p: p.stat().st_size if p.is_file() else 0 for p in logs}
    try:
        for w in watches:
            w.mark("start")
        with tempfile.TemporaryDirectory(prefix="bert-loadtest-") as d:
            try:
                run_async(_drive_at(args, rep, url, watches, Path(d)))
            except TimeoutError:
                rep.errors.append(f"the run did not end within {args.max_seconds:.0f} s")
            except Exception as e:  # noqa: BLE001
                rep.errors.append(f"the run failed: {type(e).__name__}: {str(e)[:300]}")
        rep.replicas = [
            {"pid": w.pid, "hwm_mb": round(w.hwm_mb(), 1), "peak_rss_mb": round(w.peak_kb / 1024, 1)} for w in watches
        ]
    finally:
        for w in watches:
            w.stop()
    if watches:
        rep.server_hwm_mb = max(r["hwm_mb"] for r in rep.replicas)
        rep.server_peak_rss_mb = max(r["peak_rss_mb"] for r in rep.replicas)
        rep.server_rss_end_mb = round(max(w.rss_mb() for w in watches), 1)
    rep.wall_s = round(time.monotonic() - t0, 1)
    rep.load_after = os.getloadavg()
    for p in logs:
        with open(p, "rb") as f:
            f.seek(sizes[p])
            n = f.read().count(b"Traceback (most recent call last)")
        if n:
            rep.errors.append(f"{p} has {n} new traceback(s)")
    return rep


async def _drive_at(args, rep: Report, url: str, watches: list[MemoryWatch], tmp: Path) -> None:
    words = WORDS[: args.sessions]
    studs = [Session(f"student{i + 1}", word=w, browser=i < args.browser_sessions) for i, w in enumerate(words)]
    jobs = [JobRun(f"job{i + 1}") for i in range(args.jobs)]
    timeout_s = args.step_timeout

    def cpu() -> float:
        return sum(w.cpu_s() for w in watches)

    # --- warm-up: one visit per watched replica at once (the proxy spreads open connections)
    t = time.monotonic()
    pages = [ProtocolPage(url) for _ in range(max(1, len(watches)))]
    try:
        await asyncio.gather(*(p.connect() for p in pages))
        await asyncio.gather(*(p.run(timeout_s, page="attention") for p in pages))
    finally:
        await asyncio.gather(*(p.close() for p in pages))
    rep.cold_start_s = round(time.monotonic() - t, 1)
    rep.server_rss_idle_mb = round(max((w.rss_mb() for w in watches), default=0.0), 1)

    # --- the jobs: each student's default fine-tuning run, started at once, followed to its result
    go_jobs = asyncio.Event()
    job_tasks = [asyncio.create_task(protocol_training(url, j, args.job_wait, go_jobs)) for j in jobs]
    go_jobs.set()
    for w in watches:
        w.mark("jobs started")
    await asyncio.sleep(2)

    # --- the students, all at once (those in Chromium only when asked for)
    browser = pw_ctx = None
    if any(s.browser for s in studs):
        from playwright.async_api import async_playwright

        exe = chromium_path()
        if exe is None:
            raise RuntimeError("Chromium is not installed (apt-get install chromium, or `make browser`)")
        pw_ctx = async_playwright()
        pw = await pw_ctx.__aenter__()
        browser = await pw.chromium.launch(
            executable_path=niced(exe, tmp, args.nice), headless=True, args=CHROMIUM_ARGS
        )
    try:
        for w in watches:
            w.mark("students")
        go = asyncio.Event()
        tasks = student_tasks(browser, url, studs, words, timeout_s, go, args.ramp)
        c0, t0 = cpu(), time.monotonic()
        go.set()
        try:
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=args.max_seconds)
        finally:
            rep.students_wall_s = round(time.monotonic() - t0, 1)
            rep.students_cpu_s = round(cpu() - c0, 1)
            rep.server_cpu_rate_students = round(rep.students_cpu_s / max(rep.students_wall_s, 1e-9), 2)
            n = sum(len(s.times) for s in studs)
            rep.cpu_per_step_s = round(rep.students_cpu_s / n, 3) if n else 0.0
        for w in watches:
            w.mark("jobs to their end")
        pages = await asyncio.wait_for(asyncio.gather(*job_tasks), timeout=args.job_wait + 60)
        for p in pages:
            await p.close()
    finally:
        if browser is not None:
            await browser.close()
            await pw_ctx.__aexit__(None, None, None)
        _collect(args, rep, [], studs)
        rep.phases = {k: v for w in watches[:1] for k, v in w.phases().items()}
        rep.job_runs = [asdict(j) for j in jobs]
        rep.queue = {"jobs": [j.state for j in jobs], "done": sum(j.state == "done" for j in jobs)}
        for j in jobs:
            rep.errors += [f"{j.name}: {e}" for e in j.errors]
            if j.state != "done" and not j.errors:
                rep.errors.append(f"{j.name}: ended {j.state!r}, not done")


def markdown(rep: Report) -> str:
    lines = [
        f"Load test: {rep.sessions} sessions through Attention and Masked LM while "
        f"{rep.jobs} fine-tuning job(s) were submitted (BERT_EXPLORER_MAX_JOBS="
        f"{rep.env.get('BERT_EXPLORER_MAX_JOBS')}); one student arrived every {rep.ramp_s:g} s; "
        f"{rep.cpus} CPUs, load average before "
        f"{rep.load_before[0]:.1f}, after {rep.load_after[0]:.1f}; {rep.wall_s:.0f} s in all.",
        "",
        "| step | n | p50 (s) | p95 (s) | max (s) |",
        "|---|---|---|---|---|",
    ]
    for step, p in list(rep.steps.items()) + [
        ("all steps", rep.all_steps),
        (f"all steps, {rep.browser_sessions} in Chromium", rep.browser_steps),
        (f"all steps, {rep.sessions - rep.browser_sessions} over the websocket", rep.protocol_steps),
    ]:
        if p.get("n"):
            lines.append(f"| {step} | {p['n']} | {p['p50']:.2f} | {p['p95']:.2f} | {p['max']:.2f} |")
    lines += [
        "",
        f"- sessions completed: {rep.completed_sessions} of {rep.sessions}; each saw only its "
        f"own word: {'yes' if rep.isolation_ok else 'NO'}",
        f"- queue: {json.dumps(rep.queue)}",
        f"- server memory (RSS): {rep.server_rss_start_mb:.0f} MB at start, "
        f"{rep.server_rss_idle_mb:.0f} MB with the model loaded (first visit {rep.cold_start_s:.0f} s), "
        f"peak {rep.server_peak_rss_mb:.0f} MB "
        f"(sampled) / {rep.server_hwm_mb:.0f} MB (VmHWM), {rep.server_rss_end_mb:.0f} MB at the end",
        "- memory by phase (peak / last, MB): "
        + "; ".join(f"{k} {v['peak_mb']:.0f} / {v['last_mb']:.0f}" for k, v in rep.phases.items()),
        f"- server processor time: with only the job {rep.job_cpu_rate:.2f} s/s; during the students' "
        f"phase the server got {rep.server_cpu_rate_students:.2f} s/s (the training thread "
        f"{rep.job_cpu_rate_students:.2f}); serving the sessions took {rep.students_cpu_s:.1f} s of "
        f"processor in {rep.students_wall_s:.0f} s: {rep.cpu_per_step_s:.2f} s per page step",
        f"- errors: {len(rep.errors)}",
    ]
    if rep.url:
        lines[0] = (
            f"Load test against {rep.url}: {rep.sessions} sessions through Attention and Masked LM while "
            f"{rep.jobs} students each ran the default fine-tuning to its end; one student arrived every "
            f"{rep.ramp_s:g} s; {rep.cpus} CPUs, load average before {rep.load_before[0]:.1f}, after "
            f"{rep.load_after[0]:.1f}; {rep.wall_s:.0f} s in all."
        )
        lines[-1:-1] = [
            "- each replica's process tree, peak (VmHWM, summed over its processes): "
            + "; ".join(
                f"pid {r['pid']} {r['hwm_mb']:.0f} MB (sampled RSS {r['peak_rss_mb']:.0f})" for r in rep.replicas
            ),
            f"- jobs done: {rep.queue.get('done', 0)} of {rep.jobs}: "
            + "; ".join(
                f"{j['name']} {j['state']} {j['code'] or ''} after {j['done_s'] or 0:.0f} s "
                f"({len(j['steps'])} live updates, queued at {j['queued'][:1] or '-'})"
                for j in rep.job_runs
            ),
        ]
    lines += [f"  - {e}" for e in rep.errors[:30]]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, (kind, default, text) in RUN_OPTIONS.items():
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=default, help=f"{text} (default {default})")
    p.add_argument("--torch-threads", type=int, default=0, help="OMP_NUM_THREADS of the server (0: torch's default)")
    p.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable for the server (repeatable), e.g. MALLOC_ARENA_MAX=2",
    )
    p.add_argument("--json", type=Path, help="also write the report as JSON here")
    p.add_argument("--log-dir", type=Path, help="keep the server log here")
    at = p.add_argument_group(
        "an existing server (e.g. scripts/cluster_local.sh's HAProxy): no server is started, every student "
        "and job speaks the websocket protocol unless --browser-sessions, and each job runs to its end"
    )
    at.add_argument("--url", help="the address students open, e.g. http://127.0.0.1:8500")
    at.add_argument("--pids", default="", help="comma-separated server pids whose process trees' memory is watched")
    at.add_argument("--server-log", type=Path, action="append", default=[], help="a server log to check (repeatable)")
    at.add_argument(
        "--cluster-state",
        type=Path,
        help="scripts/cluster_local.sh's state.env: --url, --pids and --server-log from it (its PROXY_URL, "
        "REPLICA_PIDS, logs/replica*.log)",
    )
    a = p.parse_args(argv)
    env = {"OMP_NUM_THREADS": str(a.torch_threads)} if a.torch_threads else {}
    env.update(kv.split("=", 1) for kv in a.server_env)
    url, pids, logs = a.url, [int(x) for x in a.pids.split(",") if x.strip()], a.server_log
    if a.cluster_state:
        state = dict(line.split("=", 1) for line in a.cluster_state.read_text().splitlines() if "=" in line)
        url = url or state["PROXY_URL"]
        pids = pids or [int(x) for x in state["REPLICA_PIDS"].strip('"').split()]
        logs = logs or sorted((a.cluster_state.parent / "logs").glob("replica*.log"))
    rep = run(
        **{name: getattr(a, name) for name in RUN_OPTIONS},
        env=env,
        log_dir=a.log_dir,
        url=url,
        pids=pids,
        server_logs=logs,
    )
    print(markdown(rep))
    if a.json:
        a.json.write_text(json.dumps(asdict(rep), indent=2, default=list) + "\n")
    return 0 if rep.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
