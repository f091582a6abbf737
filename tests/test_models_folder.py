"""The models folder in the sidebar's picker: every valid model folder under
BERT_EXPLORER_MODELS_DIR offered by name with its card's summary, described from config.json,
vocab.txt and the safetensors header (no torch, no weights), invalid ones skipped with one line
in the server log, one scan every 30 s for the whole server."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bert
from bert.checkpoint import models_folder
from bert.checkpoint.builtins import BUILTINS
from bert.checkpoint.models_folder import describe_folder, scan
from tests.helpers import SPECIALS, started_app, tiny_bundle, tiny_config

ROOT = Path(__file__).resolve().parent.parent
WORDS = SPECIALS + [f"w{i}" for i in range(94)]  # 99


def tiny(seed: int = 0) -> bert.Bundle:
    return tiny_bundle(seed=seed, words=WORDS, config=tiny_config(len(WORDS)))


def class_model(folder: Path, summary: str = "A model for the class.") -> Path:
    return bert.save(tiny(), folder, card=f"# {folder.name}\n\n{summary}\n")


@pytest.fixture()
def root(tmp_path, monkeypatch) -> Path:
    r = tmp_path / "models"
    r.mkdir()
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(r))
    monkeypatch.delenv("BERT_EXPLORER_ALLOW_HUB", raising=False)
    return r


def zoo(root: Path) -> None:
    """Two models that load (ours, Hugging Face's) and the ways a folder can be wrong."""
    good = class_model(root / "alpha")
    bert.export_hf(tiny(1), root / "hf-beta")
    (root / "bad-config").mkdir()
    shutil.copy(good / "vocab.txt", root / "bad-config")
    (root / "bad-config" / "config.json").write_text("{not json")
    shutil.copytree(good, root / "giant")
    cfg = json.loads((good / "config.json").read_text())
    (root / "giant" / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 100_000}))
    shutil.copytree(good, root / "pickled")
    (root / "pickled" / "model.safetensors").unlink()
    torch.save(tiny().model.state_dict(), root / "pickled" / "pytorch_model.bin")
    shutil.copytree(good, root / "cut")
    weights = (root / "cut" / "model.safetensors").read_bytes()
    (root / "cut" / "model.safetensors").write_bytes(weights[: len(weights) * 3 // 4])
    shutil.copytree(good, root / "no-mask")
    vocab = (good / "vocab.txt").read_text().replace("[MASK]\n", "[MASQUE]\n")
    (root / "no-mask" / "vocab.txt").write_text(vocab)
    shutil.copytree(good, root / "minilm-l6")  # a built-in's name: the built-in wins, not offered
    shutil.copytree(good, root / ".alpha.tmp123")  # a save or download in progress: not a folder to offer
    (root / "notes.txt").write_text("not a folder")


def test_the_scan_lists_valid_folders_and_says_why_the_others_are_not(root):
    zoo(root)
    found = scan(root)
    assert [m.name for m in found.models] == ["alpha", "hf-beta", "minilm-l6"]
    why = dict(found.skipped)
    assert set(why) == {"bad-config", "giant", "pickled", "cut", "no-mask"}
    assert "lacks the special token(s) [MASK]" in why["no-mask"]
    assert "config" in why["bad-config"]
    assert "num_hidden_layers 100,000 is over this app's limit" in why["giant"]
    assert "only pytorch_model.bin (a pickle)" in why["pickled"]
    assert "cut short" in why["cut"]
    alpha = found.models[0]
    assert alpha.config.hidden_size == 32 and alpha.counts["total"] == bert.load(root / "alpha").num_parameters


def test_what_the_scan_says_matches_the_loader(root):
    """Every listed folder loads; every folder the loader refuses is skipped (same checks)."""
    zoo(root)
    found = scan(root)
    for m in found.models:
        assert bert.load(root / m.name).config == m.config
    for name, _ in found.skipped:
        if name != "pickled":  # the loader reads a pickle of plain tensors; the list does not offer it
            with pytest.raises(bert.BertExplorerError):
                bert.load(root / name)


def test_offered_folders_skip_with_one_log_line_each(root, caplog):
    from app.model_sources import LISTED, model_options, offered_folders

    zoo(root)
    with caplog.at_level(logging.WARNING, logger="bert_explorer"):
        assert [m.name for m in offered_folders()] == ["alpha", "hf-beta"]  # not the built-in's name
        offered_folders(max_age_s=0)  # scanned again: nothing said twice
    lines = [r.getMessage() for r in caplog.records if r.name == "bert_explorer"]
    assert len(lines) == 6, lines
    names = ["bad-config", "cut", "giant", "minilm-l6", "no-mask", "pickled"]
    assert sorted(line.split("'")[1] for line in lines) == names
    assert all(line.startswith("models folder: skipped") and "\n" not in line for line in lines)
    assert [o for o in model_options() if o.startswith(LISTED)] == ["models:alpha", "models:hf-beta"]


def test_one_scan_serves_the_server_for_a_while(root, monkeypatch):
    from app.model_sources import offered_folders

    class_model(root / "alpha")
    scans = []

    def counting(r, *a, **k):
        scans.append(r)
        return scan(r, *a, **k)

    monkeypatch.setattr(models_folder, "scan", counting)
    for _ in range(30):  # 30 students' pages
        assert [m.name for m in offered_folders()] == ["alpha"]
    assert len(scans) == 1
    class_model(root / "beta")  # added while the server runs: typed until the next scan
    assert [m.name for m in offered_folders()] == ["alpha"]
    assert [m.name for m in offered_folders(max_age_s=0)] == ["alpha", "beta"]
    assert len(scans) == 2


def test_the_scan_reads_no_weights_and_no_torch(root):
    """20 folders listed in a process of their own: torch never imported, and the bytes read are
    a small part of the weights' (config, vocab and the header only), from /proc/self/io."""
    first = class_model(root / "m00")
    for i in range(1, 20):
        shutil.copytree(first, root / f"m{i:02d}")
    weights = 20 * (first / "model.safetensors").stat().st_size
    code = (
        "import sys\n"
        "from bert.checkpoint.models_folder import scan\n"
        "def rchar():\n"
        "    return int(next(l for l in open('/proc/self/io') if l.startswith('rchar')).split()[1])\n"
        "before = rchar(); found = scan(sys.argv[1]); read = rchar() - before\n"
        "print(len(found.models), read, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(root)], cwd=ROOT, capture_output=True, text=True, check=True)
    listed, read, torch_imported = out.stdout.split()
    assert listed == "20" and torch_imported == "False"
    assert int(read) < weights / 4, (read, weights)


def test_describe_folder_refuses_a_header_that_lies(root):
    good = class_model(root / "alpha")
    raw = (good / "model.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    header[name]["shape"] = [10**6]  # more numbers than its bytes
    text = json.dumps(header).encode()
    (good / "model.safetensors").write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + n :])
    with pytest.raises(bert.CheckpointError, match="malformed header"):
        describe_folder(good)


# ---- in the app ------------------------------------------------------------------------------------


def _picker(at):
    from app import state

    return at.selectbox(key=state.W_MODEL_CHOICE)


@pytest.mark.slow
def test_a_folder_dropped_in_is_offered_by_name_and_loads_when_picked(root):
    pytest.importorskip("streamlit")
    from app import state

    zoo(root)
    at = started_app(120)
    picker = _picker(at)  # its options as the student reads them
    assert "alpha: A model for the class." in picker.options and "hf-beta (models folder)" in picker.options
    assert not any(n in o for o in picker.options for n in ("giant", "pickled", "cut", "bad-config", "no-mask"))
    assert picker.options[-1] == "A folder from the server's models folder…"  # the typed-name box stays
    picker.set_value("models:alpha").run()
    assert not at.exception and not at.sidebar.error
    assert at.session_state[state.MODEL_SOURCE] == "alpha"
    shown = " ".join(str(getattr(x, "value", "")) for x in [*at.sidebar.markdown, *at.sidebar.caption])
    assert "alpha" in shown and str(root) not in shown
    at.switch_page("pages/compare.py").run()  # Compare's pickers offer the same list, the sidebar's pick first
    assert not at.exception and not at.error
    assert at.selectbox(key="cmp_model_A").value == "models:alpha"
    b = at.selectbox(key="cmp_model_B")
    assert "hf-beta (models folder)" in b.options and b.value in BUILTINS  # a built-in by default


@pytest.mark.slow
@pytest.mark.parametrize("count", [0, 1, 20])
def test_the_picker_with_0_1_and_20_folders(tmp_path, monkeypatch, count):
    pytest.importorskip("streamlit")
    root = tmp_path / "models"
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(root))
    if count:
        first = class_model(root / "m00")
        for i in range(1, count):
            shutil.copytree(first, root / f"m{i:02d}")
    at = started_app(120)
    listed = [o for o in _picker(at).options if o.startswith("m0") or o.startswith("m1")]
    assert listed == [f"m{i:02d}: A model for the class." for i in range(count)]
