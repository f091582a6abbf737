"""`python -m bert.bench`: our BERT side by side with Hugging Face `transformers`, in one run.

    python -m bert.bench [--quick] [--json PATH] [--markdown PATH] [--threads N] [--only ROWS]
                         [--clock wall|cpu] [--tiny] [--profile]

Both libraries get the same weights (ours are loaded from theirs with `hf_names.hf_to_ours`, or
theirs from `bert.export_hf` of ours), the same inputs, `torch.set_num_threads(N)` and
`torch.inference_mode()` for inference. Each row warms both up, then alternates them
(ours, theirs / theirs, ours / ...) for several repeats: on a shared machine the load changes
from second to second, and the ratio of two timings taken back to back is far steadier than
either timing. The table shows the median time of each and the median of the paired ratios
ours/theirs, which is what the targets are about.

Rows (`--only` takes comma-separated prefixes of these names, e.g. `--only infer-minilm,pretrain`):

    infer-{minilm,base}-{attn,fast}-{32,128}   batch 1; attn = with attentions + hidden states
                                               (transformers eager), fast = without (SDPA)
    finetune-step, finetune-throughput, finetune-gflops     32 x 64, sequence classification
    pretrain-step, pretrain-throughput, pretrain-gflops     16 x 128, MLM 15 % + NSP
    tokenize                                   10,000 lines: ours vs `tokenizers` (Rust), + id parity
    analysis-64, bertviz-head-64, bertviz-model-64          the app's work at 64 tokens
    startup-health, startup-home, mem-app      `streamlit run` cold start (vs a bare Streamlit app)
    mem-load, mem-finetune, mem-pretrain       peak RSS (VmHWM) in subprocesses, one per library;
                                               the peak is reset between stages (clear_refs)

Every timing is also taken in CPU time of the process (`--clock cpu` makes that the figure the
rows and targets use; with `--threads 1` it leaves out the time spent waiting for a core on a
loaded machine). `--profile` prints torch profiler tables (self CPU time per op) of each row run.

This is the only module of `bert/` that imports `transformers` (inside functions).
FLOPs are counted analytically: see `bert/flops.py`.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import json
import math
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

from .config import BertConfig
from .flops import training_flops
from .hf_names import hf_to_ours
from .model import BertForPreTraining, BertForSequenceClassification

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=37, max_position_embeddings=128, type_vocab_size=2)
BASE = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HOME_TEXT = "The loaded model"          # drawn on the Home page once the default model is loaded
BARE_TEXT = "Bare Streamlit app for the bench"
LABELS = {0: "negative", 1: "positive"}
FT_BATCH, FT_LEN = 32, 64
PT_BATCH, PT_LEN = 16, 128

ALL_ROWS = ([f"infer-{m}-{k}-{t}" for m in ("minilm", "base") for k in ("attn", "fast") for t in (32, 128)]
            + ["finetune-step", "finetune-throughput", "finetune-gflops",
               "pretrain-step", "pretrain-throughput", "pretrain-gflops", "tokenize",
               "analysis-64", "bertviz-head-64", "bertviz-model-64",
               "startup-health", "startup-home", "mem-app", "mem-load", "mem-finetune", "mem-pretrain"])
TINY_ROWS = [r for r in ALL_ROWS if r not in ("startup-health", "startup-home", "mem-app")]


# ---------------------------------------------------------------------------------------------
# Results


@dataclass
class Row:
    name: str
    what: str
    unit: str
    ours: float
    theirs: float
    ratio: float                       # ours / theirs (for timings: median of paired ratios)
    better: str = "lower"              # which way is better, for ours and the ratio
    target: str = ""                   # e.g. "ratio <= 0.8" or "ours <= 40 ms"
    ok: bool | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Timing:
    ours: float                         # median wall seconds per call
    theirs: float
    ratio: float                        # median of paired ratios
    calls: int                          # calls per timed sample
    repeats: int
    ours_cpu: float = float("nan")      # the same in CPU seconds of the process (all threads)
    theirs_cpu: float = float("nan")
    cpu_ratio: float = float("nan")
    ours_all: list[float] = field(default_factory=list)
    theirs_all: list[float] = field(default_factory=list)

    def on(self, clock: str) -> tuple[float, float, float]:
        """(ours, theirs, ratio) on the wall clock or in CPU time."""
        if clock == "cpu":
            return self.ours_cpu, self.theirs_cpu, self.cpu_ratio
        return self.ours, self.theirs, self.ratio

    def note(self, clock: str, scale: float = 1e3, unit: str = "ms") -> str:
        if clock == "cpu":
            return f"wall {self.ours * scale:.3g}/{self.theirs * scale:.3g} {unit}, ratio {self.ratio:.2f}"
        return (f"CPU {self.ours_cpu * scale:.3g}/{self.theirs_cpu * scale:.3g} {unit}, "
                f"ratio {self.cpu_ratio:.2f}")


_last_cpu = [0.0]


def _time_once(f: Callable[[], object], n: int = 1) -> float:
    """Wall seconds per call; the CPU seconds per call are left in _last_cpu[0]."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        f()
    _last_cpu[0] = (time.process_time() - c0) / n
    return (time.perf_counter() - t0) / n


def paired(ours: Callable[[], object], theirs: Callable[[], object], repeats: int,
           warmup: int = 1, min_sample_s: float = 0.0) -> Timing:
    """Warm both up, then alternate them for `repeats` samples each (order flipped every
    round). A sample is `calls` back-to-back calls, enough to last about `min_sample_s`."""
    ta = tb = 0.0
    for _ in range(max(1, warmup)):
        ta, tb = _time_once(ours), _time_once(theirs)
    calls = 1
    if min_sample_s > 0:
        calls = int(max(1, min(200, math.ceil(min_sample_s / max(min(ta, tb), 1e-7)))))
    a, b, r, ca, cb, cr = [], [], [], [], [], []
    for i in range(repeats):
        if i % 2 == 0:
            x = _time_once(ours, calls)
            cx = _last_cpu[0]
            y = _time_once(theirs, calls)
            cy = _last_cpu[0]
        else:
            y = _time_once(theirs, calls)
            cy = _last_cpu[0]
            x = _time_once(ours, calls)
            cx = _last_cpu[0]
        a.append(x), b.append(y), r.append(x / y)
        ca.append(cx), cb.append(cy), cr.append(cx / cy if cy > 0 else float("nan"))
    med = statistics.median
    return Timing(med(a), med(b), med(r), calls, repeats, med(ca), med(cb), med(cr), a, b)


def matmul_floor(config: BertConfig, T: int, repeats: int = 7) -> float:
    """Seconds that a 1 x T forward's weight matmuls alone take here: each layer's Q/K/V, output
    and two feed-forward products (F.linear, random data of the same shapes), the fastest of the
    repeats, times the layers. No fp32 forward doing the same work runs faster than this (both
    libraries call the same MKL products); attention, softmax, LayerNorm and GELU come on top."""
    C, Fs = config.hidden_size, config.intermediate_size
    x, h = torch.randn(1, T, C), torch.randn(1, T, Fs)
    shapes = [(x, torch.randn(n, k), torch.randn(n)) for n, k in ((3 * C, C), (C, C), (Fs, C))]
    shapes.append((h, torch.randn(C, Fs), torch.randn(C)))

    def layer():
        for a, w, b in shapes:
            F.linear(a, w, b)
    with torch.inference_mode():
        layer()
        times = sorted(_time_once(layer, 3) for _ in range(repeats))
    return times[0] * config.num_hidden_layers          # the best: a floor, not a typical time


def _check(row: Row, limit: float, on: str = "ratio") -> Row:
    value = row.ratio if on == "ratio" else row.ours
    row.ok = bool(value <= limit)
    if on == "ratio":
        row.target = f"ratio <= {limit:g}"
    else:
        row.target = f"ours <= {limit:g} {row.unit}"
    return row


# ---------------------------------------------------------------------------------------------
# Machine


def peak_rss_mb(pid: int | str = "self") -> float:
    """Peak resident set size (VmHWM) of a process in MB; getrusage as a fallback for self."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    if pid == "self":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return float("nan")


def rss_mb(pid: int | str = "self") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def matmul_gflops(repeats: int = 10, n: int = 1024) -> dict:
    """The machine's fp32 matmul speed at the current thread count: best and median of
    `repeats` timed n x n @ n x n products (2 n^3 FLOPs each)."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    out = torch.empty(n, n)
    for _ in range(2):
        torch.mm(a, b, out=out)
    ts = [_time_once(lambda: torch.mm(a, b, out=out)) for _ in range(repeats)]
    flops = 2 * n ** 3
    return {"best": flops / min(ts) / 1e9, "median": flops / statistics.median(ts) / 1e9}


# ---------------------------------------------------------------------------------------------
# Models: ours and theirs on the same weights


def _transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import transformers
    transformers.logging.set_verbosity_error()
    try:
        transformers.utils.logging.disable_progress_bar()
    except AttributeError:
        pass
    return transformers


def hf_config(config: BertConfig, attn: str = "eager", **kw):
    t = _transformers()
    return t.BertConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers, num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, hidden_act=config.hidden_act,
        hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size, initializer_range=config.initializer_range,
        layer_norm_eps=config.layer_norm_eps, pad_token_id=config.pad_token_id,
        attn_implementation=attn, **kw)


def ours_from_theirs(theirs, ours: torch.nn.Module, config: BertConfig) -> torch.nn.Module:
    """Load a transformers model's weights into ours; every weight of ours must be covered
    (the tied MLM decoder aside), every weight of theirs used."""
    state, unused = hf_to_ours(theirs.state_dict(), config)
    res = ours.load_state_dict(state, strict=False)
    missing = [k for k in res.missing_keys if k != "mlm.word_embeddings.weight"]
    if missing or unused or res.unexpected_keys:
        raise RuntimeError(f"weights do not line up: missing {missing[:3]}, unused {unused[:3]}, "
                           f"unexpected {res.unexpected_keys[:3]}")
    return ours


def set_attn(model, impl: str):
    """Switch a transformers model between eager and SDPA attention."""
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(impl)
    else:  # older transformers read it from the config on every forward
        model.config._attn_implementation = impl
    return model


@dataclass
class Setup:
    """What the rows need, built once per run."""
    tiny: bool
    threads: int
    tmp: Path
    bundle: object = None               # ours: bert.Bundle of minilm-l6 (or tiny)
    hf_dir: Path | None = None          # the same weights as a transformers folder
    label: str = "minilm-l6"

    @property
    def config(self) -> BertConfig:
        return self.bundle.model.config


def _tiny_tokenizer(vocab_size: int):
    from .tokenizer import Tokenizer
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return Tokenizer(specials + [f"w{i}" for i in range(vocab_size - len(specials))])


def build_setup(tiny: bool, threads: int, tmp: Path) -> Setup:
    from . import checkpoint
    s = Setup(tiny=tiny, threads=threads, tmp=tmp)
    if tiny:
        torch.manual_seed(0)
        config = BertConfig(**TINY)
        model = BertForPreTraining(config).eval()
        s.bundle = checkpoint.Bundle(model=model, tokenizer=_tiny_tokenizer(config.vocab_size),
                                     name="tiny")
        s.label = "tiny"
    else:
        s.bundle = checkpoint.load("minilm-l6")
    s.hf_dir = checkpoint.export_hf(s.bundle, tmp / "hf")
    return s


def theirs_from_dir(cls_name: str, folder: Path, attn: str, **kw):
    t = _transformers()
    return getattr(t, cls_name).from_pretrained(str(folder), attn_implementation=attn, **kw)


# ---------------------------------------------------------------------------------------------
# Inputs


def _special_ids(tokenizer) -> dict[str, int]:
    return {"pad": tokenizer.pad_id, "cls": tokenizer.cls_id, "sep": tokenizer.sep_id,
            "mask": tokenizer.mask_id, "unk": tokenizer.unk_id}


def _low_id(vocab_size: int) -> int:
    """Smallest id used for random 'words' (above the specials of both vocab layouts)."""
    return 999 if vocab_size > 2000 else 5


def inference_inputs(config: BertConfig, T: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(_low_id(config.vocab_size), config.vocab_size, (1, T), generator=g)
    return ids, torch.zeros_like(ids)


def finetune_batch(config: BertConfig, tokenizer, B: int = FT_BATCH, T: int = FT_LEN, seed: int = 0):
    """B texts of 3T/4..T tokens ([CLS] ... [SEP]) padded to T: a batch from length-bucketed
    batching with dynamic padding, as bert.finetune makes them. Binary labels."""
    sp = _special_ids(tokenizer)
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3 * T // 4, T + 1, (B,), generator=g)
    lengths[0] = T
    ids = torch.randint(_low_id(config.vocab_size), config.vocab_size, (B, T), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    ids[:, 0] = sp["cls"]
    ids[torch.arange(B), lengths - 1] = sp["sep"]
    ids = ids.masked_fill(mask == 0, sp["pad"])
    labels = torch.randint(0, 2, (B,), generator=g)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def pretrain_batch(config: BertConfig, tokenizer, B: int = PT_BATCH, T: int = PT_LEN, seed: int = 0):
    """B sentence pairs packed to T tokens: [CLS] A [SEP] B [SEP], MLM 15 % (80/10/10), NSP labels."""
    from .data import MLMMasker
    sp = _special_ids(tokenizer)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(_low_id(config.vocab_size), config.vocab_size, (B, T), generator=g)
    split = torch.randint(T // 4, 3 * T // 4, (B,), generator=g)
    ids[:, 0] = sp["cls"]
    ids[torch.arange(B), split] = sp["sep"]
    ids[:, T - 1] = sp["sep"]
    types = (torch.arange(T)[None, :] > split[:, None]).long()
    mask = torch.ones(B, T, dtype=torch.long)
    masker = MLMMasker(vocab_size=config.vocab_size, mask_id=sp["mask"], pad_id=sp["pad"],
                       special_ids=sorted(set(sp.values())))
    masked, mlm_labels = masker(ids, mask, g)
    nsp = torch.randint(0, 2, (B,), generator=g)
    return {"input_ids": masked, "token_type_ids": types, "attention_mask": mask,
            "mlm_labels": mlm_labels, "nsp_labels": nsp}


# ---------------------------------------------------------------------------------------------
# Training steps (what a step of bert.finetune / bert.pretrain does: forward, backward,
# gradient clipping, AdamW)


def _adamw(model):
    from .optim import adamw
    return adamw(model, 1e-5)


def ours_classifier(config: BertConfig) -> BertForSequenceClassification:
    config = copy.deepcopy(config)
    config.id2label = dict(LABELS)
    config.classifier_pooling = "cls"        # transformers' head: the pooler's output
    return BertForSequenceClassification(config)


def finetune_models(setup: Setup):
    """(ours, theirs): classifiers on the minilm encoder, same random head, train mode."""
    theirs = theirs_from_dir("BertForSequenceClassification", setup.hf_dir, "sdpa",
                             num_labels=len(LABELS))
    ours = ours_from_theirs(theirs, ours_classifier(setup.config), setup.config)
    return ours.train(), theirs.train()


def pretrain_models(setup: Setup):
    theirs = theirs_from_dir("BertForPreTraining", setup.hf_dir, "sdpa")
    ours = ours_from_theirs(theirs, BertForPreTraining(copy.deepcopy(setup.config)), setup.config)
    return ours.train(), theirs.train()


def finetune_step(model, batch, ours: bool) -> Callable[[], float]:
    opt = _adamw(model)

    def step():
        opt.zero_grad(set_to_none=True)
        if ours:
            loss = model(batch["input_ids"], attention_mask=batch["attention_mask"],
                         labels=batch["labels"]).loss
        else:
            loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                         labels=batch["labels"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return step


def pretrain_step(model, batch, ours: bool) -> Callable[[], float]:
    opt = _adamw(model)

    def step():
        opt.zero_grad(set_to_none=True)
        if ours:
            loss = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                         mlm_labels=batch["mlm_labels"], nsp_labels=batch["nsp_labels"]).loss
        else:
            loss = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                         attention_mask=batch["attention_mask"], labels=batch["mlm_labels"],
                         next_sentence_label=batch["nsp_labels"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return step


# ---------------------------------------------------------------------------------------------
# Profiling (--profile)


def profile_top(f: Callable[[], object], calls: int = 3, rows: int = 12, title: str = "") -> str:
    from torch.profiler import ProfilerActivity, profile
    f()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            f()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)
    return f"--- profile: {title} ({calls} calls) ---\n{table}"


# ---------------------------------------------------------------------------------------------
# Sections


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick or args.tiny
        self.only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
        self.clock = args.clock
        self.rows: list[Row] = []
        self.skipped: list[dict] = []
        self.meta: dict = {}
        self.profiles: list[str] = []
        self.train_times: dict[str, Timing] = {}

    # selection
    def wants(self, name: str) -> bool:
        return not self.only or any(name.startswith(p) for p in self.only)

    def wants_any(self, names) -> bool:
        return any(self.wants(n) for n in names)

    def add(self, row: Row) -> None:
        if self.wants(row.name):
            self.rows.append(row)
            print(format_row(row), flush=True)

    def skip(self, name: str, reason: str) -> None:
        if self.wants(name):
            self.skipped.append({"name": name, "reason": reason})
            print(f"  {name:<22} skipped: {reason}", flush=True)

    def reps(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def profile(self, title: str, f: Callable[[], object], calls: int = 3) -> None:
        if self.args.profile:
            text = profile_top(f, calls, title=title)
            self.profiles.append(text)
            print(text, flush=True)

    # ---- 1. inference latency
    def inference(self, setup: Setup) -> None:
        kinds = [(m, k, t) for m in ("minilm", "base") for k in ("attn", "fast") for t in (32, 128)]
        kinds = [x for x in kinds if self.wants(f"infer-{x[0]}-{x[1]}-{x[2]}")]
        for model_kind in ("minilm", "base"):
            todo = [(k, t) for m, k, t in kinds if m == model_kind]
            if not todo:
                continue
            if model_kind == "minilm":
                ours = setup.bundle.model.bert.eval()
                theirs = theirs_from_dir("BertModel", setup.hf_dir, "eager").eval()
                label = setup.label
            else:
                config = BertConfig(**(TINY if setup.tiny else BASE))
                torch.manual_seed(1)
                t = _transformers()
                theirs_pt = t.BertForPreTraining(hf_config(config, "eager")).eval()
                ours = ours_from_theirs(theirs_pt, BertForPreTraining(config), config).bert.eval()
                theirs = theirs_pt.bert
                label = "tiny (bert-base stand-in)" if setup.tiny else "bert-base dims, random"
            config = ours.config
            for kind, T in todo:
                ids, types = inference_inputs(config, T)
                attn = kind == "attn"
                set_attn(theirs, "eager" if attn else "sdpa")

                def f_ours(ids=ids, types=types, attn=attn):
                    with torch.inference_mode():
                        return ours(ids, types, output_attentions=attn, output_hidden_states=attn)

                def f_theirs(ids=ids, types=types, attn=attn):
                    with torch.inference_mode():
                        return theirs(input_ids=ids, token_type_ids=types, output_attentions=attn,
                                      output_hidden_states=attn)
                a, b = f_ours(), f_theirs()
                diff = (a.last_hidden_state - b.last_hidden_state).abs().max().item()
                tm = paired(f_ours, f_theirs, self.reps(15, 5), warmup=1 if self.quick else 2,
                            min_sample_s=0.05 if not self.quick else 0.02)
                name = f"infer-{model_kind}-{kind}-{T}"
                what = (f"{label} 1x{T} " + ("+attentions+hidden (eager)" if attn else "(SDPA)"))
                o, th, ra = tm.on(self.clock)
                floor = matmul_floor(config, T, self.reps(7, 3))
                row = Row(name, what, "ms", o * 1e3, th * 1e3, ra,
                          note=f"{tm.note(self.clock)}; max |diff| {diff:.1e}; the weight matmuls "
                               f"alone: {floor * 1e3:.3g} ms = {floor / th:.2f}x theirs",
                          extra={"max_abs_diff": diff, "calls": tm.calls, "repeats": tm.repeats,
                                 "matmul_floor_ms": floor * 1e3, "matmul_floor_ratio": floor / th})
                self.add(_check(row, 0.8 if attn else 1.0))
                self.profile(f"ours {name}", f_ours, 5)
                self.profile(f"theirs {name}", f_theirs, 5)
            del ours, theirs
            gc.collect()

    # ---- 2, 3, 6. training steps and throughput
    def training(self, setup: Setup, peak: dict) -> None:
        config = setup.config
        tok = setup.bundle.tokenizer
        if self.wants_any(["finetune-step", "finetune-throughput", "finetune-gflops"]):
            ours, theirs = finetune_models(setup)
            batch = finetune_batch(config, tok)
            fa, fb = finetune_step(ours, batch, True), finetune_step(theirs, batch, False)
            torch.manual_seed(0)
            tm = paired(fa, fb, self.reps(7, 3), warmup=1 if self.quick else 2)
            self.train_times["finetune"] = tm
            o, th, ra = tm.on(self.clock)
            row = Row("finetune-step", f"{setup.label} 32x{FT_LEN} fwd+bwd+clip+AdamW (theirs SDPA)",
                      "ms", o * 1e3, th * 1e3, ra,
                      note=f"{tm.note(self.clock)}; lengths {3 * FT_LEN // 4}-{FT_LEN} padded to "
                           f"{FT_LEN}; same AdamW (bert.optim) for both; ours: last layer at "
                           f"[CLS] only (all the pooler reads)")
            self.add(_check(row, 0.9))
            flops = training_flops(ours.config, FT_BATCH, FT_LEN, num_labels=len(LABELS))
            ours_executed = training_flops(ours.config, FT_BATCH, FT_LEN, num_labels=len(LABELS),
                                           last_layer_rows=FT_BATCH)
            self._throughput("finetune", tm, FT_BATCH, flops, flops, peak, ours_executed)
            self.profile("ours finetune-step", fa, 2)
            self.profile("theirs finetune-step", fb, 2)
            del ours, theirs, fa, fb
            gc.collect()
        if self.wants_any(["pretrain-step", "pretrain-throughput", "pretrain-gflops"]):
            ours, theirs = pretrain_models(setup)
            batch = pretrain_batch(config, tok)
            M = int((batch["mlm_labels"] != -100).sum())
            fa, fb = pretrain_step(ours, batch, True), pretrain_step(theirs, batch, False)
            torch.manual_seed(0)
            tm = paired(fa, fb, self.reps(7, 3), warmup=1 if self.quick else 2)
            self.train_times["pretrain"] = tm
            o, th, ra = tm.on(self.clock)
            row = Row("pretrain-step", f"{setup.label} 16x{PT_LEN} MLM+NSP step (theirs full logits)",
                      "ms", o * 1e3, th * 1e3, ra,
                      note=f"{tm.note(self.clock)}; {M} masked positions; ours: logits only there")
            self.add(_check(row, 0.5))
            useful = training_flops(config, PT_BATCH, PT_LEN, mlm_positions=M, nsp=True)
            executed = training_flops(config, PT_BATCH, PT_LEN, mlm_positions=PT_BATCH * PT_LEN, nsp=True)
            # our last layer runs only at the masked rows and each [CLS] (EncoderLayer.forward_rows)
            ours_executed = training_flops(config, PT_BATCH, PT_LEN, mlm_positions=M, nsp=True,
                                           last_layer_rows=M + PT_BATCH)
            self._throughput("pretrain", tm, PT_BATCH, useful, executed, peak, ours_executed)
            self.profile("ours pretrain-step", fa, 2)
            self.profile("theirs pretrain-step", fb, 2)
            del ours, theirs, fa, fb
            gc.collect()

    def _throughput(self, name: str, tm: Timing, B: int, flops: int, theirs_flops: int, peak: dict,
                    ours_flops: int | None = None):
        to, tt, ra = tm.on(self.clock)
        self.add(Row(f"{name}-throughput", "training examples per second", "ex/s",
                     B / to, B / tt, 1.0 / ra, better="higher"))
        p = peak["best"]
        go, gt = flops / to / 1e9, flops / tt / 1e9
        note = f"{go / p:.0%} vs {gt / p:.0%} of matmul peak {p:.0f} GFLOP/s"
        ours_flops = flops if ours_flops is None else ours_flops
        if theirs_flops != flops or ours_flops != flops:
            note += (f"; theirs executes {theirs_flops / 1e9:.0f} GFLOP/step "
                     f"({theirs_flops / tt / 1e9:.1f} GFLOP/s), ours {ours_flops / 1e9:.0f} "
                     f"({ours_flops / to / 1e9:.1f} GFLOP/s)")
        self.add(Row(f"{name}-gflops", f"useful GFLOP/s ({flops / 1e9:.1f} GFLOP/step, bert/flops.py)",
                     "GFLOP/s", go, gt, 1.0 / ra, better="higher", note=note,
                     extra={"flops_per_step": flops, "theirs_executed_flops": theirs_flops,
                            "ours_executed_flops": ours_flops,
                            "matmul_peak_gflops": p, "ours_fraction_of_peak": go / p,
                            "theirs_fraction_of_peak": gt / p}))

    # ---- 4. tokenization
    def tokenization(self, setup: Setup) -> None:
        if not self.wants("tokenize"):
            return
        vocab_path, lower = self._vocab_file(setup)
        n = 300 if self.args.tiny else 10_000
        lines, source = sample_lines(n)
        os.environ.setdefault("RAYON_NUM_THREADS", str(setup.threads))
        try:
            from tokenizers import BertWordPieceTokenizer
        except ImportError:
            self.skip("tokenize", "the `tokenizers` package is not installed")
            return
        from .tokenizer import Tokenizer
        ours_tok = [Tokenizer.from_file(vocab_path, do_lower_case=lower)]
        rust_tok = [BertWordPieceTokenizer(str(vocab_path), lowercase=lower)]

        def f_ours():
            return [ours_tok[0].encode(line, max_length=None).ids for line in lines]

        def f_rust():
            return [e.ids for e in rust_tok[0].encode_batch(lines)]
        # cold: fresh tokenizers (empty caches) for every sample; construction is not timed
        ours_ids, rust_ids = f_ours(), f_rust()
        mismatches = [i for i, (a, b) in enumerate(zip(ours_ids, rust_ids)) if a != b]
        a, b, r, cpu = [], [], [], {"ours": [], "rust": []}

        def timed(f, who):
            c0, t0 = time.process_time(), time.perf_counter()
            f()
            cpu[who].append(time.process_time() - c0)      # all threads (Rust uses a pool)
            return time.perf_counter() - t0
        for i in range(self.reps(5, 2)):
            ours_tok[0] = Tokenizer.from_file(vocab_path, do_lower_case=lower)
            rust_tok[0] = BertWordPieceTokenizer(str(vocab_path), lowercase=lower)
            if i % 2 == 0:
                x, y = timed(f_ours, "ours"), timed(f_rust, "rust")
            else:
                y, x = timed(f_rust, "rust"), timed(f_ours, "ours")
            a.append(x), b.append(y), r.append(x / y)
        warm = _time_once(f_ours)
        med = statistics.median
        tm = Timing(med(a), med(b), med(r), 1, len(a), med(cpu["ours"]), med(cpu["rust"]),
                    med([x / y for x, y in zip(cpu["ours"], cpu["rust"])]))
        n_tokens = sum(len(x) for x in ours_ids)
        note = (f"{len(mismatches)}/{len(lines)} lines differ in ids; ours {len(lines) / tm.ours:,.0f} "
                f"lines/s cold, {len(lines) / warm:,.0f} warm; Rust {len(lines) / tm.theirs:,.0f} lines/s "
                f"on {os.environ.get('RAYON_NUM_THREADS')} threads; CPU seconds ours "
                f"{statistics.median(cpu['ours']):.2f}, Rust {statistics.median(cpu['rust']):.2f}; {source}")
        o, th, ra = tm.on(self.clock)
        self.add(Row("tokenize", f"{len(lines):,} lines ({n_tokens:,} tokens): encode vs Rust encode_batch",
                     "s", o, th, ra, note=note,
                     extra={"lines": len(lines), "tokens": n_tokens, "mismatches": len(mismatches),
                            "first_mismatch": lines[mismatches[0]][:200] if mismatches else None,
                            "ours_warm_s": warm, "source": source,
                            "ours_cpu_s": statistics.median(cpu["ours"]),
                            "rust_cpu_s": statistics.median(cpu["rust"])}))

    def _vocab_file(self, setup: Setup) -> tuple[Path, bool]:
        """The real vocabulary when it is installed (also in --tiny: the tokenizer has no tiny
        config that would make it cheaper), else the tiny one."""
        try:
            from .checkpoint import minilm_package_dir
            p = minilm_package_dir() / "vocab.txt"
            if p.is_file():
                return p, True
        except Exception:
            pass
        p = setup.tmp / "vocab.txt"
        setup.bundle.tokenizer.save(p)
        return p, setup.bundle.tokenizer.do_lower_case

    # ---- 5. the app's work
    def app_work(self, setup: Setup) -> None:
        names = ["analysis-64", "bertviz-head-64", "bertviz-model-64"]
        if not self.wants_any(names):
            return
        bundle = setup.bundle
        text = text_of_length(bundle.tokenizer, 64)
        enc = bundle.tokenizer.encode(text)
        analyze, how = app_analysis_function()
        key = f"bench:{bundle.name}"
        theirs = theirs_from_dir("BertModel", setup.hf_dir, "eager").eval()
        ids = torch.tensor([enc.ids])
        types = torch.tensor([enc.type_ids])

        def f_ours():
            return analyze(key, text, None, bundle)

        def f_theirs():
            with torch.inference_mode():
                return theirs(input_ids=ids, token_type_ids=types, output_attentions=True,
                              output_hidden_states=True)
        result = f_ours()
        tm = paired(f_ours, f_theirs, self.reps(15, 5), warmup=1 if self.quick else 2)
        o, th, ra = tm.on(self.clock)
        row = Row("analysis-64", f"{setup.label} full analysis, {len(enc.ids)} tokens ({how})", "ms",
                  o * 1e3, th * 1e3, ra,
                  note=f"{tm.note(self.clock)}; theirs: eager forward with attentions + hidden "
                       f"states only (no embedding parts, q/k/v, numpy copies)")
        self.add(_check(row, 40.0, on="ours"))
        self.profile("ours analysis-64", f_ours, 5)
        attentions = result.attentions                                     # (L, H, T, T) numpy
        tokens = list(enc.tokens)
        self._bertviz(tokens, attentions)

    def _bertviz(self, tokens, attentions) -> None:
        if not self.wants_any(["bertviz-head-64", "bertviz-model-64"]):
            return
        try:
            from app import bertviz_html as bv
        except Exception as e:  # noqa: BLE001  (app not importable: say why)
            for n in ("bertviz-head-64", "bertviz-model-64"):
                self.skip(n, f"app/bertviz_html.py not importable: {type(e).__name__}: {e}")
            return
        try:
            import bertviz
        except ImportError:
            bertviz = None
        per_layer = tuple(torch.from_numpy(attentions[i][None].copy()) for i in range(attentions.shape[0]))
        for name, ours_fn, theirs_name in (("bertviz-head-64", "head_view_html", "head_view"),
                                           ("bertviz-model-64", "model_view_html", "model_view")):
            fn = getattr(bv, ours_fn, None)
            if fn is None or bertviz is None:
                self.skip(name, f"app.bertviz_html.{ours_fn} or bertviz missing")
                continue
            view = fn(tokens, attentions)
            ours_mb = view.size_bytes / 1e6 if hasattr(view, "size_bytes") else len(str(view).encode()) / 1e6
            their = getattr(bertviz, theirs_name)(per_layer, tokens, html_action="return")
            theirs_mb = len(their.data.encode("utf-8")) / 1e6
            shown = getattr(view, "num_tokens", len(tokens))
            note = (f"ours self-contained (d3, jQuery inlined), {shown}/{len(tokens)} tokens, "
                    f"layers {len(getattr(view, 'layers', ()))}; bertviz's loads its JS from a CDN")
            row = Row(name, f"{theirs_name} HTML at {len(tokens)} tokens (app defaults)", "MB",
                      ours_mb, theirs_mb, ours_mb / theirs_mb, note=note,
                      extra={"tokens_shown": shown})
            self.add(_check(row, 3.0, on="ours"))

    # ---- 5. cold start (not in --tiny)
    def startup(self) -> None:
        names = ["startup-health", "startup-home", "mem-app"]
        if not self.wants_any(names):
            return
        if self.args.tiny:
            for n in names:
                self.skip(n, "--tiny: no Streamlit server or browser")
            return
        if not (ROOT / "streamlit_app.py").is_file():
            for n in names:
                self.skip(n, "streamlit_app.py not found")
            return
        browser_reason = None
        if self.args.quick:
            browser_reason = "--quick: no browser"
        elif not Path(CHROMIUM).exists():
            browser_reason = f"{CHROMIUM} not installed"
        else:
            try:
                import playwright.sync_api  # noqa: F401
            except ImportError:
                browser_reason = "playwright not installed"
        if not self.wants_any(["startup-home", "mem-app"]):
            browser_reason = browser_reason or "not asked for"
        bare_dir = Path(tempfile.mkdtemp(prefix="bench-bare-"))
        (bare_dir / "app.py").write_text(f"import streamlit as st\nst.title({BARE_TEXT!r})\n")
        runs = {"ours": [], "bare": []}
        with _browser(browser_reason is None) as page_factory:
            for i in range(self.reps(3, 1)):
                order = ("ours", "bare") if i % 2 == 0 else ("bare", "ours")
                for who in order:
                    if who == "ours":
                        res = cold_start(ROOT / "streamlit_app.py", ROOT, page_factory, HOME_TEXT)
                    else:
                        res = cold_start(bare_dir / "app.py", bare_dir, page_factory, BARE_TEXT)
                    runs[who].append(res)
        shutil.rmtree(bare_dir, ignore_errors=True)

        def med(who, k):
            vals = [r[k] for r in runs[who] if r.get(k) is not None]
            return statistics.median(vals) if vals else None
        ho, hb = med("ours", "health"), med("bare", "health")
        ratios = [a["health"] / b["health"] for a, b in zip(runs["ours"], runs["bare"])]
        self.add(Row("startup-health", "`streamlit run` until /_stcore/health answers", "s", ho, hb,
                     statistics.median(ratios), note="theirs: a bare one-line Streamlit app"))
        if browser_reason is not None:
            self.skip("startup-home", browser_reason)
            self.skip("mem-app", browser_reason)
            return
        do, db = med("ours", "drawn"), med("bare", "drawn")
        ratios = [a["drawn"] / b["drawn"] for a, b in zip(runs["ours"], runs["bare"])]
        self.add(Row("startup-home", "`streamlit run` until the Home page has drawn (Chromium)", "s",
                     do, db, statistics.median(ratios),
                     note=f"waits for '{HOME_TEXT}' (default model loaded) vs the bare app's title"))
        mo, mb = med("ours", "peak_mb"), med("bare", "peak_mb")
        self.add(Row("mem-app", "server peak RSS once the Home page has drawn", "MB", mo, mb, mo / mb,
                     note="the app with the default model vs a bare Streamlit app"))

    # ---- 7. memory, in subprocesses
    def memory(self, setup: Setup) -> None:
        stages = [n[len("mem-"):] for n in ("mem-load", "mem-finetune", "mem-pretrain") if self.wants(n)]
        if not stages:
            return
        # One process per library runs the stages in turn and resets its peak (VmHWM, through
        # /proc/self/clear_refs) between them; where that reset is refused, one process per stage.
        # The processes run at once: a peak is per process and does not depend on the others.
        jobs = [(side, tuple(stages)) for side in ("ours", "theirs")] if hwm_resettable() else \
            [(side, (st,)) for st in stages for side in ("ours", "theirs")]
        procs = []
        for side, sts in jobs:
            cmd = [sys.executable, "-m", "bert.bench", "--worker", side, "--stages", ",".join(sts),
                   "--threads", str(setup.threads), "--hf-dir", str(setup.hf_dir)]
            if self.args.tiny:
                cmd.append("--tiny")
            procs.append((side, subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, text=True)))
        res: dict[str, dict] = {"ours": {}, "theirs": {}}
        for side, proc in procs:
            out, err = proc.communicate(timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(f"memory worker ({side}) failed:\n{err[-2000:]}")
            res[side].update(json.loads(out.strip().splitlines()[-1]))
        what = {"load": "peak RSS: import, load minilm-l6, one 64-token forward",
                "finetune": f"peak RSS: load, 2 fine-tuning steps {FT_BATCH}x{FT_LEN}",
                "pretrain": f"peak RSS: load, 2 pre-training steps {PT_BATCH}x{PT_LEN}"}
        for st in stages:
            a, b = res["ours"][st], res["theirs"][st]
            note = (f"rise during the stage: ours {a['peak_mb'] - a['start_mb']:.0f} MB, theirs "
                    f"{b['peak_mb'] - b['start_mb']:.0f} MB"
                    + ("; theirs imports transformers" if st == "load" else ""))
            self.add(Row(f"mem-{st}", what[st] + (" (tiny)" if self.args.tiny else ""), "MB",
                         a["peak_mb"], b["peak_mb"], a["peak_mb"] / b["peak_mb"], note=note,
                         extra={"ours": a, "theirs": b}))

    # ---- run everything
    def run(self) -> dict:
        args = self.args
        t_start = time.perf_counter()
        torch.set_num_threads(args.threads)
        tmp = Path(tempfile.mkdtemp(prefix="bert-bench-"))
        try:
            t = _transformers()
            peak = matmul_gflops(5 if self.quick else 10)
            load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
            self.meta = {
                "cpu": cpu_name(), "cores": os.cpu_count(), "threads": args.threads,
                "loadavg": list(load), "torch": torch.__version__, "transformers": t.__version__,
                "python": platform.python_version(), "quick": bool(args.quick), "tiny": bool(args.tiny),
                "clock": args.clock, "threads_reason": getattr(args, "threads_reason", ""),
                "matmul_gflops_best": peak["best"], "matmul_gflops_median": peak["median"],
            }
            print(header(self.meta), flush=True)
            sections = self.meta["section_seconds"] = {}
            t0 = time.perf_counter()
            setup = build_setup(args.tiny, args.threads, tmp)
            sections["setup"] = time.perf_counter() - t0
            self.meta["rss_after_loading_default_mb"] = rss_mb()
            for name, fn in (("inference", lambda: self.inference(setup)),
                             ("training", lambda: self.training(setup, peak)),
                             ("tokenization", lambda: self.tokenization(setup)),
                             ("app", lambda: self.app_work(setup)),
                             ("startup", self.startup),
                             ("memory", lambda: self.memory(setup))):
                t0 = time.perf_counter()
                fn()
                sections[name] = round(time.perf_counter() - t0, 1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.meta["seconds"] = time.perf_counter() - t_start
        self.meta["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
        return {"meta": self.meta, "rows": [asdict(r) for r in self.rows], "skipped": self.skipped}


# ---------------------------------------------------------------------------------------------
# Helpers for the app rows


def app_analysis_function():
    """The app's own analysis (app.resources._analyze without its cache) when importable,
    else the equivalent model call."""
    try:
        from app import resources
        fn = getattr(resources._analyze, "__wrapped__", None)
        if fn is not None:
            return fn, "app.resources._analyze, uncached"
    except Exception:  # noqa: BLE001  (no app here: time the model call it makes)
        pass

    class _Result:
        pass

    def equivalent(key, text, text_b, bundle):
        enc = bundle.tokenizer.encode(text, text_b)
        with torch.inference_mode():
            out = bundle.model.bert(torch.tensor([enc.ids]), torch.tensor([enc.type_ids]),
                                    output_attentions=True, output_hidden_states=True,
                                    output_embedding_parts=True, output_qkv=True)
        r = _Result()
        r.attentions = torch.stack([a[0] for a in out.attentions]).numpy()
        return r
    return equivalent, "equivalent model call"


def text_of_length(tokenizer, n: int) -> str:
    """A text that encodes to exactly n tokens, [CLS] and [SEP] included."""
    words = [w for w in _WORDS if w in tokenizer.vocab]
    if not words:  # a tiny vocab: its own plain words
        words = [t for t in tokenizer.ids_to_tokens if t.isalnum() and t not in ("[UNK]",)]
    out = [words[i % len(words)] for i in range(n - 2)]
    text = " ".join(out)
    assert len(tokenizer.encode(text, max_length=None).ids) == n, "word list does not tokenise 1:1"
    return text


_WORDS = ("the quick brown fox jumps over a lazy dog while children in the park watch and laugh "
          "at how it runs along river bank before evening light fades behind old stone houses").split()


def sample_lines(n: int) -> tuple[list[str], str]:
    """n lines of English: Brown corpus sentences when cached, else generated ones."""
    try:
        from .corpus import bert_cache_dir, load_corpus
        if (bert_cache_dir() / "corpora" / "brown.jsonl").is_file():
            corpus = load_corpus("brown")
            lines = [s for d in corpus.documents for s in d][:n]
            if len(lines) == n:
                return lines, "Brown corpus sentences"
    except Exception:  # noqa: BLE001  (no corpus cache: generate)
        pass
    return generated_lines(n), "generated English-like lines"


def generated_lines(n: int, seed: int = 0) -> list[str]:
    """Deterministic varied lines: common words, capitals, numbers, punctuation, some accents."""
    import random
    rng = random.Random(seed)
    vocab = ("the of and to in is was he that it for on are as with his they at be this from "
             "have or by one had not but what all were when we there can an your which their said "
             "if do will each about how up out them then she many some so these would other into "
             "has more her two like him see time could no make than first been its who now people "
             "my made over did down only way find use may water long little very after words called "
             "just where most know government unaffable running jumped quickly naïve café résumé "
             "co-operate well-known e-mail 1960s U.S. Dr. Mr. O'Brien don't can't").split()
    out = []
    for _ in range(n):
        k = rng.randint(4, 30)
        ws = [rng.choice(vocab) for _ in range(k)]
        ws[0] = ws[0].capitalize()
        if rng.random() < 0.3:
            ws.insert(rng.randint(1, k), str(rng.randint(0, 99999)))
        if rng.random() < 0.3:
            ws.insert(rng.randint(1, k), rng.choice([",", ";", "(", ")", "\"", "--"]))
        out.append(" ".join(ws) + rng.choice([".", "?", "!", "..."]))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _browser(enabled: bool):
    """Yields a function that opens a new page (or None when disabled)."""
    if not enabled:
        yield None
        return
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser.new_page
        finally:
            browser.close()


def cold_start(script: Path, cwd: Path, page_factory, text: str, timeout: float = 180.0) -> dict:
    """Start `streamlit run script`; seconds until /_stcore/health answers and (with a page)
    until `text` is on the page; the server's peak RSS then. The server is stopped after."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    page = page_factory() if page_factory else None
    log = tempfile.TemporaryFile()
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    out = {"health": None, "drawn": None, "peak_mb": None}
    try:
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"streamlit exited with {proc.returncode}: "
                                   f"{log.read().decode(errors='replace')[-1500:]}")
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"streamlit did not answer on {url} within {timeout:.0f} s")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        out["health"] = time.perf_counter() - t0
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.05)
        if page is not None:
            page.goto(url)
            page.get_by_text(text).first.wait_for(timeout=timeout * 1000)
            out["drawn"] = time.perf_counter() - t0
            out["peak_mb"] = peak_rss_mb(proc.pid)
    finally:
        if page is not None:
            page.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return out


# ---------------------------------------------------------------------------------------------
# Memory worker: `python -m bert.bench --worker ours|theirs --stages load,finetune,pretrain`
# prints one JSON line {stage: {"start_mb", "loaded_mb", "peak_mb"}}


def hwm_resettable() -> bool:
    """Whether this process may reset its peak RSS (Linux >= 4.0: clear_refs "5")."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _release_memory() -> None:
    gc.collect()
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _stage_load(side: str, tiny: bool) -> None:
    from .checkpoint import minilm_package_dir
    if side == "ours":
        import bert
        if tiny:
            torch.manual_seed(0)
            model = BertForPreTraining(BertConfig(**TINY)).eval()
        else:
            model = bert.load("minilm-l6").model
        encoder = model.bert
        with torch.inference_mode():
            encoder(torch.randint(5, model.config.vocab_size, (1, 64)), output_attentions=True,
                    output_hidden_states=True)
    else:
        t = _transformers()
        if tiny:
            torch.manual_seed(0)
            model = t.BertModel(hf_config(BertConfig(**TINY), "eager")).eval()
        else:
            model = t.BertModel.from_pretrained(str(minilm_package_dir()), attn_implementation="eager").eval()
        with torch.inference_mode():
            model(input_ids=torch.randint(5, model.config.vocab_size, (1, 64)), output_attentions=True,
                  output_hidden_states=True)


def _stage_train(side: str, task: str, folder: Path) -> float:
    from .checkpoint import read_weights
    from .tokenizer import Tokenizer
    tok = Tokenizer.from_file(folder / "vocab.txt")
    config = BertConfig.from_file(folder / "config.json")
    if side == "ours":
        state, _ = hf_to_ours(read_weights(folder / "model.safetensors"), config)
        model = ours_classifier(config) if task == "finetune" else BertForPreTraining(config)
        model.load_state_dict(state, strict=False)
        del state
    else:
        cls = "BertForSequenceClassification" if task == "finetune" else "BertForPreTraining"
        kw = {"num_labels": len(LABELS)} if task == "finetune" else {}
        model = theirs_from_dir(cls, folder, "sdpa", **kw)
    gc.collect()
    loaded = rss_mb()
    model.train()
    if task == "finetune":
        step = finetune_step(model, finetune_batch(config, tok), side == "ours")
    else:
        step = pretrain_step(model, pretrain_batch(config, tok), side == "ours")
    for _ in range(2):
        step()
    return loaded


def worker(side: str, stages: list[str], tiny: bool, hf_dir: str | None) -> dict:
    out = {}
    for stage in stages:
        _release_memory()
        if len(stages) > 1 and not hwm_resettable():
            raise RuntimeError("several stages in one process need a resettable peak RSS")
        start = rss_mb()
        if stage == "load":
            _stage_load(side, tiny)
            loaded = rss_mb()
        else:
            loaded = _stage_train(side, stage, Path(hf_dir))
        out[stage] = {"start_mb": start, "loaded_mb": loaded, "peak_mb": peak_rss_mb()}
    return out


# ---------------------------------------------------------------------------------------------
# Printing


def header(meta: dict) -> str:
    load = meta["loadavg"]
    return (f"BERT Explorer bench: ours vs transformers {meta['transformers']}, torch {meta['torch']}, "
            f"{meta['threads']} thread(s) ({meta.get('threads_reason') or 'given'})\n"
            f"CPU: {meta['cpu']}, {meta['cores']} cores, load average {load[0]:.1f} at start; "
            f"fp32 matmul 1024^2: {meta['matmul_gflops_best']:.0f} GFLOP/s best, "
            f"{meta['matmul_gflops_median']:.0f} median\n"
            f"timings on the {meta.get('clock', 'wall')} clock; ratio = ours/theirs "
            f"(timings: median of back-to-back paired ratios)\n"
            f"  {'row':<22} {'ours':>10} {'theirs':>10} {'unit':<8} {'ratio':>7}  {'target':<18}  what / note")


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def format_row(r: Row) -> str:
    mark = "" if r.ok is None else (" ✓" if r.ok else " ✗")
    target = (r.target + mark) if r.target else ""
    ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
    text = f"  {r.name:<22} {_fmt(r.ours):>10} {_fmt(r.theirs):>10} {r.unit:<8} {ratio:>7}  {target:<18}  {r.what}"
    if r.note:
        text += f"\n  {'':<22} {'':>10} {'':>10} {'':<8} {'':>7}  {'':<18}  {r.note}"
    return text


def format_table(result: dict) -> str:
    rows = [Row(**r) for r in result["rows"]]
    lines = [header(result["meta"])] + [format_row(r) for r in rows]
    lines += [f"  {s['name']:<22} skipped: {s['reason']}" for s in result["skipped"]]
    misses = [r.name for r in rows if r.ok is False]
    secs = result["meta"].get("section_seconds")
    if secs:
        lines.append("seconds per section: " + ", ".join(f"{k} {v:.0f}" for k, v in secs.items()))
    lines.append(f"targets met: {sum(1 for r in rows if r.ok)}/{sum(1 for r in rows if r.ok is not None)}"
                 + (f"; missed: {', '.join(misses)}" if misses else "")
                 + f"; {result['meta']['seconds']:.0f} s")
    return "\n".join(lines)


def format_markdown(result: dict) -> str:
    """The table as Markdown, for the README's Performance section."""
    out = ["| row | what | ours | theirs | unit | ours/theirs | target |", "|---|---|---:|---:|---|---:|---|"]
    for r in result["rows"]:
        mark = "" if r["ok"] is None else (" ✓" if r["ok"] else " ✗")
        out.append(f"| {r['name']} | {r['what']} | {_fmt(r['ours'])} | {_fmt(r['theirs'])} | {r['unit']} | "
                   f"{r['ratio']:.2f} | {r['target']}{mark} |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def default_threads() -> tuple[int, str]:
    """The usable cores, or 1 when the machine is already busy (1-minute load average above the
    core count): then every extra OpenMP thread mostly waits for the others at each operation's
    barrier, and on a 2-core machine under load a 2-thread run was 5-10x slower than 1 thread."""
    cores = _usable_cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores, "the usable cores"
    if cores > 1 and load > cores:
        return 1, f"load average {load:.1f} > {cores} cores, so 1 thread (--threads to override)"
    return cores, "the usable cores"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bert.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats, no browser (under 3 minutes)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    p.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads for both libraries (default: the usable cores, or 1 "
                        "when the load average is above the core count)")
    p.add_argument("--only", metavar="ROWS", help="comma-separated row-name prefixes, e.g. infer-base,pretrain")
    p.add_argument("--tiny", action="store_true",
                   help="a tiny config for every model row, a small tokenization sample, no server "
                        "or browser (for the test: keeps the bench working, measures nothing useful)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="what the timing rows and targets use: wall-clock time (default) or the "
                        "process's CPU time (steadier on a loaded machine with --threads 1)")
    p.add_argument("--profile", action="store_true", help="print torch profiler tables of the rows run")
    p.add_argument("--worker", choices=("ours", "theirs"), help=argparse.SUPPRESS)
    p.add_argument("--stages", default="load,finetune,pretrain", help=argparse.SUPPRESS)
    p.add_argument("--hf-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.threads_reason = "--threads"
    if args.threads is None:
        args.threads, args.threads_reason = default_threads()
    if args.threads < 1:
        p.error("--threads must be at least 1")
    if args.only:
        unknown = [s for s in args.only.split(",") if s.strip()
                   and not any(r.startswith(s.strip()) for r in ALL_ROWS)]
        if unknown:
            p.error(f"--only: no row starts with {', '.join(unknown)} (rows: {', '.join(ALL_ROWS)})")
    torch.set_num_threads(args.threads)
    if args.worker:
        stages = [x for x in args.stages.split(",") if x]
        print(json.dumps(worker(args.worker, stages, args.tiny, args.hf_dir)), flush=True)
        return 0
    bench = Bench(args)
    result = bench.run()
    result["profiles"] = bench.profiles
    print("\n" + format_table(result), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=float) + "\n", encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(format_markdown(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
