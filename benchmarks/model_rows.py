"""The model rows: inference latency, fine-tuning and pre-training steps (time, throughput,
GFLOP/s) against `transformers`, and tokenization against the Rust `tokenizers`.

Each function is one section of a run: it takes the run (`bench.Bench`: what is wanted, where
rows go) and the shared `models.Setup`. FLOPs are counted analytically: see `benchmarks/flops.py`.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from benchmarks.flops import training_flops
from bert.config import BertConfig
from bert.model import BertForPreTraining

from .models import (
    BASE,
    FT_BATCH,
    FT_LEN,
    LABELS,
    PT_BATCH,
    PT_LEN,
    TINY,
    Setup,
    finetune_batch,
    finetune_models,
    finetune_step,
    hf,
    hf_config,
    inference_inputs,
    ours_from_theirs,
    pretrain_batch,
    pretrain_models,
    pretrain_step,
    set_attn,
    theirs_from_dir,
)
from .report import Row, check, timed_row
from .timing import Timing, matmul_floor, paired, time_once

if TYPE_CHECKING:
    from .bench import Bench


# ---- 1. inference latency


def _inference_pair(model_kind: str, setup: Setup):
    """(ours encoder, theirs encoder, label) for "minilm" (the set-up's weights) or "base"
    (bert-base dimensions, random weights; tiny in --tiny)."""
    if model_kind == "minilm":
        ours = setup.bundle.model.bert.eval()
        theirs = theirs_from_dir("BertModel", setup.hf_dir, "eager").eval()
        return ours, theirs, setup.label
    config = BertConfig(**(TINY if setup.tiny else BASE))
    torch.manual_seed(1)
    theirs_pt = hf().BertForPreTraining(hf_config(config, "eager")).eval()
    ours = ours_from_theirs(theirs_pt, BertForPreTraining(config), config).bert.eval()
    label = "tiny (bert-base stand-in)" if setup.tiny else "bert-base dims, random"
    return ours, theirs_pt.bert, label


def _inference_row(b: Bench, ours, theirs, label: str, model_kind: str, kind: str, T: int) -> None:
    config = ours.config
    ids, types = inference_inputs(config, T)
    attn = kind == "attn"
    set_attn(theirs, "eager" if attn else "sdpa")

    def f_ours():
        with torch.inference_mode():
            return ours(ids, types, output_attentions=attn, output_hidden_states=attn)

    def f_theirs():
        with torch.inference_mode():
            return theirs(input_ids=ids, token_type_ids=types, output_attentions=attn, output_hidden_states=attn)

    a, c = f_ours(), f_theirs()
    diff = (a.last_hidden_state - c.last_hidden_state).abs().max().item()
    tm = paired(f_ours, f_theirs, b.reps(15, 5), warmup=1 if b.quick else 2, min_sample_s=0.05 if not b.quick else 0.02)
    name = f"infer-{model_kind}-{kind}-{T}"
    what = f"{label} 1x{T} " + ("+attentions+hidden (eager)" if attn else "(SDPA)")
    th = tm.on(b.clock)[1]
    floor = matmul_floor(config, T, b.reps(7, 3))
    note = f"max |diff| {diff:.1e}; the weight matmuls alone: {floor * 1e3:.3g} ms = {floor / th:.2f}x theirs"
    extra = {
        "max_abs_diff": diff,
        "calls": tm.calls,
        "repeats": tm.repeats,
        "matmul_floor_ms": floor * 1e3,
        "matmul_floor_ratio": floor / th,
    }
    row = timed_row(name, what, tm, b.clock, note, extra=extra)
    b.add(check(row, 1.0))  # not slower than transformers (a lower ratio would be below the matmul floor)
    if attn:  # what is left above the floor: the attention itself, softmax, LayerNorm, the copies out
        ours_ms = row.ours
        floor_note = "the floor: the encoder's weight matmuls alone at these shapes, fp32, timed in this run"
        b.add(
            check(
                Row(
                    f"{name}-floor",
                    f"{what}: ours / the matmul floor",
                    "ms",
                    ours_ms,
                    floor * 1e3,
                    ours_ms / (floor * 1e3),
                    note=floor_note,
                ),
                1.15,
            )
        )
    b.profile(f"ours {name}", f_ours, 5)
    b.profile(f"theirs {name}", f_theirs, 5)


def inference(b: Bench, setup: Setup) -> None:
    kinds = [(m, k, t) for m in ("minilm", "base") for k in ("attn", "fast") for t in (32, 128)]
    kinds = [x for x in kinds if b.wants(f"infer-{x[0]}-{x[1]}-{x[2]}")]
    for model_kind in ("minilm", "base"):
        todo = [(k, t) for m, k, t in kinds if m == model_kind]
        if not todo:
            continue
        ours, theirs, label = _inference_pair(model_kind, setup)
        for kind, T in todo:
            _inference_row(b, ours, theirs, label, model_kind, kind, T)
        del ours, theirs
        gc.collect()


# ---- 2, 3, 6. training steps and throughput


def _time_steps(b: Bench, kind: str, fa, fb) -> Timing:
    """Our and their training steps of `kind` timed in pairs (kept in b.train_times)."""
    torch.manual_seed(0)
    tm = paired(fa, fb, b.reps(7, 3), warmup=1 if b.quick else 2)
    b.train_times[kind] = tm
    return tm


def _profile_steps(b: Bench, kind: str, fa, fb) -> None:
    b.profile(f"ours {kind}-step", fa, 2)
    b.profile(f"theirs {kind}-step", fb, 2)


def _finetune_rows(b: Bench, setup: Setup, peak: dict) -> None:
    ours, theirs = finetune_models(setup)
    batch = finetune_batch(setup.config, setup.bundle.tokenizer)
    fa, fb = finetune_step(ours, batch, True), finetune_step(theirs, batch, False)
    tm = _time_steps(b, "finetune", fa, fb)
    note = (
        f"lengths {3 * FT_LEN // 4}-{FT_LEN} padded to {FT_LEN}; same AdamW (bert.train.optim) for both; "
        "ours: last layer at [CLS] only (all the pooler reads)"
    )
    what = f"{setup.label} 32x{FT_LEN} fwd+bwd+clip+AdamW (theirs SDPA)"
    b.add(check(timed_row("finetune-step", what, tm, b.clock, note), 0.9))
    flops = training_flops(ours.config, FT_BATCH, FT_LEN, num_labels=len(LABELS))
    ours_executed = training_flops(ours.config, FT_BATCH, FT_LEN, num_labels=len(LABELS), last_layer_rows=FT_BATCH)
    _throughput(b, "finetune", tm, FT_BATCH, flops, flops, peak, ours_executed)
    _profile_steps(b, "finetune", fa, fb)


def _pretrain_rows(b: Bench, setup: Setup, peak: dict) -> None:
    config = setup.config
    ours, theirs = pretrain_models(setup)
    batch = pretrain_batch(config, setup.bundle.tokenizer)
    M = int((batch["mlm_labels"] != -100).sum())
    fa, fb = pretrain_step(ours, batch, True), pretrain_step(theirs, batch, False)
    tm = _time_steps(b, "pretrain", fa, fb)
    what = f"{setup.label} 16x{PT_LEN} MLM+NSP step (theirs full logits)"
    note = f"{M} masked positions; ours: logits only there"
    b.add(check(timed_row("pretrain-step", what, tm, b.clock, note), 0.5))
    useful = training_flops(config, PT_BATCH, PT_LEN, mlm_positions=M, nsp=True)
    executed = training_flops(config, PT_BATCH, PT_LEN, mlm_positions=PT_BATCH * PT_LEN, nsp=True)
    # our last layer runs only at the masked rows and each [CLS] (EncoderLayer.forward_rows)
    ours_executed = training_flops(config, PT_BATCH, PT_LEN, mlm_positions=M, nsp=True, last_layer_rows=M + PT_BATCH)
    _throughput(b, "pretrain", tm, PT_BATCH, useful, executed, peak, ours_executed)
    _profile_steps(b, "pretrain", fa, fb)


def training(b: Bench, setup: Setup, peak: dict) -> None:
    if b.wants_any(["finetune-step", "finetune-throughput", "finetune-gflops"]):
        _finetune_rows(b, setup, peak)
        gc.collect()
    if b.wants_any(["pretrain-step", "pretrain-throughput", "pretrain-gflops"]):
        _pretrain_rows(b, setup, peak)
        gc.collect()


def _throughput(
    b: Bench, name: str, tm: Timing, B: int, flops: int, theirs_flops: int, peak: dict, ours_flops: int | None = None
) -> None:
    to, tt, ra = tm.on(b.clock)
    b.add(Row(f"{name}-throughput", "training examples per second", "ex/s", B / to, B / tt, 1.0 / ra, better="higher"))
    p = peak["best"]
    go, gt = flops / to / 1e9, flops / tt / 1e9
    note = f"{go / p:.0%} vs {gt / p:.0%} of matmul peak {p:.0f} GFLOP/s"
    ours_flops = flops if ours_flops is None else ours_flops
    if theirs_flops != flops or ours_flops != flops:
        note += (
            f"; theirs executes {theirs_flops / 1e9:.0f} GFLOP/step "
            f"({theirs_flops / tt / 1e9:.1f} GFLOP/s), ours {ours_flops / 1e9:.0f} "
            f"({ours_flops / to / 1e9:.1f} GFLOP/s)"
        )
    b.add(
        Row(
            f"{name}-gflops",
            f"useful GFLOP/s ({flops / 1e9:.1f} GFLOP/step, benchmarks/flops.py)",
            "GFLOP/s",
            go,
            gt,
            1.0 / ra,
            better="higher",
            note=note,
            extra={
                "flops_per_step": flops,
                "theirs_executed_flops": theirs_flops,
                "ours_executed_flops": ours_flops,
                "matmul_peak_gflops": p,
                "ours_fraction_of_peak": go / p,
                "theirs_fraction_of_peak": gt / p,
            },
        )
    )


# ---- 4. tokenization


def _cold_tokenize(b: Bench, new_ours, new_rust, lines: list[str]) -> tuple[Timing, dict]:
    """Paired cold runs: fresh tokenizers (empty caches) for every sample; construction is not
    timed. Returns the timing and the CPU seconds of each side (all threads: Rust uses a pool)."""
    a, c, r, cpu = [], [], [], {"ours": [], "rust": []}

    def timed(f, who):
        c0, t0 = time.process_time(), time.perf_counter()
        f()
        cpu[who].append(time.process_time() - c0)
        return time.perf_counter() - t0

    for i in range(b.reps(5, 2)):
        ours_tok, rust_tok = new_ours(), new_rust()

        def f_ours(tok=ours_tok):
            return [tok.encode(line, max_length=None).ids for line in lines]

        def f_rust(tok=rust_tok):
            return [e.ids for e in tok.encode_batch(lines)]

        if i % 2 == 0:
            x, y = timed(f_ours, "ours"), timed(f_rust, "rust")
        else:
            y, x = timed(f_rust, "rust"), timed(f_ours, "ours")
        a.append(x), c.append(y), r.append(x / y)
    med = statistics.median
    tm = Timing(
        med(a),
        med(c),
        med(r),
        1,
        len(a),
        med(cpu["ours"]),
        med(cpu["rust"]),
        med([x / y for x, y in zip(cpu["ours"], cpu["rust"])]),
    )
    return tm, cpu


def tokenization(b: Bench, setup: Setup) -> None:
    if not b.wants("tokenize"):
        return
    vocab_path, lower = _vocab_file(setup)
    lines, source = sample_lines(300 if b.args.tiny else 10_000)
    os.environ.setdefault("RAYON_NUM_THREADS", str(setup.threads))
    try:
        from tokenizers import BertWordPieceTokenizer
    except ImportError:
        b.skip("tokenize", "the `tokenizers` package is not installed")
        return
    from bert.tokenizer import Tokenizer

    def new_ours():
        return Tokenizer.from_file(vocab_path, do_lower_case=lower)

    def new_rust():
        return BertWordPieceTokenizer(str(vocab_path), lowercase=lower)

    first = new_ours()
    ours_ids = [first.encode(line, max_length=None).ids for line in lines]
    rust_ids = [e.ids for e in new_rust().encode_batch(lines)]
    mismatches = [i for i, (x, y) in enumerate(zip(ours_ids, rust_ids)) if x != y]
    tm, cpu = _cold_tokenize(b, new_ours, new_rust, lines)
    warm = time_once(lambda: [first.encode(line, max_length=None).ids for line in lines])
    n_tokens = sum(len(x) for x in ours_ids)
    ours_cpu, rust_cpu = statistics.median(cpu["ours"]), statistics.median(cpu["rust"])
    note = (
        f"{len(mismatches)}/{len(lines)} lines differ in ids; ours {len(lines) / tm.ours:,.0f} "
        f"lines/s cold, {len(lines) / warm:,.0f} warm; Rust {len(lines) / tm.theirs:,.0f} lines/s "
        f"on {os.environ.get('RAYON_NUM_THREADS')} threads; CPU seconds ours "
        f"{ours_cpu:.2f}, Rust {rust_cpu:.2f}; {source}"
    )
    o, th, ra = tm.on(b.clock)
    b.add(
        Row(
            "tokenize",
            f"{len(lines):,} lines ({n_tokens:,} tokens): encode vs Rust encode_batch",
            "s",
            o,
            th,
            ra,
            note=note,
            extra={
                "lines": len(lines),
                "tokens": n_tokens,
                "mismatches": len(mismatches),
                "first_mismatch": lines[mismatches[0]][:200] if mismatches else None,
                "ours_warm_s": warm,
                "source": source,
                "ours_cpu_s": ours_cpu,
                "rust_cpu_s": rust_cpu,
            },
        )
    )


def _vocab_file(setup: Setup) -> tuple[Path, bool]:
    """The real vocabulary when it is installed (also in --tiny: the tokenizer has no tiny
    config that would make it cheaper), else the tiny one."""
    try:
        from bert.checkpoint.builtins import minilm_package_dir

        p = minilm_package_dir() / "vocab.txt"
        if p.is_file():
            return p, True
    except Exception:  # noqa: BLE001  (no minilm package: the set-up's own vocabulary)
        pass
    p = setup.tmp / "vocab.txt"
    setup.bundle.tokenizer.save(p)
    return p, setup.bundle.tokenizer.do_lower_case


def sample_lines(n: int) -> tuple[list[str], str]:
    """n lines of English: Brown corpus sentences when cached, else generated ones."""
    try:
        from bert.data.corpus.fetch import bert_cache_dir
        from bert.data.corpus.registry import load_corpus

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
    vocab = (
        "the of and to in is was he that it for on are as with his they at be this from "
        "have or by one had not but what all were when we there can an your which their said "
        "if do will each about how up out them then she many some so these would other into "
        "has more her two like him see time could no make than first been its who now people "
        "my made over did down only way find use may water long little very after words called "
        "just where most know government unaffable running jumped quickly naïve café résumé "
        "co-operate well-known e-mail 1960s U.S. Dr. Mr. O'Brien don't can't"
    ).split()
    out = []
    for _ in range(n):
        k = rng.randint(4, 30)
        ws = [rng.choice(vocab) for _ in range(k)]
        ws[0] = ws[0].capitalize()
        if rng.random() < 0.3:
            ws.insert(rng.randint(1, k), str(rng.randint(0, 99999)))
        if rng.random() < 0.3:
            ws.insert(rng.randint(1, k), rng.choice([",", ";", "(", ")", '"', "--"]))
        out.append(" ".join(ws) + rng.choice([".", "?", "!", "..."]))
    return out
