"""What several test files build: the special tokens, the tiny review vocabulary, tiny models."""

from __future__ import annotations

import torch

import bert
from bert.config import BertConfig
from bert.model import BertForPreTraining, BertForSequenceClassification

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
