"""The dictionary job: a dictionary of features (bert/analysis/dictionary_training.py) trained on one layer
of a model, then the same recipe on a model of its shape with random weights (the control), as
`run_job` runs it for a JobSpec of kind DICTIONARY, here or on a Ray worker, on the one job life
cycle (Stop, the time cap, a closed tab: app/jobs/worker.py). The spec carries the settings
(DictionaryArgs as a dict), the model's source name and, where given, the sentences (else the
pre-training corpora's, read where the job runs, their held-out documents kept out).

Each phase: the vectors read, training, the quality on held-out text (variance explained, L0, dead
features, splice cost), then the part-of-speech purity of its features on the held-out Brown files
(bert/analysis/dictionary_purity.py; left out, the reason logged, where this server has not the
Brown Corpus). The phases: the model's, the control's when asked, and mini-scratch's when asked
(the same recipe at the same depth of its layers: `scratch_layer`). Stop is obeyed between the
reading's batches and after the training step it comes in; a phase stopped before its first step
is neither scored nor kept, one stopped later is scored (its quality is what the page shows), and
Stop during the model's phase means no later phase. Whatever ends it, the dictionaries trained so
far are saved under the run code (`dictionaries.safetensors`, fp32; the qualities, purities,
curves and held-out sentences in run.json), so
the page reopens them by code (`open_dictionaries`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch
from safetensors.torch import load_file, save_file

import bert
from bert import BertExplorerError
from bert.analysis import dictionary as dic
from bert.analysis.dictionary_purity import held_out_tagged, pos_purity
from bert.analysis.dictionary_quality import Quality, Splice, dictionary_quality
from bert.analysis.dictionary_training import BATCH, random_control, train_dictionary
from bert.analysis.dictionary_vectors import corpus_texts, gather_activations
from bert.train import events as ev

from ..server.memory import release_memory
from . import budget, saved_runs
from .budget import LimitError
from .dictionary_events import (
    CONTROL,
    SCRATCH,
    TRAINED,
    DictionaryDone,
    DictionaryPurity,
    DictionaryQuality,
    DictionaryStart,
    DictionaryStep,
)
from .records import Saved, SaveFailed
from .spec import DICTIONARY, BaseOf, JobSpec, known_fields, new_spec

log = logging.getLogger("bert_explorer")

WEIGHTS = "dictionaries.safetensors"
_SCALARS = ("model_name", "layer", "n_features", "k", "steps", "tokens", "texts", "seed", "seconds", "capped")
PARAMETERS = ("W_enc", "b_enc", "W_dec", "b_dec")


@dataclass
class DictionaryArgs:
    layer: int
    n_features: int = 1024
    sparsity: int = 32  # features active a token (TopK)
    steps: int = 200
    sentences: int = 1500  # held-in sentences of the corpora (when the spec carries none)
    held_out: int = 300  # held-out sentences the quality and the cards read
    control: bool = True  # train the random-weights control after the model's
    scratch: bool = False  # and the same recipe on mini-scratch (SCRATCH_MODEL) after that
    purity_sentences: int = 1000  # held-out tagged Brown sentences the purity reads (0: no purity)
    seed: int = 0
    log_every: int = 10
    threads: int = 0  # torch threads while it runs (0: the job's)


def dictionary_spec(
    code: str,
    base: str,
    args: DictionaryArgs,
    texts: tuple[list[str], list[str]] | None = None,
    student: str = "",
    title: str = "",
    info: dict[str, Any] | None = None,
) -> JobSpec:
    """A job of kind DICTIONARY on the model named `base`; `texts` (held-in, held-out) sentences,
    else the corpora's (bert.analysis.dictionary_vectors.corpus_texts) read where the job runs."""
    examples = {"texts": list(texts[0]), "held_out": list(texts[1])} if texts is not None else None
    return new_spec(DICTIONARY, code, args, student, title, info, base=base, examples=examples)


VECTOR_COPIES = 3  # the training vectors at their peak: the batches read, joined, put in text order
WORKING_MB = 180  # the forward passes' and the splice cost's working set, and what the allocator keeps


def dictionary_mb(config, args: DictionaryArgs) -> int:
    """About how many MB a dictionary job takes at its peak: the control's copy of the model's
    weights (or mini-scratch's, when larger), the training vectors (the token cap x hidden, fp32,
    VECTOR_COPIES at once), the dictionary's weights with their gradients and Adam's two moments,
    a step's codes (BATCH x features: pre-activations, their top-k, the dense codes and their
    gradients), and a fixed WORKING_MB besides FIXED_MB. Against VmHWM of a minilm-l6 job at the
    page's defaults the rule is a little over."""
    from bert.checkpoint.sizes import model_parameters

    C, F = config.hidden_size, args.n_features
    tokens = dic.caps()["tokens"]
    control = model_parameters(config) if args.control else 0
    if args.scratch:  # mini-scratch's weights, in place of the control's (one phase at a time)
        from bert.checkpoint.builtins import ASSETS

        scratch = model_parameters(bert.BertConfig.from_file(ASSETS / SCRATCH_MODEL / "config.json"))
        control = max(control, scratch)
    floats = control + VECTOR_COPIES * tokens * C + 4 * (2 * F * C + F + C) + 4 * BATCH * F
    return int(round(budget.FIXED_MB + WORKING_MB + floats * 4 / 2**20))


def check_dictionary(config, args: DictionaryArgs) -> int:
    """The job's memory estimate (MB) after its request is checked (InputError: over the
    dictionary caps; LimitError: over the job memory cap)."""
    dic.check_request(args.n_features, args.sparsity, args.steps)
    if not 1 <= args.layer <= config.num_hidden_layers:
        raise bert.InputError(f"layer must be 1..{config.num_hidden_layers}, got {args.layer}")
    mb = dictionary_mb(config, args)
    if mb > budget.max_job_mb():
        raise LimitError(
            f"Too big for this server: this dictionary would take about {mb:,} MB of memory, and the server "
            f"allows {budget.max_job_mb():,} MB per job. Ask for fewer features."
        )
    return mb


def _texts(spec: JobSpec, args: DictionaryArgs) -> tuple[list[str], list[str]]:
    if spec.examples:
        return list(spec.examples["texts"]), list(spec.examples["held_out"])
    return corpus_texts(args.sentences, args.held_out, seed=args.seed)


SCRATCH_MODEL = "mini-scratch"


def scratch_layer(layer: int, layers: int, scratch_layers: int) -> int:
    """The layer of a model of `scratch_layers` layers at the depth of `layer` of `layers`."""
    return max(1, min(scratch_layers, round(layer * scratch_layers / layers)))


def _tagged(args: DictionaryArgs):
    """The held-out tagged sentences the purity reads (None: none asked, or no Brown Corpus here)."""
    if args.purity_sentences < 1:
        return None
    try:
        return held_out_tagged(args.purity_sentences)
    except BertExplorerError as e:
        log.warning("dictionary job: no part-of-speech purity (%s)", e)
        return None


def _phase(
    bundle: bert.Bundle, phase: str, args: DictionaryArgs, texts: list[str], held: list[str], stop, tagged=None
) -> Iterator[ev.Event | tuple[dic.Dictionary, Quality]]:
    """One phase's events, then (dictionary, quality). The vectors are read in fp32 (inside
    train_dictionary and here): `gather_activations` is the one place a precision setting for
    dictionary training would apply."""
    yield DictionaryStart(phase=phase, steps=args.steps)
    done = None
    for m in train_dictionary(
        bundle, args.layer, texts, args.n_features, args.sparsity, args.steps, args.seed, stop, log_every=args.log_every
    ):
        if isinstance(m, dic.DictionaryStep):
            yield DictionaryStep(phase=phase, **asdict(m))
        else:
            done = m.dictionary
    if done is None or not done.steps:  # stopped before its first step: nothing to score or keep
        return
    t = time.perf_counter()
    acts = gather_activations(bundle, args.layer, held)
    quality = dictionary_quality(bundle, done, acts, held[: acts.texts_read])
    yield DictionaryQuality(phase=phase, quality=asdict(quality), seconds=time.perf_counter() - t)
    if tagged is not None:
        t = time.perf_counter()
        purity = pos_purity(bundle, done, tagged)
        yield DictionaryPurity(phase=phase, purity=purity.summary(), seconds=time.perf_counter() - t)
    yield done, quality


def dictionary_events(
    spec: JobSpec, stop: threading.Event, base_of: BaseOf, threads: int, resolve: Callable[[str], bert.Bundle]
) -> Iterator[ev.Event]:
    """The job's events on the model `base_of` gives: each phase's, DictionaryDone, then the run
    saved under spec.code (Saved or SaveFailed). `threads`: torch threads unless the args say;
    `resolve` finds mini-scratch by its source name for that phase (app.jobs.worker.base_model)."""
    args = known_fields(DictionaryArgs, spec.args)
    bundle = base_of()
    texts, held = _texts(spec, args)
    before = torch.get_num_threads()
    torch.set_num_threads(args.threads or threads)
    made: dict[str, tuple[dic.Dictionary, Quality]] = {}
    purities: dict[str, dict] = {}
    tagged = _tagged(args)
    try:
        phases = [TRAINED] + [CONTROL] * args.control + [SCRATCH] * (args.scratch and bundle.name != SCRATCH_MODEL)
        for phase in phases:
            if phase != TRAINED and stop.is_set():
                break
            model, phase_args = bundle, args
            if phase == CONTROL:
                model = random_control(bundle, seed=0)
            elif phase == SCRATCH:
                model = resolve(SCRATCH_MODEL)
                at = scratch_layer(args.layer, bundle.config.num_hidden_layers, model.config.num_hidden_layers)
                phase_args = replace(args, layer=at)
            for m in _phase(model, phase, phase_args, texts, held, stop, tagged):
                if isinstance(m, tuple):
                    made[phase] = m
                else:
                    if isinstance(m, DictionaryPurity):
                        purities[phase] = m.purity
                    yield m
        yield DictionaryDone(stopped=stop.is_set(), phases=list(made))
        if spec.code and made:
            yield _keep(spec, made, held, purities)
    finally:
        torch.set_num_threads(before)
        release_memory()


def _keep(
    spec: JobSpec, made: dict[str, tuple[dic.Dictionary, Quality]], held: list[str], purities: dict[str, dict]
) -> ev.Event:
    """The dictionaries saved under spec.code (app/jobs/saved_runs.py's atomic write and caps)."""
    tensors = {
        f"{i}.{p}": getattr(d.sae, p).detach().float().contiguous()
        for i, (d, _) in enumerate(made.values())
        for p in PARAMETERS
    }
    record = {
        "kind": DICTIONARY,
        "name": spec.title,
        "info": {**spec.info, "args": spec.args, "base": spec.base},
        "held_out": held,
        "dictionaries": [
            {
                "phase": phase,
                **{k: getattr(d, k) for k in _SCALARS},
                "curve": [asdict(s) for s in d.curve],
                "quality": asdict(q),
                "purity": purities.get(phase),
            }
            for phase, (d, q) in made.items()
        ],
    }
    size = sum(t.numel() * 4 for t in tensors.values())
    try:
        write = lambda folder: save_file(tensors, str(folder / WEIGHTS))  # noqa: E731
        saved_runs.save_files(spec.code, write, size, record, spec.student or None)
        return Saved(code=spec.code)
    except LimitError as e:
        return SaveFailed(message=str(e))
    except BertExplorerError as e:
        return SaveFailed(message=f"This run could not be saved on the server: {e}.")
    except Exception as e:  # noqa: BLE001 - the page says it, never a traceback
        log.exception("saving run %s", spec.code)
        return SaveFailed(message=f"The dictionaries could not be saved on the server ({type(e).__name__}).")


@dataclass
class SavedDictionaries:
    """A dictionary run read back: its record, and each phase's Dictionary (TRAINED first)."""

    code: str
    record: dict
    dictionaries: dict[str, tuple[dic.Dictionary, Quality]]

    @property
    def args(self) -> DictionaryArgs:
        return known_fields(DictionaryArgs, self.record["info"]["args"])

    @property
    def held_out(self) -> list[str]:
        return list(self.record.get("held_out") or [])

    def purity(self, phase: str) -> dict | None:
        """A phase's part-of-speech purity (Purity.summary()), None when it was not measured."""
        return next((d.get("purity") for d in self.record["dictionaries"] if d["phase"] == phase), None)


def open_dictionaries(code: str) -> SavedDictionaries:
    """Run `code`'s dictionaries (DataError: no such run, expired, or not a dictionary run)."""
    folder, record = saved_runs.run_record_of(code)
    if record.get("kind") != DICTIONARY or not (folder / WEIGHTS).is_file():
        raise bert.DataError(
            f"Run {record.get('code', code)} is not a dictionary of features: reopen it on its own page."
        )
    tensors = load_file(str(folder / WEIGHTS))
    out = {}
    for i, d in enumerate(record["dictionaries"]):
        C, F = tensors[f"{i}.W_dec"].shape
        sae = dic.SparseDictionary(C, F, int(d["k"]))
        sae.load_state_dict({p: tensors[f"{i}.{p}"] for p in PARAMETERS})
        sae.eval().requires_grad_(False)
        scalars = {k: d[k] for k in _SCALARS}
        dictionary = dic.Dictionary(sae=sae, curve=[dic.DictionaryStep(**s) for s in d["curve"]], **scalars)
        out[d["phase"]] = (dictionary, quality_of(d["quality"]))
    return SavedDictionaries(record["code"], record, out)


def quality_of(q: dict) -> Quality:
    """A Quality as a dict (a DictionaryQuality's, run.json's) back as bert.analysis.dictionary_quality.Quality."""
    return Quality(**{**q, "splice": Splice(**q["splice"]), "cloze": Splice(**q["cloze"])})
