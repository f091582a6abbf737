"""One feature of a dictionary on single words: each word read alone ([CLS] word [SEP]) to the
dictionary's layer, and the feature's activation there (the largest over the word's pieces, 0
where it is off). What a lesson and a class question ask ("which of these words makes feature N
fire most?") is worked out here, on the model."""

from __future__ import annotations

import torch

from ..bundle import Bundle
from ..errors import InputError
from .common import need_mlm
from .dictionary import Dictionary, check_feature, check_same_model
from .dictionary_features import text_features
from .dictionary_vectors import state_after

MAX_WORDS = 12  # words one question or lesson compares


def word_activations(bundle: Bundle, dictionary: Dictionary, feature: int, words: list[str]) -> list[float]:
    """The feature's activation on each word read alone (the largest over its pieces)."""
    need_mlm(bundle, "a feature's words")
    check_same_model(bundle, dictionary)
    feature = check_feature(dictionary, feature)
    words = [str(w).strip() for w in words]
    if not words or len(words) > MAX_WORDS or any(not w or len(w.split()) != 1 for w in words):
        raise InputError(f"give 1 to {MAX_WORDS} single words (no spaces inside a word)")
    out = []
    with torch.inference_mode():
        for w in words:
            enc = bundle.tokenizer.encode(w, max_length=bundle.config.max_tokens)
            pieces = [i for i, s in enumerate(enc.sequence_ids) if s is not None]
            if not pieces:
                raise InputError(f"«{w}» gives no word pieces: try another word")
            x = state_after(bundle, torch.tensor([enc.ids]), torch.tensor([enc.type_ids]), dictionary.layer)[0]
            out.append(float(dictionary.sae.encode(x[pieces].float())[:, feature].max()))
    return out


def strongest_feature(bundle: Bundle, dictionary: Dictionary, text: str, word: str) -> tuple[int, float]:
    """(feature, activation) of the strongest feature at `word`'s first piece in `text`."""
    tf = text_features(bundle, dictionary, text, k=1)
    for p, feats in tf.features.items():
        if tf.tokens[p].lower() == word.lower() and feats:
            return feats[0]
    raise InputError(f"«{word}» is not one word piece of «{text}» with a feature active")
