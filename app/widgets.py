"""Small widgets the pages share."""
from __future__ import annotations


def index_slider(where, label: str, n: int, key: str, value: int = 1) -> int:
    """A 1..n slider for a layer or head, returned 0-based. A model with one layer (or one head)
    leaves nothing to choose, and Streamlit refuses a slider whose minimum equals its maximum:
    then a caption says so and 0 is returned."""
    if n <= 1:
        where.caption(f"{label}: 1 (the model has only one)")
        return 0
    return int(where.slider(label, 1, n, min(max(value, 1), n), key=key)) - 1
