"""A view's notebook (app/export/) run headless in the venv's python3 kernel, its imports from this
checkout, and what it left: its numbers (the variable NUMBERS, read after every code cell by a probe
cell that is taken out again), what it printed, the plotly figures it drew."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def require_kernel() -> None:
    """Skip the calling test module where the dev requirements (nbclient, nbformat, ipykernel) are
    missing; in CI, fail instead."""
    try:
        import ipykernel  # noqa: F401
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            raise
        pytest.skip(f"{e.name} is not installed (pip install -r requirements-dev.txt)", allow_module_level=True)


def read(text: str):
    """The notebook's text parsed and validated against the nbformat 4 schema."""
    import nbformat

    node = nbformat.reads(text, as_version=4)
    nbformat.validate(node)
    return node


def run(text: str, monkeypatch):
    """The notebook validated and executed (cells up to 300 s). The kernel inherits this process's
    environment (with `monkeypatch`'s changes), imports from this checkout and runs torch on one
    thread: two threads on a busy two-core machine wait on each other."""
    import nbclient

    node = read(text)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("BERT_EXPLORER_TORCH_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with_probes(node)
    nbclient.NotebookClient(
        node, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    return without_probes(node)


SEEN = "NUMBERS_SEEN "  # what a probe cell prints: the notebook's numbers as JSON, when they changed


def _probe() -> str:
    from app.export.notebook import NUMBERS

    return (
        "import json as _json\n"
        f"if {NUMBERS!r} in globals() and _json.dumps({NUMBERS}) != globals().get('_numbers_seen'):\n"
        f"    _numbers_seen = _json.dumps({NUMBERS})\n"
        f"    print({SEEN!r} + _numbers_seen)"
    )


def with_probes(node):
    """`node` with a probe cell after every code cell: it prints the notebook's numbers when they changed."""
    import nbformat

    cells = []
    for cell in node.cells:
        cells.append(cell)
        if cell.cell_type == "code":
            cells.append(nbformat.v4.new_code_cell(_probe(), metadata={"probe": True}))
    node.cells = cells
    return node


def without_probes(node):
    """The executed `node` as the notebook is (its probe cells out), the numbers they read in
    node.metadata["numbers"], one entry a change, in the order of the cells."""
    import json

    found = []
    for cell in node.cells:
        if cell.metadata.get("probe"):
            text = "".join("".join(o.get("text", "")) for o in cell.outputs)
            found += [json.loads(line[len(SEEN) :]) for line in text.splitlines() if line.startswith(SEEN)]
    node.cells = [c for c in node.cells if not c.metadata.get("probe")]
    node.metadata["numbers"] = found
    return node


def all_numbers(node) -> list:
    """The notebook's numbers after each cell that changed them, in the order of the cells."""
    return list(node.metadata["numbers"])


def numbers(node) -> dict:
    """The notebook's numbers after each change, merged in the order of the cells."""
    found = all_numbers(node)
    assert found, "no cell prints numbers"
    return {k: v for d in found for k, v in d.items()}


def figures(node) -> int:
    """How many plotly figures the executed notebook drew."""
    return sum("application/vnd.plotly.v1+json" in o.get("data", {}) for c in node.cells for o in c.get("outputs", []))


def printed(node) -> str:
    """Everything the executed notebook's cells printed."""
    return "".join("".join(o.get("text", "")) for c in node.cells for o in c.get("outputs", []))


def code_of(node) -> str:
    """The notebook's code, every code cell's source in order."""
    return "".join("".join(c.source) for c in node.cells if c.cell_type == "code")
