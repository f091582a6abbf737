"""Fine-tuning the per-token heads on tiny models: a tagger learns tags that follow the words, a reader
learns where answers sit; both report their events in order, keep the best model, stop on Stop and
refuse settings that make no sense. The built-in data: Brown's parts of speech and the demo questions."""

import json
import random
import threading

import pytest

import bert
from bert.answering import windows
from bert.checkpoint.builtins import minilm_package_dir
from bert.data.qa_demo import qa_demo
from bert.data.squad import split_questions
from bert.data.tagged import TaggedData, split_tagged
from bert.errors import TrainingError
from bert.tagging import IGNORED
from bert.train import events as ev
from bert.train.batching import LENGTH_MULTIPLE
from bert.train.reader_task import ReaderTask
from bert.train.tagger_task import TaggerTask
from bert.train.task_head_args import TaskHeadArgs, for_task_head
from bert.train.task_head_train import train_task_head
from tests.helpers import REVIEW_WORDS, tiny_bundle, tiny_config

TAGS = ["O", "B-THING", "B-PER"]
THING, PER = {"film", "movie", "plot", "story"}, {"actor"}


def _tagged(n: int = 160, seed: int = 0) -> TaggedData:
    """Sentences of the review words, each word's tag fixed by the word: a thing, a person, or O."""
    r = random.Random(seed)
    sentences = [[r.choice(REVIEW_WORDS[5:]) for _ in range(r.randint(3, 9))] for _ in range(n)]
    tags = [[TAGS.index("B-THING" if w in THING else "B-PER" if w in PER else "O") for w in s] for s in sentences]
    return TaggedData(sentences, tags, TAGS, source="synthetic")


def _args(**kw) -> TaskHeadArgs:
    base = dict(threads=1, lr=2e-3, batch_size=16, epochs=3, evals=2, freeze_embeddings=False, max_length=24)
    return TaskHeadArgs(**{**base, **kw})


def test_a_tagger_learns_tags_that_follow_the_words():
    train, valid = split_tagged(_tagged(), 0.25)
    args = _args()
    events = list(train_task_head(tiny_bundle(), TaggerTask(train, valid, args), args))
    assert isinstance(events[0], ev.TaskHeadStart) and events[0].labels == TAGS and events[0].head == "tagger"
    evals = ev.of_type(events, ev.TaskHeadEval)
    assert len(evals) == 6 and all(0 <= e.scores["accuracy"] <= 1 for e in evals)
    done = events[-1]
    assert isinstance(done, ev.TaskHeadDone) and not done.stopped and done.error is None
    assert done.scores["accuracy"] > 0.95 and done.scores["f1"] > 0.9  # majority "O" is about 0.6
    assert done.scores["f1"] == max(e.scores["f1"] for e in evals)  # the best is kept
    report = done.report
    assert len(report["confusion"]) == 3 and set(report["precision"]) == set(TAGS)
    b = done.bundle
    assert b.is_tagger and b.labels == TAGS and "label every word" in b.card
    words = b.tag(["the actor liked the film plot"])[0]
    assert [w.tag for w in words] == ["O", "B-PER", "O", "O", "B-THING", "B-THING"]


def _batches(task, items: list[dict], pad_id: int, size: int):
    """(items, their batch) for `items` sorted by length, `size` at a time; each batch holds every
    token of its items (attention mask) and is at least as long as the longest."""
    items = sorted(items, key=lambda x: len(x["input_ids"]))
    for s in range(0, len(items), size):
        chunk = items[s : s + size]
        b = task.batch(chunk, pad_id)
        assert b["input_ids"].shape[1] >= max(len(x["input_ids"]) for x in chunk)
        assert b["attention_mask"].sum() == sum(len(x["input_ids"]) for x in chunk)
        yield chunk, b


def test_a_taggers_batches_come_in_lengths_of_8_up_to_max_length_with_every_label_kept():
    train, valid = split_tagged(_tagged(), 0.25)
    args = _args(max_length=10)
    task, tok = TaggerTask(train, valid, args), tiny_bundle().tokenizer
    items = task.inputs(tok)
    assert {len(x["input_ids"]) for x in items} == set(range(5, 11))  # 3 to 9 words, [CLS] and [SEP], cut at 10
    lengths = set()
    for chunk, b in _batches(task, items, tok.pad_id, 16):
        lengths.add(b["input_ids"].shape[1])
        assert b["labels"].shape == b["input_ids"].shape
        for row, x in zip(b["labels"].tolist(), chunk):
            assert row[: len(x["labels"])] == x["labels"] and set(row[len(x["labels"]) :]) <= {IGNORED}
    assert LENGTH_MULTIPLE == 8 and lengths == {8, args.max_length}  # 5-8 -> 8, 9-10 -> 16 capped at 10


def test_stop_ends_a_run_at_once_and_a_diverging_run_says_so():
    train, valid = split_tagged(_tagged(80), 0.25)
    stop = threading.Event()
    stop.set()
    events = list(train_task_head(tiny_bundle(), TaggerTask(train, valid, _args()), _args(), stop))
    assert events[-1].stopped and events[-1].step == 0 and not events[-1].scores  # ended at once, unscored
    events = list(train_task_head(tiny_bundle(), TaggerTask(train, valid, _args()), _args(lr=1e6, clip=1e9)))
    errors = ev.of_type(events, ev.Error)
    assert errors and "too high" in errors[0].message and events[-1].error


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(head="pretraining"), "head must be"),
        (dict(max_length=4), "at least 8"),
        (dict(max_length=1000), "positions"),
        (dict(lr=-1.0), "learning rate"),
        (dict(head="reader", max_length=64, stride=40), "stride"),
    ],
)
def test_settings_that_make_no_sense_are_refused(change, message):
    train, valid = split_tagged(_tagged(20), 0.25)
    args = _args(**change)
    with pytest.raises(TrainingError, match=message):
        list(train_task_head(tiny_bundle(), TaggerTask(train, valid, args), args))


def _tiny_minilm() -> bert.Bundle:
    """A random tiny model on MiniLM's vocabulary (real words for the demo questions)."""
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    return tiny_bundle(config=tiny_config(len(tok), max_position_embeddings=128), words=list(tok.vocab))


def test_the_demo_questions_answer_inside_their_passages():
    d = qa_demo(passages=30)
    assert len(d) == 150 and "templates" in d.notes[0]
    for q in d.questions:
        ((text, start),) = q.answers
        assert q.context[start : start + len(text)] == text


def test_reader_inputs_point_at_the_answer_or_at_cls():
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    data = qa_demo(passages=6)
    task = ReaderTask(data, data, for_task_head("reader", max_length=48, stride=16))
    items = task.inputs(tok)
    assert len(items) > len(data)  # the passages did not fit one window of 48
    at_cls = 0
    k = 0
    for q in data.questions:
        for w in windows(tok, q.question, q.context, 48, 16):
            s, e = items[k]["start_positions"], items[k]["end_positions"]
            if s == 0:
                at_cls += 1
            else:
                a, b = w.char_span(s, e)
                assert q.context[a:b].lower() == q.answers[0][0].lower()
            k += 1
    assert 0 < at_cls < len(items)


def test_a_readers_batches_come_in_lengths_of_8_up_to_max_length():
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    data = qa_demo(passages=6)
    task = ReaderTask(data, data, for_task_head("reader", max_length=44, stride=16))
    lengths = set()
    for chunk, b in _batches(task, task.inputs(tok), tok.pad_id, 4):
        lengths.add(b["input_ids"].shape[1])
        assert b["start_positions"].tolist() == [x["start_positions"] for x in chunk]
    assert 44 in lengths and all(T % LENGTH_MULTIPLE == 0 for T in lengths - {44}), lengths  # 41-44 -> 48, capped


def test_a_readers_windows_are_counted_before_any_is_built_and_bounded(monkeypatch):
    """A long passage read in short windows by many questions (the review: 1.875 million windows built
    before step 1, GBs): counted first, exactly as `windows` makes them, and refused over MAX_WINDOWS."""
    from bert.data.squad import read_squad
    from bert.errors import DataError
    from bert.train import reader_task

    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    data = qa_demo(passages=6)
    args = for_task_head("reader", max_length=48, stride=16)
    assert reader_task.count_windows(tok, data, 48, 16) == len(ReaderTask(data, data, args).inputs(tok))
    bang = "!" * 2000
    qas = [{"id": str(i), "question": f"q{i}?", "answers": [{"text": "!", "answer_start": 5}]} for i in range(300)]
    hostile = read_squad(json.dumps({"data": [{"paragraphs": [{"context": bang, "qas": qas}]}]}).encode())
    built = []
    monkeypatch.setattr(reader_task, "windows", lambda *a: built.append(a) or windows(*a))
    with pytest.raises(DataError, match=r"these questions make 23,\d{3} windows of 48 tokens .* at most 20,000"):
        monkeypatch.setattr(reader_task, "MAX_WINDOWS", 20_000)
        ReaderTask(hostile, hostile, args).inputs(tok)
    assert built == [], "refused before a window was built"


def test_a_reader_trains_and_answers_with_spans_of_the_passage():
    train, valid = split_questions(qa_demo(passages=16), 0.25)
    args = for_task_head("reader", threads=1, lr=2e-3, epochs=2, evals=1, max_length=64, stride=16, batch_size=8)
    events = list(train_task_head(_tiny_minilm(), ReaderTask(train, valid, args), args))
    steps = ev.of_type(events, ev.TaskHeadStep)
    assert steps[-1].loss_smooth < steps[0].loss  # it learns something
    done = events[-1]
    assert isinstance(done, ev.TaskHeadDone) and set(done.scores) == {"exact_match", "f1"}
    assert 0 <= done.scores["exact_match"] <= done.scores["f1"] <= 100
    ex = done.report["examples"][0]
    assert len(ex["tokens"]) == len(ex["start_probs"]) == len(ex["end_probs"])
    text, a, b = ex["predicted"]
    assert ex["context"][a:b] == text
    assert done.bundle.is_reader and "find the answer" in done.bundle.card


@pytest.mark.parametrize("head", ["tagger", "reader"])
@pytest.mark.parametrize("phase", ["inputs", "evaluate"])
def test_stop_during_data_preparation_or_an_evaluation_ends_the_run_stopped(head, phase):
    """A Stop pressed while the task makes its inputs, or while it scores the model (its only
    scoring: one an epoch, one epoch): the run ends stopped, no step after a Stop in preparation,
    and no second scoring after an interrupted one (no scoring of the whole model again with
    Stop ignored); the model is handed over, unscored."""
    if head == "tagger":
        args = _args(epochs=1, evals=1)
        task = TaggerTask(*split_tagged(_tagged(80), 0.25), args)
        base = tiny_bundle()
    else:
        args = for_task_head("reader", threads=1, epochs=1, evals=1, max_length=64, stride=16, batch_size=8)
        task = ReaderTask(*split_questions(qa_demo(passages=8), 0.25), args)
        base = _tiny_minilm()
    stop, calls = threading.Event(), []
    real = getattr(task, phase)

    def pressed(*a):
        calls.append(phase)
        stop.set()  # Stop, pressed while this phase runs
        return real(*a)

    setattr(task, phase, pressed)
    done = None
    for e in train_task_head(base, task, args, stop):
        done = e
        if phase == "inputs":
            assert not isinstance(e, ev.TaskHeadStep), "no step after a Stop in data preparation"
        assert not isinstance(e, ev.TaskHeadEval), "no scoring finished after a Stop"
    assert isinstance(done, ev.TaskHeadDone) and done.stopped and not done.scores and done.bundle is not None
    assert calls == [phase], calls
