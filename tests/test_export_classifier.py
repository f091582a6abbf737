"""A classifier exported in Hugging Face format gives our probabilities in transformers."""

import importlib.util

import pytest
import torch

import bert
from bert.checkpoint.builtins import minilm_package_dir
from bert.task_models import BertForSequenceClassification
from tests.helpers import tiny_config

transformers = pytest.importorskip("transformers")

TEXTS = [
    "A great film, warm and funny.",
    "dull",
    "The plot makes no sense at all, and the acting is worse!",
    "unaffable tokenization of café prices",
]


def _classifier(pooling: str) -> bert.Bundle:
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    config = tiny_config(
        len(tok), intermediate_size=64, max_position_embeddings=128, classifier_pooling=pooling, id2label=labels
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():  # a head that separates the classes clearly
        model.classifier.weight.normal_(0, 2.0)
    return bert.Bundle(model=model, tokenizer=tok, name=f"clf-{pooling}")


def _predict_module(folder):
    spec = importlib.util.spec_from_file_location(f"predict_{folder.name}", folder / "predict.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
def test_predict_py_reproduces_our_probabilities(tmp_path, pooling):
    bundle = _classifier(pooling)
    ours = bundle.classify(TEXTS)
    out = bert.export_hf(bundle, tmp_path / pooling)
    assert (out / "pooling_config.json").is_file() and "predict.py" in (out / "README.md").read_text()
    theirs = _predict_module(out).predict(TEXTS)
    assert (ours - theirs).abs().max().item() <= 1e-4
    assert ours.max(-1).values.min() > 0.4  # not a uniform 1/3: the comparison means something


def test_cls_pooling_also_works_with_auto_model(tmp_path):
    bundle = _classifier("cls")
    out = bert.export_hf(bundle, tmp_path / "cls")
    model = transformers.AutoModelForSequenceClassification.from_pretrained(out, attn_implementation="eager").eval()
    tok = transformers.BertTokenizer(str(out / "vocab.txt"))
    enc = tok(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = torch.softmax(model(**enc).logits, -1)
    assert (bundle.classify(TEXTS) - theirs).abs().max().item() <= 1e-4


def test_mean_pooling_differs_from_what_the_auto_model_would_say(tmp_path):
    """Why predict.py exists: BertForSequenceClassification pools with [CLS] and disagrees."""
    bundle = _classifier("mean")
    out = bert.export_hf(bundle, tmp_path / "mean")
    model = transformers.AutoModelForSequenceClassification.from_pretrained(out, attn_implementation="eager").eval()
    tok = transformers.BertTokenizer(str(out / "vocab.txt"))
    with torch.no_grad():
        auto = torch.softmax(model(**tok(TEXTS, padding=True, return_tensors="pt")).logits, -1)
    assert (bundle.classify(TEXTS) - auto).abs().max().item() > 1e-2
