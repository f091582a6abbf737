"""A dictionary of features (a sparse autoencoder) learned from one layer's residual stream: the
module itself, the record of a trained one, and the checks every use of it shares. Its vectors are
read in dictionary_vectors.py, it is trained in dictionary_training.py, scored in
dictionary_quality.py, its features shown in dictionary_features.py and steered with in
dictionary_steering.py.

    x ≈ b_dec + W_dec f,    f = TopK(W_enc (x - b_dec) + b_enc)

with every column of W_dec (a feature's direction) of unit norm, put back after each step. The
activation is TopK (Gao et al. 2024), not ReLU + L1 (Anthropic 2023): the `sparsity` a class asks
for is exactly the number of features active on a token (L0), no penalty weight to tune per
layer and model, and no shrinkage of the active features towards zero (an L1 penalty pulls every
activation down, and the reconstruction with it). The kept values pass a ReLU, so a feature is
off or positive. The encoder starts as the decoder's transpose and b_dec as the data's mean.

Dimension letters: N tokens, C hidden size, F features, k active features a token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from .. import settings
from ..bundle import Bundle
from ..errors import InputError


def caps() -> dict[str, int]:
    """The server's caps on one dictionary (bert/settings.py): texts, tokens, features, steps."""
    return {
        "texts": settings.whole("BERT_EXPLORER_DICT_MAX_TEXTS"),
        "tokens": settings.whole("BERT_EXPLORER_DICT_MAX_TOKENS"),
        "features": settings.whole("BERT_EXPLORER_DICT_MAX_FEATURES"),
        "steps": settings.whole("BERT_EXPLORER_DICT_MAX_STEPS"),
    }


class SparseDictionary(nn.Module):
    """The sparse autoencoder (module docstring). W_enc (F, C), b_enc (F,), W_dec (C, F), b_dec (C,)."""

    def __init__(self, hidden_size: int, n_features: int, k: int, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(hidden_size, n_features, generator=g)
        w = w / w.norm(dim=0, keepdim=True)
        self.W_dec = nn.Parameter(w)  # (C, F)
        self.W_enc = nn.Parameter(w.t().clone())  # (F, C)
        self.b_enc = nn.Parameter(torch.zeros(n_features))
        self.b_dec = nn.Parameter(torch.zeros(hidden_size))
        self.k = k

    @property
    def n_features(self) -> int:
        return self.W_dec.shape[1]

    def pre_activations(self, x: Tensor) -> Tensor:
        return (x - self.b_dec) @ self.W_enc.t() + self.b_enc  # (N, F)

    def encode(self, x: Tensor) -> Tensor:
        """f (N, F): the k largest pre-activations of each token, through a ReLU; the rest 0."""
        indices, values = self.active(x)
        return torch.zeros(*x.shape[:-1], self.n_features, dtype=x.dtype).scatter(-1, indices, values)

    def decode(self, f: Tensor) -> Tensor:
        return self.b_dec + f @ self.W_dec.t()  # (N, C)

    def active(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(indices, values) (N, k) of each token's k kept features (values after the ReLU)."""
        top = self.pre_activations(x).topk(self.k, dim=-1)
        return top.indices, top.values.relu()

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        f = self.encode(x)
        return self.decode(f), f

    @torch.no_grad()
    def normalise_decoder(self) -> None:
        self.W_dec /= self.W_dec.norm(dim=0, keepdim=True).clamp_min(1e-8)


@dataclass
class DictionaryStep:
    """Every `log_every` steps: on the last step's batch, the fraction of variance explained and
    L0; dead: the share of features active on none of the tokens since the last report."""

    step: int
    steps: int
    variance_explained: float
    l0: float
    dead: float
    seconds: float  # since training began


@dataclass
class Dictionary:
    """A trained dictionary and what it was trained on."""

    sae: SparseDictionary
    model_name: str
    layer: int
    n_features: int
    k: int
    steps: int  # the steps taken (fewer than asked when stopped)
    tokens: int  # the training vectors
    texts: int
    seed: int
    seconds: float
    capped: bool = False  # the token cap left texts out
    curve: list[DictionaryStep] = field(default_factory=list)


def check_request(n_features, sparsity, steps) -> tuple[int, int, int]:
    """(n_features, k, steps) checked against sense and the server's caps (an InputError saying which)."""
    cap = caps()
    for name, value in (("n_features", n_features), ("sparsity", sparsity), ("steps", steps)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be a whole number of at least 1, got {value!r}")
    if n_features > cap["features"]:
        raise InputError(
            f"{n_features} features is more than this server allows ({cap['features']}, "
            "BERT_EXPLORER_DICT_MAX_FEATURES): ask for fewer"
        )
    if steps > cap["steps"]:
        raise InputError(
            f"{steps} steps is more than this server allows ({cap['steps']}, "
            "BERT_EXPLORER_DICT_MAX_STEPS): ask for fewer"
        )
    if sparsity >= n_features:
        raise InputError(f"sparsity (features active a token) must be below the {n_features} features, got {sparsity}")
    return int(n_features), int(sparsity), int(steps)


def check_same_model(bundle: Bundle, dictionary: Dictionary) -> None:
    if dictionary.sae.W_dec.shape[0] != bundle.config.hidden_size or dictionary.layer > bundle.config.num_hidden_layers:
        raise InputError(
            f"this dictionary was trained on layer {dictionary.layer} of {dictionary.model_name}, whose vectors "
            f"do not fit {bundle.name}: train one on this model"
        )


def check_feature(dictionary: Dictionary, feature) -> int:
    n = dictionary.n_features
    if isinstance(feature, bool) or not isinstance(feature, (int, np.integer)) or not 0 <= int(feature) < n:
        raise InputError(f"feature must be one of 0..{n - 1} (the dictionary has {n}), got {feature!r}")
    return int(feature)
