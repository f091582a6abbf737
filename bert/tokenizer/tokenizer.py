"""The ``Tokenizer`` class: vocab and special tokens, tokenize / encode / decode, padding, and traces."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import TokenizerError
from .basic import BasicTokenizer
from .encode import Encoding, check_text, encode_pair, encode_text
from .vocab import read_vocab_file, vocab_file_path, vocab_tables, write_vocab_file
from .wordpiece import MAX_INPUT_CHARS_PER_WORD, Trace, WordPiece


def _special_id(token_attr: str) -> property:
    """A read-only property: the vocab id of the special token held in attribute ``token_attr``."""
    return property(lambda self: self.vocab[getattr(self, token_attr)], doc=f"The vocab id of ``{token_attr}``.")


class Tokenizer:
    """BERT WordPiece tokenizer: ``Tokenizer.from_file("vocab.txt")`` or ``Tokenizer(tokens_or_dict)``.

    ``vocab`` is a list of tokens (id = position, like the lines of vocab.txt; on duplicates the last
    position wins for token -> id, as in transformers) or a dict token -> id with ids 0..n-1.
    """

    def __init__(
        self,
        vocab: dict[str, int] | Sequence[str],
        do_lower_case: bool = True,
        *,
        unk_token: str = "[UNK]",
        cls_token: str = "[CLS]",
        sep_token: str = "[SEP]",
        pad_token: str = "[PAD]",
        mask_token: str = "[MASK]",
    ):
        self.ids_to_tokens, self.vocab = vocab_tables(vocab)
        self.unk_token, self.cls_token, self.sep_token = unk_token, cls_token, sep_token
        self.pad_token, self.mask_token = pad_token, mask_token
        self.special_tokens = (unk_token, cls_token, sep_token, pad_token, mask_token)
        missing = [t for t in self.special_tokens if t not in self.vocab]
        if missing:
            raise TokenizerError(f"vocab lacks special token(s) {', '.join(missing)}")
        self.do_lower_case = bool(do_lower_case)
        self.basic = BasicTokenizer(do_lower_case, never_split=self.special_tokens)
        self.wordpiece = WordPiece(self.vocab, unk_token, MAX_INPUT_CHARS_PER_WORD)
        self._special_ids = frozenset(self.vocab[t] for t in self.special_tokens)

    @classmethod
    def from_file(cls, vocab_path, do_lower_case: bool = True, **kwargs) -> Tokenizer:
        """Load a vocab.txt (one token per line, id = line number); a directory means DIR/vocab.txt."""
        return cls(read_vocab_file(vocab_file_path(vocab_path)), do_lower_case, **kwargs)

    def save(self, path) -> str:
        """Write the vocab (one token per line, in id order) atomically; a directory means DIR/vocab.txt."""
        return write_vocab_file(self.ids_to_tokens, vocab_file_path(path))

    # ---- basics ------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.ids_to_tokens)

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={len(self)}, do_lower_case={self.do_lower_case})"

    unk_id = _special_id("unk_token")
    cls_id = _special_id("cls_token")
    sep_id = _special_id("sep_token")
    pad_id = _special_id("pad_token")
    mask_id = _special_id("mask_token")

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Token(s) -> id(s); a token not in the vocab gives unk_id."""
        unk = self.unk_id
        if isinstance(tokens, str):
            return self.vocab.get(tokens, unk)
        return [self.vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """Id(s) -> token(s); an id outside 0..len-1 raises TokenizerError."""
        n = len(self.ids_to_tokens)

        def one(i) -> str:
            i = int(i)
            if not 0 <= i < n:
                raise TokenizerError(f"token id {i} is outside the vocab (0..{n - 1})")
            return self.ids_to_tokens[i]

        if isinstance(ids, int) or (hasattr(ids, "ndim") and ids.ndim == 0):
            return one(ids)
        return [one(i) for i in ids]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """Tokens joined by spaces with "##" continuations glued on (no further clean-up of spaces).

        Same as transformers' ``decode(ids, clean_up_tokenization_spaces=False)``: "hello , world" stays.
        """
        toks = self.convert_ids_to_tokens(list(ids))
        if skip_special_tokens:
            toks = [t for t in toks if t not in self.special_tokens]
        return " ".join(toks).replace(" ##", "").strip()

    # ---- tokenization ------------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of ``text``, without [CLS]/[SEP]."""
        return encode_text(self, check_text(text, "text"))[1]

    def basic_tokenize(self, text: str) -> list[str]:
        """Basic tokens (words after cleaning, normalisation and punctuation splitting)."""
        return self.basic.tokenize(check_text(text, "text"))

    def words_with_offsets(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """[(basic token, (start, end))]: the words WordPiece sees and where they are in ``text``.

        Their order and index match Encoding.word_ids.
        """
        return [(t, (s, e)) for t, s, e in self.basic.tokens_with_offsets(check_text(text, "text"))]

    def encode(
        self,
        text_a: str,
        text_b: str | None = None,
        max_length: int | None = 512,
        truncation: bool = True,
        add_special_tokens: bool = True,
    ) -> Encoding:
        """[CLS] A [SEP] (B [SEP]) with type ids, offsets and word ids.

        Truncation (when ``truncation`` and the total exceeds ``max_length``, specials included) is
        transformers' "longest_first": tokens are dropped from the end of the longer sequence one at a
        time, from B when both are equally long. ``max_length=None`` means no limit. A truncated text
        is read only up to 10,000 pieces past ``max_length``: a long paste costs no more than that,
        and ``num_truncated`` is exact below it and a lower bound above.
        """
        return encode_pair(self, text_a, text_b, max_length, truncation, add_special_tokens)

    def encode_batch(
        self,
        texts: Sequence[str | tuple[str, str]],
        max_length: int | None = 512,
        truncation: bool = True,
        add_special_tokens: bool = True,
    ) -> list[Encoding]:
        """Encode many texts; an item may be a str or an (text_a, text_b) pair."""
        if isinstance(texts, str):
            raise TokenizerError("encode_batch takes a list of texts, not a str")
        out = []
        for t in texts:
            if isinstance(t, (tuple, list)):
                if len(t) != 2:
                    raise TokenizerError("a pair in encode_batch must be (text_a, text_b)")
                out.append(self.encode(t[0], t[1], max_length, truncation, add_special_tokens))
            else:
                out.append(self.encode(t, None, max_length, truncation, add_special_tokens))
        return out

    def pad(self, encodings: Sequence[Encoding], length: int | None = None) -> dict[str, list[list[int]]]:
        """Right-pad to the longest (or ``length``): {"input_ids", "token_type_ids", "attention_mask"}."""
        n = max((len(e) for e in encodings), default=0) if length is None else length
        if any(len(e) > n for e in encodings):
            raise TokenizerError(f"an encoding is longer than length={n}")
        pad = self.pad_id
        return {
            "input_ids": [e.ids + [pad] * (n - len(e)) for e in encodings],
            "token_type_ids": [e.type_ids + [0] * (n - len(e)) for e in encodings],
            "attention_mask": [e.attention_mask + [0] * (n - len(e)) for e in encodings],
        }

    # ---- trace -------------------------------------------------------------------------------------------

    def trace(self, word: str) -> Trace:
        """Greedy longest-match-first steps for one word, for the UI.

        ``word`` is normalised first (lower-case, accents) like any text; it must come out as exactly one
        basic token, otherwise TokenizerError (use ``trace_text`` for a phrase). ``Trace.normalized`` is
        the basic token traced; a special token like "[MASK]" traces as one accepted step.
        """
        check_text(word, "word")
        btoks = self.basic.tokenize(word)
        if len(btoks) != 1:
            raise TokenizerError(
                f"trace needs a single word; {word!r} splits into {len(btoks)} basic tokens {btoks!r}"
                " (use trace_text for a phrase)"
            )
        t = self.wordpiece.trace(btoks[0])
        t.word = word
        return t

    def trace_text(self, text: str) -> list[Trace]:
        """trace() of every basic token of ``text``."""
        out = []
        for b in self.basic.tokenize(check_text(text, "text")):
            t = self.wordpiece.trace(b)
            out.append(t)
        return out
