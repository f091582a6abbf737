"""app/plots and app/helpers: each function returns a figure (or table) of the right shape.

Pure numpy in, plotly out: no model and no streamlit needed.
"""

import html
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from app import formatting
from app.figures.attention import HIDDEN_COLOUR, attention_grid, attention_heatmap, pool_square, walkthrough_bars
from app.figures.core import safe_labels, values_bar
from app.figures.embeddings import (
    cosine_heatmap,
    embedding_part_heatmap,
    embedding_parts_heatmaps,
    layer_similarity,
    norms_bar,
    position_pca,
)
from app.figures.masked_lm import mlm_topk_bar, nsp_bar
from app.figures.model_diagram import model_diagram
from bert import BertConfig, InputError
from bert.analysis.vectors import cosine_matrix, pca_plane
from bert.analysis.words import shuffle_words

rng = np.random.default_rng(0)


def softmax_rows(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_attention_heatmap_is_T_by_T_and_keeps_repeated_tokens_apart():
    tokens = ["[CLS]", "the", "cat", "saw", "the", "dog", "[SEP]"]
    T = len(tokens)
    att = softmax_rows(rng.normal(size=(T, T))).astype(np.float32)
    fig = attention_heatmap(att, tokens, title="layer 1, head 1")
    assert isinstance(fig, go.Figure)
    hm = fig.data[0]
    assert np.asarray(hm.z).shape == (T, T)
    assert len(hm.x) == len(hm.y) == T
    assert len(set(hm.y)) == T, "the two 'the' rows must stay two categories"
    assert "weight" in hm.hovertemplate


def test_labels_are_html_escaped():
    labels = safe_labels(["<script>", "a&b", "<script>"])
    assert labels[0] == "&lt;script&gt;" and labels[1] == "a&amp;b"
    assert labels[2] != labels[0] and labels[2].startswith("&lt;script&gt;")
    fig = mlm_topk_bar(["<b>x</b>", "y"], [0.6, 0.4], title="<img src=x>")
    assert "<img" not in fig.layout.title.text and all("<b>" not in y for y in fig.data[0].y)


@pytest.mark.parametrize("L,H,T", [(6, 12, 10), (2, 4, 50), (12, 12, 7)])
def test_attention_grid_has_L_by_H_tiles(L, H, T):
    atts = softmax_rows(rng.normal(size=(L, H, T, T))).astype(np.float32)
    fig = attention_grid(atts, selected=(1, 2), max_cells=32)
    t = min(T, 32)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (L * (t + 1) - 1, H * (t + 1) - 1)
    assert list(fig.layout.yaxis.ticktext) == [f"L{i + 1}" for i in range(L)]
    assert list(fig.layout.xaxis.ticktext) == [f"H{i + 1}" for i in range(H)]
    # the tile of layer l, head h is that head's map (block-averaged for long inputs)
    small = pool_square(atts, 32)
    np.testing.assert_allclose(z[(t + 1) : (t + 1) + t, 2 * (t + 1) : 2 * (t + 1) + t], small[1, 2], atol=1e-6)
    assert len(fig.layout.shapes) == 1  # the red box around the picked head


def test_pool_square_keeps_row_sums():
    a = softmax_rows(rng.normal(size=(3, 100, 100)))
    p = pool_square(a, 20)
    assert p.shape == (3, 20, 20)
    np.testing.assert_allclose(p.sum(-1) * (100 / 20), np.ones((3, 20)), rtol=0.05)


def test_embedding_figures():
    T, C = 9, 48
    tokens = [f"t{i}" for i in range(T)]
    parts = {k: rng.normal(size=(T, C)).astype(np.float32) for k in ("token", "segment", "position", "sum", "normed")}
    fig = embedding_part_heatmap(parts["sum"], tokens, "sum")
    assert np.asarray(fig.data[0].z).shape == (T, C)
    fig = embedding_parts_heatmaps(parts, tokens)
    assert len(fig.data) == 5 and all(np.asarray(d.z).shape == (T, C) for d in fig.data)
    norms = {k: np.linalg.norm(v, axis=1) for k, v in parts.items()}
    fig = norms_bar(norms, tokens)
    assert len(fig.data) == 5 and all(len(d.y) == T for d in fig.data)


def test_position_pca_has_one_point_per_position():
    P, C = 64, 32
    table = np.cumsum(rng.normal(size=(P, C)), axis=0)  # a smooth walk, like learned positions
    coords, ratio = pca_plane(table)
    assert coords.shape == (P, 2) and 0 < ratio[0] <= 1 and ratio[0] >= ratio[1]
    fig = position_pca(coords, ratio, used=10)
    assert len(fig.data[0].x) == P and len(fig.data[1].x) == 10
    sim = cosine_matrix(table)
    assert sim.shape == (P, P)
    np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-5)
    assert np.asarray(cosine_heatmap(sim).data[0].z).shape == (P, P)


def test_line_and_bar_figures():
    fig = layer_similarity({"a vs b": [1, 0.9, 0.8], "a vs c": [1, 0.95, 0.9]})
    assert len(fig.data) == 2 and list(fig.data[0].x) == [0, 1, 2]
    fig = mlm_topk_bar(["paris", "lyon", "rome"], [0.7, 0.2, 0.05])
    assert list(fig.data[0].y) == ["paris", "lyon", "rome"]
    fig = nsp_bar(0.8)
    np.testing.assert_allclose(list(fig.data[0].x), [0.8, 0.2])
    fig = values_bar(["a", "b"], [0.5, 0.7])
    assert len(fig.data[0].x) == 2
    T = 6
    fig = walkthrough_bars([str(i) for i in range(T)], rng.normal(size=T), softmax_rows(rng.normal(size=T)), "q")
    assert len(fig.data) == 2 and all(len(d.y) == T for d in fig.data)


def test_model_diagram_has_a_box_per_layer():
    cfg = BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=37)
    counts = {
        "embeddings": 1000,
        "encoder layers": 3000,
        "pooler": 100,
        "MLM head (decoder tied to embeddings)": 50,
        "NSP head": 10,
        "total": 4160,
    }
    fig = model_diagram(cfg, counts)
    # input, embeddings, 3 layers, pooler, 2 heads
    assert len(fig.layout.shapes) == 1 + 1 + 3 + 1 + 2
    texts = " ".join(a.text for a in fig.layout.annotations)
    assert "4 heads × 8 dims" in texts and "Encoder layer 3" in texts


def test_a_phones_model_diagram_wraps_every_line_to_its_width_and_keeps_every_word():
    """A real model's boxes (minilm-l6's sizes): on a phone no line is over NARROW_CHARS, the
    same words are there, and the boxes grow to hold the extra lines."""
    from app.figures import model_diagram as md

    cfg = BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12)
    counts = {"embeddings": 11_920_000, "encoder layers": 10_620_000, "pooler": 150_000, "total": 22_690_000}
    counts["MLM head (decoder tied to embeddings)"] = 180_000
    wide, narrow = model_diagram(cfg, counts), model_diagram(cfg, counts, narrow=True)

    def lines(fig):
        return [html.unescape(re.sub(r"<[^>]+>", "", t)) for a in fig.layout.annotations for t in a.text.split("<br>")]

    assert max(map(len, lines(wide))) > md.NARROW_CHARS  # the desktop's lines would not fit a phone
    assert max(map(len, lines(narrow))) <= md.NARROW_CHARS
    assert " ".join(lines(narrow)).replace(" · ", " ").split() == " ".join(lines(wide)).replace(" · ", " ").split()
    assert narrow.layout.height > wide.layout.height


# --- helpers ---------------------------------------------------------------------------------


def test_walkthrough_matches_softmax_attention():
    T, D = 5, 8
    q, k, v = (rng.normal(size=(T, D)) for _ in range(3))
    w = formatting.attention_walkthrough(q, k, v, 2)
    ref = softmax_rows(q @ k.T / np.sqrt(D))
    np.testing.assert_allclose(w["weights"], ref[2], atol=1e-12)
    np.testing.assert_allclose(w["output"], ref[2] @ v, atol=1e-12)


def test_hide_specials_renormalises():
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    att = softmax_rows(rng.normal(size=(4, 4)))
    sub, kept, idx = formatting.hide_specials(att, tokens)
    assert kept == ["a", "b"] and idx == [1, 2] and sub.shape == (2, 2)
    np.testing.assert_allclose(sub.sum(1), 1.0, atol=1e-6)


def test_text_helpers():
    with pytest.raises(InputError):
        formatting.clean_text("   \n\t ")
    assert formatting.clean_text("  ", required=False) == ""
    words = [("the", (0, 3)), ("cat", (4, 7)), ("sat", (8, 11))]
    assert formatting.mask_words("the cat sat", words, [1]) == "the [MASK] sat"
    assert formatting.mask_words("the cat sat", words, [0, 2]) == "[MASK] cat [MASK]"
    shuffled, order = shuffle_words(["a", "b", "c", "d"], seed=3)
    assert shuffled != ["a", "b", "c", "d"] and sorted(shuffled) == ["a", "b", "c", "d"]
    assert [["a", "b", "c", "d"][i] for i in order] == shuffled
    assert formatting.card_summary("---\nlicense: apache-2.0\n---\n# all-MiniLM-L6-v2\nText") == "all-MiniLM-L6-v2"
    from types import SimpleNamespace

    assert formatting.mlm_untrained(SimpleNamespace(mlm_head_trained=False, nsp_head_trained=True))
    assert not formatting.mlm_untrained(SimpleNamespace(mlm_head_trained=True, nsp_head_trained=True))
    assert formatting.nsp_untrained(SimpleNamespace(mlm_head_trained=True, nsp_head_trained=False))


def test_token_table_groups_pieces_and_flags_unk():
    tokens = ["[CLS]", "una", "##ffa", "##ble", "[UNK]", "[SEP]"]
    df = formatting.token_table(
        tokens,
        [101, 1, 2, 3, 100, 102],
        [0] * 6,
        [(0, 0), (0, 3), (3, 6), (6, 9), (10, 11), (0, 0)],
        [None, 0, 0, 0, 1, None],
        [None, 0, 0, 0, 0, None],
        "unaffable 🤗",
    )
    assert list(df["word"]) == ["", "A1", "A1", "A1", "A2", ""]
    assert list(df["unknown"]) == [False, False, False, False, True, False]
    assert df.loc[4, "text"] == "🤗"
    assert formatting.word_groups(df)[1] == formatting.word_groups(df)[3] != formatting.word_groups(df)[4]


def test_vocab_helpers():
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "play", "##play", "player", "replay", "##s"])}
    f = formatting.vocab_facts(vocab)
    assert f["size"] == 7 and f["continuations"] == 2
    hits = formatting.vocab_search(vocab, "play")
    assert hits["token"].iloc[0] in ("play", "##play") and len(hits) == 4


def test_hidden_cells_are_nan_on_grey_and_the_walkthrough_reads_what_the_model_read():
    """Under a causal mask: the heatmap's hidden cells are NaN over a grey background (not
    0-weight cells), the grid draws them as a trace of their own, and the Q/K/V walk-through's
    softmax over the keys a token may read equals the model's attention row."""
    from app.attention_masks import hidden_cells
    from bert.analysis.full import analyze
    from tests.helpers import tiny_bundle

    b = tiny_bundle()
    an = analyze(b, "the film was very good", mask_kind="causal")
    T = an.n_tokens
    hid = hidden_cells("causal", T)
    assert hid.shape == (T, T) and hid[0, 1] and not hid[1, 0] and hidden_cells("bidirectional", T) is None
    fig = attention_heatmap(an.attentions[1, 2], an.tokens, hidden=hid)
    z = np.asarray(fig.data[0].z, dtype=np.float32)
    assert np.isnan(z[hid]).all() and np.isfinite(z[~hid]).all()
    assert fig.layout.plot_bgcolor == HIDDEN_COLOUR
    grid = attention_grid(an.attentions, hidden=hid)
    assert grid.data[-1].name == "hidden by the mask" and np.isnan(np.asarray(grid.data[0].z, dtype=float)).any()
    for i in (0, 3, T - 1):
        w = formatting.attention_walkthrough(an.queries[1, 2], an.keys[1, 2], an.values[1, 2], i, hidden=hid[i])
        assert np.abs(w["weights"] - an.attentions[1, 2, i]).max() < 1e-5
        assert (w["weights"][hid[i]] == 0).all()
