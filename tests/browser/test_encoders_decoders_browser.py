"""Encoders, decoders and both in a real Chromium, in one session: a tiny next-word model trained on
the Pre-training page (a short run on an uploaded story) to its end, then "Continue this text"
writes after "The cat sees the" a noun of the story, with its next-token table and causal attention;
a tiny encoder-decoder trained on the Decoder on top page (a short run) decodes with its
cross-attention drawn; then lesson 7
shows one head read left only (a causal heatmap, hidden cells grey), a gap's top guesses read
both ways and left only, and that run's cross-attention. Every wait is on a state of the page.
Screenshots: tests/artifacts/next_word_continue.png, decoder_cross_attention.png, lesson_left_only.png,
lesson_both_readings.png, lesson_cross_attention.png."""

import os
import random
import re

import pytest

from app.lessons.encoders_decoders import BOTH

pytestmark = pytest.mark.browser

# `make docs` (scripts/docs_pictures.py) sets DOCS_PICTURES=1: the Decoder page's run is then its
# default (1,500 steps, minutes), whose cross-attention on a typed 8-word source shows reversal's
# anti-diagonal for the README; in the test suite it is a 40-step run.
DOCS = os.environ.get("DOCS_PICTURES") == "1"
DOCS_SOURCE = "apple bird cat dog egg fish goat hat"
TRAIN_MS = 240_000  # a short run and its result; a bound on the wait, not a time asserted
DOCS_TRAIN_MS = 1_200_000
NOUNS = ["cat", "dog", "king", "queen", "river", "city", "teacher", "child", "house", "garden"]
VERBS = ["sees", "likes", "finds", "builds", "paints", "leaves", "visits", "helps"]


def go(pg, app_ready, title):
    """Another page through the sidebar: the same session, so the trained run stays."""
    link = pg.locator('[data-testid="stSidebarNav"] a', has_text=title).first
    if not link.is_visible():  # the nav shows its first pages until "View more" is pressed
        pg.locator('[data-testid="stSidebarNav"] button', has_text="View").first.click()
    link.click()
    app_ready(pg)


def number(pg, app_ready, label, value):
    box = pg.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    app_ready(pg)


def charts(pg, text):
    return pg.locator('[data-testid="stMainBlockContainer"] .js-plotly-plot').filter(has_text=text)


def shot(pg, heading, path):
    pg.get_by_role("heading", name=heading).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    pg.wait_for_timeout(800)  # the scroll settles before the picture
    pg.screenshot(path=str(path), full_page=False)


def next_step(pg, app_ready, i):
    pg.locator('[data-testid="stButton"] button', has_text="Next").first.click()
    app_ready(pg)
    pg.get_by_role("heading", name=f"{i + 1}. {BOTH.steps[i].title}").first.wait_for(timeout=120_000)


def story(folder):
    """30 documents of 20 sentences "The <noun> <verb> the <noun>.": after "the" always a noun."""
    r = random.Random(1)
    sentence = lambda: f"The {r.choice(NOUNS)} {r.choice(VERBS)} the {r.choice(NOUNS)}."  # noqa: E731
    text = "\n\n".join(" ".join(sentence() for _ in range(20)) for _ in range(30))
    f = folder / "story.txt"
    f.write_text(text)
    return f


def next_word_run_writes(pg, app_url, app_ready, artifacts, folder):
    """A 60-step next-word run on the story to its end, then its continuation of "The cat sees the"."""
    pg.goto(f"{app_url}/pretrain")
    app_ready(pg)
    pg.locator('[data-testid="stRadio"] label', has_text="Upload a .txt").first.click()
    app_ready(pg)
    pg.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(str(story(folder)))
    pg.locator('[data-testid="stMetric"]', has_text="Documents").filter(has_text="30").first.wait_for(timeout=60_000)
    app_ready(pg)
    pg.locator('[data-testid="stRadio"] label', has_text="The next word").first.click()
    app_ready(pg)
    for label, value in (("Layers", 1), ("Vocabulary size", 500), ("Steps", 60), ("Evaluate every N steps", 20)):
        number(pg, app_ready, label, value)
    for label, value in (("Tokens per sequence", 32), ("Batch size", 8), ("Warm-up steps", 10)):
        number(pg, app_ready, label, value)
    pg.get_by_role("button", name="Start pre-training").click()
    pg.locator('[data-testid="stMetric"]', has_text="Next-word top-1").first.wait_for(timeout=TRAIN_MS)  # the end
    pg.get_by_role("heading", name="Continue this text").first.wait_for(timeout=60_000)
    app_ready(pg)
    box = pg.get_by_label("Text to continue", exact=True)
    box.fill("The cat sees the")
    box.press("Control+Enter")
    app_ready(pg)
    line = pg.locator('[data-testid="stMarkdown"]').filter(has_text=re.compile("the cat sees the", re.I)).first
    line.wait_for(timeout=60_000)
    written = line.locator("strong").first.inner_text().split()
    assert written and written[0] in NOUNS, written  # after "the" it learned a noun comes
    assert charts(pg, "causal attention").count() == 1
    assert pg.get_by_text("The ten likeliest next tokens").count() == 1
    shot(pg, "Continue this text", artifacts / "next_word_continue.png")


def test_a_next_word_run_writes_a_decoder_run_decodes_then_lesson_seven(page, app_url, app_ready, artifacts, tmp_path):
    next_word_run_writes(page, app_url, app_ready, artifacts, tmp_path)
    page.goto(f"{app_url}/decoder")
    app_ready(page)
    if not DOCS:
        page.get_by_text("Model and training settings").first.click()
        number(page, app_ready, "Training steps", 40)
        number(page, app_ready, "Score the held-out pairs every … steps", 20)
    page.get_by_role("button", name="Start training").click()
    page.get_by_role("heading", name="Watch it decode").first.wait_for(timeout=DOCS_TRAIN_MS if DOCS else TRAIN_MS)
    app_ready(page)
    if DOCS:
        source = page.get_by_label("A source to decode", exact=True)
        source.fill(DOCS_SOURCE)
        source.press("Enter")
        app_ready(page)
    charts(page, "cross-attention").first.wait_for(timeout=60_000)
    assert charts(page, "masked self-attention").count() == 1
    shot(page, "Watch it decode", artifacts / "decoder_cross_attention.png")

    go(page, app_ready, "Lessons")
    page.locator('[data-testid="stMainBlockContainer"] [data-testid="stSelectbox"]').first.click()
    page.get_by_role("option").filter(has_text=BOTH.title).first.click()
    app_ready(page)
    page.get_by_role("heading", name=f"1. {BOTH.steps[0].title}").first.wait_for(timeout=120_000)
    assert charts(page, "both ways").count() == 1

    next_step(page, app_ready, 1)
    assert charts(page, "left only").count() == 1
    shot(page, f"2. {BOTH.steps[1].title}", artifacts / "lesson_left_only.png")

    next_step(page, app_ready, 2)
    both = charts(page, "reads left only")
    assert both.count() == 1 and "reads both ways" in both.first.inner_text()
    shot(page, f"3. {BOTH.steps[2].title}", artifacts / "lesson_both_readings.png")

    next_step(page, app_ready, 3)
    assert charts(page, "prefix of").count() == 1

    next_step(page, app_ready, 4)
    charts(page, "cross-attention").first.wait_for(timeout=60_000)
    assert page.get_by_text("No encoder-decoder is trained").count() == 0
    shot(page, f"5. {BOTH.steps[4].title}", artifacts / "lesson_cross_attention.png")
    assert page.locator('[data-testid="stException"]').count() == 0
    page.guard.assert_clean()
