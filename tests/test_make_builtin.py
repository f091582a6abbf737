"""scripts/make_builtin.py: the model card's "What it read" line, which the Masked LM page shows."""

import importlib.util
from pathlib import Path

from bert.checkpoint.builtins import what_it_read
from bert.data.corpus.registry import CORPORA

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make_builtin.py"


def _script():
    spec = importlib.util.spec_from_file_location("make_builtin", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_read_line_names_the_sources_and_compares_with_bert_base():
    mb = _script()
    line = mb.read_line(["wiki", "brown", "bbc"], 2_147_531, "scratch")
    assert line == (
        "What it read: 2.1 M words of English (a Wikipedia sample, the Brown Corpus, BBC News), from "
        "random weights; BERT-base read 3.3 B words, about 1,500 times more."
    )
    line = mb.read_line(["wordnet", "sotu"], 6_620_000, "minilm-l6", " (an encoder)")
    assert "WordNet glosses, State of the Union addresses), starting from `minilm-l6` (an encoder);" in line
    assert line.endswith("about 500 times more.")
    assert what_it_read(f"# m\n\nA model.\n\n{line}\n").startswith("6.6 M words of English")
    assert set(mb.READ_TITLES) == set(CORPORA)  # every corpus has its name in the line
