"""bert/settings.py is the one place that reads BERT_EXPLORER_* variables, and docs/SETTINGS.md lists them."""

import ast
import re
from pathlib import Path

import pytest

from bert import settings

ROOT = Path(__file__).resolve().parent.parent
CODE = [p for d in ("bert", "app", "pages") for p in (ROOT / d).rglob("*.py")] + [ROOT / "streamlit_app.py"]


def test_nothing_else_reads_the_environment():
    """Only bert/settings.py reads os.environ; the one exception is torchrun's WORLD_SIZE."""
    readers = []
    for path in CODE:
        if path == ROOT / "bert" / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv"):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert len(readers) == 1 and readers[0].startswith("bert/train/pretrain.py:"), readers
    line = (ROOT / "bert" / "train" / "pretrain.py").read_text().splitlines()[int(readers[0].split(":")[1]) - 1]
    assert "WORLD_SIZE" in line


def test_the_settings_page_lists_every_setting_and_no_other_and_every_name_used_exists():
    page = (ROOT / "docs" / "SETTINGS.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(BERT_EXPLORER_\w+)` \|", page, flags=re.MULTILINE)
    assert sorted(listed) == sorted(settings.SETTINGS), set(listed) ^ set(settings.SETTINGS)
    assert "docs/SETTINGS.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    used = set()
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith("BERT_EXPLORER_")
                and " " not in node.value
            ):
                used.add(node.value)
    assert used <= set(settings.SETTINGS), used - set(settings.SETTINGS)
    assert len(used) >= 14


def test_readers_fall_back_to_the_default(monkeypatch):
    name = "BERT_EXPLORER_MAX_QUEUE"
    for bad in ("", "ten", "-3", "0", "2.5"):
        monkeypatch.setenv(name, bad)
        assert settings.whole(name) == 10
    monkeypatch.setenv(name, " 25 ")
    assert settings.whole(name) == 25
    monkeypatch.setenv("BERT_EXPLORER_CACHE_MB", "0")
    assert settings.whole("BERT_EXPLORER_CACHE_MB", minimum=0) == 0
    monkeypatch.setenv("BERT_EXPLORER_MAX_JOB_MINUTES", "0.5")
    assert settings.number("BERT_EXPLORER_MAX_JOB_MINUTES") == 0.5
    monkeypatch.setenv("BERT_EXPLORER_MAX_JOB_MINUTES", "-1")
    assert settings.number("BERT_EXPLORER_MAX_JOB_MINUTES") == 15
    for value, on in (("1", True), ("yes", False), ("", False), (" 1 ", True)):
        monkeypatch.setenv("BERT_EXPLORER_ALLOW_HUB", value)
        assert settings.flag("BERT_EXPLORER_ALLOW_HUB") is on
    with pytest.raises(KeyError):
        settings.text("BERT_EXPLORER_NO_SUCH")
