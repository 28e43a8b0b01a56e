"""Layering of ulr/data and ulr/engines, read from the modules' source (AST), not by importing.

ulr/data is the bottom layer (click logs, their catalog, scans and summaries): it may not
import estimators, engines, commands or pages. ulr/engines aggregates on other engines and
may use ulr/data, never an estimator (issue #26).
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
