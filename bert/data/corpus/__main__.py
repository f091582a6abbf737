"""``python -m bert.data.corpus``: see bert/data/corpus/cli.py."""

from .cli import main

raise SystemExit(main())
