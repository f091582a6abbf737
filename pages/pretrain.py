"""Pre-training: a small BERT learns language from scratch, live, by playing BERT's two games."""

import re

import streamlit as st

import app
from app import figures, plots, snapshots, train_plots
from app import train_state as ts
from app import train_view as view
from app import training as tr
from app.budget import LimitError
from app.errors import show_errors
from app.helpers import md_escape
from app.widgets import SENTENCE_CHARS
from bert import settings
from bert.corpus import CORPORA
from bert.events import PretrainEval, PretrainStart, of_type
from bert.plateau import plateau_exit
from bert.pretrain import PretrainArgs, probe_predictions

app.run_through_entry()  # before anything else: see app/__init__.py

ts.init()
ss = st.session_state
UPLOAD = "upload"
SOURCES = [*CORPORA, UPLOAD]
TITLES = {
    "wiki": "Wikipedia sample (105 articles)",
    "brown": "Brown Corpus (500 texts, 1961)",
    "bbc": "BBC News (2,225 articles)",
    "wordnet": "WordNet glosses (1.6 M words)",
    "gcide": "GCIDE dictionary (1.3 M words)",
    "sotu": "State of the Union addresses (1.8 M words)",
    UPLOAD: "Upload a .txt",
}
ICON_ERR = view.ICON_ERR
PAGE = view.TrainPage(tr.PRETRAIN, "pt", "pretrain", hf_class="BertForPreTraining")
HIDDEN = [64, 128, 256, 384]
LOG_EVERY = 5
SAVE_EVERY = 500  # a checkpoint to resume from; the model is saved when the run ends anyway
DROPOUT = 0.0  # small models trained for minutes learn faster without it (benchmarks/plateau.py)

st.title("Pre-training")
st.markdown(
    "Where does BERT's knowledge come from? From two games played on plain text: **fill the gap** "
    "(15 % of the tokens are hidden and the model guesses them) and **does B follow A?** Here a "
    "small BERT starts from random numbers and plays them on a corpus while you watch: at first it "
    "guesses the most frequent words (*the*, *,*), then it learns which words fit where."
)
view.collect_and_reopen(PAGE)

# --- 1. text -------------------------------------------------------------------------------------
st.header("1. Text")
ts.seed("pt_source", "wordnet", SOURCES)
source = st.radio(
    "Corpus",
    SOURCES,
    key="pt_source",
    horizontal=True,
    label_visibility="collapsed",
    format_func=lambda s: TITLES.get(s, s),
)
ts.remember("pt_source")
corpus, corpus_label = None, ""
with show_errors("the corpus"):
    if source == UPLOAD:
        up = tr.remember_upload(
            ts.PT_UPLOAD,
            st.file_uploader(
                "A plain-text file (.txt); blank lines separate documents", type=["txt"], key=ts.upload_key("pt_file")
            ),
        )
        if up is None:
            view.upload_missing(
                ts.PT_UPLOAD,
                "Upload some plain text: a book, articles, your notes. A few hundred sentences "
                "or more give the model something to learn.",
            )
        else:
            corpus = tr.upload_corpus(up)
            corpus_label = f"your text {up['name']}"
    else:
        corpus = tr.builtin_corpus(source)
        corpus_label = TITLES.get(source, source)
if corpus is not None:
    n = corpus.counts()
    c1, c2, c3 = st.columns(3)
    c1.metric("Documents", f"{n['documents']:,}")
    c2.metric("Sentences", f"{n['sentences']:,}")
    c3.metric("Words", f"{n['words']:,}")
    meta = corpus.meta or {}
    if meta.get("licence"):
        st.caption(f"{md_escape(meta.get('description', ''))} · licence: {md_escape(meta['licence'])}")
    with st.expander("A few sentences"):
        st.text("\n".join(s[:300] for s in corpus.documents[0][:8]))

# --- 2. model and training settings -----------------------------------------------------------------
D = PretrainArgs(out="")
# The default run leaves the unigram plateau while the class watches: about 40 s on one thread of a
# 2-core machine (benchmarks/plateau.py, README "Watch it learn"), on WordNet's short sentences.
defaults = {
    "pt_layers": 2,
    "pt_hidden": 128,
    "pt_heads": 2,
    "pt_vocab": "train",
    "pt_vocab_size": 1000,
    "pt_steps": 2000,
    "pt_lr": 3e-3,
    "pt_batch": 32,
    "pt_seq": 32,
    "pt_eval": 25,
    "pt_warmup": 100,
    "pt_probe": "the history of the [MASK] is long and [MASK] .",
    "pt_seed": D.seed,
}
for k, v in defaults.items():
    ts.seed(k, v, HIDDEN if k == "pt_hidden" else ["train", "default"] if k == "pt_vocab" else None)
est = {"ok": True}  # the budget of the settings below (app/budget.py)
if corpus is not None:
    st.header("2. Model")
    c1, c2, c3 = st.columns(3)
    c1.number_input("Layers", 1, 6, key="pt_layers")
    c2.selectbox("Hidden size", HIDDEN, key="pt_hidden")
    heads = [h for h in (1, 2, 4, 8) if ss.pt_hidden % h == 0]
    ts.seed("pt_heads", 2, heads)
    c3.selectbox("Attention heads", heads, key="pt_heads")
    c1.radio(
        "Vocabulary",
        ["train", "default"],
        key="pt_vocab",
        format_func=lambda v: {
            "train": "Train a small WordPiece vocabulary on this text",
            "default": "bert-base-uncased's 30,522 tokens",
        }[v],
    )
    if ss.pt_vocab == "train":
        c2.number_input(
            "Vocabulary size",
            500,
            30000,
            key="pt_vocab_size",
            step=500,
            help="Trained with the `tokenizers` library before the first step (a few seconds).",
        )
    st.header("3. Training")
    c1, c2, c3 = st.columns(3)
    c1.number_input("Steps", 10, 20000, key="pt_steps", step=50)
    c2.number_input("Learning rate", min_value=1e-7, max_value=100.0, key="pt_lr", step=1e-4, format="%.1e")
    c3.number_input("Batch size", 1, 128, key="pt_batch")
    c1.number_input("Tokens per sequence", 16, 512, key="pt_seq", step=16)
    c2.number_input("Evaluate every N steps", 5, 5000, key="pt_eval", step=10)
    c3.number_input("Warm-up steps", 0, 5000, key="pt_warmup", step=10)
    st.text_input("Probe sentence (its [MASK]s are predicted at every evaluation)", key="pt_probe", max_chars=500)
    ts.remember(*defaults)
    vocab_n = int(ss.pt_vocab_size) if ss.pt_vocab == "train" else 30522
    est = tr.check_pretrain_settings(
        int(ss.pt_layers), int(ss.pt_hidden), int(ss.pt_heads), vocab_n, int(ss.pt_batch), int(ss.pt_seq)
    )
    if est["ok"]:
        st.caption(est["line"])
    else:
        st.error(md_escape(est["line"]), icon=ICON_ERR)
    snapshots.settings("pt", snapshots.PT_PROBE, default_every=10)

# --- 4. run --------------------------------------------------------------------------------------
jm = tr.manager()
job = tr.current_job(tr.PRETRAIN, jm)
view.notice(PAGE)


def start(corpus, corpus_label) -> None:
    """Start button callback (a callback survives the rerun a page may do first)."""
    with tr.notice_errors(ts.PT_NOTICE, "starting the job"):
        if jm.active_of(ts.owner(), tr.PRETRAIN) is not None:
            ss[ts.PT_NOTICE] = ("info", "Your pre-training job is already running.")
            return
        probe = re.sub(r"\[mask\]", "[MASK]", ss.pt_probe or "", flags=re.IGNORECASE)
        if "[MASK]" not in probe:
            probe = D.probe
        vocab = f"train:{int(ss.pt_vocab_size)}" if ss.pt_vocab == "train" else "default"
        steps, every = int(ss.pt_steps), int(ss.pt_eval)
        args = PretrainArgs(
            out="",
            init="scratch",
            corpora=[ss.pt_source],
            vocab=vocab,
            layers=int(ss.pt_layers),
            hidden=int(ss.pt_hidden),
            heads=int(ss.pt_heads),
            max_seq_length=int(ss.pt_seq),
            batch_size=int(ss.pt_batch),
            steps=steps,
            lr=float(ss.pt_lr),
            warmup_steps=min(int(ss.pt_warmup), steps - 1),
            log_every=LOG_EVERY,
            eval_every=every,
            save_every=max(every, SAVE_EVERY),
            dropout=DROPOUT,
            seed=int(ss.pt_seed),
            threads=tr.job_threads(),
            probe=probe[:500],
            device=settings.text("BERT_EXPLORER_DEVICE") or "auto",
            # an upload's tokens live in memory only; a built-in's are cached for all
            cache_tokens=ss.pt_source != UPLOAD and vocab == "default",
        )
        what = ss.pt_source
        if what == UPLOAD and ss.get(ts.PT_UPLOAD):
            what = tr.safe_filename(ss[ts.PT_UPLOAD]["name"].rsplit(".", 1)[0], "text")
        try:
            _, new = tr.start_pretrain(
                args,
                corpus,
                f"pretrained-{what}-{args.layers}x{args.hidden}",
                corpus_label,
                jm,
                recorder=snapshots.recorder("pt", snapshots.PT_PROBE),
            )
        except LimitError as e:
            ss[ts.PT_NOTICE] = ("error", str(e))
            return
        if new:
            ss[ts.PT_NOTICE] = None
            if ss.pt_source == UPLOAD:
                tr.free_uploads(ts.PT_UPLOAD)


disabled = corpus is None or (job is not None and job.active) or not est["ok"]
view.start_button(PAGE, jm, "Start pre-training", start, (corpus, corpus_label), disabled)
job = tr.current_job(tr.PRETRAIN, jm)


def plateau_line(metrics) -> None:
    """Say when the run left the unigram plateau (bert/plateau.py), or that it has not yet."""
    evals, start = of_type(metrics, PretrainEval), tr.last_event(metrics, PretrainStart)
    if not evals:
        return
    first = plateau_exit(evals, start.baseline_token if start else None)
    if first is None:
        st.caption(
            "Still on the plateau: the guesses are mostly the most frequent token. The run leaves it when its top-1 "
            "is twice that baseline and the probe's guesses differ, three evaluations in a row."
        )
    else:
        st.success(
            f"It left the plateau at step {first.step:,}: top-1 {first.mlm_top1:.1%} against "
            f"{first.baseline_top1:.1%} for always guessing the most frequent token, and the probe's guesses now "
            "differ from gap to gap. It has begun to use the words around each gap: first where the small words "
            "and punctuation go; content words take much longer.",
            icon=":material/trending_up:",
        )


def live_panel():
    job = tr.live_job(tr.PRETRAIN)
    if job is None:
        return
    args: PretrainArgs = job.info["args"]
    steps = args.steps
    view.live_progress(job, jm, *tr.pretrain_progress(job.metrics, steps, args.log_every))
    start_ev = tr.last_event(job.metrics, PretrainStart)
    if start_ev:
        st.caption(
            f"{start_ev.parameters:,} parameters · {start_ev.train_tokens:,} training tokens in "
            f"{start_ev.train_documents:,} documents · most frequent token: {md_escape(start_ev.baseline_token)}"
        )
    figures.show(train_plots.pretrain_curves(job.metrics, steps), "pretrain-live-curves", key="pt_live_curves")
    plateau_line(job.metrics)
    probes = tr.probe_frame(job.metrics)
    if len(probes):
        st.markdown(f"**Probe:** {md_escape(args.probe)} · top guesses at each evaluation, newest first")
        st.dataframe(probes.iloc[::-1], hide_index=True, width="stretch")
    view.stop_button(PAGE, job, "Stop (keeps the model as it is now)", "Stopping… (saving the model)")


if job is not None and job.active:
    st.fragment(run_every=tr.POLL_S)(live_panel)()
if snapshots.recorded("pre-training"):
    snapshots.replay_button("pt_replay")


# --- 5. results ----------------------------------------------------------------------------------
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
        figures.show(
            plots.mlm_topk_bar([t for t, _ in cands], [p for _, p in cands], f"[MASK] {i + 1}"),
            f"pretrain-try-bar-{jid}-{i}",
            where=cols[i % len(cols)],
            key=f"pt_try_bar_{jid}_{i}",
        )


def show_result(res: dict) -> None:
    fin, info, cfg = res["done"], res["info"], res["bundle"].config  # fin: a bert.events.PretrainDone
    args: PretrainArgs = info["args"]
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
        train_plots.pretrain_curves(res["metrics"], args.steps),
    )
    plateau_line(res["metrics"])
    probes = tr.probe_frame(res["metrics"])
    if len(probes):
        st.markdown(f"**Probe:** {md_escape(args.probe)}")
        st.dataframe(probes, hide_index=True, width="stretch")
    try_it(res)
    view.keep_it(PAGE, res)


view.results_section(PAGE, "Results", show_result)
