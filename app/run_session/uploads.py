"""Uploaded files of the training pages: kept in the session, parsed once.

An st.file_uploader forgets its value when another page runs, so the bytes are copied into
st.session_state (`remember_upload`) and parsed copies are memoised per file's content
(`read_upload`, `parse_upload`: a rerun never reads a file again); the copy counts
against the upload caps as the session's (app/server/guard.py `keep`). A Fine-tuning file stays
until the student removes it (`remove_upload`), so a second run with more epochs needs no second
upload; when its job starts only the uploader lets go (`let_go_of_uploaders`: Streamlit's own copy
goes). A Pre-training file is dropped when its job starts (`free_uploads`): the job holds it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from bert import BertExplorerError, DataError
from bert.data.labelled import LabelledData, file_columns, read_labelled

from ..server.guard import upload_guard
from . import session as ts
from .follow import current_session_id
from .names import safe_filename

MIN_DOCUMENTS = 2


def remember_upload(key: str, uploaded) -> dict | None:
    """Copy an st.file_uploader value's bytes into session_state (the widget forgets it on a
    page switch). Returns what is stored: {name, data, id} or None. The bytes are never changed."""
    ss = st.session_state
    if uploaded is not None:
        ss.get(ts.FREED, {}).pop(key, None)
        fid = getattr(uploaded, "file_id", None) or f"{uploaded.name}:{uploaded.size}"
        cur = ss.get(key)
        if not cur or cur.get("id") != fid:
            data = uploaded.getvalue()
            name = os.path.basename(str(uploaded.name)) or "upload"
            ss[key] = {"name": name, "data": data, "id": fid, "hash": hashlib.sha256(data).hexdigest()}
            _count(key, ss[key])
    return ss.get(key)


def _count(key: str, upload: dict | None) -> None:
    """The upload guard counts the session's copy in slot `key` (None: the slot is empty)."""
    guard, sid = upload_guard(), current_session_id()
    if guard is None or sid is None:
        return  # no server (AppTest, scripts): nothing to count against
    if upload:
        guard.keep(sid, key, str(upload["id"]), len(upload["data"]))
    else:
        guard.release(sid, key)


def read_upload(key: str, upload: dict, reader: Callable[[bytes, str], object]):
    """``reader(bytes, name)`` of a stored upload, memoised in this session per (reader, content,
    name) under `key` (one file a key: a new one replaces the old). Data errors are memoised too."""
    memo = st.session_state.setdefault(ts.UPLOAD_PARSED, {})
    digest = upload.get("hash") or upload.setdefault("hash", hashlib.sha256(upload["data"]).hexdigest())
    want = (getattr(reader, "__qualname__", repr(reader)), digest, upload["name"])
    hit = memo.get(key)
    if hit is None or hit[0] != want:
        try:
            value = reader(upload["data"], upload["name"])
        except BertExplorerError as e:
            value = e
        hit = memo[key] = (want, value)
    if isinstance(hit[1], BertExplorerError):
        raise hit[1]
    return hit[1]


def let_go_of_uploaders() -> None:
    """Reset the upload widgets (Streamlit then frees its own copy of their files); the copies the
    session keeps stay."""
    ss = st.session_state
    ss[ts.UPLOAD_GEN] = ss.get(ts.UPLOAD_GEN, 0) + 1


def remove_upload(key: str) -> None:
    """The student removes the file kept under `key` (its bytes and parsed copies go)."""
    ss = st.session_state
    ss[key] = None
    _count(key, None)
    ss.get(ts.UPLOAD_PARSED, {}).pop(key, None)
    ss[ts.FT_PARSED] = {}
    let_go_of_uploaders()


def parse_upload(
    upload: dict,
    text_col: str | None = None,
    label_col: str | None = None,
    classes: list[str] | None = None,
    min_per_class: int = 2,
) -> LabelledData:
    """read_labelled on stored upload bytes, memoised per (file, columns) for this session."""
    memo = st.session_state.setdefault(ts.FT_PARSED, {})
    key = (upload["id"], text_col, label_col, tuple(classes) if classes else None, min_per_class)
    hit = memo.get(key)
    if hit is None:
        try:
            hit = read_labelled(
                upload["data"],
                upload["name"],
                text_col=text_col,
                label_col=label_col,
                classes=classes,
                min_per_class=min_per_class,
            )
        except BertExplorerError as e:
            hit = e
        # parsed copies of files no longer uploaded go; at most a few (columns tried) stay
        current = {u["id"] for u in (st.session_state.get(ts.FT_UPLOAD), st.session_state.get(ts.FT_VAL_UPLOAD)) if u}
        for k in [k for k in memo if k[0] not in current or len(memo) >= 4]:
            del memo[k]
        memo[key] = hit
    if isinstance(hit, BertExplorerError):
        raise hit
    return hit


def sniff_columns(upload: dict) -> list[str]:
    """The column names of an uploaded file even when no text/label pair could be detected
    (so the user can choose them); [] when the file cannot be read at all."""
    try:
        return file_columns(upload["data"], upload["name"])
    except Exception:  # noqa: BLE001 - the real reader says what is wrong
        return []


def upload_corpus(upload: dict):
    """An uploaded .txt as a corpus (memoised per file in this session); a DataError when it is
    too small to make next-sentence pairs and a validation part."""
    from bert.data.corpus.base import corpus_from_text

    memo = st.session_state.setdefault(ts.PT_PARSED, {})
    hit = memo.get(upload["id"])
    if hit is None:
        try:
            hit = corpus_from_text(upload["data"], name=safe_filename(Path(upload["name"]).stem, "upload"))
            if hit.num_documents < MIN_DOCUMENTS:
                raise DataError(
                    f"{upload['name']} gives {hit.num_documents} document(s) of "
                    f"{hit.num_sentences} sentence(s): pre-training needs at least "
                    f"{MIN_DOCUMENTS} (one to learn from, one to check on). Separate "
                    f"passages with a blank line, or give at least 40 sentences."
                )
        except BertExplorerError as e:
            hit = e
        memo.clear()
        memo[upload["id"]] = hit
    if isinstance(hit, BertExplorerError):
        raise hit
    return hit


def free_uploads(*keys: str) -> None:
    """Once a job has its data, drop the uploaded files' bytes and parsed copies from this
    session (the job holds the texts it needs), and reset the upload widgets (Streamlit then
    frees its own copy of the file)."""
    if not keys:
        return
    ss = st.session_state
    for key in keys:
        up = ss.get(key)
        if up:
            ss[key] = None
            _count(key, None)
            ss.setdefault(ts.FREED, {})[key] = up["name"]
        ss.get(ts.UPLOAD_PARSED, {}).pop(key, None)
    ss[ts.FT_PARSED] = {}
    ss.pop(ts.PT_PARSED, None)
    let_go_of_uploaders()
