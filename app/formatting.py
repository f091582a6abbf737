"""Small pure helpers for the pages: tables, text edits and numbers. No streamlit here.

Dimension letters: T tokens, C hidden size, D head size, P positions, L layers, H heads.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from bert import InputError
from bert.tokenizer.vocab import MASK_TOKEN as MASK
from bert.tokenizer.vocab import SPECIAL_TOKENS as SPECIALS

# Sentences we wrote for the next-sentence demo: unrelated to each other on purpose, so that a
# random pick is (almost always) NOT the true continuation of sentence A.
RANDOM_SENTENCES = [
    "The bakery on the corner sells out of bread before nine.",
    "Penguins cannot fly, but they swim remarkably fast.",
    "My grandmother kept every letter she ever received.",
    "The train to the coast was delayed by a fallen tree.",
    "Volcanoes can create new islands in the middle of the ocean.",
    "He practised the violin for an hour every evening.",
    "The museum reopened after a year of repairs.",
    "Tomatoes grow best in warm weather with plenty of sun.",
    "Our team lost the final by a single goal.",
    "The recipe calls for two eggs and a cup of flour.",
    "Most of the library's old maps were drawn by hand.",
    "A thunderstorm knocked out the power for the whole street.",
    "She learned to program by building small games.",
    "The river froze solid during the coldest winter in decades.",
    "Bees communicate the location of flowers by dancing.",
    "The meeting was moved to Thursday afternoon.",
]

# The "same word, different contexts" demo on the Embeddings page.
BANK_SENTENCES = (
    "We sat on the bank of the river and watched the water.",
    "She went to the bank to open a savings account.",
    "The bank approved my loan this morning.",
)


# --- text ---------------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<$&])")
# Where markdown (GitHub's, as Streamlit renders it) would make a link, an image or an HTML tag:
# `](`, `][`, `]:`, `![`, `<` before a character, and the autolinked `://`, `www.` and `@`.
# Streamlit links bare URLs and e-mail addresses after decoding the text, so backslashes and
# entities cannot stop those; an invisible word joiner between the two characters can, and
# it stays invisible wherever the text lands (inside code too, where a backslash would show).
# `&` before a letter, a digit or `#` is the start of an entity, which markdown decodes before
# that linking (`http&colon;//x&period;io` is `http://x.io` to it): a joiner after the `&`
# leaves no entity, and the text reads as typed.
_LINKISH = re.compile(
    r"(?<=\])(?=[(\[:])|(?<=!)(?=\[)|(?<=<)(?=\S)|(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)|(?<=&)(?=[#A-Za-z0-9])", re.I
)
WORD_JOINER = "\u2060"


def finite_float(v) -> float | None:
    """float(v) when that is a finite number; None for anything else (a missing or broken metric)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def md_safe(markdown: str) -> str:
    """Markdown with others' text in it (a model card we wrote): headings, lists, tables, emphasis
    and code stay; nothing in it links, embeds an image, is an HTML tag or an entity (see
    _LINKISH), and it reads the same on screen."""
    return _LINKISH.sub(WORD_JOINER, str(markdown))


def md_escape(text: str) -> str:
    """Someone's text (a name, a label, a message) for markdown: shown exactly as written, no
    markup, no entity, no link, not even a bare address. Every markdown punctuation character is
    backslash-escaped (`\\&` included: CommonMark reads an escaped `&` as itself, never as the
    start of an entity), on top of md_safe."""
    return _MD_SPECIAL.sub(r"\\\1", md_safe(text))


def md_code(text: str) -> str:
    """Someone's text as inline code, exactly (a column name): a fence longer than any run of
    backticks in it."""
    text = str(text).replace("\n", " ")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def clean_text(text: str | None, what: str = "the sentence", required: bool = True) -> str:
    """Strip a typed text; empty (or whitespace only) is an InputError when required, else ''."""
    text = (text or "").strip()
    if not text and required:
        raise InputError(f"Type {what} first: it is empty.")
    return text


SENSE_SEP = "|"


def sense_text(sentences, senses) -> str:
    """Sentences and their senses as Compare's box shows them: "sentence | sense", one a line."""
    return "\n".join(f"{s} {SENSE_SEP} {g}" if g else s for s, g in zip(sentences, senses, strict=True))


def sense_lines(text: str, max_rows: int, max_chars: int, max_sense_chars: int) -> tuple[list[str], list[str], int]:
    """Compare's box of sentences, one a line, each optionally ending in "| sense" ->
    (sentences, senses, lines dropped).

    Only the first `max_rows` sentences are read (the number of lines with a sentence past them
    is returned, for a message); each part is stripped and cut to its cap; blank lines are
    skipped. The sense is what follows the line's last "|"."""
    sentences, senses, dropped = [], [], 0
    for line in (text or "").splitlines():
        sent, sep, sense = line.rpartition(SENSE_SEP)
        if not sep:
            sent, sense = line, ""
        sent = sent.strip()[:max_chars]
        if not sent:
            continue
        if len(sentences) == max_rows:
            dropped += 1
            continue
        sentences.append(sent)
        senses.append(sense.strip()[:max_sense_chars])
    return sentences, senses, dropped


def count_masks(text: str) -> int:
    return text.count(MASK)


def mask_words(text: str, words: list[tuple[str, tuple[int, int]]], chosen: list[int]) -> str:
    """Replace the chosen words (indices into `words`, each (word, (start, end))) by [MASK]."""
    out, last = [], 0
    for i in sorted(set(chosen)):
        _, (s, e) = words[i]
        out.append(text[last:s])
        out.append(MASK)
        last = e
    out.append(text[last:])
    return "".join(out)


def card_summary(card: str, fallback: str = "") -> str:
    """The first prose line of a model card, skipping YAML front matter and headings' '#'."""
    lines = (card or "").splitlines()
    if lines and lines[0].strip() == "---":  # YAML front matter
        try:
            end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
            lines = lines[end + 1 :]
        except StopIteration:
            lines = lines[1:]
    for line in lines:
        line = line.strip().lstrip("#").strip()
        if line and not line.lower().startswith(("model card", "card")) and line != "---":
            line = re.sub(r"\s+", " ", line)
            return line[:200] + ("…" if len(line) > 200 else "")
    return fallback


def mlm_untrained(bundle) -> bool:
    """Whether the loader gave `bundle` a freshly initialised MLM head (its guesses are random)."""
    return not bundle.mlm_head_trained


def nsp_untrained(bundle) -> bool:
    """Whether the loader gave `bundle` a freshly initialised next-sentence head."""
    return not bundle.nsp_head_trained


def fmt_params(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f} B"
    if n >= 1e6:
        return f"{n / 1e6:.1f} M"
    if n >= 1e3:
        return f"{n / 1e3:.1f} k"
    return str(n)


# --- tokens -------------------------------------------------------------------------------------


def token_table(
    tokens,
    ids,
    type_ids,
    offsets,
    word_ids,
    sequence_ids,
    text_a: str,
    text_b: str | None = None,
    unk_token: str = "[UNK]",
) -> pd.DataFrame:
    """One row per token: position, token, id, segment, the word it belongs to, its span in the
    text it came from, and flags. Pieces of one word share `word` (e.g. 'A3')."""
    rows = []
    prev = None  # (segment, word) of the token before: the same word again is a continuation (any tokenizer)
    for pos, (tok, i, seg, (s, e), w, seq) in enumerate(zip(tokens, ids, type_ids, offsets, word_ids, sequence_ids)):
        same_word, prev = seq is not None and prev == (seq, w), (seq, w)
        if seq is None:
            word, src, span = "", "(added)", ""
        else:
            src_text = text_a if seq == 0 else (text_b or "")
            word = f"{'AB'[seq]}{w + 1}"
            src = src_text[s:e]
            span = f"{s}–{e}"
        rows.append(
            {
                "position": pos,
                "token": tok,
                "id": int(i),
                "segment": int(seg),
                "word": word,
                "text": src,
                "span": span,
                "piece": (
                    "special"
                    if seq is None
                    else "continuation (##)"
                    if tok.startswith("##")
                    else "continuation"
                    if same_word
                    else "word start"
                ),
                "unknown": tok == unk_token,
            }
        )
    return pd.DataFrame(
        rows, columns=["position", "token", "id", "segment", "word", "text", "span", "piece", "unknown"]
    )


def word_groups(df: pd.DataFrame) -> list[int]:
    """0/1 per row, flipping at each new word: a stripe pattern that keeps pieces together."""
    out, flip, prev = [], 0, None
    for w in df["word"]:
        if w != prev:
            flip ^= 1
            prev = w
        out.append(flip)
    return out


def trace_table(trace) -> pd.DataFrame:
    """The greedy WordPiece steps: each candidate looked up, and whether the vocabulary has it."""
    rows = [
        {
            "step": n + 1,
            "from char": st.start,
            "to char": st.end,
            "candidate": st.candidate,
            "in vocabulary?": "yes, take it" if st.accepted else "no, try shorter",
        }
        for n, st in enumerate(trace)
    ]
    return pd.DataFrame(rows, columns=["step", "from char", "to char", "candidate", "in vocabulary?"])


def merge_table(trace) -> pd.DataFrame:
    """Byte-level BPE's merges of one word, in the order applied (bert/tokenizer/bpe.py MergeStep); "the word
    now" shows the symbols near the merge, "…" where the word goes on, so each row is short however long
    the word."""
    rows = [
        {
            "step": n + 1,
            "merge rank": st.rank,
            "pair": f"{st.left} + {st.right}",
            "becomes": st.merged,
            "the word now": ("… " if st.nearby_start else "")
            + " · ".join(st.nearby)
            + (" …" if st.nearby_start + len(st.nearby) < st.length else ""),
        }
        for n, st in enumerate(trace)
    ]
    return pd.DataFrame(rows, columns=["step", "merge rank", "pair", "becomes", "the word now"])


def lattice_table(trace) -> pd.DataFrame:
    """Unigram's candidate pieces of one word and their log-probabilities; the best cut marked
    (bert/tokenizer/unigram.py LatticeStep)."""
    rows = [
        {
            "from char": st.start,
            "to char": st.end,
            "piece": st.candidate,
            "log-probability": round(float(st.score), 3),
            "in the best cut?": "yes" if st.best else "",
        }
        for st in trace
    ]
    return pd.DataFrame(rows, columns=["from char", "to char", "piece", "log-probability", "in the best cut?"])


# How the Tokenization page shows one word for each kind of tokenizer: (heading, how it works, table)
TRACE_VIEWS = {
    "wordpiece": (
        "How WordPiece splits one word",
        "Greedy, longest match first: try the whole rest of the word; if the vocabulary lacks "
        "it, drop one character from the end and try again. Take the first hit and continue "
        "after it, with `##` in front.",
        trace_table,
    ),
    "bpe": (
        "How byte-level BPE builds one word (RoBERTa)",
        "Start from the word's bytes (the space before a word is part of it, shown as `Ġ`), then "
        "merge the adjacent pair that training merged earliest (the lowest rank), again and again, "
        "until no learned merge applies. Any text can be spelled: there is no unknown token.",
        merge_table,
    ),
    "unigram": (
        "How Unigram (SentencePiece) cuts one word (ALBERT)",
        "Every piece of the vocabulary that fits somewhere in the word (`▁` marks a word's start) "
        "has a learned log-probability; the word is cut into the pieces whose log-probabilities "
        "add up to the most (the best path through this lattice).",
        lattice_table,
    ),
}


def traced(tokenizer, word: str):
    """The tokenizer's steps on one word; a byte-level BPE word as in mid-sentence, with its space (Ġ)."""
    return tokenizer.trace(" " + word if tokenizer.kind == "bpe" else word)


def trace_frame(tokenizer, word: str) -> pd.DataFrame:
    """`traced` as a table, the way its kind of tokenizer is shown (TRACE_VIEWS)."""
    return TRACE_VIEWS[tokenizer.kind][2](traced(tokenizer, word))


def vocab_facts(vocab: dict[str, int]) -> dict[str, float]:
    n = len(vocab)
    cont = sum(1 for t in vocab if t.startswith("##"))
    unused = sum(1 for t in vocab if t.startswith("[unused"))
    special = sum(1 for t in vocab if t in SPECIALS)
    return {
        "size": n,
        "continuations": cont,
        "continuation share": cont / max(n, 1),
        "unused slots": unused,
        "special": special,
    }


def vocab_search(vocab: dict[str, int], query: str, limit: int = 50) -> pd.DataFrame:
    """Tokens containing `query` (case-insensitive), exact and prefix matches first."""
    q = query.strip().lower()
    if not q:
        return pd.DataFrame(columns=["token", "id", "kind"])
    hits = []
    for tok, i in vocab.items():
        t = tok.lower()
        if q in t:
            bare = t[2:] if t.startswith("##") else t
            rank = 0 if bare == q else 1 if bare.startswith(q) else 2
            hits.append((rank, len(t), tok, i))
    hits.sort()
    rows = [
        {
            "token": tok,
            "id": i,
            "kind": "special" if tok in SPECIALS else "continuation (##)" if tok.startswith("##") else "word start",
        }
        for _, _, tok, i in hits[:limit]
    ]
    return pd.DataFrame(rows, columns=["token", "id", "kind"])


def token_labels(tokens: list[str]) -> list[str]:
    """`i: token` labels, unique even when a token repeats."""
    return [f"{i}: {t}" for i, t in enumerate(tokens)]


# --- numbers ------------------------------------------------------------------------------------


def attention_walkthrough(q: np.ndarray, k: np.ndarray, v: np.ndarray, i: int, hidden=None) -> dict:
    """One query token through one head, with every number (q (T, D), k (T, D), v (T, D)).

    scores_j = q_i . k_j / sqrt(D);  weights = softmax(scores);  output = sum_j weights_j v_j.
    hidden: (T,) bool, the keys an attention mask hides from token i: their weight is 0, as
    in the model (the softmax runs over the others only).
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    D = q.shape[-1]
    dots = k @ q[i]  # (T,)
    scores = dots / np.sqrt(D)
    seen = np.ones_like(scores, dtype=bool) if hidden is None else ~np.asarray(hidden, dtype=bool)
    e = np.where(seen, np.exp(scores - scores[seen].max()), 0.0)
    weights = e / e.sum()
    out = weights @ v  # (D,)
    return {"dots": dots, "scores": scores, "weights": weights, "output": out, "sqrt_d": float(np.sqrt(D))}


def hide_specials(att: np.ndarray, tokens: list[str], renormalise: bool = True):
    """Drop [CLS]/[SEP]/[PAD] rows and columns from a (T, T) map; optionally make rows sum to 1.

    Returns (map, kept token labels, kept indices).
    """
    keep = [j for j, t in enumerate(tokens) if t not in ("[CLS]", "[SEP]", "[PAD]")]
    if not keep:
        return att, list(tokens), list(range(len(tokens)))
    sub = np.asarray(att)[np.ix_(keep, keep)]
    if renormalise:
        sub = sub / np.maximum(sub.sum(axis=1, keepdims=True), 1e-12)
    return sub.astype(np.float32), [tokens[j] for j in keep], keep


def table_csv(df: pd.DataFrame) -> bytes:
    """A table as CSV for a download button: UTF-8 with a byte-order mark (so spreadsheets read
    it as UTF-8), and no cell can run as a formula (`=cmd|...` stays text: bert.data.labelled.to_safe_csv).
    Streamlit's own table download does not escape formulas, so it is switched off
    (client.disableDataExport in .streamlit/config.toml) and the pages offer this one."""
    from bert.data.labelled import to_safe_csv

    return ("\ufeff" + to_safe_csv(df)).encode("utf-8")
