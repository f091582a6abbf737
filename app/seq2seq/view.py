"""The Decoder page's widgets: the task and its pairs, the model and training settings, the live
panel, and a trained model's results with its step-by-step decoding."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from bert.seq2seq.tasks import TASKS, Pairs, read_pairs_csv
from bert.train.events import last as last_event
from bert.train.precision import server_precision
from bert.train.seq2seq import TINY, Seq2SeqArgs, Seq2SeqDone, Seq2SeqEval, Seq2SeqStart, Seq2SeqStep

from .. import state
from ..analysis_cache import decoder_trace, run_key
from ..export.training_notebooks import decoding
from ..figures import seq2seq as s2s_figures
from ..formatting import md_escape
from ..jobs.worker import stop_message
from ..run_session import session as ts
from ..run_session.finished import run_code_line
from ..run_session.progress import fmt_seconds, precision_note
from ..run_session.uploads import read_upload, remember_upload
from ..trained_decoder import example_source
from ..ui import show_figure
from ..ui.errors import show_errors
from .session import UPLOAD, reopen_callback

UPLOAD_CHOICE = "upload"
D = Seq2SeqArgs()

# Each settings widget's key -> the Seq2SeqArgs field it sets: its first value is the field's default.
WIDGETS = {
    "s2s_encoder": "encoder",
    "s2s_dec_layers": "decoder_layers",
    "s2s_from_enc": "from_encoder",
    "s2s_freeze": "freeze_encoder",
    "s2s_steps": "steps",
    "s2s_batch": "batch_size",
    "s2s_lr": "lr",
    "s2s_eval": "eval_every",
    "s2s_seed": "seed",
}

TEXT_CHARS = 300  # a typed source


def task_label(t: str) -> str:
    return "Upload a CSV of source,target pairs" if t == UPLOAD_CHOICE else TASKS[t].title


def uploaded_pairs() -> Pairs | None:
    """The uploaded CSV's pairs (its bytes kept in the session), or None before a file."""
    f = st.file_uploader("A CSV with two columns: source,target (a header row of those names is optional)", ["csv"])
    up = remember_upload(UPLOAD, f)
    if up is None:
        st.info("Upload a file of pairs, e.g. `the cat sat,sat cat the` on each line.", icon=":material/upload_file:")
        return None
    return read_upload(UPLOAD, up, read_pairs_csv)


def pairs_table(pairs: list[tuple[str, str]]) -> None:
    st.dataframe(pd.DataFrame(pairs, columns=["source", "target"]), hide_index=True, width="stretch")


def settings(sources: list[str]) -> Seq2SeqArgs:
    """The model and training settings (their widgets keep their values across pages)."""
    ss = st.session_state
    for key, name in WIDGETS.items():
        ts.seed(key, getattr(D, name), sources if key == "s2s_encoder" else None)
    c1, c2, c3 = st.columns(3)
    c1.selectbox(
        "Encoder",
        sources,
        key="s2s_encoder",
        format_func=_encoder_name,
        help="A pre-trained encoder brings its vocabulary and what it knows; the tiny one learns a toy task fastest.",
    )
    c2.number_input("Decoder layers", 1, 6, key="s2s_dec_layers")
    c3.number_input("Training steps", 10, 20_000, key="s2s_steps", step=100)
    c1.checkbox(
        "Start the decoder from the encoder's layers",
        key="s2s_from_enc",
        help="Decoder layer i a copy of encoder layer i, the embeddings and head copied; the cross-attention is new.",
    )
    c2.checkbox("Freeze the encoder", key="s2s_freeze")
    c3.number_input("Batch size", 1, 256, key="s2s_batch")
    c1.number_input(
        "Learning rate",
        min_value=1e-6,
        max_value=1.0,
        key="s2s_lr",
        format="%.1e",
        step=1e-4,
        help="2e-3 suits the tiny encoder; a pre-trained one wants about 1e-4.",
    )
    c2.number_input("Score the held-out pairs every … steps", 5, 5000, key="s2s_eval")
    c3.number_input("Seed", 0, 1_000_000, key="s2s_seed")
    ts.remember(*WIDGETS)
    return _chosen_args(ss)


def _encoder_name(source: str) -> str:
    """An encoder choice in words: the fresh tiny BERT, a session's own model, or a source."""
    if source == TINY:
        return f"a fresh tiny BERT ({D.hidden} wide, {D.layers} layers) on the task's words"
    name = state.session_model_name(source)
    return f"{name} (your model)" if name is not None else source


def _chosen_args(ss) -> Seq2SeqArgs:
    """The run's settings from the settings' widgets, each of its field's type."""
    chosen = {name: type(getattr(D, name))(ss[key]) for key, name in WIDGETS.items()}
    return Seq2SeqArgs(**chosen, precision=server_precision("cpu"))  # it trains on the CPU


def progress_line(metrics, steps: int) -> tuple[float, str]:
    start, step = last_event(metrics, Seq2SeqStart), last_event(metrics, Seq2SeqStep)
    if start is None:
        return 0.0, "Preparing: making the pairs, the encoder-decoder and its vocabulary…"
    if step is None:
        return 0.0, f"Step 0 of {start.steps:,}: the first batches are running…" + precision_note(start)
    ev = last_event(metrics, Seq2SeqEval)
    score = f" · held-out exact match {ev.exact_match:.0%}" if ev else ""
    return min(
        step.step / max(start.steps, 1), 1.0
    ), f"Step {step.step:,} of {start.steps:,} · loss {step.loss:.3f}{score}" + precision_note(start)


def examples(ev: Seq2SeqEval | None) -> None:
    if ev is not None and ev.examples:
        rows = [(s, t, o, "✓" if o == t else "✗") for s, t, o in ev.examples]
        st.dataframe(pd.DataFrame(rows, columns=["source", "target", "its output", ""]), hide_index=True)


def live(job) -> None:
    """The running job: progress, curves, the latest held-out examples, Stop."""
    start = last_event(job.metrics, Seq2SeqStart)
    frac, line = progress_line(job.metrics, start.steps if start else 0)
    st.progress(frac, text=line)
    if start is not None:
        st.caption(
            f"{start.train_pairs:,} training and {start.valid_pairs:,} held-out pairs · vocabulary {start.vocab:,} · "
            f"{start.trainable:,} of {start.parameters:,} parameters trained · " + "; ".join(start.made)
        )
    show_figure.show(s2s_figures.curves(job.metrics, start.steps if start else None), "decoder-live", key="s2s_live")
    examples(last_event(job.metrics, Seq2SeqEval))
    stopping = job.stop_event.is_set()
    st.button("Stopping…" if stopping else "Stop (keeps the best model so far)", key="s2s_stop", on_click=job.stop,
              disabled=stopping)  # fmt: skip


def result(res: dict) -> None:
    """A finished run: its scores and curves, then its decoding of a typed source."""
    done, bundle = last_event(res["metrics"], Seq2SeqDone), res["bundle"]
    if res["error"]:
        st.error(md_escape(res["error"]), icon=":material/error:")
    elif res["stop_reason"]:
        st.info(stop_message(res["stop_reason"]), icon=":material/info:")
    c = st.columns(4)
    em = done.exact_match if done else float("nan")
    c[0].metric("Held-out exact match", f"{em:.0%}" if em == em else "–")
    c[1].metric("Kept model's step", f"{done.best_step:,}" if done else "–")
    c[2].metric("Training time", fmt_seconds(done.train_seconds if done else None))
    c[3].metric("Parameters", f"{bundle.num_parameters:,}")
    start = last_event(res["metrics"], Seq2SeqStart)
    st.caption(f"**{md_escape(bundle.name)}**, trained on {md_escape(res['title'])}{precision_note(start)}.")
    if line := run_code_line(res):
        st.markdown(line)
    show_figure.show(s2s_figures.curves(res["metrics"]), "decoder-curves", key="s2s_curves")
    examples(last_event(res["metrics"], Seq2SeqEval))
    decode(res)


def reopen_box() -> None:
    """The "Reopen a run" box: a saved Decoder on top run back by its code."""
    with st.expander("Reopen a run (after a refresh, or from another day's code)"):
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        c1.text_input(
            "Run code",
            key="s2s_reopen_code",
            max_chars=12,
            placeholder="e.g. K7QX2M",
            help="Shown on every run's result; runs are kept for a day.",
        )
        c2.button("Reopen", key="s2s_reopen", on_click=reopen_callback, args=("s2s_reopen_code",))


LIST_WORDS = 1000  # a vocabulary of at most this many words is listed under an unknown word


def known_words(tokenizer) -> list[str]:
    """The vocabulary's whole words (no special token, no ## continuation, no unused slot), sorted."""
    special = set(tokenizer.special_tokens)
    return sorted(t for t in tokenizer.vocab if t not in special and not t.startswith(("##", "[unused")))


def unknown_words(unknown: list[str], tokenizer) -> None:
    """Which typed words the model read as [UNK], and the words it knows (listed when few)."""
    known = known_words(tokenizer)
    said = ", ".join(f"**{md_escape(w)}**" for w in unknown)
    st.warning(
        f"Not in this model's vocabulary, so it reads each as [UNK]: {said}. It knows {len(known):,} words"
        + (": use those (listed below)." if len(known) <= LIST_WORDS else " and word pieces."),
        icon=":material/help:",
    )
    if len(known) <= LIST_WORDS:
        with st.expander(f"The {len(known):,} words it knows"):
            st.markdown(", ".join(md_escape(w) for w in known))


def decode(res: dict) -> None:
    """The run's decoding of a typed source (its first held-out one at first), step by step."""
    bundle = res["bundle"]
    st.subheader("Watch it decode")
    ts.seed("s2s_text", example_source(res))
    text = st.text_input("A source to decode", key="s2s_text", max_chars=TEXT_CHARS)
    if not text.strip():
        st.info("Type a source to watch the decoder write its output step by step.")
        return
    with show_errors("the decoding"):
        tr = decoder_trace(run_key(res), text, bundle)
        T, L = len(tr.outputs), tr.cross.shape[0]
        if tr.unknown:
            unknown_words(tr.unknown, bundle.tokenizer)
        c1, c2 = st.columns(2)
        t = c1.slider("Step", 1, T, T, key="s2s_step") - 1 if T > 1 else 0
        layer = c2.selectbox("Layer", list(range(1, L + 1)), index=L - 1, key="s2s_layer") - 1
        said = " ".join(tr.outputs[: t + 1])
        st.markdown(
            f"Step {t + 1}: it read **{md_escape(tr.inputs[t])}** and wrote **{md_escape(tr.outputs[t])}** "
            f"(p = {tr.probs[t]:.2f}). Output so far: `{said.replace('`', '')}`"
        )
        left, right = st.columns(2)
        cross = tr.cross[layer].mean(0).numpy()  # (T, S): mean over heads
        selfs = tr.selfs[layer].mean(0).numpy()  # (T, T)
        show_figure.show(
            s2s_figures.attention(
                cross, tr.outputs, tr.source, f"cross-attention, layer {layer + 1}", t, "source token"
            ),
            "decoder-cross",
            where=left,
            key="s2s_cross",
            notebook=partial(
                decoding,
                name=bundle.name,
                title=res["title"],
                code=res.get("code") if res.get("saved") else None,
                events=res["metrics"],
                text=text,
                trace=tr,
                step=t,
                layer=layer,
            ),
        )
        show_figure.show(
            s2s_figures.attention(selfs, tr.outputs, tr.inputs, f"masked self-attention, layer {layer + 1}", t, "read"),
            "decoder-self",
            where=right,
            key="s2s_self",
        )
        left.caption("Each row: where that step looked in the source (mean over heads).")
        right.caption("Each row sees only what was written before it: the causal mask leaves the upper right empty.")
