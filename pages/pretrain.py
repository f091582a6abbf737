"""Pre-training: a small BERT learns language from scratch, live, by playing BERT's two games."""

import streamlit as st

import app
from app.figures import training as training_figures
from app.formatting import md_escape
from app.jobs.backend import job_backend
from app.jobs.spec import PRETRAIN
from app.run_session import controls, snapshots
from app.run_session import session as ts
from app.run_session.follow import POLL_S, live_job
from app.run_session.progress import pretrain_progress, probe_frame
from app.run_session.uploads import remember_upload, upload_corpus
from app.training import page as view
from app.training.data import builtin_corpus
from app.training.next_word_view import is_next_word
from app.training.pretrain_view import PAGE, plateau_line, show_result
from app.training.start import check_pretrain_settings, on_start_pretrain
from app.ui import show_figure
from app.ui.errors import show_errors
from bert.data.corpus.registry import CORPORA
from bert.train.events import PretrainStart
from bert.train.events import last as last_event
from bert.train.next_word import MLM_NSP, NEXT_WORD
from bert.train.pretrain_args import PretrainArgs

app.run_through_entry()  # before anything else: see app/__init__.py

ts.init_training()
ss = st.session_state
SOURCES = [*CORPORA, ts.UPLOAD]
TITLES = {
    "wiki": "Wikipedia sample (105 articles)",
    "brown": "Brown Corpus (500 texts, 1961)",
    "bbc": "BBC News (2,225 articles)",
    "wordnet": "WordNet glosses (1.6 M words)",
    "gcide": "GCIDE dictionary (1.3 M words)",
    "sotu": "State of the Union addresses (1.8 M words)",
    ts.UPLOAD: "Upload a .txt",
}
ICON_ERR = view.ICON_ERR
HIDDEN = [64, 128, 256, 384]
GAME_TITLES = {
    MLM_NSP: "BERT's two games: fill the gap, does B follow A? (reads both ways)",
    NEXT_WORD: "The next word: predict each token from those before it (reads left to right, then writes)",
}
GAMES = {"pt_objective": list(GAME_TITLES)}

st.title("Pre-training")
st.markdown(
    "Where does BERT's knowledge come from? From two games played on plain text: **fill the gap** "
    "(15 % of the tokens are hidden and the model guesses them) and **does B follow A?** Here a "
    "small BERT starts from random numbers and plays them on a corpus while you watch: at first it "
    "guesses the most frequent words (*the*, *,*), then it learns which words fit where. Or it plays a third "
    "game, GPT's: **the next word**, reading left to right, and then it writes."
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
    if source == ts.UPLOAD:
        up = remember_upload(
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
            corpus = upload_corpus(up)
            corpus_label = f"your text {up['name']}"
    else:
        corpus = builtin_corpus(source)
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
# The default run leaves the unigram plateau while the class watches, on WordNet's short sentences
# (benchmarks/plateau.py measures it, docs/MODELS.md "Watch it learn"); the next-word game on the same
# settings leaves its plateau at step 100 (--recipe next-word; most of its time is the vocabulary and
# the tokenized corpus before the first step).
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
    "pt_objective": D.objective,
}
for k, v in defaults.items():
    ts.seed(k, v, HIDDEN if k == "pt_hidden" else ["train", "default"] if k == "pt_vocab" else GAMES.get(k))
est = {"ok": True}  # the budget of the settings below (app/jobs/budget.py)
if corpus is not None:
    st.header("2. Model")
    st.radio("Game", list(GAME_TITLES), key="pt_objective", format_func=GAME_TITLES.get)
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
    st.text_input(
        "Probe sentence (its [MASK]s are predicted at every evaluation; the next-word game predicts the words "
        "after its start, up to its first [MASK])",
        key="pt_probe",
        max_chars=500,
    )
    ts.remember(*defaults)
    vocab_n = int(ss.pt_vocab_size) if ss.pt_vocab == "train" else 30522
    est = check_pretrain_settings(
        int(ss.pt_layers),
        int(ss.pt_hidden),
        int(ss.pt_heads),
        vocab_n,
        int(ss.pt_batch),
        int(ss.pt_seq),
        next_word=ss.pt_objective == NEXT_WORD,
    )
    if est["ok"]:
        st.caption(est["line"])
    else:
        st.error(md_escape(est["line"]), icon=ICON_ERR)
    snapshots.settings("pt", snapshots.PT_PROBE, default_every=10)

# --- 4. run --------------------------------------------------------------------------------------
jm = job_backend()
not_ready = corpus is None or not est["ok"]
job = controls.start_section(
    PAGE, jm, PRETRAIN, "Start pre-training", on_start_pretrain, (jm, corpus, corpus_label), not_ready
)


def live_panel():
    job = live_job(PRETRAIN)
    if job is None:
        return
    args: PretrainArgs = job.info["args"]
    steps = args.steps
    controls.live_progress(job, jm, *pretrain_progress(job.metrics, steps, args.log_every))
    start_ev = last_event(job.metrics, PretrainStart)
    if start_ev:
        st.caption(
            f"{start_ev.parameters:,} parameters · {start_ev.train_tokens:,} training tokens in "
            f"{start_ev.train_documents:,} documents · most frequent token: {md_escape(start_ev.baseline_token)}"
        )
    show_figure.show(training_figures.pretrain_curves(job.metrics, steps), "pretrain-live-curves", key="pt_live_curves")
    plateau_line(job.metrics)
    probes = probe_frame(job.metrics, next_word=is_next_word(args))
    if len(probes):
        st.markdown(f"**Probe:** {md_escape(args.probe)} · top guesses at each evaluation, newest first")
        st.dataframe(probes.iloc[::-1], hide_index=True, width="stretch")
    controls.stop_button(PAGE, job, "Stop (keeps the model as it is now)", "Stopping… (saving the model)")


if job is not None and job.active:
    st.fragment(run_every=POLL_S)(live_panel)()
if snapshots.recorded("pre-training"):
    snapshots.replay_button("pt_replay")


# --- 5. results ----------------------------------------------------------------------------------
view.results_section(PAGE, "Results", show_result)
