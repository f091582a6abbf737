"""The per-token heads against transformers on the same weights: a tagger (BertForTokenClassification)
and a reader (BertForQuestionAnswering) loaded from transformers' folders, exported back, and read
as words (`tag`, equal to pipeline("token-classification") at each word's first piece) and spans
(`answer`, SQuAD's rule; the same span as pipeline("question-answering") in every window)."""

import shutil

import numpy as np
import pytest
import torch

import bert
from bert.answering import MAX_ANSWER_TOKENS, best_span, windows
from bert.checkpoint.builtins import minilm_package_dir
from bert.tagging import first_pieces, join_words, word_attention, word_labels
from bert.task_models import BertForSequenceClassification, BertForTokenClassification
from tests.helpers import TINY_SIZES, tiny_config

transformers = pytest.importorskip("transformers")

TAGS = ["O", "B-PER", "I-PER", "B-LOC"]
TEXTS = ["Ada Lovelace met Charles Babbage in London.", "unaffable tokenization, of café prices!", "Paris"]
QUESTION = "Where did Ada meet Charles?"
PASSAGE = "Ada Lovelace met Charles Babbage in London in 1833, at a party. " * 3


def _hf_folder(tmp_path, cls, **config):
    """A random tiny transformers model of class `cls` on MiniLM's vocabulary, saved with its tokenizer."""
    vocab = minilm_package_dir() / "vocab.txt"
    tok = transformers.BertTokenizer(str(vocab), do_lower_case=True)
    cfg = transformers.BertConfig(vocab_size=len(tok), **{**TINY_SIZES, "max_position_embeddings": 128}, **config)
    torch.manual_seed(0)
    model = getattr(transformers, cls)(cfg).eval()
    with torch.no_grad():  # heads that tell tags and positions apart clearly
        head = model.classifier if hasattr(model, "classifier") else model.qa_outputs
        head.weight.normal_(0, 1.0)
    folder = tmp_path / cls
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    shutil.copy(vocab, folder / "vocab.txt")  # transformers 5 writes tokenizer.json only; hub BERTs carry both
    return folder, model, tok


def _hf_encode(tok, texts, pair=None):
    return tok(texts, pair, padding=True, return_tensors="pt")


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    labels = dict(enumerate(TAGS))
    return _hf_folder(
        tmp_path_factory.mktemp("tagger"),
        "BertForTokenClassification",
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    return _hf_folder(tmp_path_factory.mktemp("reader"), "BertForQuestionAnswering")


def test_a_transformers_tagger_loads_as_ours_with_equal_probabilities(tagger):
    folder, theirs, tok = tagger
    ours = bert.load(str(folder))
    assert ours.is_tagger and ours.head.key == "tagger" and ours.labels == TAGS
    assert not any("freshly" in n for n in ours.notes)
    enc = _hf_encode(tok, TEXTS)
    with torch.no_grad():
        want = torch.softmax(theirs(**enc).logits, -1)
    got = ours.model(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"]).probs
    assert got.shape == want.shape == (3, enc["input_ids"].shape[1], len(TAGS))
    assert (got - want).abs().max().item() <= 1e-4
    assert want.max(-1).values.mean() > 0.5  # not a uniform 1/4: the comparison means something


def test_our_tagger_exports_to_a_folder_transformers_loads(tagger, tmp_path):
    folder, _, tok = tagger
    ours = bert.load(str(folder))
    out = bert.export_hf(ours, tmp_path / "export")
    back = transformers.AutoModelForTokenClassification.from_pretrained(out, attn_implementation="eager").eval()
    assert type(back).__name__ == "BertForTokenClassification"
    enc = _hf_encode(tok, TEXTS)
    with torch.no_grad():
        want = torch.softmax(back(**enc).logits, -1)
    assert (ours.model(**enc).probs - want).abs().max().item() <= 1e-4
    saved = bert.save(ours, tmp_path / "ours")
    assert bert.load(str(saved)).is_tagger  # our own format keeps the head too


def test_tag_equals_the_token_classification_pipeline_at_each_words_first_piece(tagger):
    folder, _, _ = tagger
    ours = bert.load(str(folder))
    pipe = transformers.pipeline("token-classification", model=str(folder), aggregation_strategy="none")
    tagged = ours.tag(TEXTS)
    for text, words in zip(TEXTS, tagged):
        by_start = {t["start"]: t for t in pipe(text, ignore_labels=[])}
        starts = [ours.tokenizer.words_with_offsets(text)[k][1][0] for k in range(len(words))]
        assert [w.word for w in words] == [text[s:e] for _, (s, e) in ours.tokenizer.words_with_offsets(text)]
        for (word, tag, prob), s in zip(words, starts):
            assert by_start[s]["entity"] == tag, word
            assert abs(by_start[s]["score"] - prob) <= 1e-4, word
    assert [w.word for w in tagged[1]][:2] == ["unaffable", "tokenization"]  # several pieces, one word


def test_word_attention_reads_transformers_attention_from_each_words_first_piece(tagger):
    folder, _, tok = tagger
    ours = bert.load(str(folder))
    theirs = transformers.AutoModelForTokenClassification.from_pretrained(folder, attn_implementation="eager").eval()
    text = TEXTS[1]  # words of several pieces and punctuation
    wa = word_attention(ours, text)
    assert wa.words == [w.word for w in ours.tag([text])[0]] and wa.labels == ["[CLS]", *wa.words, "[SEP]"]
    enc = _hf_encode(tok, [text])
    with torch.no_grad():
        att = torch.stack(theirs(**enc, output_attentions=True).attentions, 1)[0]  # (L, H, T, T)
    word_ids = enc.word_ids(0)
    pieces = [[i for i, w in enumerate(word_ids) if w == n] for n in sorted({w for w in word_ids if w is not None})]
    L, H, T, _ = att.shape
    assert wa.weights.shape == (L, H, len(wa.words), len(wa.words) + 2) and len(pieces) == len(wa.words)
    for k, own in enumerate(pieces):  # from the word's first piece to [CLS], each word's pieces summed, [SEP]
        row = att[:, :, own[0]]  # (L, H, T)
        want = torch.stack([row[..., 0], *(row[..., p].sum(-1) for p in pieces), row[..., T - 1]], -1)
        assert (wa.weights[:, :, k] - want).abs().max().item() <= 1e-5
    assert torch.allclose(wa.weights.sum(-1), torch.ones(L, H, len(wa.words)), atol=1e-5)
    with pytest.raises(bert.InputError):
        word_attention(ours, "   ")


def test_labels_sit_on_each_words_first_piece_only():
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    words = ["unaffable", "Babbage", ",", "U.S.", "ok"]
    text, spans = join_words(words)
    enc = tok.encode(text)
    firsts = first_pieces(enc, spans)
    labels = word_labels(enc, firsts, [1, 2, 0, 3, 0])
    assert [enc.tokens[i] for i in firsts] == ["una", "ba", ",", "u", "ok"]
    assert [x for x in labels if x != -100] == [1, 2, 0, 3, 0]
    assert labels[0] == labels[-1] == -100 and len(labels) == len(enc.ids) > len(words) + 2


def test_a_transformers_reader_loads_as_ours_with_equal_start_and_end_logits(reader, tmp_path):
    folder, theirs, tok = reader
    ours = bert.load(str(folder))
    assert ours.is_reader and ours.head.key == "reader" and not any("freshly" in n for n in ours.notes)
    enc = _hf_encode(tok, [QUESTION, "Who?"], [PASSAGE[:80], "Ada met Charles."])
    with torch.no_grad():
        want = theirs(**enc)
    got = ours.model(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
    assert (got.start_logits - want.start_logits).abs().max().item() <= 1e-4
    assert (got.end_logits - want.end_logits).abs().max().item() <= 1e-4
    out = bert.export_hf(ours, tmp_path / "export")
    back = transformers.AutoModelForQuestionAnswering.from_pretrained(out, attn_implementation="eager").eval()
    with torch.no_grad():
        again = back(**enc)
    assert (got.start_logits - again.start_logits).abs().max().item() <= 1e-4
    assert (got.end_logits - again.end_logits).abs().max().item() <= 1e-4


def test_answer_is_the_best_valid_span_of_every_window(reader):
    ours = bert.load(str(reader[0]))
    a = ours.answer(QUESTION, PASSAGE, max_length=32, stride=6)
    assert len(a.windows) > 2  # the passage was read in several windows
    assert 0 <= a.start < a.end <= len(PASSAGE) and a.text == PASSAGE[a.start : a.end] and a.text
    # the brute force over every window's every valid span finds the same score
    best = float("-inf")
    for w in a.windows:
        with torch.no_grad():
            out = ours.model(**_one_window(w))
        lo, hi = w.context_start, w.context_start + w.n
        for i in range(lo, hi):
            for j in range(i, min(hi, i + MAX_ANSWER_TOKENS)):
                best = max(best, float(out.start_logits[0, i] + out.end_logits[0, j]))
    assert abs(a.score - best) <= 1e-4
    w = a.windows[a.window]
    assert w.enc.tokens[w.context_start - 1] == "[SEP]" and w.enc.type_ids[w.context_start] == 1
    assert all(abs(float(p.sum()) - 1) < 1e-5 for p in a.start_probs + a.end_probs)


def _one_window(w):
    return {
        "input_ids": torch.tensor([w.enc.ids]),
        "token_type_ids": torch.tensor([w.enc.type_ids]),
        "attention_mask": torch.ones(1, len(w.enc.ids), dtype=torch.long),
    }


def test_windows_overlap_by_the_stride_and_cover_the_passage():
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    ws = windows(tok, QUESTION, PASSAGE, max_length=40, stride=8)
    n_pass = len(tok.encode(PASSAGE, add_special_tokens=False, max_length=None).ids)
    assert all(len(w.enc.ids) <= 40 for w in ws)
    assert [w.first for w in ws] == [k * (ws[0].n - 8) for k in range(len(ws))]
    assert ws[-1].first + ws[-1].n == n_pass
    w = ws[1]  # an answer inside a window maps to its tokens and back to the same characters
    i, j = w.context_start + 2, w.context_start + 4
    assert w.token_span(*w.char_span(i, j)) == (i, j)
    assert (
        ws[0].token_span(*ws[-1].char_span(ws[-1].context_start + ws[-1].n - 1, ws[-1].context_start + ws[-1].n - 1))
        is None
    )


def test_best_span_never_ends_before_it_starts_nor_runs_past_the_limit():
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    w = windows(tok, "q", "a b c d e f g h", max_length=20)[0]
    T = len(w.enc.ids)
    start, end = torch.zeros(T), torch.zeros(T)
    start[w.context_start + 5], end[w.context_start + 1] = 9.0, 8.0  # the best ends sit before the starts
    i, j, _ = best_span(start, end, w)
    assert w.context_start <= i <= j < w.context_start + w.n
    i, j, _ = best_span(torch.arange(T, dtype=torch.float).neg(), torch.arange(T, dtype=torch.float), w, 3)
    assert (i, j) == (w.context_start, w.context_start + 2)
    start[0] = end[0] = 50.0  # [CLS] is never an answer's token
    assert best_span(start, end, w)[0] >= w.context_start


# (question, passage, window, stride): two passages in one window, one read in several windows
QA_CASES = [
    (QUESTION, "Ada Lovelace met Charles Babbage in London in 1833, at a party.", 128, 32),
    ("When was the tower finished?", "The Eiffel Tower stands in Paris; it was finished in 1889 for a fair.", 128, 32),
    (
        "Who wrote the first program?",
        "Charles Babbage designed the Analytical Engine, a mechanical computer, in 1837. Ada Lovelace "
        "translated a paper about it and added notes; one of them holds what is called the first program, "
        "a way to compute Bernoulli numbers. The engine itself was never built in his lifetime, but a part "
        "of it was assembled by his son Henry after his death in 1871.",
        48,
        12,
    ),
]


def _pipeline_spans(model, tok, question, passage, window, stride):
    """Per window, the (start char, end char, score) of pipeline("question-answering")'s answer, by
    that pipeline's steps as transformers 4 ran them (transformers 5 removed the task; its span
    decoder stays, used here): windows by the tokenizer's stride, logits by transformers' model,
    then select_starts_ends with top_k 1, max_answer_len ours, and align_to_words off (character
    offsets of the span's own tokens, as ours are)."""
    from transformers.pipelines.document_question_answering import select_starts_ends

    enc = tok(
        question, passage, truncation="only_second", max_length=window, stride=stride, padding="longest",
        return_overflowing_tokens=True, return_offsets_mapping=True, return_tensors="pt",
    )  # fmt: skip
    with torch.no_grad():
        out = model(
            input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"], attention_mask=enc["attention_mask"]
        )
    spans = []
    for k in range(len(enc["input_ids"])):
        p_mask = np.array([s != 1 for s in enc.sequence_ids(k)], dtype=int)
        p_mask[0] = 0  # [CLS] takes part in the softmax, as in the pipeline
        s, e, score, _ = select_starts_ends(
            out.start_logits[k : k + 1].numpy(), out.end_logits[k : k + 1].numpy(), p_mask,
            enc["attention_mask"][k : k + 1].numpy(), max_answer_len=MAX_ANSWER_TOKENS,
        )  # fmt: skip
        offsets = enc["offset_mapping"][k]
        spans.append((int(offsets[s[0]][0]), int(offsets[e[0]][1]), float(score[0])))
    return enc, spans


@pytest.mark.parametrize("question, passage, window, stride", QA_CASES)
def test_answer_picks_the_question_answering_pipelines_span(reader, question, passage, window, stride):
    """Same windows, same best span in every window. Two rules differ, by design: the pipeline
    scores a span P(start) P(end) with softmaxes over the window's passage tokens and [CLS] (ours:
    `prob`, over all the window's tokens; `score`, the logit sum) and picks the window of the best
    such product; ours picks the best logit sum, SQuAD's BERT rule. Its max_answer_len is 15 by
    default (ours 30) and it widens a span to whole words by default."""
    folder, theirs, tok = reader
    ours = bert.load(str(folder))
    a = ours.answer(question, passage, max_length=window, stride=stride)
    enc, spans = _pipeline_spans(theirs, tok, question, passage, window, stride)
    assert [w.enc.ids for w in a.windows] == [[i for i, m in zip(r, ms) if m] for r, ms in zip(
        enc["input_ids"].tolist(), enc["attention_mask"].tolist())]  # fmt: skip
    assert (len(a.windows) > 1) == (passage == QA_CASES[-1][1])
    logit_sums = []
    for k, w in enumerate(a.windows):
        with torch.no_grad():
            out = ours.model(**_one_window(w))
        i, j, score = best_span(out.start_logits[0], out.end_logits[0], w)
        assert w.char_span(i, j) == spans[k][:2], k  # the pipeline's span in this window
        logit_sums.append(score)
        keep = torch.tensor([seq == 1 for seq in w.enc.sequence_ids])
        keep[0] = True  # renormalised over the pipeline's tokens, our probabilities give its score
        ps, pe = a.start_probs[k], a.end_probs[k]
        assert float(ps[i] / ps[keep].sum() * pe[j] / pe[keep].sum()) == pytest.approx(spans[k][2], rel=1e-3)
    best = max(range(len(spans)), key=lambda k: logit_sums[k])
    assert (a.start, a.end, a.text) == (*spans[best][:2], passage[spans[best][0] : spans[best][1]])
    assert a.score == pytest.approx(logit_sums[best], abs=1e-4)


@pytest.mark.parametrize(
    "cls, says",
    [(BertForSequenceClassification, "a classifier needs labels"), (BertForTokenClassification, "a tagger needs tags")],
)
def test_a_labelled_head_without_labels_is_refused_in_its_own_words(cls, says):
    with pytest.raises(bert.InputError, match=says):
        cls(tiny_config(20))
