"""The Features page's notebook, built like those of app/export/notebook.py: the same model, its
built-in dictionary (bert/analysis/dictionary_builtin.py) and the same held-out sentences, cells
that compute one feature's card and a typed sentence's strongest features with `bert` and draw with
the page's figure builder, its numbers kept in `numbers`. A dictionary trained in a session lives
on the server, so only the built-in one is offered as a notebook. Typed text reaches the code
cells only as Python string literals (repr)."""

from __future__ import annotations

from .notebook import ModelRef, notebook
from .notebook_prose import FEATURES_MD
from .stamp import Stamp


def feature_card(model: ModelRef, stamp: Stamp, feature: int, sentence: str, held_out: int) -> str:
    """Feature `feature`'s card on the first `held_out` held-out sentences (as the page reads them)
    and `sentence`'s strongest features, with the model's built-in dictionary."""
    cells = [
        ("markdown", FEATURES_MD),
        (
            "code",
            "from app.figures.features import activation_histogram\n"
            "from bert.analysis.dictionary_builtin import builtin_dictionary\n"
            "from bert.analysis.dictionary_features import encode_all, feature_card, text_features\n"
            "from bert.analysis.dictionary_vectors import corpus_texts, gather_activations\n\n"
            f"feature = {int(feature)}\n"
            f"sentence = {sentence!r}\n"
            "d = builtin_dictionary(bundle.name).dictionary  # the model's built-in dictionary\n"
            f"_, held_out = corpus_texts(0, {int(held_out)})  # held-out sentences of the pre-training corpora\n"
            "acts = gather_activations(bundle, d.layer, held_out)\n"
            "codes = encode_all(d, acts)\n"
            "print(f'layer {d.layer}: {d.n_features} features, {d.k} active a word piece')",
        ),
        (
            "code",
            "card = feature_card(bundle, d, acts, codes, feature)\n"
            "numbers = {'fires': card.fires, 'tokens': card.tokens, 'mean_activation': card.mean_activation,\n"
            "           'contexts': [c.activation for c in card.contexts],\n"
            "           'context_tokens': [c.tokens[c.position] for c in card.contexts],\n"
            "           'promoted': [w for w, _ in card.promoted], 'suppressed': [w for w, _ in card.suppressed]}\n"
            "print(f'feature {feature}: active on {card.fires} of {card.tokens} held-out word pieces, '\n"
            "      f'{card.mean_activation:.2f} on average when it is')\n"
            "for c in card.contexts:\n"
            "    print(f'{c.activation:6.2f}  ' + ' '.join(c.tokens[:c.position]) + f' [{c.tokens[c.position]}] '\n"
            "          + ' '.join(c.tokens[c.position + 1:]))\n"
            "print('promotes:', ', '.join(numbers['promoted']))\n"
            "print('suppresses:', ', '.join(numbers['suppressed']))\n"
            "if card.fires:\n"
            "    activation_histogram(*card.histogram, feature).show()",
        ),
        (
            "code",
            "tf = text_features(bundle, d, sentence, k=3)\n"
            "numbers['sentence'] = [[tf.tokens[p], [f for f, _ in feats]] for p, feats in tf.features.items()]\n"
            "for p, feats in tf.features.items():\n"
            "    print(f'{tf.tokens[p]:>12}  ' + '  '.join(f'{f} ({v:.2f})' for f, v in feats))",
        ),
    ]
    return notebook("Features", stamp, model, cells)
