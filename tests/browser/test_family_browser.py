"""BERT's family in Chromium: a DistilBERT-style and an ELECTRA-style folder (tiny, random, made
with transformers) in the server's models folder, picked in the sidebar; Attention draws, the
Masked LM page says the DistilBERT has no next-sentence head and shows the ELECTRA's
replaced-token bars, Compare puts the two side by side and says what differs; a RoBERTa's
Tokenization page shows its byte-level BPE merge by merge, an ALBERT's Attention page says its
layers share one layer's weights. Screenshots: tests/artifacts/family_*.png."""

import pytest

from benchmarks import server
from tests.browser.page_checks import assert_page_ok, choose_view, screenshot_full
from tests.helpers import family_folder, link_built_data

pytestmark = pytest.mark.browser
PLOT = '[data-testid="stPlotlyChart"]'


@pytest.fixture
def family_url(tmp_path, artifacts):
    models = tmp_path / "models"
    models.mkdir()
    family_folder("distilbert", models / "tiny-distilbert")
    family_folder("electra", models / "tiny-electra")
    family_folder("roberta", models / "tiny-roberta")
    family_folder("albert", models / "tiny-albert")
    cache = link_built_data(tmp_path / "cache")
    port = server.free_port()
    env = {"BERT_EXPLORER_MODELS_DIR": str(models), "BERT_EXPLORER_CACHE": str(cache)}
    proc = server.start_server(port, artifacts / "family-server.log", env)
    url = f"http://127.0.0.1:{port}"
    try:
        server.wait_healthy(proc, url, timeout_s=120)
        yield url
    finally:
        server.stop_server(proc)


def pick(pg, app_ready, name, where='[data-testid="stSidebar"]', nth=0):
    """Choose the model whose label holds `name` in the nth model picker under `where`."""
    pg.locator(f'{where} [data-testid="stSelectbox"]').nth(nth).click()
    pg.get_by_role("option").filter(has_text=name).first.click()
    app_ready(pg)


def go(pg, app_ready, title):
    """Another page through the sidebar (the same session: the picked model stays)."""
    link = pg.locator('[data-testid="stSidebarNav"] a', has_text=title).first
    if not link.is_visible():  # the nav shows its first pages until "View more" is pressed
        pg.locator('[data-testid="stSidebarNav"] button', has_text="View").first.click()
    link.click()
    app_ready(pg)


def test_distilbert_and_electra_from_the_models_folder(page, app_ready, family_url, artifacts):
    page.goto(family_url + "/attention")
    app_ready(page)
    pick(page, app_ready, "tiny-distilbert")
    page.locator(PLOT).first.wait_for(state="visible", timeout=60_000)
    assert_page_ok(page)
    screenshot_full(page, artifacts / "family_distilbert_attention.png")

    go(page, app_ready, "Masked LM")
    page.get_by_text("DistilBERT has no next-sentence head").first.wait_for(timeout=60_000)
    assert page.locator(f'{PLOT} .gtitle:has-text("replaced")').count() == 0
    assert_page_ok(page)

    pick(page, app_ready, "tiny-electra")
    page.locator(f'{PLOT} .gtitle:has-text("P(this token was replaced)")').wait_for(timeout=60_000)
    page.get_by_text("ELECTRA has no next-sentence head").first.wait_for(timeout=30_000)
    box = page.get_by_label("A sentence, perhaps with a word swapped")
    box.fill("The chef drove the meal.")
    box.press("Enter")
    app_ready(page)
    tokens = page.evaluate(
        """() => { for (const el of document.querySelectorAll('.js-plotly-plot')) {
            const t = (el.layout || {}).title; const text = t && typeof t === 'object' ? t.text : t;
            if ((text || '').includes('replaced') && el.data) return el.data[0].x; } return []; }"""
    )
    assert "drove" in tokens, tokens  # the bars follow the edited sentence
    assert_page_ok(page)
    screenshot_full(page, artifacts / "family_electra_replaced.png")

    go(page, app_ready, "Compare")
    choose_view(page, app_ready, "Two models side by side")
    pick(page, app_ready, "tiny-distilbert", where='[data-testid="stMain"]', nth=1)  # model B
    page.get_by_text("What differs: ELECTRA vs DistilBERT").first.wait_for(timeout=60_000)
    assert page.locator(f"{PLOT} .main-svg").count() >= 2
    assert_page_ok(page)
    screenshot_full(page, artifacts / "family_compare.png")


def test_roberta_tokenization_and_albert_attention_from_the_models_folder(page, app_ready, family_url, artifacts):
    page.goto(family_url + "/tokenization")
    app_ready(page)
    pick(page, app_ready, "tiny-roberta")
    page.get_by_text("How byte-level BPE builds one word (RoBERTa)").first.wait_for(timeout=60_000)
    box = page.get_by_role("textbox", name="…or type any word")
    box.fill("sleeps")
    box.press("Enter")
    app_ready(page)
    page.get_by_text("Result: Ġ").first.wait_for(timeout=30_000)  # the merges end in pieces of "Ġsleeps"
    assert_page_ok(page)
    screenshot_full(page, artifacts / "family_roberta_tokenization.png")

    go(page, app_ready, "Attention")
    pick(page, app_ready, "tiny-albert")
    page.get_by_text("run the SAME weights").first.wait_for(timeout=60_000)
    page.locator(PLOT).first.wait_for(state="visible", timeout=60_000)
    assert_page_ok(page)
