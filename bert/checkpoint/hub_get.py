"""`python -m bert get`: a Hugging Face Hub model into the server's models folder, checked before
anything is downloaded (size, safetensors weights), then its config, then loaded once by the safe
loader, with a card naming its source and licence. The download itself is bert/checkpoint/hub.py's."""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path

from ..atomic_files import atomic_write_text, remove_leftovers
from ..config import BertConfig
from ..errors import CheckpointError
from ..public import public_text
from .builtins import BUILTINS, read_card
from .hub import HUB_FILES, check_download_cap, file_sizes, hub_endpoint, hub_info, is_hub_id, max_hub_mb
from .sizes import check_model_size

GET_NEEDED = ("config.json", "model.safetensors")
TOKENIZER_SETS = (("vocab.txt",), ("tokenizer.json",), ("vocab.json", "merges.txt"))  # any one of them
FOLDER_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,95}")


def _check_weights(repo_id: str, sizes: dict) -> None:
    """Refuse, from the file list alone, a repository without one model.safetensors."""
    if "model.safetensors" in sizes:
        return
    if any(re.fullmatch(r"model-\d+-of-\d+\.safetensors", f) for f in sizes):
        raise CheckpointError(f"{repo_id!r} splits its weights into several safetensors files: not supported")
    if "pytorch_model.bin" in sizes:
        raise CheckpointError(
            f"{repo_id!r} has only pickle weights (pytorch_model.bin), which can run code when loaded: "
            f"`bert get` downloads model.safetensors only. Nothing was downloaded."
        )
    raise CheckpointError(f"{repo_id!r} has no model.safetensors: nothing was downloaded")


def hub_licence(info) -> str:
    """The licence `info`'s model card declares (its `license` field, else a `license:` tag)."""
    card = getattr(info, "card_data", None)
    licence = getattr(card, "license", None) if card is not None else None
    if not licence:
        licence = next((t.split(":", 1)[1] for t in info.tags or [] if t.startswith("license:")), None)
    if isinstance(licence, list):
        licence = ", ".join(map(str, licence))
    return str(licence) if licence else "not stated on the Hub"


def _split_front_matter(text: str) -> tuple[str, str]:
    """(the YAML front matter block with its '---' lines, or '', the rest) of a model card."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                return "\n".join(lines[: i + 1]) + "\n", "\n".join(lines[i + 1 :]).strip()
    return "", text.strip()


def hub_card(repo_id: str, name: str, info, sizes: dict, readme: str) -> str:
    """The card of a model `get_model` downloaded: its source (the Hub's address and commit),
    licence and files, then the repository's own card (`readme`), front matter first."""
    front, body = _split_front_matter(readme)
    licence = hub_licence(info)
    url = f"{hub_endpoint()}/{repo_id}"
    weights = sizes["model.safetensors"] / 2**20
    lines = [
        f"# {name}",
        "",
        f"{repo_id} from the Hugging Face Hub (licence: {licence}).",
        "",
        f"- Source: {url}, commit {info.sha or 'unknown'}, downloaded on {datetime.date.today().isoformat()} "
        f"with `python -m bert get {repo_id}`",
        f"- Licence: {licence}, as the repository's card declares it: read it there before you use the model",
        f"- Files: {', '.join(f for f in HUB_FILES if f in sizes)} (weights {weights:,.1f} MB)",
    ]
    if body:
        lines += ["", "## The repository's card", "", body]
    return front + "\n".join(lines) + "\n"


def _download(repo_id: str, filename: str, revision: str | None, folder: Path, size: int | None) -> None:
    from huggingface_hub import hf_hub_download

    try:
        hf_hub_download(repo_id, filename, revision=revision, local_dir=folder)
    except Exception as e:  # noqa: BLE001 - a broken connection, a timeout, a wrong size
        raise CheckpointError(
            f"the download of {filename} from {repo_id!r} broke off ({type(e).__name__}): nothing was kept "
            f"in the models folder; run the command again"
        ) from None
    if size is not None and (folder / filename).stat().st_size != size:
        raise CheckpointError(f"{filename} of {repo_id!r} is not the size the Hub's metadata gave: not kept")


def _check_config(repo_id: str, folder: Path, weights_bytes: int) -> None:
    """Before the weights come: a member of BERT's family the loader supports, within this server's ceilings."""
    try:
        config = BertConfig.from_file(folder / "config.json")
        check_model_size(config, weights_bytes, "model.safetensors")
        check_model_size(config, weights_bytes, "model.safetensors", small=True)
    except CheckpointError as e:
        raise CheckpointError(
            f"{repo_id!r} is not a model this app loads ({e}): its weights were not downloaded"
        ) from None


def get_model(repo_id: str, root: str | os.PathLike, name: str | None = None, max_mb: int | None = None) -> Path:
    """Download `repo_id` into the models folder `root` as `name` (default: the id's last part);
    the folder. Checked before anything is downloaded: its size from the Hub's metadata (at
    most `max_mb`, default BERT_EXPLORER_MAX_HUB_MB) and safetensors weights; before the weights:
    its config.json. Written into a hidden `.<name>.tmp…` folder inside `root`, loaded once by
    the safe loader, its card written (source, licence), then renamed into place: a download
    that breaks leaves nothing in `root` (a killed one, a hidden folder the next `get` removes)."""
    if not is_hub_id(repo_id):
        raise CheckpointError(f"{public_text(repo_id)!r} is not a Hugging Face Hub id (owner/name)")
    name = name or repo_id.split("/")[1]
    if not FOLDER_NAME.fullmatch(name) or ".." in name:
        raise CheckpointError(f"{public_text(name)!r} cannot be a folder name (letters, digits, . _ - only)")
    if name in BUILTINS:
        raise CheckpointError(f"{name!r} is a built-in model's name: give the folder another (--name)")
    root = Path(root)
    final = root / name
    if final.exists():
        raise CheckpointError(f"{name!r} is already in the models folder: remove it first, or give another --name")
    if importlib.util.find_spec("huggingface_hub") is None:
        raise CheckpointError("`bert get` needs huggingface_hub: pip install huggingface_hub")
    limit = max_hub_mb() if max_mb is None else max_mb
    info = hub_info(repo_id)
    sizes = file_sizes(info)
    _check_weights(repo_id, sizes)
    missing = [f for f in GET_NEEDED if f not in sizes]
    if not any(all(f in sizes for f in files) for files in TOKENIZER_SETS):
        missing.append("tokenizer (vocab.txt, tokenizer.json, or vocab.json + merges.txt)")
    if missing:
        raise CheckpointError(f"{repo_id!r} has no {' or '.join(missing)}: this app cannot load it")
    files = [f for f in HUB_FILES if f in sizes]
    if any(sizes[f] is None for f in files):
        raise CheckpointError(f"the Hugging Face Hub gives no file sizes for {repo_id!r}: not downloaded")
    check_download_cap(repo_id, sum(sizes[f] for f in files), limit)
    try:
        root.mkdir(parents=True, exist_ok=True)
        remove_leftovers(final)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}.tmp"))
    except OSError as e:
        raise CheckpointError(f"cannot write in the models folder {root}: {e.strerror}") from None
    try:
        for f in files:
            _download(repo_id, f, info.sha, tmp, sizes[f])
            if f == "config.json":
                _check_config(repo_id, tmp, sizes["model.safetensors"])
        shutil.rmtree(tmp / ".cache", ignore_errors=True)  # huggingface_hub's notes on the download
        from .load import load_folder  # torch: only once the files are here

        try:
            load_folder(tmp, name=name)  # what the app will do, once, before any student can pick it
        except CheckpointError as e:
            raise CheckpointError(f"{repo_id!r} was downloaded but does not load ({e}): not kept") from None
        readme = read_card(tmp)  # README.md: the only card in the folder yet
        atomic_write_text(tmp / "card.md", hub_card(repo_id, name, info, sizes, readme))
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
