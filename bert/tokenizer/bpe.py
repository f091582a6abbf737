"""RoBERTa's tokenizer: byte-level BPE (GPT-2's), behind our Tokenizer's interface, and the trace of the
merges that build one word.

Byte-level BPE reads a text as UTF-8 bytes, each shown as one printable character (a space is "Ġ", "é" is
"Ã©"), splits it into words with GPT-2's pattern (a word carries the space before it: " world" -> "Ġworld";
so "hello" at the start of a text and " hello" after a space are different words), then merges pairs of
adjacent symbols, the pair with the best (lowest) rank in merges.txt first, until no listed pair is left.
Every byte is in the vocab: there is no unknown token in practice.

RoBERTa's template: ``<s> A </s>`` and ``<s> A </s></s> B </s>``, token types all 0. The mask token "<mask>"
strips the whitespace before it (lstrip) as in roberta-base's tokenizer.json and transformers 4's
RobertaTokenizerFast; "[MASK]" typed in a text means "<mask>" (our choice: see backed.py). Loading from
vocab.json + merges.txt builds that pipeline; loading from tokenizer.json takes the file's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, decoders, pre_tokenizers, processors
from tokenizers import Tokenizer as LibraryTokenizer

from ..atomic_files import atomic_write_text
from ..errors import TokenizerError
from .backed import BackedTokenizer
from .files import (
    MERGES_TXT,
    TOKENIZER_JSON,
    VOCAB_JSON,
    bpe_model,
    read_bpe_vocab,
    read_merges,
    read_tokenizer_json,
)
from .wordpiece import MAX_INPUT_CHARS_PER_WORD, Trace

BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, UNK_TOKEN, MASK_TOKEN = "<s>", "</s>", "<pad>", "<unk>", "<mask>"

# The merges of a word are traced up to this many characters (the space before it not counted), as far as
# WordPiece's trace follows a word: every merge rescans the word, so a trace costs the square of the word's
# length, and a web-trained merge table turns a word of 2,000 emoji into thousands of merges. A longer word
# gets a capped Trace: no steps, and its tokens from the library's BPE (what encoding it gives).
MAX_TRACE_CHARS = MAX_INPUT_CHARS_PER_WORD

# A MergeStep keeps this many symbols on each side of the merged one, so that a trace holds a few symbols
# per merge, not a copy of the word: a word of up to 2 * NEARBY + 1 symbols is always seen whole.
NEARBY = 8

_BYTE_LEVEL = decoders.ByteLevel()


@dataclass(frozen=True)
class MergeStep:
    """One merge of byte-level BPE: the adjacent pair (left, right) with the lowest rank in the word, the
    leftmost when it occurs twice, becomes ``merged``.

    rank: its line in merges.txt (0 = merged first in training); position: index of ``left`` in the
    symbols before the merge (of ``merged`` after it); nearby: the word's symbols after the merge from
    ``nearby_start``, up to NEARBY on each side of ``merged``; length: how many symbols the word has after
    the merge (so ``nearby`` is the whole word when nearby_start is 0 and len(nearby) == length).
    """

    rank: int
    position: int
    left: str
    right: str
    merged: str
    nearby: tuple[str, ...]
    nearby_start: int
    length: int


class RobertaTokenizer(BackedTokenizer):
    """RoBERTa's byte-level BPE: ``RobertaTokenizer.from_files(vocab_json, merges_txt)`` or
    ``RobertaTokenizer.from_tokenizer_json(path)``, or ``from_folder(folder)`` (tokenizer.json first)."""

    kind = "bpe"
    pair_separators = 2  # <s> A </s></s> B </s>
    pair_type_id = 0
    special_tokens = (UNK_TOKEN, BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, MASK_TOKEN)

    def __init__(self, backend: LibraryTokenizer, spec: dict | None = None):
        super().__init__(backend, do_lower_case=False)
        self._spec = spec
        self._ranks: dict[tuple[str, str], int] | None = None

    @classmethod
    def from_files(cls, vocab_json: Path, merges_txt: Path, add_prefix_space: bool = False) -> RobertaTokenizer:
        """vocab.json + merges.txt with RoBERTa's pipeline (as transformers' RobertaTokenizerFast builds it,
        add_prefix_space False by default; trimmed offsets; "<mask>" with lstrip)."""
        vocab = read_bpe_vocab(Path(vocab_json))
        merges = read_merges(Path(merges_txt))
        backend = LibraryTokenizer(bpe_model(vocab, merges))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
        backend.decoder = decoders.ByteLevel()
        missing = [t for t in (BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, UNK_TOKEN, MASK_TOKEN) if t not in vocab]
        if missing:
            raise TokenizerError(f"vocab.json lacks RoBERTa's special token(s) {', '.join(missing)}")
        backend.post_processor = processors.RobertaProcessing(
            (EOS_TOKEN, vocab[EOS_TOKEN]),
            (BOS_TOKEN, vocab[BOS_TOKEN]),
            trim_offsets=True,
            add_prefix_space=add_prefix_space,
        )
        backend.add_special_tokens(
            [AddedToken(t, normalized=False, special=True) for t in (BOS_TOKEN, PAD_TOKEN, EOS_TOKEN, UNK_TOKEN)]
            + [AddedToken(MASK_TOKEN, lstrip=True, normalized=False, special=True)]
        )
        return cls(backend)

    @classmethod
    def from_tokenizer_json(cls, path: Path) -> RobertaTokenizer:
        """A tokenizer.json holding a BPE model (roberta-base's, say), its pipeline as the file says."""
        backend, spec = read_tokenizer_json(Path(path))
        if spec["model"].get("type") != "BPE":
            raise TokenizerError(f"{Path(path).name} holds a {spec['model'].get('type')} model, not RoBERTa's BPE")
        return cls(backend, spec)

    @classmethod
    def from_folder(cls, folder: Path) -> RobertaTokenizer:
        """tokenizer.json when the folder has one (transformers reads it first), else vocab.json + merges.txt."""
        folder = Path(folder)
        if (folder / TOKENIZER_JSON).is_file():
            return cls.from_tokenizer_json(folder / TOKENIZER_JSON)
        return cls.from_files(folder / VOCAB_JSON, folder / MERGES_TXT)

    def save(self, folder) -> str:
        """Write tokenizer.json (the whole pipeline, read first on loading), vocab.json and merges.txt into
        ``folder``, each atomically; return the folder."""
        folder = Path(super().save(folder))
        spec = self.spec
        merges = [m.split(" ") if isinstance(m, str) else m for m in spec["model"]["merges"]]
        atomic_write_text(folder / VOCAB_JSON, json.dumps(spec["model"]["vocab"], ensure_ascii=False))
        atomic_write_text(folder / MERGES_TXT, "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
        return str(folder)

    @property
    def spec(self) -> dict:
        """The library tokenizer's JSON, parsed (read once)."""
        if self._spec is None:
            self._spec = json.loads(self.backend.to_str())
        return self._spec

    @property
    def ranks(self) -> dict[tuple[str, str], int]:
        """(left, right) -> rank, from the model's merges."""
        if self._ranks is None:
            merges = self.spec["model"]["merges"]
            self._ranks = {tuple(m.split(" ") if isinstance(m, str) else m): r for r, m in enumerate(merges)}
        return self._ranks

    # ---- trace -------------------------------------------------------------------------------------------

    def model_words(self, text: str) -> list[tuple[str, bool]]:
        """The byte-level words of ``text`` ("Ġworld"): each word's tokens joined; special tokens as themselves."""
        ids, toks, _offs, wids = self.encode_text(text)
        words: list[list] = []
        for i, t, w in zip(ids, toks, wids):
            if w == len(words):
                words.append([t, i in self._special_ids])
            else:
                words[w][0] += t
        return [(w, sp) for w, sp in words]

    def trace_word(self, model_word: str, word: str, special: bool = False) -> Trace:
        """The merges that build ``model_word`` (byte-level, "Ġhello") from its bytes, in order: a Trace of
        MergeStep, whose pieces and ids are the word's tokens. A word of more than MAX_TRACE_CHARS
        characters is not traced: a capped Trace, with no steps, the library's tokens and why."""
        if special:
            return Trace([], word=word, normalized=model_word, pieces=[model_word], ids=[self.vocab[model_word]])
        text = _BYTE_LEVEL.decode([model_word])
        chars = len(text.removeprefix(" "))
        if chars > MAX_TRACE_CHARS:
            tokens = self.backend.model.tokenize(model_word)
            return Trace(
                [],
                word=word,
                normalized=model_word,
                pieces=[t.value for t in tokens],
                ids=[t.id for t in tokens],
                capped=True,
                reason=f"its merges are traced for words of up to {MAX_TRACE_CHARS} characters; it has {chars:,}",
            )
        symbols = list(model_word)
        ranks = self.ranks
        steps = []
        while len(symbols) > 1:
            best = None
            for k in range(len(symbols) - 1):
                r = ranks.get((symbols[k], symbols[k + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, k)
            if best is None:
                break
            r, k = best
            left, right = symbols[k], symbols[k + 1]
            symbols[k : k + 2] = [left + right]
            start = max(0, k - NEARBY)
            nearby = tuple(symbols[start : k + NEARBY + 1])
            steps.append(MergeStep(r, k, left, right, left + right, nearby, start, len(symbols)))
        unknown = [s for s in symbols if s not in self.vocab]
        return Trace(
            steps,
            word=word,
            normalized=model_word,
            pieces=symbols,
            ids=[self.vocab.get(s, self.unk_id) for s in symbols],
            unk=bool(unknown),
            reason=f"not in the vocab: {unknown!r}" if unknown else "",
        )
