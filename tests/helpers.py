"""What several test files build: the special tokens, the tiny review vocabulary, tiny models,
their training data and runs. Test modules share these, never each other."""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
from pathlib import Path

import torch

import bert
from bert.config import BertConfig
from bert.data.corpus.base import Corpus
from bert.data.labelled import LabelledData, read_labelled, stratified_split
from bert.model import BertForPreTraining
from bert.task_models import BertForSequenceClassification
from bert.train import events as ev
from bert.train.finetune_args import FinetuneArgs
from bert.train.pretrain_args import PretrainArgs

ENTRY = str(Path(__file__).resolve().parent.parent / "streamlit_app.py")
APP_TIMEOUT = 120  # the bound on one AppTest run of the app: the real model on 2 busy cores
BUILT_DATA = ("datasets", "corpora")  # what `make data` built in the cache folder: read, never written by a test
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


# the pre-training tests' vocabulary: sentences of tiny_corpus()
PRETRAIN_WORDS = "red green blue cat dog bird runs sits sleeps the a on under big small".split()
PRETRAIN_VOCAB = SPECIALS + [".", *PRETRAIN_WORDS]


def tiny_pretrain_bundle(hidden: int = 32, layers: int = 2, seed: int = 0) -> bert.Bundle:
    """A random BertForPreTraining on PRETRAIN_VOCAB: `layers` of `hidden`, 2 heads."""
    config = BertConfig(
        vocab_size=len(PRETRAIN_VOCAB),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=64,
    )
    return tiny_bundle(seed, "tiny", PRETRAIN_VOCAB, config)


def minilm_tiny_mlm() -> bert.Bundle:
    """A random 2-layer masked-word model (TINY_SIZES, torch seed 0) on all-MiniLM-L6-v2's
    vocabulary: the pages' computations at a fraction of MiniLM's cost."""
    from bert.checkpoint.builtins import minilm_package_dir

    torch.manual_seed(0)
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    model = BertForPreTraining(tiny_config(len(tok), max_position_embeddings=512)).eval()
    return bert.Bundle(model=model, tokenizer=tok, name="tiny-mlm")


def minilm_tiny_classifier() -> bert.Bundle:
    """A random 2-layer ("tiny-clf") negative/positive classifier on all-MiniLM-L6-v2's vocabulary."""
    from bert.checkpoint.builtins import minilm_package_dir

    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    cfg = tiny_config(len(tok), max_position_embeddings=512, id2label={0: "negative", 1: "positive"})
    return bert.Bundle(model=BertForSequenceClassification(cfg).eval(), tokenizer=tok, name="tiny-clf")


# ---- fine-tuning: a synthetic "good"/"bad" task ------------------------------------------------------

# FinetuneArgs fields for a fast fine-tuning of a tiny model
FAST_FINETUNE = dict(
    threads=1, batch_size=16, lr=1e-3, head_lr_scale=10.0, warmup_ratio=0.1, log_every=1, freeze_embeddings=False
)


def synthetic(n: int = 400, seed: int = 0) -> LabelledData:
    """Label = whether the text contains "good" (pos) or "bad" (neg), among filler words."""
    r = random.Random(seed)
    texts, labels = [], []
    for i in range(n):
        y = i % 2
        ws = [r.choice(REVIEW_WORDS[7:]) for _ in range(r.randint(3, 12))]
        ws.insert(r.randrange(len(ws) + 1), "good" if y else "bad")
        texts.append(" ".join(ws) + f" {i}")  # unique texts; digits are [UNK]
        labels.append(y)
    return LabelledData(texts=texts, labels=labels, classes=["neg", "pos"], source="synthetic")


def reviews_csv(n=200, seed=0, sep=",", header=("review", "sentiment")) -> bytes:
    """Synthetic reviews: the label is whether "good" or "bad" is among filler words."""
    r = random.Random(seed)
    lines = [sep.join(header)]
    for i in range(n):
        y = i % 2
        ws = [r.choice(REVIEW_WORDS[7:]) for _ in range(r.randint(3, 10))]
        ws.insert(r.randrange(len(ws) + 1), "good" if y else "bad")
        lines.append(f"{' '.join(ws)} {i}{sep}{'pos' if y else 'neg'}")
    return ("\n".join(lines) + "\n").encode()


def tiny_data(n=160) -> LabelledData:
    return read_labelled(reviews_csv(n), "reviews.csv")


def fast_args(**kw) -> FinetuneArgs:
    """The app's fine-tuning job arguments for a tiny model: 2 epochs of 16, an evaluation every 5 steps."""
    base = dict(data="test", batch_size=16, lr=1e-3, epochs=2, eval_every=5, threads=1, max_length=32)
    return FinetuneArgs(**{**base, **kw})


def finetune_fn(base, train, valid, args, code: str = "", info: dict | None = None, student: str = ""):
    """The app's fine-tuning job (app.jobs.worker.run_job) on `base` as a job function `fn(stop)`,
    kept as run `code` when one is given."""
    from app.jobs.spec import finetune_spec
    from app.jobs.worker import run_job

    info = {k: v for k, v in (info or {}).items() if k not in ("args", "student")}
    spec = finetune_spec(code, base.name, train, valid, args, student=student, title=info.get("title", ""), info=info)
    return lambda stop: run_job(spec, stop, base=base)


def pretrain_fn(args, corpus, name: str, corpus_label: str, code: str = ""):
    """The app's pre-training job (app.jobs.worker.run_job) as a job function `fn(stop)`."""
    from app.jobs.spec import pretrain_spec
    from app.jobs.worker import run_job

    spec = pretrain_spec(code, args, corpus, name, corpus_label)
    return lambda stop: run_job(spec, stop, corpus=corpus)


def run_fn(fn, stop=None) -> list:
    """Every event of a job function `fn(stop)`, run to its end."""
    return list(fn(stop or threading.Event()))


def finished_result(lr=1e-3, name="tiny-reviews"):
    """(base, result): a tiny model fine-tuned by the app's job on tiny_data, and the result dict
    the Fine-tuning page keeps for a finished run."""
    from app.jobs.records import Report
    from bert.train.events import Error, FinetuneDone

    base = tiny_bundle()
    train, valid = stratified_split(tiny_data(160), 0.25, seed=0)
    events = run_fn(finetune_fn(base, train, valid, fast_args(lr=lr)))
    done = next(e for e in events if isinstance(e, FinetuneDone))
    bundle = done.bundle
    bundle.name = name
    report = next((e for e in events if isinstance(e, Report)), None)
    error = next((e.message for e in events if isinstance(e, Error)), None)
    return base, {
        "kind": "finetune",
        "job_id": 9000 + int(lr * 1000),
        "status": "error" if error else "done",
        "error": error,
        "metrics": [e for e in events if not isinstance(e, (Report, FinetuneDone))],
        "report": report and report.to_dict(),
        "finished": time.time(),
        "bundle": bundle,
        "name": name,
        "key": f"session:{name}",
        "done": dataclasses.replace(done, bundle=None),
        "info": {
            "base_source": "session:tiny",
            "base_name": "tiny",
            "train": train.summary(),
            "args": FinetuneArgs(data="reviews", pooling="mean", max_length=32, lr=lr, batch_size=16, epochs=2),
        },
    }


# ---- pre-training: a corpus with strong regularities --------------------------------------------------


def tiny_corpus(n_docs=24, seed=0) -> Corpus:
    """Documents with strong regularities: 'the big cat sits on the small dog .' patterns."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        colour = rng.choice(["red", "green", "blue"])
        docs.append(
            [
                f"the {colour} {a} {v} on the {colour} {b} ."
                for a, v, b in (
                    (
                        rng.choice(["cat", "dog", "bird"]),
                        rng.choice(["runs", "sits", "sleeps"]),
                        rng.choice(["cat", "dog", "bird"]),
                    )
                    for _ in range(8)
                )
            ]
        )
    return Corpus(name="tiny", documents=docs)


def tiny_cli_argv(tmp_path) -> list[str]:
    """`python -m bert pretrain` options for a two-step scratch run on tiny_corpus (written to a
    text file under tmp_path); the caller adds --device and --threads."""
    text = tmp_path / "t.txt"
    text.write_text("\n\n".join(" ".join(doc) for doc in tiny_corpus().documents), encoding="utf-8")
    argv = ["pretrain", "--out", str(tmp_path / "run"), "--init", "scratch", "--text-file", str(text)]
    argv += ["--layers", "1", "--hidden", "32", "--heads", "2", "--max-seq-length", "32", "--batch-size", "4"]
    argv += ["--steps", "2", "--log-every", "1", "--eval-every", "2", "--eval-sequences", "8", "--no-cache-tokens"]
    return argv


def pretrain_args(out, **kw) -> PretrainArgs:
    """PretrainArgs of a 60-step scratch run into `out` on one thread; kw change any."""
    base = dict(
        out=str(out),
        init="scratch",
        max_seq_length=32,
        batch_size=8,
        steps=60,
        lr=3e-3,
        warmup_steps=5,
        log_every=5,
        eval_every=30,
        save_every=1000,
        eval_sequences=32,
        valid_fraction=0.1,
        threads=1,
    )
    base.update(kw)
    return PretrainArgs(**base)


# ---- training events (bert/train/events.py) with the fields a test does not care about filled in ----------


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


def started_app(timeout: float = APP_TIMEOUT, page: str | None = None):
    """The app run once in an AppTest on its entry page, then on `page` (e.g. "pages/causes.py")
    when given, each run without an exception."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(ENTRY, default_timeout=timeout)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page is not None:
        at.switch_page(page).run()
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


def link_built_data(folder: Path) -> Path:
    """A fresh cache `folder` (runs, boards, jobs of one test alone) that still sees the data sets
    and corpora `make data` built (linked, not copied): a page that opens with the built-in data
    does not fetch it again, which inside the test namespace it cannot."""
    from bert.data.corpus.fetch import bert_cache_dir

    real = bert_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for name in BUILT_DATA:
        if (real / name).is_dir() and not (folder / name).exists():
            (folder / name).symlink_to(real / name, target_is_directory=True)
    return folder


def use_cache(monkeypatch, folder: Path) -> Path:
    """BERT_EXPLORER_CACHE set to `folder`, made by link_built_data."""
    link_built_data(folder)
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(folder))
    return folder


def family_folder(kind: str, folder: Path) -> Path:
    """A tiny random member of BERT's family made with transformers and saved as a Hugging Face
    folder, as a teacher would put a real checkpoint in the models folder: "distilbert", or
    "electra" (a discriminator with embeddings narrower than its layers), with MiniLM's vocab.txt;
    "roberta" (vocab.json + merges.txt) or "albert" (tokenizer.json, with its sentence-order
    head) with a tokenizer trained here on English-like sentences."""
    import shutil

    import transformers

    from bert.checkpoint.builtins import minilm_package_dir

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    if kind in ("roberta", "albert"):
        return _bpe_or_unigram_folder(kind, folder)
    vocab = minilm_package_dir() / "vocab.txt"
    V = len(bert.Tokenizer.from_file(vocab))
    if kind == "distilbert":
        cfg = transformers.DistilBertConfig(
            vocab_size=V, dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=128
        )
        model = transformers.DistilBertForMaskedLM(cfg)
    else:
        cfg = transformers.ElectraConfig(
            vocab_size=V,
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=128,
        )
        model = transformers.ElectraForPreTraining(cfg)
    model.save_pretrained(folder)
    shutil.copy(vocab, folder / "vocab.txt")
    return folder


ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0-4: <pad> is 1, as in roberta-base
ALBERT_SPECIALS = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]  # <pad> is 0, as in albert-base-v2


def roberta_tokenizer_files(folder: Path, corpus, vocab_size: int) -> Path:
    """vocab.json + merges.txt of a byte-level BPE trained on `corpus` with the `tokenizers` library."""
    import tokenizers

    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=vocab_size, min_frequency=2, special_tokens=ROBERTA_SPECIALS)
    bpe.save_model(str(folder))
    return folder


def roberta_tokenizer_json(files: Path, folder: Path) -> Path:
    """The BPE of `files` as one tokenizer.json laid out as roberta-base's ("<mask>" with lstrip)."""
    import json

    import tokenizers
    from tokenizers import AddedToken, decoders, models, pre_tokenizers, processors

    vocab = json.loads((files / "vocab.json").read_text(encoding="utf-8"))
    t = tokenizers.Tokenizer(models.BPE.from_file(str(files / "vocab.json"), str(files / "merges.txt")))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.RobertaProcessing(
        ("</s>", vocab["</s>"]), ("<s>", vocab["<s>"]), trim_offsets=True, add_prefix_space=False
    )
    t.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in ROBERTA_SPECIALS[:4]])
    t.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    t.save(str(folder / "tokenizer.json"))
    return folder


EMOJI = "😀🎉👍🔥🚀🌍"  # four UTF-8 bytes each, so four byte-level symbols before any merge


def emoji_word(n: int) -> str:
    """`n` emoji with no space between them: one word for byte-level BPE."""
    return "".join(EMOJI[i % len(EMOJI)] for i in range(n))


def roberta_emoji_files(folder: Path) -> Path:
    """vocab.json + merges.txt of a byte-level BPE whose merges cover EMOJI's bytes and join emoji into runs,
    as a web-trained RoBERTa's cover emoji: a word of emoji takes several merges per emoji."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(3)
    corpus = [emoji_word(rng.randint(1, 12))[rng.randint(0, 5) :] + " the cat sat on the mat" for _ in range(500)]
    return roberta_tokenizer_files(folder, corpus, vocab_size=400)


def albert_tokenizer_json(folder: Path, corpus, vocab_size: int) -> Path:
    """A Unigram tokenizer.json trained on `corpus`, laid out as albert-base-v2's (without its
    SentencePiece character map)."""
    import tokenizers
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

    t = tokenizers.Tokenizer(models.Unigram())
    t.normalizer = normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
        ]
    )
    t.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")]
    )
    t.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=ALBERT_SPECIALS, unk_token="<unk>")
    t.train_from_iterator(corpus, trainer)
    t.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", t.token_to_id("[CLS]")), ("[SEP]", t.token_to_id("[SEP]"))],
    )
    t.save(str(folder / "tokenizer.json"))
    return folder


def _bpe_or_unigram_folder(kind: str, folder: Path) -> Path:
    import transformers

    from tests.hostile_text import WORDS

    rng = random.Random(7)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) for _ in range(400)]
    corpus += [" ".join(PRETRAIN_WORDS), " ".join(REVIEW_WORDS[len(SPECIALS) :])]
    if kind == "roberta":
        roberta_tokenizer_files(folder, corpus, vocab_size=600)
        V = len(json.loads((folder / "vocab.json").read_text(encoding="utf-8")))
        cfg = transformers.RobertaConfig(
            vocab_size=V,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=130,  # 128 tokens: rows 0 and 1 are never a token's
        )
        model = transformers.RobertaForMaskedLM(cfg)
    else:
        albert_tokenizer_json(folder, corpus, vocab_size=400)
        V = len(json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"])
        cfg = transformers.AlbertConfig(
            vocab_size=V,
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=128,
        )
        model = transformers.AlbertForPreTraining(cfg)
    model.save_pretrained(folder)
    return folder


def tiny_seq2seq_run(steps: int = 20) -> dict:
    """A finished encoder-decoder run as the Decoder page keeps it (app/seq2seq/session.py's
    RESULT): a few steps of the reversal task on the tiny encoder, long enough to decode with."""
    from bert.seq2seq.tasks import task_pairs
    from bert.train.seq2seq import Seq2SeqArgs, train_seq2seq

    args = Seq2SeqArgs(steps=steps, eval_every=10, train_pairs=200, valid_pairs=20)
    events = list(train_seq2seq(args, *task_pairs("reverse", 200, 20)))
    return {
        "bundle": events[-1].bundle,
        "metrics": events,
        "status": "done",
        "error": None,
        "stop_reason": None,
        "title": "decoder on Reverse the words",
        "run": "test-run",
    }


SAVE_LABELS = ("Save this view (HTML)", "Open as a notebook")


def offered_downloads(monkeypatch, labels: tuple[str, ...] = SAVE_LABELS, by: str = "file_name") -> dict:
    """AppTest has no server to click: the download buttons with these `labels` the pages draw from
    now on, {the button's `by` keyword (file_name or key): its builder, called as a click would}."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    offered = {}

    def spy(real):
        def download_button(*args, **kwargs):
            label, data = args[-2:]  # (self,) label, data: a column's button or the page's
            if label in labels:
                offered[kwargs.get(by)] = data
            return real(*args, **kwargs)

        return download_button

    monkeypatch.setattr(DeltaGenerator, "download_button", spy(DeltaGenerator.download_button))
    monkeypatch.setattr(st, "download_button", spy(st.download_button))
    return offered
