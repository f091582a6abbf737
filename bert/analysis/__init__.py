"""Everything a page shows that the model computes, as plain computations returning dataclasses
of numpy arrays (no Streamlit here; app.cache keeps the results).

- full:     the full analysis of one input (attentions, hidden states, embedding parts, q/k/v)
            in one forward pass, and the learned position table;
- mlm:      masked-word top-k with the sentence filled in, next-sentence probability, class
            probabilities;
- heads:    head patterns (Clark et al. 2019, "What does BERT look at?");
- explain:  attention rollout (Abnar & Zuidema 2020) next to gradient saliency (input x
            gradient) with their rank correlation, and the logit lens;
- ablation: switch heads off and see the prediction change; rank heads by their effect;
- compare:  two models side by side;
- words:    a word's vector in context (the mean of its pieces) across layers and sentences,
            word order, the same word in several contexts;
- vectors:  PCA to a plane, cosine similarity, separation of labelled groups.

Everything here is thread-safe and leaves the model untouched: no hooks, no `.train()`, no
gradients on parameters. Models are expected in eval mode (dropout off), as `bert.load`
returns them.

Dimension letters: L layers, H heads, T tokens, C hidden size, V vocabulary, N sentences,
P predicted ([MASK]) positions, K classes, k top predictions.
"""

from .ablation import HeadImportance, ablate, ablate_classifier, head_importance, head_mask
from .common import _encode as _encode  # noqa: F401  (tests build inputs with it)
from .common import _run_layers as _run_layers  # noqa: F401
from .common import encode
from .compare import (
    AttentionDiff,
    ModelOutputs,
    SideBySide,
    attentions_of,
    compare_attention,
    compare_outputs,
    model_outputs,
)
from .explain import LogitLens, Saliency, attention_rollout, logit_lens, saliency_classifier, saliency_mlm, spearman
from .full import Analysis, PositionTable, analyze, position_table
from .heads import (
    BROAD_ENTROPY,
    LABEL_HELP,
    LABELS,
    PATTERN_THRESHOLD,
    PATTERNS,
    HeadPatterns,
    head_pattern_stats,
    head_patterns_over,
    label_heads,
    probe_sentences,
)
from .mlm import MLMPredictions, classifier_probs, mlm_topk, nsp_probability
from .vectors import PCA2D, cosine, cosine_matrix, pca_2d, pca_by_layer, pca_plane, separation
from .words import (
    WORD_BATCH,
    SameWord,
    WordMap,
    WordOrder,
    find_word,
    same_word,
    sense_examples,
    shuffle_words,
    word_map,
    word_order,
    word_pieces,
    word_vectors_by_layer,
)

__all__ = [
    "encode",
    "analyze",
    "Analysis",
    "position_table",
    "PositionTable",
    "mlm_topk",
    "MLMPredictions",
    "nsp_probability",
    "classifier_probs",
    "PATTERNS",
    "LABELS",
    "LABEL_HELP",
    "PATTERN_THRESHOLD",
    "BROAD_ENTROPY",
    "head_pattern_stats",
    "label_heads",
    "probe_sentences",
    "head_patterns_over",
    "HeadPatterns",
    "attention_rollout",
    "saliency_mlm",
    "saliency_classifier",
    "Saliency",
    "spearman",
    "logit_lens",
    "LogitLens",
    "ablate",
    "ablate_classifier",
    "head_importance",
    "HeadImportance",
    "head_mask",
    "attentions_of",
    "compare_attention",
    "AttentionDiff",
    "compare_outputs",
    "model_outputs",
    "ModelOutputs",
    "SideBySide",
    "word_vectors_by_layer",
    "word_pieces",
    "find_word",
    "WORD_BATCH",
    "shuffle_words",
    "word_order",
    "WordOrder",
    "same_word",
    "SameWord",
    "word_map",
    "WordMap",
    "sense_examples",
    "pca_plane",
    "PCA2D",
    "pca_2d",
    "pca_by_layer",
    "cosine",
    "cosine_matrix",
    "separation",
]
