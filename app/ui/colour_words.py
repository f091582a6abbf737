"""The words a caption uses for a colour scale, read off the scale itself: what colour the highest
values get ("dark blue", "bright yellow"), the lowest, and the comparative that means "more"
("darker", "brighter"). Captions and lessons take their colour words from here, for the scale the
figure is drawn with (app/ui/show_figure.py's `colour_words` picks the projector's scale when it
is on), never from prose. No streamlit here.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass

import plotly.colors

HUES = ((15, "red"), (40, "orange"), (70, "yellow"), (165, "green"), (255, "blue"), (290, "purple"), (330, "pink"))
GREY_SATURATION = 0.15  # below this a colour has no hue worth naming


@dataclass(frozen=True)
class ColourWords:
    high: str  # the colour of the highest values, e.g. "dark blue"
    low: str  # of the lowest, e.g. "white"
    more: str  # "darker" or "brighter": which way a cell goes as its value grows

    def fill(self, text: str) -> str:
        """`text` with its colour slots ({high}, {low}, {more}) filled."""
        return text.replace("{high}", self.high).replace("{low}", self.low).replace("{more}", self.more)


def _rgb(colour: str) -> tuple[float, float, float]:
    if colour.startswith("#"):
        colour = plotly.colors.hex_to_rgb(colour)
    else:
        colour = plotly.colors.unlabel_rgb(colour)
    r, g, b = (float(c) / 255 for c in colour)
    return r, g, b


def luminance(colour: str) -> float:
    """Relative luminance (WCAG) of an 'rgb(...)' or '#rrggbb' colour, 0 (black) to 1 (white)."""

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = _rgb(colour)
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def colour_name(colour: str) -> str:
    """A plain name: 'white', 'black', 'grey', or a hue with 'dark'/'pale'/'bright' when it is one."""
    r, g, b = _rgb(colour)
    h, lightness, s = colorsys.rgb_to_hls(r, g, b)
    y = luminance(colour)
    if s < GREY_SATURATION or max(r, g, b) - min(r, g, b) < 0.08:
        return "white" if y > 0.85 else "black" if y < 0.03 else "grey"
    if lightness > 0.93:
        return "white"
    deg = h * 360
    hue = next((name for edge, name in HUES if deg < edge), "red")
    if y < 0.12:
        return f"dark {hue}"
    if lightness > 0.85:
        return f"pale {hue}"
    return f"bright {hue}" if y > 0.6 else hue


def words_for(scale) -> ColourWords:
    """The colour words of a plotly colour scale: a name ("Blues", "Cividis", "RdBu_r") or a list
    of (position, colour) pairs."""
    stops = plotly.colors.get_colorscale(scale) if isinstance(scale, str) else [list(s) for s in scale]
    low, high = str(stops[0][1]), str(stops[-1][1])
    return ColourWords(
        high=colour_name(high),
        low=colour_name(low),
        more="darker" if luminance(high) < luminance(low) else "brighter",
    )
