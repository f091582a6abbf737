"""Activation patching (causal tracing, after Meng et al. 2022) on a masked-word prediction: which
activation of a clean sentence, put into the run of a corrupted one, brings the clean answer back.

The metric is m = logit[answer] - logit[foil] at the [MASK]. For every site and place, the
corrupted run is repeated with the clean run's activation put in there, and the effect is
(m_patched - m_corrupted) / (m_clean - m_corrupted): 1 restores the clean answer fully, 0 does
nothing. Sites (rows are depths, columns places):

- "residual":  the hidden state entering layer l+1 (l = 0 the embeddings' output) at one token: (L+1, T);
- "attention": layer l's attention output before its residual add, at one token: (L, T);
- "ffn":       layer l's feed-forward output before its residual add, at one token: (L, T);
- "heads":     one head's output (before the output projection) at every token: (L, H).

Both sentences must have the same number of tokens with their one [MASK] at the same place, so
that a place means the same slot in both. The model is run through its one part-way entry,
BertModel.run, recording the sites and patching with an edit: no hooks, nothing stored on the model.

Dimension letters: L layers, H heads, T tokens, C hidden size, D head size, V vocabulary,
B batch (the patched runs of one layer), k top predictions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from ..errors import InputError, TokenCountMismatch
from ..train.precision import analysis_autocast
from .common import encode_tensors, mask_positions, need_mlm, readonly, token_id


class Pair(NamedTuple):
    """A pair to patch: the clean sentence, the corrupted one, the answer and its foil."""

    clean: str
    corrupted: str
    answer: str
    foil: str


# Pairs a class starts from: where number agreement, a fact, a pronoun's gender travel
PRESETS = {
    "Number agreement": Pair(
        "The keys to the cabinet [MASK] on the table.", "The key to the cabinet [MASK] on the table.", "are", "is"
    ),
    "A fact": Pair("The capital of France is [MASK].", "The capital of Italy is [MASK].", "paris", "rome"),
    "A pronoun": Pair("The boy said that [MASK] was tired.", "The girl said that [MASK] was tired.", "he", "she"),
}
SITES = ("residual", "attention", "ffn", "heads")
MAX_TOKENS = 64  # the patched runs of one layer are one batch of T (or H) copies
MIN_GAP = 1e-4  # |m_clean - m_corrupted| below this: nothing to restore, the ratio is noise


@dataclass
class Patching:
    """One site's patching of a clean/corrupted pair. effect, patched: (rows, columns) as the
    site says (module docstring); top_ids, top_probs: (rows, columns, k), each patched run's
    top-k words at the [MASK]."""

    site: str
    clean_tokens: list[str]
    corrupted_tokens: list[str]
    position: int  # the [MASK]
    answer: str
    foil: str
    clean: float  # m in the clean run
    corrupted: float  # m in the corrupted run
    effect: np.ndarray
    patched: np.ndarray  # m in each patched run
    top_ids: np.ndarray
    top_probs: np.ndarray
    top_tokens: list  # [rows][columns][k]
    rows: list[str]  # "embeddings", "layer 1", ... (the residual's); "layer 1", ... otherwise
    columns: list[str]  # the tokens ("clean/corrupted" where they differ), or "head 1", ...


def _pair(bundle, clean: str, corrupted: str):
    """(ids_clean, ids_corrupted, segments, the [MASK]'s position), checked."""
    enc_a, ids_a, types = encode_tensors(bundle, clean)
    enc_b, ids_b, _ = encode_tensors(bundle, corrupted)
    ta, tb = len(enc_a.ids), len(enc_b.ids)
    if ta != tb:
        raise TokenCountMismatch(
            f"the clean sentence has {ta} tokens and the corrupted one {tb}: patching puts the clean "
            "run's activation at a (layer, token) into the corrupted run, so token n must be the same "
            "slot in both. Change words that split into the same number of pieces (clean: "
            f"{' '.join(enc_a.tokens)}; corrupted: {' '.join(enc_b.tokens)})",
            (ta, tb),
        )
    if enc_a.truncated or enc_b.truncated:
        raise InputError(
            f"a sentence is longer than this model's {bundle.config.max_tokens} tokens: patching needs both whole"
        )
    if ta > MAX_TOKENS:
        raise InputError(f"{ta} tokens is more than the {MAX_TOKENS} patching allows: it reruns the model per token")
    where = []
    for name, enc in (("clean", enc_a), ("corrupted", enc_b)):
        found = mask_positions(enc, bundle.tokenizer)
        if len(found) != 1:
            raise InputError(f"the {name} sentence has {len(found)} [MASK]s: write exactly one, where the answer goes")
        where.append(found[0])
    if where[0] != where[1]:
        raise InputError(
            f"the [MASK] is token {where[0]} of the clean sentence and token {where[1]} of the corrupted "
            "one: put it at the same place in both"
        )
    return ids_a, ids_b, types, where[0]


def _recorded(bert_model, ids: Tensor, types: Tensor) -> dict[str, list[Tensor]]:
    """Every site's activation of one run: "residual" L+1 of (T, C), "attention" and "ffn" L of
    (T, C), "heads" L of (H, T, D)."""
    cache = bert_model.run(ids, token_type_ids=types, record=SITES).cache
    return {site: [value[0] for value in values] for site, values in cache.items()}


def _patched_final(bert_model, start: Tensor, site: str, row: int, clean: Tensor) -> Tensor:
    """The final hidden states (B, T, C) of the corrupted run with batch entry b patched at its
    b-th place: `start` is the corrupted state entering layer `row`, `clean` the clean
    activation (T, C) or (H, T, D) at that site and row."""
    B = clean.shape[0]
    idx = torch.arange(B)

    def put(value: Tensor) -> Tensor:
        value = value.clone()
        value[idx, idx] = clean  # entry b: token b's (or head b's) activation from the clean run
        return value

    return bert_model.run(start.expand(B, *start.shape[1:]), row, edits={(site, row): put}).state


def _labels(tok, ids_a: Tensor, ids_b: Tensor, site: str, L: int, H: int):
    """(clean tokens, corrupted tokens, row labels, column labels) of a Patching."""
    toks_a = list(tok.convert_ids_to_tokens(ids_a[0].tolist()))
    toks_b = list(tok.convert_ids_to_tokens(ids_b[0].tolist()))
    if site == "heads":
        columns = [f"head {h + 1}" for h in range(H)]
    else:
        columns = [x if x == y else f"{x}/{y}" for x, y in zip(toks_a, toks_b, strict=True)]
    first = ["embeddings"] if site == "residual" else []
    return toks_a, toks_b, first + [f"layer {i}" for i in range(1, L + 1)], columns


def _checked(bundle, clean: str, corrupted: str, answer: str, foil: str, site: str):
    """(ids_a, ids_b, types, mask position, answer id, foil id) of a patching request, or the
    InputError that says what is wrong with it."""
    need_mlm(bundle, "activation patching")
    if site not in SITES:
        raise InputError(f"unknown site {site!r}; sites: {', '.join(SITES)}")
    ids_a, ids_b, types, pos = _pair(bundle, clean, corrupted)
    a, f = token_id(bundle.tokenizer, answer), token_id(bundle.tokenizer, foil)
    if a == f:
        raise InputError("the answer and the foil are the same word: the metric is their difference")
    return ids_a, ids_b, types, pos, a, f


def activation_patching(
    bundle,
    clean: str,
    corrupted: str,
    answer: str,
    foil: str,
    site: str = "residual",
    k: int = 5,
    precision: str = "fp32",
) -> Patching:
    """Patch each of `site`'s places in turn from the clean run into the corrupted one and read
    how much of logit[answer] - logit[foil] at the [MASK] comes back (module docstring). Every run
    is in `precision` (bert/train/precision.py); the metric is read from float32 logits either way."""
    tok = bundle.tokenizer
    ids_a, ids_b, types, pos, a, f = _checked(bundle, clean, corrupted, answer, foil, site)
    model, bert_model = bundle.model, bundle.model.bert
    L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
    k = max(1, min(int(k), bundle.config.vocab_size))

    def read(x: Tensor):
        logits = model.mlm(x[:, pos]).float()  # (B, V)
        top_p, top_i = torch.softmax(logits, -1).topk(k, -1)
        return (logits[:, a] - logits[:, f]).double(), top_i, top_p

    with torch.inference_mode(), analysis_autocast(precision):
        acts_a = _recorded(bert_model, ids_a, types)
        acts_b = _recorded(bert_model, ids_b, types)
        m_clean = float(read(acts_a["residual"][-1][None])[0][0])
        m_corr = float(read(acts_b["residual"][-1][None])[0][0])
        if abs(m_clean - m_corr) < MIN_GAP:
            raise InputError(
                f"both sentences give the same logit difference ({m_clean:.3f}) between the answer and "
                "the foil: the corrupted sentence changes nothing to restore. Change a word the answer depends on"
            )
        results = [  # row by row: the corrupted state entering layer `row`, patched from the clean run
            read(_patched_final(bert_model, acts_b["residual"][row][None], site, row, clean_act))
            for row, clean_act in enumerate(acts_a[site])
        ]
    patched = torch.stack([r[0] for r in results])  # (rows, columns)
    top_i = torch.stack([r[1] for r in results])  # (rows, columns, k)
    effect = (patched - m_corr) / (m_clean - m_corr)
    toks_a, toks_b, rows, columns = _labels(tok, ids_a, ids_b, site, L, H)
    return Patching(
        site=site,
        clean_tokens=toks_a,
        corrupted_tokens=toks_b,
        position=pos,
        answer=tok.convert_ids_to_tokens(a),
        foil=tok.convert_ids_to_tokens(f),
        clean=m_clean,
        corrupted=m_corr,
        effect=readonly(effect),
        patched=readonly(patched),
        top_ids=top_i.numpy(),
        top_probs=readonly(torch.stack([r[2] for r in results])),
        top_tokens=[[tok.convert_ids_to_tokens(c.tolist()) for c in r] for r in top_i],
        rows=rows,
        columns=columns,
    )
