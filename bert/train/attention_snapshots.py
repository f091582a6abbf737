"""Attention over training: one probe sentence's attention, recorded every N steps.

A training loop (or whoever drives it) calls the recorder with the step number and the model
being trained; every `every` steps it runs the probe sentence through the encoder, in eval
mode and without gradients, and keeps the attention probabilities (L, H, T, T) as float16.
The Compare page replays them with a slider and shows how far each head moved since the
first snapshot.

    rec = AttentionSnapshots.for_tokenizer(bundle.tokenizer, every=50)
    for step in ...:                 # after each optimizer step
        rec(step, model)             # cheap when it is not time: one comparison

bert.train.finetune and bert.train.pretrain take such a recorder as on_step (and call it at step 0, before
the first update, too). Pre-training from scratch trains its own vocabulary, so its recorder
is made with `pending(sentence)` and bound to the tokenizer by pretrain's on_start.

Thread-safe for one writer (the training thread) and any number of readers (the page): a
snapshot is appended under a lock, and readers copy the lists under the same lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import torch

DEFAULT_PROBE = "The cat sat on the mat because it was tired."


@dataclass
class AttentionSnapshots:
    sentence: str
    tokens: list[str]
    ids: list[int]
    type_ids: list[int]
    every: int = 50
    max_snapshots: int = 200  # past this, every other snapshot is dropped and `every` doubles
    max_length: int = 64  # the probe sentence is cut to this many tokens
    pattern: str = "bidirectional"  # the attention mask kind the model trains with (bert/attention_masks.py):
    # "causal" for the next-word objective, so the snapshots show the attention it learns
    steps: list[int] = field(default_factory=list)
    attentions: list[np.ndarray] = field(default_factory=list)  # each (L, H, T, T) float16
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def for_tokenizer(
        cls, tokenizer, sentence: str = DEFAULT_PROBE, every: int = 50, max_snapshots: int = 200, max_length: int = 64
    ) -> AttentionSnapshots:
        rec = cls.pending(sentence, every, max_snapshots, max_length)
        rec.bind(tokenizer)
        return rec

    @classmethod
    def pending(
        cls, sentence: str = DEFAULT_PROBE, every: int = 50, max_snapshots: int = 200, max_length: int = 64
    ) -> AttentionSnapshots:
        """A recorder whose tokenizer is not known yet: bind(tokenizer) before the first step."""
        return cls(
            sentence=sentence,
            tokens=[],
            ids=[],
            type_ids=[],
            every=max(1, int(every)),
            max_snapshots=max(2, int(max_snapshots)),
            max_length=max(3, int(max_length)),
        )

    def bind(self, tokenizer) -> None:
        """Tokenize the probe sentence with the tokenizer of the model that will be recorded."""
        enc = tokenizer.encode(self.sentence, max_length=self.max_length)
        with self._lock:
            if self.steps:
                raise ValueError("this recorder has snapshots already: bind it before recording")
            self.tokens, self.ids, self.type_ids = list(enc.tokens), list(enc.ids), list(enc.type_ids)

    @property
    def bound(self) -> bool:
        return bool(self.ids)

    def __len__(self) -> int:
        return len(self.steps)

    def __call__(self, step: int, model) -> bool:
        """Record when `every` steps have passed since the last snapshot (always the first)."""
        if self.steps and step - self.steps[-1] < self.every:
            return False
        self.record(step, model)
        return True

    def record(self, step: int, model) -> None:
        """Run the probe sentence through model.bert (eval mode, no gradients) and keep its attention."""
        if not self.ids:
            raise ValueError("the recorder has no tokenizer yet: call bind(tokenizer) first")
        encoder = model.bert
        device = next(encoder.parameters()).device
        ids = torch.tensor([self.ids], dtype=torch.long, device=device)  # (1, T)
        types = torch.tensor([self.type_ids], dtype=torch.long, device=device)  # (1, T)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                out = encoder(ids, types, output_attentions=True, mask_kind=self.pattern)
        finally:
            model.train(was_training)
        att = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy().astype(np.float16)  # (L, H, T, T)
        self.add(step, att)

    def add(self, step: int, attention: np.ndarray) -> None:
        """Keep one snapshot (L, H, T, T) of step `step` (recorded here, or elsewhere: a job on
        another machine sends its snapshots, `after`), thinning past `max_snapshots`."""
        with self._lock:
            self.steps.append(int(step))
            self.attentions.append(np.asarray(attention, dtype=np.float16))
            if len(self.steps) > self.max_snapshots:  # keep the first, thin out the rest
                keep = [0] + list(range(2, len(self.steps), 2))
                self.steps = [self.steps[i] for i in keep]
                self.attentions = [self.attentions[i] for i in keep]
                self.every *= 2

    # ---- as data, for a job that records on another machine (app/jobs/ray_actors.py) ----
    def settings(self) -> dict:
        """What makes an empty recorder like this one (`from_settings`)."""
        return {
            "sentence": self.sentence,
            "every": self.every,
            "max_snapshots": self.max_snapshots,
            "max_length": self.max_length,
            "pattern": self.pattern,
        }

    @classmethod
    def from_settings(cls, d: dict) -> AttentionSnapshots:
        rec = cls.pending(d["sentence"], d["every"], d["max_snapshots"], d["max_length"])
        rec.pattern = d.get("pattern", rec.pattern)
        return rec

    def after(self, step: int) -> dict:
        """The probe's tokens and the snapshots of steps after `step`, as plain data."""
        with self._lock:
            new = [(s, a) for s, a in zip(self.steps, self.attentions) if s > step]
            return {
                "tokens": list(self.tokens),
                "ids": list(self.ids),
                "type_ids": list(self.type_ids),
                "steps": [s for s, _ in new],
                "attentions": [a for _, a in new],
            }

    def extend(self, sent: dict) -> int:
        """Take what `after` gave (on another machine): the probe's tokens once, then each
        snapshot. The last step now held (-1: none)."""
        if not self.ids and sent["ids"]:
            with self._lock:
                self.tokens, self.ids, self.type_ids = list(sent["tokens"]), list(sent["ids"]), list(sent["type_ids"])
        for step, att in zip(sent["steps"], sent["attentions"]):
            self.add(step, att)
        with self._lock:
            return self.steps[-1] if self.steps else -1

    def view(self) -> tuple[list[int], np.ndarray]:
        """A consistent copy for readers: (steps (S,), attentions (S, L, H, T, T) float32)."""
        with self._lock:
            steps, atts = list(self.steps), list(self.attentions)
        if not atts:
            return [], np.zeros((0,))
        return steps, np.stack(atts).astype(np.float32)

    def held(self) -> tuple[list[int], list[np.ndarray]]:
        """The steps and the snapshots themselves ((L, H, T, T) float16 each, not copied: read them,
        never write), as one consistent pair."""
        with self._lock:
            return list(self.steps), list(self.attentions)

    @staticmethod
    def change_since_start(attentions: np.ndarray) -> np.ndarray:
        """(S, L, H, T, T) -> (S, L, H): per head, the share of attention that moved since the
        first snapshot (total variation of each row, averaged over the query tokens)."""
        a = np.asarray(attentions, dtype=np.float32)
        return 0.5 * np.abs(a - a[:1]).sum(-1).mean(-1)
