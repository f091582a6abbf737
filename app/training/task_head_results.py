"""A per-token head's finished run on the Fine-tuning page: its scores and curves, then for a tagger
the per-tag precision and recall, the confusion matrix, the worst sentences and a try-it box that
colours each word by its tag and shows where a picked word looks; for a reader the answered
validation questions (the predicted span marked in its passage, the gold answer beside it, the
start and end probabilities of every token) and a try-it box for a typed passage and question.
Everything typed or uploaded is escaped."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from bert.tagging import word_attention
from bert.train.events import TaskHeadStart
from bert.train.events import last as last_event
from bert.train.tag_metrics import is_bio

from ..export.task_head_notebooks import reader_report, tagger_report
from ..figures import training as training_figures
from ..figures.core import esc, values_bar
from ..figures.task_heads import span_probs, task_head_curves
from ..formatting import clean_text, md_escape
from ..jobs.spec import TASK_HEAD
from ..run_session import controls
from ..ui import show_figure
from ..ui.errors import show_errors
from . import page as view

COLOURS = ["blue", "green", "orange", "red", "violet", "gray", "rainbow"]
# the Hugging Face download opens with the head's own class
PAGE = controls.TrainPage(TASK_HEAD, "hd", "heads", "AutoModelForTokenClassification / AutoModelForQuestionAnswering")
TRY_SENTENCE = "The old man saw a small dog in the park yesterday."
TRY_PASSAGE = "Clara Novak was born in Porto in 1901. Clara studied botany in Graz and later worked as a pilot."
TRY_QUESTION = "Where was Clara Novak born?"


def _pct(v, scale: float = 1.0) -> str:
    return "–" if v is None else f"{v * scale:.1f} %"


NOT_ENTITIES = (
    "No entity F1: it scores entities, tags of the form B-PER, I-PER, O; these tags are not, so each "
    "word's tag is scored on its own (word accuracy, and per tag below)."
)


def task_head_scores(is_tagger: bool, scores: dict, tags: list[str]) -> tuple[list[tuple[str, str]], str]:
    """A head's score metrics (label, value) and a note on one left out: a tagger's entity F1
    exists only for entity tags (is_bio), so for other tags it is left out and the note says why;
    "" when nothing was."""
    if not is_tagger:
        return [("exact match", _pct(scores.get("exact_match"))), ("F1", _pct(scores.get("f1")))], ""
    metrics = [("word accuracy", _pct(scores.get("accuracy"), 100))]
    if not is_bio(tags):
        return metrics, NOT_ENTITIES
    return [*metrics, ("entity F1", _pct(scores.get("f1"), 100))], ""


def show_task_head_result(res: dict) -> None:
    done, b = res["done"], res["bundle"]
    start = last_event(res["metrics"], TaskHeadStart)
    metrics, note = task_head_scores(b.is_tagger, done.scores or {}, b.labels or [])
    metrics.append(("best step", f"{done.best_step} of {done.steps}"))
    caption = f"{done.train_seconds:.0f} s of training" + (
        f" on {start.train_examples:,} examples ({start.train_inputs:,} model inputs), "
        f"scored on {start.valid_examples:,}."
        if start
        else "."
    )
    caption = f"{caption} {note}".strip()
    view.result_summary(PAGE, res, metrics, caption, task_head_curves(res["metrics"], done.steps), notebook_of(res))
    with show_errors("the results"):
        (_tagger_views if b.is_tagger else _reader_views)(res)
    view.keep_it(PAGE, res)


def notebook_of(res: dict):
    """The run's notebook builder, its try-it input as typed so far (the box is drawn below);
    None for a run never scored."""
    done, jid, ss = res["done"], res["job_id"], st.session_state
    if not done.report:
        return None
    run = dict(name=res["name"], key=res["key"], events=res["metrics"], scores=done.scores or {}, steps=done.steps)
    if res["bundle"].is_tagger:
        return partial(tagger_report, **run, report=done.report, sentence=ss.get(f"hd_try_{jid}", TRY_SENTENCE).strip())
    return partial(
        reader_report,
        **run,
        report=done.report,
        question=ss.get(f"hd_question_{jid}", TRY_QUESTION).strip(),
        passage=ss.get(f"hd_passage_{jid}", TRY_PASSAGE).strip(),
    )


def _tag_colours(tags: list[str]) -> dict[str, str]:
    return {t: COLOURS[k % len(COLOURS)] for k, t in enumerate(sorted(tags))}


def _tagged_line(words: list[str], tags: list[str], colours: dict[str, str], wrong: list[bool] | None = None) -> str:
    """Markdown of words coloured by tag, each with its tag after it (a wrong one struck with the gold)."""
    out = []
    for k, (w, t) in enumerate(zip(words, tags)):
        mark = "**" if wrong and wrong[k] else ""
        out.append(f":{colours.get(t, 'gray')}-background[{mark}{md_escape(w)}{mark}] {md_escape(t)}")
    return " ".join(out)


def _tagger_views(res: dict) -> None:
    r, b = res["done"].report, res["bundle"]
    colours = _tag_colours(r.get("tags", b.labels))
    st.subheader("Per tag")
    table = pd.DataFrame(
        {
            "tag": r["tags"],
            "precision": [r["precision"][t] for t in r["tags"]],
            "recall": [r["recall"][t] for t in r["tags"]],
            "words in validation": [r["support"][t] for t in r["tags"]],
        }
    )
    st.dataframe(table, hide_index=True, column_config={c: st.column_config.NumberColumn(format="percent")
                                                         for c in ("precision", "recall")})  # fmt: skip
    if r.get("entity"):
        e = r["entity"]
        st.caption(
            f"Entities (seqeval's rules: an entity counts only when its type and both ends are right): "
            f"precision {e['precision']:.1%}, recall {e['recall']:.1%}, F1 {e['f1']:.1%}."
        )
    show_figure.show(
        training_figures.confusion_matrix(r["confusion"], r["tags"]), f"heads-confusion-{res['job_id']}",
        key=f"hd_conf_{res['job_id']}",
    )  # fmt: skip
    if r.get("words_cut"):
        st.caption(f"{r['words_cut']:,} validation words lay past the token limit and were not scored.")
    st.subheader("The worst sentences")
    for row in r.get("worst", []):
        wrong = [g != p for g, p in zip(row["gold"], row["predicted"])]
        st.markdown(_tagged_line(row["words"], row["predicted"], colours, wrong))
        st.caption("gold: " + md_escape(" ".join(f"{w}/{t}" for w, t in zip(row["words"], row["gold"]))))
    st.subheader("Try it")
    text = st.text_input("A sentence", TRY_SENTENCE, key=f"hd_try_{res['job_id']}", max_chars=400)
    with show_errors("tagging the sentence"):
        words = b.tag([clean_text(text)])[0]
        st.markdown(_tagged_line([w.word for w in words], [w.tag for w in words], colours))
        st.dataframe(
            pd.DataFrame(words, columns=["word", "tag", "prob"]), hide_index=True,
            column_config={"prob": st.column_config.NumberColumn("probability", format="percent")},
        )  # fmt: skip
        _word_attention(b, clean_text(text), res["job_id"])


def _word_attention(b, text: str, job_id: str) -> None:
    """Where one picked word of the typed sentence looks: a layer's head, or the mean of its heads."""
    wa = word_attention(b, text)
    L, H = wa.weights.shape[:2]
    st.markdown("**Where a word looks.** Pick a word of the sentence: its attention over the sentence.")
    pick, lay, head = st.columns(3)
    n = len(wa.words)
    k = pick.selectbox(
        "Word", range(n), format_func=lambda i: f"{wa.words[i]} ({i + 1})", key=f"hd_att_word_{job_id}_{n}"
    )
    layer = lay.selectbox(
        "Layer", range(L), index=L - 1, format_func=lambda i: f"layer {i + 1}", key=f"hd_att_layer_{job_id}"
    )
    h = head.selectbox("Head", [-1, *range(H)], key=f"hd_att_head_{job_id}",
                       format_func=lambda i: f"head {i + 1}" if i >= 0 else "mean of its heads")  # fmt: skip
    row = (wa.weights[layer].mean(0) if h < 0 else wa.weights[layer, h])[k]
    which = f"head {h + 1}" if h >= 0 else "mean of its heads"
    fig = values_bar(wa.labels, row.tolist(), title=esc(f"Where «{wa.words[k]}» looks: layer {layer + 1}, {which}"),
                     y_title="attention", range_y=[0, 1])  # fmt: skip
    show_figure.show(fig, f"heads-word-attention-{job_id}", key=f"hd_att_fig_{job_id}")
    st.caption(
        "Read from the word's first piece, where its tag is read; a word of several pieces gets the sum of "
        "its pieces' attention. The bars sum to 1."
    )


def _marked(context: str, a: int, b: int) -> str:
    """The passage in markdown with characters a..b marked."""
    if b <= a:
        return md_escape(context)
    return f"{md_escape(context[:a])}:green-background[**{md_escape(context[a:b])}**]{md_escape(context[b:])}"


def _reader_views(res: dict) -> None:
    b, examples = res["bundle"], res["done"].report.get("examples", [])
    st.subheader("Answered validation questions")
    for k, ex in enumerate(examples):
        text, a, z = ex["predicted"]
        gold = ", ".join(t for t, _ in ex["gold"]) or "(no answer)"
        with st.expander(md_escape(f"{ex['question']} → {text or '(no answer)'}"), expanded=k == 0):
            st.markdown(_marked(ex["context"], a, z))
            st.caption(
                md_escape(
                    f"Gold: {gold}. Exact match {ex['exact_match']:.0f}, F1 {ex['f1']:.2f}, score {ex['score']:.2f}."
                )
            )
            show_figure.show(
                span_probs(ex["tokens"], ex["start_probs"], ex["end_probs"]), f"heads-span-{res['job_id']}-{k}",
                key=f"hd_span_{res['job_id']}_{k}",
            )  # fmt: skip
    st.subheader("Try it")
    passage = st.text_area("A passage", TRY_PASSAGE, key=f"hd_passage_{res['job_id']}", max_chars=5000)
    question = st.text_input("A question", TRY_QUESTION, key=f"hd_question_{res['job_id']}", max_chars=300)
    with show_errors("answering the question"):
        ans = b.answer(clean_text(question, "the question"), clean_text(passage, "the passage"))
        st.markdown(_marked(passage, ans.start, ans.end))
        st.caption(md_escape(f"Answer: {ans.text!r} (characters {ans.start}-{ans.end}, score {ans.score:.2f})"))
        w = ans.windows[ans.window]
        lo, hi = w.context_start, w.context_start + w.n
        show_figure.show(
            span_probs(w.enc.tokens[lo:hi], ans.start_probs[ans.window][lo:hi].tolist(),
                       ans.end_probs[ans.window][lo:hi].tolist()),
            f"heads-try-{res['job_id']}", key=f"hd_try_span_{res['job_id']}",
        )  # fmt: skip
