"""Attention figures: one head's map, every head's maps a page at a time, the grid of every layer
and head, a summary of the heads, and one query's walk through its scores and weights.

Dimension letters: T tokens, L layers, H heads.
"""

from __future__ import annotations

import html
import weakref

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .core import fitted, height_for, safe_labels

ATTN_SCALE = "Blues"
HIDDEN_COLOUR = "#bdbdbd"  # cells an attention mask hides: grey, never a weight's colour (white is 0)


@fitted
def attention_heatmap(
    att: np.ndarray,
    query_tokens,
    key_tokens=None,
    title: str = "",
    zmax: float | None = None,
    hidden: np.ndarray | None = None,
) -> go.Figure:
    """One head's attention: rows are the tokens that look (queries), columns what they look at
    (keys); each row sums to 1. att: (Tq, Tk). hidden: (Tq, Tk) bool, the cells an attention
    mask hides: NaN in the data (no hover), drawn in HIDDEN_COLOUR behind the map, so a
    hidden cell never looks like a cell read with weight 0."""
    att = np.asarray(att, dtype=np.float32)
    if hidden is not None:
        att = np.where(hidden, np.float32(np.nan), att)
    key_tokens = query_tokens if key_tokens is None else key_tokens
    y, x = safe_labels(query_tokens), safe_labels(key_tokens)
    fig = go.Figure(
        go.Heatmap(
            z=att,
            x=x,
            y=y,
            colorscale=ATTN_SCALE,
            zmin=0.0,
            zmax=zmax if zmax else float(max(np.nanmax(att), 1e-6)),
            hoverongaps=False,
            hovertemplate="%{y} looks at %{x}<br>weight %{z:.3f}<extra></extra>",
            colorbar=dict(title="weight", thickness=12),
        )
    )
    n = max(len(x), len(y))
    fig.update_layout(
        title=title, height=height_for(n, per=16, lo=420, hi=860), margin=dict(l=10, r=10, t=50 if title else 20, b=10)
    )
    if hidden is not None:
        fig.update_layout(plot_bgcolor=HIDDEN_COLOUR)  # what shows through the NaN cells
    fig.update_xaxes(title="key (looked at)", side="top", tickangle=-60, type="category", showgrid=False)
    fig.update_yaxes(title="query (looking)", autorange="reversed", type="category", showgrid=False)
    if n > 60:
        fig.update_xaxes(showticklabels=False)
        fig.update_yaxes(showticklabels=False)
    return fig


class ReleasedError(LookupError):
    """head_maps' attention was released (the analysis cache let it go) before a head was drawn."""


def head_maps(atts: np.ndarray, tokens, keep=None, start: int = 0, size: int | None = None, hidden=None):
    """draw(layer, head) -> that head's attention_heatmap over the kept tokens' window
    [start, start + size): every head's map as the page draws its picked one, for a saved view's
    layer and head menus. atts: (L, H, T, T), held weakly and cut a head at a time when drawn: a
    page's saved-view button neither keeps the analysis alive past the analysis cache nor draws
    every head on every run; a head drawn after the cache released it raises ReleasedError.
    keep: the token indices kept when [CLS]/[SEP] are hidden (each row then rescaled to sum to 1
    over them), None for all; hidden: the window's (size, size) bool cells, as attention_heatmap
    takes them."""
    keep = list(range(len(tokens))) if keep is None else list(keep)
    stop = len(keep) if size is None else start + size
    rescale = len(keep) < len(tokens)
    rows, shown = keep[start:stop], [tokens[j] for j in keep[start:stop]]
    held = weakref.ref(atts)

    def draw(layer: int, head: int) -> go.Figure:
        a = held()
        if a is None:
            raise ReleasedError("the analysis behind these maps was released")
        m = np.array(a[layer, head][rows][:, keep], dtype=np.float32)  # (window, kept): a copy
        if rescale:
            m = m / np.maximum(m.sum(-1, keepdims=True), 1e-12)
        return attention_heatmap(m[:, start:stop], shown, title=f"layer {layer + 1}, head {head + 1}", hidden=hidden)

    return draw


def pool_square(a: np.ndarray, max_cells: int) -> np.ndarray:
    """Block-average the last two (T, T) axes down to at most max_cells x max_cells."""
    T = a.shape[-1]
    if T <= max_cells:
        return a
    edges = np.linspace(0, T, max_cells + 1).astype(int)
    rows = np.stack([a[..., edges[i] : edges[i + 1], :].mean(axis=-2) for i in range(max_cells)], axis=-2)
    return np.stack([rows[..., edges[j] : edges[j + 1]].mean(axis=-1) for j in range(max_cells)], axis=-1)


def tile_heads(atts: np.ndarray, max_cells: int = 32, gap: int = 1) -> np.ndarray:
    """(L, H, T, T) -> one (L*(t+gap)-gap, H*(t+gap)-gap) image, NaN between the tiles
    (t = min(T, max_cells): long inputs are block-averaged first)."""
    small = pool_square(np.asarray(atts, dtype=np.float32), max_cells)
    L, H, t, _ = small.shape
    s = t + gap
    out = np.full((L * s - gap, H * s - gap), np.nan, dtype=np.float32)
    for l in range(L):
        for h in range(H):
            out[l * s : l * s + t, h * s : h * s + t] = small[l, h]
    return out


def _veiled(z: np.ndarray, atts: np.ndarray, hidden: np.ndarray | None, max_cells: int):
    """(the tiled image without its hidden cells, the same tiling of the hidden cells: 1 where hidden,
    drawn as a grey trace of its own, or None without `hidden`)."""
    if hidden is None:
        return z, None
    h = tile_heads(np.broadcast_to(np.asarray(hidden, dtype=np.float32), atts.shape), max_cells, gap=1) == 1.0
    return np.where(h, np.float32(np.nan), z), np.where(h, np.float32(1.0), np.float32(np.nan))


@fitted
def attention_grid(
    atts: np.ndarray,
    selected: tuple[int, int] | None = None,
    max_cells: int = 32,
    hidden: np.ndarray | None = None,
    tokens=None,
) -> go.Figure:
    """All heads as thumbnails: one row per layer, one column per head. atts: (L, H, T, T).
    hidden: (T, T) bool, the cells an attention mask hides, drawn grey in every tile (a block
    of a long input is grey when all of its cells are hidden). Its text alternative and table
    (layout.meta, `head_summary`) name each head's strongest cell, by `tokens` when given.

    Drawn as ONE tiled heatmap rather than L x H subplots: make_subplots is slow for many heads,
    one image is quick to build, and the browser draws it faster too.
    """
    atts = np.asarray(atts, dtype=np.float32)
    L, H, T = atts.shape[0], atts.shape[1], atts.shape[2]
    t = min(T, max_cells)
    s = t + 1
    z = tile_heads(atts, max_cells, gap=1)
    z, veil = _veiled(z, atts, hidden, max_cells)
    # per-pixel layer/head numbers for the hover text
    rows = np.minimum(np.arange(z.shape[0]) // s, L - 1) + 1
    cols = np.minimum(np.arange(z.shape[1]) // s, H - 1) + 1
    custom = np.stack(np.broadcast_arrays(rows[:, None], cols[None, :]), axis=-1).astype(np.int16)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            customdata=custom,
            colorscale=ATTN_SCALE,
            zmin=0,
            zmax=1,
            showscale=False,
            hoverongaps=False,
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<extra></extra>",
        )
    )
    if veil is not None:
        fig.add_trace(
            go.Heatmap(
                z=veil,
                name="hidden by the mask",
                colorscale=[[0, HIDDEN_COLOUR], [1, HIDDEN_COLOUR]],
                showscale=False,
                hoverongaps=False,
                hovertemplate="hidden by the mask<extra></extra>",
            )
        )
    fig.layout.meta = head_summary(atts, hidden, tokens)
    _tile_axes(fig, L, H, t)
    if selected is not None:
        l, h = selected
        fig.add_shape(
            type="rect", x0=h * s - 1.0, x1=h * s + t, y0=l * s - 1.0, y1=l * s + t, line=dict(color="#d62728", width=3)
        )
    return fig


def _tile_axes(fig: go.Figure, L: int, H: int, t: int) -> None:
    """One tick at the centre of each head's (column) or layer's (row) tile of t cells and a gap,
    no grid, square cells, and a height for L rows of H tiles."""
    s = t + 1
    centres = [i * s + (t - 1) / 2 for i in range(max(L, H))]
    axis = dict(showgrid=False, zeroline=False, constrain="domain")
    fig.update_xaxes(tickvals=centres[:H], ticktext=[f"H{h + 1}" for h in range(H)], side="top", **axis)
    ticks = dict(tickvals=centres[:L], ticktext=[f"L{l + 1}" for l in range(L)])
    fig.update_yaxes(autorange="reversed", scaleanchor="x", scaleratio=1, **ticks, **axis)
    fig.update_layout(
        height=int(min(900, max(300, 1100 * L / max(H, 1) + 60))),
        margin=dict(l=10, r=10, t=40, b=10),
        plot_bgcolor="white",
    )


def head_summary(atts: np.ndarray, hidden: np.ndarray | None = None, tokens=None) -> dict:
    """Every head of (L, H, T, T) in words and as a table: its strongest cell (from -> to, its
    weight, hidden cells left out) and its mean attention to the token itself; the words name the
    strongest head of all. {"words": str, "table": {"columns", "rows"}}: a figure's layout.meta."""
    a = np.asarray(atts, dtype=np.float64)
    L, H, T = a.shape[0], a.shape[1], a.shape[2]
    if hidden is not None:
        a = np.where(np.broadcast_to(np.asarray(hidden, dtype=bool), a.shape), -np.inf, a)
    names = [str(t) for t in tokens] if tokens is not None and len(tokens) == T else [f"#{i + 1}" for i in range(T)]
    flat = a.reshape(L, H, T * T)
    best = flat.argmax(-1)  # (L, H)
    diag = np.where(np.isfinite(a), a, 0.0).diagonal(axis1=2, axis2=3).mean(-1)  # (L, H)
    rows = []
    for l in range(L):
        for h in range(H):
            i, j = divmod(int(best[l, h]), T)
            rows.append(
                [
                    l + 1,
                    h + 1,
                    f"{names[i]} → {names[j]}",
                    round(float(flat[l, h, best[l, h]]), 3),
                    round(float(diag[l, h]), 3),
                ]
            )
    top = max(rows, key=lambda r: r[3])
    words = (
        f"attention of {L} layers × {H} heads over {T} tokens; the strongest cell of all: layer {top[0]}, "
        f"head {top[1]}, {top[2]} ({top[3]:.2f})"
    )
    columns = ["layer", "head", "strongest (from → to)", "its weight", "mean attention to itself"]
    return {"words": words, "table": {"title": "each head's strongest cell", "columns": columns, "rows": rows}}


@fitted
def walkthrough_bars(tokens, scores: np.ndarray, weights: np.ndarray, query: str) -> go.Figure:
    """For one query token: the scaled scores q.k/sqrt(d) and, below, the softmax weights."""
    x = safe_labels(tokens)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("score = q·k / √d (any real number)", "weight = softmax(score) (positive, sums to 1)"),
    )
    for row, (what, values, colour) in enumerate((("score", scores, "#7f7f7f"), ("weight", weights, "#1f77b4")), 1):
        hover = f"%{{x}}: {what} %{{y:.3f}}<extra></extra>"
        bar = go.Bar(x=x, y=np.asarray(values, dtype=np.float32), marker_color=colour, hovertemplate=hover)
        fig.add_trace(bar, row=row, col=1)
    fig.update_layout(
        showlegend=False,
        height=460,
        margin=dict(l=10, r=10, t=60, b=10),
        title=f"How {html.escape(query)} spreads its attention",
    )
    fig.update_xaxes(type="category", tickangle=-60)
    return fig
