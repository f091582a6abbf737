"""Pre-training examples: token ids per sentence, NSP pairs, masked batches of similar length.

The masking itself is in bert/train/masking.py, grouping by length and padding in bert/train/batching.py.

Tokenizer-agnostic: give a tokenizer object (``.tokenize`` + ``.convert_tokens_to_ids`` and, for
the special ids, ``cls_id/sep_id/mask_id/pad_id``) or a callable ``sentence -> list[int]`` plus the
special ids explicitly.

Dimension letters: B batch, T sequence length (padded to the longest in the batch), V vocabulary.

    docs = tokenize_corpus(load_corpus("brown"), tok)              # docs -> sentences -> ids
    ds = PretrainingDataset(docs, cls_id=tok.cls_id, sep_id=tok.sep_id, max_seq_length=128, seed=0)
    masker = MLMMasker.from_tokenizer(tok, whole_word=False)
    for batch in ds.batches(epoch=0, batch_size=32, masker=masker):   # new pairs + masks each epoch
        batch["input_ids"], batch["mlm_labels"], batch["nsp_labels"], ...

NSP follows google-research/bert ``create_pretraining_data.py``: sentences are gathered into a chunk
up to a target length (``max_seq_length - 3``, shorter with probability ``short_seq_prob``), cut
at a random sentence into A and B; half the time B is replaced by text from another document
(label 1 = NotNext) and the unused sentences are put back. Label 0 = IsNext, as in Google's BERT.
One change keeps the labels 50/50: when a chunk holds a single sentence and IsNext was drawn, the
next sentence is borrowed (or, at the end of a document, the sentence is cut inside) instead of
forcing NotNext as the original does.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ..data.corpus.base import Corpus
from ..data.corpus.fetch import bert_cache_dir
from .batching import bucket_batches, pad_batch
from .masking import IGNORE_INDEX, MLMMasker, mask_tokens, special_token_ids

__all__ = [
    "IGNORE_INDEX",
    "Example",
    "MLMMasker",
    "PretrainingDataset",
    "as_tokenize_fn",
    "bucket_batches",
    "collate",
    "create_nsp_pairs",
    "mask_tokens",
    "special_token_ids",
    "tokenize_corpus",
    "token_counts",
    "truncate_seq_pair",
]

IS_NEXT, NOT_NEXT = 0, 1

Documents = list[list[list[int]]]  # documents -> sentences -> token ids


# --------------------------------------------------------------------------------------------
# Tokenizing a corpus
# --------------------------------------------------------------------------------------------


def as_tokenize_fn(tokenizer) -> Callable[[str], list[int]]:
    """A tokenizer object (``tokenize`` + ``convert_tokens_to_ids``) or a callable -> ``str -> ids``."""
    if hasattr(tokenizer, "tokenize") and hasattr(tokenizer, "convert_tokens_to_ids"):
        return lambda s: list(tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s)))
    if callable(tokenizer):
        return tokenizer
    raise TypeError("tokenizer must have .tokenize and .convert_tokens_to_ids, or be a callable str -> list[int]")


def _tokenizer_fingerprint(tokenizer) -> str | None:
    toks = getattr(tokenizer, "ids_to_tokens", None)
    if toks is None and isinstance(getattr(tokenizer, "vocab", None), dict):
        toks = sorted(tokenizer.vocab, key=tokenizer.vocab.get)
    if toks is None:
        return None
    h = hashlib.sha1("\n".join(toks).encode("utf-8"))
    for attr in ("do_lower_case", "lowercase", "strip_accents"):
        h.update(f"{attr}={getattr(tokenizer, attr, None)}".encode())
    return h.hexdigest()[:16]


def tokenize_corpus(
    corpus: Corpus | Sequence[Sequence[str]], tokenizer, cache: bool | Path = True, cache_key: str | None = None
) -> Documents:
    """Token ids for every sentence: ``out[d][s]`` is a list of ints. Empty sentences and documents
    are dropped. Cached in ``<cache>/tokenized/`` (keyed on the text and the vocabulary) when
    ``cache`` is true and the tokenizer has a vocabulary (or ``cache_key`` is given); ``cache`` may
    also be a folder."""
    docs_text = corpus.documents if isinstance(corpus, Corpus) else [list(d) for d in corpus]
    path = None
    if cache:
        tok_fp = cache_key or _tokenizer_fingerprint(tokenizer)
        if tok_fp is not None:
            h = hashlib.sha1()
            for d in docs_text:
                for s in d:
                    h.update(s.encode("utf-8"))
                    h.update(b"\n")
                h.update(b"\x00")
            name = re.sub(r"[^\w.+-]", "_", corpus.name if isinstance(corpus, Corpus) else "docs")
            folder = Path(cache) if isinstance(cache, (str, Path)) else bert_cache_dir() / "tokenized"
            path = folder / f"{name}-{h.hexdigest()[:12]}-{tok_fp}.npz"
            if path.exists():
                try:
                    return _load_tokenized(path)
                except (OSError, ValueError, KeyError):
                    pass  # damaged: tokenize again
    fn = as_tokenize_fn(tokenizer)
    out: Documents = []
    for d in docs_text:
        sents = [ids for ids in (list(fn(s)) for s in d) if ids]
        if sents:
            out.append(sents)
    if path is not None:
        _save_tokenized(path, out)
    return out


def _save_tokenized(path: Path, docs: Documents) -> None:
    import os
    import tempfile

    sent_lens = np.array([len(s) for d in docs for s in d], dtype=np.int32)
    doc_lens = np.array([len(d) for d in docs], dtype=np.int32)
    flat = np.fromiter((t for d in docs for s in d for t in s), dtype=np.int32, count=int(sent_lens.sum()))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    os.close(fd)
    try:
        np.savez(tmp, ids=flat, sent_lens=sent_lens, doc_lens=doc_lens)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _load_tokenized(path: Path) -> Documents:
    z = np.load(path)
    flat, sent_lens, doc_lens = z["ids"].tolist(), z["sent_lens"].tolist(), z["doc_lens"].tolist()
    out: Documents = []
    pos = si = 0
    for nd in doc_lens:
        doc = []
        for _ in range(nd):
            n = sent_lens[si]
            doc.append(flat[pos : pos + n])
            pos += n
            si += 1
        out.append(doc)
    return out


def token_counts(documents: Documents, vocab_size: int) -> torch.Tensor:
    """(V,) how often each id occurs (for the most-frequent-token baseline)."""
    flat = np.fromiter((t for d in documents for s in d for t in s), dtype=np.int64)
    return torch.from_numpy(np.bincount(flat, minlength=vocab_size)[:vocab_size])


# --------------------------------------------------------------------------------------------
# NSP pairs
# --------------------------------------------------------------------------------------------


class Example(NamedTuple):
    input_ids: list[int]  # [CLS] A [SEP] B [SEP]
    token_type_ids: list[int]  # 0 for [CLS] A [SEP], 1 for B [SEP]
    nsp_label: int  # 0 = IsNext, 1 = NotNext


def truncate_seq_pair(
    tokens_a: list[int], tokens_b: list[int], max_num_tokens: int, rng: random.Random
) -> tuple[list[int], list[int]]:
    """Trim the longer list one token at a time, from the front or the back at random (as Google's
    ``truncate_seq_pair``), until the two fit; returns new lists."""
    la, lb = len(tokens_a), len(tokens_b)
    fa = ba = fb = bb = 0  # tokens cut from the front/back of a and b
    while la + lb > max_num_tokens:
        if la > lb:
            la -= 1
            if rng.random() < 0.5:
                fa += 1
            else:
                ba += 1
        else:
            lb -= 1
            if rng.random() < 0.5:
                fb += 1
            else:
                bb += 1
    return tokens_a[fa : len(tokens_a) - ba], tokens_b[fb : len(tokens_b) - bb]


def _flatten(chunk: list[list[int]]) -> list[int]:
    out: list[int] = []
    for s in chunk:
        out.extend(s)
    return out


def _random_next(docs: Documents, d: int, after_a: int, target_b: int, rng: random.Random) -> list[int]:
    """B of a NotNext pair: sentences from a random place in another document, until ``target_b``
    tokens or the document's end. In a one-document corpus, from any sentence of it but the one
    at ``after_a``, which really follows A."""
    if len(docs) >= 2:
        r = rng.randint(0, len(docs) - 2)
        r = r + 1 if r >= d else r  # any document but this one
        rdoc = docs[r]
        start = rng.randint(0, len(rdoc) - 1)
    else:
        rdoc = docs[d]
        choices = [j for j in range(len(rdoc)) if j != after_a]
        start = choices[rng.randrange(len(choices))] if choices else 0
    tokens_b: list[int] = []
    for j in range(start, len(rdoc)):
        tokens_b.extend(rdoc[j])
        if len(tokens_b) >= target_b:
            break
    return tokens_b


def _pairs_from_document(
    docs: Documents,
    d: int,
    max_num_tokens: int,
    rng: random.Random,
    short_seq_prob: float,
    random_next_prob: float,
    cls_id: int,
    sep_id: int,
    out: list[Example],
) -> None:
    document = docs[d]
    target = max_num_tokens
    if rng.random() < short_seq_prob:
        target = rng.randint(2, max_num_tokens)
    chunk: list[list[int]] = []
    length = 0
    i = 0
    while i < len(document):
        seg = document[i]
        chunk.append(seg)
        length += len(seg)
        if i == len(document) - 1 or length >= target:
            is_random = rng.random() < random_next_prob
            if not is_random and len(chunk) == 1:
                if i + 1 < len(document):  # borrow the next sentence so that B is the real continuation
                    i += 1
                    chunk.append(document[i])
                elif len(seg) < 2:
                    is_random = True
            if len(chunk) == 1 and not is_random:
                # A single sentence at the end of a document: A and B are its two halves.
                cut = rng.randint(1, len(seg) - 1)
                tokens_a, tokens_b = seg[:cut], seg[cut:]
            else:
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = _flatten(chunk[:a_end])
                if is_random:
                    tokens_b = _random_next(docs, d, i - len(chunk) + 1 + a_end, target - len(tokens_a), rng)
                    i -= len(chunk) - a_end  # put the unused sentences back
                else:
                    tokens_b = _flatten(chunk[a_end:])
            tokens_a, tokens_b = truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a and tokens_b:
                ids = [cls_id, *tokens_a, sep_id, *tokens_b, sep_id]
                types = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                out.append(Example(ids, types, NOT_NEXT if is_random else IS_NEXT))
            chunk = []
            length = 0
        i += 1


def create_nsp_pairs(
    documents: Documents,
    *,
    max_seq_length: int,
    cls_id: int,
    sep_id: int,
    rng: random.Random | int = 0,
    short_seq_prob: float = 0.1,
    random_next_prob: float = 0.5,
    dupe_factor: int = 1,
    shuffle: bool = True,
) -> list[Example]:
    """All NSP pairs of ``dupe_factor`` passes over the documents, shuffled (as Google's script does,
    so that the first n examples are a sample of the whole corpus) unless ``shuffle=False``."""
    if max_seq_length < 5:
        raise ValueError("max_seq_length must be at least 5 ([CLS] a [SEP] b [SEP])")
    if not isinstance(rng, random.Random):
        rng = random.Random(rng)
    max_num_tokens = max_seq_length - 3
    out: list[Example] = []
    for _ in range(dupe_factor):
        for d in range(len(documents)):
            if documents[d]:
                _pairs_from_document(
                    documents, d, max_num_tokens, rng, short_seq_prob, random_next_prob, cls_id, sep_id, out
                )
    if shuffle:
        rng.shuffle(out)
    return out


# --------------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------------


def collate(
    examples: Sequence[Example], pad_id: int, masker: MLMMasker | None = None, generator: torch.Generator | None = None
) -> dict[str, torch.Tensor]:
    """Pad to the longest example. Returns input_ids, token_type_ids, attention_mask (B, T),
    nsp_labels (B,), mlm_labels (B, T): with ``masker`` the inputs are masked and mlm_labels hold the
    original ids at the chosen positions; without, inputs are unchanged and mlm_labels are all -100."""
    padded = pad_batch([e.input_ids for e in examples], pad_id, [e.token_type_ids for e in examples])
    input_ids, attention_mask = padded.input_ids, padded.attention_mask
    if masker is not None:
        input_ids, mlm_labels = masker(input_ids, attention_mask, generator)
    else:
        mlm_labels = torch.full(input_ids.shape, IGNORE_INDEX, dtype=torch.long)
    return {
        "input_ids": input_ids,
        "token_type_ids": padded.token_type_ids,
        "attention_mask": attention_mask,
        "nsp_labels": torch.tensor([e.nsp_label for e in examples], dtype=torch.long),
        "mlm_labels": mlm_labels,
    }


class PretrainingDataset:
    """NSP pairs + MLM masks, new ones each epoch (dynamic), reproducible from (seed, epoch).

    ``batches(epoch, ...)`` is the same on every rank; with ``world_size > 1`` each rank takes every
    ``world_size``-th batch (all ranks get the same number). ``start`` skips batches, to resume a run.
    """

    def __init__(
        self,
        documents: Documents,
        *,
        cls_id: int,
        sep_id: int,
        max_seq_length: int = 128,
        short_seq_prob: float = 0.1,
        random_next_prob: float = 0.5,
        seed: int = 0,
        dupe_factor: int = 1,
    ):
        self.documents = [d for d in documents if d]
        if not self.documents:
            raise ValueError("no documents with tokens")
        self.cls_id, self.sep_id = cls_id, sep_id
        self.max_seq_length = max_seq_length
        self.short_seq_prob = short_seq_prob
        self.random_next_prob = random_next_prob
        self.seed = seed
        self.dupe_factor = dupe_factor
        self._cache: tuple[int, list[Example]] | None = None

    @classmethod
    def from_corpus(cls, corpus: Corpus, tokenizer, **kwargs) -> PretrainingDataset:
        return cls(tokenize_corpus(corpus, tokenizer), cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, **kwargs)

    @property
    def num_tokens(self) -> int:
        return sum(len(s) for d in self.documents for s in d)

    def examples(self, epoch: int = 0) -> list[Example]:
        if self._cache is None or self._cache[0] != epoch:
            rng = random.Random(f"nsp:{self.seed}:{epoch}")
            ex = create_nsp_pairs(
                self.documents,
                max_seq_length=self.max_seq_length,
                cls_id=self.cls_id,
                sep_id=self.sep_id,
                rng=rng,
                short_seq_prob=self.short_seq_prob,
                random_next_prob=self.random_next_prob,
                dupe_factor=self.dupe_factor,
            )
            self._cache = (epoch, ex)
        return self._cache[1]

    def batch_indices(
        self,
        epoch: int,
        batch_size: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        shuffle: bool = True,
        drop_last: bool = False,
    ) -> list[list[int]]:
        ex = self.examples(epoch)
        batches = bucket_batches(
            [len(e.input_ids) for e in ex],
            batch_size,
            seed=self.seed * 100003 + epoch,
            shuffle=shuffle,
            drop_last=drop_last,
        )
        if world_size > 1:
            n = len(batches) // world_size * world_size
            batches = batches[rank:n:world_size]
        return batches

    def batches(
        self,
        epoch: int,
        batch_size: int,
        masker: MLMMasker | None,
        *,
        pad_id: int | None = None,
        rank: int = 0,
        world_size: int = 1,
        start: int = 0,
        shuffle: bool = True,
        drop_last: bool = False,
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Collated, masked batches of one epoch. The masks of batch k depend only on (seed, epoch,
        k, rank), so a resumed run (``start=k``) sees exactly the batches it would have seen."""
        if pad_id is None:
            if masker is None:
                raise ValueError("give pad_id or a masker")
            pad_id = masker.pad_id
        ex = self.examples(epoch)
        for k, idx in enumerate(
            self.batch_indices(
                epoch, batch_size, rank=rank, world_size=world_size, shuffle=shuffle, drop_last=drop_last
            )
        ):
            if k < start:
                continue
            g = torch.Generator().manual_seed((self.seed * 1_000_003 + epoch) * 1_000_003 + k * 1009 + rank)
            yield collate([ex[i] for i in idx], pad_id, masker, g)
