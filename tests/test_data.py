"""Pre-training examples: MLM masking statistics, NSP pairs, batching. Self-contained and fast."""

import random

import pytest
import torch

from bert.data.corpus.base import Corpus
from bert.train.batching import bucket_batches
from bert.train.examples import (
    IS_NEXT,
    NOT_NEXT,
    Example,
    PretrainingDataset,
    collate,
    create_nsp_pairs,
    tokenize_corpus,
    truncate_seq_pair,
)
from bert.train.masking import IGNORE_INDEX, MLMMasker, mask_tokens, special_token_ids

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIAL = [PAD, UNK, CLS, SEP, MASK]


class TinyTokenizer:
    """Words of up to 3 letters are one piece; longer words become 'abc' + '##de' + '##fg'...;
    the vocabulary grows as words are seen (enough for the data code, which only needs ids)."""

    pad_id, unk_id, cls_id, sep_id, mask_id = PAD, UNK, CLS, SEP, MASK

    def __init__(self):
        self.ids_to_tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]
        self.vocab = {t: i for i, t in enumerate(self.ids_to_tokens)}

    def tokenize(self, text):
        out = []
        for w in text.lower().split():
            out.append(w[:3])
            out.extend("##" + w[i : i + 2] for i in range(3, len(w), 2))
        return out

    def convert_tokens_to_ids(self, tokens):
        for t in tokens:
            if t not in self.vocab:
                self.vocab[t] = len(self.ids_to_tokens)
                self.ids_to_tokens.append(t)
        return [self.vocab[t] for t in tokens]


# ---------------------------------------------------------------------------------------- masking


def _random_batch(n=4000, t=48, vocab=1000, seed=0):
    """[CLS] a [SEP] b [SEP] [PAD]... with random lengths; ids of real tokens in [7, vocab)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(7, vocab, (n, t), generator=g)
    lengths = torch.randint(8, t + 1, (n,), generator=g)
    for i, L in enumerate(lengths.tolist()):
        ids[i, 0] = CLS
        ids[i, L // 2] = SEP
        ids[i, L - 1] = SEP
        ids[i, L:] = PAD
    att = (torch.arange(t)[None, :] < lengths[:, None]).long()
    return ids, att


@pytest.mark.slow
def test_masking_statistics_80_10_10():
    vocab = 1000
    ids, att = _random_batch(vocab=vocab)
    masker = MLMMasker(vocab_size=vocab, mask_id=MASK, pad_id=PAD, special_ids=SPECIAL + [5, 6])
    special = masker.special_mask(ids, att)
    out, labels = masker(ids, att, torch.Generator().manual_seed(1))
    chosen = labels != IGNORE_INDEX
    n_real = int((~special).sum())
    assert abs(chosen.sum().item() / n_real - 0.15) < 0.01
    assert not (chosen & special).any()
    assert torch.equal(out[special], ids[special])  # specials and padding untouched
    assert torch.equal(labels[chosen], ids[chosen])
    n = chosen.sum().item()
    masked = (out == MASK) & chosen
    kept = (out == ids) & chosen
    replaced = chosen & ~masked & ~kept
    assert abs(masked.sum().item() / n - 0.8) < 0.02
    assert abs(kept.sum().item() / n - 0.1) < 0.02
    assert abs(replaced.sum().item() / n - 0.1) < 0.02
    rand_ids = out[chosen & ~masked]
    assert not torch.isin(rand_ids, torch.tensor(SPECIAL + [5, 6])).any()  # never a special id
    assert (out[~chosen] == ids[~chosen]).all()


def test_mask_tokens_function_is_deterministic_and_excludes_special_ids():
    ids, att = _random_batch(n=500, vocab=50)
    special = torch.isin(ids, torch.tensor(SPECIAL))
    a = mask_tokens(ids, special, 50, MASK, generator=torch.Generator().manual_seed(3), special_ids=SPECIAL)
    b = mask_tokens(ids, special, 50, MASK, generator=torch.Generator().manual_seed(3), special_ids=SPECIAL)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    out, labels = a
    chosen = labels != IGNORE_INDEX
    replaced = chosen & (out != MASK) & (out != ids)
    assert replaced.sum() > 0
    assert not torch.isin(out[replaced], torch.tensor(SPECIAL)).any()
    # Default exclusions (no special_ids given): mask id and the ids at special positions.
    out2, labels2 = mask_tokens(ids, special, 50, MASK, generator=torch.Generator().manual_seed(4))
    rep2 = (labels2 != IGNORE_INDEX) & (out2 != MASK) & (out2 != ids)
    assert not torch.isin(out2[rep2], torch.tensor([PAD, CLS, SEP, MASK])).any()


def test_whole_word_masking_masks_all_pieces_together():
    tok = TinyTokenizer()
    rng = random.Random(0)
    letters = "abcdefghij"
    rows = []
    for _ in range(3000):
        words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 9))) for _ in range(rng.randint(3, 12))]
        rows.append([CLS] + tok.convert_tokens_to_ids(tok.tokenize(" ".join(words))) + [SEP])
    examples = [Example(r, [0] * len(r), 0) for r in rows]
    masker = MLMMasker.from_tokenizer(tok, whole_word=True)
    batch = collate(examples, PAD, masker, torch.Generator().manual_seed(0))
    ids = collate(examples, PAD)["input_ids"]
    chosen = batch["mlm_labels"] != IGNORE_INDEX
    is_cont = torch.tensor([t.startswith("##") for t in tok.ids_to_tokens])[ids]
    real = batch["attention_mask"].bool() & ~torch.isin(ids, torch.tensor([CLS, SEP]))
    # A "##" piece is chosen exactly when the piece before it is (same word).
    prev_chosen = torch.zeros_like(chosen)
    prev_chosen[:, 1:] = chosen[:, :-1]
    assert torch.equal(chosen[is_cont & real], prev_chosen[is_cont & real])
    assert (chosen & ~real).sum() == 0
    frac = chosen.sum().item() / real.sum().item()
    assert abs(frac - 0.15) < 0.015
    assert special_token_ids(tok) == [0, 1, 2, 3, 4, 5, 6]


# ---------------------------------------------------------------------------------------- NSP


def _synthetic_docs(n_docs=300, seed=0):
    """Token id = 1000 + global position in its document's token stream, + 1_000_000 * doc:
    from an id we can read which document and where in it a token comes from."""
    rng = random.Random(seed)
    docs = []
    for d in range(n_docs):
        pos = 0
        sents = []
        for _ in range(rng.randint(1, 25)):
            n = rng.randint(1, 30)
            sents.append([1_000_000 * d + 1000 + pos + k for k in range(n)])
            pos += n
        docs.append(sents)
    return docs


def _where(tok):
    return (tok - 1000) // 1_000_000, (tok - 1000) % 1_000_000


@pytest.mark.slow
@pytest.mark.parametrize("max_len", [32, 128])
def test_nsp_pairs_structure_and_balance(max_len):
    docs = _synthetic_docs()
    pairs = []
    for seed in range(4):
        pairs += create_nsp_pairs(docs, max_seq_length=max_len, cls_id=CLS, sep_id=SEP, rng=seed)
    assert len(pairs) > 2000
    frac_random = sum(p.nsp_label == NOT_NEXT for p in pairs) / len(pairs)
    assert abs(frac_random - 0.5) < 0.03
    adjacent = 0
    for p in pairs:
        ids, types = p.input_ids, p.token_type_ids
        assert len(ids) == len(types) <= max_len
        assert ids[0] == CLS and ids[-1] == SEP
        seps = [i for i, t in enumerate(ids) if t == SEP]
        assert len(seps) == 2 and seps[1] == len(ids) - 1
        assert types == [0] * (seps[0] + 1) + [1] * (len(ids) - seps[0] - 1)
        a, b = ids[1 : seps[0]], ids[seps[0] + 1 : -1]
        assert a and b
        da, pa = zip(*map(_where, a))
        db, pb = zip(*map(_where, b))
        assert len(set(da)) == 1 and len(set(db)) == 1  # each segment from one document
        assert list(pa) == list(range(pa[0], pa[0] + len(pa)))  # contiguous text
        assert list(pb) == list(range(pb[0], pb[0] + len(pb)))
        if p.nsp_label == IS_NEXT:
            assert da[0] == db[0] and pb[0] > pa[-1]  # B really follows A in the same document
            # Only tokens cut from A's end by truncation lie between them.
            assert pb[0] - pa[-1] - 1 < max_len
            adjacent += pb[0] == pa[-1] + 1
        else:
            assert da[0] != db[0]  # B from another document
    n_next = sum(p.nsp_label == IS_NEXT for p in pairs)
    assert adjacent / n_next > 0.1


def test_short_seq_prob_and_fill():
    docs = _synthetic_docs(200)
    pairs = create_nsp_pairs(docs, max_seq_length=64, cls_id=CLS, sep_id=SEP, rng=1, short_seq_prob=0.0)
    # Without short sequences most pairs are filled close to the maximum length.
    full = sum(len(p.input_ids) >= 50 for p in pairs) / len(pairs)
    assert full > 0.6


def test_one_document_corpus_still_gives_both_labels():
    docs = _synthetic_docs(1, seed=3)
    docs[0] = docs[0] * 3
    pairs = create_nsp_pairs(docs, max_seq_length=32, cls_id=CLS, sep_id=SEP, rng=0, dupe_factor=20)
    labels = {p.nsp_label for p in pairs}
    assert labels == {IS_NEXT, NOT_NEXT}


def test_truncate_seq_pair():
    rng = random.Random(0)
    a, b = truncate_seq_pair(list(range(100)), list(range(100, 110)), 30, rng)
    assert len(a) + len(b) == 30 and b == list(range(100, 110))
    assert a == list(range(a[0], a[0] + len(a)))
    a, b = truncate_seq_pair([1, 2], [3], 10, rng)
    assert (a, b) == ([1, 2], [3])


# ---------------------------------------------------------------------------------------- batching


def test_collate_pads_to_longest():
    ex = [
        Example([CLS, 10, SEP, 11, SEP], [0, 0, 0, 1, 1], 0),
        Example([CLS, 10, SEP, 12, 13, 14, SEP], [0, 0, 0, 1, 1, 1, 1], 1),
    ]
    b = collate(ex, PAD)
    assert b["input_ids"].shape == (2, 7)
    assert b["input_ids"][0].tolist() == [CLS, 10, SEP, 11, SEP, PAD, PAD]
    assert b["attention_mask"][0].tolist() == [1, 1, 1, 1, 1, 0, 0]
    assert b["token_type_ids"][0].tolist() == [0, 0, 0, 1, 1, 0, 0]
    assert b["nsp_labels"].tolist() == [0, 1]
    assert (b["mlm_labels"] == IGNORE_INDEX).all()
    assert all(v.dtype == torch.long for v in b.values())


def test_bucket_batches():
    rng = random.Random(0)
    lengths = [rng.randint(5, 128) for _ in range(5000)]
    batches = bucket_batches(lengths, 32, seed=0)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(5000))
    assert batches == bucket_batches(lengths, 32, seed=0)
    assert batches != bucket_batches(lengths, 32, seed=1)
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches) / len(batches)
    assert spread < 10  # similar lengths together (random batches would spread ~110)
    assert bucket_batches([3, 1, 2], 2, shuffle=False, chunk_batches=1) == [[1, 0], [2]]
    assert all(len(b) == 32 for b in bucket_batches(lengths, 32, drop_last=True))


@pytest.mark.slow
def test_pretraining_dataset_dynamic_deterministic_resumable_sharded():
    ds = PretrainingDataset(_synthetic_docs(100), cls_id=CLS, sep_id=SEP, max_seq_length=64, seed=7)
    vocab = 100 * 1_000_000 + 2000
    masker = MLMMasker(vocab_size=vocab, mask_id=MASK, pad_id=PAD, special_ids=SPECIAL)
    e0 = [e.input_ids for e in ds.examples(0)]
    e1 = [e.input_ids for e in ds.examples(1)]
    assert e0 != e1  # new pairs each epoch
    assert e0 == [
        e.input_ids
        for e in PretrainingDataset(_synthetic_docs(100), cls_id=CLS, sep_id=SEP, max_seq_length=64, seed=7).examples(0)
    ]
    full = list(ds.batches(0, 16, masker))
    resumed = list(ds.batches(0, 16, masker, start=3))
    assert len(resumed) == len(full) - 3
    for x, y in zip(full[3:], resumed):
        assert all(torch.equal(x[k], y[k]) for k in x)
    again = list(ds.batches(1, 16, masker))
    assert not torch.equal(full[0]["input_ids"], again[0]["input_ids"])
    r0 = ds.batch_indices(0, 16, rank=0, world_size=2)
    r1 = ds.batch_indices(0, 16, rank=1, world_size=2)
    assert len(r0) == len(r1) and not set(map(tuple, r0)) & set(map(tuple, r1))


def test_tokenize_corpus_and_cache(tmp_path):
    tok = TinyTokenizer()
    c = Corpus("t", [["The first sentence here.", "   ", "Second one."], ["Another document, longer words."], []])
    docs = tokenize_corpus(c, tok, cache=tmp_path)
    assert len(docs) == 2 and len(docs[0]) == 2  # empty sentence and document dropped
    assert docs[0][0] == tok.convert_tokens_to_ids(tok.tokenize("The first sentence here."))
    assert list(tmp_path.glob("*.npz"))
    assert tokenize_corpus(c, tok, cache=tmp_path) == docs  # read back from the cache
    ds = PretrainingDataset.from_corpus(c, tok, max_seq_length=16)
    assert ds.examples(0)
    # A plain callable works too.
    assert tokenize_corpus(c, lambda s: [len(w) for w in s.split()], cache=False)[1] == [[7, 9, 6, 6]]
