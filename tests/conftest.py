"""Shared fixtures. The repository root is importable through pytest's `pythonpath` option and
the markers (`slow`, `browser`) are registered, both in pyproject.toml."""

import os

import pytest
import torch

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def pytest_collection_modifyitems(config, items):
    """In `make test`'s two lanes the longest units of tests come first (tests/lanes.py)."""
    from tests.lanes import in_a_lane, longest_first

    if in_a_lane():
        items[:] = longest_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadscope` hands out a module, the Ray modules together or the browser modules
    together, as one unit (tests/lanes.py)."""
    from tests.lanes import ByModule

    return ByModule(config, log) if config.getvalue("dist") == "loadscope" else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """In `make test` the browser unit's lane keeps the processor first (tests/lanes.py);
    before any fixture, so the servers and clusters a module starts take its lane's priority."""
    from tests.lanes import yield_to_browsers

    yield_to_browsers(item)


# --- the app in streamlit's AppTest (tests/helpers.started_app) ----------------------------------


@pytest.fixture(scope="module")
def at(request):
    """One app for the module, run once on its entry page, then on the module's START_PAGE when it
    names one: the model loads once, the analyses stay cached, and the module's tests share one
    session (each leaves it usable for the next)."""
    from tests.helpers import started_app

    return started_app(page=getattr(request.module, "START_PAGE", None))


@pytest.fixture
def fresh_at(request):
    """The app for this test alone (a session state of its own), started as `at` is. A module's
    autouse fixtures (its own cache folder) come before it."""
    from tests.helpers import started_app

    return started_app(page=getattr(request.module, "START_PAGE", None))


@pytest.fixture(scope="session")
def real_vocab_path():
    from bert.checkpoint.builtins import minilm_package_dir

    return minilm_package_dir() / "vocab.txt"


@pytest.fixture(scope="session")
def _ray_cluster_session():
    """One real Ray cluster for the session (tests/ray_cluster.py): a head without CPUs and two
    1-CPU workers, the second with two fake GPUs, token auth on, all on 127.0.0.1. Skipped (failed
    where CI=true) unless this process is in a network namespace whose only interface is lo."""
    import shutil
    import tempfile
    from pathlib import Path

    from tests.ray_cluster import RayCluster, require_isolation

    require_isolation()
    root = Path(tempfile.mkdtemp(prefix="ray-"))  # short: Ray's unix sockets live under it
    cluster = RayCluster(root)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in cluster.env.items():
            mp.setenv(name, value)
        cluster.start()
        try:
            yield cluster
        finally:
            import ray

            if ray.is_initialized():
                ray.shutdown()
            cluster.stop()
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def ray_cluster(_ray_cluster_session):
    """The session's Ray cluster (`RayCluster`: .address, .env for a second driver, .connect(),
    .node_id(i), .kill_node(i)); a worker killed by the test is started again after it."""
    yield _ray_cluster_session
    _ray_cluster_session.heal()


# --- the class board on both of its stores (app/board/) ------------------------------------


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for the session (tests/postgres.py), started when a test first needs
    one; without PostgreSQL or psycopg the test is skipped, under CI=true it fails."""
    from tests import postgres

    reason = postgres.why_not()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs PostgreSQL for the board tests: {reason}")
        pytest.skip(reason)
    server = postgres.started()
    yield server
    server.remove()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])  # a database server: slow
def board(request, tmp_path, monkeypatch):
    """The class board's store, once on SQLite (in the test's cache folder) and once on
    PostgreSQL (its database emptied), as app/class_store/service.py picks it from the settings: the
    pages a test drives use the same one. One store only: parametrize("board", [...], indirect=True)."""
    from app.class_store.service import board_store
    from tests.helpers import use_cache

    use_cache(monkeypatch, tmp_path)
    if request.param == "postgres":
        monkeypatch.setenv("BERT_EXPLORER_DATABASE_URL", request.getfixturevalue("postgres_server").board_database())
    else:
        monkeypatch.delenv("BERT_EXPLORER_DATABASE_URL", raising=False)
    return board_store()


@pytest.fixture()
def replica(board):
    """A second store on the `board` fixture's database, with connections of its own: another
    app replica, or the same server after a restart."""
    from app.class_store.sqlite_store import SqliteStore

    if isinstance(board, SqliteStore):
        other = SqliteStore(board.path)
    else:
        from app.class_store.postgres import PostgresStore

        other = PostgresStore(board.url)
    yield other
    other.close()
