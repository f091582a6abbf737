"""What several test files build: the special tokens, the tiny review vocabulary, tiny models."""

from __future__ import annotations

import time
from pathlib import Path

import torch

import bert
from bert import events as ev
from bert.config import BertConfig
from bert.model import BertForPreTraining, BertForSequenceClassification

ENTRY = str(Path(__file__).resolve().parent.parent / "streamlit_app.py")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# "good"/"bad" decide a review's label; the rest (REVIEW_WORDS[7:]) is filler
REVIEW_WORDS = SPECIALS + "good bad the film was a very plot actor movie really quite and it story".split()
# a tiny model's sizes: vocab_size is the caller's
TINY_SIZES = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, max_position_embeddings=64
)


def tiny_config(vocab_size: int, **changes) -> BertConfig:
    """A tiny BertConfig (TINY_SIZES) with `vocab_size`, and any of its fields changed."""
    return BertConfig(**{"vocab_size": vocab_size, **TINY_SIZES, **changes})


def tiny_bundle(
    seed: int = 0, name: str = "tiny", words: list[str] = REVIEW_WORDS, config: BertConfig | None = None, **bundle_kw
) -> bert.Bundle:
    """A random BertForPreTraining (torch seed `seed`) of `config` (default tiny_config(len(words)))
    with a tokenizer of `words`; bundle_kw go to bert.Bundle (source, card...)."""
    torch.manual_seed(seed)
    cfg = tiny_config(len(words)) if config is None else config
    return bert.Bundle(model=BertForPreTraining(cfg).eval(), tokenizer=bert.Tokenizer(words), name=name, **bundle_kw)


def minilm_tiny_classifier() -> bert.Bundle:
    """A random 2-layer ("tiny-clf") negative/positive classifier on all-MiniLM-L6-v2's vocabulary."""
    from bert.checkpoint import minilm_package_dir

    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    cfg = tiny_config(len(tok), max_position_embeddings=512, id2label={0: "negative", 1: "positive"})
    return bert.Bundle(model=BertForSequenceClassification(cfg).eval(), tokenizer=tok, name="tiny-clf")


# ---- training events (bert/events.py) with the fields a test does not care about filled in ----------


def finetune_start(steps: int = 10, **kw) -> ev.FinetuneStart:
    fields = dict(steps=steps, steps_per_epoch=steps, train_examples=100, valid_examples=20, classes=["neg", "pos"])
    fields.update(parameters=1000, trainable=100, truncated=0, prep_seconds=0.1)
    return ev.FinetuneStart(**{**fields, **kw})


def finetune_step(step: int, loss: float = 0.5, **kw) -> ev.FinetuneStep:
    fields = dict(step=step, epoch=0, loss=loss, loss_smooth=loss, lr=1e-4, grad_norm=1.0)
    fields.update(examples_per_s=10.0, progress=0.5, eta_s=60.0)
    return ev.FinetuneStep(**{**fields, **kw})


def finetune_eval(step: int, accuracy: float = 0.5, val_loss: float = 0.7, **kw) -> ev.FinetuneEval:
    fields = dict(step=step, epoch=0, val_loss=val_loss, accuracy=accuracy, best_accuracy=accuracy, eval_seconds=1.0)
    return ev.FinetuneEval(**{**fields, **kw})


def finetune_done(step: int = 10, accuracy: float = 0.5, **kw) -> ev.FinetuneDone:
    fields = dict(step=step, steps=step, best_step=step, stopped=False, error=None, accuracy=accuracy, val_loss=0.7)
    fields.update(seconds=10.0, train_seconds=9.0, examples_per_s=10.0, train_examples=100, valid_examples=20)
    return ev.FinetuneDone(**{**fields, "classes": ["neg", "pos"], **kw})


def pretrain_start(baseline_token: str = "the", **kw) -> ev.PretrainStart:
    fields = dict(step=0, train_documents=10, valid_documents=2, train_tokens=1000, parameters=1000, world_size=1)
    return ev.PretrainStart(**{**fields, "baseline_token": baseline_token, **kw})


def pretrain_step(step: int, mlm_loss: float = 5.0, **kw) -> ev.PretrainStep:
    fields = dict(step=step, epoch=0, lr=1e-4, mlm_loss=mlm_loss, mlm_acc=0.1, nsp_loss=0.7, nsp_acc=0.5)
    fields.update(grad_norm=1.0, tokens_per_s=100.0, seconds=1.0)
    return ev.PretrainStep(**{**fields, **kw})


def pretrain_eval(step: int, mlm_top1: float = 0.1, **kw) -> ev.PretrainEval:
    fields = dict(step=step, mlm_loss=5.0, mlm_top1=mlm_top1, mlm_top5=mlm_top1, nsp_loss=0.7, nsp_acc=0.5)
    return ev.PretrainEval(**{**fields, "masked_tokens": 100, "sequences": 10, **kw})


def counting_job(n=10_000, every=0.01, result="model"):
    """A stand-in job: a "train" event every `every` seconds until stopped (at most n), then a model."""

    def fn(stop):
        for i in range(n):
            if stop.is_set():
                break
            time.sleep(every)
            yield finetune_step(i + 1)
        yield finetune_done(bundle=result)

    return fn


# ---- the app in streamlit's AppTest


def started_app(timeout: float):
    """The app (its entry page) run once in an AppTest, without an exception."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(ENTRY, default_timeout=timeout)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def select_session_model(at, name: str, bundle: bert.Bundle) -> None:
    """Make `bundle` the session's own model `name` (its only one), and the model selected."""
    from app import state

    at.session_state[state.USER_MODELS] = {name: bundle}
    at.session_state[state.USER_MODEL_IDS] = {name: f"session:{name}:test"}
    at.session_state[state.MODEL_SOURCE] = f"session:{name}"


def set_small_pretraining(at, steps: int, eval_every: int, batch: int) -> None:
    """On the Pre-training page: 1 layer of 64, a 500-word vocabulary, 32-token sequences; then a run."""
    at.number_input(key="pt_layers").set_value(1)
    at.selectbox(key="pt_hidden").set_value(64)
    at.number_input(key="pt_vocab_size").set_value(500)
    at.number_input(key="pt_steps").set_value(steps)
    at.number_input(key="pt_eval").set_value(eval_every)
    at.number_input(key="pt_seq").set_value(32)
    at.number_input(key="pt_batch").set_value(batch).run()
