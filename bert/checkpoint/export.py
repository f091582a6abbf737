"""Export to the Hugging Face layout: a folder `transformers` loads as it is.

`export_hf` writes `model.safetensors` under Hugging Face parameter names (bert/checkpoint/hf_names.py),
a config.json with `architectures`, vocab.txt, tokenizer_config.json and the card as
README.md; a classifier also gets predict.py (bert/checkpoint/export_classifier.py). Like `bert.save`,
it writes a temporary folder and renames it into place.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors.torch import save_file

from ..atomic_files import atomic_write_text, written_dir
from ..errors import CheckpointError
from ..family import member
from ..public import public_text
from .hf_names import ours_to_hf

if TYPE_CHECKING:
    from ..bundle import Bundle


def export_hf(bundle: Bundle, out_dir: str | os.PathLike) -> Path:
    """A folder that transformers' class of the bundle's head (`BertForPreTraining`,
    `...ForSequenceClassification`, `...ForTokenClassification`, `...ForQuestionAnswering`)
    `.from_pretrained` loads with no missing keys."""
    if not member(bundle.config).hf_export:
        raise CheckpointError(
            f"The Hugging Face export is written for BERT models; {bundle.name} is a "
            f"{member(bundle.config).name}: download it in this app's format instead (bert.load opens it)."
        )
    out_dir = Path(out_dir)
    with written_dir(out_dir) as tmp:
        config = bundle.config
        state = bundle.model.state_dict()
        if not bundle.head.pooler:  # transformers' class of this head has none
            state = {k: v for k, v in state.items() if not k.startswith("bert.pooler.")}
        hf = ours_to_hf(state, config)
        save_file(hf, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        d = config.to_dict()
        for k in ("extra", "architecture"):
            d.pop(k, None)
        d["architectures"] = [bundle.head.hf_class]
        if bundle.head.outputs:  # transformers sizes such a head by num_labels (a reader's start and end)
            d.pop("id2label", None)
            d["num_labels"] = bundle.head.outputs
        d["tie_word_embeddings"] = True
        atomic_write_text(tmp / "config.json", json.dumps(d, indent=2, sort_keys=True) + "\n")
        bundle.tokenizer.save(tmp / "vocab.txt")
        atomic_write_text(
            tmp / "tokenizer_config.json",
            json.dumps(
                {
                    "tokenizer_class": "BertTokenizer",
                    "do_lower_case": bundle.tokenizer.do_lower_case,
                    "model_max_length": config.max_position_embeddings,
                },
                indent=2,
            )
            + "\n",
        )
        atomic_write_text(tmp / "README.md", public_text(bundle.card or f"# {bundle.name}\n"))
        if bundle.is_classifier:
            from .export_classifier import write_classifier_extras

            write_classifier_extras(bundle, tmp)  # predict.py: our pooling in transformers
    return out_dir
