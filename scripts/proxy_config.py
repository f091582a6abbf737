"""Prints deploy/haproxy.cfg filled in: where students connect and one `server` line a replica.

    python scripts/proxy_config.py --listen 0.0.0.0:80 --replica 10.0.0.11:8501 --replica 10.0.0.12:8501 > haproxy.cfg

Replica i is server r<i>: its SERVERID cookie value and the X-Replica header of its responses."""

from __future__ import annotations

import argparse
import sys

from benchmarks.server import haproxy_config


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="HOST:PORT where students connect")
    p.add_argument("--replica", action="append", default=[], help="HOST:PORT of an app replica (repeat)")
    args = p.parse_args(argv)
    try:
        sys.stdout.write(haproxy_config(args.listen, args.replica))
    except ValueError as e:
        p.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
