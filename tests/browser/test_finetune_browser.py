"""Fine-tuning in a real Chromium against the real app: upload a CSV, start training, watch
the live curve grow, press Stop, see the results. Screenshots: tests/artifacts/finetune_live.png
(while it trains), tests/artifacts/finetune_results.png and
tests/artifacts/attention_over_finetuning.png (the run's attention snapshots on the Compare page).

Kept small for a 2-core machine: 200 synthetic reviews, 32 tokens, the default base model
(all-minilm-l6-v2). The job trains on one torch thread; the test waits generously. Start is
pressed by the keyboard alone, every stop on the way with its focus ring drawn.
"""

import random
import time
import zipfile

import pytest

from benchmarks import server
from tests.browser.access_checks import tab_stops, unringed

pytestmark = pytest.mark.browser


def reviews_csv(n=200, seed=0) -> bytes:
    return server.reviews_csv(n, seed)


def set_number(page, label, value):
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(400)


def live_points(page, trace="loss per step") -> int:
    """How many points a trace of the live chart holds (0 before it exists)."""
    return page.evaluate(
        """(name) => {
        for (const el of document.querySelectorAll('.js-plotly-plot')) {
            const t = (el.data || []).find(t => t.name === name);
            if (t) return (t.x || []).length;
        }
        return 0;
    }""",
        trace,
    )


def wait_until(page, check, timeout_s, what):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        page.wait_for_timeout(500)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def test_upload_train_watch_stop(page, app_url, app_ready, upload_file, artifacts, tmp_path):
    csv = tmp_path / "reviews.csv"
    csv.write_bytes(reviews_csv())
    page.goto(app_url + "/finetune")
    app_ready(page)
    upload_file(page, csv)
    page.get_by_text("Usable texts").first.wait_for(timeout=60_000)
    app_ready(page)
    main = page.locator('[data-testid="stMainBlockContainer"]')
    assert "200" in main.locator('[data-testid="stMetric"]', has_text="Usable texts").inner_text()

    page.locator('[data-testid="stExpander"] summary', has_text="Model and training settings").click()
    set_number(page, "Max tokens per text", 32)
    set_number(page, "Epochs", 4)
    set_number(page, "Evaluations per epoch", 2)
    page.locator('[data-testid="stExpander"] summary', has_text="Attention over training").click()
    set_number(page, "Every N steps", 1)  # a snapshot of the probe after every step
    app_ready(page)

    # Start by the keyboard alone (WCAG 2.1.1): Tab from the settings to the button, each stop with
    # its focus ring drawn, Enter
    stops = tab_stops(page, lambda f: f["text"].endswith("Start fine-tuning"))
    assert not unringed(stops), f"focus not drawn on {unringed(stops)}"
    page.keyboard.press("Enter")
    # the live panel: progress bar, then the curve gets points, then more points
    page.locator('[data-testid="stProgress"]').first.wait_for(timeout=60_000)
    first = wait_until(page, lambda: live_points(page) >= 2, 300, "the first training steps")
    wait_until(page, lambda: live_points(page) >= first + 3, 300, "the curve to grow")
    wait_until(page, lambda: live_points(page, "validation accuracy") >= 1, 300, "the first evaluation")
    assert page.locator('[data-testid="stException"]').count() == 0
    page.get_by_role("heading", name="4. Train").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1500)
    page.screenshot(path=str(artifacts / "finetune_live.png"), full_page=False)

    page.get_by_role("button", name="Stop (keeps the best model so far)").click()
    page.get_by_text("5. Results").first.wait_for(timeout=240_000)
    app_ready(page)
    metric = main.locator('[data-testid="stMetric"]', has_text="Validation accuracy").inner_text()
    assert "%" in metric
    assert page.get_by_text("Stopped early").count() > 0 or page.get_by_text("Validation accuracy").count() > 0
    assert page.locator('[data-testid="stException"]').count() == 0
    # the fine-tuned model is now in the sidebar's picker
    assert page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').count() > 0
    page.get_by_role("heading", name="5. Results").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "finetune_results.png"), full_page=False)
    # the model downloads as a zip of one folder with a safe name, made only when asked for
    with page.expect_download(timeout=180_000) as dl:
        page.get_by_role("button", name="Download (BERT Explorer format, .zip)").click()
    download = dl.value
    assert download.suggested_filename == "all-minilm-l6-v2-reviews.zip"
    path = tmp_path / download.suggested_filename
    download.save_as(str(path))
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    assert {
        "all-minilm-l6-v2-reviews/config.json",
        "all-minilm-l6-v2-reviews/model.safetensors",
        "all-minilm-l6-v2-reviews/vocab.txt",
    } <= set(names)
    # attention over training: the probe's attention every 5 steps, replayed on the Compare page
    page.get_by_role("button", name="Replay the attention snapshots").click()
    page.get_by_text("Probe sentence: The film was not good").first.wait_for(timeout=60_000)
    app_ready(page)
    assert page.get_by_text("Something went wrong").count() == 0
    assert page.locator(".js-plotly-plot").count() >= 3
    page.get_by_text("Training step").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "attention_over_finetuning.png"), full_page=False)
    page.guard.assert_clean()


def test_pretrain_live_curves_and_probe(page, app_url, app_ready, artifacts, tmp_path):
    """A tiny model pre-trained on an uploaded text: the curves and the probe table update,
    the run finishes and the model is offered. Screenshot: tests/artifacts/pretrain_live.png."""
    r = random.Random(1)
    nouns = ["cat", "dog", "king", "queen", "river", "city", "teacher", "child", "house", "garden"]
    verbs = ["sees", "likes", "finds", "builds", "paints", "leaves", "visits", "helps"]
    text = "\n\n".join(
        " ".join(f"The {r.choice(nouns)} {r.choice(verbs)} the {r.choice(nouns)}." for _ in range(20))
        for _ in range(30)
    )
    f = tmp_path / "story.txt"
    f.write_text(text)
    page.goto(app_url + "/pretrain")
    app_ready(page)
    page.locator('[data-testid="stRadio"] label', has_text="Upload a .txt").first.click()
    app_ready(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(str(f))
    # the uploaded text's counts (30 documents); not just the word: the uploader's label has it too
    page.locator('[data-testid="stMetric"]', has_text="Documents").filter(has_text="30").first.wait_for(timeout=60_000)
    app_ready(page)
    set_number(page, "Layers", 1)
    set_number(page, "Vocabulary size", 500)
    set_number(page, "Steps", 60)
    set_number(page, "Evaluate every N steps", 20)
    set_number(page, "Tokens per sequence", 32)
    set_number(page, "Batch size", 8)
    app_ready(page)
    page.get_by_role("button", name="Start pre-training").click()
    page.locator('[data-testid="stProgress"]').first.wait_for(timeout=60_000)

    def evals():
        return page.evaluate("""() => {
            for (const el of document.querySelectorAll('.js-plotly-plot')) {
                const t = (el.data || []).find(t => t.name === 'validation top-1');
                if (t) return (t.x || []).length;
            }
            return 0;
        }""")

    wait_until(page, lambda: evals() >= 2, 300, "two evaluations")
    # the upload was handed to the job and freed, so the settings are gone; the curves are on screen
    # while the job runs and in its results once it is done (60 steps may already be over)
    page.evaluate("""() => {
        for (const el of document.querySelectorAll('.js-plotly-plot')) {
            if ((el.data || []).some(t => t.name === 'validation top-1')) {
                el.scrollIntoView({block: 'center'});
                return;
            }
        }
    }""")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "pretrain_live.png"), full_page=False)
    # the result's metric, not the live curve's title of the same words
    page.locator('[data-testid="stMetric"]', has_text="Next-sentence accuracy").first.wait_for(timeout=300_000)
    app_ready(page)
    page.get_by_text("pretrained-story-1x128").first.wait_for(timeout=60_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    # attention over training: the run recorded the probe every 10 steps; replay it on Compare
    page.get_by_role("button", name="Replay the attention snapshots").click()
    page.get_by_text("Probe sentence: The cat sat on the mat").first.wait_for(timeout=60_000)
    app_ready(page)
    assert page.get_by_text("7 snapshots").count() > 0  # steps 0, 10, ..., 60
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "attention_over_training.png"), full_page=True)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.get_by_text("Something went wrong").count() == 0  # the views drew (1-layer model)
    assert page.locator(".js-plotly-plot").count() >= 3
    page.guard.assert_clean()


def test_the_default_pretraining_run_leaves_the_plateau_while_you_watch(page, app_url, app_ready, artifacts):
    """The Pre-training page as a class finds it: defaults untouched, Start, and within a few
    minutes the page says the model left the plateau and the probe's guesses differ from gap to gap.
    Screenshot: tests/artifacts/pretrain_plateau.png."""
    page.goto(app_url + "/pretrain")
    app_ready(page)
    page.locator('[data-testid="stMetric"]', has_text="Documents").first.wait_for(timeout=300_000)  # WordNet read
    app_ready(page)
    page.get_by_role("button", name="Start pre-training").click()
    page.get_by_text("It left the plateau at step").first.wait_for(timeout=420_000)
    page.wait_for_timeout(500)
    page.get_by_text("It left the plateau at step").first.evaluate("e => e.scrollIntoView({block: 'center'})")
    page.screenshot(path=str(artifacts / "pretrain_plateau.png"))
    assert page.locator('[data-testid="stException"]').count() == 0
    page.get_by_role("button", name="Stop (keeps the model as it is now)").click()
    page.locator('[data-testid="stMetric"]', has_text="Next-sentence accuracy").first.wait_for(timeout=120_000)
    page.guard.assert_clean()
