"""Head ablation: switch heads off and see the prediction change; rank heads by their effect.

A switched-off head's output is zeroed before the attention output projection, so only the
other heads (and the residual connection) carry information through that layer.

Dimension letters: L layers, H heads, T tokens, C hidden size, V vocabulary, K classes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from .common import class_index, encode_tensors, mask_positions, need_mlm, token_id
from .mlm import MLMPredictions, classifier_probs, mlm_topk


def first_tokens(bundle, text: str, max_tokens: int) -> tuple[str, int]:
    """(text cut after its first `max_tokens` tokens, how many tokens the whole text has).

    Ranking heads runs the model once per head, so the Head ablation page reads only the start
    of a long text; the cut falls at the end of a token (a word's pieces may be split), and the
    cut text gives the same first tokens. The count reads at most 10,000 tokens past the cut."""
    enc = bundle.tokenizer.encode(text, None, max_length=max_tokens + 2)  # [CLS] ... [SEP]
    kept = [i for i, s in enumerate(enc.sequence_ids) if s == 0]
    if not enc.truncated or not kept:
        return text, len(kept)
    return text[: enc.offsets[kept[-1]][1]], len(kept) + enc.num_truncated


def head_mask(L: int, H: int, off) -> np.ndarray:
    """(L, H) of 1.0 (on) with 0.0 at every (layer, head) in `off`."""
    m = np.ones((L, H), dtype=np.float32)
    for l, h in off:
        m[l, h] = 0.0
    return m


def ablate(bundle, text: str, head_mask, k: int = 5, text_b: str | None = None) -> MLMPredictions:
    """Masked-word predictions with heads switched off: head_mask (L, H), 0 = off, 1 = on."""
    return mlm_topk(bundle, text, k=k, head_mask=head_mask, text_b=text_b)


def ablate_classifier(bundle, text: str, head_mask, text_b: str | None = None) -> np.ndarray:
    """Class probabilities (K,) with heads switched off: head_mask (L, H), 0 = off, 1 = on."""
    return classifier_probs(bundle, text, head_mask=head_mask, text_b=text_b)


@dataclass
class HeadImportance:
    """Effect of switching each head off alone, on one prediction.

    scores[l, h] = baseline - value with head (l, h) off: positive means the head helps the
    prediction. For an MLM the value is the log-probability of the target word at the
    position; for a classifier it is the probability of the target class.
    """

    scores: np.ndarray  # (L, H)
    ablated: np.ndarray  # (L, H) the value with that head off
    baseline: float  # the value with every head on
    kind: str  # "mlm" or "classifier"
    target: str  # word or class label
    position: int  # token the prediction is read from
    unit: str  # "log-probability" or "probability"
    seconds: float = 0.0

    def ranking(self, n: int | None = None) -> list[tuple[int, int, float]]:
        """(layer, head, score), most important first."""
        flat = np.argsort(-self.scores, axis=None, kind="stable")
        L, H = self.scores.shape
        out = [(int(i // H), int(i % H), float(self.scores.flat[i])) for i in flat]
        return out if n is None else out[:n]


def _readout(bundle, enc, position):
    """(what, value): what = the HeadImportance fields kind, unit and position; value(h (B, T, C))
    -> (B, V) log-probabilities of the word at the [MASK], or (B, K) class probabilities for a classifier."""
    model = bundle.model
    if bundle.has_mlm:
        need_mlm(bundle, "Switching heads off on a gap")
        pos = mask_positions(enc, bundle.tokenizer, position)[0]
        what = {"kind": "mlm", "unit": "log-probability", "position": pos}
        return what, lambda h: torch.log_softmax(model.mlm(h[:, pos]).float(), -1)
    what = {"kind": "classifier", "unit": "probability", "position": 0}
    return what, lambda h: torch.softmax(model.classify(h).float(), -1)


def _ablated_values(bert_model, inputs, value, tgt: int, L: int, H: int) -> np.ndarray:
    """(L, H): the target's value with each head alone switched off. The layers below the
    ablated one are shared (`inputs[l]` is layer l's input); the H variants of one layer run as
    one batch through the layers above."""
    ablated = np.zeros((L, H))
    for l in range(L):
        alone = [torch.from_numpy(head_mask(L, H, [(l, h)])) for h in range(H)]
        y = torch.cat([bert_model.run(inputs[l], l, l + 1, head_mask=m).state for m in alone])  # (H, T, C)
        ablated[l] = value(bert_model.run(y, l + 1).state)[:, tgt].numpy()
    return ablated


def head_importance(
    bundle, text: str, target: str | int | None = None, position: int | None = None, text_b: str | None = None
) -> HeadImportance:
    """Rank heads by how much the prediction drops when each one alone is switched off.

    MLM models: the log-probability of `target` (default: the top prediction) at `position`
    (default: the first [MASK]). Classifiers: the probability of class `target` (default: the
    predicted class). L x H ablations, computed layer by layer.
    """
    t0 = time.perf_counter()
    bert_model = bundle.model.bert
    enc, ids, types = encode_tensors(bundle, text, text_b)
    L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
    what, value = _readout(bundle, enc, position)
    kind = what["kind"]
    with torch.inference_mode():
        run = bert_model.run(ids, token_type_ids=types, record=["residual"])  # states entering each layer
        base = value(run.state)[0]
        if target is None:
            tgt = int(base.argmax())
        else:
            tgt = token_id(bundle.tokenizer, target) if kind == "mlm" else class_index(bundle, target)
        ablated = _ablated_values(bert_model, run.cache["residual"], value, tgt, L, H)
    baseline = float(base[tgt])
    label = bundle.tokenizer.convert_ids_to_tokens(tgt) if kind == "mlm" else bundle.labels[tgt]
    return HeadImportance(
        scores=baseline - ablated,
        ablated=ablated,
        baseline=baseline,
        target=label,
        seconds=time.perf_counter() - t0,
        **what,
    )
