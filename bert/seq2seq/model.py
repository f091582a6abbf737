"""The encoder-decoder: our BERT encoder (any family member) and a BERT-shaped decoder
(bert/seq2seq/decoder.py), and how one is made from an encoder's own weights.

    model(input_ids (B, S), attention_mask=(B, S), decoder_input_ids=(B, T), output_attentions=True)
      .logits (B, T, V), .decoder_attentions / .cross_attentions: L tensors (B, H, T, T) / (B, H, T, S)

The decoder reads one vocabulary with the encoder (the bundle's tokenizer): it starts from the
tokenizer's [CLS] (`decoder_start_token_id`) and ends a sequence with [SEP] (`eos_token_id`).

Started from an encoder (`build_encoder_decoder`, the recipe of Rothe et al. 2020, "Leveraging
Pre-trained Checkpoints for Sequence Generation Tasks"): the decoder's embeddings are a copy of the
encoder's, decoder layer i a copy of encoder layer i (self-attention, feed-forward, LayerNorms),
the LM head a copy of the encoder's MLM head where it has one; the cross-attention is always
fresh, and so is any decoder layer deeper than the encoder. That needs an encoder whose layers
each have their own weights and whose embeddings are as wide as its layers (`decoder_refusal`).
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import BertConfig
from ..errors import InputError
from ..family import member
from ..model import BertForPreTraining, BertModel, init_weights
from .decoder import Decoder

IGNORE = -100  # a label position the loss skips (padding)
MAX_DECODER_LAYERS = 12


@dataclass
class Seq2SeqOutput:
    logits: Tensor  # (B, T, V)
    loss: Tensor | None = None  # mean cross-entropy over the labels that are not IGNORE
    decoder_attentions: tuple[Tensor, ...] | None = None  # L x (B, H, T, T)
    cross_attentions: tuple[Tensor, ...] | None = None  # L x (B, H, T, S)
    encoder_last_hidden_state: Tensor | None = None  # (B, S, C)
    encoder_attentions: tuple[Tensor, ...] | None = None  # L_enc x (B, H, S, S)


class EncoderDecoder(nn.Module):
    """`encoder` a BertModel of `config` (any member), `decoder` a Decoder of `decoder_config`
    (a BERT of the same width). `config` is the encoder's, as every bundle's model has."""

    def __init__(self, config: BertConfig, decoder_config: BertConfig, start_id: int, eos_id: int, pad_id: int):
        super().__init__()
        if why := pairing_refusal(config, decoder_config):
            raise InputError(why)
        self.config = config
        self.decoder_config = decoder_config
        self.start_id, self.eos_id, self.pad_id = start_id, eos_id, pad_id
        self.encoder = BertModel(config)
        self.decoder = Decoder(decoder_config)

    def encode(self, input_ids: Tensor, attention_mask: Tensor | None = None, output_attentions: bool = False):
        """(the encoder's output, the additive (B, 1, 1, S) mask over source padding or None)."""
        out = self.encoder(input_ids, attention_mask=attention_mask, output_attentions=output_attentions)
        mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            m = attention_mask.view(out.last_hidden_state.shape[:2]).to(out.last_hidden_state.dtype)
            mask = (1.0 - m[:, None, None, :]) * torch.finfo(m.dtype).min  # (B, 1, 1, S): 0 or very negative
        return out, mask

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool = False,
        encoded: tuple | None = None,
    ) -> Seq2SeqOutput:
        """labels (B, T): the token each decoder position must predict (IGNORE where none);
        without decoder_input_ids they are shifted right behind the start token (teacher forcing).
        `encoded`: encode()'s result, reused by step-by-step decoding."""
        if decoder_input_ids is None:
            if labels is None:
                raise InputError("give decoder_input_ids or labels")
            decoder_input_ids = shift_right(labels, self.start_id, self.pad_id)
        if decoder_input_ids.dim() == 1:
            decoder_input_ids = decoder_input_ids.unsqueeze(0)
        T = decoder_input_ids.shape[1]
        if T == 0 or T > self.decoder_config.max_tokens:
            raise InputError(f"the decoder takes 1 to {self.decoder_config.max_tokens} tokens, got {T}")
        enc, mem_mask = encoded if encoded is not None else self.encode(input_ids, attention_mask, output_attentions)
        logits, selfs, crosses = self.decoder(
            decoder_input_ids, enc.last_hidden_state, mem_mask, decoder_attention_mask, output_attentions
        )
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.float().flatten(0, 1), labels.reshape(-1), ignore_index=IGNORE)
        return Seq2SeqOutput(
            logits=logits,
            loss=loss,
            decoder_attentions=selfs,
            cross_attentions=crosses,
            encoder_last_hidden_state=enc.last_hidden_state,
            encoder_attentions=enc.attentions,
        )


def shift_right(labels: Tensor, start_id: int, pad_id: int) -> Tensor:
    """(B, T) labels -> decoder inputs: start_id, then labels[:, :-1], IGNORE read as padding."""
    out = labels.new_full(labels.shape, pad_id)
    out[:, 1:] = labels[:, :-1]
    out[:, 0] = start_id
    return out.masked_fill(out == IGNORE, pad_id)


# ---- made from an encoder ------------------------------------------------------------------------


def pairing_refusal(config: BertConfig, decoder_config: BertConfig) -> str:
    """Why this encoder and this decoder cannot run as one encoder-decoder ("" when they can)."""
    if decoder_config.hidden_size != config.hidden_size:
        return (
            f"the decoder is {decoder_config.hidden_size} wide but the encoder {config.hidden_size}: "
            "cross-attention reads the encoder's vectors, so both must have the same width"
        )
    if decoder_config.vocab_size != config.vocab_size:
        return "the encoder and the decoder must share one vocabulary (one tokenizer)"
    return ""


def decoder_refusal(config: BertConfig) -> str:
    """Why the decoder cannot start from this encoder's weights ("" when it can)."""
    kin = member(config)
    if kin.shared_layers:
        return (
            f"{kin.name} keeps one set of layer weights shared by every depth and embeddings "
            f"{config.embedding_width} wide under {config.hidden_size}-wide layers: a BERT decoder has its own "
            "weights in each layer and embeddings as wide as its layers, so it cannot be copied from them. "
            "Start the decoder fresh instead (it keeps this encoder)."
        )
    if config.embedding_width != config.hidden_size:
        return (
            f"this {kin.name}'s embeddings are {config.embedding_width} wide under {config.hidden_size}-wide "
            "layers: a BERT decoder's embeddings are as wide as its layers, so they cannot be copied. "
            "Start the decoder fresh instead."
        )
    return ""


def decoder_config_for(config: BertConfig, layers: int) -> BertConfig:
    """A BERT config for the decoder: the encoder's width, heads, feed-forward and vocabulary,
    `layers` layers, two segments (BERT's), positions from 0."""
    if not 1 <= layers <= MAX_DECODER_LAYERS:
        raise InputError(f"a decoder has 1 to {MAX_DECODER_LAYERS} layers, not {layers}")
    d = copy.deepcopy(config)
    d.model_type, d.embedding_size, d.num_hidden_layers = "bert", None, layers
    d.type_vocab_size = config.type_vocab_size or 2
    d.max_position_embeddings = config.max_tokens  # positions from 0: as many as the encoder reads
    d.id2label, d.extra = {}, {"is_decoder": True, "add_cross_attention": True}
    d.validate()
    return d


_INIT_LOCK = threading.Lock()  # models are initialised one at a time (torch's global seed)


def build_encoder_decoder(
    encoder: nn.Module,
    start_id: int,
    eos_id: int,
    pad_id: int,
    layers: int = 2,
    from_encoder: bool = True,
    seed: int = 0,
) -> tuple[EncoderDecoder, list[str]]:
    """A new encoder-decoder whose encoder is a copy of `encoder` (a BertForPreTraining or a
    classifier: its `.bert`; it is left untouched) and whose decoder has `layers` layers, copied
    from the encoder's where `from_encoder` and the shapes allow. Returns the model and what was
    copied or made fresh, one line each. InputError with the reason when `from_encoder` and the
    member's weights cannot be a decoder."""
    config = copy.deepcopy(encoder.config)
    config.id2label, config.extra = {}, {}
    why = decoder_refusal(config) if from_encoder else ""
    if why:
        raise InputError(why)
    dconf = decoder_config_for(config, layers)
    with _INIT_LOCK, torch.random.fork_rng():
        torch.manual_seed(seed)
        model = EncoderDecoder(config, dconf, start_id, eos_id, pad_id)
        init_weights(model.decoder)
        init_weights(model.encoder)
    model.encoder.load_state_dict({k: v.detach().clone() for k, v in encoder.bert.state_dict().items()})
    said = [f"encoder: a copy of the {member(config).name} encoder ({config.num_hidden_layers} layers)"]
    if not from_encoder:
        return model, [*said, f"decoder: {layers} fresh layers, fresh embeddings and head"]
    _copy_embeddings(encoder.bert.embeddings, model.decoder.embeddings)
    copied = min(layers, config.num_hidden_layers)
    for i in range(copied):
        model.decoder.layers[i].load_state_dict(encoder.bert.layers[i].state_dict(), strict=False)  # not cross.*
    said.append(
        f"decoder: embeddings and layers 1-{copied} copied from the encoder's"
        + (f", layers {copied + 1}-{layers} fresh" if layers > copied else "")
        + "; cross-attention fresh"
    )
    if isinstance(encoder, BertForPreTraining):
        lm = model.decoder.lm
        lm.transform.load_state_dict(encoder.mlm.transform.state_dict())
        lm.norm.load_state_dict(encoder.mlm.norm.state_dict())
        with torch.no_grad():
            lm.bias.copy_(encoder.mlm.bias)
        said.append("LM head: the encoder's masked-word head, tied to the decoder's embeddings")
    return model, said


def _copy_embeddings(src: nn.Module, dst: nn.Module) -> None:
    """Each table and the LayerNorm where the shapes match (a DistilBERT has no segment table: fresh)."""
    with torch.no_grad():
        for name, p in dst.named_parameters():
            q = dict(src.named_parameters()).get(name)
            if q is not None and q.shape == p.shape:
                p.copy_(q)
            elif q is not None and name == "position_embeddings.weight" and q.shape[1] == p.shape[1]:
                start = src.roberta_pad + 1 if src.roberta_pad is not None else 0  # RoBERTa: its first real row
                n = min(p.shape[0], q.shape[0] - start)
                p[:n].copy_(q[start : start + n])
