"""The built-in models: which exist, what each one is, and that their files are what the cards say."""

from __future__ import annotations

import re

import pytest
import torch
from safetensors import safe_open

import bert
from app.formatting import mlm_untrained, nsp_untrained
from bert.checkpoint.builtins import (
    ASSETS,
    BUILTINS,
    available_builtins,
    describe_builtin,
    minilm_package_dir,
    what_it_read,
)
from bert.checkpoint.sizes import parameter_breakdown

SHIPPED = [n for n in BUILTINS if (ASSETS / n / "model.safetensors").is_file()]


def test_every_builtin_listed_is_loadable_and_described():
    names = available_builtins()
    assert names[0] == "minilm-l6"  # the default comes first
    assert "all-minilm-l6-v2" in names and len(set(names)) == len(names)
    for name in names:
        assert BUILTINS[name]


@pytest.mark.slow
def test_the_published_encoder_is_the_package_file_with_untrained_heads():
    b = bert.load("all-minilm-l6-v2")
    assert b.name == "all-minilm-l6-v2"
    assert mlm_untrained(b) and nsp_untrained(b)  # the pages warn about its heads
    assert "as published" in b.card and "fine-tuning" in b.card
    with safe_open(str(minilm_package_dir() / "model.safetensors"), "pt") as f:
        key = next(k for k in f.keys() if k.endswith("layer.0.attention.self.query.weight"))
        published = f.get_tensor(key)
    ours = b.model.bert.layers[0].attn.qkv.weight[: published.shape[0]]
    assert torch.equal(ours, published.float())


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_builtin_has_trained_heads_a_card_and_fits_the_size_limit(name):
    folder = ASSETS / name
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    assert size <= 50 * 2**20
    b = bert.load(name)
    assert b.notes == []  # every weight present, heads trained
    assert b.has_mlm and next(b.model.parameters()).dtype == torch.float32  # fp16 file, upcast
    card = b.card
    assert "python -m bert pretrain" in card  # the exact command that made it
    row = re.search(r"\| ([0-9.]+) \| ([0-9.]+) \| [0-9.]+ \| ([0-9.]+) \| ([0-9.]+) \(always", card)
    assert row, "the card has the held-out evaluation table"
    top1, top5, nsp, baseline = map(float, row.groups())
    assert top5 >= top1 > 2 * baseline
    read = what_it_read(card)  # one line on the text it learned from, next to BERT-base's
    assert re.search(r"\b\d+(\.\d)? M words of English\b", read) and "BERT-base read 3.3 B words" in read


EVERYDAY = [
    ("they have [MASK] working here for years .", "been", 3),  # grammar: every model
    ("i want [MASK] go home .", "to", 3),
    ("the [MASK] was shining and the sky was blue .", "sun", 10),
]  # meaning: minilm-l6


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_builtin_predicts_everyday_masked_words(name):
    b = bert.load(name)
    model = b.model.eval()
    for text, word, k in EVERYDAY if name == "minilm-l6" else EVERYDAY[:2]:
        ids = torch.tensor([b.tokenizer.encode(text).ids])
        with torch.inference_mode():
            logits = model(ids, mlm_positions=ids == b.tokenizer.mask_id).mlm_logits[0]
        top = [b.tokenizer.ids_to_tokens[i] for i in logits.topk(k).indices.tolist()]
        assert word in top, (text, top)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILTINS)
def test_a_builtin_described_without_loading_says_what_it_says_loaded(name):
    """The sidebar and Home show a shipped built-in from its files (no torch, no weights): the
    same name, config, card, notes, kind and parameter counts as the loaded model."""
    summary = describe_builtin(name)
    if name not in SHIPPED:
        assert summary is None  # loaded to be described (its notes need the weights' names)
        return
    b = bert.load(name)
    assert summary.name == b.name
    assert summary.config == b.config
    assert summary.card == b.card
    assert list(summary.notes) == b.notes
    assert (summary.is_classifier, summary.labels) == (b.is_classifier, b.labels)
    assert summary.counts == bert.parameter_counts(b.model)


def test_the_parameter_breakdown_from_the_config_is_the_models():
    sizes = dict(vocab_size=99, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40)
    cfg = bert.BertConfig(**sizes)
    assert parameter_breakdown(cfg) == bert.parameter_counts(bert.BertForPreTraining(cfg))
    cfg = bert.BertConfig(**sizes, id2label={0: "neg", 1: "pos", 2: "mixed"})
    clf = bert.BertForSequenceClassification(cfg)
    assert parameter_breakdown(cfg, classifier=True) == bert.parameter_counts(clf)


def test_what_it_read_is_the_cards_line():
    card = "# m\n\nA model.\n\n- **What it read:** 2 M words of English from `minilm-l6`; BERT-base read 3.3 B words.\n"
    assert what_it_read(card) == "2 M words of English from minilm-l6; BERT-base read 3.3 B words.", "plain text"
    assert what_it_read("# m\n\nno such line\n") == what_it_read("") == ""
