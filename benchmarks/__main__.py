"""`python -m benchmarks`: see benchmarks/__init__.py for what it measures, cli.py for the options."""

import sys

from .cli import main

sys.exit(main())
