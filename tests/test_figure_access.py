"""Every figure for every reader: its words and its table carry the numbers it draws, and its
colours still tell apart what they must for a reader with red-green colour blindness.

The colour check simulates deuteranopia (Machado, Oliveira & Fernandes 2009, severity 1, in
linear RGB) and measures in CIELAB: a sequential scale's lightness must rise or fall steadily
from end to end, a diverging one's from each end to its middle, and the distinct colours of one
figure (bars, lines, categories) must stay at least MIN_DELTA_E apart.
"""

from __future__ import annotations

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
import pytest

from app.figures import attention_heads, causes, compare, explain, seq2seq, task_heads, training
from app.figures.attention import attention_grid, attention_heatmap
from app.figures.embeddings import cosine_heatmap, embedding_part_heatmap, position_pca
from app.figures.masked_lm import mlm_topk_bar
from app.ui import show_figure

MACHADO_DEUTERANOPIA = np.array(
    [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
)
MIN_DELTA_E = 15.0  # CIE76; about where two flat patches read as different colours at a glance
TOKENS = ["[CLS]", "the", "dog", "barked", "[SEP]"]


def rgb(colour: str) -> np.ndarray:
    """'#rrggbb' or 'rgb(r, g, b)' -> floats in 0..1."""
    colour = colour.strip()
    if colour.startswith("#"):
        return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255.0
    return np.array(pc.unlabel_rgb(colour), dtype=float)[:3] / 255.0


def to_linear(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def deuteranope(c: np.ndarray) -> np.ndarray:
    """The linear RGB a deuteranope sees for sRGB `c`."""
    return np.clip(MACHADO_DEUTERANOPIA @ to_linear(c), 0.0, 1.0)


def lab(linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(colour: str) -> tuple[np.ndarray, np.ndarray]:
    """The colour in CIELAB as most readers see it, and as a deuteranope does."""
    c = rgb(colour)
    return lab(to_linear(c)), lab(deuteranope(c))


def samples(scale, n: int = 11) -> list[str]:
    scale = pc.get_colorscale(scale) if isinstance(scale, str) else [[float(a), b] for a, b in scale]
    return pc.sample_colorscale(scale, list(np.linspace(0, 1, n)), colortype="rgb")


def lightness_steady(colours: list[str]) -> bool:
    L = np.array([seen(c)[1][0] for c in colours])
    d = np.diff(L)
    return bool(np.all(d >= -1.0) or np.all(d <= 1.0))


def check_scale(scale, diverging: bool) -> None:
    colours = samples(scale)
    if diverging:
        mid = len(colours) // 2
        assert lightness_steady(colours[: mid + 1]) and lightness_steady(colours[mid:]), scale
    else:
        assert lightness_steady(colours), scale
    a, b = seen(colours[0])[1], seen(colours[-1])[1]
    assert np.linalg.norm(a - b) >= 3 * MIN_DELTA_E, (scale, "ends too alike for a deuteranope")


def check_distinct(colours: set[str], what: str) -> None:
    colours = sorted(colours)
    for i, a in enumerate(colours):
        for b in colours[i + 1 :]:
            for k, view in enumerate(("normal", "deuteranope")):
                d = float(np.linalg.norm(seen(a)[k] - seen(b)[k]))
                assert d >= MIN_DELTA_E, f"{what}: {a} and {b} are {d:.1f} apart ({view} vision)"


def scales_and_colours(fig: go.Figure) -> tuple[list[tuple[object, bool]], set[str]]:
    """Continuous scales (scale, diverging?) and the distinct flat colours a figure uses."""
    scales, flat = [], set()
    for t in fig.data:
        if t.type == "heatmap" and t.colorscale is not None:
            stops = [c for _, c in t.colorscale]
            if len(set(stops)) == 1:  # one flat colour (cells a pattern hides)
                flat.add(stops[0])
            elif len(stops) == 2 * len(set(stops)):  # stepwise: one colour per category
                flat |= set(stops)
            else:
                scales.append((t.colorscale, t.zmid is not None))
        if t.type == "bar" and t.marker.color is not None:
            flat |= {t.marker.color} if isinstance(t.marker.color, str) else set(t.marker.color)
        if t.type == "scatter":
            if t.marker.colorscale is not None:
                scales.append((t.marker.colorscale, False))
            elif t.line.color and t.mode and "lines" in t.mode:
                flat.add(t.line.color)
    if fig.layout.coloraxis.colorscale is not None:
        scales.append((fig.layout.coloraxis.colorscale, fig.layout.coloraxis.cmid is not None))
    return scales, {c for c in flat if isinstance(c, str) and c.lower() not in ("white", "#ffffff")}


def figure_kinds() -> dict[str, go.Figure]:
    rng = np.random.default_rng(0)
    att = rng.dirichlet(np.ones(5), size=5)
    labels = np.array([["[CLS]", "previous", "punctuation"], ["next", "self", "broad"]])
    stats = {s: rng.random((2, 3)) for s in attention_heads.STAT_NAMES}
    return {
        "attention map": attention_heatmap(att, TOKENS, title="L1 H1"),
        "attention grid": attention_grid(rng.dirichlet(np.ones(5), size=(2, 3, 5))),
        "embedding part": embedding_part_heatmap(rng.normal(size=(5, 8)), TOKENS),
        "cosine similarity": cosine_heatmap(np.corrcoef(rng.normal(size=(5, 6)))),
        "positions": position_pca(rng.normal(size=(20, 2))),
        "masked-word bars": mlm_topk_bar(["door", "window"], np.array([0.6, 0.2])),
        "moved": compare.moved_heatmap(rng.random((2, 5))),
        "attention difference": compare.attention_diff_heatmap(att - att.T, TOKENS),
        "patching": causes.patching_heatmap(rng.normal(size=(3, 5)), ["0", "1", "2"], TOKENS),
        "paradigm bars": causes.paradigm_accuracy_bars(["a", "b"], [0.3, 0.9], [10, 10]),
        "head patterns": attention_heads.pattern_map(labels, stats),
        "head importance": attention_heads.importance_heatmap(rng.normal(size=(2, 3))),
        "saliency": explain.saliency_bars(TOKENS, rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))),
        "logit lens": explain.logit_lens_heatmap([["a", "b"], ["c", "d"]], rng.random((2, 2))),
        "decoder attention": seq2seq.attention(att, TOKENS, TOKENS, "cross"),
        "tags": task_heads.tag_heatmap(TOKENS, ["O", "B-PER"], rng.random((5, 2))),
        "confusion": training.confusion_matrix(np.array([[5, 1], [2, 7]]), ["neg", "pos"]),
    }


@pytest.mark.parametrize("kind", list(figure_kinds()))
def test_each_figure_kind_reads_for_a_deuteranope(kind):
    fig = figure_kinds()[kind]
    scales, flat = scales_and_colours(fig)
    assert scales or flat, f"{kind}: no colours found"
    for scale, diverging in scales:
        check_scale(scale, diverging)
    check_distinct(flat, kind)


def test_projector_scale_and_curve_colours_read_for_a_deuteranope():
    check_scale(show_figure.PROJECTOR_SCALE, diverging=False)
    check_distinct(
        {training.TRAIN_COLOUR, training.VALID_COLOUR, training.EXTRA_COLOUR, training.PLATEAU_COLOUR}, "curves"
    )
    check_distinct({explain.ROLLOUT_COLOUR, explain.SALIENCY_COLOUR}, "saliency")
    check_distinct({attention_heads.BEFORE_COLOUR, attention_heads.AFTER_COLOUR}, "before/after")
    check_distinct(set(compare.SENSE_COLOURS), "senses")


def test_the_check_catches_a_red_green_pair_and_a_rainbow():
    with pytest.raises(AssertionError, match="deuteranope"):
        check_distinct({"#2ca02c", "#d62728"}, "red and green")
    with pytest.raises(AssertionError):
        check_scale("Jet", diverging=False)


def test_every_heatmap_and_bar_chart_has_a_table_with_its_numbers():
    for kind, fig in figure_kinds().items():
        if any(t.type in ("heatmap", "bar") for t in fig.data):
            assert show_figure.tables(fig), f"{kind}: no table"
    att = np.full((3, 3), 0.1)
    att[2, 0] = 0.8
    [(_, table)] = show_figure.tables(attention_heatmap(att, ["a", "b", "c"]))
    assert table.loc["c", "a"] == pytest.approx(0.8) and table.shape == (3, 3)
    [(_, bars)] = show_figure.tables(mlm_topk_bar(["door", "window"], np.array([0.6, 0.2])))
    assert list(bars.index) == ["door", "window"] and list(bars.iloc[:, 0]) == [0.6, 0.2]


def test_the_grid_of_every_head_says_and_tabulates_each_heads_strongest_cell():
    atts = np.full((2, 3, 3, 3), 0.1)
    atts[1, 2, 0, 2] = 0.9
    fig = attention_grid(atts, tokens=["a", "b", "c"])
    assert show_figure.describe(fig) == (
        "attention of 2 layers × 3 heads over 3 tokens; the strongest cell of all: layer 2, head 3, a → c (0.90)"
    )
    [(_, table)] = show_figure.tables(fig)
    assert len(table) == 6 and table.iloc[5]["strongest (from → to)"] == "a → c"
    assert table.iloc[5]["its weight"] == pytest.approx(0.9)


def test_words_for_curves_and_clouds_give_their_numbers():
    curve = go.Figure(go.Scatter(x=[1, 2, 3], y=[2.0, 0.5, 1.0], mode="lines", name="loss"))
    assert show_figure.describe(curve) == "loss: last value 1 at 3 (first 2, lowest 0.5, highest 2)"
    cloud = go.Figure(go.Scatter(x=[1, 5, 3], y=[2, 1, 0], mode="markers"))
    assert show_figure.describe(cloud) == "3 points"


def test_a_figure_read_back_from_json_has_the_same_table_and_words():
    """A class question's figure is stored as JSON and shown at the reveal: plotly keeps its numbers
    there as typed arrays ({"dtype", "bdata"}), and the table and words read them as numbers."""
    import plotly.io as pio

    for fig in (
        go.Figure(go.Bar(x=["dog", "cat"], y=np.array([0.25, 0.75]))),
        go.Figure(go.Heatmap(z=np.arange(6, dtype=float).reshape(2, 3))),
    ):
        back = pio.from_json(pio.to_json(fig))
        assert isinstance(back.data[0]["y" if fig.data[0].type == "bar" else "z"], dict)  # typed arrays
        ((title, table),) = show_figure.tables(fig)
        ((title_back, table_back),) = show_figure.tables(back)
        assert table_back.equals(table) and title_back == title
        assert show_figure.describe(back) == show_figure.describe(fig)
