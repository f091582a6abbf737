"""Models from the Hugging Face Hub: size checked from the hub's metadata before anything is
downloaded (at most BERT_EXPLORER_MAX_HUB_MB, default 500), then only HUB_FILES fetched.

`bert.checkpoint.load_hub` loads what `fetch` returns; huggingface_hub is imported only
when a hub id is actually asked for (it is optional).
"""

from __future__ import annotations

import importlib.util
import re

from . import settings
from .errors import CheckpointError
from .public import public_text

HUB_FILES = ["config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json", "README.md"]


def max_hub_mb() -> int:
    """BERT_EXPLORER_MAX_HUB_MB: the most a hub download may weigh, in MB."""
    return settings.whole("BERT_EXPLORER_MAX_HUB_MB")


def is_hub_id(s: str) -> bool:
    """`owner/name` as the Hugging Face Hub spells repository ids."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}", s)) and ".." not in s


def hub_download_bytes(repo_id: str) -> tuple[int, str | None]:
    """The total size of the files we would fetch from `repo_id` (from the hub's metadata,
    nothing downloaded) and the commit that metadata describes."""
    from huggingface_hub import HfApi

    info = HfApi().model_info(repo_id, files_metadata=True)
    sizes = [f.size for f in info.siblings or [] if f.rfilename in HUB_FILES]
    if not sizes or any(n is None for n in sizes):
        raise CheckpointError(f"the Hugging Face Hub gives no file sizes for {repo_id!r}: not downloaded")
    return sum(sizes), info.sha


def hub_snapshot(repo_id: str, revision: str | None) -> str:
    """Download HUB_FILES of `repo_id` at `revision` into bert_cache_dir()/hub; the folder."""
    from huggingface_hub import snapshot_download

    from .corpus import bert_cache_dir

    return snapshot_download(repo_id, revision=revision, allow_patterns=HUB_FILES, cache_dir=bert_cache_dir() / "hub")


def fetch(repo_id: str, max_mb: int | None = None) -> str:
    """Download `repo_id`'s HUB_FILES after checking their total size from the hub's metadata
    (at most `max_mb`, default BERT_EXPLORER_MAX_HUB_MB); the local folder."""
    if not is_hub_id(repo_id):
        raise CheckpointError(f"{public_text(repo_id)!r} is not a Hugging Face Hub id (owner/name)")
    limit = max_hub_mb() if max_mb is None else max_mb
    if importlib.util.find_spec("huggingface_hub") is None:
        raise CheckpointError(
            f"{repo_id!r} looks like a Hugging Face Hub id, but huggingface_hub "
            f"is not installed and no such local folder exists"
        )
    try:
        total, revision = hub_download_bytes(repo_id)
    except CheckpointError:
        raise
    except Exception as e:
        raise CheckpointError(
            f"could not reach {repo_id!r} on the Hugging Face Hub (no network, or "
            f"no such model): {type(e).__name__}. Use a built-in model or a local "
            f"folder instead."
        ) from None
    if total > limit * 2**20:
        raise CheckpointError(
            f"{repo_id!r} is {total / 2**20:,.0f} MB on the Hugging Face Hub: over "
            f"this server's limit of {limit:,} MB for a download"
        )
    try:
        return hub_snapshot(repo_id, revision)
    except Exception as e:
        raise CheckpointError(
            f"could not download {repo_id!r} from the Hugging Face Hub: "
            f"{type(e).__name__}. Use a built-in model or a local folder instead."
        ) from None
