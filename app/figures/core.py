"""Pure functions that turn numbers into plotly Figures. No streamlit here: unit-tested alone.

Dimension letters: T tokens, C hidden size, L layers, H heads, P positions, K top-k.
Token strings are HTML-escaped before they reach plotly (its labels accept a little HTML).
Repeated tokens get invisible zero-width suffixes so that plotly does not merge them into
one category ("the" twice must stay two rows).
"""

from __future__ import annotations

import functools
import html
import re
import textwrap
import weakref
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

if TYPE_CHECKING:
    from bert.analysis.mlm import MLMPredictions

from .model_diagram import model_diagram as model_diagram  # re-exported: the Home page finds it here

ATTN_SCALE = "Blues"
HIDDEN_COLOUR = "#bdbdbd"  # cells an attention mask hides: grey, never a weight's colour (white is 0)
DIVERGING = "RdBu_r"
_ZW = "\u200b"
PART_NAMES = {
    "token": "token (word) embedding",
    "segment": "segment embedding",
    "position": "position embedding",
    "sum": "sum of the three",
    "normed": "after LayerNorm (the encoder's input)",
}


def safe_labels(tokens) -> list[str]:
    """Escaped, unique labels for a plotly categorical axis."""
    seen: dict[str, int] = {}
    out = []
    for t in tokens:
        t = html.escape(str(t), quote=False)  # plotly renders a few tags; quotes are harmless
        n = seen.get(t, 0)
        seen[t] = n + 1
        out.append(t + _ZW * n)
    return out


FONT = 12  # plotly's default font size, px
CHAR_EM = 0.62  # a label character's width, in em: a generous sans-serif average, so a margin never falls short
TITLE_BAND = 36  # px above everything else for a figure's title
TITLE_CHARS = 40  # a longer title is wrapped at spaces: one line fits a phone's figure (~360 px)


def _label_extent(fig: go.Figure, axis) -> int:
    """The px a top axis' tick labels and title take above the plot area, from its labels' length
    (the traces' x values on it, or its ticktext), its tick angle and font size."""
    name = axis.plotly_name.replace("axis", "")  # "xaxis2" -> "x2"
    labels = list(axis.ticktext or [])
    if not labels:
        for trace in fig.data:
            if (getattr(trace, "xaxis", None) or "x") == name and getattr(trace, "x", None) is not None:
                labels += [str(v) for v in trace.x]
    size = axis.tickfont.size or fig.layout.font.size or FONT
    longest = max((len(html.unescape(re.sub(r"<[^>]+>", "", t)).rstrip(_ZW)) for t in labels), default=0)
    # "auto": plotly turns crowded labels up to 90° on a narrow figure (a phone): the worst case
    angle = np.radians(abs(axis.tickangle)) if isinstance(axis.tickangle, (int, float)) else np.pi / 2
    ticks = max(longest * CHAR_EM * size * np.sin(angle) + size * 1.3 * np.cos(angle), size * 1.3)
    ticks = ticks if axis.showticklabels is not False else 0
    title = (axis.title.font.size or size) * 1.8 if axis.title.text else 0
    return int(np.ceil(ticks + title + 12))


def fit_labels(fig: go.Figure) -> go.Figure:
    """`fig` (in place) with every tick label and axis title inside it and its title clear of them,
    whatever the template (Streamlit's has no automargin: its page adds it when drawing, a saved
    view has no Streamlit): automargin on every axis; the title, left-aligned, at the top of the
    figure in a band of its own, the top margin that band plus what a key axis on top takes
    (_label_extent, from its labels' length), so automargin never pushes labels into the title."""
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    text = fig.layout.title.text
    if not text:
        return fig
    lines = [line.strip() for line in text.split("<br>")]
    if "<" not in text and len(html.unescape(text)) > TITLE_CHARS:  # plain (escaped) text: wrapped
        lines = textwrap.wrap(text, TITLE_CHARS, break_long_words=False, break_on_hyphens=False)
    size = fig.layout.title.font.size or (fig.layout.font.size or FONT) * 1.4
    band = int(max(TITLE_BAND, size * 2) + (len(lines) - 1) * size * 1.3)
    on_top = [ax for ax in fig.select_xaxes() if ax.side == "top" and ax.visible is not False]
    top = band + max((_label_extent(fig, ax) for ax in on_top), default=0)
    fig.update_layout(
        title=dict(
            text=" <br>".join(lines),  # the space keeps the words apart in the title as plain text
            x=0,
            xref="container",
            xanchor="left",
            y=1,
            yref="container",
            yanchor="top",
            pad=dict(t=8 + (len(lines) - 1) * size, l=10),  # plotly anchors a wrapped title by its middle line
        ),
        margin=dict(t=max(top, fig.layout.margin.t or 0)),
    )
    return fig


def fitted(build):
    """A figure builder whose figures get fit_labels: the same layout on the page, in a saved view
    and in a notebook."""

    @functools.wraps(build)
    def fitted_build(*args, **kwargs):
        return fit_labels(build(*args, **kwargs))

    return fitted_build


def is_fitted(fig: go.Figure) -> bool:
    """True when fit_labels has been applied to `fig` (its first axes' automargin is on)."""
    return fig.layout.xaxis.automargin is True and fig.layout.yaxis.automargin is True


def esc(text) -> str:
    """`text` as a string, HTML-escaped (quotes too) for a plotly title, label or hover."""
    return html.escape(str(text))


def model_line(
    name: str, what: str, x, values, colour: str, dash: str, at: str, mode: str = "lines", hover_what: str = ""
) -> go.Scatter:
    """One measure (`what`) of one model or run (`name`) over `x`, in its colour and dash; its hover
    names both (`hover_what` for the measure, when given), the x value after `at` ("step " or "")."""
    return go.Scatter(
        x=x,
        y=np.asarray(values, dtype=np.float64),
        mode=mode,
        name=f"{esc(name)}: {what}",
        line=dict(color=colour, dash=dash),
        hovertemplate=f"{esc(name)}, {at}%{{x}}: {hover_what or what} %{{y:.3f}}<extra></extra>",
    )


def diverging(m: float) -> dict:
    """A heatmap's colours for signed values: DIVERGING, white at 0, from -m to m."""
    return dict(colorscale=DIVERGING, zmid=0, zmin=-m, zmax=m)


def _height_for(n: int, per: int = 18, lo: int = 360, hi: int = 900, extra: int = 160) -> int:
    return int(max(lo, min(hi, per * n + extra)))


# --- attention ----------------------------------------------------------------------------------


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
        title=title, height=_height_for(n, per=16, lo=420, hi=860), margin=dict(l=10, r=10, t=50 if title else 20, b=10)
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


# --- embeddings ----------------------------------------------------------------------------------


@fitted
def embedding_part_heatmap(part: np.ndarray, tokens, name: str = "", zmax: float | None = None) -> go.Figure:
    """One embedding part as tokens x dimensions. part: (T, C)."""
    part = np.asarray(part, dtype=np.float32)
    y = safe_labels(tokens)
    # colour range from the 99th percentile: a few huge dimensions would wash out the rest
    z = zmax if zmax else float(np.percentile(np.abs(part), 99) or np.abs(part).max() or 1.0)
    fig = go.Figure(
        go.Heatmap(
            z=part,
            y=y,
            **diverging(z),
            hovertemplate="%{y}, dim %{x}: %{z:.3f}<extra></extra>",
            colorbar=dict(thickness=12),
        )
    )
    fig.update_layout(
        title=PART_NAMES.get(name, name),
        height=_height_for(len(y), per=14, lo=280, hi=700),
        margin=dict(l=10, r=10, t=40, b=10),
    )
    fig.update_xaxes(title="dimension")
    fig.update_yaxes(autorange="reversed", type="category", showticklabels=len(y) <= 60)
    return fig


@fitted
def embedding_parts_heatmaps(parts: dict[str, np.ndarray], tokens) -> go.Figure:
    """All embedding parts stacked, one heatmap per part (tokens x dimensions), shared colours."""
    names = list(parts)
    y = safe_labels(tokens)
    fig = make_subplots(
        rows=len(names),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.04,
        subplot_titles=[PART_NAMES.get(n, n) for n in names],
    )
    for i, n in enumerate(names):
        p = np.asarray(parts[n], dtype=np.float32)
        fig.add_trace(
            go.Heatmap(z=p, y=y, coloraxis="coloraxis", hovertemplate="%{y}, dim %{x}: %{z:.3f}<extra></extra>"),
            row=i + 1,
            col=1,
        )
    zmax = max(float(np.percentile(np.abs(np.asarray(parts[n])), 99)) for n in names) or 1.0
    fig.update_layout(
        coloraxis=dict(colorscale=DIVERGING, cmid=0, cmin=-zmax, cmax=zmax),
        height=int(len(names) * _height_for(len(y), per=10, lo=180, hi=360) + 60),
        margin=dict(l=10, r=10, t=40, b=10),
    )
    fig.update_yaxes(autorange="reversed", type="category", showticklabels=len(y) <= 40)
    fig.update_xaxes(title_text="dimension", row=len(names), col=1)
    return fig


@fitted
def norms_bar(norms: dict[str, np.ndarray], tokens) -> go.Figure:
    """Length (L2 norm) of each part's vector, per token, as grouped bars."""
    x = safe_labels(tokens)
    fig = go.Figure()
    for name, v in norms.items():
        fig.add_trace(
            go.Bar(
                name=PART_NAMES.get(name, name),
                x=x,
                y=np.asarray(v, dtype=np.float32),
                hovertemplate="%{x}: %{y:.2f}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        height=380,
        margin=dict(l=10, r=10, t=40, b=10),
        title="vector length per token",
        legend=dict(orientation="h", y=-0.3),
        yaxis_title="L2 norm",
    )
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=len(x) <= 80)
    return fig


@fitted
def position_pca(coords: np.ndarray, ratio=None, used: int | None = None) -> go.Figure:
    """The learned position embeddings projected to 2-D, one point per position (coords (P, 2))."""
    coords = np.asarray(coords, dtype=np.float32)
    P = coords.shape[0]
    pos = np.arange(P)
    fig = go.Figure(
        go.Scatter(
            x=coords[:, 0],
            y=coords[:, 1],
            mode="markers+lines",
            line=dict(color="rgba(150,150,150,0.3)", width=1),
            marker=dict(color=pos, colorscale="Viridis", size=6, colorbar=dict(title="position", thickness=12)),
            customdata=pos,
            hovertemplate="position %{customdata}<extra></extra>",
            name="positions",
        )
    )
    if used:
        u = min(used, P)
        fig.add_trace(
            go.Scatter(
                x=coords[:u, 0],
                y=coords[:u, 1],
                mode="markers",
                marker=dict(size=11, color="rgba(0,0,0,0)", line=dict(color="#d62728", width=2)),
                customdata=pos[:u],
                hovertemplate="position %{customdata} (used)<extra></extra>",
                name="used by your input",
            )
        )
    r = "" if ratio is None else f" (PC1 {100 * float(ratio[0]):.0f}%, PC2 {100 * float(ratio[1]):.0f}% of variance)"
    fig.update_layout(
        title=f"position embeddings, PCA to 2-D{r}",
        height=480,
        margin=dict(l=10, r=10, t=50, b=10),
        showlegend=bool(used),
        legend=dict(orientation="h", y=-0.12),
    )
    fig.update_xaxes(title="PC1")
    fig.update_yaxes(title="PC2", scaleanchor="x", scaleratio=1)
    return fig


@fitted
def cosine_heatmap(sim: np.ndarray, labels=None, title: str = "cosine similarity", axis_title: str = "") -> go.Figure:
    """(N, N) cosine similarities, -1..1."""
    sim = np.asarray(sim, dtype=np.float32)
    kw = {}
    if labels is not None:
        kw = dict(x=safe_labels(labels), y=safe_labels(labels))
    fig = go.Figure(
        go.Heatmap(
            z=sim,
            **diverging(1),
            hovertemplate="%{y} vs %{x}: %{z:.2f}<extra></extra>",
            colorbar=dict(thickness=12),
            **kw,
        )
    )
    fig.update_layout(title=title, height=480, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title=axis_title)
    fig.update_yaxes(title=axis_title, autorange="reversed", scaleanchor="x", scaleratio=1)
    return fig


@fitted
def layer_similarity(
    series: dict[str, list[float]], title: str = "cosine similarity by layer", y_title: str = "cosine similarity"
) -> go.Figure:
    """Lines over layers (x = 0 for the embedding output, then 1..L)."""
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_trace(
            go.Scatter(
                x=list(range(len(ys))),
                y=[float(v) for v in ys],
                mode="lines+markers",
                name=html.escape(name),
                hovertemplate="layer %{x}: %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(
        title=title, height=380, margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.25)
    )
    fig.update_xaxes(title="layer (0 = embeddings)", dtick=1)
    fig.update_yaxes(title=y_title)
    return fig


@fitted
def values_bar(labels, values, title: str = "", y_title: str = "", range_y=None) -> go.Figure:
    """A plain bar chart with escaped labels."""
    fig = go.Figure(
        go.Bar(
            x=safe_labels(labels), y=np.asarray(values, dtype=np.float32), hovertemplate="%{x}: %{y:.3f}<extra></extra>"
        )
    )
    fig.update_layout(title=title, height=340, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(type="category", tickangle=-45)
    fig.update_yaxes(title=y_title, range=range_y)
    return fig


# --- masked LM and next sentence -------------------------------------------------------------------


def probability_bars(probs, labels, colour, **extra) -> go.Bar:
    """Horizontal bars of probabilities (x) for `labels` (y), each showing its percentage;
    `extra`: more go.Bar settings."""
    return go.Bar(
        x=probs,
        y=labels,
        orientation="h",
        marker_color=colour,
        text=[f"{p:.1%}" for p in probs],
        textposition="auto",
        hovertemplate="%{y}: %{x:.2%}<extra></extra>",
        **extra,
    )


@fitted
def mlm_topk_bar(tokens, probs, title: str = "") -> go.Figure:
    """Top-k candidates for one [MASK], most likely on top. tokens: K strings, probs: K values."""
    probs = np.asarray(probs, dtype=np.float32)
    y = safe_labels(tokens)
    fig = go.Figure(probability_bars(probs, y, "#1f77b4"))
    fig.update_layout(title=html.escape(title), height=int(60 + 28 * len(y)), margin=dict(l=10, r=10, t=40, b=10))
    fig.update_xaxes(title="probability", range=[0, max(1e-6, float(probs.max()) * 1.1 if len(probs) else 1)])
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


@fitted
def replaced_bar(tokens: list[str], probs) -> go.Figure:
    """ELECTRA's discriminator: one bar per token, P(replaced); red over one half."""
    probs = [float(p) for p in probs]
    x = safe_labels(tokens)  # escaped, unique: a word may repeat
    colours = ["#d62728" if p > 0.5 else "#1f77b4" for p in probs]
    fig = go.Figure(
        go.Bar(x=x, y=probs, marker_color=colours, hovertemplate="%{x}<br>P(replaced) %{y:.1%}<extra></extra>")
    )
    fig.add_hline(y=0.5, line_dash="dot", line_color="grey")
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), title="P(this token was replaced)")
    fig.update_yaxes(range=[0, 1], title="probability")
    return fig


@fitted
def nsp_bar(p_is_next: float) -> go.Figure:
    """The NSP head's two probabilities: B follows A (IsNext) or not (NotNext)."""
    p = float(p_is_next)
    labels = ["B follows A (IsNext)", "B is random (NotNext)"]
    fig = go.Figure(probability_bars([p, 1 - p], labels, ["#2ca02c", "#d62728"]))
    fig.update_layout(height=200, margin=dict(l=10, r=10, t=20, b=10))
    fig.update_xaxes(range=[0, 1], title="probability")
    fig.update_yaxes(autorange="reversed")
    return fig


def two_readings(both: MLMPredictions, left: MLMPredictions, gap: int = 0) -> go.Figure:
    """A gap's top guesses read both ways (left) and read left only (right), side by side (the
    encoders-and-decoders lesson, the class board's "both ways or left only" question)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("reads both ways", "reads left only"), horizontal_spacing=0.2)
    for c, (p, colour) in enumerate(((both, "#1f77b4"), (left, "#ff7f0e")), 1):
        fig.add_trace(probability_bars(p.top_probs[gap], safe_labels(p.top_tokens[gap]), colour), row=1, col=c)
        fig.update_yaxes(autorange="reversed", type="category", row=1, col=c)
    top = max(float(both.top_probs[gap].max()), float(left.top_probs[gap].max()), 1e-6)
    fig.update_xaxes(title_text="probability", range=[0, top * 1.15])  # one scale for both, the bars readable
    fig.update_layout(showlegend=False, height=80 + 34 * len(both.top_tokens[gap]), margin=dict(l=10, r=10, t=40, b=10))
    return fig
