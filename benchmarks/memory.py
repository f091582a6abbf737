"""Peak memory (VmHWM), measured in subprocesses, one per library.

The memory rows start `python -m benchmarks --worker ours|theirs --stages load,finetune,pretrain`;
a worker runs the stages in turn, resets its peak between them (/proc/self/clear_refs) and
prints one JSON line {stage: {"start_mb", "loaded_mb", "peak_mb"}}.
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from bert.config import BertConfig
from bert.model import BertForPreTraining

from .models import FT_BATCH, FT_LEN, PT_BATCH, PT_LEN, TINY, Setup, hf, hf_config, training_model, training_step
from .report import Row

if TYPE_CHECKING:
    from .bench import Bench

ROOT = Path(__file__).resolve().parent.parent


def _status_mb(pid: int | str, key: str) -> float | None:
    """A process's /proc status line `key` ("VmHWM", "VmRSS") in MB; None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb(pid: int | str = "self") -> float:
    """Peak resident set size (VmHWM) of a process in MB; getrusage as a fallback for self."""
    mb = _status_mb(pid, "VmHWM")
    if mb is not None:
        return mb
    if pid == "self":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return float("nan")


def rss_mb(pid: int | str = "self") -> float:
    mb = _status_mb(pid, "VmRSS")
    return float("nan") if mb is None else mb


def hwm_resettable() -> bool:
    """Whether this process may reset its peak RSS (Linux >= 4.0: clear_refs "5")."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ---- 7. the rows: one process per library (or per library and stage)


def _run_workers(b: Bench, setup: Setup, stages: list[str]) -> dict[str, dict]:
    # One process per library runs the stages in turn and resets its peak (VmHWM, through
    # /proc/self/clear_refs) between them; where that reset is refused, one process per stage.
    # The processes run at once: a peak is per process and does not depend on the others.
    jobs = (
        [(side, tuple(stages)) for side in ("ours", "theirs")]
        if hwm_resettable()
        else [(side, (st,)) for st in stages for side in ("ours", "theirs")]
    )
    procs = []
    for side, sts in jobs:
        cmd = [
            sys.executable,
            "-m",
            "benchmarks",
            "--worker",
            side,
            "--stages",
            ",".join(sts),
            "--threads",
            str(setup.threads),
            "--hf-dir",
            str(setup.hf_dir),
        ]
        if b.args.tiny:
            cmd.append("--tiny")
        procs.append((side, subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    res: dict[str, dict] = {"ours": {}, "theirs": {}}
    for side, proc in procs:
        out, err = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"memory worker ({side}) failed:\n{err[-2000:]}")
        res[side].update(json.loads(out.strip().splitlines()[-1]))
    return res


def memory(b: Bench, setup: Setup) -> None:
    stages = [n[len("mem-") :] for n in ("mem-load", "mem-finetune", "mem-pretrain") if b.wants(n)]
    if not stages:
        return
    res = _run_workers(b, setup, stages)
    what = {
        "load": "peak RSS: import, load minilm-l6, one 64-token forward",
        "finetune": f"peak RSS: load, 2 fine-tuning steps {FT_BATCH}x{FT_LEN}",
        "pretrain": f"peak RSS: load, 2 pre-training steps {PT_BATCH}x{PT_LEN}",
    }
    for st in stages:
        a, c = res["ours"][st], res["theirs"][st]
        note = (
            f"rise during the stage: ours {a['peak_mb'] - a['start_mb']:.0f} MB, theirs "
            f"{c['peak_mb'] - c['start_mb']:.0f} MB" + ("; theirs imports transformers" if st == "load" else "")
        )
        b.add(
            Row(
                f"mem-{st}",
                what[st] + (" (tiny)" if b.args.tiny else ""),
                "MB",
                a["peak_mb"],
                c["peak_mb"],
                a["peak_mb"] / c["peak_mb"],
                note=note,
                extra={"ours": a, "theirs": c},
            )
        )


# ---- the worker (in its own process)


def _release_memory() -> None:
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _stage_load(side: str, tiny: bool) -> None:
    from bert.checkpoint.builtins import minilm_package_dir

    if side == "ours":
        import bert

        if tiny:
            torch.manual_seed(0)
            model = BertForPreTraining(BertConfig(**TINY)).eval()
        else:
            model = bert.load("minilm-l6").model
        encoder = model.bert
        with torch.inference_mode():
            encoder(
                torch.randint(5, model.config.vocab_size, (1, 64)), output_attentions=True, output_hidden_states=True
            )
    else:
        t = hf()
        if tiny:
            torch.manual_seed(0)
            model = t.BertModel(hf_config(BertConfig(**TINY), "eager")).eval()
        else:
            model = t.BertModel.from_pretrained(str(minilm_package_dir()), attn_implementation="eager").eval()
        with torch.inference_mode():
            model(
                input_ids=torch.randint(5, model.config.vocab_size, (1, 64)),
                output_attentions=True,
                output_hidden_states=True,
            )


def _stage_train(side: str, task: str, folder: Path) -> float:
    from bert.tokenizer import Tokenizer

    tok = Tokenizer.from_file(folder / "vocab.txt")
    config = BertConfig.from_file(folder / "config.json")
    model = training_model(side, task, folder, config)
    gc.collect()
    loaded = rss_mb()
    model.train()
    step = training_step(task, model, config, tok, side == "ours")
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
