"""The project as a plain (non-editable) install: the wheel built from a copy of the checkout, installed
with --no-deps into a fresh venv without system site packages, the third-party packages reached
through a .pth line naming this venv's site-packages (a bare path: the .pth files in it, among them
the editable install of this checkout, are not run). From a temporary folder, with no PYTHONPATH, a
saved Attention notebook then runs (nbclient, the new venv's kernel): `bert` comes from the wheel,
the built-in model from the wheel's bert/assets, and the printed numbers equal the app's (1e-5)."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from app.export import notebook as nb
from app.export.stamp import Stamp

ROOT = Path(__file__).resolve().parents[1]
# Left out of the copy the wheel is built from: ignored or machine-made folders, never in a wheel.
NOT_COPIED = (".git", ".venv", ".cache", "runs", "models", "build", "dist", "*.egg-info", "__pycache__", "artifacts")
WHERE = "BERT_FROM "  # the line the kernel prints where bert and its assets came from

try:
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401
except ImportError as e:  # outside CI a venv without the dev requirements skips; in CI it fails
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        raise
    pytest.skip(f"{e.name} is not installed (pip install -r requirements-dev.txt)", allow_module_level=True)


def _wheel(tmp: Path) -> Path:
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_COPIED))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), "."],
        cwd=src,
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp / "dist").glob("bert_explorer-*.whl")
    return wheel


def _venv(tmp: Path, wheel: Path) -> Path:
    """A venv with the wheel alone in its site-packages, this venv's site-packages after it."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    (packages,) = (venv / "lib").glob("python3*/site-packages")
    (packages / "third_party.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()), encoding="utf-8")
    return python


RUN = """
import sys
import nbclient, nbformat
node = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(node, timeout=300, kernel_name="python3").execute()
nbformat.write(node, sys.argv[1])
"""


@pytest.mark.slow
def test_a_saved_notebook_runs_in_a_fresh_venv_with_the_wheel_installed(tmp_path):
    import bert
    from bert.analysis import full

    wheel = _wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert {"bert/__init__.py", "app/figures/core.py", "app/export/notebook.py"} <= set(names)
    assert "bert/assets/minilm-l6/model.safetensors" in names and "bert/assets/eval/everyday_cloze.tsv" in names
    assert not [n for n in names if n.split("/")[0] in ("tests", "pages", "scripts", "assets")]
    python = _venv(tmp_path, wheel)

    sentence = "the teacher read the book because she loved it ."
    text = json.loads(nb.attention(nb.ModelRef("builtin:minilm-l6", "minilm-l6"), Stamp(), sentence, None, 3, 5))
    where = f"from bert.checkpoint.builtins import ASSETS\nprint({WHERE!r} + json.dumps([bert.__file__, str(ASSETS)]))"
    text["cells"].append({"cell_type": "code", "id": "where", "metadata": {}, "execution_count": None,
                          "outputs": [], "source": where})  # fmt: skip
    path = tmp_path / "home" / "attention.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(text), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(JUPYTER_DATA_DIR=str(tmp_path / "jupyter"), BERT_EXPLORER_TORCH_THREADS="1")
    done = subprocess.run([str(python), "-c", RUN, str(path)], cwd=path.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    printed = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code" for o in c["outputs"])
    (line,) = [l for l in printed.splitlines() if l.startswith(WHERE)]
    module, assets = json.loads(line[len(WHERE) :])
    venv = python.parent.parent
    assert Path(module).is_relative_to(venv) and Path(assets).is_relative_to(venv), (module, assets)
    assert not Path(module).is_relative_to(ROOT)

    numbers = next(nb.printed_numbers(c["outputs"]) for c in cells if nb.NUMBERS in "".join(c["source"]))
    an = full.analyze(bert.load("minilm-l6"), sentence)
    assert numbers["tokens"] == an.tokens
    np.testing.assert_allclose(np.array(numbers["attention"]), an.attentions[3, 5], atol=1e-5)
