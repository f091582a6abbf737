"""The training pages' data: built-in data sets and corpora, the train/validation split, and the
tables the Data section shows."""

from __future__ import annotations

import logging

import pandas as pd
import streamlit as st

from app.run_session.corpora import not_on_server
from bert.data.corpus.base import CorpusError
from bert.data.corpus.fetch import RecentlyFailed
from bert.data.labelled import LabelledData, stratified_sample, stratified_split

log = logging.getLogger("bert_explorer")


@st.cache_resource(max_entries=2, show_spinner="Reading the built-in data set…")
def builtin_data(name: str) -> LabelledData:
    """A built-in data set, shared by all sessions: read-only (splits and samples copy it)."""
    from bert.data.datasets import load_dataset

    return load_dataset(name)


@st.cache_resource(max_entries=3, show_spinner="Reading the corpus…")
def read_corpus(name: str):
    """bert.data.corpus.registry.load_corpus, shared by all sessions (a failure is not kept: see builtin_corpus)."""
    from bert.data.corpus.registry import load_corpus

    return load_corpus(name)


def builtin_corpus(name: str):
    """A built-in pre-training corpus (bert.data.corpus.registry.load_corpus), shared by all sessions: read-only.

    One that cannot be fetched gets one plain message: its details (the client's command, paths,
    package indexes) go to the server log, and it is not tried again for a while
    (bert.data.corpus.fetch.RETRY_AFTER_S)."""
    try:
        return read_corpus(name)
    except CorpusError as e:
        if not isinstance(e, RecentlyFailed):
            log.warning("the corpus %r could not be loaded: %s", name, e)
        raise CorpusError(not_on_server(name)) from None


def split_data(
    data: LabelledData,
    valid: LabelledData | None,
    valid_fraction: float,
    seed: int,
    max_train: int | None,
    max_valid: int | None,
) -> tuple[LabelledData, LabelledData]:
    """(train, valid): the uploaded validation file or a stratified split, then stratified caps."""
    if valid is None:
        train, valid = stratified_split(data, valid_fraction, seed=seed)
    else:
        train = data
    if max_train and len(train) > max_train:
        train = train.subset(
            stratified_sample(train.labels, max_train, seed=seed),
            notes=train.notes + [f"a stratified sample of {max_train:,} training texts is used"],
        )
    if max_valid and len(valid) > max_valid:
        valid = valid.subset(
            stratified_sample(valid.labels, max_valid, seed=seed + 1),
            notes=valid.notes + [f"a stratified sample of {max_valid:,} validation texts is used"],
        )
    return train, valid


def class_table(data: LabelledData) -> pd.DataFrame:
    counts = data.class_counts
    n = max(len(data), 1)
    return pd.DataFrame(
        {"class": list(counts), "texts": list(counts.values()), "share": [v / n for v in counts.values()]}
    )


def dropped_text(data: LabelledData) -> str:
    if not data.dropped:
        return "no rows dropped"
    return "dropped: " + ", ".join(f"{n:,} {why}" for why, n in data.dropped.items())
