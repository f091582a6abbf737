"""bert/train/plateau.py: when a run from random weights has left the unigram plateau, and the page's
curve marks that moment."""

from app.figures import training as training_figures
from bert.train.events import PretrainEval
from bert.train.plateau import HOLD, left_plateau, plateau_exit
from tests.helpers import pretrain_eval, pretrain_start


def ev(step, top1, tops, base=0.04):
    return pretrain_eval(step, top1, baseline_top1=base, probe=[[[t, 0.1]] for t in tops])


def test_both_conditions_are_needed():
    assert left_plateau(ev(1, 0.09, ["dog", "cat"]))
    assert not left_plateau(ev(1, 0.07, ["dog", "cat"]))  # under 2x the baseline
    assert not left_plateau(ev(1, 0.20, ["the", "the"]))  # every [MASK] the same word
    assert left_plateau(ev(1, 0.20, ["dog"]), baseline_token="the")  # one [MASK]: not the baseline token
    assert not left_plateau(ev(1, 0.20, ["the"]), baseline_token="the")
    assert not left_plateau(ev(1, 0.20, ["dog", "cat"], base=0.0))  # no baseline measured


def test_a_lucky_evaluation_is_not_an_exit():
    good, bad = ["dog", "cat"], ["the", "the"]
    evals = [ev(25, 0.09, good), ev(50, 0.04, bad)] + [ev(75 + 25 * i, 0.09, good) for i in range(HOLD)]
    assert plateau_exit(evals).step == 75
    assert plateau_exit(evals[: 2 + HOLD - 1]) is None


def test_the_curve_marks_the_exit():
    metrics = [pretrain_start("the")] + [
        ev(25 * i, 0.1 if i > 3 else 0.04, ["dog", "cat"] if i > 3 else ["the", "the"]) for i in range(1, 9)
    ]
    fig = training_figures.pretrain_curves(metrics, 300)
    assert any(s.type == "line" and s.x0 == 100 for s in fig.layout.shapes)
    assert any("left the plateau (step 100)" in (a.text or "") for a in fig.layout.annotations)
    flat = [m for m in metrics if not isinstance(m, PretrainEval) or m.step <= 75]
    assert not any(
        "left the plateau" in (a.text or "") for a in training_figures.pretrain_curves(flat).layout.annotations
    )
