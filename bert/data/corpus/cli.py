"""``python -m bert.data.corpus [names] [--refresh]``: fetch and parse corpora, print their sizes."""

from __future__ import annotations

import argparse
import sys

from ..decode import human_bytes
from .base import CorpusError
from .fetch import bert_cache_dir
from .registry import CORPORA, LEGACY_GROUP, load_corpus

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bert.data.corpus", description="Fetch and parse the pre-training corpora."
    )
    ap.add_argument(
        "names",
        nargs="*",
        default=list(LEGACY_GROUP),
        help=f"corpora (default: {list(LEGACY_GROUP)}; also {sorted(set(CORPORA) - set(LEGACY_GROUP))})",
    )
    ap.add_argument("--refresh", action="store_true", help="parse again even if cached")
    args = ap.parse_args(argv)
    print(f"cache: {bert_cache_dir()}")
    print(f"{'corpus':8} {'documents':>9} {'sentences':>10} {'words':>11}  download")
    try:
        for n in args.names:
            c = load_corpus(n, refresh=args.refresh)
            src = c.meta.get("source", {})
            print(
                f"{n:8} {c.num_documents:>9,} {c.num_sentences:>10,} {c.num_words:>11,}  "
                f"{src.get('file', '?')} ({human_bytes(src.get('file_bytes', 0))})",
                flush=True,
            )
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0
