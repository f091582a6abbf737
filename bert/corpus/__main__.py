"""``python -m bert.corpus``: see bert/corpus/cli.py."""

from .cli import main

raise SystemExit(main())
