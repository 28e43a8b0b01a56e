"""Layering of ulr/data and ulr/engines, read from the modules' source (AST), not by importing.

ulr/data is the bottom layer (click logs, their catalog, scans and summaries): it may not
import estimators, engines, commands or pages. ulr/engines aggregates on other engines and
may use ulr/data, never an estimator (issue #26).

Inside ulr/data the modules are layered bottom-up (issue #38, :data:`LAYERS`): a module
imports only modules of earlier layers, and never a private name (``_x``) of another one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ULR = Path(__file__).resolve().parents[2] / "ulr"


def imported_modules(source: str, module: str) -> set[str]:
    """Every module an ``import`` or ``from ... import`` in ``source`` names, at any depth
    (imports inside functions count), with ``from pkg import sub`` giving ``pkg.sub`` too
    and relative imports resolved against ``module`` (dotted name of the file)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[:-node.level]
                base = ".".join(parent + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def module_imports(folder: str) -> dict[str, set[str]]:
    files = sorted((ULR / folder).rglob("*.py"))
    assert files, folder
    return {f"ulr.{f.relative_to(ULR).with_suffix('').as_posix().replace('/', '.')}":
            imported_modules(f.read_text(), "ulr." + f.relative_to(ULR).with_suffix("")
                             .as_posix().replace("/", "."))
            for f in files}


def offending(imports: dict[str, set[str]], banned: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for mod, names in imports.items():
        hits = sorted(n for n in names if any(n == b or n.startswith(b + ".") for b in banned))
        if hits:
            bad[mod] = hits
    return bad


@pytest.mark.parametrize("text", [
    "from ulr.propensity.aggregate import Scan",
    "from ulr.propensity import aggregate as A",
    "from ulr import propensity",
    "import ulr.propensity.em",
    "def f():\n    from ulr.propensity import em\n",
    "from ..propensity import aggregate",
])
def test_the_walker_sees_every_spelling_of_an_import(text):
    names = imported_modules(text, "ulr.engines.sources")
    assert offending({"m": names}, ("ulr.propensity",)) == {"m": sorted(
        n for n in names if n.startswith("ulr.propensity"))}
    assert offending({"m": names}, ("ulr.propensity",))


def test_the_walker_passes_clean_imports():
    names = imported_modules("from ulr.data import scan as A\nimport ulr.propensitylike\n"
                             "from ulr import store", "ulr.engines.sources")
    assert offending({"m": names}, ("ulr.propensity",)) == {}


def test_engines_import_nothing_from_propensity():
    assert offending(module_imports("engines"), ("ulr.propensity",)) == {}


def test_data_is_the_bottom_layer():
    banned = ("ulr.propensity", "ulr.engines", "ulr.commands", "ulr.clickmodels",
              "ulr.rankers", "ulr.report", "ulr.cli", "pages", "streamlit")
    assert offending(module_imports("data"), banned) == {}


def test_no_data_module_passes_800_lines():
    sizes = {f.name: len(f.read_text().splitlines()) for f in (ULR / "data").glob("*.py")}
    assert sizes and max(sizes.values()) <= 800, sizes


# ------------------------------------------------------------------ inside ulr/data (#38)

# Bottom-up: each module may import the modules of earlier layers only (two modules of one
# layer know nothing of each other). Every module of ulr/data has its place here.
LAYERS = (("schema",), ("mapping",), ("files",), ("log", "uploads"), ("catalog", "scan"),
          ("ingest", "summary"), ("precheck",))
LAYER = {name: depth for depth, names in enumerate(LAYERS) for name in names}


def taken_from_data(source: str) -> list[tuple[str, str | None]]:
    """``(ulr/data module, name or None for the module itself)`` for every use ``source``
    makes of a module of ulr/data: imports at any depth (relative ones are ulr/data's own)
    and ``alias.attr`` on a name bound to such a module."""
    tree = ast.parse(source)
    taken: list[tuple[str, str | None]] = []
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ulr.data.") and a.asname:
                    bound[a.asname] = a.name.split(".")[2]
                if a.name.startswith("ulr.data."):
                    taken.append((a.name.split(".")[2], None))
        elif isinstance(node, ast.ImportFrom):
            dotted = ("ulr.data." * bool(node.level) + (node.module or "")).rstrip(".")
            if dotted == "ulr.data":  # from ulr.data import files, schema: modules
                bound.update({a.asname or a.name: a.name for a in node.names})
                taken += [(a.name, None) for a in node.names]
            elif dotted.startswith("ulr.data."):
                taken += [(dotted.split(".")[2], a.name) for a in node.names]
    taken += [(bound[n.value.id], n.attr) for n in ast.walk(tree)
              if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
              and n.value.id in bound]
    return taken


DATA_USES = {f.stem: taken_from_data(f.read_text()) for f in sorted((ULR / "data").glob("*.py"))
             if f.stem != "__init__"}


def test_the_data_walker_sees_private_names_however_they_are_taken():
    text = ("from ulr.data.catalog import _fsync, publish\n"
            "from ulr.data import files as F\nimport ulr.data.scan as S\n"
            "def f():\n    from .ingest import _stage\n    return F._x, S.cell_stats\n")
    assert sorted(taken_from_data(text), key=str) == sorted([
        ("catalog", "_fsync"), ("catalog", "publish"), ("files", None), ("scan", None),
        ("ingest", "_stage"), ("files", "_x"), ("scan", "cell_stats")], key=str)


def test_every_data_module_has_its_layer():
    assert set(DATA_USES) == set(LAYER)


def test_data_modules_import_only_earlier_layers():
    upward = {mod: sorted({m for m, _ in uses if LAYER.get(m, -1) >= LAYER[mod]})
              for mod, uses in DATA_USES.items()}
    assert {mod: ms for mod, ms in upward.items() if ms} == {}


def test_no_private_name_crosses_a_data_module():
    private = {mod: sorted(f"{m}.{name}" for m, name in uses if m != mod and name
                           and name.startswith("_") and not name.startswith("__"))
               for mod, uses in DATA_USES.items()}
    assert {mod: names for mod, names in private.items() if names} == {}
