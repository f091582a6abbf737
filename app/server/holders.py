"""What holds the server's memory, measured, for the teacher's Server status page: the sessions
open and what each one's state holds, the analyses running and waiting, the analysis cache by
kind of result, and the uploads kept.

Sizes are what the objects' arrays, tensors, models and strings take (app.server.memory.nbytes,
plus a model's parameters and buffers), not Python's bookkeeping: the part that grows with a
class. Counts and sizes only: nothing here names a student or shows a text.
"""

from __future__ import annotations

import dataclasses

from .analysis_gate import ANALYSES, analysis_places
from .memory import nbytes


def value_bytes(value, _depth: int = 0) -> int:
    """The bytes `value` holds: arrays, tensors, strings (memory.nbytes), and the
    parameters and buffers of a torch model, also inside dataclasses, dicts, lists and tuples."""
    import torch

    if _depth > 6:
        return 0
    if isinstance(value, torch.nn.Module):
        return sum(t.element_size() * t.nelement() for t in (*value.parameters(), *value.buffers()))
    if isinstance(value, dict):
        return sum(value_bytes(v, _depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(value_bytes(v, _depth + 1) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(value_bytes(getattr(value, f.name, None), _depth + 1) for f in dataclasses.fields(value))
    return nbytes(value)


def _active_sessions() -> list | None:
    """Streamlit's active sessions (None without a running server, or where its internals changed)."""
    try:
        from streamlit import runtime

        if not runtime.exists():
            return None
        return list(runtime.get_instance()._session_mgr.list_active_sessions())
    except Exception:  # noqa: BLE001 - an internal API that may change: then no figure, not a failure
        return None


def session_sizes() -> list[int] | None:
    """The bytes each open session's state holds (its texts, its own models, uploads read,
    results kept), biggest first; None where the sessions cannot be read."""
    infos = _active_sessions()
    if infos is None:
        return None
    sizes = []
    for info in infos:
        try:
            state = info.session.session_state
            sizes.append(sum(value_bytes(state[k]) for k in list(state.filtered_state)))
        except Exception:  # noqa: BLE001 - a session closing while it is read: counted as empty
            sizes.append(0)
    return sorted(sizes, reverse=True)


def uploads_held() -> tuple[int, int] | None:
    """(files, bytes) of the uploads the server keeps now; None without the upload guard."""
    from .guard import upload_guard

    g = upload_guard()
    if g is None:
        return None
    held = g.held().values()
    return sum(n for n, _ in held), sum(b for _, b in held)


def snapshot(cache) -> dict:
    """Everything the status page shows about memory, read now; `cache` is the analyses' BudgetCache."""
    return {
        "sessions": session_sizes(),
        "analyses": {"running": ANALYSES.running, "waiting": ANALYSES.waiting(), "places": analysis_places()},
        "cache": {
            "bytes": cache.bytes,
            "reserved": cache.reserved,
            "budget": cache.budget,
            "by_kind": cache.by_kind(),
        },
        "uploads": uploads_held(),
    }


def holders_table(snap: dict, top: int = 8) -> list[dict]:
    """The biggest holders, biggest first, at most `top`: each {"holder", "count", "bytes"}."""
    cache, analyses = snap["cache"], snap["analyses"]
    rows = [{"holder": f"Analysis cache: {kind}", "count": n, "bytes": b} for kind, (n, b) in cache["by_kind"].items()]
    if cache["reserved"]:
        held = cache["reserved"]
        rows.append({"holder": "Analyses in progress (reserved)", "count": analyses["running"], "bytes": held})
    sessions = snap["sessions"] or []
    if sessions:
        rows.append({"holder": "Sessions' own state (all)", "count": len(sessions), "bytes": sum(sessions)})
        rows.append({"holder": "Sessions' own state (the biggest one)", "count": 1, "bytes": sessions[0]})
    if snap["uploads"] and snap["uploads"][0]:
        rows.append({"holder": "Uploads kept", "count": snap["uploads"][0], "bytes": snap["uploads"][1]})
    rows.sort(key=lambda r: r["bytes"], reverse=True)
    return rows[:top]
