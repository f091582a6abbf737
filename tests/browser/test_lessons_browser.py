"""Lessons in a real Chromium: a linked lesson step draws its figure, a question is
answered and marked right, and the progress in the sidebar survives a visit to another page.
Screenshots: tests/artifacts/lesson_step.png, tests/artifacts/lesson_quiz.png."""

import pytest

import bert
from app.lessons import LESSONS

pytestmark = pytest.mark.browser


def test_a_lesson_step_a_question_and_progress_across_pages(page, app_url, app_ready, artifacts):
    attention = next(i for i, lesson in enumerate(LESSONS) if lesson.key == "attention")
    page.goto(f"{app_url}/lessons?lesson=attention&step=1")
    app_ready(page)
    step = LESSONS[attention].steps[1]
    page.get_by_role("heading", name=f"2. {step.title}").first.wait_for(timeout=120_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # the step's figure, drawn in the browser
    assert page.locator('[data-testid="stException"]').count() == 0
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "lesson_step.png"), full_page=False)

    first = LESSONS[0]
    page.goto(f"{app_url}/lessons?lesson={first.key}&step={len(first.steps)}")
    app_ready(page)
    page.get_by_role("heading", name="Check yourself").first.wait_for(timeout=120_000)
    pieces = len(bert.load("minilm-l6").tokenizer.tokenize("unbelievably"))
    question = page.locator('[data-testid="stMainBlockContainer"] [data-testid="stRadio"]').first
    question.locator("label", has_text=str(pieces)).first.click()
    page.get_by_text("Right.").first.wait_for(timeout=60_000)
    app_ready(page)
    page.get_by_role("heading", name="Check yourself").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "lesson_quiz.png"), full_page=False)
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert "1 of 15 questions right" in sidebar.inner_text()

    page.locator('[data-testid="stSidebarNav"] a', has_text="Tokenization").first.click()
    app_ready(page)
    page.locator('[data-testid="stSidebarNav"] a', has_text="Lessons").first.click()
    app_ready(page)
    assert "1 of 15 questions right" in sidebar.inner_text()
    page.guard.assert_clean()
