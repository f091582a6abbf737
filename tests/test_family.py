"""BERT's family in our own code (bert/family.py, bert/model.py) against transformers on the same
weights, fp32, to 1e-4: DistilBERT (masked LM) and ELECTRA (discriminator and generator), each
built tiny and random here with transformers, saved as a Hugging Face folder with a vocab.txt,
and read back through bert.load, as a teacher's folder would be. Odd configs too: ELECTRA with
embeddings narrower than its layers, a padding index that is not 0, inputs of every position."""

import json

import pytest
import torch

import bert
from bert import CheckpointError
from bert.checkpoint.sizes import parameter_breakdown
from bert.config import BertConfig
from bert.family import MEMBERS, differences, member
from bert.model import parameter_counts
from tests.helpers import SPECIALS, family_folder

transformers = pytest.importorskip("transformers")
TOL = 1e-4
V = 97


def vocab(n=V):
    return SPECIALS + [f"w{i}" for i in range(n - len(SPECIALS))]


def noisy(model):
    """Non-trivial LayerNorm and bias values, so every parameter matters."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or "layer_norm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def folder_of(model, tmp_path, name):
    out = tmp_path / name
    model.save_pretrained(out)
    (out / "vocab.txt").write_text("\n".join(vocab(model.config.vocab_size)) + "\n")
    return out


DISTIL = {
    "tiny": dict(vocab_size=V, dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=24),
    "odd": dict(vocab_size=V, dim=48, n_layers=3, n_heads=3, hidden_dim=50, max_position_embeddings=20, pad_token_id=3),
}
ELECTRA = {
    "same width": dict(
        vocab_size=V,
        embedding_size=32,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=24,
    ),
    "narrow embeddings": dict(
        vocab_size=V,
        embedding_size=16,
        hidden_size=48,
        num_hidden_layers=3,
        num_attention_heads=3,
        intermediate_size=50,
        max_position_embeddings=20,
        type_vocab_size=3,
        pad_token_id=2,
    ),
}


def batch(T, types=2, pad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (2, T), generator=g)
    tt = torch.randint(0, types, (2, T), generator=g)
    mask = torch.ones(2, T, dtype=torch.long)
    if pad:
        mask[1, T - 4 :] = 0
    return ids, tt, mask


def close(a, b, real=None):
    if real is not None:
        a, b = a[real], b[real]
    assert a.shape == b.shape, (a.shape, b.shape)
    d = (a - b).abs().max().item()
    assert d <= TOL, d
    return d


def compare_encoder(ours, out_hf, mask):
    real = mask.bool()
    assert len(ours.hidden_states) == len(out_hf.hidden_states)
    for x, y in zip(ours.hidden_states, out_hf.hidden_states):
        close(x, y, real)
    assert len(ours.attentions) == len(out_hf.attentions)
    for x, y in zip(ours.attentions, out_hf.attentions):
        close(x, y)
    return real


@pytest.mark.parametrize("kind", list(DISTIL))
@pytest.mark.parametrize("T", [11, "all"])
def test_distilbert_masked_lm_equals_transformers(kind, T, tmp_path):
    cfg = DISTIL[kind]
    T = cfg["max_position_embeddings"] if T == "all" else T
    torch.manual_seed(0)
    theirs = noisy(
        transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(**cfg, attn_implementation="eager"))
    )
    b = bert.load(folder_of(theirs, tmp_path, "distil"))
    assert b.config.model_type == "distilbert" and b.config.type_vocab_size == 0
    assert b.mlm_head_trained and not b.nsp_head_trained
    assert any("no next-sentence head" in n for n in b.notes) and not any("pooler" in n for n in b.notes), b.notes
    ids, types, mask = batch(T)
    with torch.no_grad():
        ours = b.model(ids, types, mask, output_attentions=True, output_hidden_states=True)  # segments ignored
        hf = theirs(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
        enc = b.model.bert(ids, attention_mask=mask, output_hidden_states=True)
    real = compare_encoder(ours.bert, hf, mask)
    close(ours.mlm_logits, hf.logits, real)
    close(enc.last_hidden_state, hf.hidden_states[-1], real)
    assert ours.replaced_logits is None


@pytest.mark.parametrize("kind", list(ELECTRA))
def test_electra_discriminator_equals_transformers(kind, tmp_path):
    cfg = ELECTRA[kind]
    torch.manual_seed(0)
    theirs = noisy(transformers.ElectraForPreTraining(transformers.ElectraConfig(**cfg, attn_implementation="eager")))
    b = bert.load(folder_of(theirs, tmp_path, "disc"))
    assert b.config.model_type == "electra" and b.config.embedding_width == cfg["embedding_size"]
    assert b.replaced_head_trained and not b.mlm_head_trained and not b.nsp_head_trained
    assert any("ELECTRA discriminator" in n for n in b.notes), b.notes
    ids, types, mask = batch(13, types=cfg.get("type_vocab_size", 2))
    with torch.no_grad():
        ours = b.model(ids, types, mask, output_attentions=True, output_hidden_states=True)
        hf = theirs(
            input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True, output_hidden_states=True
        )
    real = compare_encoder(ours.bert, hf, mask)
    close(ours.replaced_logits, hf.logits, real)


def test_electra_generator_equals_transformers(tmp_path):
    cfg = ELECTRA["narrow embeddings"]
    torch.manual_seed(0)
    theirs = noisy(transformers.ElectraForMaskedLM(transformers.ElectraConfig(**cfg, attn_implementation="eager")))
    b = bert.load(folder_of(theirs, tmp_path, "gen"))
    assert b.mlm_head_trained and not b.replaced_head_trained
    assert any("replaced-token head" in n for n in b.notes), b.notes
    ids, types, mask = batch(cfg["max_position_embeddings"], types=3)
    with torch.no_grad():
        ours = b.model(ids, types, mask, output_attentions=True, output_hidden_states=True)
        hf = theirs(
            input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True, output_hidden_states=True
        )
    real = compare_encoder(ours.bert, hf, mask)
    close(ours.mlm_logits, hf.logits, real)


@pytest.mark.parametrize(
    "model, cfg",
    [
        ("distil", DISTIL["odd"]),
        ("disc", ELECTRA["narrow embeddings"]),
        ("gen", ELECTRA["narrow embeddings"]),
    ],
)
def test_save_in_our_format_round_trips_and_sizes_are_known_before_loading(model, cfg, tmp_path):
    make = {
        "distil": lambda: transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(**cfg)),
        "disc": lambda: transformers.ElectraForPreTraining(transformers.ElectraConfig(**cfg)),
        "gen": lambda: transformers.ElectraForMaskedLM(transformers.ElectraConfig(**cfg)),
    }[model]
    torch.manual_seed(0)
    b = bert.load(folder_of(noisy(make()), tmp_path, model))
    # what the loader sizes a file against (no torch) is what the built model has
    assert parameter_breakdown(b.config) == parameter_counts(b.model)
    again = bert.load(bert.save(b, tmp_path / "ours"))
    assert again.config.model_type == b.config.model_type
    assert again.replaced_head_trained == b.replaced_head_trained
    ids, types, mask = batch(9, types=max(1, b.config.type_vocab_size))
    with torch.no_grad():
        x, y = b.model(ids, types, mask), again.model(ids, types, mask)
    close(x.mlm_logits, y.mlm_logits)
    if b.replaced_head_trained:
        close(x.replaced_logits, y.replaced_logits)


def test_a_config_beyond_the_family_or_its_limits_is_refused_before_anything_is_built(tmp_path):
    with pytest.raises(CheckpointError, match="model_type 'gpt2' is not one this app knows"):
        BertConfig.from_dict({"model_type": "gpt2"})
    with pytest.raises(CheckpointError, match="embedding_size"):
        BertConfig.from_dict({"model_type": "electra", "embedding_size": 10**6})
    with pytest.raises(CheckpointError, match="type_vocab_size"):  # only a DistilBERT has no segments
        BertConfig.from_dict({"model_type": "bert", "type_vocab_size": 0})
    d = BertConfig.from_dict({"model_type": "distilbert", "dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 99})
    assert (d.hidden_size, d.num_hidden_layers, d.num_attention_heads, d.intermediate_size) == (64, 2, 4, 99)
    assert BertConfig.from_json(d.to_json()) == d  # our own format keeps BERT's names and the member
    # a config.json asking for far more than its file holds is refused before allocation
    torch.manual_seed(0)
    folder = folder_of(
        transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(**DISTIL["tiny"])), tmp_path, "big"
    )
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "n_layers": 40}))
    with pytest.raises(CheckpointError, match="do not match"):
        bert.load(folder)


def test_what_differs_is_said_in_one_line():
    base = BertConfig(vocab_size=V, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=37)
    distil = BertConfig(
        vocab_size=V,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        model_type="distilbert",
        type_vocab_size=0,
    )
    line = differences(base, distil)
    assert line.startswith("BERT vs DistilBERT") and "layers 4 vs 2" in line
    assert "segment embeddings: yes vs none" in line
    assert differences(base, base) == ""
    assert member(distil) is MEMBERS["distilbert"] and not member(distil).next_sentence


def test_the_hugging_face_export_is_refused_for_a_member_with_a_clear_message(tmp_path):
    torch.manual_seed(0)
    b = bert.load(
        folder_of(transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(**DISTIL["tiny"])), tmp_path, "d")
    )
    with pytest.raises(CheckpointError, match="is a DistilBERT: download it in this app's format"):
        bert.export_hf(b, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- RoBERTa and ALBERT: their own tokenizers, so their folders come from tests/helpers.family_folder ---


def hf_of(kind, folder):
    """transformers' model of a family_folder, with non-trivial LayerNorm and bias values (saved again)."""
    cls = {"roberta": transformers.RobertaForMaskedLM, "albert": transformers.AlbertForPreTraining}[kind]
    model = noisy(cls.from_pretrained(folder, attn_implementation="eager"))
    model.save_pretrained(folder)
    return model


@pytest.mark.parametrize("kind", ["roberta", "albert"])
def test_roberta_and_albert_equal_transformers_through_their_own_tokenizers(kind, tmp_path):
    folder = family_folder(kind, tmp_path / kind)
    theirs = hf_of(kind, folder)
    b = bert.load(folder)
    assert b.config.model_type == kind and b.tokenizer.kind == {"roberta": "bpe", "albert": "unigram"}[kind]
    a, s = "the film was very good , and the actor sits on the mat", "a small dog runs under the big [MASK]"
    enc = b.tokenizer.encode(a, s)
    assert enc.tokens[0] == b.tokenizer.cls_token and b.tokenizer.mask_id in enc.ids  # [MASK] typed: its own mask
    T = b.config.max_tokens  # every position a token may take; the second row padded
    ids = torch.full((2, T), b.tokenizer.pad_id)
    types = torch.zeros(2, T, dtype=torch.long)
    n = min(len(enc.ids), T)
    ids[0, :n], types[0, :n] = torch.tensor(enc.ids[:n]), torch.tensor(enc.type_ids[:n])
    ids[0, n:] = torch.randint(5, b.config.vocab_size, (T - n,))
    ids[1, : T - 5] = ids[0, : T - 5]
    mask = (ids != b.tokenizer.pad_id).long()
    mask[0] = 1
    with torch.no_grad():
        ours = b.model(ids, types, mask, output_attentions=True, output_hidden_states=True)
        hf = theirs(
            input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True, output_hidden_states=True
        )
    real = compare_encoder(ours.bert, hf, mask)
    close(ours.mlm_logits, hf.logits if kind == "roberta" else hf.prediction_logits, real)
    if kind == "albert":
        close(ours.nsp_logits, hf.sop_logits)  # the sentence-order head, read as the two-sentence head
        assert b.nsp_head_trained and not any("next-sentence" in n for n in b.notes), b.notes
        assert len({id(layer) for layer in b.model.bert.layers}) == 1  # one layer's weights at every depth
    else:
        assert any("RoBERTa has no next-sentence head" in n for n in b.notes), b.notes
    with pytest.raises(bert.InputError, match=f"maximum of {T} positions"):
        b.model.bert(torch.ones(1, T + 1, dtype=torch.long) * 5)
    assert parameter_breakdown(b.config) == parameter_counts(b.model)
    again = bert.load(bert.save(b, tmp_path / "ours"))
    assert again.tokenizer.encode(a, s).ids == enc.ids
    with torch.no_grad():
        close(again.model(ids, types, mask).mlm_logits, b.model(ids, types, mask).mlm_logits)


def test_albert_shapes_other_than_one_shared_layer_are_refused():
    with pytest.raises(CheckpointError, match="one group of one layer"):
        BertConfig.from_dict({"model_type": "albert", "num_hidden_groups": 2})


def test_what_differs_names_the_tokenizer_and_shared_weights():
    base = BertConfig(vocab_size=V, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=37)
    albert = BertConfig(
        vocab_size=V,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=37,
        model_type="albert",
        embedding_size=16,
    )
    line = differences(albert, base)
    assert "tokenizer SentencePiece Unigram vs WordPiece" in line
    assert "layers' weights: one layer shared vs one set a layer" in line and "embedding size 16 vs 32" in line


# --- every member takes an attention mask (bert/attention_masks.py) through its heads ---


@pytest.mark.parametrize("kind", ["distilbert", "electra", "roberta", "albert"])
def test_every_member_reads_under_an_attention_pattern(kind, tmp_path):
    """bundle.model(..., mask_kind=...) reaches the encoder of every member: under "causal"
    each token's output is that of the input cut right after it; a prefix's first k tokens are a
    bidirectional run over those k alone; nothing is read from the padding; k past the end is refused."""
    b = bert.load(family_folder(kind, tmp_path / kind))
    noisy(b.model)
    enc = b.tokenizer.encode("the film was very good and the actor sits on the mat")
    T = len(enc.ids)
    ids, types = torch.tensor([enc.ids]), torch.tensor([enc.type_ids])
    pad = torch.full((1, 3), b.tokenizer.pad_id)
    padded = (torch.cat([ids, pad], 1), torch.cat([types, torch.zeros_like(pad)], 1))
    mask = torch.cat([torch.ones(1, T), torch.zeros(1, 3)], 1).long()
    with torch.no_grad():
        causal = b.model(ids, types, mask_kind="causal")
        both = b.model(ids, types)
        for n in (2, T // 2, T - 1):
            cut = b.model(ids[:, :n], types[:, :n], mask_kind="causal")
            close(cut.bert.last_hidden_state, causal.bert.last_hidden_state[:, :n])
            close(cut.mlm_logits, causal.mlm_logits[:, :n])
        k = 4
        prefix = b.model(*padded, mask, mask_kind=k, output_attentions=True)
        close(prefix.bert.last_hidden_state[:, :k], b.model.bert(ids[:, :k], types[:, :k]).last_hidden_state)
        assert all(a[..., T:].abs().max().item() < 1e-6 for a in prefix.bert.attentions)
        close(prefix.bert.last_hidden_state[:, :T], b.model(ids, types, mask_kind=k).bert.last_hidden_state)
    assert (causal.mlm_logits - both.mlm_logits).abs().max().item() > 1e-3  # the pattern changed the reading
    with pytest.raises(bert.InputError, match=f"has {T} tokens"):
        b.model(ids, types, mask_kind=T + 1)
