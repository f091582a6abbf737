"""transformers' EncoderDecoderModel folders: read (`load_encoder_decoder`, which `bert.load` calls
for a config.json of model_type "encoder-decoder") and written (`save_encoder_decoder`).

Such a folder holds config.json with the encoder's and the decoder's configs under "encoder" and
"decoder" (the decoder a BERT with is_decoder and add_cross_attention), model.safetensors with
weights named `encoder.*` (the encoder as its member's model: `encoder.encoder.layer.N...`),
`decoder.bert.*` (embeddings and layers, each layer with a `crossattention` block) and
`decoder.cls.predictions.*` (the LM head; its output matrix is the tied word embeddings, not
stored), and the tokenizer's files. Encoder and decoder must have one width and one vocabulary.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import torch
from safetensors.torch import save_file

from ..atomic_files import atomic_write_text, written_dir
from ..config import MAX_CONFIG_BYTES, BertConfig
from ..errors import BertExplorerError, CheckpointError
from ..family import member
from ..public import public_path, public_text
from ..seq2seq.bundle import Seq2SeqBundle
from ..seq2seq.model import EncoderDecoder, pairing_refusal
from ..tokenizer.for_folder import tokenizer_for_folder
from .weights import read_weights

MODEL_TYPE = "encoder-decoder"
_CROSS = {  # transformers' cross-attention names (under decoder.bert.encoder.layer.N.) -> ours
    "crossattention.output.dense": "cross.out",
    "crossattention.output.LayerNorm": "cross_norm",
}


def is_encoder_decoder(folder: Path) -> bool:
    """Whether folder/config.json says model_type "encoder-decoder" (False when unreadable)."""
    path = Path(folder) / "config.json"
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return False
        return json.loads(path.read_text(encoding="utf-8")).get("model_type") == MODEL_TYPE
    except (OSError, ValueError, AttributeError):
        return False


def _do_lower_case(folder: Path) -> bool:
    """tokenizer_config.json's do_lower_case (True when absent or unreadable, as BERT's uncased)."""
    path = folder / "tokenizer_config.json"
    try:
        if path.is_file() and path.stat().st_size <= MAX_CONFIG_BYTES:
            return bool(json.loads(path.read_text(encoding="utf-8")).get("do_lower_case", True))
    except (ValueError, OSError, AttributeError):
        pass
    return True


def _configs(d: dict) -> tuple[BertConfig, BertConfig]:
    enc, dec = d.get("encoder"), d.get("decoder")
    if not isinstance(enc, dict) or not isinstance(dec, dict):
        raise CheckpointError("config.json of an encoder-decoder must have 'encoder' and 'decoder' objects")
    encoder, decoder = BertConfig.from_dict(enc), BertConfig.from_dict(dec)
    if not member(decoder).hf_export or not decoder.extra.get("add_cross_attention"):
        raise CheckpointError(
            "the decoder must be a BERT with add_cross_attention (transformers' BertLMHeadModel); this one is "
            f"a {member(decoder).name}{'' if decoder.extra.get('add_cross_attention') else ' without cross-attention'}"
        )
    if why := pairing_refusal(encoder, decoder):
        raise CheckpointError(why)
    return encoder, decoder


def _parameters_within_limit(encoder: BertConfig, decoder: BertConfig) -> int:
    """The encoder-decoder's parameter count (the decoder's cross-attention too), or CheckpointError
    when its fp32 weights would pass the server's model limit."""
    from .sizes import encoder_parameters, max_model_mb

    needed = encoder_parameters(encoder) + encoder_parameters(decoder)
    needed += decoder.num_hidden_layers * (4 * decoder.hidden_size**2 + 6 * decoder.hidden_size)
    if needed * 4 > max_model_mb() * 2**20:
        raise CheckpointError(
            f"config.json describes an encoder-decoder of {needed:,} parameters: over this server's limit "
            f"of {max_model_mb():,} MB"
        )
    return needed


def _sized_weights(folder: Path, where: str, needed: int) -> dict:
    """The folder's model.safetensors, read once its size fits `needed` parameters."""
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise CheckpointError(f"no model.safetensors in {where}: encoder-decoders are read from safetensors only")
    if weights.stat().st_size > 4 * needed * 1.5 + (16 << 20):
        raise CheckpointError(f"{weights.name} is far larger than the model config.json describes")
    return read_weights(weights)


def _special_ids(d: dict, decoder: BertConfig, tokenizer) -> tuple[int, int, int]:
    """(decoder start, end of sequence, padding) from config.json, else the tokenizer's [CLS], [SEP], [PAD]."""
    start = d.get("decoder_start_token_id")
    eos = d.get("eos_token_id", decoder.extra.get("eos_token_id"))
    pad = d.get("pad_token_id")
    return (
        tokenizer.cls_id if start is None else int(start),
        tokenizer.sep_id if eos is None else int(eos),
        tokenizer.pad_id if pad is None else int(pad),
    )


def _load_state(model: EncoderDecoder, state: dict, where: str) -> None:
    """Load our-named weights into the model: every weight it needs there, each of its shape."""
    expected = model.state_dict()
    missing = sorted(k for k in set(expected) - set(state) if k != "decoder.lm.word_embeddings.weight")
    missing = [k for k in missing if not k.startswith("encoder.pooler")]  # transformers may save none
    if missing:
        raise CheckpointError(
            f"{where} lacks {len(missing)} weights of this encoder-decoder (first: {missing[0]}): "
            "config and weights do not match"
        )
    for k, t in state.items():
        if k in expected and tuple(t.shape) != tuple(expected[k].shape):
            raise CheckpointError(f"weight {k} has shape {tuple(t.shape)}, the config asks {tuple(expected[k].shape)}")
    model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    model.eval()


def load_encoder_decoder(folder: str | os.PathLike, name: str | None = None) -> Seq2SeqBundle:
    """A Seq2SeqBundle from a folder transformers' EncoderDecoderModel saved (or ours, the same form)."""
    folder = Path(folder)
    where = public_path(folder)
    d = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    encoder, decoder = _configs(d)
    needed = _parameters_within_limit(encoder, decoder)
    tokenizer = tokenizer_for_folder(folder, encoder.model_type, do_lower_case=_do_lower_case(folder))
    if len(tokenizer) != encoder.vocab_size:
        raise CheckpointError(
            f"the tokenizer has {len(tokenizer)} tokens but config.json says vocab_size {encoder.vocab_size}"
        )
    raw = _sized_weights(folder, where, needed)
    try:
        model = EncoderDecoder(encoder, decoder, *_special_ids(d, decoder, tokenizer))
    except BertExplorerError as e:
        raise CheckpointError(str(e)) from None
    state, unused = hf_to_ours_seq2seq(raw, encoder, decoder)
    _load_state(model, state, where)
    notes = [f"{len(unused)} weights in the file were not used (e.g. {unused[0]})"] if unused else []
    card = folder / "card.md"
    return Seq2SeqBundle(
        model=model,
        tokenizer=tokenizer,
        name=name or folder.name,
        card=public_text(card.read_text(encoding="utf-8")) if card.is_file() else "",
        source=where,
        notes=notes,
        mlm_head_trained=False,
        nsp_head_trained=False,
    )


def hf_to_ours_seq2seq(
    raw: dict[str, torch.Tensor], encoder: BertConfig, decoder: BertConfig
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """transformers' EncoderDecoderModel names -> ours (`encoder.*`, `decoder.*`); and the unused."""
    from .hf_names import hf_to_ours

    enc = {k[len("encoder.") :]: v for k, v in raw.items() if k.startswith("encoder.")}
    dec = {k[len("decoder.") :]: v for k, v in raw.items() if k.startswith("decoder.")}
    unused = [k for k in raw if not k.startswith(("encoder.", "decoder."))]
    ours: dict[str, torch.Tensor] = {}
    e, u = hf_to_ours(enc, encoder)
    unused += [f"encoder.{k}" for k in u]
    ours.update({"encoder." + k[len("bert.") :]: v for k, v in e.items() if k.startswith("bert.")})
    qkv: dict[tuple[int, str], dict[str, torch.Tensor]] = {}
    rest = {}
    for k, v in dec.items():
        m = re.match(r"(?:bert\.)?encoder\.layer\.(\d+)\.(crossattention\..+)\.(weight|bias)$", k)
        if not m:
            rest[k] = v
            continue
        i, part, kind = int(m.group(1)), m.group(2), m.group(3)
        if part.startswith("crossattention.self."):
            qkv.setdefault((i, kind), {})[part.rsplit(".", 1)[-1]] = v
        elif part in _CROSS:
            ours[f"decoder.layers.{i}.{_CROSS[part]}.{kind}"] = v
        else:
            unused.append(f"decoder.{k}")
    for (i, kind), p in qkv.items():
        if set(p) != {"query", "key", "value"}:
            raise CheckpointError(f"decoder layer {i}'s cross-attention lacks some of query, key, value")
        ours[f"decoder.layers.{i}.cross.q.{kind}"] = p["query"]
        ours[f"decoder.layers.{i}.cross.kv.{kind}"] = torch.cat([p["key"], p["value"]], dim=0)
    d, u = hf_to_ours(rest, decoder)
    unused += [f"decoder.{k}" for k in u]
    for k, v in d.items():
        if k.startswith("bert.pooler"):
            unused.append(f"decoder.{k}")
        elif k.startswith("bert."):
            ours["decoder." + k[len("bert.") :]] = v
        elif k.startswith("mlm."):
            ours["decoder.lm." + k[len("mlm.") :]] = v
        else:
            unused.append(f"decoder.{k}")
    return ours, unused


def ours_to_hf_seq2seq(model: EncoderDecoder) -> dict[str, torch.Tensor]:
    """Our EncoderDecoder's weights under transformers' EncoderDecoderModel names (BERT encoder)."""
    from .hf_names import ours_to_hf

    state = model.state_dict()
    C = model.config.hidden_size
    enc = {"bert." + k[len("encoder.") :]: v for k, v in state.items() if k.startswith("encoder.")}
    hf = {"encoder." + k[len("bert.") :]: v for k, v in ours_to_hf(enc, model.config).items()}
    dec, cross = {}, {}
    for k, v in state.items():
        if not k.startswith("decoder.") or k == "decoder.lm.word_embeddings.weight":
            continue
        k = k[len("decoder.") :]
        if m := re.match(r"layers\.(\d+)\.(cross\.q|cross\.kv|cross\.out|cross_norm)\.(weight|bias)$", k):
            i, part, kind = m.groups()
            base = f"decoder.bert.encoder.layer.{i}.crossattention"
            if part == "cross.q":
                cross[f"{base}.self.query.{kind}"] = v
            elif part == "cross.kv":
                cross[f"{base}.self.key.{kind}"], cross[f"{base}.self.value.{kind}"] = v[:C], v[C:]
            else:
                cross[f"{base}.output.{'dense' if part == 'cross.out' else 'LayerNorm'}.{kind}"] = v
        else:
            dec[("mlm." + k[len("lm.") :]) if k.startswith("lm.") else "bert." + k] = v
    for k, v in ours_to_hf(dec, model.decoder_config).items():
        if not k.startswith("cls.predictions.decoder."):  # tied to the word embeddings: not stored
            hf["decoder." + k] = v
    hf.update(cross)
    return {k: v.detach().contiguous().clone() for k, v in hf.items()}


def save_encoder_decoder(bundle: Seq2SeqBundle, folder: str | os.PathLike, card: str | None = None) -> Path:
    """A folder transformers' EncoderDecoderModel.from_pretrained loads with no missing keys (and
    bert.load reads back). Written for a BERT encoder (transformers' names for the others' encoders
    differ): CheckpointError for another member."""
    model = bundle.model
    kin = member(model.config)
    if not kin.hf_export:
        raise CheckpointError(
            f"the encoder is a {kin.name}: this app writes encoder-decoders of a BERT encoder in transformers' form"
        )
    folder = Path(folder)
    with written_dir(folder) as tmp:
        save_file(ours_to_hf_seq2seq(model), str(tmp / "model.safetensors"), metadata={"format": "pt"})
        enc = {k: v for k, v in model.config.to_dict().items() if k not in ("architecture", "architectures")}
        dec = model.decoder_config.to_dict()
        dec.update(is_decoder=True, add_cross_attention=True, tie_word_embeddings=True)
        config = {
            "model_type": MODEL_TYPE,
            "architectures": ["EncoderDecoderModel"],
            "is_encoder_decoder": True,
            "encoder": enc,
            "decoder": dec,
            "decoder_start_token_id": model.start_id,
            "eos_token_id": model.eos_id,
            "pad_token_id": model.pad_id,
            "tie_encoder_decoder": False,
        }
        atomic_write_text(tmp / "config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
        bundle.tokenizer.save(tmp)
        atomic_write_text(
            tmp / "tokenizer_config.json",
            json.dumps({"tokenizer_class": "BertTokenizer", "do_lower_case": bundle.tokenizer.do_lower_case}) + "\n",
        )
        text = card if card is not None else bundle.card or f"# {bundle.name}\n"
        atomic_write_text(tmp / "card.md", public_text(text))
    return folder
