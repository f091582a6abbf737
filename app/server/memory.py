"""Giving freed memory back to the system.

glibc keeps memory that Python and torch have freed in its heaps, so a process's RSS (what a host
like Streamlit Community Cloud counts against its small limit) stays at its peak. Trimming the heaps after
a fine-tuning job, and after loading a model (an fp16 file upcast to fp32), gives that memory back.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager


def trim_heaps() -> None:
    """Hand the heaps' free memory back to the system (malloc_trim: well under a millisecond
    when little was freed). Each thread allocates from its own heap, so what one analysis freed
    is otherwise still counted while the next runs in another thread. No-op off glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
        pass


def release_memory() -> None:
    """Collect garbage and hand the heaps' free memory back (malloc_trim). No-op off glibc."""
    gc.collect()
    trim_heaps()


def server_memory() -> dict[str, int]:
    """This process's memory in bytes: "rss" now and "peak" (VmHWM), from /proc; elsewhere the
    peak from getrusage for both."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out["rss" if line.startswith("VmRSS") else "peak"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    if len(out) < 2:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out = {"rss": out.get("rss", peak), "peak": out.get("peak", peak)}
    return out


# --- what a page bound, dropped once it ran -------------------------------------------------

BIG = 2**16  # bytes (characters of a string): from this size on a value counts as holding memory

_page = threading.local()  # .globals: the namespaces of the pages run inside page_run (this thread)


def note_page_globals(namespace: dict) -> None:
    """Called by a page on its first line (app.run_through_entry) with its module namespace,
    for page_run; outside page_run (a page run alone, a test) it does nothing."""
    held = getattr(_page, "globals", None)
    if held is not None:
        held.append(namespace)


def _array_bytes(value) -> int | None:
    """The bytes behind a numpy array, a view counted as the whole array it keeps alive, or a
    torch tensor's storage; None for anything else."""
    kind = type(value).__module__.split(".", 1)[0]
    if kind == "numpy" and hasattr(value, "base"):
        while getattr(value, "base", None) is not None and hasattr(value.base, "nbytes"):
            value = value.base
        return int(getattr(value, "nbytes", 0))
    if kind == "torch" and hasattr(value, "untyped_storage"):
        return int(value.untyped_storage().nbytes())
    return None


def holds_memory(value, _depth: int = 0) -> bool:
    """True for what is worth dropping: numpy arrays and torch tensors of BIG bytes or more
    (a view counts as the array it keeps), pandas tables that big, plotly figures, strings of
    BIG characters, and dataclasses, dicts, lists and tuples holding one. Modules, functions,
    classes, small arrays and constants and Streamlit's session state are not."""
    if _depth > 4 or isinstance(value, (type, types.ModuleType)) or callable(value):
        return False
    if isinstance(value, (str, bytes)):
        return len(value) >= BIG
    size = _array_bytes(value)
    if size is not None:
        return size >= BIG
    kind = type(value).__module__.split(".", 1)[0]
    if kind == "plotly":
        return True
    if kind == "pandas" and hasattr(value, "memory_usage"):
        used = value.memory_usage(deep=False)
        return int(getattr(used, "sum", lambda: used)()) >= BIG
    if isinstance(value, dict):
        return any(holds_memory(v, _depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(holds_memory(v, _depth + 1) for v in value)
    if dataclasses.is_dataclass(value):
        return any(holds_memory(getattr(value, f.name, None), _depth + 1) for f in dataclasses.fields(value))
    return False


def _fragment_ids() -> frozenset | None:
    """The fragments this script run has registered so far; None where Streamlit's internals
    cannot tell (then a page's namespace is left as it is)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        return None if ctx is None else ctx.shared.new_fragment_ids.snapshot()
    except (ImportError, AttributeError):
        return None


@contextmanager
def page_run() -> Iterator[None]:
    """Around st.Page.run(): once the page ran (or stopped, or was interrupted by a rerun), the
    names of its module namespace that hold memory (holds_memory) are deleted.

    Streamlit runs a page in a new namespace each time, and every function the page defines (a
    cached view, a lambda, a callback) refers back to it through __globals__: a cycle, so the
    namespace and all it bound (the analysis, arrays cut from it, tables, figures) are freed
    only by the full cycle collection, which with torch and plotly loaded comes seldom (and
    Streamlit's own collection after each run is off for its processor cost). Every analysis
    the cache let go would stay in memory until then. Deleting those names frees them at once,
    by reference counting; what is left (modules, functions, constants) is small.

    Callbacks (run at the start of the next run) and format functions still find the page's
    modules, functions, constants and small arrays; big data they need comes as arguments. A page whose run registered a
    fragment keeps its namespace whole: the fragment's own reruns read it later."""
    held: list[dict] = []
    outer = getattr(_page, "globals", None)
    _page.globals = held
    before = _fragment_ids()
    try:
        yield
    finally:
        _page.globals = outer
        after = _fragment_ids()
        if before is not None and after is not None and after <= before:
            for namespace in held:
                for name in [n for n, v in namespace.items() if not n.startswith("__") and holds_memory(v)]:
                    del namespace[name]


def nbytes(obj, _depth: int = 0) -> int:
    """The bytes of a result: its numpy arrays and tensors, strings, and 64 for anything else
    (walking dataclasses, dicts, lists and tuples)."""
    if _depth > 6:
        return 0
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")  # not imported: no such value
    if np is not None and isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if torch is not None and isinstance(obj, torch.Tensor):
        return int(obj.element_size() * obj.nelement())
    if isinstance(obj, dict):
        return sum(nbytes(v, _depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v, _depth + 1) for v in obj) + 8 * len(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(nbytes(getattr(obj, f.name), _depth + 1) for f in dataclasses.fields(obj))
    if isinstance(obj, str):
        return 49 + len(obj)  # a Python str's own header
    return 64
