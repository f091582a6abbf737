"""Fine-tuning: teach BERT a classification task on your own labelled texts, and watch it learn."""

import hashlib

import streamlit as st

import app
from app import board_view, figures, snapshots, state, train_plots
from app import train_state as ts
from app import train_view as view
from app import training as tr
from app.budget import LimitError
from app.errors import show_errors
from app.helpers import md_escape
from app.widgets import SENTENCE_CHARS
from bert import settings
from bert.checkpoint import available_builtins
from bert.config import POOLINGS
from bert.datasets import available_datasets
from bert.events import FinetuneStart
from bert.finetune import FinetuneArgs

app.run_through_entry()  # before anything else: see app/__init__.py

ts.init()
ss = st.session_state
D = FinetuneArgs(data="")  # the backend's defaults, chosen by measurement
UPLOAD = "upload"
SOURCES = [*available_datasets(), UPLOAD]
TRY_DEFAULT = "A gripping story with wonderful performances."
ICON_ERR = view.ICON_ERR
PAGE = view.TrainPage(
    tr.FINETUNE,
    "ft",
    "finetune",
    hf_class="BertForSequenceClassification",
    ours_help="Unzip and open the folder with bert.load(folder), or in the sidebar.",
)


def labelled_upload(store_key: str, label: str, widget: str) -> dict | None:
    """A file uploader for labelled texts, its file kept in the session under `store_key`."""
    return tr.remember_upload(
        store_key, st.file_uploader(label, type=["csv", "tsv", "jsonl", "json", "txt"], key=ts.upload_key(widget))
    )


st.title("Fine-tuning")
st.markdown(
    "A pre-trained BERT knows a lot about language but nothing about *your* task. Fine-tuning puts a "
    "small new layer on top (one score per class, read from the texts' vectors) and trains the whole "
    "network a little more on labelled examples. Pick some data, press **Start**, and watch the loss "
    "fall and the accuracy rise; the result becomes a model you can explore on the other pages."
)
board_view.push_ended()
view.collect_and_reopen(PAGE)

# --- 1. data -------------------------------------------------------------------------------------
st.header("1. Data")
ts.seed("ft_source", SOURCES[0], SOURCES)
source = st.radio(
    "Data",
    SOURCES,
    key="ft_source",
    horizontal=True,
    label_visibility="collapsed",
    format_func=lambda s: "Upload a file" if s == UPLOAD else available_datasets()[s],
)
data = None
with show_errors("the data"):
    if source == UPLOAD:
        label = "A labelled file: CSV, TSV, JSON Lines, or plain text with `label<TAB>text` per line"
        up = labelled_upload(ts.FT_UPLOAD, label, "ft_file")
        if up is None:
            view.upload_missing(
                ts.FT_UPLOAD,
                "Upload a file with a text column and a label column (labels may be words or "
                "numbers). Your file is only read, never changed.",
            )
        else:
            st.caption(
                f"File: **{md_escape(up['name'])}** ({len(up['data']):,} bytes). It stays in this "
                "session when you visit other pages."
            )
            try:
                detected, err = tr.parse_upload(up), None
            except Exception as e:  # a column problem: let the user choose them below
                detected, err = None, e
            columns = detected.columns if detected else tr.sniff_columns(up)
            if len(columns) < 2:
                raise err
            h = hashlib.sha1(str(up["id"]).encode()).hexdigest()[:10]
            tkey, lkey = f"ft_text_col_{h}", f"ft_label_col_{h}"
            guess = (detected.text_col, detected.label_col) if detected else (columns[0], columns[1])
            ts.seed(tkey, guess[0], columns)
            ts.seed(lkey, guess[1], columns)
            c1, c2 = st.columns(2)
            text_col = c1.selectbox("Text column", columns, key=tkey)
            label_col = c2.selectbox("Label column", columns, key=lkey)
            ts.remember(tkey, lkey)
            if (text_col, label_col) == guess:
                if detected is None:
                    raise err  # what detection found wrong; the user may pick other columns
                data = detected
            else:
                data = tr.parse_upload(up, text_col, label_col)
    else:
        data = tr.builtin_data(source)

if data is not None:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Usable texts", f"{len(data):,}")
    c2.metric("Classes", len(data.classes))
    c3.metric("Rows read", f"{data.rows_read:,}")
    c4.metric("Rows dropped", f"{sum(data.dropped.values()):,}")
    st.caption(
        f"Text column `{md_escape(data.text_col)}`, label column `{md_escape(data.label_col)}`"
        + (f" · {md_escape(data.format)}" if data.format else "")
        + (f" · {md_escape(data.encoding)}" if data.encoding else "")
        + f" · {md_escape(tr.dropped_text(data))}"
    )
    for note in data.notes:
        st.info(md_escape(note), icon=":material/info:")
    left, right = st.columns([3, 2])
    if data.preview is not None:
        left.dataframe(data.preview, hide_index=True, width="stretch", height=280)
    figures.show(
        train_plots.class_counts(data.class_counts, "texts per class"), "finetune-counts", where=right, key="ft_counts"
    )

# --- 2. validation -------------------------------------------------------------------------------
valid_file = None
valid_fraction = 0.2
mode = "split"
if data is not None:
    st.header("2. Validation data")
    ts.seed("ft_valid_mode", "split", ["split", "upload"])
    mode = st.radio(
        "Validation",
        ["split", "upload"],
        key="ft_valid_mode",
        horizontal=True,
        label_visibility="collapsed",
        format_func=lambda m: {
            "split": "Keep some of the data aside (stratified split)",
            "upload": "Upload a separate validation file",
        }[m],
    )
    if mode == "split":
        ts.seed("ft_valid_frac", 0.2)
        valid_fraction = st.slider(
            "Share kept aside for validation",
            0.1,
            0.5,
            key="ft_valid_frac",
            step=0.05,
            help="Each class keeps the same proportions on both sides.",
        )
        ts.remember("ft_valid_frac")
    else:
        with show_errors("the validation file"):
            vup = labelled_upload(ts.FT_VAL_UPLOAD, "Validation file (same classes)", "ft_val_file")
            if vup is not None:
                try:
                    valid_file = tr.parse_upload(
                        vup, data.text_col, data.label_col, classes=data.classes, min_per_class=1
                    )
                except Exception:  # other column names: detect them
                    valid_file = tr.parse_upload(vup, classes=data.classes, min_per_class=1)
                st.caption(
                    f"{md_escape(vup['name'])}: {md_escape(valid_file.summary())} · "
                    f"{md_escape(tr.dropped_text(valid_file))}"
                )
    ts.remember("ft_valid_mode")

# --- 3. settings ---------------------------------------------------------------------------------
sources = list(available_builtins()) + [f"session:{n}" for n in state.user_models()]
picked = st.session_state.get(state.MODEL_SOURCE, state.DEFAULT_MODEL)
if picked not in sources:
    sources.append(picked)  # a folder loaded in the sidebar
defaults = {
    "ft_base": tr.default_finetune_base(),
    "ft_pooling": D.pooling,
    "ft_freeze_emb": D.freeze_embeddings,
    "ft_freeze_layers": tr.RUN_SIZES[tr.DEFAULT_SIZE].freeze_layers,
    "ft_max_length": D.max_length,
    "ft_batch": D.batch_size,
    "ft_lr": D.lr,
    "ft_epochs": D.epochs,
    "ft_warmup": D.warmup_ratio,
    "ft_seed": D.seed,
    "ft_max_train": tr.RUN_SIZES[tr.DEFAULT_SIZE].max_train,
    "ft_max_valid": tr.RUN_SIZES[tr.DEFAULT_SIZE].max_valid,
    "ft_evals": tr.PAGE_EVALS,
    "ft_size": tr.DEFAULT_SIZE,
}
choices = {"ft_base": sources, "ft_pooling": POOLINGS, "ft_size": list(tr.RUN_SIZES)}
for k, v in defaults.items():
    ts.seed(k, v, choices.get(k))
base = None
if data is not None:
    st.header("3. Settings")
    view.run_size_picker()
    with st.expander("Model and training settings (the defaults give a good model in about half a minute)"):
        c1, c2, c3 = st.columns(3)
        base_src = c1.selectbox(
            "Start from",
            sources,
            key="ft_base",
            format_func=lambda s: f"{s[8:]} (your model)" if s.startswith("session:") else s,
        )
        with show_errors("the base model"):
            base = tr.base_bundle(base_src)
            if base is None:
                st.error("That model is no longer in this session.", icon=ICON_ERR)
        n_layers = base.config.num_hidden_layers if base else 12
        max_pos = base.config.max_position_embeddings if base else 512
        ss["ft_freeze_layers"] = min(ss["ft_freeze_layers"], n_layers)  # fit the chosen model
        ss["ft_max_length"] = min(ss["ft_max_length"], max_pos)
        c2.selectbox(
            "Pooling",
            POOLINGS,
            key="ft_pooling",
            help="How the texts' token vectors become one: the [CLS] vector, or the mean or maximum over all tokens.",
        )
        c3.number_input(
            "Max tokens per text",
            8,
            max_pos,
            key="ft_max_length",
            step=16,
            help="Longer texts are cut; shorter is faster.",
        )
        c1.number_input(
            "Learning rate",
            min_value=1e-7,
            max_value=100.0,
            key="ft_lr",
            step=1e-5,
            format="%.1e",
            help="Peak learning rate of the encoder; the new head learns "
            f"{D.head_lr_scale:g}x faster. Too high and the loss explodes.",
        )
        c2.number_input("Batch size", 1, 256, key="ft_batch")
        c3.number_input("Epochs", 1, 20, key="ft_epochs")
        c1.number_input("Warm-up (share of steps)", 0.0, 0.9, key="ft_warmup", step=0.05)
        c2.number_input("Evaluations per epoch", 1, 20, key="ft_evals", help=tr.EVALS_HELP)
        c3.number_input("Seed", 0, 1_000_000, key="ft_seed")
        c1.number_input(
            "Use at most this many training texts",
            10,
            200_000,
            key="ft_max_train",
            step=500,
            help="A stratified sample; more texts learn better but take longer.",
        )
        c2.number_input("…and validation texts", 10, 100_000, key="ft_max_valid", step=500)
        c3.number_input("Freeze the lowest N layers", 0, n_layers, key="ft_freeze_layers")
        c1.checkbox("Freeze the embeddings", key="ft_freeze_emb")
    ts.remember(*defaults)
    if base is not None:
        est = tr.check_finetune_settings(
            base,
            int(ss.ft_batch),
            int(ss.ft_max_length),
            bool(ss.ft_freeze_emb),
            int(ss.ft_freeze_layers),
            len(data.classes),
        )
        if est["ok"]:
            st.caption(est["line"])
        else:
            st.error(md_escape(est["line"]), icon=ICON_ERR)
            base = None  # Start stays off until the settings fit
        n_train = len(data) if valid_file is not None else int(len(data) * (1 - valid_fraction))
        if hint := tr.few_steps_message(n_train, int(ss.ft_max_train), int(ss.ft_batch), int(ss.ft_epochs)):
            st.info(hint, icon=":material/lightbulb:")
    snapshots.settings("ft", snapshots.FT_PROBE, default_every=5)

# --- 4. train --------------------------------------------------------------------------------------
st.header("4. Train")
jm = tr.manager()
job = tr.current_job(tr.FINETUNE, jm)
view.notice(PAGE)


def start(data, valid_file, valid_fraction, base, mode) -> None:
    """Start button callback (a callback survives the rerun a page may do first)."""
    with tr.notice_errors(ts.FT_NOTICE, "starting the job"):
        if jm.active_of(ts.owner(), tr.FINETUNE) is not None:
            ss[ts.FT_NOTICE] = ("info", "Your fine-tuning job is already running.")
            return
        if mode == "upload" and valid_file is None:
            ss[ts.FT_NOTICE] = ("error", "Upload a validation file first, or keep some of the data aside.")
            return
        train, valid = tr.split_data(
            data, valid_file, valid_fraction, int(ss.ft_seed), int(ss.ft_max_train), int(ss.ft_max_valid)
        )
        stem = tr.safe_filename((data.source or "data").replace("builtin:", "").rsplit(".", 1)[0], "data")
        args = tr.page_finetune_args(
            base.name,
            len(train),
            data.source,
            stem,
            int(ss.ft_evals),
            tr.job_threads(),
            checkpoint=ss.ft_base,
            pooling=ss.ft_pooling,
            freeze_embeddings=bool(ss.ft_freeze_emb),
            freeze_layers=int(ss.ft_freeze_layers),
            max_length=int(ss.ft_max_length),
            batch_size=int(ss.ft_batch),
            lr=float(ss.ft_lr),
            epochs=int(ss.ft_epochs),
            warmup_ratio=float(ss.ft_warmup),
            seed=int(ss.ft_seed),
            device=settings.text("BERT_EXPLORER_DEVICE") or "auto",
        )
        args.check(base.config.max_position_embeddings, base.config.num_hidden_layers)
        try:
            _, new = tr.start_finetune(
                base, ss.ft_base, train, valid, args, jm, recorder=snapshots.recorder("ft", snapshots.FT_PROBE)
            )
        except LimitError as e:
            ss[ts.FT_NOTICE] = ("error", str(e))
            return
        if new:
            ss[ts.FT_NOTICE] = None
            used = ((ts.FT_UPLOAD, ss.ft_source == UPLOAD), (ts.FT_VAL_UPLOAD, mode == "upload"))
            tr.free_uploads(*[key for key, on in used if on])


view.start_button(
    PAGE,
    jm,
    "Start fine-tuning",
    start,
    (data, valid_file, valid_fraction, base, mode),
    data is None or base is None or (job is not None and job.active),
    help="One job per session at a time; others on this server may be queued before you.",
)
job = tr.current_job(tr.FINETUNE, jm)


def live_panel():
    job = tr.live_job(tr.FINETUNE)
    if job is None:
        return
    board_view.push_live(job)  # a run shown live on the class board (its end: push_ended)
    view.live_progress(job, jm, *tr.finetune_progress(job.metrics))
    start_ev = tr.last_event(job.metrics, FinetuneStart)
    if start_ev:
        st.caption(tr.finetune_start_line(start_ev))
    figures.show(
        train_plots.finetune_curves(job.metrics, start_ev.steps if start_ev else None),
        "finetune-live-curves",
        key="ft_live_curves",
    )
    view.stop_button(PAGE, job, "Stop (keeps the best model so far)", "Stopping… (the best model so far is kept)")
    board_view.live_share(job)


if job is not None and job.active:
    st.fragment(run_every=tr.POLL_S)(live_panel)()
elif not tr.results(tr.FINETUNE):
    st.caption("Nothing trained yet in this session.")
if snapshots.recorded("fine-tuning"):
    snapshots.replay_button("ft_replay")


def csv_download(tab, res: dict, frame, what: str) -> None:
    """A button that downloads `frame`, the run's `what` ("scores", "mistakes"), as a .csv."""
    tab.download_button(
        f"Download the {what} (.csv)",
        data=tr.table_csv(frame),
        mime="text/csv",
        file_name=f"{tr.safe_filename(res['name'])}-{what}.csv",
        on_click="ignore",
        key=f"ft_csv_{what}_{res['job_id']}",
    )


def scores_tab(tab, res: dict, rep: dict) -> None:
    per_class = tr.per_class_frame(rep)
    tab.dataframe(
        per_class,
        hide_index=True,
        width="stretch",
        column_config={k: st.column_config.NumberColumn(format="%.3f") for k in ("precision", "recall", "F1")},
    )
    csv_download(tab, res, per_class, "scores")
    tab.caption(
        "Precision: of the texts it put in a class, the share that belong there. Recall: of "
        "the texts of a class, the share it found. F1: their harmonic mean."
    )


def mistakes_tab(tab, res: dict, rep: dict) -> None:
    mistakes = tr.mistakes_frame(rep)
    if not len(mistakes):
        tab.success("No mistakes on the validation data.")
        return
    tab.dataframe(
        mistakes,
        hide_index=True,
        width="stretch",
        column_config={"confidence": st.column_config.ProgressColumn(format="%.2f", min_value=0.0, max_value=1.0)},
    )
    tab.caption(
        "The validation texts it got wrong while being most sure. Some labels are "
        "debatable; some mistakes show what the model has not learned."
    )
    csv_download(tab, res, mistakes, "mistakes")


def cls_comparison(res: dict, text: str) -> None:
    """[CLS]'s attention before and after fine-tuning, on the text typed."""
    before = tr.base_bundle(res["info"].get("base_source"))
    if before is None:
        st.info("The model it started from is no longer in this session.")
        return
    jid = res["job_id"]
    tokens, att0, att1 = tr.cls_attention(before, res["bundle"], text[:2000])
    figures.show(
        train_plots.cls_attention(tokens[:64], att0[:64], att1[:64]), f"finetune-cls-{jid}", key=f"ft_cls_{jid}"
    )
    cut = " (first 64 tokens)" if len(tokens) > 64 else ""
    mean = res["info"]["args"].pooling == "mean"
    st.caption(
        f"Where [CLS] looks in the last layer (mean over heads), before and after fine-tuning{cut}. "
        + ("With mean pooling the head reads every token, so [CLS] itself may change little." if mean else "")
    )


def try_it(res: dict) -> None:
    b, jid, args = res["bundle"], res["job_id"], res["info"]["args"]
    st.subheader("Try it")
    key = f"ft_try_{jid}"
    ts.seed(key, TRY_DEFAULT)
    text = st.text_area("A text to classify", key=key, height=70, max_chars=SENTENCE_CHARS)
    ts.remember(key)
    if not text.strip():
        st.info("Type a text to see the class probabilities.")
        return
    left, right = st.columns([2, 3])
    probs = b.classify([text[:5000]], max_length=args.max_length)[0].numpy()
    figures.show(
        train_plots.class_probs(b.labels, probs, "class probabilities"),
        f"finetune-probs-{jid}",
        where=left,
        key=f"ft_probs_{jid}",
    )
    with right, show_errors("the attention comparison"):
        cls_comparison(res, text)


def show_result(res: dict) -> None:
    rep, info, fin, args = res["report"], res["info"], res["done"], res["info"]["args"]  # FinetuneDone, FinetuneArgs
    acc = rep["accuracy"] if rep else fin.accuracy
    view.result_summary(
        PAGE,
        res,
        [
            ("Validation accuracy", f"{acc:.1%}" if isinstance(acc, (int, float)) and acc == acc else "–"),
            ("Macro F1", f"{rep['macro_f1']:.3f}" if rep else "–"),
            ("Validation texts", f"{(rep or {}).get('n', fin.valid_examples):,}"),
            ("Training time", tr.fmt_seconds(fin.train_seconds)),
            ("Examples/s", f"{fin.examples_per_s:.1f}"),
        ],
        f"**{md_escape(res['name'])}**: fine-tuned from {md_escape(info.get('base_name', '?'))} on "
        f"{md_escape(info.get('train', '?'))}; best model at step {fin.best_step} of "
        f"{fin.steps} · pooling {args.pooling}, {args.max_length} tokens, "
        f"batch {args.batch_size}, learning rate {args.lr:g}, "
        f"{args.epochs} epoch(s). It is in the sidebar's model list for this session.",
        train_plots.finetune_curves(res["metrics"], fin.steps),
    )
    if rep:
        t1, t2, t3 = st.tabs(["Scores per class", "Confusion matrix", "Most confident mistakes"])
        scores_tab(t1, res, rep)
        conf, jid = train_plots.confusion_matrix(rep["confusion"], rep["classes"]), res["job_id"]
        figures.show(conf, f"finetune-conf-{jid}", where=t2, key=f"ft_conf_{jid}")
        mistakes_tab(t3, res, rep)
    try_it(res)
    view.keep_it(PAGE, res)


# --- 5. results ----------------------------------------------------------------------------------
view.results_section(PAGE, "5. Results", show_result)
