"""When a model pre-trained from random weights has left the unigram plateau.

At first every [MASK] becomes the most frequent token ("the", ","): the plateau. A run has left
it at the first of HOLD evaluations in a row where (1) held-out masked-LM top-1 is at least twice
the most-frequent-token baseline and (2) the probe sentence's top guesses are no longer one and
the same word at every [MASK] (with one [MASK]: no longer the most frequent token). One lucky
evaluation is not enough: small validation sets are noisy near the baseline.
"""

from __future__ import annotations

from collections.abc import Sequence

from .events import PretrainEval

HOLD = 3


def left_plateau(ev: PretrainEval, baseline_token: str | None = None) -> bool:
    """The evaluation `ev` (of bert.train.pretrain) is past the plateau."""
    base = ev.baseline_top1 or 0.0
    tops = [guesses[0][0] for guesses in ev.probe if guesses]
    if len(tops) > 1:
        varied = len(set(tops)) > 1
    else:
        varied = bool(tops) and tops[0] != baseline_token
    return (ev.mlm_top1 or 0.0) >= 2 * base > 0 and varied


def plateau_exit(
    evals: Sequence[PretrainEval], baseline_token: str | None = None, hold: int = HOLD
) -> PretrainEval | None:
    """The first evaluation of the first `hold` in a row past the plateau, or None."""
    run: list[PretrainEval] = []
    for ev in evals:
        run = [*run, ev] if left_plateau(ev, baseline_token) else []
        if len(run) >= hold:
            return run[0]
    return None
