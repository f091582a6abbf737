"""What a page that reads a corpus says when the server has not got it."""

from __future__ import annotations


def not_on_server(name: str) -> str:
    return (
        f"The corpus {name!r} is not on this server, and it could not be fetched from here. The person "
        f"running the server can fetch it once with `python -m bert.data.corpus {name}` (`make data` fetches the "
        "usual ones). Meanwhile pick another corpus, or upload a .txt."
    )
