"""`Bench`: the state of one run (what is wanted, the rows measured and skipped), which every section
module adds to; runner.py runs the sections."""

from __future__ import annotations

from collections.abc import Callable

from .report import Row, format_row
from .timing import Timing, profile_top


class Bench:
    """The state of one run; the sections (model_rows, app_rows, memory, class_rows) add rows to it."""

    def __init__(self, args):
        self.args = args
        self.quick = args.quick or args.tiny
        self.only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
        self.clock = args.clock
        self.rows: list[Row] = []
        self.skipped: list[dict] = []
        self.meta: dict = {}
        self.profiles: list[str] = []
        self.train_times: dict[str, Timing] = {}

    # selection
    def wants(self, name: str) -> bool:
        return not self.only or any(name.startswith(p) for p in self.only)

    def wants_any(self, names) -> bool:
        return any(self.wants(n) for n in names)

    def runs_any(self, names, skipped_because: str | None = None) -> bool:
        """Whether to run any of `names`: not when none is asked for, nor (each skipped with the
        reason) when there is a `skipped_because`."""
        if not self.wants_any(names):
            return False
        for name in names if skipped_because else ():
            self.skip(name, skipped_because)
        return not skipped_because

    def add(self, row: Row) -> None:
        if self.wants(row.name):
            self.rows.append(row)
            print(format_row(row), flush=True)

    def skip(self, name: str, reason: str) -> None:
        if self.wants(name):
            self.skipped.append({"name": name, "reason": reason})
            print(f"  {name:<22} skipped: {reason}", flush=True)

    def reps(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def profile(self, title: str, f: Callable[[], object], calls: int = 3) -> None:
        if self.args.profile:
            text = profile_top(f, calls, title=title)
            self.profiles.append(text)
            print(text, flush=True)
