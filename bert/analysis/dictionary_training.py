"""Training a dictionary of features (dictionary.py) on one layer's vectors (dictionary_vectors.py)
with bert/train/trainer.py's loop, and the control: the same recipe on a model of the same shape
with random weights (Heap et al. 2025: such a dictionary's features look just as interpretable,
so what a trained model adds is the difference).

Dimension letters: N tokens, C hidden size.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from ..bundle import Bundle
from ..errors import InputError
from ..train.trainer import Step, Trainer, TrainingKind
from .dictionary import Dictionary, DictionaryStep, SparseDictionary, caps, check_request
from .dictionary_vectors import gather_activations

LEARNING_RATE = 3e-3  # Adam: large enough for a few hundred steps, small enough that few features die
BATCH = 1024  # tokens a training step


@dataclass
class DictionaryDone:
    """The last event: the dictionary (stopped: Stop was asked before the last step)."""

    dictionary: Dictionary
    stopped: bool


class _DictionaryFit(TrainingKind):
    """`fit_dictionary` as a kind of bert/train/trainer.py's loop: shuffled batches of the vectors,
    the squared error over the data's variance, the decoder's columns kept at unit length."""

    def __init__(self, x: Tensor, sae: SparseDictionary, seed: int, batch: int, steps: int):
        self.x, self.sae, self.seed, self.batch, self.steps = x, sae, seed, batch, steps
        self.var = ((x - x.mean(0)) ** 2).sum(1).mean().clamp_min(1e-12)  # mean squared distance to the mean
        self.fired, self.t0 = torch.zeros(sae.n_features, dtype=torch.bool), time.perf_counter()

    def batches(self) -> Iterator[Tensor]:
        g = torch.Generator().manual_seed(self.seed)
        order, at = torch.randperm(self.x.shape[0], generator=g), 0
        while True:
            if at + self.batch > len(order):
                order, at = torch.randperm(self.x.shape[0], generator=g), 0
            yield self.x[order[at : at + self.batch]]  # (batch, C)
            at += self.batch

    def loss(self, xb: Tensor):
        x_hat, f = self.sae(xb)
        return ((x_hat - xb) ** 2).sum(1).mean() / self.var, f

    @torch.no_grad()
    def edit_grads(self) -> None:
        w, gw = self.sae.W_dec, self.sae.W_dec.grad
        gw -= w * (w * gw).sum(0, keepdim=True)  # the gradient along each unit column removed

    def stepped(self, s: Step) -> None:
        self.sae.normalise_decoder()
        self.fired |= (s.out > 0).any(0)

    def step_event(self, s: Step) -> DictionaryStep:
        xb, f = s.batch, s.out
        event = DictionaryStep(
            step=s.step,
            steps=self.steps,
            variance_explained=float(1 - s.loss.detach() * self.var * len(xb) / ((xb - xb.mean(0)) ** 2).sum()),
            l0=float((f > 0).sum(1).float().mean()),
            dead=float(1 - self.fired.float().mean()),
            seconds=time.perf_counter() - self.t0,
        )
        self.fired.zero_()
        return event


def fit_dictionary(
    x: Tensor,
    n_features: int,
    sparsity: int,
    steps: int,
    seed: int = 0,
    batch: int = BATCH,
    lr: float = LEARNING_RATE,
    log_every: int = 10,
    stop=None,
) -> Iterator[DictionaryStep | SparseDictionary]:
    """Train a dictionary on vectors x (N, C), shuffled: DictionaryStep events, then the
    SparseDictionary. Adam on the squared error over the data's variance; the decoder's columns
    renormalised after each step (and the gradient along each column removed before it, so the
    step is spent on the direction, not the norm). `stop`: an Event, set to end early."""
    n_features, k, steps = check_request(n_features, sparsity, steps)
    if x.ndim != 2 or x.shape[0] < 2:
        raise InputError(f"need at least two vectors (N, C) to learn from, got shape {tuple(x.shape)}")
    x = x.float()
    sae = SparseDictionary(x.shape[1], n_features, k, seed)
    with torch.no_grad():
        sae.b_dec.copy_(x.mean(0))
    opt = torch.optim.Adam(sae.parameters(), lr=lr)
    trainer = Trainer(opt, sae.parameters(), max_steps=steps, log_every=log_every, stop=stop, diverged=None)
    yield from trainer.run(_DictionaryFit(x, sae, seed, batch, steps))
    sae.eval()
    for p in sae.parameters():
        p.requires_grad_(False)
    yield sae


def train_dictionary(
    bundle: Bundle,
    layer: int,
    texts: list[str],
    n_features: int,
    sparsity: int,
    steps: int,
    seed: int = 0,
    stop=None,
    max_tokens: int | None = None,
    batch: int = BATCH,
    log_every: int = 10,
) -> Iterator[DictionaryStep | DictionaryDone]:
    """Gather `layer`'s vectors of `texts` (held-in text: the caller keeps its held-out text out;
    every other text with some of its word pieces masked, see gather_activations), then train a
    dictionary of `n_features` with `sparsity` active a token for `steps` steps: DictionaryStep
    events, then DictionaryDone (none when `stop` came while the vectors were read: nothing
    trained). Refuses (InputError) a request over the server's caps before reading anything."""
    n_features, k, steps = check_request(n_features, sparsity, steps)
    cap = caps()
    if not isinstance(texts, str) and len(texts) > cap["texts"]:
        raise InputError(
            f"{len(texts)} texts is more than this server reads for a dictionary ({cap['texts']}, "
            "BERT_EXPLORER_DICT_MAX_TEXTS): give fewer"
        )
    t0 = time.perf_counter()
    acts = gather_activations(bundle, layer, texts, max_tokens, masked=True, seed=seed, stop=stop)
    if stop is not None and stop.is_set():  # Stop while the vectors were read: nothing trained
        return
    curve: list[DictionaryStep] = []
    sae = None
    for m in fit_dictionary(acts.vectors, n_features, k, steps, seed, batch=batch, log_every=log_every, stop=stop):
        if isinstance(m, SparseDictionary):
            sae = m
        else:
            curve.append(m)
            yield m
    done = curve[-1].step if curve else 0
    yield DictionaryDone(
        dictionary=Dictionary(
            sae=sae,
            model_name=bundle.name,
            layer=acts.layer,
            n_features=n_features,
            k=k,
            steps=done,
            tokens=len(acts.vectors),
            texts=acts.texts_read,
            seed=seed,
            seconds=time.perf_counter() - t0,
            capped=acts.capped,
            curve=curve,
        ),
        stopped=done < steps,
    )


def random_control(bundle: Bundle, seed: int = 0) -> Bundle:
    """A model of `bundle`'s shape and tokenizer with freshly initialised weights (the control)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = type(bundle.model)(bundle.config).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return Bundle(
        model=model,
        tokenizer=bundle.tokenizer,
        name=f"{bundle.name} with random weights",
        source=f"random initialisation (seed {seed}) of {bundle.name}'s shape",
    )
