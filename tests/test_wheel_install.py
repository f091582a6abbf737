"""The project as a plain (non-editable) install, as a student at home gets it: the wheel the app
offers beside a notebook (app/export/wheel.py, built from this checkout) saved in a temporary folder
beside a saved Attention notebook, and a fresh venv without system site packages, the third-party
packages reached through a .pth line naming this venv's site-packages (a bare path: the .pth files in
it, among them the editable install of this checkout, are not run). With no PYTHONPATH the notebook
runs (nbclient, the new venv's kernel): its first cell installs the wheel beside it (pip offline, no
dependencies: they are this venv's), `bert` then comes from the wheel, the built-in model from the
wheel's bert/assets, and its numbers equal the app's (1e-5). Without the wheel, the first cell says
where to save it."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from app.export import notebook as nb
from app.export import wheel as app_wheel
from app.export.stamp import Stamp
from tests import notebook_run as nbr

ROOT = Path(__file__).resolve().parents[1]
WHERE = "BERT_FROM "  # the line the kernel prints where bert and its assets came from

try:
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401
except ImportError as e:  # outside CI a venv without the dev requirements skips; in CI it fails
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        raise
    pytest.skip(f"{e.name} is not installed (pip install -r requirements-dev.txt)", allow_module_level=True)


def _venv(tmp: Path) -> Path:
    """A venv with nothing of its own in its site-packages, this venv's site-packages after it."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
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


def test_without_the_wheel_the_first_cell_says_where_to_save_it(tmp_path):
    """The first cell in a Python that has no `bert` (no site packages) and no wheel beside it: a
    sentence naming the wheel and the folder, nothing installed."""
    cell = nb.install_code()
    done = subprocess.run([sys.executable, "-I", "-S", "-c", cell], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    wheel = app_wheel.wheel_name()
    assert (
        done.stdout.strip()
        == f"Save {wheel} (the app offers it beside the notebook) in {tmp_path}, then run this cell again."
    )


def test_a_project_url_setting_is_the_first_cells_fallback(monkeypatch):
    url = "git+https://example.org/school/bert-explorer@v1"
    monkeypatch.setenv("BERT_EXPLORER_PROJECT_URL", url)
    cell = nb.install_code()
    assert f"project = {url!r}" in cell and "source = wheel if Path(wheel).is_file() else project" in cell
    assert url in nb.install_md()
    monkeypatch.setenv("BERT_EXPLORER_PROJECT_URL", "git+https://x.org/a b; rm -rf ~")  # not one pip source
    assert "project" not in nb.install_code() and "repository" not in nb.install_md()


@pytest.mark.slow
def test_a_saved_notebook_installs_the_apps_wheel_and_runs_in_a_fresh_venv(tmp_path):
    import bert
    from bert.analysis import full

    home = tmp_path / "home"
    home.mkdir()
    wheel = home / app_wheel.wheel_name()
    wheel.write_bytes(app_wheel.project_wheel())  # what the app's download gives
    assert app_wheel.project_wheel() is app_wheel.project_wheel()  # built once, kept
    names = zipfile.ZipFile(wheel).namelist()
    assert {"bert/__init__.py", "app/figures/core.py", "app/export/notebook.py"} <= set(names)
    assert "bert/assets/minilm-l6/model.safetensors" in names and "bert/assets/eval/everyday_cloze.tsv" in names
    assert not [n for n in names if n.split("/")[0] in ("tests", "pages", "scripts", "assets")]
    python = _venv(tmp_path)

    sentence = "the teacher read the book because she loved it ."
    text = json.loads(nb.attention(nb.ModelRef("builtin:minilm-l6", "minilm-l6"), Stamp(), sentence, None, 3, 5))
    where = f"from bert.checkpoint.builtins import ASSETS\nprint({WHERE!r} + json.dumps([bert.__file__, str(ASSETS)]))"
    text["cells"].append({"cell_type": "code", "id": "where", "metadata": {}, "execution_count": None,
                          "outputs": [], "source": where})  # fmt: skip
    path = home / "attention.ipynb"
    path.write_text(json.dumps(text), encoding="utf-8")
    import nbformat

    nbformat.write(nbr.with_probes(nbformat.read(path, as_version=4)), path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    # pip offline with no dependencies (they are this venv's, through the .pth line)
    env.update(JUPYTER_DATA_DIR=str(tmp_path / "jupyter"), BERT_EXPLORER_TORCH_THREADS="1")
    env.update(PIP_NO_INDEX="1", PIP_NO_DEPS="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    done = subprocess.run([str(python), "-c", RUN, str(path)], cwd=home, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]

    node = nbr.without_probes(nbformat.read(path, as_version=4))
    install = "".join("".join(o.get("text", "")) for o in node.cells[1].outputs)
    assert (
        install
        == f"Installing bert from {wheel.name} (a minute or two the first time) ...\nDone: run the next cells.\n"
    )
    printed = nbr.printed(node)
    (line,) = [l for l in printed.splitlines() if l.startswith(WHERE)]
    module, assets = json.loads(line[len(WHERE) :])
    venv = python.parent.parent
    assert Path(module).is_relative_to(venv) and Path(assets).is_relative_to(venv), (module, assets)
    assert not Path(module).is_relative_to(ROOT)

    numbers = nbr.numbers(node)
    an = full.analyze(bert.load("minilm-l6"), sentence)
    assert numbers["tokens"] == an.tokens
    np.testing.assert_allclose(np.array(numbers["attention"]), an.attentions[3, 5], atol=1e-5)
