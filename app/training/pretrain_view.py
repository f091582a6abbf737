"""The Pre-training page's parts: the plateau line and a finished run's results (curves, probe
table, try it; a next-word run's "Continue this text", app/training/next_word_view.py); its Start
button is app/training/start.py.

The page (pages/pretrain.py) lays them out; what they compute is in app/training/ and bert/.
"""

import re
from functools import partial

import streamlit as st

from bert.train.events import PretrainEval, PretrainStart, of_type
from bert.train.events import last as last_event
from bert.train.next_word import next_word_probe
from bert.train.plateau import plateau_exit
from bert.train.pretrain_args import PretrainArgs
from bert.train.pretrain_eval import probe_predictions

from ..export.training_notebooks import pretrain_report
from ..figures import training
from ..figures.masked_lm import mlm_topk_bar
from ..formatting import md_escape
from ..jobs.spec import PRETRAIN
from ..run_session import controls
from ..run_session import session as ts
from ..run_session.progress import probe_frame
from ..ui import show_figure
from ..ui.widgets import SENTENCE_CHARS
from . import page as view
from .next_word_view import continue_box, is_next_word

PAGE = controls.TrainPage(PRETRAIN, "pt", "pretrain", hf_class="BertForPreTraining")


def plateau_line(metrics) -> None:
    """Say when the run left the unigram plateau (bert/train/plateau.py), or that it has not yet."""
    evals, start = of_type(metrics, PretrainEval), last_event(metrics, PretrainStart)
    if not evals:
        return
    first = plateau_exit(evals, start.baseline_token if start else None)
    next_word = start is not None and start.objective == "next-word"
    if first is None:
        st.caption(
            "Still on the plateau: the guesses are mostly the most frequent token. The run leaves it when its top-1 "
            "is twice that baseline and the probe's guesses differ, three evaluations in a row."
        )
    elif next_word:
        st.success(
            f"It left the plateau at step {first.step:,}: next-word top-1 {first.mlm_top1:.1%} against "
            f"{first.baseline_top1:.1%} for always guessing the most frequent token, and its guesses after the "
            "probe's words now differ from word to word: it has begun to read its left.",
            icon=":material/trending_up:",
        )
    else:
        st.success(
            f"It left the plateau at step {first.step:,}: top-1 {first.mlm_top1:.1%} against "
            f"{first.baseline_top1:.1%} for always guessing the most frequent token, and the probe's guesses now "
            "differ from gap to gap. It has begun to use the words around each gap: first where the small words "
            "and punctuation go; content words take much longer.",
            icon=":material/trending_up:",
        )


def try_it(res: dict) -> None:
    b, jid, args = res["bundle"], res["job_id"], res["info"]["args"]
    st.subheader("Try it")
    key = f"pt_try_{jid}"
    ts.seed(key, args.probe or "the [MASK] is on the table .")
    text = st.text_input("A sentence with [MASK]", key=key, max_chars=SENTENCE_CHARS)
    ts.remember(key)
    text = re.sub(r"\[mask\]", "[MASK]", text or "", flags=re.IGNORECASE)
    if "[MASK]" not in text:
        st.info("Put [MASK] where a word is missing.")
        return
    preds = probe_predictions(b, text[:2000], k=5)
    cols = st.columns(min(3, max(1, len(preds))))
    for i, cands in enumerate(preds[:6]):
        show_figure.show(
            mlm_topk_bar([t for t, _ in cands], [p for _, p in cands], f"[MASK] {i + 1}"),
            f"pretrain-try-bar-{jid}-{i}",
            where=cols[i % len(cols)],
            key=f"pt_try_bar_{jid}_{i}",
        )


def report_notebook(res: dict) -> partial:
    """The run's "Open as a notebook": its curves, final scores and probe table, and "Try it" on its model."""
    return partial(
        pretrain_report,
        name=res["name"],
        key=res["key"],
        events=res["metrics"],
        done=res["done"],
        args=res["info"]["args"],
    )


def show_result(res: dict) -> None:
    fin, info, cfg = res["done"], res["info"], res["bundle"].config  # fin: a bert.train.events.PretrainDone
    args: PretrainArgs = info["args"]
    if is_next_word(args):
        return show_next_word_result(res)
    view.result_summary(
        PAGE,
        res,
        [
            ("Steps", f"{fin.step or 0:,}"),
            ("Masked-LM top-1", f"{fin.mlm_top1:.1%}" if fin.mlm_top1 is not None else "–"),
            ("Masked-LM top-5", f"{fin.mlm_top5:.1%}" if fin.mlm_top5 is not None else "–"),
            ("Next-sentence accuracy", f"{fin.nsp_acc:.1%}" if fin.nsp_acc is not None else "–"),
        ],
        f"**{md_escape(res['name'])}**: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, "
        f"{cfg.num_attention_heads} heads, vocabulary {cfg.vocab_size:,}, trained on "
        f"{md_escape(info.get('corpus', '?'))}. It is in the sidebar's model list for this session.",
        training.pretrain_curves(res["metrics"], args.steps),
        notebook=report_notebook(res),
    )
    plateau_line(res["metrics"])
    probes = probe_frame(res["metrics"])
    if len(probes):
        st.markdown(f"**Probe:** {md_escape(args.probe)}")
        st.dataframe(probes, hide_index=True, width="stretch")
    try_it(res)
    view.keep_it(PAGE, res)


def show_next_word_result(res: dict) -> None:
    """A next-word run's results: its scores and curves, the probe table, the continue box."""
    fin, info, cfg = res["done"], res["info"], res["bundle"].config
    args: PretrainArgs = info["args"]
    pct = lambda v: f"{v:.1%}" if v is not None else "–"  # noqa: E731
    view.result_summary(
        PAGE,
        res,
        [
            ("Steps", f"{fin.step or 0:,}"),
            ("Next-word top-1", pct(fin.mlm_top1)),
            ("Next-word top-5", pct(fin.mlm_top5)),
            ("Most frequent token", pct(fin.baseline_top1)),
        ],
        f"**{md_escape(res['name'])}**: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, "
        f"{cfg.num_attention_heads} heads, vocabulary {cfg.vocab_size:,}, trained left to right on the next word "
        f"on {md_escape(info.get('corpus', '?'))}. It is in the sidebar's model list for this session; the views "
        "that read both ways with BERT's task heads (a gap's guesses, next sentence) refuse it.",
        training.pretrain_curves(res["metrics"], args.steps),
        notebook=report_notebook(res),
    )
    plateau_line(res["metrics"])
    probes = probe_frame(res["metrics"], next_word=True)
    if len(probes):
        probe = md_escape(next_word_probe(args.probe))
        st.markdown(f"**Probe:** the next word after each of the last words of: {probe}")
        st.dataframe(probes, hide_index=True, width="stretch")
    continue_box(res)
    view.keep_it(PAGE, res)
