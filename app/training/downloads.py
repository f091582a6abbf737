"""What a trained model takes away with it: its card, and its folder zipped for download."""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import bert
from bert.train.events import PretrainDone
from bert.train.pretrain import PretrainArgs

from .names import safe_filename


def _zip_folder(folder: Path, root: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                # weights hardly compress: store them (fast); deflate the text files
                how = zipfile.ZIP_STORED if f.suffix in (".safetensors", ".bin") else zipfile.ZIP_DEFLATED
                z.write(f, f"{root}/{f.relative_to(folder).as_posix()}", compress_type=how)
    return buf.getvalue()


def model_zip(bundle: bert.Bundle, name: str, fmt: str = "ours") -> bytes:
    """The model as a zip, in our format (bert.save; bert.load opens the unzipped folder) or as a
    Hugging Face folder (bert.export_hf). Written to a temporary folder outside the repo, zipped
    in memory, the folder removed."""
    root = safe_filename(name) + ("-hf" if fmt == "hf" else "")
    with tempfile.TemporaryDirectory(prefix="bert-explorer-zip-") as d:
        out = Path(d) / root
        if fmt == "hf":
            bert.export_hf(bundle, out)
        else:
            bert.save(bundle, out, card=bundle.card)
        return _zip_folder(out, root)


def _vocab_words(vocab: str) -> str:
    if vocab == "default":
        return "bert-base-uncased (30,522)"
    return f"WordPiece trained on the corpus ({vocab.split(':', 1)[-1]})"


def pretrain_card(name: str, args: PretrainArgs, corpus_label: str, done: PretrainDone) -> str:
    """The model card of a pre-trained model (the fine-tuning backend writes its own)."""
    return "\n".join(
        [
            f"# {name}",
            "",
            f"A small BERT pre-trained from random weights in BERT Explorer, on {corpus_label}: "
            f"{args.layers} layers, hidden size {args.hidden}, {args.heads} heads, vocabulary "
            f"{_vocab_words(args.vocab)}.",
            "",
            f"- Steps: {done.step or 0:,} of {args.steps:,}"
            + (" (stopped early)" if done.stopped else "")
            + f", batch {args.batch_size}, sequences of {args.max_seq_length} tokens, learning rate {args.lr:g}.",
            (
                f"- Validation: masked-LM top-1 {done.mlm_top1:.3f}, top-5 {done.mlm_top5:.3f}, loss "
                f"{done.mlm_loss:.3f}; next-sentence accuracy {done.nsp_acc:.3f}."
                if done.mlm_top1 is not None
                else "- Validation: not measured (stopped before the end)."
            ),
            "",
            "Licence: that of the corpus it was trained on.",
            "",
        ]
    )
