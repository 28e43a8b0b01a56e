"""Every cross-reference in a ``ulr`` docstring resolves: ``:func:``, ``:class:``, ``:mod:``,
``:meth:``, ``:data:``, ``:attr:`` roles and dotted ````ulr.x.y```` names name something that
imports. A reference without a module (``:func:`evaluate```) is looked up in the docstring's
own module (and class, for a method's docstring).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_ROLE = re.compile(r":(func|class|mod|meth|data|attr|exc):`~?([^`<]+?)(?:\s*<([^>]+)>)?`")
_DOTTED = re.compile(r"``(ulr(?:\.[A-Za-z_]\w*)+)")
_SHORT = re.compile(r"``([a-z_]\w*)\.([A-Z]\w*)``")  # ``module.Name``, e.g. ``store.Log``


def docstrings(tree: ast.Module):
    """``(line, class name or None, docstring, parameter names)`` of the module, its classes
    and functions."""
    def walk(node, cls):
        doc = ast.get_docstring(node, clean=False)
        if doc:
            a = getattr(node, "args", None)
            params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} if a else set()
            yield getattr(node, "lineno", 1), cls, doc, params
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from walk(child, child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from walk(child, cls)
    yield from walk(tree, None)


def references(text: str, params=frozenset()):
    """``(role, target)`` of every reference in ``text`` (role ``"name"`` for ````ulr.x````
    and ````module.Name````; ``params``, the documented function's, are not modules)."""
    for m in _ROLE.finditer(text):
        yield m.group(1), (m.group(3) or m.group(2)).strip().rstrip("()")
    for m in _DOTTED.finditer(text):
        yield "name", m.group(1)
    for m in _SHORT.finditer(text):
        if m.group(1) not in params:
            yield "name", f"{m.group(1)}.{m.group(2)}"


def resolve(target: str, module: str, cls: str | None = None) -> bool:
    """Whether ``target`` names something: dotted from an importable module, else an
    attribute of ``module`` (or of its class ``cls``)."""
    target = re.sub(r"\s+", "", target)  # a reference wrapped over two lines
    if target.startswith("."):  # relative: in this module, or a module of its package
        name = target.lstrip(".")
        package = module if _is_package(module) else module.rpartition(".")[0]
        return any(resolve(f"{base}.{name}", module) for base in dict.fromkeys((module, package)))
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
            return True
        except AttributeError:
            break
    if len(parts) == 2 and parts[0].islower():  # ``module.Name``: a ulr module so named
        for f in ROOT.joinpath("ulr").rglob(f"{parts[0]}.py"):
            name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
            if hasattr(importlib.import_module(name), parts[1]):
                return True
    mod = importlib.import_module(module)
    scopes = [mod] + ([getattr(mod, cls)] if cls and hasattr(mod, cls) else [])
    for scope in scopes:
        obj = scope
        try:
            for attr in parts:
                obj = getattr(obj, attr)
            return True
        except AttributeError:
            continue
    # a dataclass field or an annotated class attribute has no value on the class
    if len(parts) == 2 or cls:
        owner_name, attr = (parts[0], parts[1]) if len(parts) == 2 else (cls, parts[0])
        owner = getattr(mod, owner_name, None)
        if owner is not None and attr in getattr(owner, "__annotations__", {}):
            return True
    return False


def _is_package(module: str) -> bool:
    return (ROOT / Path(*module.split(".")) / "__init__.py").exists()


def broken_references(sources: dict[str, str]) -> list[str]:
    out = []
    for module, text in sorted(sources.items()):
        for line, cls, doc, params in docstrings(ast.parse(text)):
            for role, target in references(doc, params):
                if not resolve(target, module, cls):
                    out.append(f"{module}:{line} :{role}:`{target}`")
    return out


def _ulr_sources() -> dict[str, str]:
    out = {}
    for f in sorted((ROOT / "ulr").rglob("*.py")):
        mod = ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        out[mod] = f.read_text(encoding="utf-8")
    return out


def test_every_docstring_reference_in_ulr_resolves():
    assert broken_references(_ulr_sources()) == []


def test_a_stale_reference_is_found():
    src = '''"""See :func:`ulr.propensity.estimate`, :class:`ulr.data.store.Log` and
``ulr.ope.DEFAULT_ESTIMATORS``; :func:`evaluate` and :mod:`ulr.nowhere`; ``store.Log``,
``base.CHUNK``."""


class Thing:
    """:meth:`run` and :attr:`size`; :func:`~ulr.stats.normal_quantile`."""

    size: int = 0

    def run(self, test):
        """``test.X`` is a parameter's attribute, not a module's."""
'''
    import sys
    import types
    mod = types.ModuleType("ulr_xref_fixture")
    exec(compile(src, "ulr_xref_fixture", "exec"), mod.__dict__)
    sys.modules["ulr_xref_fixture"] = mod
    try:
        bad = broken_references({"ulr_xref_fixture": src})
    finally:
        del sys.modules["ulr_xref_fixture"]
    assert bad == ["ulr_xref_fixture:1 :class:`ulr.data.store.Log`",
                   "ulr_xref_fixture:1 :func:`evaluate`",
                   "ulr_xref_fixture:1 :mod:`ulr.nowhere`",
                   "ulr_xref_fixture:1 :name:`ulr.ope.DEFAULT_ESTIMATORS`",
                   "ulr_xref_fixture:1 :name:`store.Log`"]


@pytest.mark.parametrize("text, expected", [
    (":func:`~ulr.ope.evaluate`", [("func", "ulr.ope.evaluate")]),
    (":class:`the log <ulr.data.log.Log>`", [("class", "ulr.data.log.Log")]),
    ("``ulr.propensity.estimate(log, method=...)``", [("name", "ulr.propensity.estimate")]),
])
def test_references_are_read_from_the_roles_and_dotted_names(text, expected):
    assert list(references(text)) == expected
