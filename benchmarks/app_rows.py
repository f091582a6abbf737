"""The app rows: the app's analysis of a 64-token text, the bertviz HTML sizes, and the cold
start of `streamlit run` (health, and the Home page drawn in Chromium) against a bare
Streamlit app.

This is the only module of benchmarks/ that reaches into app/ (inside functions, so the model
rows run without it) or starts Streamlit and a browser.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .memory import peak_rss_mb
from .models import Setup, theirs_from_dir
from .report import Row, check, timed_row
from .timing import paired

if TYPE_CHECKING:
    from .bench import Bench

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOME_TEXT = "The loaded model"  # drawn on the Home page once the default model is described
STARTUP_RATIO = 2.0  # target: Home drawn within 2x a bare Streamlit app's time
APP_RSS_MB = 350.0  # target: the server's peak RSS once Home has drawn
BARE_TEXT = "Bare Streamlit app for the bench"
STARTUP_ROWS = ["startup-health", "startup-home", "mem-app"]
BERTVIZ_ROWS = ["bertviz-head-64", "bertviz-model-64"]
# Where the app's cached analysis `_analyze(model_key, text_a, text_b, bundle)` lives (its
# uncached function is `_analyze.__wrapped__`): the only place benchmarks/ names it. app.analysis_cache
# is where it is moving to; app.model_sources is where it was.
APP_ANALYSIS = ("app.analysis_cache", "app.model_sources")


# ---- 5. the app's work


def app_analysis_function():
    """The app's own analysis (`_analyze` of the first of APP_ANALYSIS that has it, without its
    cache) when importable, else the equivalent model call."""
    for module in APP_ANALYSIS:
        try:
            fn = getattr(importlib.import_module(module)._analyze, "__wrapped__", None)
        except Exception:  # noqa: BLE001  (no app here: try the next, then time the model call)
            continue
        if fn is not None:
            return fn, f"{module}._analyze, uncached"

    class _Result:
        pass

    def equivalent(key, text, text_b, bundle):
        enc = bundle.tokenizer.encode(text, text_b)
        with torch.inference_mode():
            out = bundle.model.bert(
                torch.tensor([enc.ids]),
                torch.tensor([enc.type_ids]),
                output_attentions=True,
                output_hidden_states=True,
                output_embedding_parts=True,
                output_qkv=True,
            )
        r = _Result()
        r.attentions = torch.stack([a[0] for a in out.attentions]).numpy()
        return r

    return equivalent, "equivalent model call"


def text_of_length(tokenizer, n: int) -> str:
    """A text that encodes to exactly n tokens, [CLS] and [SEP] included."""
    words = [w for w in _WORDS if w in tokenizer.vocab]
    if not words:  # a tiny vocab: its own plain words
        words = [t for t in tokenizer.ids_to_tokens if t.isalnum() and t != tokenizer.unk_token]
    out = [words[i % len(words)] for i in range(n - 2)]
    text = " ".join(out)
    assert len(tokenizer.encode(text, max_length=None).ids) == n, "word list does not tokenise 1:1"
    return text


_WORDS = (
    "the quick brown fox jumps over a lazy dog while children in the park watch and laugh "
    "at how it runs along river bank before evening light fades behind old stone houses"
).split()


def app_work(b: Bench, setup: Setup) -> None:
    if not b.wants_any(["analysis-64", *BERTVIZ_ROWS]):
        return
    bundle = setup.bundle
    text = text_of_length(bundle.tokenizer, 64)
    enc = bundle.tokenizer.encode(text)
    analyze, how = app_analysis_function()
    key = f"bench:{bundle.name}"
    theirs = theirs_from_dir("BertModel", setup.hf_dir, "eager").eval()
    ids = torch.tensor([enc.ids])
    types = torch.tensor([enc.type_ids])

    def f_ours():
        return analyze(key, text, None, bundle)

    def f_theirs():
        with torch.inference_mode():
            return theirs(input_ids=ids, token_type_ids=types, output_attentions=True, output_hidden_states=True)

    result = f_ours()
    tm = paired(f_ours, f_theirs, b.reps(15, 5), warmup=1 if b.quick else 2)
    what = f"{setup.label} full analysis, {len(enc.ids)} tokens ({how})"
    note = "theirs: eager forward with attentions + hidden states only (no embedding parts, q/k/v, numpy copies)"
    row = timed_row("analysis-64", what, tm, b.clock, note)
    b.add(check(row, 40.0, on="ours"))
    b.profile("ours analysis-64", f_ours, 5)
    attentions = result.attentions  # (L, H, T, T) numpy
    bertviz_sizes(b, list(enc.tokens), attentions)


def bertviz_sizes(b: Bench, tokens, attentions) -> None:
    """Our self-contained bertviz HTML (app.bertviz.views) against bertviz's own, in MB."""
    if not b.wants_any(BERTVIZ_ROWS):
        return
    try:
        from app.bertviz import views as bv
    except Exception as e:  # noqa: BLE001  (app not importable: say why)
        for n in BERTVIZ_ROWS:
            b.skip(n, f"app/bertviz/views.py not importable: {type(e).__name__}: {e}")
        return
    try:
        import bertviz
    except ImportError:
        bertviz = None
    per_layer = tuple(torch.from_numpy(attentions[i][None].copy()) for i in range(attentions.shape[0]))
    for name, ours_fn, theirs_name in (
        ("bertviz-head-64", "head_view_html", "head_view"),
        ("bertviz-model-64", "model_view_html", "model_view"),
    ):
        fn = getattr(bv, ours_fn, None)
        if fn is None or bertviz is None:
            b.skip(name, f"app.bertviz.views.{ours_fn} or bertviz missing")
            continue
        view = fn(tokens, attentions)
        ours_mb = view.size_bytes / 1e6 if hasattr(view, "size_bytes") else len(str(view).encode()) / 1e6
        their = getattr(bertviz, theirs_name)(per_layer, tokens, html_action="return")
        theirs_mb = len(their.data.encode("utf-8")) / 1e6
        shown = getattr(view, "num_tokens", len(tokens))
        note = (
            f"ours self-contained (d3, jQuery inlined), {shown}/{len(tokens)} tokens, "
            f"layers {len(getattr(view, 'layers', ()))}; bertviz's loads its JS from a CDN"
        )
        row = Row(
            name,
            f"{theirs_name} HTML at {len(tokens)} tokens (app defaults)",
            "MB",
            ours_mb,
            theirs_mb,
            ours_mb / theirs_mb,
            note=note,
            extra={"tokens_shown": shown},
        )
        b.add(check(row, 3.0, on="ours"))


# ---- 5. cold start (not in --tiny)


def _browser_reason(b: Bench) -> str | None:
    """Why the browser rows cannot run, or None when they can."""
    reason = None
    if b.args.quick:
        reason = "--quick: no browser"
    elif not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} not installed"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "playwright not installed"
    if not b.wants_any(["startup-home", "mem-app"]):
        reason = reason or "not asked for"
    return reason


def _cold_starts(b: Bench, with_browser: bool) -> dict[str, list[dict]]:
    """Cold starts of the app and of a bare one-line Streamlit app, alternating."""
    bare_dir = Path(tempfile.mkdtemp(prefix="bench-bare-"))
    (bare_dir / "app.py").write_text(f"import streamlit as st\nst.title({BARE_TEXT!r})\n")
    runs = {"ours": [], "bare": []}
    try:
        with _browser(with_browser) as page_factory:
            for i in range(b.reps(3, 1)):
                order = ("ours", "bare") if i % 2 == 0 else ("bare", "ours")
                for who in order:
                    if who == "ours":
                        res = cold_start(ROOT / "streamlit_app.py", ROOT, page_factory, HOME_TEXT)
                    else:
                        res = cold_start(bare_dir / "app.py", bare_dir, page_factory, BARE_TEXT)
                    runs[who].append(res)
    finally:
        shutil.rmtree(bare_dir, ignore_errors=True)
    return runs


def startup(b: Bench) -> None:
    if not b.wants_any(STARTUP_ROWS):
        return
    reason = (
        "--tiny: no Streamlit server or browser"
        if b.args.tiny
        else None
        if (ROOT / "streamlit_app.py").is_file()
        else "streamlit_app.py not found"
    )
    if reason:
        for n in STARTUP_ROWS:
            b.skip(n, reason)
        return
    browser_reason = _browser_reason(b)
    runs = _cold_starts(b, browser_reason is None)

    def med(who, k):
        vals = [r[k] for r in runs[who] if r.get(k) is not None]
        return statistics.median(vals) if vals else None

    def paired_ratio(k):
        return statistics.median([a[k] / c[k] for a, c in zip(runs["ours"], runs["bare"])])

    b.add(
        Row(
            "startup-health",
            "`streamlit run` until /_stcore/health answers",
            "s",
            med("ours", "health"),
            med("bare", "health"),
            paired_ratio("health"),
            note="theirs: a bare one-line Streamlit app",
        )
    )
    if browser_reason is not None:
        b.skip("startup-home", browser_reason)
        b.skip("mem-app", browser_reason)
        return
    row = Row(
        "startup-home",
        "`streamlit run` until the Home page has drawn (Chromium)",
        "s",
        med("ours", "drawn"),
        med("bare", "drawn"),
        paired_ratio("drawn"),
        note=f"waits for '{HOME_TEXT}' (the default model's diagram) vs the bare app's title; "
        f"{len(runs['ours'])} start(s) each, alternating",
    )
    b.add(check(row, STARTUP_RATIO))
    mo, mb = med("ours", "peak_mb"), med("bare", "peak_mb")
    row = Row(
        "mem-app",
        "server peak RSS once the Home page has drawn",
        "MB",
        mo,
        mb,
        mo / mb,
        note="the app on its Home page (default model described, not loaded) vs a bare Streamlit app",
    )
    b.add(check(row, APP_RSS_MB, on="ours"))


@contextlib.contextmanager
def _browser(enabled: bool):
    """Yields a function that opens a new page (or None when disabled)."""
    if not enabled:
        yield None
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser.new_page
        finally:
            browser.close()


def _wait_healthy(proc: subprocess.Popen, url: str, log, t0: float, timeout: float) -> float:
    """Seconds since t0 until the server at url answers /_stcore/health with ok."""
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(
                f"streamlit exited with {proc.returncode}: {log.read().decode(errors='replace')[-1500:]}"
            )
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"streamlit did not answer on {url} within {timeout:.0f} s")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return time.perf_counter() - t0
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.05)


def cold_start(script: Path, cwd: Path, page_factory, text: str, timeout: float = 180.0) -> dict:
    """Start `streamlit run script`; seconds until /_stcore/health answers and (with a page)
    until `text` is on the page; the server's peak RSS then. The server is stopped after."""
    from .server import HOST, free_port, streamlit_cmd  # the load test starts the server the same way

    port = free_port()
    url = f"http://{HOST}:{port}"
    page = page_factory() if page_factory else None
    log = tempfile.TemporaryFile()
    cmd = streamlit_cmd(str(script), port)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    out = {"health": None, "drawn": None, "peak_mb": None}
    try:
        out["health"] = _wait_healthy(proc, url, log, t0, timeout)
        if page is not None:
            page.goto(url)
            page.get_by_text(text).first.wait_for(timeout=timeout * 1000)
            out["drawn"] = time.perf_counter() - t0
            out["peak_mb"] = peak_rss_mb(proc.pid)
    finally:
        if page is not None:
            page.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return out
