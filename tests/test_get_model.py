"""`python -m bert get MODEL_ID` against a Hugging Face Hub of our own on 127.0.0.1.

The server below answers what huggingface_hub asks (read in its source): model_info is
GET /api/models/<id> (?blobs=True: each file's size), a file is HEAD then GET
/<id>/resolve/<commit>/<file>, whose answer must carry X-Repo-Commit, ETag and Content-Length.
The command runs as a whole process with HF_ENDPOINT pointing at the server, as a teacher would
run it, so its exit code, its one line on stderr and what it leaves in the models folder are
what is checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch

import bert
from bert.checkpoint.models_folder import scan
from tests.helpers import family_folder, tiny_bundle

ROOT = Path(__file__).resolve().parent.parent
SHA = "0123456789abcdef0123456789abcdef01234567"
CARD = "---\nlicense: apache-2.0\ntags:\n- bert\n---\n# tiny-bert\n\nA tiny BERT made by the test.\n"


class FakeHub(ThreadingHTTPServer):
    """repos: {id: {"files": {name: bytes}, "claim": {name: size the metadata gives},
    "break": a file whose download stops half-way}}; `requests`: (method, path) received."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), HubHandler)
        self.repos: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def file_requests(self) -> list[str]:
        return [p for _, p in self.requests if "/resolve/" in p]


class HubHandler(BaseHTTPRequestHandler):
    def log_message(self, *a):  # quiet
        pass

    def _route(self):
        path = self.path.split("?")[0]
        self.server.requests.append((self.command, self.path))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            return "info", self.server.repos.get("/".join(parts[2:4])), None
        if len(parts) >= 5 and parts[2] == "resolve":
            return "file", self.server.repos.get("/".join(parts[:2])), "/".join(parts[4:])
        return None, None, None

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False):
        self.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _answer(self, head: bool):
        kind, repo, filename = self._route()
        if repo is None:
            return self._send(404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}, head)
        if kind == "info":
            siblings = [
                {"rfilename": n, "size": repo.get("claim", {}).get(n, len(b)), "blobId": hashlib.sha1(b).hexdigest()}
                for n, b in repo["files"].items()
            ]
            info = {"id": repo["id"], "sha": SHA, "siblings": siblings, "cardData": {"license": "apache-2.0"}}
            return self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
        body = repo["files"].get(filename)
        if body is None:
            return self._send(404, b"", {"X-Repo-Commit": SHA, "X-Error-Code": "EntryNotFound"}, head)
        headers = {"X-Repo-Commit": SHA, "ETag": f'"{hashlib.sha256(body).hexdigest()}"'}
        if head or filename != repo.get("break"):
            return self._send(200, body, headers, head)
        repo["broken_gets"] = repo.get("broken_gets", 0) + 1
        if repo["broken_gets"] > 1:  # the client trying again (after 1 s): the server is still broken
            return self._send(500, b"", headers)
        self.send_response(200)  # the whole length announced, half of it sent, the connection cut
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def do_HEAD(self):
        self._answer(head=True)

    def do_GET(self):
        self._answer(head=False)


@pytest.fixture(scope="module")
def model_files(tmp_path_factory) -> dict[str, bytes]:
    """A tiny BERT in the Hub's layout (bert.export_hf: Hugging Face names, safetensors)."""
    folder = bert.export_hf(tiny_bundle(seed=3, name="tiny-bert"), tmp_path_factory.mktemp("repo") / "tiny-bert")
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    files["README.md"] = CARD.encode()
    return files


@pytest.fixture()
def hub(model_files):
    server = FakeHub()
    server.repos["acme/tiny-bert"] = {"id": "acme/tiny-bert", "files": dict(model_files)}
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def get(tmp_path: Path, endpoint: str, model_id: str, *extra: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m bert get MODEL_ID` with HF_ENDPOINT=`endpoint` and the models folder tmp_path/models."""
    clean = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("HF_")}
    clean.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(tmp_path / "hf-home"),
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        NO_PROXY="127.0.0.1",
        BERT_EXPLORER_MODELS_DIR=str(tmp_path / "models"),
        **env,
    )
    cmd = [sys.executable, "-m", "bert", "get", model_id, *extra]
    return subprocess.run(cmd, cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode != 0
    assert "Traceback" not in r.stderr, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, r.stderr
    return errors[0]


@pytest.mark.slow
def test_get_downloads_a_model_that_loads_with_its_source_and_licence(tmp_path, hub, model_files, monkeypatch):
    r = get(tmp_path, hub.url, "acme/tiny-bert")
    assert r.returncode == 0, r.stderr
    models = tmp_path / "models"
    assert os.listdir(models) == ["tiny-bert"]  # no temporary folder, nothing else
    folder = models / "tiny-bert"
    assert sorted(os.listdir(folder)) == sorted([*model_files, "card.md"])  # huggingface_hub's .cache removed
    b = bert.load(folder)
    original = tiny_bundle(seed=3)
    ids = torch.tensor([[2, 7, 8, 4, 3]])
    assert torch.allclose(b.model(ids).mlm_logits, original.model(ids).mlm_logits, atol=1e-6)
    assert f"Source: {hub.url}/acme/tiny-bert, commit {SHA}" in b.card
    assert "Licence: apache-2.0" in b.card and "A tiny BERT made by the test." in b.card
    listed = scan(models).models  # the sidebar's list offers it, with its card's summary line
    assert [m.name for m in listed] == ["tiny-bert"]
    from app.model_sources import LISTED, listed_label

    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(models))
    assert (
        listed_label(LISTED + "tiny-bert")
        == "tiny-bert: acme/tiny-bert from the Hugging Face Hub (licence: apache-2.0)."
    )
    again = get(tmp_path, hub.url, "acme/tiny-bert")  # an existing folder is never overwritten
    assert "already in the models folder" in one_line_error(again)


def test_over_the_cap_is_refused_before_any_file_is_downloaded(tmp_path, hub):
    hub.repos["acme/tiny-bert"]["claim"] = {"model.safetensors": 600 * 2**20}  # what the metadata says
    r = get(tmp_path, hub.url, "acme/tiny-bert", BERT_EXPLORER_MAX_HUB_MB="500")
    assert "600 MB on the Hugging Face Hub: over this server's limit of 500 MB" in one_line_error(r)
    assert hub.file_requests() == [] and not (tmp_path / "models").exists()


@pytest.mark.slow
def test_a_pickle_only_repository_is_refused(tmp_path, hub, model_files):
    files = {k: v for k, v in model_files.items() if k != "model.safetensors"}
    hub.repos["acme/pickled"] = {"id": "acme/pickled", "files": {**files, "pytorch_model.bin": b"\x80\x04pickle"}}
    r = get(tmp_path, hub.url, "acme/pickled")
    assert "only pickle weights (pytorch_model.bin)" in one_line_error(r)
    assert hub.file_requests() == [] and not (tmp_path / "models").exists()


def test_a_config_the_loader_refuses_stops_before_the_weights(tmp_path, hub, model_files):
    config = {**json.loads(model_files["config.json"]), "model_type": "gpt2"}
    hub.repos["acme/tiny-bert"]["files"]["config.json"] = json.dumps(config).encode()
    r = get(tmp_path, hub.url, "acme/tiny-bert")
    assert "is not a model this app loads" in one_line_error(r)
    assert not any(p.endswith("model.safetensors") for p in hub.file_requests())
    assert os.listdir(tmp_path / "models") == []


@pytest.mark.slow
def test_a_download_that_breaks_half_way_leaves_nothing(tmp_path, hub):
    hub.repos["acme/tiny-bert"]["break"] = "model.safetensors"
    r = get(tmp_path, hub.url, "acme/tiny-bert")
    assert "the download of model.safetensors from 'acme/tiny-bert' broke off" in one_line_error(r)
    assert any(p.endswith("model.safetensors") for p in hub.file_requests())  # it did start
    assert os.listdir(tmp_path / "models") == []  # not the folder, not a hidden temporary one


def test_no_network_is_a_clear_refusal(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    r = get(tmp_path, closed, "google-bert/bert-base-uncased")
    line = one_line_error(r)
    assert r.stderr.strip() == line  # the one line, nothing else
    assert line.startswith("error: could not reach the Hugging Face Hub") and "Nothing was downloaded" in line
    assert not (tmp_path / "models").exists()


def test_a_typed_error_for_no_network(monkeypatch):
    """In the library: HubUnreachable, a CheckpointError (the app shows it as a message)."""
    import huggingface_hub

    from bert.checkpoint.hub import hub_info
    from bert.errors import HubUnreachable

    def refused(*a, **k):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", refused)
    with pytest.raises(HubUnreachable, match="could not reach the Hugging Face Hub"):
        hub_info("google-bert/bert-base-uncased")
    assert issubclass(HubUnreachable, bert.CheckpointError)


@pytest.mark.slow
def test_get_a_roberta_with_its_bpe_files_and_the_sidebar_lists_it(tmp_path, hub):
    """A family member whose tokenizer is vocab.json + merges.txt (no vocab.txt): downloaded, loaded."""
    made = family_folder("roberta", tmp_path / "made")
    files = {f.name: f.read_bytes() for f in made.iterdir() if f.is_file()}
    assert "vocab.txt" not in files and {"vocab.json", "merges.txt"} <= set(files)
    hub.repos["acme/tiny-roberta"] = {"id": "acme/tiny-roberta", "files": files}
    r = get(tmp_path, hub.url, "acme/tiny-roberta")
    assert r.returncode == 0, r.stderr
    b = bert.load(tmp_path / "models" / "tiny-roberta")
    assert b.config.model_type == "roberta" and b.tokenizer.kind == "bpe"
    assert [m.name for m in scan(tmp_path / "models").models] == ["tiny-roberta"]
    no_tokenizer = {k: v for k, v in files.items() if k not in ("vocab.json", "merges.txt")}
    hub.repos["acme/no-tok"] = {"id": "acme/no-tok", "files": no_tokenizer}
    assert "has no tokenizer" in one_line_error(get(tmp_path, hub.url, "acme/no-tok"))
