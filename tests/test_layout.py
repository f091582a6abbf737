"""The seams of bert/, benchmarks/ and app/, read from the source with ast (nothing is imported): no import
circle (any import: top level, inside a function, under TYPE_CHECKING), no import of another module's
`_private` name and no `obj._private` reach-in, bert/ never imports streamlit or app/, and the family
is read from bert/family.py's rows, not from `model_type` comparisons. And the house's text: no
comment or docstring of the code cites an issue number or a design file the repository lacks, or
states a measurement or its history (in the tests: no history), and
the README stays short (<= 300 lines), its details in the docs/ pages it links. No two packages
import each other, and the job backends are reached only through app/jobs/backend.py's Protocols."""

from __future__ import annotations

import ast
import io
import re
import tokenize
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
    # Streamlit's folding of a rerun into the waiting one: a fragment of a page left may not fold in
    "app/server/page_fragments.py: ScriptRequests._request_rerun_locked",
    # Streamlit's: the open sessions, for the teacher's status page (the runtime has no public list)
    "app/server/holders.py: runtime.get_instance()._session_mgr",
    # torch's report of native bf16 on this CPU (oneDNN: AMX or AVX-512 BF16): it has no public one
    "bert/train/precision.py: torch.ops.mkldnn._is_mkldnn_bf16_supported",
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


# Where a member's `model_type` may be compared: the table itself, and the config that reads its
# config.json. Anywhere else a difference belongs in a row of the table (bert/family.py's Member).
MODEL_TYPE_HOMES = ("bert/family.py", "bert/config.py")
MODEL_TYPE_BUDGET = 3
_MEMBER_TESTS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _is_model_type(node: ast.expr) -> bool:
    """`model_type`, `x.model_type` or `getattr(x, "model_type", ...)`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        return len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "model_type"
    return (isinstance(node, ast.Name) and node.id == "model_type") or (
        isinstance(node, ast.Attribute) and node.attr == "model_type"
    )


def model_type_comparisons(paths, root: Path = ROOT) -> dict[str, str]:
    """{"path:line": its source lines} of every ==, !=, in, not in with a `model_type` on either side
    (against a literal or anything else)."""
    found = {}
    for p in paths:
        text = p.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Compare) or not any(isinstance(op, _MEMBER_TESTS) for op in node.ops):
                continue
            if any(_is_model_type(x) for x in (node.left, *node.comparators)):
                where = f"{p.relative_to(root).as_posix()}:{node.lineno}"
                found[where] = "\n".join(lines[node.lineno - 1 : node.end_lineno])
    return found


def test_the_family_is_read_from_its_table_not_from_model_type_comparisons():
    """At most MODEL_TYPE_BUDGET `model_type` comparisons outside its homes, each with its reason
    in a comment on its line."""
    paths = [
        p
        for d in ("bert", "app", "pages")
        for p in sorted((ROOT / d).rglob("*.py"))
        if p.relative_to(ROOT).as_posix() not in MODEL_TYPE_HOMES
    ]
    found = model_type_comparisons(paths)
    assert len(found) <= MODEL_TYPE_BUDGET, found
    assert not {where for where, src in found.items() if "#" not in src}, found


def test_the_model_type_scan_sees_every_kind_of_comparison(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        'a = config.model_type == "albert"\n'
        'b = model_type in ("x", "y")\n'
        "c = cfg.model_type not in KNOWN\n"
        'd = "bert" != x.model_type  # a reason\n'
        "e = MEMBERS[config.model_type]\n"
        "f = model_type\n"
        'g = getattr(config, "model_type", "bert") == "electra"\n'
    )
    assert sorted(model_type_comparisons([f], tmp_path)) == ["m.py:1", "m.py:2", "m.py:3", "m.py:4", "m.py:7"]
    assert model_type_comparisons([ROOT / "bert" / "config.py"])  # the homes are left out, not unseen


# Comments and docstrings give the conclusion: the measurement, its history and the issue it came
# from live in the bench, the docs or the git log. Code names no file the repository lacks.
NOTE_DIRS = ("bert", "app", "pages", "benchmarks", "scripts", "tests")
ISSUE_CITATION = re.compile(r"(?<![\w&/])#\d{1,3}(?!\w)|\bissues?\s+#?\d+\b|\bPR\s*#?\d+\b", re.IGNORECASE)
MISSING_FILES = ("DESIGN" + ".md",)  # cited once, never in the repository
# Known, being rewritten in other worktrees; the test fails when one is fixed, so the list only shrinks.
KNOWN_CITATIONS: set[str] = set()


def notes(path: Path):
    """(line, text) of every comment and docstring of a code file (a shell script's comments)."""
    src = path.read_text(encoding="utf-8")
    if path.suffix == ".sh":
        for n, line in enumerate(src.splitlines(), 1):
            if "#" in line:
                yield n, line[line.index("#") + 1 :]
        return
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first.lineno, first.value.value


def citations(root: Path = ROOT) -> set[str]:
    """'path:line: citation' for every issue number and every missing file named in a comment or docstring."""
    files = [p for d in NOTE_DIRS for p in (root / d).rglob("*") if p.suffix in (".py", ".sh")]
    files += [root / "streamlit_app.py"] if (root / "streamlit_app.py").exists() else []
    found = set()
    for p in sorted(files):
        if "artifacts" in p.relative_to(root).parts:
            continue
        for line, text in notes(p):
            hits = [m.group(0) for m in ISSUE_CITATION.finditer(text)] + [f for f in MISSING_FILES if f in text]
            found |= {f"{p.relative_to(root).as_posix()}:{line}: {h}" for h in hits}
    return found


def test_no_comment_or_docstring_cites_an_issue_or_a_missing_design_file():
    assert citations() == KNOWN_CITATIONS


def test_the_citation_finder_finds_issue_numbers_and_design_md(tmp_path):
    # The citations are put together here, so this file cites nothing itself.
    issue, design, h = "issue", "DESIGN" + ".md", "#"
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text(
        f'"""Bounded ({issue} {h}23), as {design} says."""\n'
        f'COLOUR = "{h}123"  # a string, not a note; see Issue 7\n'
        f"def f():\n    '''The rule ({h}15); colour {h}1f77b4 and &{h}39; are not issues.'''\n"
    )
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "b.sh").write_text(f"#!/bin/sh\n# the check of {issue} {h}17\necho '{h}1'\n")
    assert citations(tmp_path) == {
        f"app/a.py:1: {issue} {h}23",
        f"app/a.py:1: {design}",
        "app/a.py:2: Issue 7",
        f"app/a.py:4: {h}15",
        f"scripts/b.sh:2: {issue} {h}17",
    }


# A figure with its unit (a time, a size, a share, a factor) or a history ("before:", "was ... now",
# "used to") in a comment or docstring of the code or the Makefile: the figure belongs in docs/ or the
# bench, the history in the git log. An example of output in quotes or backticks is not a note.
# The tests' notes may name a bound; only their history (a figure beside a before or a now) is refused.
FIGURE = re.compile(
    r"(?<![\w.\-])(?:about |~|≈)?[+-]?\d[\d,.]*\s*(?:%|×"
    r"|x(?=\s*(?:slower|faster|quicker|smaller|larger|bigger|scale|wide|more|less)\b)"
    r"|(?:ms|µs|us|ns|s|sec|secs|seconds?|mins?|minutes?|h|hours?|[KMGT]i?B|kB|bytes?)\b)"
    r"|\d[\d,.]*x\b"
)
HISTORY = re.compile(
    r"\bbefore\s*/\s*after\b|(?:^|[.;(])\s*before:|\bwas\b[^.;]{0,80}?\bnow\b|\bused to\b|\bpreviously\b"
    r"|\bonce (?:lost|failed|broke|took|hung|crashed)\b",
    re.IGNORECASE | re.MULTILINE,
)
THEN = re.compile(r"\bbefore\b(?!\s+(?:it|its|the|a|an|each|they|any)\b)|\bnow\b|\bused to\b", re.IGNORECASE)
QUOTED = re.compile(r"(?<!\w)'[^'\n]*'(?!\w)|\"[^\"\n]*\"|`[^`\n]*`")


def measurements(text: str, figures: bool = True) -> list[str]:
    """The history and the figures with units in one note (with `figures` off, only a figure in a
    sentence that also says before or now)."""
    text = QUOTED.sub("", text)
    found = [m.group(0).strip(" .;(") for m in HISTORY.finditer(text)]
    for sentence in re.split(r"(?<=[.;])\s+", text):
        if figures or THEN.search(sentence):
            found += [m.group(0) for m in FIGURE.finditer(sentence)]
    return found


def makefile_notes(path: Path):
    """(line, text) of the Makefile's comment lines."""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("#"):
            yield n, line.lstrip()[1:]


def measurement_notes(root: Path = ROOT) -> set[str]:
    """'path:line: figure' for every figure with a unit or history in the notes of bert/, app/,
    pages/ and the Makefile, and every history (with its figure) in the tests' notes."""
    found = set()
    places = [(p, True) for d in ("bert", "app", "pages") for p in sorted((root / d).rglob("*.py"))]
    places += [(p, False) for p in sorted((root / "tests").rglob("*.py")) if "artifacts" not in p.parts]
    for p, figures in places:
        for line, text in notes(p):
            found |= {f"{p.relative_to(root).as_posix()}:{line}: {h}" for h in measurements(text, figures)}
    if (root / "Makefile").exists():
        for line, text in makefile_notes(root / "Makefile"):
            found |= {f"Makefile:{line}: {h}" for h in measurements(text)}
    return found


def test_no_comment_or_docstring_states_a_measurement_or_its_history():
    assert measurement_notes() == set()


def test_the_measurement_finder_finds_figures_units_and_history(tmp_path):
    for d in ("bert", "app", "pages", "tests"):
        (tmp_path / d).mkdir()
    (tmp_path / "bert" / "a.py").write_text(
        '"""Loads at once (0.7 s, not 4 s)."""\n'
        "# peak +180 -> +136 MB while loading; a 3x faster path, 25 % of it, 2.5 GiB\n"
        "X = 1  # the box was 20 lines wide, now it is cut\n"
        "def f():\n    '''Formats a size as \"1.5 MB\" or `12 kB`; 6 layers x 12 heads; UTF-16 text.'''\n"
        "# the model's 3 s start and the tokenizer's 2 MB\n"
    )
    (tmp_path / "app" / "b.py").write_text("# trains in about 6 s of CPU; used to hang\n")
    (tmp_path / "pages" / "c.py").write_text("# every page, every layer: a rule with no figure\n")
    (tmp_path / "tests" / "t.py").write_text(
        'def test_x():\n    """Before: 37 s of processor. Within a 10 s bound; seen before: free."""\n'
        "    x = 1  # 815 kB before, now less\n"
    )
    (tmp_path / "Makefile").write_text("# The scenarios that once lost a rare race\ntest:\n\techo 5 s\n")
    assert measurement_notes(tmp_path) == {
        "bert/a.py:1: 0.7 s",
        "bert/a.py:1: 4 s",
        "bert/a.py:2: +136 MB",
        "bert/a.py:2: 3x",
        "bert/a.py:2: 25 %",
        "bert/a.py:2: 2.5 GiB",
        "bert/a.py:3: was 20 lines wide, now",
        "bert/a.py:6: 3 s",
        "bert/a.py:6: 2 MB",
        "app/b.py:1: about 6 s",
        "app/b.py:1: used to",
        "tests/t.py:2: Before:",
        "tests/t.py:2: 37 s",
        "tests/t.py:3: 815 kB",
        "Makefile:1: once lost",
    }


def test_the_readme_is_short():
    """What it is, the picture, the two commands, the tour, the family, teaching, serving a class and
    many classes in short, the layout; the rest lives in the docs/ pages it links."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert "make run" in readme and "make test" in readme
    for page in ("MODELS.md", "PERFORMANCE.md", "SETTINGS.md", "DEPLOY.md", "RELIABILITY.md"):
        assert (ROOT / "docs" / page).is_file() and f"docs/{page}" in readme, page


# ---- packages: no two import each other ------------------------------------------------------------

# Known, each with its way out; the test fails when one is fixed, so the list only shrinks.
KNOWN_PACKAGE_PAIRS: set[tuple[str, str]] = set()


def package(module: str) -> str:
    """A module's package, two names deep: app.jobs.local -> app.jobs, bert.data.corpus.base ->
    bert.data; a module directly in app/ or bert/ is its own (app.model_sources)."""
    return ".".join(module.split(".")[:2])


def package_pairs(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The pairs of packages each of which imports the other (any module of it, any import)."""
    imports = {(package(a), package(b)) for a, targets in edges.items() for b in targets}
    return {(a, b) for a, b in imports if a < b and (b, a) in imports}


def test_no_two_packages_import_each_other():
    assert package_pairs(EDGES) == KNOWN_PACKAGE_PAIRS


def test_the_pair_finder_finds_two_packages_importing_each_other():
    edges = {
        "app.jobs.worker": {"app.model_sources"},
        "app.model_sources": {"app.jobs.run_models"},
        "app.jobs.run_models": set(),
    }
    assert package_pairs(edges) == {("app.jobs", "app.model_sources")}
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


# ---- packages: no circle of any length, and floors -------------------------------------------------


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """{package: the packages it imports}, `package`'s nodes (app's subpackages and its top-level
    modules each one, app/__init__.py the node "app"), a package's imports of itself left out."""
    graph: dict[str, set[str]] = {}
    for a, targets in edges.items():
        graph.setdefault(package(a), set()).update(package(b) for b in targets if package(b) != package(a))
    return graph


def test_no_circle_of_packages_of_any_length():
    assert cycles(package_graph(EDGES)) == []


def test_the_package_circle_finder_finds_a_ring_of_three_the_pair_rule_misses():
    edges = {"app.ui.show": {"app.export.notebook"}, "app.export.notebook": {"app.figures.core"}}
    edges |= {"app.figures.core": {"app.ui.widgets"}, "app.ui.widgets": set()}
    assert package_pairs(edges) == set()
    assert cycles(package_graph(edges)) == [["app.export", "app.figures", "app.ui"]]


# The app's floors, lowest first. A package may import its own floor (no circle, above) or lower,
# never higher; the feature packages stand side by side on theirs and import none of each other
# (what two share moves down a floor). pages/*.py are scripts above every floor; bert/ is below
# them all (it never imports the app).
FLOORS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "base",  # the process, the session and pure formatting: no figure, no widget
        frozenset(
            {"app", "app.server", "app.state", "app.students", "app.formatting", "app.current_model"}
            | {"app.trained_decoder"}
        ),
    ),
    ("figures", frozenset({"app.figures", "app.bertviz"})),  # plotly and bertviz in, nothing drawn
    ("services", frozenset({"app.analysis_cache", "app.export", "app.jobs", "app.class_store"})),
    (
        "screen parts",  # widgets, the sidebar every page shares, a training run's life in the session
        frozenset(
            {"app.ui", "app.model_sources", "app.model_picker", "app.sidebar", "app.attention_masks"}
            | {"app.find_attention_head", "app.run_session"}
        ),
    ),
    (
        "features",  # one package a feature: training, causes, lessons, the class's screens, the
        # Decoder page's parts, the dictionary, the LTI launch
        frozenset({"app.training", "app.causes", "app.lessons", "app.board", "app.seq2seq", "app.features", "app.lti"}),
    ),
)
SIDE_BY_SIDE = "features"
# Known, each with its way out; the test fails when one is fixed, so the list only shrinks.
KNOWN_CROSSINGS: set[str] = set()


def crossings(edges: dict[str, set[str]], floors=FLOORS, side_by_side: str = SIDE_BY_SIDE) -> set[str]:
    """'a -> b' for every app package importing a higher floor's, or a feature importing another
    feature; a package of the app no floor names is reported as 'a -> (no floor)'."""
    floor = {p: (i, name) for i, (name, members) in enumerate(floors) for p in members}
    found = set()
    for a, targets in package_graph(edges).items():
        if a.split(".")[0] != "app":
            continue
        if a not in floor:
            found.add(f"{a} -> (no floor)")
            continue
        for b in targets:
            if b.split(".")[0] != "app":
                continue
            if b not in floor:
                found.add(f"{b} -> (no floor)")
            elif floor[b][0] > floor[a][0] or (floor[b] == floor[a] and floor[a][1] == side_by_side):
                found.add(f"{a} -> {b}")
    return found


def test_no_import_runs_up_a_floor_and_features_stand_side_by_side():
    assert crossings(EDGES) == KNOWN_CROSSINGS


def test_the_floor_check_finds_an_upward_import_a_feature_pair_and_an_unplaced_package():
    floors = (("base", frozenset({"app.formatting"})), ("ui", frozenset({"app.ui"})))
    floors += (("features", frozenset({"app.board", "app.lessons"})),)
    edges = {
        "app.formatting": {"app.ui.widgets"},  # up
        "app.ui.widgets": {"app.formatting", "bert.model"},  # down, and out of the app: fine
        "app.board.questions": {"app.lessons.attention", "app.ui.widgets"},  # a feature beside: no
        "app.lessons.attention": {"app.formatting"},
        "app.new_thing": set(),  # on no floor
        "bert.model": set(),
    }
    assert crossings(edges, floors, "features") == {
        "app.formatting -> app.ui",
        "app.board -> app.lessons",
        "app.new_thing -> (no floor)",
    }
    assert crossings({"app.ui.a": {"app.ui.b"}, "app.ui.b": set()}, floors, "features") == set()
