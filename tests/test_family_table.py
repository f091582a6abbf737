"""BERT's family is a table (bert/family.py's MEMBERS): a member that differs from BERT in ALBERT's
way (one shared layer, an embedding projection), RoBERTa's (positions counted past padding) and in
its MLM head's activation, added as one row and nothing else, is built, sized, saved, listed in the
models folder and loaded back by bert.load as the same model."""

from dataclasses import replace

import pytest
import torch

import bert
from bert import CheckpointError
from bert.checkpoint.models_folder import describe_folder
from bert.checkpoint.sizes import parameter_breakdown
from bert.family import MEMBERS, member
from bert.model import parameter_counts
from tests.helpers import REVIEW_WORDS, tiny_bundle, tiny_config

FAKE = replace(
    MEMBERS["bert"],
    model_type="sharedbert",
    name="SharedBERT",
    changed="one layer's weights at every depth, positions past padding",
    why="a test: a new member is a row of the table",
    mlm_activation="gelu",
    shared_layers=True,
    position_offset_from_pad=True,
    embedding_projection=True,
    pretrain_here=False,
    hf_export=False,
)


@pytest.fixture
def fake_member(monkeypatch):
    monkeypatch.setitem(MEMBERS, FAKE.model_type, FAKE)
    return FAKE


def fake_bundle() -> bert.Bundle:
    config = tiny_config(len(REVIEW_WORDS), model_type=FAKE.model_type, hidden_act="relu", pad_token_id=0)
    return tiny_bundle(seed=3, name="sharedbert", config=config)


def test_a_member_added_as_a_row_is_built_as_its_flags_say(fake_member):
    b = fake_bundle()
    model, config = b.model, b.config
    assert member(config) is fake_member
    assert len({id(layer) for layer in model.bert.layers}) == 1 and config.num_hidden_layers == 2
    assert model.bert.embeddings.project is not None  # E == C, projected all the same
    assert config.position_offset == 1 and config.max_tokens == config.max_position_embeddings - 1
    assert model.rtd is None
    h = torch.linspace(-3, 3, 7)
    assert torch.equal(model.mlm.act(h), torch.nn.functional.gelu(h))  # hidden_act is relu
    assert parameter_breakdown(config) == parameter_counts(model)


def test_a_member_added_as_a_row_is_saved_listed_and_loaded(fake_member, tmp_path):
    b = fake_bundle()
    folder = bert.save(b, tmp_path / "sharedbert")
    assert describe_folder(folder).counts == parameter_counts(b.model)  # the models folder lists it
    loaded = bert.load(folder)
    assert member(loaded.config) is fake_member
    assert loaded.notes == []
    assert len({id(layer) for layer in loaded.model.bert.layers}) == 1
    want, got = b.model.state_dict(), loaded.model.state_dict()
    assert want.keys() == got.keys() and all(torch.equal(want[k], got[k]) for k in want)
    ids = torch.tensor([[2, 10, 11, 12, 3, 0, 0]])  # [CLS] ... [SEP] then padding
    mask = ids.ne(0).long()
    with torch.no_grad():
        a = b.model(ids, attention_mask=mask)
        c = loaded.model(ids, attention_mask=mask)
    assert torch.equal(a.mlm_logits, c.mlm_logits) and torch.equal(a.nsp_logits, c.nsp_logits)


def test_without_its_row_the_folder_is_refused(fake_member, tmp_path, monkeypatch):
    folder = bert.save(fake_bundle(), tmp_path / "sharedbert")
    monkeypatch.delitem(MEMBERS, FAKE.model_type)
    with pytest.raises(CheckpointError, match="not one this app knows"):
        bert.load(folder)
