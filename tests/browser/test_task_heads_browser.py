"""The Fine-tuning page's per-token shapes in a real Chromium, in one browser session: "Label every
word" on an uploaded CoNLL file (a word picked in the try-it box: where it looks), then "Find the
answer" on an uploaded SQuAD file, each trained to its results. Screenshots: tests/artifacts/
heads_tagger.png, heads_word_attention.png, heads_reader.png.

Kept small for a 2-core machine: 40 tagged sentences and 40 questions over 8 passages, the pages'
default base model (minilm-l6), short windows; the jobs train on one torch thread, waited for generously.
"""

import json

import pytest

from bert.data.qa_demo import qa_demo

pytestmark = pytest.mark.browser


def _conll() -> bytes:
    rows = []
    for k in range(40):
        who, where = ("Ada", "Paris") if k % 2 else ("Ben", "Oslo")
        rows.append(f"{who} B-PER\nlives O\nin O\n{where} B-LOC\n. O\n")
    return "\n".join(rows).encode()


def _squad() -> bytes:
    paragraphs: dict[str, list] = {}
    for q in qa_demo(passages=8).questions:
        answers = [{"text": t, "answer_start": s} for t, s in q.answers]
        paragraphs.setdefault(q.context, []).append({"id": q.id, "question": q.question, "answers": answers})
    data = [{"title": "demo", "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs.items()]}]
    return json.dumps({"version": "1.1", "data": data}).encode()


def _set_number(page, label, value):
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(400)


def _train(page, app_ready, shape: str, path, max_tokens: int, start: str):
    page.locator('[data-testid="stRadio"] label', has_text=shape).first.click()
    app_ready(page)
    page.locator('[data-testid="stRadio"] label', has_text="Upload a file").first.click()
    app_ready(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(str(path))
    app_ready(page)
    page.locator('[data-testid="stExpander"] summary', has_text="Model and training settings").click()
    _set_number(page, "Max tokens per input", max_tokens)
    app_ready(page)
    page.get_by_role("button", name=start).click()
    page.get_by_role("heading", name="4. Results").first.wait_for(timeout=600_000)
    app_ready(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.get_by_text("Something went wrong").count() == 0


def test_label_every_word_and_find_the_answer_on_uploads(page, app_url, app_ready, artifacts, tmp_path):
    conll, squad = tmp_path / "names.conll", tmp_path / "questions.json"
    conll.write_bytes(_conll())
    squad.write_bytes(_squad())
    page.goto(app_url + "/finetune")
    app_ready(page)
    main = page.locator('[data-testid="stMainBlockContainer"]')

    _train(page, app_ready, "Label every word", conll, 16, "Start: label every word")
    assert "%" in main.locator('[data-testid="stMetric"]', has_text="word accuracy").inner_text()
    assert (
        page.get_by_role("heading", name="The worst sentences").count()
        + page.get_by_role("heading", name="Try it").count()
        >= 1
    )
    page.get_by_role("heading", name="4. Results").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "heads_tagger.png"), full_page=False)
    box = main.locator('[data-testid="stSelectbox"]').filter(has_text="Word").get_by_role("combobox")
    box.click()  # the try-it box's word picker: typing narrows its list to the word
    box.press_sequentially("dog")
    page.get_by_role("option").filter(has_text="dog (7)").first.click()
    app_ready(page)
    looks = main.locator(".js-plotly-plot").filter(has_text="Where «dog» looks")
    looks.first.wait_for(timeout=60_000)
    assert looks.count() == 1 and "mean of its heads" in looks.first.inner_text()
    looks.first.evaluate("e => e.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(800)
    page.screenshot(path=str(artifacts / "heads_word_attention.png"), full_page=False)

    _train(page, app_ready, "Find the answer", squad, 64, "Start: find the answer")
    assert "%" in main.locator('[data-testid="stMetric"]', has_text="exact match").inner_text()
    assert page.get_by_text("Answered validation questions").count() > 0
    page.get_by_role("heading", name="4. Results").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "heads_reader.png"), full_page=False)
    page.guard.assert_clean()
