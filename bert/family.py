"""BERT's family: the encoder-only models that changed one thing or a few, and what each changed.

One row per member this app runs in its own code. A row carries every structural difference
(ALBERT's one shared layer, RoBERTa's positions counted past its padding index, an embedding
projection, ELECTRA's replaced-token head, the MLM head's activation, the tokenizer), and the code
reads them with `member(config)`, never by comparing `model_type`: a new member is a new row
(bert/checkpoint/hf_names.py's table renames its weights when they are not named as BERT's;
bert/config.py reads a config.json that names its fields otherwise, as DistilBERT's does).
The pages read the same rows to say what a model has, and the family card lists them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    model_type: str  # config.json's model_type
    name: str
    changed: str  # what it changed from BERT, in one line
    why: str  # what that bought
    segments: bool  # segment embeddings that tell sentence A from B (RoBERTa's one segment vector cannot)
    pooler: bool  # a trained pooler (BERT's tanh over [CLS], trained by NSP)
    next_sentence: bool  # a next-sentence head
    objective: str  # what it was pre-trained to do
    sentence_order: bool = False  # ALBERT: its two-sentence head says whether A and B are in order
    # The structure: what bert/model.py, bert/embeddings.py, the loader and the sizes read.
    tokenizer_kind: str = "wordpiece"  # the files bert/tokenizer/for_folder.py reads: a key of TOKENIZER_NAMES
    shared_layers: bool = False  # one layer's weights at every depth (ALBERT)
    position_offset_from_pad: bool = False  # real tokens take position rows pad + 1, pad + 2, ... (RoBERTa)
    embedding_projection: bool = False  # a projection E -> C even when E == C (ALBERT); else only when E != C
    mlm_activation: str | None = None  # the MLM head's transform activation when not hidden_act (GELU)
    replaced_token_head: bool = False  # ELECTRA's discriminator head: replaced or original, per token
    pretrain_here: bool = False  # this app's pre-training plays its games (BERT's two): it can continue it
    hf_export: bool = False  # bert/checkpoint/export.py writes it as transformers' Bert* classes

    @property
    def tokenizer(self) -> str:
        """The tokenizer's name, for the pages."""
        return TOKENIZER_NAMES[self.tokenizer_kind]


TOKENIZER_NAMES = {"wordpiece": "WordPiece", "bpe": "byte-level BPE", "unigram": "SentencePiece Unigram"}


MEMBERS = {
    "bert": Member(
        "bert",
        "BERT",
        "the original: masked-word prediction and next-sentence prediction",
        "one pre-trained encoder for every task, fine-tuned with a small head",
        segments=True,
        pooler=True,
        next_sentence=True,
        objective="masked LM + next sentence",
        pretrain_here=True,
        hf_export=True,
    ),
    "distilbert": Member(
        "distilbert",
        "DistilBERT",
        "half the layers, trained to copy a full BERT's predictions (distillation); no segments, no NSP",
        "about 60 % of BERT-base's size and time, most of its accuracy",
        segments=False,
        pooler=False,
        next_sentence=False,
        objective="masked LM, distilled from BERT",
    ),
    "electra": Member(
        "electra",
        "ELECTRA",
        "a small generator fills the masks; the discriminator, the model kept, says for EVERY token "
        "whether it was replaced",
        "learning from every token, not 15 %: the same accuracy for far less compute",
        segments=True,
        pooler=False,
        next_sentence=False,
        objective="replaced-token detection",
        mlm_activation="gelu",
        replaced_token_head=True,
    ),
    "roberta": Member(
        "roberta",
        "RoBERTa",
        "the same network trained longer on ten times the text, masks drawn anew every time, no "
        "next-sentence game; a byte-level BPE vocabulary that has no unknown token",
        "BERT had been under-trained: the same size, clearly better on every benchmark",
        segments=False,
        pooler=False,
        next_sentence=False,
        objective="masked LM",
        tokenizer_kind="bpe",
        mlm_activation="gelu",
        position_offset_from_pad=True,
    ),
    "albert": Member(
        "albert",
        "ALBERT",
        "one layer's weights shared by every layer, small (factorised) embeddings, and a sentence-ORDER "
        "game instead of next-sentence prediction",
        "a BERT-large shape in a tenth of the parameters; the order game is harder than NSP",
        segments=True,
        pooler=True,
        next_sentence=False,
        objective="masked LM + sentence order",
        sentence_order=True,
        tokenizer_kind="unigram",
        shared_layers=True,
        embedding_projection=True,
    ),
}


def member(config) -> Member:
    """The family member a config describes; a config without a model_type (a sketch of sizes) is BERT."""
    return MEMBERS[getattr(config, "model_type", "bert")]


def differences(a, b) -> str:
    """One line: what differs between two models' configs (member, objective, layers, heads,
    widths, tokenizer, shared weights, segments), for the Compare page; "" when nothing of that does."""
    ma, mb = member(a), member(b)
    out = []
    if ma is not mb:
        out.append(f"{ma.name} vs {mb.name} ({ma.objective} / {mb.objective})")
    for what, x, y in (
        ("layers", a.num_hidden_layers, b.num_hidden_layers),
        ("heads", a.num_attention_heads, b.num_attention_heads),
        ("hidden size", a.hidden_size, b.hidden_size),
        ("embedding size", a.embedding_width, b.embedding_width),
        ("vocabulary", a.vocab_size, b.vocab_size),
    ):
        if x != y:
            out.append(f"{what} {x:,} vs {y:,}")
    if ma.tokenizer != mb.tokenizer:
        out.append(f"tokenizer {ma.tokenizer} vs {mb.tokenizer}")
    shared = [m.shared_layers for m in (ma, mb)]
    if shared[0] != shared[1]:
        out.append("layers' weights: " + " vs ".join("one layer shared" if x else "one set a layer" for x in shared))
    if ma.segments != mb.segments:
        said = [
            "yes" if m.segments else "none" if c.type_vocab_size == 0 else "one for every token"
            for m, c in ((ma, a), (mb, b))
        ]
        out.append("segment embeddings: " + " vs ".join(said))
    return "; ".join(out)


@dataclass(frozen=True)
class Relative:
    """A transformer of another shape than BERT's, described in words only: this app never loads
    one (its code runs encoders, and a decoder it trains itself on the Decoder on top page), yet
    a class meets these names everywhere, so the card and Compare say what they changed and why."""

    name: str
    shape: str  # "decoder only" or "encoder-decoder"
    reads: str  # which tokens each token may attend to
    changed: str  # what it changed from BERT, in one line
    why: str  # what that bought
    seen_here: str  # where this app shows the same mechanism on its own models


RELATIVES = (
    Relative(
        "GPT",
        "decoder only",
        "left only: each token sees itself and the tokens before it (a causal mask)",
        "the same stack of layers, but every token reads only its left, trained to guess the NEXT word "
        "rather than a hidden one",
        "a model that guesses the next word can write text, one word after another, and every word of "
        "its training text is a question, not 15 %",
        "the Attention page's “Left only” reading and the Masked LM page's left-only guesses",
    ),
    Relative(
        "T5 / BART",
        "encoder-decoder",
        "the encoder reads the source both ways; the decoder reads its own output left only and looks "
        "at the encoder's vectors through cross-attention",
        "a BERT-like encoder with a decoder on top, trained to rewrite a damaged text whole (T5 fills "
        "dropped spans, BART undoes shuffling and deletions)",
        "one model for every task that turns a text into a text (translation, summaries, answers), with "
        "a source read in full before a word is written",
        "the Decoder on top page, which trains decoder layers on a BERT and shows the cross-attention",
    ),
)
