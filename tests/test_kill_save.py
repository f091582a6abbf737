"""A real kill in the middle of a save: a child process saves a checkpoint in a loop and is
SIGKILLed after a random 0-300 ms, 20 times. Each time the folder must load, whole (weights,
config and card from the same save), and what the killed save left must not stay for ever: the
next save removes it (bert.atomic_files.replace_dir).

The children are forked from a server process that has already imported bert (multiprocessing's
forkserver), so each try costs milliseconds, not the 2 s of importing torch.
"""

import multiprocessing as mp
import os
import random
import signal
import time
from pathlib import Path

import pytest
import torch

import bert
from bert.atomic_files import leftovers, recover_dir, remove_stale_leftovers, replace_dir
from bert.config import BertConfig
from bert.model import BertForPreTraining

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(27)]
TRIES = 20


def bundle(version: int) -> bert.Bundle:
    """A 12 MB model whose every weight equals `version`, and whose card says it."""
    cfg = BertConfig(
        vocab_size=len(WORDS),
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
        max_position_embeddings=64,
    )
    model = BertForPreTraining(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float(version))
    return bert.Bundle(model=model, tokenizer=bert.Tokenizer(WORDS), name=f"v{version}", card=f"# version {version}\n")


def save_forever(folder: str, first: int, ready) -> None:
    """The child: save versions first, first+1, ... into `folder` until killed."""
    torch.set_num_threads(1)
    models = [bundle(first + i) for i in range(2)]  # built before the clock starts
    ready.set()
    i = 0
    while True:
        bert.save(models[i % 2], folder)
        i += 1


def check_whole(folder: Path) -> int:
    """Load the folder; every weight must equal the version its card names. Returns it."""
    b = bert.load(folder)
    version = int(b.card.split("version", 1)[1].split()[0])
    for name, t in b.model.state_dict().items():
        if t.is_floating_point():
            assert torch.all(t == version), f"{name} holds another save's numbers than card v{version}"
    return version


@pytest.fixture()
def one_thread():
    """Small tensor checks on 2 threads crawl when the cores are busy (10x): use one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_sigkill_at_random_moments_never_breaks_the_checkpoint(tmp_path, one_thread):
    folder = tmp_path / "ckpt"
    bert.save(bundle(0), folder)  # the previous checkpoint
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["bert", "torch", __name__])
    rng = random.Random(13)
    mid_save, versions = 0, set()
    for t in range(TRIES):
        ready = ctx.Event()
        child = ctx.Process(target=save_forever, args=(str(folder), 10 * (t + 1), ready), daemon=True)
        child.start()
        assert ready.wait(60), "the saving child did not start"
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        assert child.exitcode == -signal.SIGKILL
        left = leftovers(folder)
        mid_save += bool(left)
        versions.add(check_whole(folder))  # the previous checkpoint (or a newer whole one)
        assert all(p.name.startswith(f".{folder.name}.tmp") for p in left), left
    # the kills landed inside saves (a temporary folder was there), and the folder always loaded
    assert mid_save >= TRIES // 2, f"only {mid_save} of {TRIES} kills landed during a save"
    assert len(versions) > 1  # saves did complete between kills
    bert.save(bundle(999), folder)  # the next save ...
    assert leftovers(folder) == []  # ... removes what the killed ones left
    assert check_whole(folder) == 999
    print(f"\n{TRIES} kills, {mid_save} during a save, versions seen: {sorted(versions)[:6]}...")


def test_leftovers_of_a_folder_saved_no_more_go_on_the_timer(tmp_path):
    bert.save(bundle(1), tmp_path / "a")
    stale = tmp_path / ".a.tmpxyz"
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"half")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert remove_stale_leftovers(tmp_path, older_than_s=600) == 1
    assert not stale.exists() and check_whole(tmp_path / "a") == 1


def test_without_rename_exchange_a_kill_between_the_renames_is_recovered(tmp_path, monkeypatch):
    """Where renameat2 is missing the swap is two renames; killed between them, only .a.old is
    left: the next save (or the cleanup, or recover_dir) puts it back before anything else."""
    import bert.atomic_files as fileio

    monkeypatch.setattr(fileio, "_exchange", lambda a, b: False)
    folder = tmp_path / "a"
    bert.save(bundle(1), folder)
    os.replace(folder, tmp_path / ".a.old")  # the state a kill between the renames leaves
    recover_dir(folder)
    assert check_whole(folder) == 1
    os.replace(folder, tmp_path / ".a.old")
    bert.save(bundle(2), folder)  # a save first recovers, then replaces
    assert check_whole(folder) == 2 and leftovers(folder) == []
    tmp = tmp_path / ".a.tmpnew"
    tmp.mkdir()
    (tmp / "x").write_text("new")
    replace_dir(tmp, tmp_path / "b")  # a first save: a plain rename
    assert (tmp_path / "b" / "x").read_text() == "new"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_rename_exchange_is_used_here(tmp_path):
    from bert.atomic_files import _exchange

    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "x" / "f").write_text("x")
    assert _exchange(tmp_path / "x", tmp_path / "y") and (tmp_path / "y" / "f").read_text() == "x"
