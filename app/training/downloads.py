"""What a trained model takes away with it: its folder zipped for download."""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import bert

from ..run_session.names import safe_filename


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
