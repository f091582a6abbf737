"""A dictionary of features' quality on held-out text: the fraction of variance explained
(1 - |x - x̂|² / |x - mean|² summed over the held-out tokens), L0 (mean active features a token),
dead features (active on no held-out token), and the splice cost: masked-word top-1 / top-5 on
held-out text with the layer's output replaced by its reconstruction, against the same masks
unspliced, and the same on the everyday cloze set. Splicing runs the rest of the layers from the
edited state, as activation patching does (patching.py): no hooks on the shared model.

Dimension letters: N tokens, C hidden size, T tokens of a text, B texts of one length, P masks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..bundle import Bundle
from ..errors import InputError
from ..tokenizer.vocab import SPECIAL_TOKENS
from .common import encode, mask_positions, need_mlm
from .dictionary import Dictionary, SparseDictionary, check_same_model
from .dictionary_vectors import (
    Activations,
    encodings,
    finish_run,
    mask_some,
    same_length_batches,
    state_after,
    word_positions,
)


@dataclass
class Splice:
    """Masked-word top-1 / top-5 on the same masks, without and with the layer's output replaced
    by its reconstruction (at the word pieces); agreement: the share of masks where the spliced
    model's first guess is the model's own."""

    masked: int
    top1: float
    top5: float
    spliced_top1: float
    spliced_top5: float
    agreement: float

    @property
    def cost_top1(self) -> float:
        return self.top1 - self.spliced_top1

    @property
    def cost_top5(self) -> float:
        return self.top5 - self.spliced_top5


@dataclass
class Quality:
    """A dictionary's quality on held-out text (module docstring)."""

    variance_explained: float
    l0: float
    dead: int
    n_features: int
    tokens: int
    splice: Splice  # on the held-out text
    cloze: Splice  # on the everyday cloze set

    @property
    def dead_share(self) -> float:
        return self.dead / self.n_features


def variance_explained(x: Tensor, x_hat: Tensor) -> float:
    """1 - |x - x̂|² / |x - mean(x)|², summed over the rows of x (N, C)."""
    total = ((x - x.mean(0)) ** 2).sum()
    return float(1 - ((x - x_hat) ** 2).sum() / total.clamp_min(1e-12))


def _spliced(sae: SparseDictionary, x: Tensor, encs, part) -> Tensor:
    """x (B, T, C) with every word piece's vector replaced by its reconstruction."""
    x = x.clone()
    rows = [(r, p) for r, i in enumerate(part) for p in word_positions(encs[i])]
    r_idx, p_idx = torch.tensor([r for r, _ in rows]), torch.tensor([p for _, p in rows])
    x[r_idx, p_idx] = sae(x[r_idx, p_idx].float())[0].to(x.dtype)
    return x


def _guesses(bundle: Bundle, dictionary: Dictionary, encs, where: list[list[int]], k: int, batch: int):
    """For every text's positions `where[i]`, in text order: the top-k token ids there (P, k),
    unspliced and spliced."""
    out: list[tuple[int, int, Tensor, Tensor]] = []  # (text, place among its positions, plain, spliced)
    k = min(k, bundle.config.vocab_size)
    with torch.inference_mode():
        for part, ids, types in same_length_batches(encs, batch):
            x = state_after(bundle, ids, types, dictionary.layer)
            rows = [(r, p) for r, i in enumerate(part) for p in where[i]]
            r_idx, p_idx = torch.tensor([r for r, _ in rows]), torch.tensor([p for _, p in rows])
            tops = [
                bundle.model.mlm(finish_run(bundle, start, dictionary.layer)[r_idx, p_idx]).topk(k, -1).indices
                for start in (x, _spliced(dictionary.sae, x, encs, part))
            ]
            places = [(part[r], where[part[r]].index(p)) for r, p in rows]
            out += [(i, j, tops[0][n], tops[1][n]) for n, (i, j) in enumerate(places)]
    out.sort(key=lambda t: (t[0], t[1]))
    return torch.stack([t[2] for t in out]), torch.stack([t[3] for t in out])


def _splice(hits_plain: np.ndarray, hits_spliced: np.ndarray, first_same: np.ndarray) -> Splice:
    """From per-mask (top-1, top-5) hits (P, 2) and whether the first guesses agree (P,)."""
    rates = [float(v) for v in (*hits_plain.mean(0), *hits_spliced.mean(0))]
    return Splice(len(first_same), *rates, float(first_same.mean()))


def splice_cost(bundle: Bundle, dictionary: Dictionary, texts: list[str], seed: int = 0, batch: int = 32) -> Splice:
    """Masked-word top-1 / top-5 on `texts` (held-out), MASK_SHARE of each text's word pieces
    masked (chosen by `seed`), unspliced and spliced."""
    need_mlm(bundle, "the splice cost")
    check_same_model(bundle, dictionary)
    tok, rng = bundle.tokenizer, np.random.default_rng(seed)
    encs, where, want = [], [], []
    for e in encodings(bundle, texts):
        m, chosen = mask_some(e, tok.mask_id, rng)
        encs.append(m)
        where.append(chosen)
        want += [e.ids[p] for p in chosen]
    plain, spliced = _guesses(bundle, dictionary, encs, where, 5, batch)
    want_t = torch.tensor(want)[:, None]

    def hits(top: Tensor) -> np.ndarray:
        return torch.stack([top[:, 0] == want_t[:, 0], (top == want_t).any(1)], 1).float().numpy()

    return _splice(hits(plain), hits(spliced), (plain[:, 0] == spliced[:, 0]).float().numpy())


def cloze_splice(bundle: Bundle, dictionary: Dictionary, items=None, batch: int = 32) -> Splice:
    """The everyday cloze set (cloze.py: an item counts when an accepted answer is among the
    first words guessed, punctuation and special tokens skipped), unspliced and spliced."""
    from .cloze import load_cloze, words_only

    need_mlm(bundle, "the splice cost")
    check_same_model(bundle, dictionary)
    items = load_cloze() if items is None else items
    tok = bundle.tokenizer
    encs = [encode(bundle, it.sentence) for it in items]
    where = [mask_positions(e, tok)[:1] for e in encs]
    specials = set(getattr(tok, "special_tokens", SPECIAL_TOKENS))
    plain, spliced = _guesses(bundle, dictionary, encs, where, 25, batch)
    hit, firsts = [], []
    for it, p, s in zip(items, plain, spliced, strict=True):
        row = []
        for top in (p, s):
            toks = tok.convert_ids_to_tokens(top.tolist())
            words = [toks[i] for i in words_only(toks, specials)][:5]
            row.append([bool(words) and words[0] in it.answers, any(w in it.answers for w in words)])
            firsts.append(words[0] if words else "")
        hit.append(row)
    h = np.array(hit, dtype=np.float64)  # (P, 2 runs, 2)
    return _splice(h[:, 0], h[:, 1], np.array(firsts[0::2]) == np.array(firsts[1::2]))


def dictionary_quality(bundle: Bundle, dictionary: Dictionary, held_out: Activations, texts: list[str]) -> Quality:
    """Variance explained, L0 and dead features on `held_out` (gather_activations of held-out text
    at the dictionary's layer), and the splice cost on `texts` (held-out text) and on the everyday cloze set."""
    if held_out.layer != dictionary.layer:
        raise InputError(f"the held-out vectors are of layer {held_out.layer}, the dictionary of {dictionary.layer}")
    with torch.inference_mode():
        x_hat, f = dictionary.sae(held_out.vectors)
        active = f > 0
        return Quality(
            variance_explained=variance_explained(held_out.vectors, x_hat),
            l0=float(active.sum(1).float().mean()),
            dead=int((~active.any(0)).sum()),
            n_features=dictionary.n_features,
            tokens=len(held_out.vectors),
            splice=splice_cost(bundle, dictionary, texts),
            cloze=cloze_splice(bundle, dictionary),
        )
