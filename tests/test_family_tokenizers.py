"""Tests for RoBERTa's byte-level BPE and ALBERT's Unigram tokenizers (bert/tokenizer/bpe.py, unigram.py):
tiny tokenizers trained here with the ``tokenizers`` library, saved as the Hub ships them, and read both by
ours and by transformers' tokenizers from the SAME files; then ids, tokens, offsets, word ids, type ids and
special-tokens masks compared on the hostile lines of the BERT tokenizer tests, single and paired, truncated
longest-first at several lengths; decode; "[MASK]" typed; the file ceilings and corrupt files; save -> load.
No network.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bert.errors import CheckpointError, TokenizerError
from bert.tokenizer import Encoding, Tokenizer
from bert.tokenizer.bpe import MAX_TRACE_CHARS, NEARBY, MergeStep, RobertaTokenizer
from bert.tokenizer.files import MAX_MERGES_BYTES, MAX_TOKENIZER_JSON_BYTES, MAX_VOCAB_JSON_BYTES
from bert.tokenizer.for_folder import tokenizer_for_folder
from bert.tokenizer.unigram import AlbertTokenizer, LatticeStep
from tests.helpers import (
    albert_tokenizer_json,
    emoji_word,
    roberta_emoji_files,
    roberta_tokenizer_files,
    roberta_tokenizer_json,
)
from tests.hostile_text import WORDS, case_word, make_lines

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")


def _usable(line: str) -> bool:
    """The library (and so transformers) cannot take a lone surrogate."""
    return not any("\ud800" <= c <= "\udfff" for c in line)


LINES = [ln for ln in make_lines(1200, seed=4321) if _usable(ln)]


def _corpus() -> list[str]:
    """English-ish sentences (so that real merges and pieces are learned) and hostile lines."""
    rng = random.Random(5)
    sentences = [" ".join(case_word(rng, rng.choice(WORDS)) for _ in range(rng.randint(4, 14))) for _ in range(600)]
    return sentences + [ln for ln in make_lines(300, seed=99) if _usable(ln)]


def _ref_text(line: str) -> str:
    """What transformers must read for our text: "[MASK]" typed is RoBERTa's "<mask>" (same length)."""
    return line.replace("[MASK]", "<mask>")


# ---- the files -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def roberta_files(tmp_path_factory) -> Path:
    """vocab.json + merges.txt of a byte-level BPE trained here."""
    return roberta_tokenizer_files(tmp_path_factory.mktemp("roberta_files"), _corpus(), vocab_size=1200)


@pytest.fixture(scope="module")
def roberta_json(roberta_files, tmp_path_factory) -> Path:
    """The same model as one tokenizer.json laid out as roberta-base's ("<mask>" with lstrip)."""
    return roberta_tokenizer_json(roberta_files, tmp_path_factory.mktemp("roberta_json"))


@pytest.fixture(scope="module")
def albert_json(tmp_path_factory) -> Path:
    """A Unigram tokenizer.json laid out as albert-base-v2's (without its SentencePiece character map)."""
    return albert_tokenizer_json(tmp_path_factory.mktemp("albert"), _corpus(), vocab_size=900)


# ---- ours and transformers' --------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["files", "tokenizer.json"])
def roberta(request, roberta_files, roberta_json):
    """(ours, transformers') over vocab.json + merges.txt, then over tokenizer.json."""
    if request.param == "files":
        ours = RobertaTokenizer.from_files(roberta_files / "vocab.json", roberta_files / "merges.txt")
        # transformers 5 builds "<mask>" without lstrip from these two files alone; 4 and the Hub's
        # roberta-base have it: we do, and say so to transformers.
        mask = transformers.AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False, special=True)
        ref = transformers.RobertaTokenizerFast.from_pretrained(str(roberta_files), mask_token=mask)
    else:
        ours = tokenizer_for_folder(roberta_json, "roberta")
        ref = transformers.RobertaTokenizerFast.from_pretrained(str(roberta_json))
    return ours, ref


@pytest.fixture(scope="module")
def albert(albert_json):
    return tokenizer_for_folder(albert_json, "albert"), transformers.AlbertTokenizerFast.from_pretrained(
        str(albert_json)
    )


@pytest.fixture(params=["roberta", "albert"])
def pair(request, roberta, albert):
    """(ours, transformers', how our text reads to transformers) for each member."""
    if request.param == "roberta":
        return (*roberta, _ref_text)
    return (*albert, lambda s: s)


def _ref(ref, text, text_b=None, **kw):
    return ref(
        text,
        text_b,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_token_type_ids=True,
        **kw,
    )


def _same(e: Encoding, r, ref) -> list[str]:
    """The fields in which our encoding differs from transformers' (empty when none do)."""
    got = {
        "ids": e.ids,
        "tokens": e.tokens,
        "offsets": e.offsets,
        "type_ids": e.type_ids,
        "special_tokens_mask": e.special_tokens_mask,
        "word_ids": e.word_ids,
        "sequence_ids": e.sequence_ids,
        "attention_mask": e.attention_mask,
    }
    want = {
        "ids": r["input_ids"],
        "tokens": ref.convert_ids_to_tokens(r["input_ids"]),
        "offsets": [tuple(o) for o in r["offset_mapping"]],
        "type_ids": r["token_type_ids"],
        "special_tokens_mask": r["special_tokens_mask"],
        "word_ids": r.word_ids(),
        "sequence_ids": r.sequence_ids(),
        "attention_mask": r["attention_mask"],
    }
    diff = [k for k in got if got[k] != want[k]]
    if set(diff) <= {"ids", "tokens", "offsets"} and isinstance(ref, transformers.AlbertTokenizerFast):
        return [] if _tied(got["tokens"], want["tokens"]) else diff
    return diff


def _tied(ours: list[str], theirs: list[str]) -> bool:
    """Two Unigram segmentations that score exactly the same: the same pieces in another order
    over the same text. The tokenizers library breaks such a tie in a hash order that changes from
    one process to the next (its lattice's candidates), so either is its answer."""
    return sorted(ours) == sorted(theirs) and "".join(ours) == "".join(theirs)


# ---- parity --------------------------------------------------------------------------------------------------


def test_the_tiny_models_learned_something(roberta, albert):
    """The comparisons below are on real merges and pieces, not on bytes and characters alone."""
    r, _ = roberta
    a, _ = albert
    assert any(len(t) > 3 for t in r.tokenize(" the university of the city"))
    assert r.tokenize(" the") == ["Ġthe"]
    assert "▁the" in a.tokenize("The university")


def test_single_texts_equal_transformers(pair):
    ours, ref, ref_text = pair
    bad = []
    for line in LINES:
        e = ours.encode(line, max_length=None)
        diff = _same(e, _ref(ref, ref_text(line)), ref)
        if diff:
            bad.append((line, diff))
        assert ours.tokenize(line) == e.tokens[1:-1]
    assert not bad, f"{len(bad)}/{len(LINES)} lines differ, first: {bad[0]!r}"


@pytest.mark.parametrize("max_length", [5, 8, 13, 32, 64])
def test_pairs_and_truncation_equal_transformers(pair, max_length):
    ours, ref, ref_text = pair
    rng = random.Random(max_length)
    truncated = ties = 0
    for k in range(300):
        a, b = rng.choice(LINES), rng.choice(LINES)
        if k % 5 == 0:
            b = a  # equal lengths: the tie goes to B
            ties += 1
        e = ours.encode(a, b, max_length=max_length)
        r = _ref(ref, ref_text(a), ref_text(b), truncation="longest_first", max_length=max_length)
        assert not _same(e, r, ref), (a, b, _same(e, r, ref))
        assert len(e) <= max_length
        truncated += e.truncated
        full = ours.encode(a, b, max_length=None)
        assert e.num_truncated == len(full) - len(e)
        if k % 3 == 0:
            e1 = ours.encode(a, max_length=max_length)
            r1 = _ref(ref, ref_text(a), truncation=True, max_length=max_length)
            assert not _same(e1, r1, ref), (a, _same(e1, r1, ref))
    assert truncated > 100 and ties


def test_untruncated_pairs_equal_transformers(pair):
    ours, ref, ref_text = pair
    for a, b in zip(LINES[:400:2], LINES[1:400:2]):
        e = ours.encode(a, b, max_length=None)
        r = _ref(ref, ref_text(a), ref_text(b))
        assert not _same(e, r, ref), (a, b, _same(e, r, ref))


def test_pair_templates(roberta, albert):
    r, _ = roberta
    e = r.encode("a b", "c")
    assert e.tokens[0] == "<s>" and e.tokens.count("</s>") == 3 and set(e.type_ids) == {0}
    i = e.tokens.index("</s>")
    assert e.tokens[i : i + 2] == ["</s>", "</s>"] and e.special_tokens_mask.count(1) == 4
    a, _ = albert
    e = a.encode("a b", "c")
    assert e.tokens[0] == "[CLS]" and e.tokens[-1] == "[SEP]" and e.tokens.count("[SEP]") == 2
    j = e.tokens.index("[SEP]")
    assert e.type_ids == [0] * (j + 1) + [1] * (len(e) - j - 1)


def test_decode_equals_transformers_and_round_trips(pair):
    ours, ref, ref_text = pair
    for line in LINES[:500]:
        ids = ours.encode(line, max_length=None).ids
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == ref.decode(
                ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False
            )
    if ours.kind == "bpe":  # byte-level BPE is lossless (a text without special tokens)
        plain = [ln for ln in LINES if "<" not in ln and "[" not in ln]
        assert len(plain) > 300
        for line in plain:
            assert ours.decode(ours.encode(line, max_length=None).ids, skip_special_tokens=True) == line


def test_decode_refuses_ids_outside_the_vocab(roberta):
    r, _ = roberta
    with pytest.raises(TokenizerError, match="outside the vocab"):
        r.decode([0, len(r)])


# ---- [MASK] typed ------------------------------------------------------------------------------------------------


def test_typed_mask_is_the_models_mask(roberta, albert):
    r, _ = roberta
    assert r.mask_token == "<mask>" and r.convert_tokens_to_ids("<mask>") == r.mask_id
    typed = r.encode("The capital of France is [MASK].")
    own = r.encode("The capital of France is <mask>.")
    assert typed.ids == own.ids and typed.offsets == own.offsets
    k = typed.ids.index(r.mask_id)
    assert typed.tokens[k] == "<mask>" and typed.offsets[k] == (25, 31) and typed.special_tokens_mask[k] == 0
    assert r.encode("x[MASK]y [MASK][MASK]").ids.count(r.mask_id) == 3
    assert r.tokenize("[mask]") != ["<mask>"]  # only the upper-case spelling, as for BERT
    a, _ = albert
    e = a.encode("The capital of France is [MASK].")
    assert e.ids.count(a.mask_id) == 1 and e.tokens[e.ids.index(a.mask_id)] == "[MASK]"


def test_mask_strips_the_space_before_it(roberta):
    """lstrip: " <mask>" is one token, whose span is the mask's own characters."""
    r, _ = roberta
    e = r.encode("a [MASK] b", add_special_tokens=False)
    assert e.tokens[1] == "<mask>" and e.offsets[1] == (2, 8)
    assert r.decode(e.ids) == "a<mask> b"


# ---- words, offsets, traces --------------------------------------------------------------------------------------


def test_words_line_up_with_word_ids(pair):
    ours, _, _ = pair
    for line in LINES[:400]:
        words = ours.words_with_offsets(line)
        e = ours.encode(line, max_length=None, add_special_tokens=False)
        assert sorted(set(e.word_ids)) == list(range(len(words)))
        for (s, t), w in zip(e.offsets, e.word_ids):
            ws, we = words[w][1]
            assert ws <= s <= t <= we, (line, words[w], (s, t))
        assert ours.basic.tokenize(line) == [w for w, _ in words] == ours.basic_tokenize(line)


def test_words_examples(roberta, albert):
    r, _ = roberta
    assert r.words_with_offsets("The bank, he said.") == [
        ("The", (0, 3)),
        ("bank", (4, 8)),
        (",", (8, 9)),
        ("he", (10, 12)),
        ("said", (13, 17)),
        (".", (17, 18)),
    ]
    assert r.basic.tokenize("bank") == ["bank"] and r.basic.tokenize(" bank") == ["bank"]
    a, _ = albert
    assert a.words_with_offsets("The  Bank, Fränce [MASK]") == [
        ("the", (0, 3)),
        ("bank,", (5, 10)),
        ("france", (11, 17)),
        ("[MASK]", (18, 24)),
    ]
    assert a.do_lower_case and not r.do_lower_case


def test_bpe_trace_builds_every_word(roberta):
    r, _ = roberta
    n = 0
    for line in LINES[:300]:
        for word, special in r.model_words(line):
            t = r.trace_word(word, word, special)
            pieces = [r.ids_to_tokens[i] for i in r.encode(word if special else _bytes_back(r, word)).ids[1:-1]]
            assert t.pieces == pieces and t.ids == r.convert_tokens_to_ids(pieces), word
            assert all(isinstance(s, MergeStep) for s in t)
            ranks = [s.rank for s in t]
            assert ranks == sorted(ranks)  # a merge never makes a pair of lower rank than itself
            if t:
                assert _replayed(word, t) == t.pieces and t[0].merged == t[0].left + t[0].right
            n += len(t)
    assert n > 500


def _replayed(model_word: str, steps) -> list[str]:
    """The symbols of ``model_word`` after its MergeSteps, each applied where it says; every step's nearby,
    nearby_start and length checked against the word at that point."""
    symbols = list(model_word)
    for s in steps:
        k = s.position
        assert symbols[k : k + 2] == [s.left, s.right], s
        symbols[k : k + 2] = [s.merged]
        assert s.nearby_start == max(0, k - NEARBY) and s.length == len(symbols), s
        assert s.nearby == tuple(symbols[s.nearby_start : k + NEARBY + 1]), s
    return symbols


def _bytes_back(r: RobertaTokenizer, word: str) -> str:
    """The text of a byte-level word ("Ġhello" -> " hello")."""
    return r.backend.decoder.decode([word])


def test_bpe_trace_example(roberta):
    r, _ = roberta
    t = r.trace(" university")
    assert t.normalized == "Ġuniversity" and t.pieces == r.tokenize(" university") and not t.unk
    assert t[-1].nearby == tuple(t.pieces) and t[-1].nearby_start == 0 and t[-1].length == len(t.pieces)
    assert t[0].position >= 0 and t.word == " university"
    with pytest.raises(TokenizerError, match="single word"):
        r.trace("two words")
    assert r.trace("[MASK]").pieces == ["<mask>"] and len(r.trace("[MASK]")) == 0
    assert [x.normalized for x in r.trace_text("the city")] == ["the", "Ġcity"]


@pytest.fixture(scope="module")
def emoji_files(tmp_path_factory) -> Path:
    """A byte-level BPE whose merges cover emoji, as a web-trained RoBERTa's do."""
    return roberta_emoji_files(tmp_path_factory.mktemp("roberta_emoji"))


@pytest.fixture(scope="module")
def emoji_roberta(emoji_files) -> RobertaTokenizer:
    return RobertaTokenizer.from_files(emoji_files / "vocab.json", emoji_files / "merges.txt")


def test_bpe_trace_holds_a_few_symbols_per_merge(emoji_roberta):
    """A word of MAX_TRACE_CHARS emoji is traced in full (hundreds of merges); each MergeStep keeps the
    symbols near its merge, not the word, so the trace grows with the word, not with its square."""
    r = emoji_roberta
    word = " " + emoji_word(MAX_TRACE_CHARS)
    t = r.trace(word)
    assert not t.capped and t.pieces == r.tokenize(word)
    assert len(t) >= 3 * MAX_TRACE_CHARS  # three merges or more join an emoji's four bytes
    assert _replayed(t.normalized, t) == t.pieces
    held = sum(len(s.nearby) for s in t)
    assert held <= (2 * NEARBY + 1) * len(t), held
    assert any(s.nearby_start > 0 for s in t) and any(s.nearby_start + len(s.nearby) < s.length for s in t)


def test_bpe_trace_of_a_longer_word_is_capped_with_its_tokens(emoji_roberta, roberta):
    """One character past MAX_TRACE_CHARS, the trace has no steps, says why, and still gives the word's
    tokens; the space before a word is not counted; the phrase trace caps each long word alone."""
    r = emoji_roberta
    word = " " + emoji_word(MAX_TRACE_CHARS + 1)
    t = r.trace(word)
    assert t.capped and len(t) == 0 and not t.unk
    assert t.pieces == r.tokenize(word) and t.ids == r.convert_tokens_to_ids(t.pieces)
    assert f"up to {MAX_TRACE_CHARS} characters" in t.reason and f"it has {MAX_TRACE_CHARS + 1}" in t.reason
    plain, _ = roberta
    assert not plain.trace(" " + "a" * MAX_TRACE_CHARS).capped and plain.trace("a" * (MAX_TRACE_CHARS + 1)).capped
    traced = r.trace_text("the " + emoji_word(2000) + " cat")
    assert [x.capped for x in traced] == [False, True, False]
    assert not r.trace(" cat").capped


_CHILD = r"""
import json, time
from bert.tokenizer.bpe import RobertaTokenizer
def hwm():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
r = RobertaTokenizer.from_files({files!r} + "/vocab.json", {files!r} + "/merges.txt")
word = " " + {word!r}
r.trace(" cat")
base, cpu = hwm(), time.process_time()
t = r.trace(word) if {run} else None
out = {{"extra_mb": hwm() - base, "cpu_s": time.process_time() - cpu}}
if t is not None:
    out.update(steps=len(t), capped=getattr(t, "capped", None), same=t.pieces == r.tokenize(word), pieces=len(t.pieces))
print(json.dumps(out))
"""


def _trace_child(files: Path, word: str, run: bool) -> dict:
    code = _CHILD.format(files=str(files), word=word, run=run)
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_tracing_a_word_of_2000_emoji_costs_little(emoji_files):
    """The Tokenization page offers any word of a 2,000-character sentence. Traced merge by merge, 2,000 emoji
    take 7,000+ merges, and a copy of the word in each came to 250 MB more peak memory (1.2 GB with the
    page's table); capped, the trace costs what encoding the word does (under 1 MB)."""
    base, run = _trace_child(emoji_files, emoji_word(2000), False), _trace_child(emoji_files, emoji_word(2000), True)
    extra = run["extra_mb"] - base["extra_mb"]
    assert extra <= 100, f"{extra:.0f} MB extra peak ({run['steps']:,} merges)"
    assert run["capped"] and run["steps"] == 0 and run["same"] and run["pieces"] > 100
    print(f"\ntrace of 2,000 emoji: {run['cpu_s']:.3f} s of processor, {extra:.1f} MB extra peak")


def test_unigram_trace_segments_every_word(albert):
    a, _ = albert
    n = 0
    for line in LINES[:300]:
        traced = a.trace_text(line)
        pieces, tokenized = [p for t in traced for p in t.pieces], a.tokenize(line)
        assert pieces == tokenized or _tied(pieces, tokenized), line
        for t in traced:
            assert all(isinstance(s, LatticeStep) for s in t)
            best = [s for s in t if s.best]
            assert "".join(t.normalized[s.start : s.end] for s in best) == t.normalized or not best
            n += len(t)
    assert n > 1000
    t = a.trace("University")
    assert t.normalized == "▁university" and t.pieces == a.tokenize("University")
    assert any(not s.best for s in t)  # the lattice holds the pieces not taken too


# ---- the rest of the interface ---------------------------------------------------------------------------------


def test_interface(roberta, albert):
    for tok, kind, specials in (
        (roberta[0], "bpe", ("<unk>", "<s>", "</s>", "<pad>", "<mask>")),
        (albert[0], "unigram", ("<unk>", "[CLS]", "[SEP]", "<pad>", "[MASK]")),
    ):
        assert tok.kind == kind and tok.special_tokens == specials
        assert (tok.unk_token, tok.cls_token, tok.sep_token, tok.pad_token, tok.mask_token) == specials
        assert [tok.unk_id, tok.cls_id, tok.sep_id, tok.pad_id, tok.mask_id] == [tok.vocab[s] for s in specials]
        assert len(tok) == len(tok.vocab) == len(tok.ids_to_tokens)
        assert all(tok.ids_to_tokens[i] == t for t, i in tok.vocab.items())
        assert tok.convert_ids_to_tokens(tok.convert_tokens_to_ids(["zzzunknownzzz", specials[4]])) == [
            tok.unk_token,
            specials[4],
        ]
        encs = tok.encode_batch(["a b c", ("d", "e f")], max_length=16)
        padded = tok.pad(encs)
        n = max(len(e) for e in encs)
        assert all(len(row) == n for row in padded["input_ids"])
        assert padded["input_ids"][0][len(encs[0]) :] == [tok.pad_id] * (n - len(encs[0]))
        assert padded["attention_mask"][0] == [1] * len(encs[0]) + [0] * (n - len(encs[0]))
        with pytest.raises(TokenizerError):
            tok.pad(encs, length=1)
        with pytest.raises(TokenizerError):
            tok.encode("x", max_length=1)
        with pytest.raises(TokenizerError):
            tok.encode(3)
        with pytest.raises(TokenizerError):
            tok.encode_batch("not a list")
        assert tok.tokenize("a\ud800b")  # a lone surrogate is U+FFFD, not the library's error
    assert Tokenizer.kind == "wordpiece"


def test_a_truncating_encode_reads_a_long_paste_lazily(pair):
    ours, _, _ = pair
    rng = random.Random(3)
    long_text = " ".join(rng.choice(LINES) for _ in range(3000))
    assert len(long_text) > 100_000
    full = ours.encode(long_text, max_length=None)
    for m in (16, 512):
        e = ours.encode(long_text, max_length=m)
        assert e.ids == full.ids[: m - 1] + [ours.sep_id] and e.offsets[:-1] == full.offsets[: m - 1]
        assert e.word_ids[:-1] == full.word_ids[: m - 1]
        assert 10_000 <= e.num_truncated <= len(full) - m  # counted 10,000 past max_length at least
    short = " ".join(LINES[:60])
    assert ours.encode(short, max_length=20).num_truncated == len(ours.encode(short, max_length=None)) - 20


# ---- files: the loader, ceilings, corrupt files, save -> load ---------------------------------------------------


def test_loader_picks_the_tokenizer(roberta_files, roberta_json, albert_json, tmp_path):
    assert isinstance(tokenizer_for_folder(roberta_files, "roberta"), RobertaTokenizer)
    assert isinstance(tokenizer_for_folder(albert_json, "albert"), AlbertTokenizer)
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"]) + "\n")
    for t in ("bert", "distilbert", "electra"):
        tok = tokenizer_for_folder(tmp_path, t)
        assert isinstance(tok, Tokenizer) and tok.kind == "wordpiece" and tok.tokenize("Hello") == ["hello"]
    with pytest.raises(TokenizerError, match="no tokenizer for model type"):
        tokenizer_for_folder(tmp_path, "gpt2")
    with pytest.raises(CheckpointError, match="neither"):
        tokenizer_for_folder(tmp_path, "roberta")
    with pytest.raises(CheckpointError, match="no tokenizer.json"):
        tokenizer_for_folder(tmp_path, "albert")
    with pytest.raises(CheckpointError, match="is not a folder"):
        tokenizer_for_folder(tmp_path / "nowhere", "roberta")
    with pytest.raises(TokenizerError, match="not RoBERTa's BPE"):
        tokenizer_for_folder(albert_json, "roberta")
    with pytest.raises(TokenizerError, match="not ALBERT's Unigram"):
        tokenizer_for_folder(roberta_json, "albert")


@pytest.mark.parametrize(
    "name, ceiling, model_type",
    [
        ("vocab.json", MAX_VOCAB_JSON_BYTES, "roberta"),
        ("merges.txt", MAX_MERGES_BYTES, "roberta"),
        ("tokenizer.json", MAX_TOKENIZER_JSON_BYTES, "roberta"),
        ("tokenizer.json", MAX_TOKENIZER_JSON_BYTES, "albert"),
    ],
)
def test_files_over_their_ceiling_are_refused_unread(roberta_files, tmp_path, monkeypatch, name, ceiling, model_type):
    for f in ("vocab.json", "merges.txt"):
        (tmp_path / f).write_bytes((roberta_files / f).read_bytes())
    with open(tmp_path / name, "wb") as f:
        f.truncate(ceiling + 1)  # sparse: no disk used

    read_text = Path.read_text

    def no_reading(self, *a, **k):
        assert self.name != name, f"{self} was read"
        return read_text(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", no_reading)
    with pytest.raises(TokenizerError, match=f"{name} is 16.0 MB|{name} is 32.0 MB"):
        tokenizer_for_folder(tmp_path, model_type)


def test_a_file_at_its_ceiling_is_read(roberta_files, tmp_path):
    vocab = (roberta_files / "vocab.json").read_text(encoding="utf-8")
    (tmp_path / "vocab.json").write_text(vocab + " " * (MAX_VOCAB_JSON_BYTES - len(vocab.encode())))
    (tmp_path / "merges.txt").write_bytes((roberta_files / "merges.txt").read_bytes())
    assert len(tokenizer_for_folder(tmp_path, "roberta")) == len(json.loads(vocab))


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("vocab.json", b"{not json", "vocab.json is not valid JSON"),
        ("vocab.json", b'["a", "b"]', "non-empty JSON object"),
        ("vocab.json", b'{"a": "zero"}', "not an integer"),
        ("vocab.json", b'{"a": 0, "b": 5}', "the ids must be the integers 0..1"),
        ("vocab.json", b"\xff\xfe{}", "vocab.json is not UTF-8"),
        ("merges.txt", b"#version: 0.2\na b c\n", "line 2 is not a merge"),
        ("merges.txt", "#version: 0.2\nĠ zzzz\n".encode(), "which vocab.json does not hold"),
        ("tokenizer.json", b"{}", "no tokenizer model"),
        ("tokenizer.json", b'{"model": {"type": "BPE", "vocab": 3}}', "not a tokenizer the tokenizers library"),
        ("tokenizer.json", b"\x00\x01", "tokenizer.json is not valid JSON"),
    ],
)
def test_corrupt_files_give_our_error(roberta_files, tmp_path, name, content, message):
    for f in ("vocab.json", "merges.txt"):
        (tmp_path / f).write_bytes((roberta_files / f).read_bytes())
    (tmp_path / name).write_bytes(content)
    with pytest.raises(TokenizerError, match=message) as e:
        tokenizer_for_folder(tmp_path, "roberta")
    assert "\n" not in str(e.value)
    if name == "tokenizer.json":
        with pytest.raises(TokenizerError):
            tokenizer_for_folder(tmp_path, "albert")


def test_missing_files_are_checkpoint_errors(roberta_files, tmp_path):
    (tmp_path / "vocab.json").write_bytes((roberta_files / "vocab.json").read_bytes())
    with pytest.raises(CheckpointError, match="tokenizer file not found.*merges.txt"):
        tokenizer_for_folder(tmp_path, "roberta")


def test_vocab_without_the_special_tokens(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0, "b": 1, "ab": 2}))
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n")
    with pytest.raises(TokenizerError, match="lacks RoBERTa's special token"):
        tokenizer_for_folder(tmp_path, "roberta")


@pytest.mark.parametrize("member", ["roberta", "albert"])
def test_save_and_load_round_trip(member, roberta, albert, tmp_path):
    ours = roberta[0] if member == "roberta" else albert[0]
    assert ours.save(tmp_path) == str(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == (["merges.txt", "tokenizer.json", "vocab.json"] if member == "roberta" else ["tokenizer.json"])
    again = tokenizer_for_folder(tmp_path, member)
    loaded = [again]
    if member == "roberta":  # the two files alone give the same tokenizer
        (tmp_path / "tokenizer.json").unlink()
        loaded.append(tokenizer_for_folder(tmp_path, member))
    for tok in loaded:
        assert tok.vocab == ours.vocab and tok.do_lower_case == ours.do_lower_case
        for a, b in zip(LINES[:300:2], LINES[1:300:2]):
            assert tok.encode(a, b, max_length=64) == ours.encode(a, b, max_length=64)
