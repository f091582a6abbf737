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

from .fileio import atomic_write_text

PREDICT_PY = '''"""Class probabilities of this fine-tuned BERT with transformers, pooled as it was trained.

    python predict.py "a great film" "dull and slow"

or, from Python:  from predict import predict;  predict(["a great film"])  # (N, K) tensor
Written by BERT Explorer's export; needs torch, transformers and safetensors.
"""
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import BertModel, BertTokenizer

HERE = Path(__file__).resolve().parent


def load(folder=HERE):
    folder = Path(folder)
    cfg = json.loads((folder / "pooling_config.json").read_text())
    tokenizer = BertTokenizer(str(folder / "vocab.txt"), do_lower_case=cfg["do_lower_case"])
    encoder = BertModel.from_pretrained(str(folder), add_pooling_layer=cfg["pooling"] == "cls",
                                        attn_implementation="eager").eval()
    weights = load_file(str(folder / "model.safetensors"))
    w, b = weights["classifier.weight"], weights["classifier.bias"]
    head = torch.nn.Linear(w.shape[1], w.shape[0])
    head.load_state_dict({"weight": w, "bias": b})
    return tokenizer, encoder, head.eval(), cfg


def pool(cfg, out, mask):
    if cfg["pooling"] == "cls":
        return out.pooler_output
    h = out.last_hidden_state                                  # (B, T, C)
    m = mask.unsqueeze(-1).to(h.dtype)                         # (B, T, 1)
    if cfg["pooling"] == "mean":
        return (h * m).sum(1) / m.sum(1).clamp(min=1.0)
    return h.masked_fill(m == 0, torch.finfo(h.dtype).min).max(dim=1).values


def predict(texts, folder=HERE, max_length=None):
    tokenizer, encoder, head, cfg = load(folder)
    enc = tokenizer(list(texts), padding=True, truncation=True,
                    max_length=max_length or cfg["max_length"], return_tensors="pt")
    with torch.no_grad():
        out = encoder(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"],
                      attention_mask=enc["attention_mask"])
        return torch.softmax(head(pool(cfg, out, enc["attention_mask"])), -1)


if __name__ == "__main__":
    _, _, _, cfg = load()
    for text, p in zip(sys.argv[1:], predict(sys.argv[1:])):
        best = int(p.argmax())
        print(f"{cfg['labels'][best]} {float(p[best]):.3f}  {text}")
'''


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
    atomic_write_text(Path(folder) / "predict.py", PREDICT_PY)
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
