"""ulr's import graph, read from the source (AST), never by importing it (issue #38).

Three rules, counting imports made inside functions:

* no import cycle among ulr's modules (``from pkg import name`` is an edge to ``pkg``'s
  ``__init__``; ``from pkg import sub`` to the submodule when ``sub`` is one);
* no private name (``_x``, not dunders) of a module taken by a module of another package,
  by ``from m import _x`` or by ``alias._x`` on an imported module;
* no import of a removed facade: ``ulr.store``, ``ulr.schema``, and the names
  ``ulr/propensity/aggregate.py`` only re-exports from ``ulr.data``. The facade rule covers
  every Python file of the repository (ulr, pages, app.py, benchmarks, tests), since any of
  them breaks when the facade goes.

Today's tree breaks all three. ``KNOWN`` lists each violation it has today, under the part
of issue #38 that removes it, so that any NEW violation fails now; the lead deletes entries as
those parts land, and an entry that no longer happens fails too (the list only shrinks).
This file lives beside the packages rather than in tests/data because it spans all of ulr.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ULR = ROOT / "ulr"
FACADES = ("ulr.store", "ulr.schema")
REEXPORTER = "ulr.propensity.aggregate"

# ------------------------------------------------------------------ known violations
# Part names refer to the bullets of issue #38's "What to build".

# cycle (its modules) -> part that removes it: none is left, so no cycle may come back
KNOWN_CYCLES: dict[frozenset[str], str] = {}

# (importing module, module the name lives in, name): part that removes it
KNOWN_PRIVATE: dict[tuple[str, str, str], str] = {}

# file relative to the repository -> (at most this many facade names, part that removes them)
KNOWN_FACADE: dict[str, tuple[int, str]] = {}  # the facades are gone: none may come back


# ------------------------------------------------------------------ the graph


@dataclass(frozen=True)
class Use:
    """One name ``importer`` takes from ``module`` (``name`` None: the module itself)."""
    importer: str
    module: str
    name: str | None
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def uses(source: str, module: str, is_package: bool, modules: set[str]) -> list[Use]:
    """Every module and name ``source`` takes from another module, at any depth: imports
    (relative ones resolved), and ``alias.attr`` on a name bound to an imported module."""
    tree = ast.parse(source)
    out: list[Use] = []
    bound: dict[str, str] = {}  # local name -> module it is bound to
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append(Use(module, a.name, None, node.lineno))
                if a.asname:
                    bound[a.asname] = a.name
                else:
                    bound.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = here.split(".")[:len(here.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in modules:
                    out.append(Use(module, sub, None, node.lineno))
                    bound[a.asname or a.name] = sub
                else:
                    out.append(Use(module, base, a.name, node.lineno))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and bound[node.value.id] in modules):
            out.append(Use(module, bound[node.value.id], node.attr, node.lineno))
    return out


def python_files(*folders: str) -> list[Path]:
    files = []
    for f in folders:
        p = ROOT / f
        files += [p] if p.is_file() else sorted(p.rglob("*.py"))
    return files


ULR_FILES = python_files("ulr")
MODULES = {module_name(f): f for f in ULR_FILES}
USES = [u for f in ULR_FILES
        for u in uses(f.read_text(), module_name(f), f.name == "__init__.py", set(MODULES))]


def graph(all_uses=USES) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for u in all_uses:
        if u.module in MODULES and u.module != u.importer:
            edges[u.importer].add(u.module)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def is_private(name: str | None) -> bool:
    return bool(name) and name.startswith("_") and not name.startswith("__")


def private_uses(all_uses=USES) -> dict[tuple[str, str, str], int]:
    """(importer, module, private name) -> how many times, across packages only."""
    found: Counter = Counter()
    for u in all_uses:
        if (u.module in MODULES and is_private(u.name)
                and package_of(u.importer, MODULES[u.importer])
                != package_of(u.module, MODULES[u.module])):
            found[(u.importer, u.module, u.name)] += 1
    return dict(found)


def reexports() -> set[str]:
    """Names ``REEXPORTER`` only imports (and so hands on) rather than defines."""
    tree = ast.parse(MODULES[REEXPORTER].read_text())
    return {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
            for a in node.names}


def facade_uses() -> dict[str, list[str]]:
    """Repository file -> the facade names it imports (every Python file of the repo)."""
    forwarded = reexports()
    out: dict[str, list[str]] = {}
    for f in python_files("ulr", "pages", "app.py", "benchmarks", "tests"):
        if f == Path(__file__).resolve() or module_name(f) in FACADES:
            continue
        mod = module_name(f)
        hits = sorted({f"{u.module}.{u.name}" if u.name else u.module
                       for u in uses(f.read_text(), mod, f.name == "__init__.py", set(MODULES))
                       if u.module in FACADES or (u.module == REEXPORTER
                                                  and u.name in forwarded)})
        if hits and mod != REEXPORTER:
            out[f.relative_to(ROOT).as_posix()] = hits
    return out


# ------------------------------------------------------------------ the walker itself


def _walk(text: str, module="ulr.engines.duckdb", is_package=False):
    mods = set(MODULES) | {"ulr.engines", "ulr.engines.duckdb", "ulr.engines.spark"}
    return {(u.module, u.name) for u in uses(text, module, is_package, mods)}


def test_the_walker_sees_imports_in_functions_relative_imports_and_attributes():
    seen = _walk("from ..data import scan as A\n"
                 "def f():\n    from . import spark\n    from .spark import SparkEngine\n"
                 "    return A._bucket, spark._x\n")
    assert seen == {("ulr.data.scan", None), ("ulr.engines.spark", None),
                    ("ulr.engines.spark", "SparkEngine"), ("ulr.data.scan", "_bucket"),
                    ("ulr.engines.spark", "_x")}
    assert _walk("from . import duckdb", "ulr.engines", True) == {("ulr.engines.duckdb", None)}
    assert _walk("import ulr.data.catalog as s\ns._fsync\nimport ulr.schema\n") == {
        ("ulr.data.catalog", None), ("ulr.data.catalog", "_fsync"), ("ulr.schema", None)}


def test_the_cycle_finder_finds_a_cycle_through_a_package_and_ignores_a_chain():
    assert cycles({"a": {"a.b"}, "a.b": {"a.c"}, "a.c": {"a"}, "d": {"a"}}) == [
        frozenset({"a", "a.b", "a.c"})]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_private_names_count_only_across_packages():
    pairs = private_uses([Use("ulr.engines.duckdb", "ulr.data.scan", "_bucket", 1),
                          Use("ulr.data.ingest", "ulr.data.catalog", "_fsync", 1),
                          Use("ulr.engines.duckdb", "ulr.data.scan", "__all__", 1)])
    assert pairs == {("ulr.engines.duckdb", "ulr.data.scan", "_bucket"): 1}


# ------------------------------------------------------------------ the rules


def test_no_new_import_cycle():
    new = [sorted(c) for c in cycles(graph()) if c not in KNOWN_CYCLES]
    assert not new, f"import cycles: {new}"


def test_no_new_private_name_across_packages():
    new = sorted(k for k in private_uses() if k not in KNOWN_PRIVATE)
    assert not new, f"private names taken from another package: {new}"


def test_no_new_import_of_a_removed_facade():
    new = {f: names for f, names in facade_uses().items()
           if len(names) > KNOWN_FACADE.get(f, (0, ""))[0]}
    assert not new, f"imports of ulr.store / ulr.schema / aggregate's re-exports: {new}"


def test_the_allow_list_only_shrinks():
    """An entry whose violation is gone is deleted, so that it cannot come back unseen (a
    file's facade count is a ceiling: it is lowered by hand as imports move)."""
    found_cycles, found_private, found_facade = cycles(graph()), private_uses(), facade_uses()
    stale = ([sorted(c) for c in KNOWN_CYCLES if c not in found_cycles]
             + [k for k in KNOWN_PRIVATE if k not in found_private]
             + [f for f in KNOWN_FACADE if f not in found_facade])
    assert not stale, f"delete these entries of the allow-list, they are fixed: {stale}"
