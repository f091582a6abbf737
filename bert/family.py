"""BERT's family: the encoder-only models that changed one thing or a few, and what each changed.

One row per member this app runs in its own code (bert/model.py writes each difference where it
is: DistilBERT's missing segment table, ELECTRA's narrow embeddings and its replaced-token head,
RoBERTa's positions counted past its padding index, ALBERT's one shared layer).
The pages read `member(config)` to say what a model has (a next-sentence head or not, segments
or not) and the family card reads the rows.
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
    tokenizer: str = "WordPiece"
    sentence_order: bool = False  # ALBERT: its two-sentence head says whether A and B are in order


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
        tokenizer="byte-level BPE",
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
        sentence_order=True,
        objective="masked LM + sentence order",
        tokenizer="SentencePiece Unigram",
    ),
}


def member(config) -> Member:
    """The family member a config describes."""
    return MEMBERS[config.model_type]


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
    shared = [m.model_type == "albert" for m in (ma, mb)]
    if shared[0] != shared[1]:
        out.append("layers' weights: " + " vs ".join("one layer shared" if x else "one set a layer" for x in shared))
    if ma.segments != mb.segments:
        said = [
            "yes" if m.segments else "none" if c.type_vocab_size == 0 else "one for every token"
            for m, c in ((ma, a), (mb, b))
        ]
        out.append("segment embeddings: " + " vs ".join(said))
    return "; ".join(out)
