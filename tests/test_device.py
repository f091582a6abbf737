"""bert/train/device.py and the `device` of PretrainArgs / FinetuneArgs: the names, the typed errors, and
on the CPU the very same numbers as before there was a choice."""

import dataclasses
import threading

import pytest
import torch

import bert
from bert import TrainingError, settings
from bert.__main__ import main
from bert.data.labelled import stratified_split
from bert.train import device as dv
from bert.train.finetune import finetune
from bert.train.finetune_args import FinetuneArgs
from bert.train.pretrain import pretrain
from bert.train.pretrain_args import PretrainArgs
from tests.helpers import FAST_FINETUNE as FAST
from tests.helpers import pretrain_args, synthetic, tiny_bundle, tiny_cli_argv, tiny_corpus, tiny_pretrain_bundle

NO_CUDA = not torch.cuda.is_available()
NO_MPS = not dv.mps_available()
AUTO_IS_CPU = NO_CUDA and NO_MPS


def test_auto_picks_cuda_then_mps_then_cpu():
    want = "cuda" if not NO_CUDA else "mps" if not NO_MPS else "cpu"
    assert dv.resolve_device("auto").type == want
    assert dv.resolve_device(None).type == want and dv.resolve_device("").type == want


def test_cpu_is_always_there():
    assert dv.resolve_device("cpu") == torch.device("cpu")
    assert dv.resolve_device(" CPU ") == torch.device("cpu")


@pytest.mark.skipif(not NO_CUDA, reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_is_a_typed_error():
    with pytest.raises(TrainingError, match="cuda was asked for but this machine has no CUDA GPU"):
        dv.resolve_device("cuda")


@pytest.mark.skipif(not NO_MPS, reason="this machine has MPS")
def test_mps_without_one_is_a_typed_error():
    with pytest.raises(TrainingError, match="mps was asked for"):
        dv.resolve_device("mps")


@pytest.mark.parametrize("name", ["tpu", "gpu", "cuda:0", "cpu,cuda"])
def test_unknown_names_are_refused(name):
    with pytest.raises(TrainingError, match="unknown device"):
        dv.resolve_device(name)
    with pytest.raises(TrainingError, match="unknown device"):
        FinetuneArgs(data="x", device=name).check()


def test_the_servers_training_device_is_its_setting_else_auto(monkeypatch):
    monkeypatch.delenv("BERT_EXPLORER_DEVICE", raising=False)
    assert dv.server_device() == "auto"
    monkeypatch.setenv("BERT_EXPLORER_DEVICE", "cpu")
    assert dv.server_device() == "cpu"


def test_args_default_to_auto():
    assert PretrainArgs(out="x").device == "auto" and FinetuneArgs(data="x").device == "auto"


@pytest.mark.skipif(not NO_CUDA, reason="this machine has a CUDA GPU")
def test_unavailable_device_fails_before_any_work(tmp_path):
    with pytest.raises(TrainingError, match="no CUDA GPU"):
        FinetuneArgs(data="x", device="cuda").check()
    out = tmp_path / "never"
    with pytest.raises(TrainingError, match="no CUDA GPU"):
        next(pretrain(pretrain_args(out, device="cuda"), bundle=tiny_pretrain_bundle(), corpus=tiny_corpus()))
    assert not out.exists()


# ---- on the CPU, nothing changes -------------------------------------------------------------------


def _pretrain_numbers(out, **kw):
    events = list(
        pretrain(
            pretrain_args(out, steps=3, log_every=1, eval_every=3, **kw),
            bundle=tiny_pretrain_bundle(),
            corpus=tiny_corpus(),
        )
    )
    keep = ("mlm_loss", "mlm_acc", "nsp_loss", "nsp_acc", "grad_norm", "lr", "mlm_top1", "probe")
    numbers = [(e.event, {k: v for k, v in e.to_dict().items() if k in keep}) for e in events]
    weights = bert.load(out / "final").model.state_dict()
    return numbers, weights


@pytest.mark.slow
@pytest.mark.skipif(not AUTO_IS_CPU, reason="auto is not the CPU here")
def test_three_pretraining_steps_on_cpu_equal_the_default(tmp_path):
    default, w_default = _pretrain_numbers(tmp_path / "default")
    cpu, w_cpu = _pretrain_numbers(tmp_path / "cpu", device="cpu")
    assert [e for e, _ in default].count("train") == 3
    assert cpu == default  # identical losses, accuracies, gradient norms, probe
    assert all(torch.equal(w_default[k], w_cpu[k]) for k in w_default)


def _finetune_numbers(**kw):
    train, valid = stratified_split(synthetic(80), 0.25, seed=0)
    args = FinetuneArgs(data="synthetic", **{**FAST, **kw})
    train = train.subset(list(range(48)))  # 3 steps of 16
    events = list(finetune(tiny_bundle(source="test"), train, valid, args))
    keep = ("loss", "loss_smooth", "lr", "grad_norm", "val_loss", "accuracy")
    numbers = [(e.event, {k: v for k, v in e.to_dict().items() if k in keep}) for e in events]
    return numbers, events[-1].bundle.model


@pytest.mark.skipif(not AUTO_IS_CPU, reason="auto is not the CPU here")
def test_three_finetuning_steps_on_cpu_equal_the_default():
    default, m_default = _finetune_numbers()
    cpu, m_cpu = _finetune_numbers(device="cpu")
    assert [e for e, _ in default].count("train") == 3
    assert cpu == default
    assert all(torch.equal(a, b) for a, b in zip(m_default.state_dict().values(), m_cpu.state_dict().values()))
    assert dv.module_device(m_cpu).type == "cpu"


# ---- writing from CPU tensors -------------------------------------------------------------------------


def test_cpu_bundle_keeps_a_cpu_model_and_copies_another(monkeypatch, tmp_path):
    b = tiny_pretrain_bundle()
    assert dv.cpu_bundle(b) is b  # on the CPU: nothing copied
    # a model "elsewhere" (faked: this machine has only the CPU) is copied, its weights as they are
    monkeypatch.setattr(dv, "module_device", lambda model: torch.device("meta"))
    c = dv.cpu_bundle(b)
    assert c is not b and c.model is not b.model and c.tokenizer is b.tokenizer and c.name == b.name
    for (k, v), (k2, v2) in zip(b.model.state_dict().items(), c.model.state_dict().items()):
        assert k == k2 and torch.equal(v, v2)  # (on a real GPU, .cpu() copies them)
    assert c.model.mlm.word_embeddings is c.model.bert.embeddings.word_embeddings  # still tied
    bert.save(b, tmp_path / "a")
    bert.save(c, tmp_path / "b")
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_to_cpu_walks_an_optimizer_state():
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    state = opt.state_dict()
    again = dv.to_cpu(state)
    assert again["param_groups"] == state["param_groups"]
    assert all(torch.equal(again["state"][0][k], state["state"][0][k]) for k in state["state"][0])


def test_to_device_on_cpu_changes_nothing():
    batch = {"input_ids": torch.arange(4), "n": 3}
    moved = dv.to_device(batch, torch.device("cpu"))
    assert moved["input_ids"] is batch["input_ids"] and moved["n"] == 3


# ---- the command line -----------------------------------------------------------------------------------


def test_cli_takes_a_device(tmp_path, capsys):
    common = tiny_cli_argv(tmp_path)
    assert main([*common, "--device", "cpu", "--threads", "1"]) == 0
    assert '"event": "done"' in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["finetune", "--data", "x.csv", "--device", "tpu"])
    assert e.value.code == 2 and "invalid choice: 'tpu'" in capsys.readouterr().err
    if NO_CUDA:
        assert main(["finetune", "--data", str(tmp_path / "missing.csv"), "--device", "cuda"]) == 2
        assert "cuda was asked for but this machine has no CUDA GPU" in capsys.readouterr().err


def test_pages_pass_the_device_setting():
    """BERT_EXPLORER_DEVICE (server_device) reaches the args every training Start button builds:
    fine-tuning and pre-training (start.py) and the tagger and reader (task_head_view.py)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    start = (root / "app/training/start.py").read_text()
    assert start.count("device=server_device()") == 2
    assert (root / "app/training/task_head_view.py").read_text().count("device=server_device()") == 1
    assert settings.SETTINGS["BERT_EXPLORER_DEVICE"].default == "auto"


def test_stop_before_the_first_step_with_a_device():
    """Stopping before the first step still gives the start model, scored once."""
    train, valid = stratified_split(synthetic(40), 0.25, seed=0)
    stop = threading.Event()
    stop.set()
    events = list(
        finetune(tiny_bundle(source="test"), train, valid, FinetuneArgs(data="s", device="cpu", **FAST), stop)
    )
    assert [e.event for e in events] == ["start", "eval", "done"] and events[-1].stopped
    assert dataclasses.asdict(FinetuneArgs(data="s"))["device"] == "auto"
