"""The README's pictures: each one it names exists, each one `make docs` takes is in it, and
docs/ holds no picture that nothing shows."""

import re
from pathlib import Path

from scripts.docs_pictures import PAGE_PICTURES, PICTURES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def named_images() -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", README) + re.findall(r"<img [^>]*src=\"([^\"]+)\"", README)


def test_every_image_the_readme_names_exists():
    names = named_images()
    assert len(names) >= len(PICTURES)
    missing = [n for n in names if not (ROOT / n).is_file()]
    assert not missing, f"the README names pictures that do not exist: {missing}"


def test_every_picture_make_docs_takes_is_in_the_readme_and_every_page_once():
    names = named_images()
    assert not [p for p in PICTURES if p not in names]
    assert [n for n in names if n in PAGE_PICTURES] == list(PAGE_PICTURES), "one picture a page, in the sidebar's order"


def test_docs_holds_no_picture_the_readme_does_not_show():
    shown = set(named_images())
    unused = [str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.png") if str(p.relative_to(ROOT)) not in shown]
    assert not unused, f"pictures nothing shows: {unused}"
