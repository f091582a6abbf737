"""A fine-tuned model's report as tables, and what [CLS] looks at before and after fine-tuning."""

from __future__ import annotations

import numpy as np
import pandas as pd

import bert

from .. import state


def per_class_frame(report: dict) -> pd.DataFrame:
    rows = [
        {"class": c, "precision": v["precision"], "recall": v["recall"], "F1": v["f1"], "texts": v["support"]}
        for c, v in report["per_class"].items()
    ]
    return pd.DataFrame(rows, columns=["class", "precision", "recall", "F1", "texts"])


def mistakes_frame(report: dict) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"text": m["text"], "true": m["true"], "predicted": m["predicted"], "confidence": m["prob"]}
            for m in report.get("mistakes", [])
        ],
        columns=["text", "true", "predicted", "confidence"],
    )


def cls_attention(base: bert.Bundle, tuned: bert.Bundle, text: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """[CLS]'s attention in the last layer, mean over heads, for the base and the fine-tuned
    model on one text: (tokens, before (T,), after (T,))."""
    from bert.analysis.compare import attentions_of

    text = (text or "").strip()
    if not text:
        raise bert.InputError("Type a sentence to compare.")
    text = text[:2000]
    tok_a, att_a = attentions_of(base, text)  # (L, H, T, T)
    tok_b, att_b = attentions_of(tuned, text)
    if tok_a != tok_b:
        raise bert.InputError(
            "The two models split this text differently, so their attention cannot be compared token by token."
        )
    return tok_a, att_a[-1].mean(0)[0], att_b[-1].mean(0)[0]


def base_bundle(source: str | None) -> bert.Bundle | None:
    """The model a run started from (a built-in, a folder, or this session's own), if still there."""
    if not source:
        return None
    name = state.session_model_name(source)
    if name is not None:
        return state.user_models().get(name)
    from ..model_sources import load_model

    return load_model(source)
