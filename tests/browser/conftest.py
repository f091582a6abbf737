"""Browser tests: Debian's Chromium driven by Playwright, against the real app.

* `browser`: one headless Chromium for the session (`/usr/bin/chromium`, or
  $BERT_EXPLORER_CHROMIUM); Playwright never downloads a browser here.
* `page`: a fresh page that records every request, console error, page error and
  dialog. Requests to any host but localhost are aborted (nothing leaves the machine)
  and fail the test; `page.guard.assert_clean()` checks it all mid-test.
* `app_url`: the real app, `python -m streamlit run streamlit_app.py` on a free port,
  waited for on /_stcore/health, stopped at the end of the session.
* `artifacts`: tests/artifacts/ (git-ignored) for screenshots and the server log.
* `app_ready(page)`: wait until the app has finished running; `upload_file(page, path)`: on the
  Fine-tuning page, choose "Upload a file" and give it `path`.

Without Chromium or Playwright the tests skip with the reason, except when CI=true:
then they fail, so CI can never pass without having run them.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchmarks.server import (
    HOST,
    QUIET_CHROMIUM_ARGS,
    chromium_path,
    free_port,
    is_local,
    start_server,
    stop_server,
    wait_healthy,
)
from tests.browser.page_checks import settle, unavailable
from tests.lanes import worker_suffix

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = QUIET_CHROMIUM_ARGS
# Console errors we accept, each a known harmless Streamlit behaviour:
# - opening a page's own URL (e.g. /attention) makes Streamlit's frontend probe
#   /attention/_stcore/health and /attention/_stcore/host-config (404) before it finds the
#   server's base path and uses /_stcore/... (streamlit/streamlit#7074, open).
KNOWN_HARMLESS_ERRORS = [
    re.compile(r"status of 404 .*'url': 'http://127\.0\.0\.1:\d+/[\w-]+/_stcore/(health|host-config)'"),
]


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright Python package is not installed (pip install -r requirements-dev.txt)")
    exe = chromium_path()
    if exe is None:
        unavailable("Chromium is not installed (apt-get install chromium, or `make browser`)")
    pw = sync_playwright().start()
    try:
        try:
            br = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        except Exception as e:  # noqa: BLE001 - any launch failure means "no usable browser"
            unavailable(f"Chromium at {exe} did not start: {e}")
        yield br
        br.close()
    finally:
        pw.stop()


@dataclass
class Guard:
    """What one page did: requests, refused requests, console errors, page errors, dialogs."""

    requests: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_local(self):
        assert not self.foreign, f"requests left localhost: {self.foreign}"

    def assert_no_errors(self, ignore: tuple[str, ...] = ()):
        errors = [
            e
            for e in self.console_errors + self.page_errors
            if not any(s in e for s in ignore) and not any(p.search(e) for p in KNOWN_HARMLESS_ERRORS)
        ]
        assert not errors, f"console/page errors: {errors}"

    def assert_clean(self, ignore: tuple[str, ...] = ()):
        self.assert_local()
        self.assert_no_errors(ignore)
        assert not self.dialogs, f"dialogs opened: {self.dialogs}"


def _open_page(browser, viewport: dict, **context_args):
    """A page in a fresh browser context (its own cookies: another student), with its Guard."""
    context = browser.new_context(viewport=viewport, service_workers="block", **context_args)
    guard = Guard()

    def route(r):
        url = r.request.url
        if is_local(url):
            r.continue_()
        else:
            guard.foreign.append(url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    pg.on("request", lambda req: guard.requests.append(req.url))
    pg.on("websocket", lambda ws: None if is_local(ws.url) else guard.foreign.append(ws.url))
    pg.on("console", lambda m: guard.console_errors.append(f"{m.text} @ {m.location}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: guard.page_errors.append(str(e)))

    def on_dialog(d):
        guard.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    pg.on("dialog", on_dialog)
    pg.guard = guard
    return pg


@pytest.fixture
def page_factory(browser, request):
    """`page_factory(viewport=..., **context_args)`: more pages, each in a fresh context (another
    browser: a student opening a link), closed at the end of the test."""
    pages = []

    def make(viewport=None, **context_args):
        pg = _open_page(browser, viewport or {"width": 1400, "height": 1000}, **context_args)
        pages.append(pg)
        return pg

    yield make
    for pg in pages:
        pg.context.close()
    # whatever the test checked, no request may leave the machine
    foreign = [u for pg in pages for u in pg.guard.foreign]
    if foreign:
        pytest.fail(f"{request.node.name}: requests left localhost: {foreign}", pytrace=False)


@pytest.fixture
def page(page_factory):
    return page_factory()


@pytest.fixture(scope="session")
def app_url(artifacts):
    """The real app on a free port; the session waits for /_stcore/health to say ok."""
    if not (ROOT / "streamlit_app.py").exists():
        unavailable("streamlit_app.py does not exist yet")
    port = free_port()
    log_path = artifacts / f"streamlit-server{worker_suffix()}.log"
    proc = start_server(port, log_path, {})
    url = f"http://{HOST}:{port}"
    try:
        try:
            wait_healthy(proc, url, timeout_s=90)
        except RuntimeError as e:
            pytest.fail(f"the app did not start: {e}; see {log_path}")
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="session")
def class_url(tmp_path_factory, artifacts):
    """A server with the class board on (opt-in) and a cache folder of its own, for the tests that
    start a board of their own on it (each its own class code); tests that restart the server
    start their own (tests/browser/class_steps.start)."""
    from tests.browser.class_steps import start

    proc, url = start(tmp_path_factory.mktemp("class-cache"), artifacts / f"class-server-shared{worker_suffix()}.log")
    try:
        yield url
    finally:
        stop_server(proc)


def wait_for_app(pg, timeout_ms: int = 120_000):
    """Wait until Streamlit is connected, has run the script and shows something, and stays so
    (page_checks.settle: no rerun right behind)."""
    deadline = time.monotonic() + timeout_ms / 1000
    pg.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms)
    if not settle([pg], deadline - time.monotonic()):
        return
    state = pg.get_attribute('[data-testid="stApp"]', "data-test-script-state")
    running = pg.locator('[data-testid="stStatusWidget"]').count() > 0
    has_content = pg.locator('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]').count() > 0
    skeleton = pg.locator('[data-testid="stAppSkeleton"]').count() > 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "wait_timeout.png"
    pg.screenshot(path=str(shot))
    raise AssertionError(
        f"the app did not finish running within {timeout_ms / 1000:.0f} s (script state {state!r}, "
        f"status widget {running}, content {has_content}, skeleton {skeleton}); screenshot {shot}"
    )


@pytest.fixture(scope="session")
def app_ready():
    """`app_ready(page)`: wait until the app has finished running (see wait_for_app)."""
    return wait_for_app


@pytest.fixture(scope="session")
def upload_file(app_ready):
    """`upload_file(page, path)`: on the Fine-tuning page, choose "Upload a file" and give the
    uploader `path` (what the page then says is the caller's to wait for)."""

    def upload(pg, path):
        pg.locator('[data-testid="stRadio"] label', has_text="Upload a file").first.click()
        app_ready(pg)
        pg.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(str(path))

    return upload
