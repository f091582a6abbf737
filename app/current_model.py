"""The model a page runs on: its bundle, the key its analyses are cached under, its label.

app/model_sources.py picks it (the sidebar, a picker's option); app/analysis_cache.py keys analyses by it.
"""

from __future__ import annotations

from dataclasses import dataclass

import bert


@dataclass(frozen=True)
class CurrentModel:
    bundle: bert.Bundle
    key: str  # cache key for analyses: "builtin:<name>", "path:<folder>", "session:<name>:<id>"
    label: str  # what the picker shows
