"""Loading and saving models: our folder format, Hugging Face folders, built-ins.

Our format is a folder with `model.safetensors` (our parameter names), `config.json`
(BertConfig, HF field names), `vocab.txt` and `card.md`. Weights are only ever read with
safetensors or `torch.load(weights_only=True)`: a pickle that would run code is refused.

Before a weights file is read, the model its config.json describes is sized: over
BERT_EXPLORER_MAX_MODEL_MB (default 2,000 MB in memory), or not matching the file's size, it is
refused. Hub downloads are checked against BERT_EXPLORER_MAX_HUB_MB (default 500) first.
Messages and cards never carry the server's absolute paths (`public_text`).

Parts live next door: `Bundle` in bert/bundle.py, the hub download and its size check in
bert/checkpoint/hub.py, the Hugging Face export in bert/checkpoint/export.py, `public_text` / `public_path` in
bert/public.py, the built-ins' names and folders in bert/checkpoint/builtins.py and the parameter formulas
with the size check `check_model_size` in bert/checkpoint/sizes.py (those two without torch, for the
app's first page and the models folder's listing).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..atomic_files import atomic_write_text, replace_dir
from ..attention_masks import CAUSAL, trained_mask_kind
from ..bundle import Bundle
from ..config import BertConfig
from ..errors import CheckpointError
from ..family import member
from ..model import BertForPreTraining
from ..public import public_path, public_text
from ..task_heads import task_head_of
from ..task_models import MODEL_CLASSES
from ..tokenizer.for_folder import tokenizer_for_folder
from . import hub
from .builtins import ASSETS, BUILTINS, FORMAT, PUBLISHED, available_builtins, minilm_package_dir, read_card
from .hf_names import hf_to_ours
from .hub import is_hub_id
from .sizes import check_model_size, encoder_parameters

LEFT_TO_RIGHT_NOTE = (
    "Trained on the next word, reading left to right: the views that read it both ways with BERT's heads "
    "(a gap's guesses, next sentence, the cloze set) refuse it, and the others read it both ways unless "
    "they offer Left only. The Pre-training page's Continue this text reads it as it learned."
)

# ---- reading ---------------------------------------------------------------------------------


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Read a weights file safely; anything that is not plain tensors is refused."""
    path = Path(path)
    if path.suffix == ".safetensors":
        try:
            return load_file(str(path), device="cpu")
        except (SafetensorError, OSError, ValueError, RuntimeError) as e:
            raise CheckpointError(
                f"{path.name} is not a readable safetensors file (truncated or corrupt?): {e}"
            ) from None
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        # torch's own message advises weights_only=False (running the file's code): not for us
        m = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\. |\n\n|$)", str(e), re.S)
        detail = (m.group(1) if m else str(e)).strip().replace("\n", " ")[:160]
        raise CheckpointError(
            f"{path.name} was refused: it is not a plain file of tensors (it holds other Python "
            f"objects, which could run code if loaded, or it is not a weights file at all). Nothing "
            f"in it was run. Save the weights as safetensors. ({detail})"
        ) from None
    except Exception as e:  # zip errors, EOF, garbage bytes
        raise CheckpointError(
            f"{path.name} is not a readable PyTorch weights file: {type(e).__name__}: {str(e)[:200]}"
        ) from None
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(f"{path.name} does not hold a dictionary of tensors")
    return obj


def _weights_file(folder: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return folder / name
    raise CheckpointError(f"no model.safetensors or pytorch_model.bin in {public_path(folder)}")


def _do_lower_case(folder: Path, config: BertConfig) -> bool:
    tc = folder / "tokenizer_config.json"
    try:
        if tc.is_file() and tc.stat().st_size <= 1 << 20:
            return bool(json.loads(tc.read_text(encoding="utf-8")).get("do_lower_case", True))
    except (ValueError, OSError, AttributeError):
        pass
    return bool(config.extra.get("do_lower_case", True))


def load_folder(folder: str | os.PathLike, name: str | None = None) -> Bundle:
    """Load our format or a Hugging Face BERT folder; report parts freshly initialised."""
    folder = Path(folder)
    try:
        return _load_folder(folder, name)
    except OSError:  # unreadable file or folder: its name only, never the OS's text
        raise CheckpointError(f"the model folder {public_path(folder)} cannot be read") from None


def _load_folder(folder: Path, name: str | None) -> Bundle:
    where = public_path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{where} is not a folder")
    if not (folder / "config.json").is_file():
        raise CheckpointError(f"no config.json in {where}")
    from . import encoder_decoder  # transformers' EncoderDecoderModel folders

    if encoder_decoder.is_encoder_decoder(folder):
        return encoder_decoder.load_encoder_decoder(folder, name)
    config = BertConfig.from_file(folder / "config.json")
    # vocab.txt (WordPiece), vocab.json + merges.txt or tokenizer.json (RoBERTa), tokenizer.json
    # (ALBERT): each sized before it is read
    tokenizer = tokenizer_for_folder(folder, config.model_type, do_lower_case=_do_lower_case(folder, config))
    if len(tokenizer) != config.vocab_size:
        raise CheckpointError(
            f"{'vocab.txt' if tokenizer.kind == 'wordpiece' else 'the tokenizer'} has {len(tokenizer)} tokens but "
            f"config.json says "
            f"vocab_size {config.vocab_size}: they do not belong together"
        )
    weights = _weights_file(folder)
    file_bytes = weights.stat().st_size
    check_model_size(config, file_bytes, weights.name)
    raw = read_weights(weights)
    # A file too small for its config is cheap to read: read first, a corrupt one says so.
    check_model_size(config, file_bytes, weights.name, small=True)
    # Before building anything: a config.json that asks for far more than the file holds (a
    # hostile or mistaken one, say 100,000 layers) would allocate gigabytes in a shared server.
    held = sum(t.numel() for t in raw.values())
    needed = encoder_parameters(config)
    if needed > held:
        raise CheckpointError(
            f"config.json describes an encoder of {needed:,} parameters but the weights "
            f"file holds only {held:,} numbers: config and weights do not match"
        )
    # Kept as stored (fp16 for the built-ins): load_state_dict copies each tensor into the
    # model's fp32 parameter, converting it exactly, so no fp32 copy of the file is ever made
    # besides the model itself (minilm-l6: peak +180 -> +136 MB while loading).
    ours_format = any(k.startswith(("bert.layers.", "bert.shared_layer.")) for k in raw)
    state, unused = (raw, []) if ours_format else hf_to_ours(raw, config)
    head = task_head_of(config, state)
    model = MODEL_CLASSES[head.key](config)
    notes, fresh = _load_state(model, state, unused, head.pooler)
    left_to_right = trained_mask_kind(config) == CAUSAL and head.key == "pretraining"
    if left_to_right:  # what the sidebar says under it wherever it is picked
        notes.append(LEFT_TO_RIGHT_NOTE)
    model.eval()
    return Bundle(
        model=model,
        tokenizer=tokenizer,
        name=name or folder.name,
        card=read_card(folder),
        source=where,
        notes=notes,
        mlm_head_trained="mlm." not in fresh,
        nsp_head_trained="nsp." not in fresh and not left_to_right,  # the next word has no next-sentence game
        replaced_head_trained=getattr(model, "rtd", None) is not None and "rtd." not in fresh,
    )


def _load_state(
    model, state: dict[str, torch.Tensor], unused: list[str], reads_pooler: bool = True
) -> tuple[list[str], set[str]]:
    """Load `state` into `model` (whose head reads the pooler or not); (notes on what the file
    lacked or had too much of, the prefixes of the parts initialised afresh because the file
    lacked them: "mlm.", "nsp.", ...)."""
    expected = {k: v for k, v in model.state_dict().items() if k != "mlm.word_embeddings.weight"}
    for k, t in state.items():
        if k in expected and tuple(t.shape) != tuple(expected[k].shape):
            raise CheckpointError(
                f"weight {k} has shape {tuple(t.shape)} but the config asks "
                f"for {tuple(expected[k].shape)}: config and weights do not match"
            )
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected) - {"mlm.word_embeddings.weight"}) + unused
    encoder_missing = [k for k in missing if k.startswith("bert.") and not k.startswith("bert.pooler")]
    layers = {int(m.group(1)) for k in extra if (m := re.match(r"bert\.layers\.(\d+)\.", k))}
    if layers:
        raise CheckpointError(
            f"the weights have encoder layers up to {max(layers) + 1} but config.json "
            f"says num_hidden_layers {model.config.num_hidden_layers}: config and "
            f"weights do not match"
        )
    if encoder_missing:
        raise CheckpointError(
            f"the checkpoint lacks {len(encoder_missing)} encoder weights "
            f"(first: {encoder_missing[0]}): it is not a BERT of this config"
        )
    model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    notes = []
    kin = member(model.config)
    groups = {
        "mlm.": "no MLM head in this checkpoint: it was freshly initialised, so masked-word "
        "predictions are random until it is trained",
        "nsp.": "no NSP head in this checkpoint: next-sentence probabilities are random",
        "bert.pooler": "no pooler in this checkpoint: it was freshly initialised",
        "rtd.": "no replaced-token head in this checkpoint (an ELECTRA generator): its "
        "replaced-token probabilities are random",
        "classifier": "no classifier head in this checkpoint: freshly initialised",
        "qa_outputs": "no answer head in this checkpoint: freshly initialised, its answers are random",
    }
    if kin.replaced_token_head:
        groups["mlm."] = (
            "no masked-word head in this checkpoint (an ELECTRA discriminator: its generator had it): "
            "masked-word predictions are random; the replaced-token view shows what it learned"
        )
    if kin.sentence_order:
        groups["nsp."] = "no sentence-order head in this checkpoint: its order probabilities are random"
    elif not kin.next_sentence:  # said once, as what the model is, not as something missing
        groups["nsp."] = f"{kin.name} has no next-sentence head (it was pre-trained without one)"
    if not (kin.pooler and reads_pooler):
        del groups["bert.pooler"]
    fresh = {prefix for prefix in groups if any(k.startswith(prefix) for k in missing)}
    if not (kin.next_sentence or kin.sentence_order) and isinstance(model, BertForPreTraining):
        fresh.add("nsp.")
    notes += [text for prefix, text in groups.items() if prefix in fresh]
    if extra:
        notes.append(f"{len(extra)} weights in the file were not used (e.g. {extra[0]})")
    return notes, fresh


# ---- writing ---------------------------------------------------------------------------------


def save(bundle: Bundle, folder: str | os.PathLike, card: str | None = None, half: bool = False) -> Path:
    """Write our format atomically (a temporary folder renamed into place); the card is
    written without absolute paths (`public_text`). An encoder-decoder is written in transformers'
    EncoderDecoderModel form (bert/checkpoint/encoder_decoder.py), full precision."""
    from ..seq2seq.bundle import Seq2SeqBundle

    if isinstance(bundle, Seq2SeqBundle):
        from .encoder_decoder import save_encoder_decoder

        return save_encoder_decoder(bundle, folder, card)
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.tmp"))
    try:
        state = {
            k: v.detach().contiguous().clone()
            for k, v in bundle.model.state_dict().items()
            if k != "mlm.word_embeddings.weight"
            # an ELECTRA generator's replaced-token head was never trained: not written as if it were
            and not (k.startswith("rtd.") and not bundle.replaced_head_trained)
        }
        if half:
            state = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": FORMAT})
        config = bundle.config
        config.extra["architecture"] = bundle.head.key
        config.extra["do_lower_case"] = bundle.tokenizer.do_lower_case
        config.save(tmp / "config.json")
        bundle.tokenizer.save(tmp)  # its own files: vocab.txt, or vocab.json + merges.txt, or tokenizer.json
        text = card if card is not None else (bundle.card or f"# {bundle.name}\n")
        atomic_write_text(tmp / "card.md", public_text(text))
        replace_dir(tmp, folder)
    except BaseException:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


# ---- built-ins and sources ---------------------------------------------------------------------


def load_builtin(name: str) -> Bundle:
    folder = ASSETS / name
    if (folder / "model.safetensors").is_file():
        bundle = load_folder(folder, name=name)
        bundle.source = "built-in"
        return bundle
    if name == PUBLISHED:  # the encoder as its package ships it, with untrained MLM/NSP heads
        bundle = load_folder(minilm_package_dir(), name=name)
        card = ASSETS / "cards" / f"{PUBLISHED}.md"
        bundle.card = public_text(card.read_text(encoding="utf-8")) if card.is_file() else bundle.card
        bundle.source = "built-in"
        return bundle
    raise CheckpointError(
        f"the built-in model {name!r} is not in assets/ (built-ins: {', '.join(available_builtins())})"
    )


def load(source: str | os.PathLike, allow_hub: bool = True, max_hub_mb: int | None = None) -> Bundle:
    """A built-in name, a local folder (ours or Hugging Face), or a hub id when online and
    `allow_hub` (then at most `max_hub_mb`, default BERT_EXPLORER_MAX_HUB_MB, is fetched)."""
    s = str(source).strip()
    if not s:
        raise CheckpointError("no model given")
    if s in BUILTINS:
        return load_builtin(s)
    path = Path(s).expanduser()
    if path.exists():
        return load_folder(path)
    if allow_hub and is_hub_id(s):
        return load_hub(s, max_hub_mb)
    raise CheckpointError(
        f"{public_text(s)!r} is neither a built-in model ({', '.join(BUILTINS)}) nor an existing folder"
    )


def load_hub(repo_id: str, max_mb: int | None = None) -> Bundle:
    """A model from the Hugging Face Hub, its size checked from the metadata before anything is
    downloaded (at most `max_mb`, default BERT_EXPLORER_MAX_HUB_MB): bert/checkpoint/hub.py."""
    folder = hub.fetch(repo_id, max_mb)
    bundle = load_folder(folder, name=repo_id)
    bundle.source = f"the Hugging Face Hub ({repo_id})"
    return bundle
