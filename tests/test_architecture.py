"""The rules between parts that import-linter cannot state, and docs/architecture.md's tree against the files.

import-linter (``lint-imports`` in ``make test``, contracts in pyproject.toml) checks which part may import which;
it counts an import inside a function like one at the top of a module, so three rules are checked here instead:

* the toolkit never imports the service *at module level* (``hoglab.local``, ``hoglab.cli`` and ``hoglab.pulling``
  start or open it inside their functions, which is allowed): every toolkit module is imported in a fresh
  interpreter and nothing of ``hoglab.server``, nor chDB, may come with it;
* no import cycle between modules of different folders (a cycle inside one folder is that folder's business);
* each class name is defined once in the whole package (two ``NotFound`` would make which one a module gets depend
  on how many dots its import has);
* ``hoglab.translate``, the HogQL writer both halves call, imports nothing but ``hoglab.schema``, ``hoglab.errors``,
  pydantic, sqlglot and the standard library (import-linter can forbid a list, not allow one);
* docs/architecture.md draws the tree as it is: every package a folder of the drawing, every folder drawn a
  package, the top level's loose modules exactly those drawn, and every ``name.py`` the drawing names present.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "hoglab"
TOOLKIT = ["hoglab", "hoglab.errors", "hoglab.local", "hoglab.schema", "hoglab.translate", "hoglab.client",
           "hoglab.frames", "hoglab.queries", "hoglab.stats", "hoglab.notebook", "hoglab.cli",
           "hoglab.pulling"]  # fmt: skip
TRANSLATE_MAY_IMPORT = ("hoglab.translate", "hoglab.schema", "hoglab.errors", "sqlglot", "pydantic")


def _modules_under(package: str) -> list[str]:
    base = PACKAGE.joinpath(*package.split(".")[1:])
    if package == "hoglab" or not base.is_dir():  # the top package alone: its folder holds the service too
        return [package]
    found = []
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_the_toolkit_never_imports_the_service_at_module_level() -> None:
    modules = sorted({m for package in TOOLKIT for m in _modules_under(package)} - {"hoglab.cli.__main__"})
    assert len(modules) > 60  # the walk found the toolkit
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    leaked = sorted(m for m in sys.modules if m.startswith('hoglab.server') or m.split('.')[0] == 'chdb')\n"
        "    if leaked:\n"
        "        raise SystemExit(f'{name} imports {leaked[:3]} at module level')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:] or done.stdout[-2000:]


def _folder(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None, module
    return module if spec.submodule_search_locations is not None else module.rpartition(".")[0]


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (the graph is a few hundred modules deep at most)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def test_strongly_connected_finds_a_planted_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert sorted(sorted(c) for c in _strongly_connected(edges)) == [["a", "b", "c"], ["d"]]


def test_no_import_cycle_crosses_folders() -> None:
    graph = grimp.build_graph("hoglab", exclude_type_checking_imports=True)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    crossing = []
    for component in _strongly_connected(edges):
        folders = {_folder(m) for m in component}
        if len(folders) > 1:
            crossing.append(sorted(component))
    assert not crossing, f"import cycles across folders (inside functions too): {crossing}"


def test_no_class_name_is_defined_twice() -> None:
    where: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert len(where) > 300  # the walk found the package's classes
    twice = {name: places for name, places in where.items() if len(places) > 1}
    assert not twice, f"class names defined more than once: {twice}"


def test_translate_imports_only_the_schema_sqlglot_and_the_standard_library() -> None:
    graph = grimp.build_graph("hoglab", include_external_packages=True, exclude_type_checking_imports=True)
    modules = graph.find_descendants("hoglab.translate") | {"hoglab.translate"}
    assert len(modules) > 10  # the walk found the package
    outside = sorted(
        f"{module} -> {imported}"
        for module in modules
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] not in sys.stdlib_module_names
        and not any(imported == allowed or imported.startswith(f"{allowed}.") for allowed in TRANSLATE_MAY_IMPORT)
    )
    assert not outside, f"hoglab.translate imports more than the schema, sqlglot and the standard library: {outside}"


def _drawn_tree() -> tuple[set[str], dict[str, set[str]]]:
    """The folders the tree drawing has (paths relative to ``src/hoglab``) and the ``.py`` names drawn in each."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("## The tree", 1)[1].split("```", 2)[1]
    folders: set[str] = {""}
    files: dict[str, set[str]] = {}
    parents: dict[int, str] = {}  # indent of a folder line -> its path
    current = ""  # the folder the latest entry's names belong to
    for line in block.splitlines()[1:]:
        if not line.strip() or line.strip() == "src/hoglab/":
            continue
        indent = len(line) - len(line.lstrip())
        words = line.split()
        if indent < 12:  # an entry (name column); deeper lines continue the entry above
            parent = max((i for i in parents if i < indent), default=None)
            base = parents[parent] if parent is not None else ""
            if words[0].endswith("/"):
                current = f"{base}{words[0]}"
                folders.add(current)
                parents = {i: p for i, p in parents.items() if i < indent}
                parents[indent] = current
            else:
                current = base
        names = files.setdefault(current, set())
        for run in re.findall(r"((?:\b[\w]+ )+)\.py\b", line):  # "trends funnels paths .py"
            names.update(f"{w}.py" for w in run.split())
        names.update(re.findall(r"(?<![\w/.])([\w/]+\.py)\b", line))
    return folders, files


def test_the_architecture_tree_matches_the_package() -> None:
    folders, files = _drawn_tree()
    packages = {"" if p == PACKAGE else f"{p.relative_to(PACKAGE).as_posix()}/"
                for p in PACKAGE.rglob("*") if p.is_dir() and (p / "__init__.py").exists()} | {""}  # fmt: skip
    assert folders == packages, f"drawn, not packages: {folders - packages}; packages not drawn: {packages - folders}"
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert files[""] == loose, f"top level drawn {sorted(files[''])}, on disk {sorted(loose)}"
    missing = sorted(f"{folder}{name}" for folder, names in files.items() for name in names
                     if not ((PACKAGE / folder / name).exists() or (PACKAGE / name).exists()))  # fmt: skip
    assert not missing, f"the tree names files that do not exist: {missing}"
