"""Students pasting long new texts into the Attention page, against a real server: each session
(Streamlit's websocket protocol, as a browser speaks it) opens Attention, then sends one new
2,000-character Sentence A after another until its time is up; every text is new, so every step
is a full 512-token analysis. Reported: the server's peak memory (VmHWM of its process tree),
its memory at the end, the page steps' times, the server's processor time, and every error.

    python -m benchmarks.paste_load                       # 10 students for 60 s
    python -m benchmarks.paste_load --sessions 4 --seconds 30 --json out.json

The bench row `load-paste-10` is this with its defaults; a test runs a short version of it.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import string
import tempfile
import time
from pathlib import Path

from . import server
from .report import script_parser, write_json

TEXT_CHARS = 2000  # the text boxes' cap
BOX = "Sentence A"
STEP_TIMEOUT_S = 180.0


def long_text(seed: int, chars: int = TEXT_CHARS) -> str:
    """`chars` characters of made-up words (3 to 8 letters: several word pieces each, so well
    over the model's 512 tokens), different for every seed."""
    rng = random.Random(seed)
    words: list[str] = []
    n = 0
    while n < chars:
        w = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8)))
        words.append(w)
        n += len(w) + 1
    return " ".join(words)[:chars]


class Student:
    """One session on the Attention page over the websocket."""

    def __init__(self, url: str):
        self.url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.pages: dict[str, str] = {}
        self.widgets: dict = {}
        self.elements: list = []

    async def connect(self) -> None:
        import websockets

        self.ws = await websockets.connect(
            self.url, subprotocols=["streamlit"], max_size=None, ping_interval=None, open_timeout=120
        )

    async def close(self) -> None:
        await self.ws.close()

    async def run(self, page: str = "attention") -> list:
        """One whole run of `page` with the widgets' values; what it drew. Raises on a run that
        ended otherwise than successfully."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ClientState_pb2 import ClientState
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetStates

        cs = ClientState(widget_states=WidgetStates(widgets=list(self.widgets.values())))
        if page in self.pages:
            cs.page_script_hash = self.pages[page]
        else:
            cs.page_name = page
        await self.ws.send(BackMsg(rerun_script=cs).SerializeToString())
        end = time.monotonic() + STEP_TIMEOUT_S
        elements: list = []
        while True:
            fm, kind = server.forward_message(await asyncio.wait_for(self.ws.recv(), max(0.1, end - time.monotonic())))
            if kind == "new_session":
                elements = []
            elif kind == "navigation":
                self.pages.update(server.app_pages(fm))
            elif (element := server.drawn_element(fm)) is not None:
                elements.append(element)
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                    self.elements = elements
                    return elements
                if fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    raise RuntimeError(f"script finished with status {fm.script_finished}")

    async def paste(self, text: str) -> None:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        box = next((e for k, e in self.elements if k == "text_area" and e.label == BOX), None)
        if box is None:
            raise LookupError(f"no text box {BOX!r} on the page")
        self.widgets[box.id] = WidgetState(id=box.id, string_value=text)
        elements = await self.run()
        problems = [e.body[:200] for k, e in elements if k == "alert" and e.format == 1]  # Alert.ERROR
        problems += [f"{e.type}: {e.message[:200]}" for k, e in elements if k == "exception"]
        if problems:
            raise RuntimeError(f"error on the page: {problems}")
        if not any(k == "plotly_chart" for k, _ in elements):
            raise RuntimeError("no attention map on the page")


async def _student(url: str, i: int, seconds: float, delay: float, times: list, errors: list) -> None:
    await asyncio.sleep(delay)
    s = Student(url)
    try:
        await s.connect()
        await s.run()
        end = time.monotonic() + seconds
        k = 0
        while time.monotonic() < end:
            t = time.monotonic()
            await s.paste(long_text(1000 * i + k))
            times.append(time.monotonic() - t)
            k += 1
    except Exception as e:  # noqa: BLE001 - reported, the others go on
        errors.append(f"student {i}: {type(e).__name__}: {str(e)[:300]}")
    finally:
        try:
            await s.close()
        except Exception:  # noqa: BLE001
            pass


async def _class(url: str, sessions: int, seconds: float, ramp: float) -> tuple[list, list]:
    times: list[float] = []
    errors: list[str] = []
    await asyncio.gather(*(_student(url, i, seconds, i * ramp, times, errors) for i in range(sessions)))
    return times, errors


def paste_load(sessions: int = 10, seconds: float = 60.0, ramp: float = 0.5, env: dict | None = None) -> dict:
    """A real server (the app's defaults, `env` added), one visit to load the model, then
    `sessions` students pasting new long texts for `seconds` each; the figures as a dict."""

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with server.running(log, env or {}) as (proc, url):
            watch = server.MemoryWatch(proc.pid).start()

            async def first_visit() -> None:
                s = Student(url)
                await s.connect()
                await s.run()
                await s.close()

            server.run_async(first_visit())  # the model loaded, as by a teacher before class
            loaded_mb = watch.rss_mb()
            cpu0 = watch.cpu_s()
            t0 = time.monotonic()
            times, errors = server.run_async(_class(url, sessions, seconds, ramp))
            wall = time.monotonic() - t0
            cpu = watch.cpu_s() - cpu0
            time.sleep(2.0)  # the sessions closed: what the server still holds
            end_mb = watch.rss_mb()
            watch.stop()
            text = log.read_text(errors="replace")
            if "Traceback" in text:
                errors.append("a traceback in the server log: " + text[text.index("Traceback") :][:500])
            return {
                "sessions": sessions,
                "seconds": seconds,
                "steps": len(times),
                "step_p50_s": round(statistics.median(times), 2) if times else None,
                "step_max_s": round(max(times), 2) if times else None,
                "loaded_mb": round(loaded_mb),
                "peak_mb": round(watch.hwm_mb()),
                "peak_rss_sampled_mb": round(watch.peak_kb / 1024),
                "end_mb": round(end_mb),
                "server_cpu_s": round(cpu, 1),
                "cpu_s_per_step": round(cpu / len(times), 2) if times else None,
                "wall_s": round(wall, 1),
                "errors": errors,
            }


def main(argv=None) -> int:
    p = script_parser("python -m benchmarks.paste_load", __doc__)
    p.add_argument("--sessions", type=int, default=10, help="students at once")
    p.add_argument("--seconds", type=float, default=60.0, help="how long each keeps pasting")
    args = p.parse_args(argv)
    r = paste_load(args.sessions, args.seconds)
    print(json.dumps(r, indent=2))
    write_json(args.json, r)
    return 0 if not r["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
