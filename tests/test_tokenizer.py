"""Tests for bert.tokenizer: hand-checked cases on an inline vocab, then parity with transformers.

Parity targets (imported inside the tests, skipped when missing):
  * ids and tokens: transformers' Python BERT tokenizer (``BertTokenizerLegacy`` in transformers 5,
    ``BertTokenizer`` before), on several thousand generated lines, single and paired with truncation;
  * offsets and word ids: ``BertTokenizerFast`` (Rust), on the lines where its ids agree with ours.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from bert.errors import TokenizerError
from bert.tokenizer import (
    BasicTokenizer,
    Encoding,
    Tokenizer,
    Trace,
    TraceStep,
    WordPiece,
)
from tests.hostile_text import VOCAB_PATH, WORDS, case_word, make_lines

# google-research/bert tokenization_test.py's vocab, plus the two specials our Tokenizer requires.
TINY = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","]
TINY_FULL = TINY + ["[PAD]", "[MASK]"]


needs_vocab = pytest.mark.skipif(VOCAB_PATH is None, reason="no bert-base-uncased vocab.txt installed")


@pytest.fixture(scope="module")
def tiny() -> Tokenizer:
    return Tokenizer(TINY_FULL)


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    if VOCAB_PATH is None:
        pytest.skip("no bert-base-uncased vocab.txt installed")
    return Tokenizer.from_file(VOCAB_PATH)


def _transformers():
    return pytest.importorskip("transformers", reason="transformers is not installed")


@pytest.fixture(scope="module")
def slow(tok):
    """transformers' pure-Python BERT tokenizer (the reference for ids and tokens)."""
    transformers = _transformers()
    try:
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as Slow
    except ImportError:  # transformers < 5: BertTokenizer is the Python one
        Slow = transformers.BertTokenizer
    return Slow(vocab_file=VOCAB_PATH, do_lower_case=True)


@pytest.fixture(scope="module")
def fast(tok):
    """transformers' Rust-backed BERT tokenizer (the reference for offsets)."""
    transformers = _transformers()
    if int(transformers.__version__.split(".")[0]) >= 5:
        # In 5.x the constructor ignores vocab_file; it takes the vocab itself.
        return transformers.BertTokenizerFast(vocab=dict(tok.vocab), do_lower_case=True)
    return transformers.BertTokenizerFast(vocab_file=VOCAB_PATH, do_lower_case=True)


# --------------------------------------------------------------------------------------------------------
# Inline tiny vocab (after google-research/bert tokenization_test.py)
# --------------------------------------------------------------------------------------------------------


def test_wordpiece_tiny():
    wp = WordPiece({t: i for i, t in enumerate(TINY)})
    assert wp.tokenize("unwanted") == ["un", "##want", "##ed"]
    assert wp.tokenize("running") == ["runn", "##ing"]
    assert wp.tokenize("unwantedX") == ["[UNK]"]
    assert wp.tokenize("") == []


def test_full_tokenizer_tiny(tiny):
    assert tiny.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tiny.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert tiny.tokenize("UNwant\u00e9d,running") == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tiny.convert_tokens_to_ids(["un", "##want", "##ed", ",", "runn", "##ing"]) == [7, 4, 5, 10, 8, 9]
    assert tiny.convert_tokens_to_ids("nope") == tiny.unk_id == 0
    assert tiny.convert_ids_to_tokens([7, 4, 5]) == ["un", "##want", "##ed"]
    assert tiny.convert_ids_to_tokens(1) == "[CLS]"
    with pytest.raises(TokenizerError):
        tiny.convert_ids_to_tokens([999])
    assert (tiny.cls_id, tiny.sep_id, tiny.pad_id, tiny.mask_id, tiny.unk_id) == (1, 2, 11, 12, 0)
    assert len(tiny) == 13


def test_tiny_encoding_fields(tiny):
    e = tiny.encode("unwanted, running", "want")
    assert isinstance(e, Encoding)
    assert e.tokens == ["[CLS]", "un", "##want", "##ed", ",", "runn", "##ing", "[SEP]", "want", "[SEP]"]
    assert e.type_ids == [0] * 8 + [1] * 2
    assert e.sequence_ids == [None, 0, 0, 0, 0, 0, 0, None, 1, None]
    assert e.word_ids == [None, 0, 0, 0, 1, 2, 2, None, 0, None]
    assert e.offsets == [(0, 0), (0, 2), (2, 6), (6, 8), (8, 9), (10, 14), (14, 17), (0, 0), (0, 4), (0, 0)]
    assert e.special_tokens_mask == [1, 0, 0, 0, 0, 0, 0, 1, 0, 1]
    assert e.attention_mask == [1] * 10
    assert not e.truncated and e.num_truncated == 0 and len(e) == 10
    assert tiny.decode(e.ids) == "[CLS] unwanted , running [SEP] want [SEP]"
    assert tiny.decode(e.ids, skip_special_tokens=True) == "unwanted , running want"


def test_basic_chinese():
    assert BasicTokenizer().tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]


def test_basic_lower_and_accents():
    b = BasicTokenizer(do_lower_case=True)
    assert b.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are", "you", "?"]
    assert b.tokenize("H\u00e9llo") == ["hello"]
    assert b.tokenize("He\u0301llo") == ["hello"]  # decomposed accent
    assert b.tokenize("na\u00efve CAF\u00c9") == ["naive", "cafe"]


def test_basic_no_lower():
    b = BasicTokenizer(do_lower_case=False)
    assert b.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["HeLLo", "!", "how", "Are", "yoU", "?"]
    assert b.tokenize("He\u0301llo") == ["H\u00e9llo"]  # NFC, accents kept
    assert [t for t in b.tokens_with_offsets("He\u0301llo")] == [("H\u00e9llo", 0, 6)]


def test_basic_punctuation():
    b = BasicTokenizer()
    assert b.tokenize("a-b$c`d.e") == ["a", "-", "b", "$", "c", "`", "d", ".", "e"]
    assert b.tokenize("\u00bfqu\u00e9?\u2014\u00abx\u00bb") == ["\u00bf", "que", "?", "\u2014", "\u00ab", "x", "\u00bb"]
    assert b.tokenize("1,000.50") == ["1", ",", "000", ".", "50"]


def test_basic_control_and_whitespace():
    b = BasicTokenizer()
    # controls and format characters vanish (joining their neighbours); whitespace separates
    assert b.tokenize("a\x00b\ufffdc\x07d\u200be\u202ef") == ["abcdef"]
    assert b.tokenize("a\x0bb\x1cc\x85d") == ["abcd"]  # Cc, though str.isspace() says True
    assert b.tokenize("a\tb\nc\rd\u00a0e\u3000f\u2028g") == ["a", "b", "c", "d", "e", "f", "g"]
    assert b.tokenize("") == [] and b.tokenize(" \t\n\x00 ") == []


def test_specials_kept_whole(tiny):
    assert tiny.tokenize("[MASK]") == ["[MASK]"]
    assert tiny.tokenize("want [MASK] ,") == ["want", "[MASK]", ","]
    assert tiny.tokenize("want[MASK],") == ["want", "[MASK]", ","]  # even without spaces
    assert tiny.tokenize("[mask]") == ["[UNK]", "[UNK]", "[UNK]"]  # only the exact spelling
    e = tiny.encode("want [MASK]")
    assert e.ids.count(tiny.mask_id) == 1 and e.offsets[2] == (5, 11) and e.word_ids[2] == 1


def test_missing_specials_and_bad_vocab(tmp_path):
    with pytest.raises(TokenizerError, match=r"\[PAD\].*\[MASK\]"):
        Tokenizer(TINY)
    with pytest.raises(TokenizerError, match="not found"):
        Tokenizer.from_file(tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    with pytest.raises(TokenizerError, match="empty"):
        Tokenizer.from_file(tmp_path / "empty.txt")
    (tmp_path / "nocls.txt").write_text("[UNK]\n[SEP]\n[PAD]\n[MASK]\nhi\n", encoding="utf-8")
    with pytest.raises(TokenizerError, match=r"\[CLS\]"):
        Tokenizer.from_file(tmp_path / "nocls.txt")
    with pytest.raises(TokenizerError):
        Tokenizer({"[UNK]": 0, "[CLS]": 5})
    assert isinstance(TokenizerError("x"), ValueError)


def test_bad_input(tiny):
    for bad in (None, 3, b"bytes", ["list"]):
        with pytest.raises(TokenizerError):
            tiny.encode(bad)
    with pytest.raises(TokenizerError):
        tiny.encode("a", 5)
    with pytest.raises(TokenizerError):
        tiny.encode("a", max_length=1)
    with pytest.raises(TokenizerError):
        tiny.encode("a", "b", max_length=2)
    assert tiny.encode("want", "want", max_length=3).tokens == ["[CLS]", "[SEP]", "[SEP]"]
    assert tiny.encode("", "").tokens == ["[CLS]", "[SEP]", "[SEP]"]


def test_dict_vocab_and_save_roundtrip(tmp_path, tiny):
    t2 = Tokenizer({t: i for i, t in enumerate(TINY_FULL)})
    assert t2.ids_to_tokens == TINY_FULL
    p = tiny.save(tmp_path)
    assert p == str(tmp_path / "vocab.txt")
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8") == "\n".join(TINY_FULL) + "\n"
    assert sorted(os.listdir(tmp_path)) == ["vocab.txt"]  # no temp file left behind
    t3 = Tokenizer.from_file(tmp_path)
    assert t3.vocab == tiny.vocab and t3.ids_to_tokens == tiny.ids_to_tokens
    p2 = tiny.save(tmp_path / "other.txt")
    assert Tokenizer.from_file(p2).vocab == tiny.vocab


def test_truncation_single_and_pair(tiny):
    a = "want " * 10  # 10 tokens
    e = tiny.encode(a, max_length=6)
    assert e.tokens == ["[CLS]"] + ["want"] * 4 + ["[SEP]"] and e.truncated and e.num_truncated == 6
    assert tiny.encode(a, max_length=6, truncation=False).ids.count(tiny.vocab["want"]) == 10
    assert len(tiny.encode(a, max_length=None)) == 12
    # longest_first: longer loses first, then alternate; a tie loses from B
    e = tiny.encode("want " * 5, "wa " * 3, max_length=9)  # 5 + 3 + 3 = 11 -> remove 2, both from A
    assert e.ids.count(tiny.vocab["want"]) == 3 and e.ids.count(tiny.vocab["wa"]) == 3
    e = tiny.encode("want " * 4, "wa " * 4, max_length=10)  # 11 -> remove 1: tie, from B
    assert e.ids.count(tiny.vocab["want"]) == 4 and e.ids.count(tiny.vocab["wa"]) == 3
    e = tiny.encode("want " * 4, "wa " * 6, max_length=8)  # 13 -> remove 5: B 6->4, then 1 each + 1 B
    assert e.ids.count(tiny.vocab["want"]) == 3 and e.ids.count(tiny.vocab["wa"]) == 2
    assert e.num_truncated == 5 and len(e) == 8
    assert tiny.encode("want want", add_special_tokens=False).tokens == ["want", "want"]


def test_encode_batch_and_pad(tiny):
    encs = tiny.encode_batch(["want", ("want", "wa"), ""], max_length=8)
    assert [len(e) for e in encs] == [3, 5, 2]
    padded = tiny.pad(encs)
    assert padded["input_ids"][2] == [1, 2, 11, 11, 11]
    assert padded["attention_mask"][0] == [1, 1, 1, 0, 0]
    assert padded["token_type_ids"][1] == [0, 0, 0, 1, 1]
    with pytest.raises(TokenizerError):
        tiny.encode_batch("not a list")


# --------------------------------------------------------------------------------------------------------
# Trace
# --------------------------------------------------------------------------------------------------------


def _steps(trace):
    return [(s.start, s.end, s.candidate, s.accepted) for s in trace]


def test_trace_tiny(tiny):
    t = tiny.trace("unwanted")
    assert isinstance(t, Trace) and all(isinstance(s, TraceStep) for s in t)
    assert _steps(t) == [
        (0, 8, "unwanted", False),
        (0, 7, "unwante", False),
        (0, 6, "unwant", False),
        (0, 5, "unwan", False),
        (0, 4, "unwa", False),
        (0, 3, "unw", False),
        (0, 2, "un", True),
        (2, 8, "##wanted", False),
        (2, 7, "##wante", False),
        (2, 6, "##want", True),
        (6, 8, "##ed", True),
    ]
    assert t.pieces == ["un", "##want", "##ed"] and t.ids == [7, 4, 5] and not t.unk
    t = tiny.trace("UnwantedX")  # normalised first
    assert t.normalized == "unwantedx" and t.word == "UnwantedX"
    assert t.unk and t.pieces == ["[UNK]"] and "character 8" in t.reason
    assert _steps(t)[-2:] == [(6, 8, "##ed", True), (8, 9, "##x", False)]
    assert _steps(tiny.trace("x")) == [(0, 1, "x", False)]


@needs_vocab
def test_trace_unaffable(tok):
    # bert-base-uncased has "una", "##ffa" and "##ble", so greedy longest-match gives una ##ffa ##ble
    # (not the docstring's un ##aff ##able, which needs a different vocab).
    t = tok.trace("unaffable")
    assert _steps(t) == [
        (0, 9, "unaffable", False),
        (0, 8, "unaffabl", False),
        (0, 7, "unaffab", False),
        (0, 6, "unaffa", False),
        (0, 5, "unaff", False),
        (0, 4, "unaf", False),
        (0, 3, "una", True),
        (3, 9, "##ffable", False),
        (3, 8, "##ffabl", False),
        (3, 7, "##ffab", False),
        (3, 6, "##ffa", True),
        (6, 9, "##ble", True),
    ]
    assert t.pieces == ["una", "##ffa", "##ble"] == tok.tokenize("unaffable")
    assert t.ids == tok.convert_tokens_to_ids(t.pieces)
    t = tok.trace("Running")
    assert _steps(t) == [(0, 7, "running", True)] and t.pieces == ["running"]
    t = tok.trace("Héllo")
    assert t.normalized == "hello" and t.pieces == ["hello"]
    assert tok.trace("[MASK]").pieces == ["[MASK]"]


@needs_vocab
def test_trace_errors_and_long_words(tok):
    with pytest.raises(TokenizerError):
        tok.trace("don't")
    with pytest.raises(TokenizerError):
        tok.trace("   ")
    long = "a" * 101
    t = tok.trace(long)
    assert t.unk and len(t) == 0 and "100" in t.reason
    assert tok.tokenize(long) == ["[UNK]"] and tok.tokenize("a" * 100) != ["[UNK]"]
    assert [x.pieces for x in tok.trace_text("don't")] == [["don"], ["'"], ["t"]]


@needs_vocab
def test_trace_agrees_with_tokenize(tok):
    rng = random.Random(7)
    words = ["unaffable", "tokenization", "supercalifragilistic", "xqzv", "ｆｕｌｌ", "naïveté"]
    words += ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 25))) for _ in range(300)]
    for w in words:
        t = tok.trace(w)
        assert t.pieces == tok.tokenize(w), w
        accepted = [s.candidate for s in t if s.accepted]
        assert t.unk or accepted == t.pieces


# --------------------------------------------------------------------------------------------------------
# Offsets into the original text
# --------------------------------------------------------------------------------------------------------


def _check_spans(enc, text, tok):
    """Every non-special token's span, normalised, equals the piece (## removed) unless [UNK]."""
    for t, (s, e), sid in zip(enc.tokens, enc.offsets, enc.sequence_ids):
        if sid is None or t == "[UNK]":
            continue
        assert 0 <= s < e <= len(text)
        assert tok.basic.tokenize(text[s:e]) == [t.removeprefix("##")], (text, t, text[s:e])


@needs_vocab
@pytest.mark.parametrize(
    "text, expected",
    [
        ("Héllo Wörld", [("hello", (0, 5)), ("world", (6, 11))]),
        ("He\u0301llo Wo\u0308rld", [("hello", (0, 6)), ("world", (7, 13))]),  # NFD input
        ("naïve café", [("naive", (0, 5)), ("cafe", (6, 10))]),
        ("cafe\u0301 x", [("cafe", (0, 4)), ("x", (6, 7))]),  # trailing mark is outside, as in Rust
        ("中文字", [("中", (0, 1)), ("文", (1, 2)), ("[UNK]", (2, 3))]),
        ("😀 ok 👍🏽", [("[UNK]", (0, 1)), ("ok", (2, 4)), ("[UNK]", (5, 7))]),
        ("İstanbul", [("istanbul", (0, 8))]),
        ("a\u200bb", [("ab", (0, 3))]),
        ("Straße ǅx ＡＢＣ", None),
    ],
)
def test_offsets_examples(tok, text, expected):
    e = tok.encode(text, add_special_tokens=False)
    if expected is not None:
        assert list(zip(e.tokens, e.offsets)) == expected
    _check_spans(e, text, tok)


@needs_vocab
def test_offsets_pieces_and_pairs(tok):
    a, b = "The UNAFFABLE Ångström!", "naïve\tcafé"
    e = tok.encode(a, b)
    for t, (s, en), sid in zip(e.tokens, e.offsets, e.sequence_ids):
        if sid is not None:
            src = a if sid == 0 else b
            assert tok.basic.tokenize(src[s:en])[0] == t.removeprefix("##") or t == "[UNK]"
    assert [a[s:en] for (s, en), sid in zip(e.offsets, e.sequence_ids) if sid == 0][:4] == ["The", "UNA", "FFA", "BLE"]
    assert [b[s:en] for (s, en), sid in zip(e.offsets, e.sequence_ids) if sid == 1] == ["naïve", "café"]
    words = tok.words_with_offsets(a)
    assert words[:2] == [("the", (0, 3)), ("unaffable", (4, 13))]
    assert [w for w, sid in zip(e.word_ids, e.sequence_ids) if sid == 1] == [0, 1]  # B restarts at 0


# --------------------------------------------------------------------------------------------------------
# Generated lines for parity
# --------------------------------------------------------------------------------------------------------


N_LINES = 5000
N_PAIRS = 500


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return make_lines(N_LINES)


def _has_surrogate(s: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in s)


@pytest.mark.slow
@needs_vocab
def test_parity_ids_and_tokens_with_slow(tok, slow, lines):
    assert len(lines) >= 5000
    bad = []
    for line in lines:
        ref = slow.tokenize(line)
        ours = tok.tokenize(line)
        if ours != ref:
            bad.append((line, ours, ref))
            continue
        e = tok.encode(line, max_length=None)
        ref_ids = [slow.cls_token_id] + slow.convert_tokens_to_ids(ref) + [slow.sep_token_id]
        if e.ids != ref_ids or e.tokens[1:-1] != ref:
            bad.append((line, e.ids, ref_ids))
    assert not bad, f"{len(bad)}/{len(lines)} lines differ, first: {bad[0]!r}"
    print(f"\nparity with slow transformers tokenizer: {len(lines)} lines, identical ids and tokens")


@pytest.mark.slow
@needs_vocab
def test_parity_cased_and_decode(tok, slow, lines):
    """do_lower_case=False (NFC, no accent stripping) and decode() against the Python reference."""
    Slow = type(slow)
    slow_cased = Slow(vocab_file=VOCAB_PATH, do_lower_case=False)
    cased = Tokenizer.from_file(VOCAB_PATH, do_lower_case=False)
    for line in lines[:800]:
        assert cased.tokenize(line) == slow_cased.tokenize(line), line
    for line in lines[800:1300]:
        ids = tok.encode(line).ids
        for skip in (False, True):
            ref = slow.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False)
            assert tok.decode(ids, skip_special_tokens=skip) == ref


@needs_vocab
def test_parity_mask_example(tok, slow):
    text = "the capital of france is [MASK] ."
    e = tok.encode(text)
    assert e.ids == slow(text)["input_ids"]
    assert e.ids.count(tok.mask_id) == 1 and e.tokens[6] == "[MASK]" and e.offsets[6] == (25, 31)


@pytest.mark.slow
@needs_vocab
@pytest.mark.parametrize("max_length", [16, 32, 128])
def test_parity_pairs_truncation(tok, slow, lines, max_length):
    rng = random.Random(max_length)
    n_trunc = 0
    for _ in range(N_PAIRS):
        a, b = rng.choice(lines), rng.choice(lines)
        if rng.random() < 0.2:
            b = a  # equal lengths: the tie rule
        ref = slow(a, b, truncation="longest_first", max_length=max_length, return_token_type_ids=True)
        e = tok.encode(a, b, max_length=max_length)
        assert e.ids == ref["input_ids"], (a, b)
        assert e.type_ids == ref["token_type_ids"], (a, b)
        assert len(e) <= max_length
        n_trunc += e.truncated
        if _ % 3 == 0:  # single sequences too
            ref1 = slow(a, truncation=True, max_length=max_length)
            assert tok.encode(a, max_length=max_length).ids == ref1["input_ids"], a
    assert n_trunc > (N_PAIRS // 10 if max_length < 128 else 5)  # the truncation paths were exercised


def _unicode_version_exception(tok, line, ours, ref, token) -> bool:
    """The one principled offset difference with the Rust tokenizer.

    Rust's character tables are older than Python's unicodedata and it keeps unassigned code points,
    which the Python reference (and we) drop as category C. Such characters, and marks it does not know,
    end up inside an adjacent [UNK] word: the ids agree but the [UNK] span is wider. Allowed only for
    [UNK] tokens, and only when every character in the difference is one our normalisation removes.
    """
    if token != "[UNK]":
        return False
    diff = set(range(*ours)) ^ set(range(*ref))
    return all(tok.basic.tokenize(line[i]) == [] for i in diff)


@pytest.mark.slow
@needs_vocab
def test_offsets_and_word_ids_vs_fast(tok, fast, lines):
    agree = differ = excepted = 0
    mism = []
    usable = [ln for ln in lines if not _has_surrogate(ln)]  # Rust cannot take lone surrogates
    batch = fast(usable, return_offsets_mapping=True)
    for k, line in enumerate(usable):
        ref = {"input_ids": batch["input_ids"][k], "offset_mapping": batch["offset_mapping"][k]}
        ref_word_ids = batch.word_ids(k)
        e = tok.encode(line, max_length=None)
        if e.ids != ref["input_ids"]:
            differ += 1
            continue
        agree += 1
        assert e.word_ids == ref_word_ids, line
        ref_offsets = [tuple(o) for o in ref["offset_mapping"]]
        if e.offsets != ref_offsets:
            bad = [
                (t, a, b)
                for t, a, b in zip(e.tokens, e.offsets, ref_offsets)
                if a != b and not _unicode_version_exception(tok, line, a, b, t)
            ]
            if bad:
                mism.append((line, bad))
            else:
                excepted += 1
    print(
        f"\nRust BertTokenizerFast: ids agree on {agree} lines (differ on {differ}); word_ids equal on all "
        f"{agree}; offsets equal on {agree - excepted - len(mism)}, {excepted} with only the Unicode-tables "
        "exception (an [UNK] span that includes characters we drop)"
    )
    assert agree > 0.8 * (agree + differ)
    assert excepted < 0.05 * agree
    assert not mism, f"{len(mism)} lines with equal ids but different offsets, first: {mism[0]!r}"
    # pairs: offsets of B index into text_b, sequence ids as in transformers
    n = 0
    for a, b in zip(lines[:600:2], lines[1:600:2]):
        if _has_surrogate(a + b):
            continue
        ref = fast(a, b, return_offsets_mapping=True)
        e = tok.encode(a, b, max_length=None)
        if e.ids == ref["input_ids"] and e.offsets == [tuple(o) for o in ref["offset_mapping"]]:
            assert e.sequence_ids == ref.sequence_ids()
            assert e.word_ids == ref.word_ids()
            assert e.type_ids == ref["token_type_ids"]
            n += 1
    assert n > 200


@needs_vocab
def test_ascii_parity_with_rust_wordpiece(tok, lines):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed")
    rust = tokenizers.BertWordPieceTokenizer(VOCAB_PATH, lowercase=True)
    ascii_lines = [ln for ln in lines if ln.isascii() and "\x00" not in ln and "[MA" not in ln]
    assert len(ascii_lines) > 200
    for line in ascii_lines:
        r = rust.encode(line)
        e = tok.encode(line, max_length=None)
        assert e.ids == r.ids and e.offsets == r.offsets, line


@needs_vocab
def test_offsets_map_back_on_generated_lines(tok, lines):
    for line in lines[:2000]:
        _check_spans_lenient(tok.encode(line, max_length=None), line, tok)


def _check_spans_lenient(enc, text, tok):
    """Spans are ordered, inside the text, and a first piece's span starts a basic token's span."""
    words = tok.basic.tokens_with_offsets(text)
    prev = 0
    for t, (s, e), w in zip(enc.tokens, enc.offsets, enc.word_ids):
        if w is None:
            continue
        assert prev <= s < e <= len(text), (text, t)
        prev = s
        ws, we = words[w][1], words[w][2]
        assert ws <= s and e <= we, (text, t)


# --------------------------------------------------------------------------------------------------------
# Fast paths stay identical; speed
# --------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@needs_vocab
def test_fast_path_equals_general_path(tok, lines):
    """The ASCII regex path and the Unicode per-character path give the same basic tokens."""
    fresh = Tokenizer.from_file(VOCAB_PATH)
    for line in lines[:1500]:
        if line.isascii() and "[" not in line:
            general: list = []
            fresh.basic.segment(line, 0, general)
            assert [(t, s, e) for t, s, e, _ in general] == fresh.basic.tokens_with_offsets(line), line
        assert fresh.encode(line) == tok.encode(line)  # cold caches == warm caches
        assert fresh.encode(line) == tok.encode(line)


@needs_vocab
def test_throughput(tok):
    rng = random.Random(0)
    sents = [
        " ".join(case_word(rng, rng.choice(WORDS)) for _ in range(rng.randint(5, 25))) + rng.choice(".?!")
        for _ in range(10_000)
    ]
    fresh = Tokenizer.from_file(VOCAB_PATH)
    t0, c0 = time.perf_counter(), time.process_time()
    for s in sents:
        fresh.encode(s)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rate = len(sents) / cpu  # CPU time: stable on a shared machine
    print(
        f"\nencode: {len(sents)} lines (5-25 words), cold caches: {rate:,.0f} lines/s of CPU time "
        f"({len(sents) / dt:,.0f}/s wall)"
    )
    assert rate > 5_000  # loose floor; about 30k lines/s measured on a 2-core dev box
