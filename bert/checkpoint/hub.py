"""Models from the Hugging Face Hub: size checked from the hub's metadata before anything is
downloaded (at most BERT_EXPLORER_MAX_HUB_MB, default 500), then only HUB_FILES fetched.

- `fetch`: a student's hub id, when the server opts in (BERT_EXPLORER_ALLOW_HUB=1), into the
  cache; `bert.checkpoint.load.load_hub` loads what it returns.
- `get_model` (bert/checkpoint/hub_get.py, `python -m bert get MODEL_ID`): whoever runs the server puts a hub model into
  the models folder, where the sidebar lists it for every student: safetensors only, its config
  checked before the weights come, written whole or not at all, its source and licence on its card.

huggingface_hub is imported only when a hub id is actually asked for (it is optional); it reads
HF_ENDPOINT (a mirror) and HF_TOKEN (a gated model) itself.
"""

from __future__ import annotations

import importlib.util
import re

from .. import settings
from ..errors import CheckpointError, HubUnreachable
from ..public import public_text

# what a model of BERT's family needs, weights last: the tokenizer's files are its member's
# (vocab.txt; RoBERTa's vocab.json + merges.txt or tokenizer.json; ALBERT's tokenizer.json)
HUB_FILES = [
    "config.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "README.md",
    "model.safetensors",
]


def max_hub_mb() -> int:
    """BERT_EXPLORER_MAX_HUB_MB: the most a hub download may weigh, in MB."""
    return settings.whole("BERT_EXPLORER_MAX_HUB_MB")


def is_hub_id(s: str) -> bool:
    """`owner/name` as the Hugging Face Hub spells repository ids."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}", s)) and ".." not in s


def hub_endpoint() -> str:
    """The Hub huggingface_hub talks to: https://huggingface.co, or HF_ENDPOINT (a mirror)."""
    from huggingface_hub import constants

    return constants.ENDPOINT


def hub_info(repo_id: str):
    """`repo_id`'s model_info with the size of each file (nothing downloaded); a typed error
    when the Hub has no such model or does not answer (HubUnreachable)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        return HfApi().model_info(repo_id, files_metadata=True)
    except GatedRepoError:
        raise CheckpointError(
            f"{repo_id!r} is gated on the Hugging Face Hub: accept its terms there and log in (hf auth login)"
        ) from None
    except RepositoryNotFoundError:
        raise CheckpointError(f"the Hugging Face Hub has no model {repo_id!r} (or it is private)") from None
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", "?")
        raise CheckpointError(f"the Hugging Face Hub answered HTTP {status} for {repo_id!r}: not downloaded") from None
    except Exception as e:  # noqa: BLE001 - refused connections, DNS, timeouts, offline mode
        raise HubUnreachable(
            f"could not reach the Hugging Face Hub ({hub_endpoint()}) for {repo_id!r}: {type(e).__name__}. "
            f"No network? Nothing was downloaded."
        ) from None


def file_sizes(info) -> dict[str, int | None]:
    """{file name: size in bytes, or None when the Hub gives none} of a repository's `hub_info`."""
    return {f.rfilename: f.size for f in info.siblings or []}


def check_download_cap(repo_id: str, total: int, limit: int) -> None:
    """CheckpointError when `total` bytes are over `limit` MB."""
    if total > limit * 2**20:
        raise CheckpointError(
            f"{repo_id!r} is {total / 2**20:,.0f} MB on the Hugging Face Hub: over "
            f"this server's limit of {limit:,} MB for a download"
        )


def hub_download_bytes(repo_id: str) -> tuple[int, str | None]:
    """The total size of the files we would fetch from `repo_id` (from the hub's metadata,
    nothing downloaded) and the commit that metadata describes."""
    info = hub_info(repo_id)
    sizes = [n for name, n in file_sizes(info).items() if name in HUB_FILES]
    if not sizes or any(n is None for n in sizes):
        raise CheckpointError(f"the Hugging Face Hub gives no file sizes for {repo_id!r}: not downloaded")
    return sum(sizes), info.sha


def hub_snapshot(repo_id: str, revision: str | None) -> str:
    """Download HUB_FILES of `repo_id` at `revision` into bert_cache_dir()/hub; the folder."""
    from huggingface_hub import snapshot_download

    from ..data.corpus.fetch import bert_cache_dir

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
    total, revision = hub_download_bytes(repo_id)
    check_download_cap(repo_id, total, limit)
    try:
        return hub_snapshot(repo_id, revision)
    except Exception as e:
        raise CheckpointError(
            f"could not download {repo_id!r} from the Hugging Face Hub: "
            f"{type(e).__name__}. Use a built-in model or a local folder instead."
        ) from None
