"""A class can't break it: every input has a cap, checked before anything big is
allocated, and a student who hits it reads a message.

1. The tokenizer reads a long paste only as far as `max_length` needs: bounded time and memory
   (VmHWM of a child process), and the same ids/offsets as tokenizing everything and cutting.
2. Every text box of the explorer pages has `max_chars`, and a longer text is cut with a warning.
3. Compare's list of sentences is capped in lines and characters, and runs in small batches.
4. Streamlit's WebSocket message limit is lowered, and Streamlit accepts the option.
5. JSON nested past what Python's decoder follows is a data error in every upload reader.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bert.tokenizer import Tokenizer
from bert.tokenizer.tokenizer import COUNT_AHEAD, WINDOW
from tests.hostile_text import VOCAB_PATH, fragment, make_lines

ROOT = Path(__file__).resolve().parent.parent
needs_vocab = pytest.mark.skipif(VOCAB_PATH is None, reason="no bert-base-uncased vocab.txt installed")


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    if VOCAB_PATH is None:
        pytest.skip("no vocab.txt installed")
    return Tokenizer.from_file(VOCAB_PATH)


# ---- 1. the tokenizer on a long paste ----------------------------------------------------------------


def _longest_first(la: int, lb: int, budget: int) -> tuple[int, int]:
    """transformers' longest_first on lengths (the tokenizer's rule before it read lazily)."""
    removed = max(0, la + lb - budget)
    if removed:
        first = min(abs(la - lb), removed)
        second = removed - first
        ra, rb = (first + second // 2, second - second // 2) if la > lb else (second // 2, first + second - second // 2)
        la, lb = la - ra, lb - rb
    return la, lb


def _cut_reference(tok, a, b, max_length):
    """Tokenize all of a (and b), then cut: what encode gave before it stopped reading early."""
    full = tok.encode(a, b, max_length=None)
    sa = [i for i, s in enumerate(full.sequence_ids) if s == 0]
    sb = [i for i, s in enumerate(full.sequence_ids) if s == 1]
    la, lb = _longest_first(len(sa), len(sb), max_length - (2 if b is None else 3))
    keep = [0] + sa[:la] + [sa[-1] + 1 if sa else 1] + ([] if b is None else sb[:lb] + [len(full) - 1])
    return (
        [full.ids[i] for i in keep],
        [full.offsets[i] for i in keep],
        [full.word_ids[i] for i in keep],
        [full.type_ids[i] for i in keep],
        len(sa) + len(sb) - la - lb,
        max(len(sa), len(sb)),
    )


def _long_text(rng: random.Random, n_chars: int, glue=(" ", " ", "\n", ", ", "", ",")) -> str:
    """Generated fragments (accents, CJK, controls, specials, invisible characters...) glued with
    spaces or nothing, so there are long words without whitespace too."""
    parts, n = [], 0
    while n < n_chars:
        p = fragment(rng) + rng.choice(glue)
        parts.append(p)
        n += len(p)
    return "".join(parts)


def test_longest_first_depends_on_lengths_only_up_to_budget_plus_one():
    """Why reading stops early is exact: the kept lengths are the same once each length is
    capped at budget + 1 (the tokenizer reads COUNT_AHEAD more)."""
    for budget in range(1, 30):
        for la in range(0, 3 * budget + 3):
            for lb in range(0, 3 * budget + 3):
                cap = budget + 1
                assert _longest_first(la, lb, budget) == _longest_first(min(la, cap), min(lb, cap), budget)


@pytest.mark.slow
@needs_vocab
@pytest.mark.parametrize("max_length", [16, 128, 512])
def test_truncated_encode_equals_tokenize_all_then_cut(tok, max_length):
    rng = random.Random(max_length)
    lines = make_lines(300, seed=max_length)
    for k in range(24):
        a = _long_text(rng, rng.choice([50, 3_000, 2 * WINDOW + 500, 20_000]))
        b = None if k % 3 == 0 else rng.choice([_long_text(rng, rng.choice([10, 5_000, 30_000])), rng.choice(lines)])
        if k % 5 == 1:
            b = a  # equal lengths: the tie rule
        e = tok.encode(a, b, max_length=max_length)
        ids, offs, wids, types, removed, longest = _cut_reference(tok, a, b, max_length)
        assert e.ids == ids and e.offsets == offs and e.word_ids == wids and e.type_ids == types, (k, a[:80])
        assert e.truncated == (removed > 0) and e.num_truncated <= removed
        if longest < max_length + COUNT_AHEAD - 3:  # counted exactly up to COUNT_AHEAD past
            assert e.num_truncated == removed
        assert len(e) <= max_length


@needs_vocab
def test_beyond_the_count_ahead_the_count_is_a_lower_bound(tok):
    text = "word another sentence goes on " * 5000  # 25,000 tokens
    e = tok.encode(text, text, max_length=64)
    ids, offs, _, _, removed, _ = _cut_reference(tok, text, text, 64)
    assert e.ids == ids and e.offsets == offs
    assert e.truncated and 2 * COUNT_AHEAD <= e.num_truncated <= removed


@pytest.mark.slow
@needs_vocab
def test_long_texts_and_long_words_match_the_reference_tokenizers(tok):
    """Reading in windows and cutting long words before punctuation changes no token: ids and
    tokens as transformers' Python tokenizer on texts of 10-40 k characters, offsets as the
    Rust one on ASCII text."""
    transformers = pytest.importorskip("transformers")
    try:
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as Slow
    except ImportError:
        Slow = transformers.BertTokenizer
    slow = Slow(vocab_file=VOCAB_PATH, do_lower_case=True)
    rng = random.Random(13)
    texts = [_long_text(rng, rng.choice([10_000, 40_000])) for _ in range(6)]
    texts += [_long_text(rng, 12_000, glue=("", ",", ".", "'", "-")) for _ in range(4)]  # one long word
    texts += [
        "ΑΣ." * 400 + "ΑΣ,Α" * 300,
        "é," * 3000 + "e\u0301!" * 2000,
        "[MASK]" + "x," * 600 + "[MA\u200bSK]",
        "東京タワー。" * 3000,
    ]
    for t in texts:
        assert tok.tokenize(t) == slow.tokenize(t), t[:80]
    tokenizers = pytest.importorskip("tokenizers")
    rust = tokenizers.BertWordPieceTokenizer(VOCAB_PATH, lowercase=True)
    for t in ["Hello, world! " * 2000, "a.b," * 5000 + " tail", "x " * 3000 + "y" * 300 + ";z" * 500]:
        r = rust.encode(t)
        e = tok.encode(t, max_length=None)
        assert e.ids == r.ids and e.offsets == r.offsets


_CHILD = r"""
import json, random, time
from bert.tokenizer import Tokenizer
def hwm():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
tok = Tokenizer.from_file({vocab!r})
rng = random.Random(0)
words = ["the", "quick", "brown", "fox", "jumps", "tokenization", "über", "naïve", "Ünïcödé", "東京", "x1234"]
MB = 1_000_000
texts = [" ".join(rng.choice(words[:6]) for _ in range(MB // 4))[:MB],      # English-like ASCII
         " ".join(rng.choice(words) for _ in range(MB // 4))[:MB],          # with accents and CJK
         "é," * (MB // 2), "a." * (MB // 2), "東" * MB,                        # no whitespace at all
         "[MASK] " * (MB // 7)]
tok.encode("warm up", max_length=512)
base, cpu = hwm(), time.process_time()
lengths = []
if {run}:
    for t in texts:
        lengths.append(len(tok.encode(t, max_length=512)))
        lengths.append(len(tok.encode(t, t, max_length=512)))
print(json.dumps({{"extra_mb": hwm() - base, "cpu_s": time.process_time() - cpu, "lengths": lengths}}))
"""


def _child(run: bool) -> dict:
    code = _CHILD.format(vocab=str(VOCAB_PATH), run=run)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@needs_vocab
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_a_pasted_megabyte_costs_little(tok):
    """Six 1 MB pastes (prose, accents, no whitespace, CJK, specials), each alone and as a pair:
    12 encodes, each stopping after max_length: bounded processor time and memory."""
    base, run = _child(False), _child(True)
    assert run["lengths"] == [512] * 12
    extra = run["extra_mb"] - base["extra_mb"]
    assert extra <= 300, f"{extra:.0f} MB extra peak"
    assert run["cpu_s"] <= 20, f"{run['cpu_s']:.1f} s of processor"
    print(f"\n12 encodes of 1 MB pastes: {run['cpu_s']:.2f} s of processor, {extra:.1f} MB extra peak")


# ---- 2. every text box has a cap -----------------------------------------------------------------------

SOURCES = sorted((ROOT / "pages").glob("*.py")) + sorted((ROOT / "app").rglob("*.py"))  # every box a student sees


def _calls(path: Path, names: set[str], tree=None):
    for node in ast.walk(tree or ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in names:
                yield name, node


def test_every_text_box_of_the_explorer_pages_has_max_chars():
    missing, n = [], 0
    for path in SOURCES:
        boxes = list(_calls(path, {"text_area", "text_input", "chat_input"}))
        for _, editor in _calls(path, {"data_editor"}):  # a text column a student can edit
            boxes += _calls(path, {"TextColumn"}, editor)
        for name, node in boxes:
            n += 1
            if not any(k.arg == "max_chars" for k in node.keywords):
                missing.append(f"{path.name}:{node.lineno} {name}")
    assert n >= 15 and not missing, missing


def test_cap_text_cuts_and_warns():
    from app.ui import widgets

    class Where:
        def __init__(self):
            self.said = []

        def warning(self, msg, icon=None):
            self.said.append(msg)

    w = Where()
    assert widgets.cap_text("short", "Sentence A", where=w) == "short" and not w.said
    out = widgets.cap_text("x" * 3_000, "Sentence A", where=w)
    assert len(out) == widgets.SENTENCE_CHARS == 2_000
    assert len(w.said) == 1 and "2,000-character limit" in w.said[0] and "cut" in w.said[0]


# ---- 3. Compare's sentences ----------------------------------------------------------------------------


def test_sense_lines_caps_lines_and_parts():
    from app.formatting import sense_lines, sense_text

    text = "\n".join(
        [f"the bank {i} | river" for i in range(60)] + ["  ", "| lonely sense", "x" * 5000 + " | " + "s" * 500]
    )
    sents, senses, dropped = sense_lines(text, 50, 2000, 100)
    assert len(sents) == len(senses) == 50 and dropped == 11
    assert sents[0] == "the bank 0" and senses[0] == "river"
    sents, senses, dropped = sense_lines("\n".join(text.splitlines()[59:]), 50, 2000, 100)
    assert dropped == 0 and sents == ["the bank 59", "x" * 2000] and senses == ["river", "s" * 100]
    assert sense_lines("a | b | money\nno sense here", 50, 2000, 100)[:2] == (["a | b", "no sense here"], ["money", ""])
    shown = sense_text(["We sat on the bank.", "The bank closed."], ["river", ""])
    assert sense_lines(shown, 50, 2000, 100)[:2] == (["We sat on the bank.", "The bank closed."], ["river", ""])


@pytest.mark.slow
def test_word_vectors_run_in_batches_with_the_same_result():
    from bert.analysis import words
    from tests.helpers import tiny_bundle

    bundle = tiny_bundle()
    sents = ["we went to the bank .", "the dog sat by the river bank !", "a Bank , the money ."] * 5
    one = words.word_vectors_by_layer(bundle, sents, "bank", batch_size=len(sents))
    small = words.word_vectors_by_layer(bundle, sents, "bank")  # batches of 8
    L, C = bundle.config.num_hidden_layers, bundle.config.hidden_size
    assert words.WORD_BATCH == 8 and small.shape == (L + 1, len(sents), C)
    assert abs(one - small).max() < 1e-5


# ---- 2b. in the app: a 3,000-character sentence is cut, with a message ---------------------------------


@pytest.mark.slow
def test_a_3000_character_sentence_is_cut_with_a_message():
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from app import state

    def warnings():
        return [w.value for w in at.warning]

    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[state.TEXT_A] = "word " * 600  # kept from earlier, 3,000 characters
    at.switch_page("pages/tokenization.py").run()
    assert not at.exception and not at.error, [e.value for e in at.exception or at.error]
    assert any("2,000-character limit" in w for w in warnings()), warnings()
    box = at.text_area(key=state.W_TEXT_A)
    assert len(box.value) == 2_000 and box.max_chars == 2_000
    assert len(at.session_state[state.TEXT_A]) == 2_000
    # a client that sends more than the box lets a browser type: Streamlit cuts it, the page says so
    box.set_value("x " * 1_500).run()
    assert not at.exception and not at.error
    assert at.session_state[state.TEXT_A] == "x " * 1_000
    assert any("2,000-character limit" in w for w in warnings()), warnings()
    # the sentence with [MASK]
    at.session_state[state.MLM_TEXT] = "The [MASK] " + "word " * 600
    at.switch_page("pages/masked_lm.py").run()
    assert not at.exception and not at.error
    assert any("2,000-character limit" in w for w in warnings()), warnings()
    assert len(at.text_area(key=state.W_MLM_TEXT).value) == 2_000


# ---- 5. deeply nested JSON ------------------------------------------------------------------------

_DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "reader, data, name",
    [
        ("squad", '{"data": ' + _DEEP + "}", "questions.json"),
        ("tagged", '{"tokens": ["a"], "tags": ["O"]}\n{"tokens": ' + _DEEP + "}", "names.jsonl"),
        ("labelled", '{"text": "fine", "label": "pos"}\n{"text": ' + _DEEP + ', "label": "neg"}', "rows.jsonl"),
        ("labelled", '[{"text": "fine", "label": "pos"}, {"text": ' + _DEEP + ', "label": "neg"}]', "rows.json"),
    ],
)
def test_deeply_nested_json_is_a_data_error(reader, data, name):
    from bert.data.labelled import read_labelled
    from bert.data.squad import read_squad
    from bert.data.tagged import read_tagged
    from bert.errors import DataError

    read = {"squad": read_squad, "tagged": read_tagged, "labelled": read_labelled}[reader]
    with pytest.raises(DataError, match="too deeply") as e:
        read(data.encode(), name)
    assert "Line 2" in str(e.value) or name.endswith(".json")
