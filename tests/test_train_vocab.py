"""A pre-training run's own WordPiece vocabulary (bert/train/pretrain_setup.train_vocab): the same
list in every process, so a seed repeats a run, and the pieces `tokenizers`' own trainer learns."""

import json
import random
import subprocess
import sys
from pathlib import Path

from tokenizers import BertWordPieceTokenizer

from bert.data.corpus.base import Corpus
from bert.tokenizer.vocab import SPECIAL_TOKENS
from bert.train.pretrain_setup import train_vocab

ROOT = Path(__file__).resolve().parent.parent
SIZE = 120


def tied_corpus() -> Corpus:
    """Words of a few letters, so many merges tie on their counts."""
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 7))) for _ in range(300)]
    sentences = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(400)]
    return Corpus("tied", [sentences[i : i + 20] for i in range(0, len(sentences), 20)])


IN_A_PROCESS = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.test_train_vocab import SIZE, tied_corpus
from bert.train.pretrain_setup import train_vocab
print(json.dumps(train_vocab(tied_corpus(), SIZE)))
"""


def test_a_trained_vocabulary_is_the_same_list_in_every_process():
    command = [sys.executable, "-c", IN_A_PROCESS]
    lists = [json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout) for _ in range(3)]
    assert lists[0] == lists[1] == lists[2]
    assert lists[0] == train_vocab(tied_corpus(), SIZE)


def test_it_learns_the_pieces_tokenizers_own_trainer_learns():
    corpus = tied_corpus()
    ours = train_vocab(corpus, SIZE)
    wp = BertWordPieceTokenizer(lowercase=True, strip_accents=True, clean_text=True)
    wp.train_from_iterator(
        [s for doc in corpus.documents for s in doc],
        vocab_size=SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        limit_alphabet=1000,
        wordpieces_prefix="##",
    )
    theirs = set(wp.get_vocab())
    assert len(ours) == len(set(ours)) == SIZE
    assert ours[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert {"##" + c for c in "abcdefgh"} <= set(ours)
    assert len(set(ours) & theirs) / len(set(ours) | theirs) >= 0.95  # ties may pick another merge or two
