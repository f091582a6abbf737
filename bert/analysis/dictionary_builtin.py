"""The built-in dictionary of features a model ships with (assets/<model>/dictionary.safetensors),
so the Features page opens with features before anything is trained.

The file holds the four parameters in fp16 (loading upcasts to fp32) and, in its safetensors
metadata, what the card and the page say: the dictionary's scalars and training curve, its
quality (bert.analysis.dictionary_quality.Quality) and the part-of-speech purity (dictionary_purity.py)
of it and of the same recipe on the control models, all measured on the fp16 weights as shipped,
and the command that made it (scripts/make_dictionary.py).

The controls' purity beside it is measured like for like, at the dictionary's own layer with its
recipe, by scripts/dictionary_controls.py and kept in dictionary_controls.json beside the file;
its entries take the place of the file's own control entries of the same name.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..checkpoint.builtins import ASSETS
from ..errors import DataError
from .dictionary import Dictionary, DictionaryStep, SparseDictionary
from .dictionary_quality import Quality, Splice

FILE = "dictionary.safetensors"
CONTROLS_FILE = "dictionary_controls.json"  # name -> Purity.summary() (with "layer", "model"), and "command"
PARAMETERS = ("W_enc", "b_enc", "W_dec", "b_dec")
SCALARS = ("model_name", "layer", "n_features", "k", "steps", "tokens", "texts", "seed", "seconds", "capped")


@dataclass
class BuiltinDictionary:
    dictionary: Dictionary
    quality: Quality
    purity: dict[str, dict]  # phase -> Purity.summary() (with "layer" and "model")
    command: str
    controls_command: str  # what measured the controls' purity (the same as `command` without CONTROLS_FILE)
    figures: dict  # everything else the card reports (the layers compared, ...)


def builtin_path(model_name: str, assets: Path | None = None) -> Path:
    """Where the built-in model `model_name`'s dictionary is (`assets`: default the built-ins' folder)."""
    return (ASSETS if assets is None else assets) / model_name / FILE


def controls_path(model_name: str, assets: Path | None = None) -> Path:
    """Where the built-in dictionary's like-for-like controls' purity is (CONTROLS_FILE)."""
    return builtin_path(model_name, assets).with_name(CONTROLS_FILE)


def rounded(sae: SparseDictionary) -> SparseDictionary:
    """`sae` with its parameters rounded to fp16 and back (what the shipped file holds)."""
    with torch.no_grad():
        for p in PARAMETERS:
            getattr(sae, p).copy_(getattr(sae, p).half().float())
    return sae


def save_builtin(
    path: Path, dictionary: Dictionary, quality: Quality, purity: dict, command: str, figures: dict
) -> None:
    tensors = {p: getattr(dictionary.sae, p).detach().half().contiguous() for p in PARAMETERS}
    meta = {
        "dictionary": {k: getattr(dictionary, k) for k in SCALARS},
        "curve": [asdict(s) for s in dictionary.curve],
        "quality": asdict(quality),
        "purity": purity,
        "command": command,
        "figures": figures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"bert_explorer": json.dumps(meta)})


def read_builtin(path: Path) -> BuiltinDictionary:
    """The dictionary file at `path` with the controls' purity of CONTROLS_FILE beside it, when there
    is one (DataError when either is not what it should be)."""
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = json.loads((f.metadata() or {})["bert_explorer"])
            tensors = {p: f.get_tensor(p).float() for p in PARAMETERS}
    except (OSError, KeyError, ValueError, SafetensorError) as e:
        raise DataError(f"{path.name} is not a dictionary of features ({type(e).__name__})") from None
    C, F = tensors["W_dec"].shape
    scalars = meta["dictionary"]
    sae = SparseDictionary(C, F, int(scalars["k"]))
    sae.load_state_dict(tensors)
    sae.eval().requires_grad_(False)
    q = meta["quality"]
    quality = Quality(**{**q, "splice": Splice(**q["splice"]), "cloze": Splice(**q["cloze"])})
    curve = [DictionaryStep(**s) for s in meta["curve"]]
    purity, controls_command = dict(meta["purity"]), meta["command"]
    controls = path.with_name(CONTROLS_FILE)
    if controls.is_file():
        try:
            kept = json.loads(controls.read_text(encoding="utf-8"))
            controls_command = str(kept.pop("command"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise DataError(f"{controls.name} is not a dictionary's controls ({type(e).__name__})") from None
        purity |= kept
    return BuiltinDictionary(
        Dictionary(sae=sae, curve=curve, **scalars), quality, purity, meta["command"], controls_command, meta["figures"]
    )


@functools.lru_cache(maxsize=4)
def builtin_dictionary(model_name: str, assets: Path | None = None) -> BuiltinDictionary | None:
    """The built-in dictionary of the built-in model `model_name`, None when it ships none. Read
    once a process and shared (the file ships with the app and never changes while it runs; its
    weights are frozen): the lesson, the class question and the Features page ask for the same one."""
    path = builtin_path(model_name, assets)
    return read_builtin(path) if path.is_file() else None
