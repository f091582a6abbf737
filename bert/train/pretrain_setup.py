"""What a pre-training run starts from: its text (the corpora or a text file), split by document into
training and held-out text the same for every seed, a WordPiece vocabulary trained on it when asked,
and the model, loaded to continue or built from scratch."""

from __future__ import annotations

from pathlib import Path

import torch

from ..bundle import Bundle
from ..checkpoint.load import load
from ..config import BertConfig
from ..data.corpus.base import Corpus, merge_corpora
from ..data.corpus.registry import load_corpus, split_corpora
from ..errors import TrainingError
from ..family import member
from ..model import BertForPreTraining
from ..tokenizer import Tokenizer
from ..tokenizer.vocab import SPECIAL_TOKENS
from .pretrain_args import PretrainArgs


def train_vocab(corpus: Corpus, size: int) -> list[str]:
    """A WordPiece vocabulary trained on the corpus with the `tokenizers` library, the same list in
    every process: the special tokens, then one "##" piece for every character that continues a
    word (sorted), then the trainer's alphabet and merges.

    The trainer numbers a continuing "##" piece in the order it meets words in a hash map seeded per
    process, and breaks ties between merges by those numbers: left to it, a run's ids (and at times
    its merges) change from one process to the next, and a seed no longer repeats a run. Handing it
    those pieces up front, in a fixed order, fixes their numbers."""
    from tokenizers import BertWordPieceTokenizer

    wp = BertWordPieceTokenizer(lowercase=True, strip_accents=True, clean_text=True)
    sentences = [s for doc in corpus.documents for s in doc]
    normalizer, pre_tokenizer = wp.normalizer, wp.pre_tokenizer
    continuing = {
        c
        for s in sentences
        for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(s))
        for c in word[1:]
    }
    wp.train_from_iterator(
        sentences,
        vocab_size=size,
        min_frequency=2,
        special_tokens=[*SPECIAL_TOKENS, *("##" + c for c in sorted(continuing))],
        limit_alphabet=1000,
        wordpieces_prefix="##",
    )
    vocab = wp.get_vocab()
    return sorted(vocab, key=vocab.get)


def load_training_corpus(args: PretrainArgs) -> Corpus:
    if args.text_file:
        from ..data.corpus.base import corpus_from_text

        return corpus_from_text(Path(args.text_file).read_bytes(), name=Path(args.text_file).stem)
    return merge_corpora([load_corpus(c) for c in args.corpora], name="+".join(args.corpora))


# The held-out documents do not follow ``--seed``: a run with another seed (data order, masking,
# initialisation) must not train on what every other run holds out. (One run that shipped did:
# see the minilm-l6 card.)
SPLIT_SEED = 0


def training_split(args: PretrainArgs, corpus: Corpus | None = None) -> tuple[Corpus, Corpus]:
    """(train, held-out) by document, the same for every seed: a given corpus or text file split as
    one; the named corpora through ``split_corpora`` (the first built-ins' held-out documents stay
    held out)."""
    if corpus is not None or args.text_file:
        corpus = corpus or load_training_corpus(args)
        return corpus.split(args.valid_fraction, seed=SPLIT_SEED)
    return split_corpora(list(args.corpora), args.valid_fraction, seed=SPLIT_SEED)


def initial_bundle(args: PretrainArgs, corpus: Corpus) -> Bundle:
    if args.init != "scratch":
        bundle = load(args.init)
        if not bundle.has_mlm:
            raise TrainingError(f"{args.init} is a classifier; pre-train from an encoder instead")
        if not member(bundle.config).pretrain_here:  # BERT's two games; the family learned other ones
            raise TrainingError(
                f"{args.init} is a {member(bundle.config).name}, pre-trained with {member(bundle.config).objective}: "
                "this pre-training plays BERT's two games (masked LM and next sentence). Fine-tune it instead."
            )
        return bundle
    if args.vocab == "default":
        from ..checkpoint.builtins import minilm_package_dir

        tokenizer = Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    elif args.vocab.startswith("train:"):
        tokenizer = Tokenizer(train_vocab(corpus, int(args.vocab.split(":", 1)[1])))
    else:
        tokenizer = Tokenizer.from_file(args.vocab)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.hidden,
        max_position_embeddings=max(128, args.max_seq_length),
        hidden_dropout_prob=args.dropout,
        attention_probs_dropout_prob=args.dropout,
    )
    torch.manual_seed(args.seed)
    return Bundle(model=BertForPreTraining(config), tokenizer=tokenizer, name="scratch")
