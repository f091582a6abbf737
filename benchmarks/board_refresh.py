"""What a class board costs the server while a class watches it: a real server, one viewer over
Streamlit's websocket (as a browser: it announces the messages it has cached), a board of N posted
runs with 200-point curves; the bytes and the server's processor time of each 5 s refresh of the
board page, with the board unchanged, then after one more post.

    python -m benchmarks.board_refresh                 # 199 runs, 3 refreshes each way
    python -m benchmarks.board_refresh --runs 50 --polls 5 --json out.json

The board is written straight into a temporary cache folder (app/board/), removed afterwards.
An unchanged board must cost next to nothing a refresh (the browser keeps the cached chart); after
a post the figure is built once for every viewer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path

REFRESH_S = 5.0  # the board page's watch fragment


def _post(code: str, i: int) -> None:
    from app.class_store.service import board_store

    curve = [(j, 0.5 + (i * j % 97) / 300) for j in range(200)]
    run = {"accuracy": 0.5 + i / 1000, "val_accuracy": curve, "train_loss": [(j, 1 / (j + 1)) for j in range(200)]}
    board_store().post(code, f"s{i}", run, run_code=f"R{i:05d}", student=f"browser:{i}", owner=f"browser:{i}")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Viewer:
    """One session on the board page: join by the class code, then refresh as its timer would."""

    def __init__(self, url: str):
        self.url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.pages: dict[str, str] = {}
        self.fragments: dict[float, str] = {}  # interval -> fragment id
        self.widgets: dict = {}
        self.cached: set[str] = set()

    async def connect(self) -> None:
        import websockets

        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None, ping_interval=None)

    async def run(self, fragment: str = "", page: str = "board") -> tuple[int, list]:
        """(bytes received, elements drawn) of one rerun of the page, or of one fragment of it."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ClientState_pb2 import ClientState
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetStates

        cs = ClientState(fragment_id=fragment, is_auto_rerun=bool(fragment))
        if page in self.pages:
            cs.page_script_hash = self.pages[page]
        else:
            cs.page_name = page
        cs.widget_states.CopyFrom(WidgetStates(widgets=list(self.widgets.values())))
        cs.cached_message_hashes.extend(self.cached)
        await self.ws.send(BackMsg(rerun_script=cs).SerializeToString())
        n, elements = 0, []
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), 120)
            n += len(raw)
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            if fm.metadata.cacheable and fm.hash:
                self.cached.add(fm.hash)
            kind = fm.WhichOneof("type")
            if kind == "navigation":
                self.pages.update({p.url_pathname: p.page_script_hash for p in fm.navigation.app_pages})
            elif kind == "auto_rerun":
                self.fragments[fm.auto_rerun.interval] = fm.auto_rerun.fragment_id
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                ek = fm.delta.new_element.WhichOneof("type")
                elements.append((ek, getattr(fm.delta.new_element, ek)))
            elif kind == "script_finished" and fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return n, elements

    async def join(self, code: str) -> None:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        await self.run()
        _, elements = await self.run()
        box = next(e for k, e in elements if k == "text_input" and e.label == "Class code")
        button = next(e for k, e in elements if k == "button" and e.label == "Join a board")
        self.widgets[box.id] = WidgetState(id=box.id, string_value=code)
        self.widgets[button.id] = WidgetState(id=button.id, trigger_value=True)
        await self.run()
        del self.widgets[button.id]


async def _measure(url: str, pid: int, code: str, runs: int, polls: int) -> dict:
    viewer = Viewer(url)
    await viewer.connect()
    await viewer.join(code)
    refresh = viewer.fragments[REFRESH_S]
    out: dict[str, list] = {"unchanged": [], "after a post": []}
    for what in out:
        if what == "after a post":
            _post(code, runs)
        for _ in range(polls):
            before = _cpu_s(pid)
            n, elements = await viewer.run(refresh)
            charts = sum(k == "plotly_chart" for k, _ in elements)
            out[what].append({"bytes": n, "server_cpu_s": round(_cpu_s(pid) - before, 3), "charts": charts})
    await viewer.ws.close()
    return out


def board_refresh(runs: int = 199, polls: int = 3) -> dict:
    from . import server

    with tempfile.TemporaryDirectory() as tmp:
        env = {"BERT_EXPLORER_CACHE": tmp, "BERT_EXPLORER_BOARD": "1"}
        os.environ.update(env)
        from app.class_store.service import board_store

        code, _ = board_store().new_board()
        for i in range(runs):
            _post(code, i)
        port = server.free_port()
        proc = server.start_server(port, Path(tmp) / "server.log", env)
        try:
            url = f"http://{server.HOST}:{port}"
            server.wait_healthy(proc, url)
            return {"runs": runs, **server.run_async(_measure(url, proc.pid, code, runs, polls))}
        finally:
            server.stop_server(proc)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.board_refresh", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=199, help="runs posted before the viewer joins (at most 199)")
    p.add_argument("--polls", type=int, default=3, help="refreshes measured each way")
    p.add_argument("--json", type=Path, help="write the figures here too")
    args = p.parse_args(argv)
    result = board_refresh(min(args.runs, 199), args.polls)
    for what in ("unchanged", "after a post"):
        for r in result[what]:
            print(
                f"{what}: {r['bytes']:,} bytes, server {r['server_cpu_s']:.2f} s of processor, {r['charts']} chart(s)"
            )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
