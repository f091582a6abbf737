"""Figures for the analysis pages (head patterns, explanations, ablation, side by side).

Pure functions: numpy in, plotly Figure out; no streamlit, no model. Every token or text that
reaches a label or a hover is HTML-escaped first (plotly labels accept a little HTML).

The pages import them from here (`from app import analysis_plots as ap`); they live in
app/head_plots.py (head patterns, ablation), app/explain_plots.py (rollout vs saliency,
logit lens) and app/compare_plots.py (two models, senses, attention over training).

Dimension letters: L layers (L+1 with the embedding output), H heads, T tokens, k top
predictions, K classes, N sentences.
"""

from __future__ import annotations

from .compare_plots import (
    SENSE_COLOURS,
    attention_diff_heatmap,
    change_over_training,
    class_probs_bar,
    moved_heatmap,
    sense_scatter,
    separation_line,
)
from .explain_plots import (
    ROLLOUT_COLOUR,
    SALIENCY_COLOUR,
    answer_by_layer,
    logit_lens_heatmap,
    saliency_bars,
)
from .head_plots import (
    AFTER_COLOUR,
    BEFORE_COLOUR,
    PATTERN_COLOURS,
    PATTERN_SHORT,
    STAT_NAMES,
    class_probs_before_after,
    head_stats_bar,
    importance_heatmap,
    pattern_map,
    topk_before_after,
)
from .plots import DIVERGING, safe_labels

__all__ = [
    "PATTERN_COLOURS",
    "PATTERN_SHORT",
    "STAT_NAMES",
    "ROLLOUT_COLOUR",
    "SALIENCY_COLOUR",
    "BEFORE_COLOUR",
    "AFTER_COLOUR",
    "SENSE_COLOURS",
    "DIVERGING",
    "safe_labels",
    # 1. head patterns
    "pattern_map",
    "head_stats_bar",
    # 2. rollout vs saliency
    "saliency_bars",
    # 3. logit lens
    "logit_lens_heatmap",
    "answer_by_layer",
    # 4. head ablation
    "topk_before_after",
    "class_probs_before_after",
    "importance_heatmap",
    # 5. attention over training
    "change_over_training",
    # 6. two models side by side
    "attention_diff_heatmap",
    "moved_heatmap",
    "class_probs_bar",
    # 7. contextual embedding map
    "sense_scatter",
    "separation_line",
]
