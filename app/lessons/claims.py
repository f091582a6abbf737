"""Claims: the sentences of a lesson that say what the model does ("it puts 'sun' first", "many
heads rest on [CLS]"). A claim is never prose: it is a function of the loaded model that works
the sentence out when shown and says what the model did instead when the model fails it. Lesson
steps name their claim by key (Step.claim); tests/test_claims.py checks every registered claim
on both built-ins against the model's own output, and fails a claim without a check and a
lesson text that states what the model does outside a claim. No streamlit here.

Colour words are never prose either: a claim or a step's text writes COLOUR_SLOTS ("{high}": the
colour of the scale's top, "{more}": the comparative that means more), filled from the colour
scale the figure is drawn with (app/ui/colour_words.py), so a projector's scale gets its words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

COLOUR_SLOTS = ("{high}", "{low}", "{more}")


@dataclass(frozen=True)
class Said:
    """A claim worked out on one model: whether the model does what the lesson would like to show
    (holds), the sentence shown (the claim when it holds, what the model did instead when not),
    and the facts it quotes (words and numbers, for the checks)."""

    holds: bool
    text: str
    facts: dict = field(default_factory=dict)


CLAIMS: dict[str, Callable] = {}  # key -> claim(bundle) -> Said


def claim(key: str) -> Callable:
    """Register a claim function under `key` (one key, one function)."""

    def register(fn: Callable) -> Callable:
        if key in CLAIMS and CLAIMS[key] is not fn:
            raise ValueError(f"two claims named {key!r}")
        CLAIMS[key] = fn
        return fn

    return register


def say(key: str, bundle) -> Said:
    """The claim `key` worked out on `bundle`."""
    return CLAIMS[key](bundle)


def percent(p: float) -> str:
    """A probability as the lessons write it: 0.0381 -> '3.8 %' (one decimal below '10 %')."""
    p = 100 * float(p)
    return f"{p:.1f} %" if p < 10 else f"{p:.0f} %"


def ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th', 23 -> '23rd'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
