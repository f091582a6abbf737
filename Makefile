# Two commands do all set-up on a fresh machine with only Python 3.11:
#   make run    -> .venv + requirements + built-in model, then the app on http://localhost:8501
#   make test   -> the same + test requirements, lint (ruff), corpora, Chromium for browser tests, then pytest
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup setup-dev setup-cluster data browser lint run test test-serial test-fast soak bench docs wheel clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.app-installed: requirements.txt requirements-nodeps.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -r requirements-nodeps.txt
	touch $@

# The repository itself, editable and without re-resolving its dependencies (the lines above pin
# them): scripts/ and `python -m benchmarks` then import bert, app and benchmarks from anywhere.
$(VENV)/.dev-installed: requirements-dev.txt pyproject.toml setup.py $(VENV)/.app-installed
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

setup: $(VENV)/.app-installed

setup-dev: $(VENV)/.dev-installed

# The distributed mode: Ray and psycopg (requirements-cluster.txt) and Debian's HAProxy.
$(VENV)/.cluster-installed: requirements-cluster.txt $(VENV)/.dev-installed
	$(BIN)/pip install -q -r requirements-cluster.txt
	touch $@

setup-cluster: $(VENV)/.cluster-installed
	bash scripts/cluster_deps.sh

data: setup
	$(BIN)/python -m bert.data.corpus wiki brown bbc wordnet sotu
	$(BIN)/python -m bert.data.datasets

browser:
	bash scripts/install_chromium.sh
	bash scripts/install_axe.sh

run: setup
	$(BIN)/streamlit run streamlit_app.py --server.port $(PORT)

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Every test once, in two lanes (pytest-xdist; tests/lanes.py says how the tests are shared out and
# why the browser unit goes first); the figures: tests/README.md.
test: setup-dev setup-cluster lint data browser
	bash scripts/isolated.sh $(BIN)/python -m pytest -q -ra --durations=25 -n 2 --dist loadscope --no-loadscope-reorder

# The same tests in one process, one after another: for a failure that only shows beside the other
# lane, or a machine with one core.
test-serial: setup-dev setup-cluster lint data browser
	bash scripts/isolated.sh $(BIN)/python -m pytest -q -ra --durations=25

# The browser scenarios with the most threads in flight (the class following its teacher on and off
# the Class board page), three times in a row, so a rare race shows: make test runs each once.
soak: setup-dev setup-cluster data browser
	for i in 1 2 3; do bash scripts/isolated.sh $(BIN)/python -m pytest -q -ra -m soak || exit 1; done

test-fast: setup-dev
	bash scripts/isolated.sh $(BIN)/python -m pytest -q -m "not slow and not browser"

bench: setup-dev
	$(BIN)/python -m benchmarks

# Every README picture taken anew from the running app in Chromium (scripts/docs_pictures.py).
docs: setup-dev data browser
	$(BIN)/python -m scripts.docs_pictures

# The project as one wheel in dist/ (import names bert, app with its figure builders, benchmarks):
# what a saved view's notebook needs in a fresh venv (`pip install dist/*.whl`).
wheel: setup-dev
	$(BIN)/pip wheel -q --no-deps --no-build-isolation -w dist .
	rm -rf build

clean:
	rm -rf $(VENV) .cache .node tests/artifacts build dist
