"""BERT's WordPiece tokenizer, written from the algorithm, with character offsets and a trace.

Pipeline (identical ids and tokens to the reference Python tokenizer, transformers' ``BertTokenizerLegacy``,
formerly the slow ``BertTokenizer``):

    text
     -> split out special tokens written in the text ("[MASK]", "[CLS]", ...): kept whole, wherever they stand
     -> clean:       drop U+0000, U+FFFD and control characters (category C*, except \\t \\n \\r);
                     whitespace (\\t \\n \\r, space, category Zs) becomes a word boundary
     -> CJK:         every CJK ideograph becomes a word of its own
     -> per word:    NFC; then, when do_lower_case, lower-case and strip accents (NFD, drop category Mn)
     -> punctuation: every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, or category P*)
                     becomes a word of its own                               -> "basic tokens"
     -> WordPiece:   greedy longest-match-first against the vocab, "##" marks a continuation; a basic token
                     that cannot be covered, or is longer than 100 characters, becomes [UNK]

Offsets are (start, end) character positions in the ORIGINAL string (how edits such as accent stripping
map back: see ``basic``).

Speed: a plain-ASCII segment takes a regex fast path; WordPiece results are cached per basic token, and the
normalisation of non-ASCII words is cached per word. The caches only memoise pure functions. A truncating
``encode`` reads the text lazily and stops a fixed number of pieces past ``max_length``.

Modules:
    vocab       reading and atomically writing vocab.txt, token <-> id tables, the special tokens
    basic       cleaning, CJK splitting, NFC / lower-case / accents, punctuation splitting, with offsets
    wordpiece   greedy longest-match-first pieces of a basic token (cached), and its step-by-step Trace
    tokenizer   the Tokenizer class tying them together (tokenize, encode, decode, pad, trace), and one
                text or pair -> Encoding: lazy reading of long pastes, fast paths, truncation

WordPiece is pure Python: only the standard library (``re``, ``unicodedata``) is imported. BERT's relatives
with another algorithm have the same interface over the ``tokenizers`` library:
    backed      BackedTokenizer: our interface over a library tokenizer; "[MASK]" typed is the model's mask
    bpe         RobertaTokenizer (kind "bpe"): byte-level BPE, and the trace of a word's merges (MergeStep)
    unigram     AlbertTokenizer (kind "unigram"): SentencePiece Unigram, and a word's lattice (LatticeStep)
    files       vocab.json, merges.txt, tokenizer.json: size ceilings, reading, atomic writing
    for_folder  tokenizer_for_folder(folder, model_type): the right one of the three for a model folder
"""

from .basic import BasicTokenizer
from .tokenizer import Encoding, Tokenizer
from .vocab import SPECIAL_TOKENS
from .wordpiece import Trace, TraceStep, WordPiece

__all__ = [
    "BasicTokenizer",
    "WordPiece",
    "Tokenizer",
    "Encoding",
    "TraceStep",
    "Trace",
    "SPECIAL_TOKENS",
]
