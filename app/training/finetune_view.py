"""The Fine-tuning page's parts: an uploaded file and its columns, the validation data, and a
finished run's results (scores, confusion matrix, mistakes, try it); its Start button is app/training/start.py.

The page (pages/finetune.py) lays them out; what they compute is in app/training/.
"""

import hashlib
from functools import partial

import streamlit as st

from bert.data.labelled import LabelledData

from ..export.notebook import finetune_report
from ..figures import training as training_figures
from ..formatting import md_code, md_escape, table_csv
from ..jobs.spec import FINETUNE
from ..run_session import controls
from ..run_session import session as ts
from ..run_session.names import safe_filename
from ..run_session.progress import fmt_seconds
from ..run_session.reports import base_bundle, cls_attention, mistakes_frame, per_class_frame
from ..run_session.uploads import parse_upload, remember_upload, remove_upload, sniff_columns
from ..ui import show_figure
from ..ui.errors import show_errors
from ..ui.widgets import SENTENCE_CHARS, number_table
from . import page as view
from .data import dropped_text

TRY_DEFAULT = "A gripping story with wonderful performances."
PAGE = controls.TrainPage(
    FINETUNE,
    "ft",
    "finetune",
    hf_class="BertForSequenceClassification",
    ours_help="Unzip and open the folder with bert.load(folder), or in the sidebar.",
)


def labelled_upload(store_key: str, label: str, widget: str) -> dict | None:
    """A file uploader for labelled texts, its file kept in the session under `store_key`."""
    return remember_upload(
        store_key, st.file_uploader(label, type=["csv", "tsv", "jsonl", "json", "txt"], key=ts.upload_key(widget))
    )


def kept_file(key: str, up: dict) -> None:
    """The file kept under `key`: its name and size, and the button that removes it."""
    c1, c2 = st.columns([2, 1], vertical_alignment="center")
    c1.caption(
        f"File: **{md_escape(up['name'])}** ({len(up['data']):,} bytes). It stays in this session, "
        "on other pages and after a run, until you remove it."
    )
    c2.button("Remove file", key=f"{key}_remove", on_click=remove_upload, args=(key,), icon=":material/delete:")


def uploaded_data() -> LabelledData | None:
    """The uploaded labelled file, read with the text and label columns detected or picked below it."""
    label = "A labelled file: CSV, TSV, JSON Lines, or plain text with `label<TAB>text` per line"
    up = labelled_upload(ts.FT_UPLOAD, label, "ft_file")
    if up is None:
        view.upload_missing(
            ts.FT_UPLOAD,
            "Upload a file with a text column and a label column (labels may be words or "
            "numbers). Your file is only read, never changed.",
        )
        return None
    kept_file(ts.FT_UPLOAD, up)
    try:
        detected, err = parse_upload(up), None
    except Exception as e:  # a column problem: let the user choose them below
        detected, err = None, e
    columns = detected.columns if detected else sniff_columns(up)
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
        return detected
    return parse_upload(up, text_col, label_col)


def data_summary(data: LabelledData) -> None:
    """The data's counts, columns, notes, first rows and texts per class."""
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Usable texts", f"{len(data):,}")
    c2.metric("Classes", len(data.classes))
    c3.metric("Rows read", f"{data.rows_read:,}")
    c4.metric("Rows dropped", f"{sum(data.dropped.values()):,}")
    st.caption(
        f"Text column {md_code(data.text_col)}, label column {md_code(data.label_col)}"
        + (f" · {md_escape(data.format)}" if data.format else "")
        + (f" · {md_escape(data.encoding)}" if data.encoding else "")
        + f" · {md_escape(dropped_text(data))}"
    )
    for note in data.notes:
        st.info(md_escape(note), icon=":material/info:")
    left, right = st.expander("First rows and texts per class", icon=":material/table:").columns(
        [3, 2]
    )  # folded: Start stays near
    if data.preview is not None:
        left.dataframe(data.preview, hide_index=True, width="stretch", height=280)
    show_figure.show(
        training_figures.class_counts(data.class_counts, "texts per class"),
        "finetune-counts",
        where=right,
        key="ft_counts",
    )


def validation(data: LabelledData) -> tuple[str, float, LabelledData | None]:
    """The validation choice: ("split", the share kept aside, None) or ("upload", 0.2, the file or None)."""
    valid_file, valid_fraction = None, 0.2
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
                kept_file(ts.FT_VAL_UPLOAD, vup)
                try:
                    valid_file = parse_upload(vup, data.text_col, data.label_col, classes=data.classes, min_per_class=1)
                except Exception:  # other column names: detect them
                    valid_file = parse_upload(vup, classes=data.classes, min_per_class=1)
                st.caption(
                    f"{md_escape(vup['name'])}: {md_escape(valid_file.summary())} · "
                    f"{md_escape(dropped_text(valid_file))}"
                )
    ts.remember("ft_valid_mode")
    return mode, valid_fraction, valid_file


def csv_download(tab, res: dict, frame, what: str) -> None:
    """A button that downloads `frame`, the run's `what` ("scores", "mistakes"), as a .csv."""
    tab.download_button(
        f"Download the {what} (.csv)",
        data=table_csv(frame),
        mime="text/csv",
        file_name=f"{safe_filename(res['name'])}-{what}.csv",
        on_click="ignore",
        key=f"ft_csv_{what}_{res['job_id']}",
    )


def scores_tab(tab, res: dict, rep: dict) -> None:
    per_class = per_class_frame(rep)
    number_table(per_class, ("precision", "recall", "F1"), where=tab)
    csv_download(tab, res, per_class, "scores")
    tab.caption(
        "Precision: of the texts it put in a class, the share that belong there. Recall: of "
        "the texts of a class, the share it found. F1: their harmonic mean."
    )


def mistakes_tab(tab, res: dict, rep: dict) -> None:
    mistakes = mistakes_frame(rep)
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
    before = base_bundle(res["info"].get("base_source"))
    if before is None:
        st.info("The model it started from is no longer in this session.")
        return
    jid = res["job_id"]
    tokens, att0, att1 = cls_attention(before, res["bundle"], text[:2000])
    show_figure.show(
        training_figures.cls_attention(tokens[:64], att0[:64], att1[:64]), f"finetune-cls-{jid}", key=f"ft_cls_{jid}"
    )
    cut = " (first 64 tokens)" if len(tokens) > 64 else ""
    mean = res["info"]["args"].pooling == "mean"
    st.caption(
        f"Where [CLS] looks in the last layer (mean over heads), before and after fine-tuning{cut}. "
        + ("With mean pooling the task head reads every token, so [CLS] itself may change little." if mean else "")
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
    show_figure.show(
        training_figures.class_probs(b.labels, probs, "class probabilities"),
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
            ("Training time", fmt_seconds(fin.train_seconds)),
            ("Examples/s", f"{fin.examples_per_s:.1f}"),
        ],
        f"**{md_escape(res['name'])}**: fine-tuned from {md_escape(info.get('base_name', '?'))} on "
        f"{md_escape(info.get('train', '?'))}; best model at step {fin.best_step} of "
        f"{fin.steps} · pooling {args.pooling}, {args.max_length} tokens, "
        f"batch {args.batch_size}, learning rate {args.lr:g}, "
        f"{args.epochs} epoch(s). It is in the sidebar's model list for this session.",
        training_figures.finetune_curves(res["metrics"], fin.steps),
        notebook=partial(
            finetune_report,
            name=res["name"],
            key=res["key"],
            events=res["metrics"],
            report=rep,
            steps=fin.steps,
        )
        if rep
        else None,
    )
    if rep:
        t1, t2, t3 = st.tabs(["Scores per class", "Confusion matrix", "Most confident mistakes"])
        scores_tab(t1, res, rep)
        conf, jid = training_figures.confusion_matrix(rep["confusion"], rep["classes"]), res["job_id"]
        show_figure.show(conf, f"finetune-conf-{jid}", where=t2, key=f"ft_conf_{jid}")
        mistakes_tab(t3, res, rep)
    try_it(res)
    view.keep_it(PAGE, res)
