"""The seams of bert/, benchmarks/ and app/, read from the source with ast (nothing is imported): no import
circle (any import: top level, inside a function, under TYPE_CHECKING), no import of another module's
`_private` name and no `obj._private` reach-in, bert/ never imports streamlit or app/, no two packages import
each other, and the job backends are reached only through app/jobs/backend.py's Protocols."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bert", "benchmarks", "app")  # pages/ are scripts: they import, nothing imports them

# Known, each with its way out; the test fails when one is fixed, so the list only shrinks.
KNOWN_PRIVATE_IMPORTS: set[str] = set()
KNOWN_REACH_INS = {
    # the app's uncached analysis, until app/analysis_cache.py (reworked in parallel) gives it a public name
    "benchmarks/app_rows.py: importlib.import_module(module)._analyze",
    # transformers' own attribute, set on older versions that lack set_attn_implementation
    "benchmarks/models.py: model.config._attn_implementation",
    # the module's own Job class, from its manager in the same file
    "app/jobs/local.py: job._run",
    "app/jobs/local.py: job._thread",
    # Streamlit's: the legacy-mode check of the entry, and the clear-cache handler the server refuses
    "app/__init__.py: sys._getframe",
    "app/server/guard.py: AppSession._handle_clear_cache_request",
}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imported_module(name: str, node: ast.ImportFrom, path: Path) -> str:
    """The absolute module an ImportFrom in module `name` (file `path`) reads from."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def scan(modules: dict[str, Path] = MODULES, root: Path = ROOT):
    """(edges {module: modules it imports}, private imports, reach-ins, imports of streamlit/app from bert)."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private, reach, forbidden = set(), set(), set()
    for m, p in modules.items():
        rel = p.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
                edges[m] |= {t for t in targets if t in modules}
            elif isinstance(node, ast.ImportFrom):
                src = _imported_module(m, node, p)
                targets = [src]
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    if sub in modules:
                        edges[m].add(sub)  # `from . import hub`: the submodule
                    elif src in modules:
                        edges[m].add(src)
                    if _is_private(a.name) and src.split(".")[0] in PACKAGES + ("app",):
                        private.add(f"{rel}: {src}.{a.name}")
            elif isinstance(node, ast.Attribute) and _is_private(node.attr):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    reach.add(f"{rel}: {ast.unparse(node)}")
            if m.split(".")[0] == "bert":
                forbidden |= {f"{rel}: {t}" for t in targets if t.split(".")[0] in ("streamlit", "app")}
    return edges, private, reach, forbidden


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


EDGES, PRIVATE, REACH, FORBIDDEN = scan()


def test_no_import_circle():
    assert cycles(EDGES) == []


def test_the_circle_finder_finds_a_circle_through_a_function_level_import(tmp_path):
    """A circle made only by an import inside a function, and one only under TYPE_CHECKING."""
    pkg = tmp_path / "bert"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from .d import g\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\ng = 1\n")
    mods = {f"bert.{n}": pkg / f"{n}.py" for n in "abcd"}
    edges = scan(mods, tmp_path)[0]
    assert cycles(edges) == [["bert.a", "bert.b"], ["bert.c", "bert.d"]]


def test_no_import_of_another_modules_private_name():
    assert PRIVATE == KNOWN_PRIVATE_IMPORTS


def test_no_reach_into_another_objects_private_attribute():
    assert REACH == KNOWN_REACH_INS


def test_bert_never_imports_streamlit_or_the_app():
    assert FORBIDDEN == set()


def reexports(path: Path) -> list[str]:
    """The names a package's __init__.py imports at its top level and does not use itself: what
    it re-exports (app/lessons/__init__.py imports its lessons to make its list: not a facade)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names += [a.asname or a.name for a in node.names if (a.asname or a.name) not in used]
    return names


def test_no_package_below_bert_or_in_the_app_is_a_facade():
    """A package's __init__ re-exports its own few public names at most (bert/__init__.py is the
    library's public API and is left out), never a private one."""
    found = {}
    for init in [*(ROOT / "bert").rglob("__init__.py"), *(ROOT / "app").rglob("__init__.py")]:
        if init == ROOT / "bert" / "__init__.py":
            continue
        names = reexports(init)
        if len(names) > 8 or any(_is_private(n) for n in names):
            found[init.relative_to(ROOT).as_posix()] = names
    assert not found, found
    assert len(reexports(ROOT / "bert" / "tokenizer" / "__init__.py")) >= 5  # the scan sees re-exports


# ---- packages: no two import each other ------------------------------------------------------------

# Known, each with its way out; the test fails when one is fixed, so the list only shrinks.
KNOWN_PACKAGE_PAIRS = {
    ("app.board", "app.training"),
    ("app.board", "app.ui"),
    ("app.models", "app.ui"),
    ("bert.checkpoint", "bert.data"),
    ("bert.data", "bert.tokenizer"),
}


def package(module: str) -> str:
    """A module's package, two names deep: app.jobs.local -> app.jobs, bert.data.corpus.base ->
    bert.data; a module directly in app/ or bert/ is its own (app.models)."""
    return ".".join(module.split(".")[:2])


def package_pairs(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The pairs of packages each of which imports the other (any module of it, any import)."""
    imports = {(package(a), package(b)) for a, targets in edges.items() for b in targets}
    return {(a, b) for a, b in imports if a < b and (b, a) in imports}


def test_no_two_packages_import_each_other():
    assert package_pairs(EDGES) == KNOWN_PACKAGE_PAIRS


def test_the_pair_finder_finds_two_packages_importing_each_other():
    edges = {"app.jobs.run": {"app.models"}, "app.models": {"app.jobs.open_runs"}, "app.jobs.open_runs": set()}
    assert package_pairs(edges) == {("app.jobs", "app.models")}
    assert package_pairs({"app.jobs.a": {"app.jobs.b"}, "app.jobs.b": {"app.jobs.a"}}) == set()


# ---- the job backends: one interface, app/jobs/backend.py ---------------------------------------

BACKEND_IMPLEMENTATIONS = {"app.jobs.local", "app.jobs.ray_backend", "app.jobs.ray_actors", "app.jobs.remote_job"}


def _page_imports() -> dict[str, set[str]]:
    """pages/*.py (scripts, not in MODULES): {page: the modules it imports}."""
    out = {}
    for p in sorted((ROOT / "pages").glob("*.py")):
        found = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        out[f"pages/{p.name}"] = found
    return out


def test_nothing_outside_app_jobs_imports_a_backend_implementation():
    """The pages and the rest of the app reach jobs through app/jobs/backend.py (`job_backend()`,
    `JobBackend`, `JobHandle`), never a backend's own module: in ray mode the local backend's
    names are not the ones running. (benchmarks/ measure each backend directly: left out.)"""
    importers = {m: targets for m, targets in EDGES.items() if m.startswith("app.") and package(m) != "app.jobs"}
    importers |= _page_imports()
    found = {f"{m}: {t}" for m, targets in importers.items() for t in targets & BACKEND_IMPLEMENTATIONS}
    assert found == set()


def _class(module: str, name: str) -> ast.ClassDef:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _members(cls: ast.ClassDef, module: str) -> dict[str, ast.FunctionDef | None]:
    """What a class's instances have: its methods and properties (with their definition), its
    annotated fields, what its methods assign to `self.x`, and those of its base class in the module."""
    out: dict[str, ast.FunctionDef | None] = {}
    for base in cls.bases:
        if isinstance(base, ast.Name):
            try:
                out |= _members(_class(module, base.id), module)
            except StopIteration:
                pass
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
            for sub in ast.walk(node):
                targets = sub.targets if isinstance(sub, ast.Assign) else [getattr(sub, "target", None)]
                for t in targets:
                    for el in t.elts if isinstance(t, ast.Tuple) else [t]:
                        if isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name) and el.value.id == "self":
                            out.setdefault(el.attr, None)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, None)
    return out


def _params(fn: ast.FunctionDef) -> tuple[list[str], bool]:
    """(its parameter names after self, whether it takes **kwargs)."""
    return [a.arg for a in fn.args.args[1:] + fn.args.kwonlyargs], fn.args.kwarg is not None


@pytest.mark.parametrize(
    "protocol, implementations",
    [
        ("JobBackend", [("app.jobs.local", "TrainingJobs"), ("app.jobs.ray_backend", "RayJobs")]),
        ("JobHandle", [("app.jobs.local", "Job"), ("app.jobs.remote_job", "RemoteJob")]),
    ],
)
def test_both_backends_have_what_the_interface_declares(protocol, implementations):
    """Structurally, from the source (ray need not be installed): every member of the Protocol in
    app/jobs/backend.py is on both implementations, each method taking the Protocol's parameters."""
    declared = _class("app.jobs.backend", protocol)
    assert any(isinstance(d, ast.Name) and d.id == "runtime_checkable" for d in declared.decorator_list)
    wanted = {n: fn for n, fn in _members(declared, "app.jobs.backend").items() if not n.startswith("_")}
    assert len(wanted) >= 10
    for module, name in implementations:
        have = _members(_class(module, name), module)
        missing = sorted(set(wanted) - set(have))
        assert not missing, f"{module}.{name} lacks {missing}"
        for member, fn in wanted.items():
            is_property = fn is not None and any(
                isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list
            )
            if fn is None or is_property or have[member] is None:
                continue
            params, _ = _params(fn)
            theirs, kwargs = _params(have[member])
            absent = [p for p in params if p not in theirs and not kwargs]
            assert not absent, f"{module}.{name}.{member} takes no {absent}"
