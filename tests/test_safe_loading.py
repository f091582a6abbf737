"""Hostile and broken checkpoints, and file names with `../`.

Every bad checkpoint raises `bert.CheckpointError` (a message for the user, never a traceback),
a pickle that would run code is refused WITHOUT running it (a marker file proves it), a config
that asks for more than the weights hold is refused before any model is built, and nothing the
app saves or exports can land outside its folder. Tiny models (vocab 20, hidden 32) keep it fast;
the app part uses AppTest with the default model.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import bert
from bert import CheckpointError
from bert.checkpoint.load import load_folder, read_weights
from bert.checkpoint.sizes import encoder_parameters
from tests.helpers import SPECIALS, tiny_bundle, tiny_config

WORDS = SPECIALS + "the cat sat on mat a dog ran ##s and big red blue it was".split()
N_WORDS = len(WORDS)


def tiny(layers=2, hidden=32, heads=4, vocab=N_WORDS, seed=0) -> bert.Bundle:
    cfg = tiny_config(vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads)
    return tiny_bundle(seed, words=WORDS, config=cfg)


@pytest.fixture()
def good(tmp_path) -> Path:
    """A valid saved tiny model (our format)."""
    return bert.save(tiny(), tmp_path / "good")


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def _write_config(folder: Path, **changes) -> None:
    d = _config(folder)
    d.update(changes)
    (folder / "config.json").write_text(json.dumps(d))


def test_the_valid_one_loads(good):
    b = bert.load(good)
    assert b.config.num_hidden_layers == 2 and len(b.tokenizer) == len(WORDS)


# ---- unreadable weights ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["model.safetensors", "pytorch_model.bin"])
def test_random_bytes(good, name):
    (good / "model.safetensors").unlink()
    (good / name).write_bytes(os.urandom(4096))
    with pytest.raises(CheckpointError, match="not a readable|refused: it is not a plain file of tensors") as e:
        bert.load(good)
    assert "weights_only" not in str(e.value)  # never torch's advice to load unsafely


@pytest.mark.parametrize("name", ["model.safetensors", "pytorch_model.bin"])
def test_empty_weights_file(good, name):
    (good / "model.safetensors").unlink()
    (good / name).write_bytes(b"")
    with pytest.raises(CheckpointError):
        bert.load(good)


@pytest.mark.parametrize("keep", [0.5, 0.99, 10])
def test_truncated_safetensors(good, keep):
    f = good / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: int(len(data) * keep)] if keep < 1 else data[:keep])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        bert.load(good)


def test_safetensors_header_lies_about_its_size(good):
    """A header that claims 2**60 bytes: refused, no huge allocation."""
    f = good / "model.safetensors"
    f.write_bytes((2**60).to_bytes(8, "little") + b"{}")
    with pytest.raises(CheckpointError):
        bert.load(good)


def test_truncated_torch_zip(good, tmp_path):
    b = tiny()
    torch.save(b.model.state_dict(), tmp_path / "full.bin")
    data = (tmp_path / "full.bin").read_bytes()
    (good / "model.safetensors").unlink()
    (good / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a readable PyTorch weights file"):
        bert.load(good)


def test_weights_that_are_not_a_dict_of_tensors(good, tmp_path):
    (good / "model.safetensors").unlink()
    torch.save([torch.zeros(2)], good / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="dictionary of tensors"):
        bert.load(good)
    torch.save({"a": 1, "b": "text"}, good / "pytorch_model.bin")
    with pytest.raises(CheckpointError):
        bert.load(good)


# ---- a pickle that would run code --------------------------------------------------------------


class _Payload:
    """Unpickling this calls open(marker, "w"): the marker file appears if the pickle ran."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _evil_pickle(marker: Path) -> bytes:
    return pickle.dumps({"bert.embeddings.word_embeddings.weight": _Payload(marker)})


def _evil_torch_zip(marker: Path) -> bytes:
    buf = io.BytesIO()
    torch.save({"bert.embeddings.word_embeddings.weight": torch.zeros(2), "x": _Payload(marker)}, buf)
    return buf.getvalue()


@pytest.mark.parametrize("make", [_evil_pickle, _evil_torch_zip], ids=["plain-pickle", "torch-save-zip"])
def test_code_running_pickle_is_refused_and_not_run(good, tmp_path, make):
    # control: the payload is live (a plain unpickler runs it)
    control = tmp_path / "control-marker"
    blob = make(control)
    if make is _evil_pickle:
        pickle.loads(blob)
    else:
        torch.load(io.BytesIO(blob), weights_only=False)
    assert control.exists(), "the payload should run under an unsafe loader"

    marker = tmp_path / "marker-must-not-exist"
    (good / "model.safetensors").unlink()
    (good / "pytorch_model.bin").write_bytes(make(marker))
    with pytest.raises(CheckpointError) as e:
        bert.load(good)
    assert not marker.exists(), "unpickling ran code"
    assert "pytorch_model.bin was refused" in str(e.value) and "Nothing in it was run" in str(e.value)
    assert "weights_only" not in str(e.value)
    with pytest.raises(CheckpointError):
        read_weights(good / "pytorch_model.bin")
    assert not marker.exists()


@pytest.mark.slow
def test_pickle_refused_in_the_app_with_a_message(tmp_path, monkeypatch):
    """The sidebar's "a folder on this machine": the error is shown, nothing runs, the default
    model stays."""
    pytest.importorskip("streamlit")
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(tmp_path))  # the folder is under the allowed root
    from streamlit.testing.v1 import AppTest

    from app import state

    folder = bert.save(tiny(), tmp_path / "evil")
    marker = tmp_path / "marker-app"
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(_evil_torch_zip(marker))
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.selectbox(key=state.W_MODEL_CHOICE).set_value("__folder__").run()
    at.text_input(key=state.W_LOCAL_PATH).input(str(folder)).run()
    at.sidebar.button[0].click().run()
    assert not at.exception
    assert any("refused" in e.value or "not a readable" in e.value for e in at.sidebar.error), [
        e.value for e in at.sidebar.error
    ]
    assert not marker.exists()
    assert at.session_state[state.MODEL_SOURCE] == state.DEFAULT_MODEL


# ---- config, weights and vocabulary that do not belong together --------------------------------


def test_wrong_shapes(good, tmp_path):
    """Weights of a hidden-64 model under a hidden-32 config (same number of layers)."""
    other = bert.save(tiny(hidden=64, heads=4), tmp_path / "wide")
    (good / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes())
    with pytest.raises(CheckpointError, match="shape .* but the config asks for"):
        bert.load(good)


def test_a_tensor_of_the_wrong_shape(good):
    state = read_weights(good / "model.safetensors")
    state["bert.layers.0.attn.qkv.weight"] = torch.zeros(97, 33)  # not (96, 32)
    save_file(state, str(good / "model.safetensors"))
    with pytest.raises(CheckpointError, match="bert.layers.0.attn.qkv.weight"):
        bert.load(good)


def test_config_with_more_layers_than_the_weights(good):
    _write_config(good, num_hidden_layers=3)
    with pytest.raises(CheckpointError, match="do not match|lacks"):
        bert.load(good)


def test_config_with_fewer_layers_than_the_weights(good):
    _write_config(good, num_hidden_layers=1)
    with pytest.raises(CheckpointError, match="layers up to 2 .* num_hidden_layers 1"):
        bert.load(good)


def test_config_asking_for_a_huge_model_is_refused_before_building_it(good, monkeypatch):
    """100,000 layers of hidden 4,096 would be terabytes: refused from the file sizes alone."""
    import bert.checkpoint.load

    built = []
    for head in bert.checkpoint.load.MODEL_CLASSES:  # every head's model class
        monkeypatch.setitem(bert.checkpoint.load.MODEL_CLASSES, head, lambda *a, **k: built.append(1))
    _write_config(good, num_hidden_layers=100_000, hidden_size=4096, num_attention_heads=64, intermediate_size=16384)
    with pytest.raises(CheckpointError, match="over this app's limit|describes an encoder of .* holds only"):
        bert.load(good)
    assert not built


def test_encoder_parameters_matches_the_model():
    b = tiny()
    n = sum(
        v.numel() for k, v in b.model.state_dict().items() if k.startswith("bert.") and not k.startswith("bert.pooler")
    )
    assert encoder_parameters(b.config) == n


@pytest.mark.parametrize("lines", [len(WORDS) - 3, len(WORDS) + 5])
def test_vocab_size_mismatch(good, lines):
    words = WORDS[:lines] if lines < len(WORDS) else WORDS + [f"extra{i}" for i in range(lines - len(WORDS))]
    (good / "vocab.txt").write_text("\n".join(words) + "\n")
    with pytest.raises(CheckpointError, match="vocab.txt has .* tokens but config.json says vocab_size"):
        bert.load(good)


def test_vocab_and_config_agree_but_not_the_weights(good):
    words = WORDS + [f"extra{i}" for i in range(10)]
    (good / "vocab.txt").write_text("\n".join(words) + "\n")
    _write_config(good, vocab_size=len(words))
    with pytest.raises(CheckpointError, match="word_embeddings.weight has shape"):
        bert.load(good)


@pytest.mark.parametrize(
    "text, match",
    [
        ("not json at all {", "not valid JSON"),
        ("[1, 2, 3]", "expected a JSON object"),
        ('{"hidden_size": -5}', "positive integer"),
        ('{"hidden_size": 30, "num_attention_heads": 4}', "not divisible"),
        ('{"model_type": "gpt2"}', "not one this app knows"),
        ('{"hidden_act": "os.system"}', "unsupported hidden_act"),
        ('{"num_hidden_layers": "12"}', "positive integer"),
    ],
)
def test_bad_config_json(good, text, match):
    (good / "config.json").write_text(text)
    with pytest.raises(CheckpointError, match=match):
        bert.load(good)


@pytest.mark.parametrize(
    "missing, match",
    [("config.json", "no config.json"), ("vocab.txt", "no vocab.txt"), ("model.safetensors", "no model.safetensors")],
)
def test_missing_files(good, missing, match):
    (good / missing).unlink()
    with pytest.raises(CheckpointError, match=match):
        bert.load(good)


def test_not_a_folder_and_nonsense_sources(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(CheckpointError, match="not a folder"):
        load_folder(f)
    for source in ("", "   ", "no-such-built-in", "../../../etc"):
        with pytest.raises(CheckpointError):
            bert.load(source)


# ---- names with ../ ------------------------------------------------------------------------------

EVIL_NAMES = [
    "../../etc/passwd",
    "..",
    "../",
    "a/../../b",
    "..\\..\\win",
    "/abs/path",
    "~/x",
    "\x00../x",
    ".hidden",
    "name\u202egnp.exe",
    "</script>",
]


def test_save_never_writes_outside_its_parent(tmp_path):
    """bert.save writes a temporary folder next to the target, then renames: nothing else."""
    target = tmp_path / "inside" / "model"
    bert.save(tiny(), target)
    assert sorted(p.name for p in (tmp_path / "inside").iterdir()) == ["model"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inside"]


@pytest.mark.parametrize("name", EVIL_NAMES)
def test_app_file_names_are_plain(name):
    from app.run_session.names import safe_filename

    out = safe_filename(name)
    assert out and out == os.path.basename(out) and ".." not in out and not out.startswith(".")
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in out)


@pytest.mark.parametrize("name", EVIL_NAMES)
def test_exported_zips_have_one_plain_folder(name, tmp_path):
    """The model downloads (both formats) of a model named with `../`: every entry lies inside
    one folder with a plain name, so unzipping cannot write anywhere else."""
    from app.run_session.names import safe_filename
    from app.training.downloads import model_zip

    b = tiny()
    b.name = name
    for fmt in ("ours", "hf"):
        with zipfile.ZipFile(io.BytesIO(model_zip(b, name, fmt))) as z:
            names = z.namelist()
        root = names[0].split("/")[0]
        assert root == safe_filename(name) + ("-hf" if fmt == "hf" else "")
        for n in names:
            parts = n.split("/")
            assert parts[0] == root and ".." not in parts and not n.startswith("/") and "\\" not in n


def test_uploaded_file_names_lose_their_path():
    """A browser may send any file name: only its last part is kept (and only for messages)."""
    pytest.importorskip("streamlit")
    from app.run_session.uploads import remember_upload

    class Upload:
        def __init__(self, name):
            self.name, self.size, self.file_id = name, 3, f"id-{name}"

        def getvalue(self):
            return b"a,b"

    import streamlit as st

    for evil, plain in [("../../etc/passwd", "passwd"), ("/abs/x.csv", "x.csv"), ("..", ".."), ("", "upload")]:
        st.session_state.clear()
        stored = remember_upload("up", Upload(evil))
        assert stored["name"] == plain and "/" not in stored["name"]


def test_pretraining_job_folders_stay_under_the_cache(monkeypatch, tmp_path):
    """A job's scratch folder is made by mkdtemp under bert_cache_dir()/jobs, named by the job's
    number only (never by the model's name); the corpus name of an upload is made plain first."""
    pytest.importorskip("streamlit")
    from app.jobs.worker import job_folder
    from app.run_session.names import safe_filename

    monkeypatch.setattr("app.jobs.worker.jobs_dir", lambda: tmp_path / "jobs")
    for job_id in (7, None):
        folder = job_folder(job_id)
        assert folder.resolve().parent == (tmp_path / "jobs").resolve()
    assert safe_filename(Path("../../x/evil.txt").stem, "upload") == "evil"


# ---- crash safety: never half a file ------------------------------------------------------------------


def test_a_save_that_dies_half_way_leaves_the_old_model_whole(good, monkeypatch):
    """bert.save writes a temporary folder and renames it: if writing fails (disk full, killed)
    the folder that was there is untouched and no temporary folder is left."""
    import bert.checkpoint.load

    before = {p.name: p.read_bytes() for p in good.iterdir()}

    def dies(state, path, metadata=None):
        Path(path).write_bytes(b"half a fi")
        raise OSError("No space left on device")

    monkeypatch.setattr(bert.checkpoint.load, "save_file", dies)
    with pytest.raises(OSError):
        bert.save(tiny(seed=1), good)
    assert {p.name: p.read_bytes() for p in good.iterdir()} == before
    assert [p.name for p in good.parent.iterdir()] == ["good"]
    assert bert.load(good).config.num_hidden_layers == 2


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    from bert.atomic_files import atomic_write_bytes

    f = tmp_path / "card.md"
    atomic_write_bytes(f, b"old")

    def boom(fd):
        raise OSError("killed")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(f, b"new and longer")
    assert f.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["card.md"]
