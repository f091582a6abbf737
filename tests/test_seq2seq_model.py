"""The encoder-decoder against transformers' EncoderDecoderModel on the same weights: a folder it
saved loads with bert.load and gives its logits, decoder and cross attentions (1e-4); ours saved
loads in transformers with no missing keys; made from an encoder, the decoder's layers are copies."""

import pytest
import torch

import bert
from bert.errors import CheckpointError, InputError
from bert.seq2seq.bundle import Seq2SeqBundle
from bert.seq2seq.model import build_encoder_decoder, decoder_refusal
from tests.helpers import SPECIALS, tiny_bundle, tiny_config

transformers = pytest.importorskip("transformers")

WORDS = SPECIALS + [f"w{i}" for i in range(45)]


def hf_folder(tmp_path, dec_layers=3):
    """A random BERT2BERT saved by transformers, with our vocab.txt beside it."""
    from transformers import BertConfig, EncoderDecoderConfig, EncoderDecoderModel

    sizes = dict(vocab_size=len(WORDS), hidden_size=32, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=40)  # fmt: skip
    enc = BertConfig(num_hidden_layers=2, **sizes)
    dec = BertConfig(num_hidden_layers=dec_layers, is_decoder=True, add_cross_attention=True, **sizes)
    cfg = EncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    cfg.decoder_start_token_id, cfg.pad_token_id = 2, 0
    torch.manual_seed(0)
    model = EncoderDecoderModel(config=cfg)
    with torch.no_grad():  # LayerNorms and biases away from 1 / 0, so a misplaced one shows
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    folder = tmp_path / "hf-ed"
    model.save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    return folder


def hf_load(folder):
    from transformers import EncoderDecoderModel

    return EncoderDecoderModel.from_pretrained(folder, attn_implementation="eager").eval()


def inputs():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, len(WORDS), (2, 7), generator=g)
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0  # padding in the source
    dec = torch.randint(5, len(WORDS), (2, 4), generator=g)
    return ids, mask, dec


def test_a_transformers_folder_gives_its_logits_and_attentions(tmp_path):
    folder = hf_folder(tmp_path)
    ours = bert.load(folder)
    assert isinstance(ours, Seq2SeqBundle) and not ours.notes
    theirs = hf_load(folder)
    ids, mask, dec = inputs()
    with torch.no_grad():
        h = theirs(input_ids=ids, attention_mask=mask, decoder_input_ids=dec, output_attentions=True)
        o = ours.model(ids, attention_mask=mask, decoder_input_ids=dec, output_attentions=True)
    assert o.logits.shape == (2, 4, len(WORDS))
    torch.testing.assert_close(o.logits, h.logits, atol=1e-4, rtol=0)
    assert len(o.decoder_attentions) == len(o.cross_attentions) == 3
    for a, b in zip(o.decoder_attentions, h.decoder_attentions):
        assert a.shape == (2, 4, 4, 4)
        torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
    for a, b in zip(o.cross_attentions, h.cross_attentions):
        assert a.shape == (2, 4, 4, 7)
        torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
    assert float(o.cross_attentions[0][1, :, :, 5:].abs().max()) == 0.0  # source padding never attended
    assert float(o.decoder_attentions[0][:, :, 0, 1:].abs().max()) == 0.0  # step 0 sees itself only


def test_saved_ours_loads_in_transformers_with_no_missing_keys(tmp_path):
    from transformers import EncoderDecoderModel

    ours = bert.load(hf_folder(tmp_path, dec_layers=2))
    out = bert.save(ours, tmp_path / "ours")
    theirs, info = EncoderDecoderModel.from_pretrained(out, attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ids, mask, dec = inputs()
    with torch.no_grad():
        h = theirs.eval()(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).logits
        o = ours.model(ids, attention_mask=mask, decoder_input_ids=dec).logits
    torch.testing.assert_close(o, h, atol=1e-4, rtol=0)
    again = bert.load(out)  # and bert.load reads it back
    torch.testing.assert_close(again.model(ids, attention_mask=mask, decoder_input_ids=dec).logits, o)


def test_made_from_an_encoder_the_decoder_layers_are_its_copies():
    base = tiny_bundle()
    tok = base.tokenizer
    model, said = build_encoder_decoder(base.model, tok.cls_id, tok.sep_id, tok.pad_id, layers=3)
    enc = base.model.bert
    for i in range(2):
        torch.testing.assert_close(model.decoder.layers[i].attn.qkv.weight, enc.layers[i].attn.qkv.weight)
        torch.testing.assert_close(model.decoder.layers[i].ffn_out.weight, enc.layers[i].ffn_out.weight)
    torch.testing.assert_close(model.decoder.embeddings.word_embeddings.weight, enc.embeddings.word_embeddings.weight)
    assert model.decoder.lm.word_embeddings is model.decoder.embeddings.word_embeddings  # tied
    assert any("layers 3-3 fresh" in s for s in said) and any("cross-attention fresh" in s for s in said)
    before = enc.layers[0].attn.qkv.weight.clone()
    with torch.no_grad():
        model.decoder.layers[0].attn.qkv.weight.add_(1.0)
    torch.testing.assert_close(enc.layers[0].attn.qkv.weight, before)  # the base is untouched


def test_an_albert_cannot_start_a_decoder_and_says_why():
    cfg = tiny_config(len(SPECIALS) + 3, model_type="albert", embedding_size=16)
    assert "shared by every depth" in decoder_refusal(cfg)
    base = tiny_bundle(words=SPECIALS + ["a", "b", "c"], config=cfg)
    with pytest.raises(InputError, match="shared by every depth"):
        build_encoder_decoder(base.model, 2, 3, 0, from_encoder=True)
    model, said = build_encoder_decoder(base.model, 2, 3, 0, from_encoder=False)  # a fresh decoder serves
    assert any("fresh" in s for s in said)
    out = model(torch.tensor([[2, 5, 6, 3]]), decoder_input_ids=torch.tensor([[2, 5]]))
    assert out.logits.shape == (1, 2, len(SPECIALS) + 3)


def test_a_folder_whose_decoder_has_no_cross_attention_is_refused(tmp_path):
    import json

    folder = hf_folder(tmp_path, dec_layers=1)
    c = json.loads((folder / "config.json").read_text())
    c["decoder"]["add_cross_attention"] = False
    (folder / "config.json").write_text(json.dumps(c))
    with pytest.raises(CheckpointError, match="cross-attention"):
        bert.load(folder)
