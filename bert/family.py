"""BERT's family: the encoder-only models that changed one thing or a few, and what each changed.

One row per member this app runs in its own code (bert/model.py writes each difference where it
is: DistilBERT's missing segment table, ELECTRA's narrow embeddings and its replaced-token head).
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
    segments: bool  # segment (token type) embeddings
    pooler: bool  # a trained pooler (BERT's tanh over [CLS], trained by NSP)
    next_sentence: bool  # a next-sentence head
    objective: str  # what it was pre-trained to do


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
}


def member(config) -> Member:
    """The family member a config describes."""
    return MEMBERS[config.model_type]


def differences(a, b) -> str:
    """One line: what differs between two models' configs (member, layers, heads, widths,
    objective), for the Compare page; "" when nothing of that does."""
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
    if ma.segments != mb.segments:
        out.append("segment embeddings: " + " vs ".join("yes" if m.segments else "none" for m in (ma, mb)))
    return "; ".join(out)
