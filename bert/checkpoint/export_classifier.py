"""What a classifier's Hugging Face export needs to give our probabilities outside the app.

`transformers.BertForSequenceClassification` pools with the pooler's tanh(W h_[CLS]); a model
fine-tuned here with mean or max pooling never trained that pooler, so there it gives about
1/K for every class. The export therefore carries `pooling_config.json` and a short
`predict.py` (plain `transformers.BertModel` + the saved classifier weights + our pooling), and a
README that says which one to use.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..atomic_files import atomic_write_text
from .builtins import ASSETS

# The script shipped with an exported classifier: it needs transformers, so it lives as a text
# file beside the other assets and bert/ never imports or contains it.
PREDICT_PY = ASSETS / "export" / "predict.py.txt"


def write_classifier_extras(bundle, folder: Path, max_length: int = 128) -> None:
    """Add pooling_config.json, predict.py and a 'How to use' section to an exported classifier."""
    config = bundle.config
    pooling = config.classifier_pooling
    atomic_write_text(
        Path(folder) / "pooling_config.json",
        json.dumps(
            {
                "pooling": pooling,
                "labels": bundle.labels,
                "max_length": max_length,
                "do_lower_case": bundle.tokenizer.do_lower_case,
            },
            indent=2,
        )
        + "\n",
    )
    atomic_write_text(Path(folder) / "predict.py", PREDICT_PY.read_text(encoding="utf-8"))
    if pooling == "cls":
        how = (
            "This model pools with [CLS], as `transformers.BertForSequenceClassification` does: "
            "`AutoModelForSequenceClassification.from_pretrained(folder)` gives its probabilities "
            "(softmax of the logits); `predict.py` gives the same."
        )
    else:
        how = (
            f"This model pools the last layer by **{pooling}** over the tokens, which "
            "`BertForSequenceClassification` does not do (it would give about the same probability "
            "to every class). Use `predict.py`, which loads `transformers.BertModel` and this "
            "folder's classifier weights and pools as in training:\n\n"
            '    python predict.py "a great film" "dull and slow"\n\n'
            'or `from predict import predict; predict(["a great film"])` for an (N, K) tensor.'
        )
    readme = Path(folder) / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else f"# {bundle.name}\n"
    atomic_write_text(readme, text.rstrip() + "\n\n## How to use it with transformers\n\n" + how + "\n")
