"""`make docs`: every picture in the README taken anew from the running app, in Chromium.

The browser tests already drive the real app on the built-in model and screenshot what they see
(tests/artifacts/): the pages at 1400x1000, projector mode at 1280x720, a live fine-tuning run, a
live pre-training run, a lesson, lesson 7's two readings, the Causes page's patching, the class
board and BERT's family. This runs those tests (CI=true, so a missing Chromium fails instead of
skipping), then copies each screenshot it took to its place under docs/.
A picture whose test did not take it anew is an error: nothing stale is copied.

    .venv/bin/python -m scripts.docs_pictures      # or: make docs
    .venv/bin/python -m scripts.docs_pictures docs/decoder_cross_attention.png   # one picture (its test)

With DOCS_PICTURES=1 a test may take its picture from a longer run than the suite's (the Decoder
page's default 1,500-step run, whose cross-attention shows reversal's anti-diagonal).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.browser.access_checks import PROJECTOR_PAGES

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
BROWSER = "tests/browser/"

# Pre-training's next-word run writing, Decoder on top's default run (DOCS_PICTURES=1: its 1,500 steps,
# reversal's anti-diagonal in the cross-attention), lesson 7
ENCODERS_DECODERS = (
    "test_encoders_decoders_browser.py::test_a_next_word_run_writes_a_decoder_run_decodes_then_lesson_seven"
)

# every page at 1400x1000, after its axe audit
PAGES_AT_DESKTOP = "test_accessibility_browser.py::test_axe_finds_no_critical_or_serious_violation[desktop]"
# One picture a page, in the order of the sidebar: docs path -> (the test that takes it, its screenshot).
PAGE_PICTURES = {
    "docs/page_home.png": (PAGES_AT_DESKTOP, "page_home.png"),
    "docs/lesson_step.png": (
        "test_lessons_browser.py::test_a_lesson_step_a_question_and_progress_across_pages",
        "lesson_step.png",
    ),
    "docs/page_tokenization.png": (
        PAGES_AT_DESKTOP,
        "page_tokenization.png",
    ),
    "docs/page_embeddings.png": (PAGES_AT_DESKTOP, "page_embeddings.png"),
    "docs/page_attention.png": (PAGES_AT_DESKTOP, "page_attention.png"),
    "docs/page_masked_lm.png": (PAGES_AT_DESKTOP, "page_masked_lm.png"),
    "docs/finetune_live.png": ("test_finetune_browser.py::test_upload_train_watch_stop", "finetune_live.png"),
    "docs/pretrain_live.png": ("test_finetune_browser.py::test_pretrain_live_curves_and_probe", "pretrain_live.png"),
    "docs/decoder_cross_attention.png": (ENCODERS_DECODERS, "decoder_cross_attention.png"),
    "docs/analysis_head_patterns.png": (
        "test_analysis_browser.py::test_head_patterns_click_a_cell_then_open_it",
        "analysis_head_patterns.png",
    ),
    "docs/analysis_explanations_rollout.png": (
        "test_analysis_browser.py::test_views",
        "analysis_explanations_rollout.png",
    ),
    "docs/causes_patching.png": (
        "test_causes_browser.py::test_patching_heatmap_a_clicked_cell_and_a_typed_pair",
        "causes_patching.png",
    ),
    "docs/analysis_ablation.png": (
        "test_analysis_browser.py::test_ablation_switch_off_the_top_heads",
        "analysis_ablation.png",
    ),
    "docs/analysis_compare_two.png": ("test_analysis_browser.py::test_views", "analysis_compare_two.png"),
    "docs/board_live.png": (
        "test_board_browser.py::test_three_students_post_to_one_board_and_it_survives_a_restart",
        "board_live.png",
    ),
}
PICTURES = {
    **PAGE_PICTURES,
    **{
        f"docs/projector/{name}.png": (
            "test_accessibility_browser.py::test_axe_finds_no_critical_or_serious_violation[projector]",
            f"projector_{name}.png",
        )
        for name in PROJECTOR_PAGES
    },
    **{  # a class led by its teacher: a student following, the live answer chart, the reveal
        f"docs/{shot}": (
            "test_class_follow_browser.py::test_teacher_leads_three_students_follow_answer_and_see_the_reveal",
            shot,
        )
        for shot in ("class_following.png", "class_answers.png", "class_reveal.png")
    },
    **{  # a next-word run writing; lesson 7: one head read left only, a gap's guesses both ways and left only
        f"docs/{shot}": (ENCODERS_DECODERS, shot)
        for shot in ("next_word_continue.png", "lesson_left_only.png", "lesson_both_readings.png")
    },
    # BERT's family from the models folder: ELECTRA's replaced-token view, RoBERTa's BPE merges
    "docs/family_electra_replaced.png": (
        "test_family_browser.py::test_distilbert_and_electra_from_the_models_folder",
        "family_electra_replaced.png",
    ),
    "docs/family_roberta_tokenization.png": (
        "test_family_browser.py::test_roberta_tokenization_and_albert_attention_from_the_models_folder",
        "family_roberta_tokenization.png",
    ),
}


def taken_since(shot: Path, started: float) -> bool:
    return shot.is_file() and shot.stat().st_mtime >= started


def main(only: list[str]) -> int:
    """Take every picture, or `only` those named (docs/x.png): their tests alone run."""
    unknown = [p for p in only if p not in PICTURES]
    if unknown:
        print(f"not a README picture: {', '.join(unknown)}", file=sys.stderr)
        return 2
    pictures = {p: PICTURES[p] for p in only} if only else PICTURES
    tests = sorted({BROWSER + test for test, _ in pictures.values()})
    started = time.time()
    env = {**os.environ, "CI": "true", "DOCS_PICTURES": "1"}  # no Chromium is a failure here, not a skip
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=ROOT, env=env)
    if rc != 0:
        print(f"the browser tests failed (exit {rc}): no picture was copied", file=sys.stderr)
        return rc
    stale = [shot for _, shot in pictures.values() if not taken_since(ARTIFACTS / shot, started)]
    if stale:
        print(f"not taken by this run: {', '.join(sorted(set(stale)))}", file=sys.stderr)
        return 1
    for dest, (_, shot) in pictures.items():
        (ROOT / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / shot, ROOT / dest)
    print(f"{len(pictures)} pictures written under docs/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
