"""`Seq2SeqBundle`: an encoder-decoder with its tokenizer (what `bert.load` gives for a folder that
transformers' EncoderDecoderModel saved, and what sequence-to-sequence training makes)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..bundle import Bundle
from .generate import Trace, greedy, trace


@dataclass
class Seq2SeqBundle(Bundle):
    """`model` is a bert.seq2seq.model.EncoderDecoder; `config` its encoder's."""

    @property
    def is_classifier(self) -> bool:
        return False

    @property
    def has_mlm(self) -> bool:
        return False

    @property
    def decoder_config(self):
        return self.model.decoder_config

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())  # tied tensors are counted once

    def generate(self, texts: list[str], max_new: int = 48) -> list[str]:
        """Each text's greedy output, as text."""
        out = []
        for text in texts:
            enc = self.tokenizer.encode(text, max_length=self.config.max_tokens)
            (ids,) = greedy(self.model, torch.tensor([enc.ids]), None, max_new)
            out.append(self.tokenizer.decode(ids, skip_special_tokens=True))
        return out

    def trace(self, text: str, max_new: int = 48) -> Trace:
        return trace(self.model, self.tokenizer, text, max_new)
