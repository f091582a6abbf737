"""A dictionary of features' features shown: a feature's card on held-out text (where it fires
most, how often, its activations' histogram, the tokens its direction promotes and suppresses)
and a typed text's strongest features at each word piece.

Dimension letters: N tokens, C hidden size, F features, k active features a token, T tokens of a
text, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..bundle import Bundle
from .common import encode, need_mlm
from .dictionary import Dictionary, check_feature, check_same_model
from .dictionary_vectors import Activations, state_after, word_positions

CONTEXT_TOKENS = 12  # tokens shown each side of a context's token


@dataclass
class Codes:
    """Every held-out token's active features: indices and values (N, k), from `encode_all`."""

    indices: Tensor
    values: Tensor


def encode_all(dictionary: Dictionary, acts: Activations, batch: int = 4096) -> Codes:
    """The dictionary's active features at every vector of `acts` (one encoding, then a card is a lookup)."""
    idx, val = [], []
    with torch.inference_mode():
        for b in range(0, len(acts.vectors), batch):
            top = dictionary.sae.pre_activations(acts.vectors[b : b + batch]).topk(dictionary.k, dim=-1)
            idx.append(top.indices)
            val.append(top.values.relu())
    return Codes(torch.cat(idx), torch.cat(val))


@dataclass(frozen=True)
class CardSize:
    """How much a feature card shows: its strongest contexts, the tokens its direction promotes (and
    as many it suppresses), and its histogram's bins."""

    contexts: int = 8
    tokens: int = 10
    bins: int = 20


CARD_SIZE = CardSize()


@dataclass
class Context:
    """A held-out text around a token the feature fires on: tokens, the token's place among them."""

    tokens: list[str]
    position: int
    activation: float


@dataclass
class FeatureCard:
    feature: int
    frequency: float  # the share of held-out tokens it is active on
    fires: int  # ... how many
    tokens: int  # held-out tokens
    mean_activation: float  # when active (0 when never)
    contexts: list[Context]  # the strongest first
    promoted: list[tuple[str, float]]  # the tokens its direction raises most in the masked-word head, logit change
    suppressed: list[tuple[str, float]]  # ... lowers most
    histogram: tuple[np.ndarray, np.ndarray]  # (counts, edges) of its activations when active


def _readable(token: str) -> bool:
    return not (token.startswith("[") and token.endswith("]"))  # [PAD], [unused12], ...


def head_effect(bundle: Bundle, dictionary: Dictionary, feature: int, scale: float, k: int = 10):
    """(promoted, suppressed): the tokens whose masked-word logit rises / falls most when the
    feature's direction times `scale` is added to the dictionary's centre b_dec, read by the
    masked-word head as the logit lens reads a middle layer."""
    need_mlm(bundle, "a feature's tokens")
    sae = dictionary.sae
    with torch.inference_mode():
        centre = sae.b_dec[None]  # (1, C)
        moved = centre + scale * sae.W_dec[:, feature][None]
        delta = (bundle.model.mlm(moved) - bundle.model.mlm(centre))[0].float()  # (V,)
    toks = bundle.tokenizer.convert_ids_to_tokens(list(range(len(delta))))
    order = delta.argsort(descending=True).tolist()
    readable = [i for i in order if _readable(toks[i])]
    return (
        [(toks[i], float(delta[i])) for i in readable[:k]],
        [(toks[i], float(delta[i])) for i in readable[::-1][:k]],
    )


def feature_card(
    bundle: Bundle,
    dictionary: Dictionary,
    acts: Activations,
    codes: Codes,
    feature: int,
    size: CardSize = CARD_SIZE,
) -> FeatureCard:
    """One feature on held-out text (`acts`, `codes`): where it fires most, how often, its
    activations' histogram, and the tokens its direction promotes and suppresses."""
    feature = check_feature(dictionary, feature)
    hit = (codes.indices == feature) & (codes.values > 0)  # (N, k): at most one per row
    rows = hit.any(1).nonzero()[:, 0]
    values = (codes.values * hit).sum(1)[rows]
    mean = float(values.mean()) if len(rows) else 0.0
    contexts = []
    for j in values.argsort(descending=True)[: size.contexts].tolist():
        r = int(rows[j])
        toks, p = acts.tokens[int(acts.text_index[r])], int(acts.position[r])
        lo = max(0, p - CONTEXT_TOKENS)
        contexts.append(Context(toks[lo : p + CONTEXT_TOKENS + 1], p - lo, float(values[j])))
    counts, edges = np.histogram(values.numpy(), bins=size.bins) if len(rows) else (np.zeros(0), np.zeros(0))
    promoted, suppressed = head_effect(bundle, dictionary, feature, mean or 1.0, size.tokens)
    return FeatureCard(
        feature=feature,
        frequency=len(rows) / max(1, len(codes.indices)),
        fires=len(rows),
        tokens=len(codes.indices),
        mean_activation=mean,
        contexts=contexts,
        promoted=promoted,
        suppressed=suppressed,
        histogram=(counts, edges),
    )


@dataclass
class TokenFeatures:
    """A typed text's tokens and, at each word piece, its strongest features (feature, activation)."""

    tokens: list[str]
    features: dict[int, list[tuple[int, float]]]  # position -> strongest first


def text_features(bundle: Bundle, dictionary: Dictionary, text: str, k: int = 3) -> TokenFeatures:
    """Every word piece of `text` with its `k` strongest active features."""
    need_mlm(bundle, "a text's features")
    check_same_model(bundle, dictionary)
    enc = encode(bundle, text)
    ids, types = torch.tensor([enc.ids]), torch.tensor([enc.type_ids])
    out = {}
    with torch.inference_mode():
        f = dictionary.sae.encode(state_after(bundle, ids, types, dictionary.layer)[0].float())  # (T, F)
        top = f.topk(min(k, dictionary.k), dim=-1)
    for p in word_positions(enc):
        out[p] = [(int(i), float(v)) for i, v in zip(top.indices[p], top.values[p], strict=True) if v > 0]
    return TokenFeatures(list(enc.tokens), out)
