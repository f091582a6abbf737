"""A dictionary of features (a sparse autoencoder) learned from one layer's residual stream, its
quality, its features' cards, and steering with a feature; the same recipe runs on a model of the
same shape with random weights, the control (Heap et al. 2025: such a dictionary's features look
just as interpretable, so what a trained model adds is the difference).

    x ≈ b_dec + W_dec f,    f = TopK(W_enc (x - b_dec) + b_enc)

with every column of W_dec (a feature's direction) of unit norm, put back after each step. The
activation is TopK (Gao et al. 2024), not ReLU + L1 (Anthropic 2023): the `sparsity` a class asks
for is exactly the number of features active on a token (L0), no penalty weight to tune per
layer and model, and no shrinkage of the active features towards zero (an L1 penalty pulls every
activation down, and the reconstruction with it). The kept values pass a ReLU, so a feature is
off or positive. The encoder starts as the decoder's transpose and b_dec as the data's mean.

Vectors: the state leaving encoder layer `layer` (1..L) at every token of the text, [CLS] and
[SEP] left out (their states are few and far from the rest; the dictionary never sees them, and
splicing leaves them as they were). The model runs part-way through its one entry (BertModel.run)
on batches of texts of the same token length, so no padding and no mask. Training reads every other text
with some word pieces masked, as the masked-word task shows text to the model, so the [MASK]s
the splice cost and steering read are vectors it knows. Splicing and steering run the rest
of the layers from the edited state, as activation patching does (patching.py): no hooks on the
shared model.

Quality: the fraction of variance explained (1 - |x - x̂|² / |x - mean|² summed over the held-out
tokens), L0 (mean active features a token), dead features (active on no held-out token), and the
splice cost: masked-word top-1 / top-5 on held-out text with the layer's output replaced by its
reconstruction, against the same masks unspliced, and the same on the everyday cloze set.

Dimension letters: N tokens, C hidden size, F features, k active features a token, T tokens of a
text, B texts of one length, V vocabulary.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from .. import settings
from ..bundle import Bundle
from ..errors import InputError
from ..tokenizer.vocab import SPECIAL_TOKENS
from ..train.trainer import Step, Trainer, TrainingKind
from .common import encode, mask_positions, need_mlm

MASK_SHARE = 0.15  # the share of a held-out text's word pieces masked for the splice cost (at least one)
LEARNING_RATE = 3e-3  # Adam: large enough for a few hundred steps, small enough that few features die
BATCH = 1024  # tokens a training step


def caps() -> dict[str, int]:
    """The server's caps on one dictionary (bert/settings.py): texts, tokens, features, steps."""
    return {
        "texts": settings.whole("BERT_EXPLORER_DICT_MAX_TEXTS"),
        "tokens": settings.whole("BERT_EXPLORER_DICT_MAX_TOKENS"),
        "features": settings.whole("BERT_EXPLORER_DICT_MAX_FEATURES"),
        "steps": settings.whole("BERT_EXPLORER_DICT_MAX_STEPS"),
    }


# ---- the dictionary ---------------------------------------------------------------------------------


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


# ---- the vectors ------------------------------------------------------------------------------------


@dataclass
class Activations:
    """The state leaving layer `layer` at the word pieces of `texts`: vectors (N, C) float32, and
    for each row its text and position; tokens[s] are text s's tokens ([CLS] ... [SEP])."""

    layer: int
    vectors: Tensor
    text_index: np.ndarray  # (N,)
    position: np.ndarray  # (N,)
    tokens: list[list[str]]
    texts_read: int  # texts whose tokens are in (the first ones, in order)
    texts_given: int
    capped: bool  # the token cap stopped the reading before the last text


def check_layer(bundle: Bundle, layer) -> int:
    L = bundle.config.num_hidden_layers
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= int(layer) <= L:
        raise InputError(f"layer must be one of 1..{L} ({bundle.name} has {L} layers), got {layer!r}")
    return int(layer)


def _word_positions(enc) -> list[int]:
    return [i for i, s in enumerate(enc.sequence_ids) if s is not None]


def _same_length(encs) -> dict[int, list[int]]:
    """Text indices grouped by token length: each group one batch without padding."""
    groups: dict[int, list[int]] = {}
    for i, e in enumerate(encs):
        groups.setdefault(len(e.ids), []).append(i)
    return groups


def _batches(encs, batch: int):
    """(indices, ids (B, T), segments (B, T)) of texts of one length, at most `batch` at a time."""
    for idx in _same_length(encs).values():
        for b in range(0, len(idx), batch):
            part = idx[b : b + batch]
            ids = torch.tensor([encs[i].ids for i in part], dtype=torch.long)  # (B, T)
            types = torch.tensor([encs[i].type_ids for i in part], dtype=torch.long)  # (B, T)
            yield part, ids, types


def state_after(bundle: Bundle, ids: Tensor, types: Tensor, layer: int) -> Tensor:
    """The residual state leaving layer `layer` (B, T, C): embeddings, then layers 1..layer."""
    return bundle.model.bert.run(ids, stop=layer, token_type_ids=types).state


def finish_run(bundle: Bundle, x: Tensor, layer: int) -> Tensor:
    """The final hidden states (B, T, C) from the state leaving layer `layer`."""
    return bundle.model.bert.run(x, layer).state


def _encodings(bundle: Bundle, texts: list[str]):
    if isinstance(texts, str) or not texts:
        raise InputError("no text to read: give a list of sentences")
    encs = []
    for t in texts:
        e = bundle.tokenizer.encode(str(t), max_length=bundle.config.max_tokens)
        if _word_positions(e):
            encs.append(e)
    if not encs:
        raise InputError("the texts gave no word pieces at all (only spaces?)")
    return encs


@dataclass
class _Masked:
    """An encoding's ids with some masked (what _batches reads)."""

    ids: list[int]
    type_ids: list[int]
    sequence_ids: list


def _mask_some(enc, mask_id: int, rng: np.random.Generator) -> tuple[_Masked, list[int]]:
    """`enc` with MASK_SHARE of its word pieces (at least one) replaced by [MASK], and where."""
    words = _word_positions(enc)
    n = max(1, int(round(MASK_SHARE * len(words))))
    chosen = sorted(rng.choice(words, size=n, replace=False).tolist())
    ids = list(enc.ids)
    for p in chosen:
        ids[p] = mask_id
    return _Masked(ids, enc.type_ids, enc.sequence_ids), chosen


def gather_activations(
    bundle: Bundle,
    layer: int,
    texts: list[str],
    max_tokens: int | None = None,
    batch: int = 32,
    masked: bool = False,
    seed: int = 0,
    stop=None,
) -> Activations:
    """The vectors leaving `layer` at the word pieces of `texts`, read in order until `max_tokens`
    (default: the server's cap) word pieces are in; `capped` says when the cap stopped it.
    `masked`: every other text (the 2nd, 4th, ...) is read with MASK_SHARE of its word pieces
    masked (chosen by `seed`), as the masked-word task shows text to the model: a dictionary
    trained so reconstructs the [MASK]s the splice cost and steering read, too. `stop`: an Event,
    obeyed between batches (then the vectors are only those read by then: a stopped read is not
    for use)."""
    need_mlm(bundle, "a dictionary of features")
    layer = check_layer(bundle, layer)
    cap = caps()["tokens"] if max_tokens is None else int(max_tokens)
    encs, total = [], 0
    all_encs = _encodings(bundle, texts)
    for e in all_encs:
        n = len(_word_positions(e))
        if encs and total + n > cap:
            break
        encs.append(e)
        total += n
    if masked:
        rng = np.random.default_rng(seed)
        encs = [_mask_some(e, bundle.tokenizer.mask_id, rng)[0] if i % 2 else e for i, e in enumerate(encs)]
    vectors, text_index, position = [], [], []
    with torch.inference_mode():
        for part, ids, types in _batches(encs, batch):
            if stop is not None and stop.is_set():
                break
            x = state_after(bundle, ids, types, layer).float()  # (B, T, C)
            for r, i in enumerate(part):
                pos = _word_positions(encs[i])
                vectors.append(x[r, pos])
                text_index += [i] * len(pos)
                position += pos
    order = np.lexsort((np.array(position), np.array(text_index)))  # text by text, as read
    empty = torch.zeros(0, bundle.config.hidden_size)
    return Activations(
        layer=layer,
        vectors=(torch.cat(vectors) if vectors else empty)[torch.as_tensor(order, dtype=torch.long)].contiguous(),
        text_index=np.array(text_index, dtype=np.int64)[order],
        position=np.array(position, dtype=np.int64)[order],
        tokens=[bundle.tokenizer.convert_ids_to_tokens(list(e.ids)) for e in encs],
        texts_read=len(encs),
        texts_given=len(all_encs),
        capped=len(encs) < len(all_encs),
    )


# The built-in models' pre-training corpora: their held-out documents are the ones pre-training held out
CORPORA = ("wiki", "brown", "bbc")
SENTENCE_WORDS = (4, 40)  # the sentences read: at least 4 words, at most 40


def corpus_texts(n_train: int, n_held_out: int, corpora=CORPORA, seed: int = 0) -> tuple[list[str], list[str]]:
    """(`n_train` sentences of the training documents, `n_held_out` of the held-out ones): the
    corpora split by document as pre-training splits them, so no held-out sentence is trained on;
    the sentences drawn at random (`seed`) from every document of each part."""
    from ..train.pretrain import PretrainArgs, training_split

    parts = training_split(PretrainArgs(out="", corpora=list(corpora)))
    rng = np.random.default_rng(seed)
    out = []
    for corpus, n in zip(parts, (n_train, n_held_out), strict=True):
        lo, hi = SENTENCE_WORDS
        pool = [s for doc in corpus.documents for s in doc if lo <= len(s.split()) <= hi]
        pick = rng.permutation(len(pool))[: max(0, int(n))]
        out.append([pool[i] for i in pick])
    return out[0], out[1]


# ---- training -----------------------------------------------------------------------------------------


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


@dataclass
class DictionaryDone:
    """The last event: the dictionary (stopped: Stop was asked before the last step)."""

    dictionary: Dictionary
    stopped: bool


def variance_explained(x: Tensor, x_hat: Tensor) -> float:
    """1 - |x - x̂|² / |x - mean(x)|², summed over the rows of x (N, C)."""
    total = ((x - x.mean(0)) ** 2).sum()
    return float(1 - ((x - x_hat) ** 2).sum() / total.clamp_min(1e-12))


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


class _DictionaryFit(TrainingKind):
    """`fit_dictionary` as a kind of bert/train/trainer.py's loop: shuffled batches of the vectors,
    the squared error over the data's variance, the decoder's columns kept at unit length."""

    def __init__(self, x: Tensor, sae: SparseDictionary, seed: int, batch: int, steps: int):
        self.x, self.sae, self.seed, self.batch, self.steps = x, sae, seed, batch, steps
        self.var = ((x - x.mean(0)) ** 2).sum(1).mean().clamp_min(1e-12)  # mean squared distance to the mean
        self.fired, self.t0 = torch.zeros(sae.n_features, dtype=torch.bool), time.perf_counter()

    def batches(self) -> Iterator[Tensor]:
        g = torch.Generator().manual_seed(self.seed)
        order, at = torch.randperm(self.x.shape[0], generator=g), 0
        while True:
            if at + self.batch > len(order):
                order, at = torch.randperm(self.x.shape[0], generator=g), 0
            yield self.x[order[at : at + self.batch]]  # (batch, C)
            at += self.batch

    def loss(self, xb: Tensor):
        x_hat, f = self.sae(xb)
        return ((x_hat - xb) ** 2).sum(1).mean() / self.var, f

    @torch.no_grad()
    def edit_grads(self) -> None:
        w, gw = self.sae.W_dec, self.sae.W_dec.grad
        gw -= w * (w * gw).sum(0, keepdim=True)  # the gradient along each unit column removed

    def stepped(self, s: Step) -> None:
        self.sae.normalise_decoder()
        self.fired |= (s.out > 0).any(0)

    def step_event(self, s: Step) -> DictionaryStep:
        xb, f = s.batch, s.out
        event = DictionaryStep(
            step=s.step,
            steps=self.steps,
            variance_explained=float(1 - s.loss.detach() * self.var * len(xb) / ((xb - xb.mean(0)) ** 2).sum()),
            l0=float((f > 0).sum(1).float().mean()),
            dead=float(1 - self.fired.float().mean()),
            seconds=time.perf_counter() - self.t0,
        )
        self.fired.zero_()
        return event


def fit_dictionary(
    x: Tensor,
    n_features: int,
    sparsity: int,
    steps: int,
    seed: int = 0,
    batch: int = BATCH,
    lr: float = LEARNING_RATE,
    log_every: int = 10,
    stop=None,
) -> Iterator[DictionaryStep | SparseDictionary]:
    """Train a dictionary on vectors x (N, C), shuffled: DictionaryStep events, then the
    SparseDictionary. Adam on the squared error over the data's variance; the decoder's columns
    renormalised after each step (and the gradient along each column removed before it, so the
    step is spent on the direction, not the norm). `stop`: an Event, set to end early."""
    n_features, k, steps = check_request(n_features, sparsity, steps)
    if x.ndim != 2 or x.shape[0] < 2:
        raise InputError(f"need at least two vectors (N, C) to learn from, got shape {tuple(x.shape)}")
    x = x.float()
    sae = SparseDictionary(x.shape[1], n_features, k, seed)
    with torch.no_grad():
        sae.b_dec.copy_(x.mean(0))
    opt = torch.optim.Adam(sae.parameters(), lr=lr)
    trainer = Trainer(opt, sae.parameters(), max_steps=steps, log_every=log_every, stop=stop, diverged=None)
    yield from trainer.run(_DictionaryFit(x, sae, seed, batch, steps))
    sae.eval()
    for p in sae.parameters():
        p.requires_grad_(False)
    yield sae


def train_dictionary(
    bundle: Bundle,
    layer: int,
    texts: list[str],
    n_features: int,
    sparsity: int,
    steps: int,
    seed: int = 0,
    stop=None,
    max_tokens: int | None = None,
    batch: int = BATCH,
    log_every: int = 10,
) -> Iterator[DictionaryStep | DictionaryDone]:
    """Gather `layer`'s vectors of `texts` (held-in text: the caller keeps its held-out text out;
    every other text with some of its word pieces masked, see gather_activations), then train a
    dictionary of `n_features` with `sparsity` active a token for `steps` steps: DictionaryStep
    events, then DictionaryDone (none when `stop` came while the vectors were read: nothing
    trained). Refuses (InputError) a request over the server's caps before reading anything."""
    n_features, k, steps = check_request(n_features, sparsity, steps)
    cap = caps()
    if not isinstance(texts, str) and len(texts) > cap["texts"]:
        raise InputError(
            f"{len(texts)} texts is more than this server reads for a dictionary ({cap['texts']}, "
            "BERT_EXPLORER_DICT_MAX_TEXTS): give fewer"
        )
    t0 = time.perf_counter()
    acts = gather_activations(bundle, layer, texts, max_tokens, masked=True, seed=seed, stop=stop)
    if stop is not None and stop.is_set():  # Stop while the vectors were read: nothing trained
        return
    curve: list[DictionaryStep] = []
    sae = None
    for m in fit_dictionary(acts.vectors, n_features, k, steps, seed, batch=batch, log_every=log_every, stop=stop):
        if isinstance(m, SparseDictionary):
            sae = m
        else:
            curve.append(m)
            yield m
    done = curve[-1].step if curve else 0
    yield DictionaryDone(
        dictionary=Dictionary(
            sae=sae,
            model_name=bundle.name,
            layer=acts.layer,
            n_features=n_features,
            k=k,
            steps=done,
            tokens=len(acts.vectors),
            texts=acts.texts_read,
            seed=seed,
            seconds=time.perf_counter() - t0,
            capped=acts.capped,
            curve=curve,
        ),
        stopped=done < steps,
    )


def random_control(bundle: Bundle, seed: int = 0) -> Bundle:
    """A model of `bundle`'s shape and tokenizer with freshly initialised weights (the control)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = type(bundle.model)(bundle.config).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return Bundle(
        model=model,
        tokenizer=bundle.tokenizer,
        name=f"{bundle.name} with random weights",
        source=f"random initialisation (seed {seed}) of {bundle.name}'s shape",
    )


# ---- quality ------------------------------------------------------------------------------------------


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


def _spliced(sae: SparseDictionary, x: Tensor, encs, part) -> Tensor:
    """x (B, T, C) with every word piece's vector replaced by its reconstruction."""
    x = x.clone()
    rows = [(r, p) for r, i in enumerate(part) for p in _word_positions(encs[i])]
    r_idx, p_idx = torch.tensor([r for r, _ in rows]), torch.tensor([p for _, p in rows])
    x[r_idx, p_idx] = sae(x[r_idx, p_idx].float())[0].to(x.dtype)
    return x


def _guesses(bundle: Bundle, dictionary: Dictionary, encs, where: list[list[int]], k: int, batch: int):
    """For every text's positions `where[i]`, in text order: the top-k token ids there (P, k),
    unspliced and spliced."""
    out: list[tuple[int, int, Tensor, Tensor]] = []  # (text, place among its positions, plain, spliced)
    k = min(k, bundle.config.vocab_size)
    with torch.inference_mode():
        for part, ids, types in _batches(encs, batch):
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
    for e in _encodings(bundle, texts):
        m, chosen = _mask_some(e, tok.mask_id, rng)
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


def check_same_model(bundle: Bundle, dictionary: Dictionary) -> None:
    if dictionary.sae.W_dec.shape[0] != bundle.config.hidden_size or dictionary.layer > bundle.config.num_hidden_layers:
        raise InputError(
            f"this dictionary was trained on layer {dictionary.layer} of {dictionary.model_name}, whose vectors "
            f"do not fit {bundle.name}: train one on this model"
        )


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


# ---- feature cards ------------------------------------------------------------------------------------

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


def check_feature(dictionary: Dictionary, feature) -> int:
    n = dictionary.n_features
    if isinstance(feature, bool) or not isinstance(feature, (int, np.integer)) or not 0 <= int(feature) < n:
        raise InputError(f"feature must be one of 0..{n - 1} (the dictionary has {n}), got {feature!r}")
    return int(feature)


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
    n_contexts: int = 8,
    n_tokens: int = 10,
    bins: int = 20,
) -> FeatureCard:
    """One feature on held-out text (`acts`, `codes`): where it fires most, how often, its
    activations' histogram, and the tokens its direction promotes and suppresses."""
    feature = check_feature(dictionary, feature)
    hit = (codes.indices == feature) & (codes.values > 0)  # (N, k): at most one per row
    rows = hit.any(1).nonzero()[:, 0]
    values = (codes.values * hit).sum(1)[rows]
    mean = float(values.mean()) if len(rows) else 0.0
    contexts = []
    for j in values.argsort(descending=True)[:n_contexts].tolist():
        r = int(rows[j])
        toks, p = acts.tokens[int(acts.text_index[r])], int(acts.position[r])
        lo = max(0, p - CONTEXT_TOKENS)
        contexts.append(Context(toks[lo : p + CONTEXT_TOKENS + 1], p - lo, float(values[j])))
    counts, edges = np.histogram(values.numpy(), bins=bins) if len(rows) else (np.zeros(0), np.zeros(0))
    promoted, suppressed = head_effect(bundle, dictionary, feature, mean or 1.0, n_tokens)
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
    for p in _word_positions(enc):
        out[p] = [(int(i), float(v)) for i, v in zip(top.indices[p], top.values[p], strict=True) if v > 0]
    return TokenFeatures(list(enc.tokens), out)


# ---- steering -----------------------------------------------------------------------------------------

MAX_CLAMP = 1000.0  # the largest |value| a feature may be clamped to


def steered_state(sae: SparseDictionary, x: Tensor, feature: int, positions: list[int], value: float) -> Tensor:
    """x (T, C) with the feature's activation set to `value` at `positions`: x + (value - f) d,
    the rest of the vector (other features, the reconstruction's error) left as it was."""
    x = x.clone()
    f = sae.encode(x[positions].float())[:, feature]  # (P,)
    x[positions] += ((value - f)[:, None] * sae.W_dec[:, feature][None]).to(x.dtype)
    return x


@dataclass
class Steering:
    tokens: list[str]
    feature: int
    value: float
    positions: list[int]  # where it was set
    was: list[float]  # its activation there before
    masks: list[int]  # the [MASK]s read
    before: list[list[tuple[str, float]]]  # per [MASK]: top (token, probability)
    after: list[list[tuple[str, float]]]


def steer(
    bundle: Bundle,
    dictionary: Dictionary,
    text: str,
    feature: int,
    value: float = 0.0,
    positions: list[int] | None = None,
    k: int = 5,
) -> Steering:
    """The [MASK] guesses of `text` before and after setting `feature` to `value` (0: off) at
    `positions` (token indices; default every word piece), the rest of the model run from the
    edited state."""
    need_mlm(bundle, "steering")
    check_same_model(bundle, dictionary)
    feature = check_feature(dictionary, feature)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"the value to set must be a number, got {value!r}") from None
    if not np.isfinite(value) or abs(value) > MAX_CLAMP:
        raise InputError(f"the value to set must be a number between -{MAX_CLAMP:g} and {MAX_CLAMP:g}, got {value}")
    enc = encode(bundle, text)
    masks = mask_positions(enc, bundle.tokenizer)
    words = _word_positions(enc)
    if positions is None:
        positions = words
    positions = sorted({int(p) for p in positions})
    if not positions or any(p not in words for p in positions):
        raise InputError(f"the tokens to steer must be among the text's word pieces, {words[0]}..{words[-1]}")
    ids, types = torch.tensor([enc.ids]), torch.tensor([enc.type_ids])
    tok = bundle.tokenizer
    with torch.inference_mode():
        x = state_after(bundle, ids, types, dictionary.layer)  # (1, T, C)
        was = dictionary.sae.encode(x[0, positions].float())[:, feature]
        edited = steered_state(dictionary.sae, x[0], feature, positions, value)[None]
        probs = torch.softmax(
            bundle.model.mlm(finish_run(bundle, torch.cat([x, edited]), dictionary.layer)[:, masks]).float(), -1
        )  # (2, P, V)
        top = probs.topk(k, dim=-1)

    def words_of(r: int):
        return [
            list(zip(tok.convert_ids_to_tokens(i.tolist()), p.tolist(), strict=True))
            for i, p in zip(top.indices[r], top.values[r], strict=True)
        ]

    return Steering(list(enc.tokens), feature, value, positions, was.tolist(), masks, words_of(0), words_of(1))
