"""The model itself as a figure: a stack of boxes from the input tokens up to the heads.

Pure functions (a config and parameter counts in, a plotly Figure out); no streamlit.
"""

from __future__ import annotations

import html
import textwrap

import plotly.graph_objects as go

# A phone's figure is about 330 px wide: its boxes' text is wrapped to this many characters a line
# (12 px type), the parameter count on a line of its own, and each box is as tall as its lines.
NARROW_CHARS = 34
LINE_PX = 17


def model_diagram(config, counts: dict[str, int], narrow: bool = False) -> go.Figure:
    """Boxes from bottom (tokens) to top (heads), sized by the config, labelled with parameter
    counts; `narrow` (a phone): every line of text wrapped to fit the screen's width."""
    boxes = _diagram_boxes(config, counts)
    n = len(boxes)
    lines = max(len(_box_lines(box, narrow)) for box in boxes)
    fig = go.Figure()
    for i, box in enumerate(boxes):
        _draw_box(fig, i, box, arrow=i < n - 1, narrow=narrow)
    fig.update_xaxes(visible=False, range=[-0.1, 10.7])
    fig.update_yaxes(visible=False, range=[-0.2, n])
    unit = max(48, int(LINE_PX * lines / 0.8) + 8) if narrow else 48  # a box is 0.8 of its unit
    fig.update_layout(
        height=int(unit * n + 40), margin=dict(l=5, r=5, t=10, b=10), plot_bgcolor="white", showlegend=False
    )
    return fig


def _fmt(n: int) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e5 else f"{n:,}"


def _diagram_boxes(config, counts: dict[str, int]) -> list[tuple[str, str, int | None, str]]:
    """(label, detail, params, colour) for each box, bottom to top: input, embeddings, each
    encoder layer, pooler, then every count whose name says "head"."""
    C, L, H = config.hidden_size, config.num_hidden_layers, config.num_attention_heads
    F_, V, P, S = config.intermediate_size, config.vocab_size, config.max_position_embeddings, config.type_vocab_size
    D = C // H
    per_layer = counts.get("encoder layers", 0) // max(L, 1)
    head_rows = [(k, v) for k, v in counts.items() if "head" in k]
    boxes = [  # (label, detail, params, colour)
        ("Input tokens", f"[CLS] A [SEP] B [SEP], up to {P} tokens", None, "#eeeeee"),
        (
            "Embeddings",
            f"word {V:,}×{C} + position {P}×{C} + segment {S}×{C} → norm",
            counts.get("embeddings"),
            "#dadaeb",
        ),
    ]
    for i in range(L):
        boxes.append(
            (
                f"Encoder layer {i + 1}",
                f"attention {H} heads × {D} dims · feed-forward {C}→{F_}→{C} · add & norm after each",
                per_layer,
                "#c6dbef" if i % 2 == 0 else "#9ecae1",
            )
        )
    boxes.append(("Pooler", f"tanh(W · h[CLS]), {C}→{C}: one vector for the input", counts.get("pooler"), "#fdd0a2"))
    for name, n in head_rows:
        boxes.append((name, "", n, "#fdae6b"))
    return boxes


def _box_lines(box: tuple[str, str, int | None, str], narrow: bool) -> list[str]:
    """A box's text as plotly HTML lines: its label (bold) with its parameter count (italic), then
    its detail; `narrow`: the count on a line of its own, each part of the detail (between " · ") on
    its own line, every line wrapped to NARROW_CHARS."""
    label, detail, params, _ = box
    count = f"<i>{_fmt(params)} parameters</i>" if params else ""
    if not narrow:
        first = f"<b>{html.escape(label)}</b>" + (f"   {count}" if count else "")
        return [first, f"<span style='font-size:11px'>{html.escape(detail)}</span>"]
    out = [f"<b>{html.escape(part)}</b>" for part in textwrap.wrap(label, NARROW_CHARS)]
    out += [count] if count else []
    parts = [line for part in detail.split(" · ") for line in textwrap.wrap(part, NARROW_CHARS)]  # a part a line
    out += [f"<span style='font-size:11px'>{html.escape(part)}</span>" for part in parts]
    return out


def _draw_box(fig: go.Figure, i: int, box: tuple[str, str, int | None, str], arrow: bool, narrow: bool) -> None:
    """Box i (from the bottom) with its label and parameter count, and (`arrow`) an arrow up to the next."""
    colour = box[3]
    y0, y1 = i, i + 0.8
    fig.add_shape(
        type="rect", x0=0, x1=10, y0=y0, y1=y1, fillcolor=colour, line=dict(color="#555555", width=1), layer="below"
    )
    fig.add_annotation(
        x=0.15,
        y=y0 + 0.4,
        xanchor="left",
        showarrow=False,
        text="<br>".join(_box_lines(box, narrow)),
        align="left",
        font=dict(size=12, color="#1a1a1a"),
    )
    if arrow:
        fig.add_annotation(
            x=10.35,
            y=y1 + 0.1,
            ax=10.35,
            ay=y0 + 0.3,
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            showarrow=True,
            arrowhead=2,
            arrowsize=1,
            arrowwidth=1.5,
            text="",
        )
