"""One home per estimator (issue 53): no module of ulr/ or pages/ works a fact out of an
off-policy estimator's, a position-bias method's or a click model's NAME; it reads the record
(ulr/ope/registry.py, ulr/propensity/registry.py, ulr/clickmodels/records.py).

The names are taken from the registries when the test runs, so a new record is covered
at once. The scan (AST, never importing the modules) flags a registered name

* compared: an operand of ``==``, ``!=``, ``is``, ``in`` ... (``method == "em"``,
  ``"em" in REGISTRY``), or an element of a literal tuple/list/set tested with ``in``;
* in a hand-kept list: a literal tuple, list or set holding two or more names of one
  registry (``("pbm", "ubm")``, ``for name in ("ips", "wips")``);
* as a key of a literal dict (a lookup table keyed by names, ``{"pbm": "PBM"}``).

Passing a name as an argument (``estimate(log, method="em")``, a default value) is not
flagged: that uses a method, it does not describe one.

Where a registered name is also a plain word of another concept, the hit is allowed below,
each with its reason. This file lives beside the packages, as tests/test_layers.py does,
because it spans ulr/ and pages/.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ulr import clickmodels, propensity
from ulr.ope import registry as ope_registry

ROOT = Path(__file__).resolve().parents[1]

# the registry and record modules themselves: the one home of the names
HOMES = {
    "ulr/ope/registry.py",
    "ulr/propensity/registry.py",
    "ulr/clickmodels/records.py",
}

# (file, name): why the name is another concept's word there, or the record's own code
ALLOWED = {
    ("ulr/rankers/significance.py", "randomization"):
        "Fisher's paired randomization test, a significance test (TESTS), not the "
        "position-bias method",
    ("pages/compare_rankers.py", "randomization"):
        "the labels of the significance tests (rankers.significance.TESTS)",
    ("ulr/ope/crm.py", "ips"):
        "the policy-learning objective (--learn ips|snips), whose gradient crm.py derives; "
        "not an estimator's evaluation",
    ("ulr/ope/crm.py", "snips"): "as above: the self-normalized policy-learning objective",
    ("ulr/ope/settings.py", "ips"):
        "the policy-learning objectives' list (OBJECTIVES, crm.py's --learn choices), which "
        "CRMSettings checks; it lives here so that crm.py can import the settings",
    ("ulr/ope/settings.py", "snips"): "as above",
    ("ulr/ope/loggers.py", "ips"):
        "the multi-logger estimators' own computation (pooled IPS beside WIPS and balanced "
        "IPS, whose records point here) and the per-logger table's ips column",
    ("ulr/ope/loggers.py", "wips"): "as above",
    ("ulr/ope/loggers.py", "balanced-ips"): "as above",
    ("ulr/commands/rankers.py", "snips"):
        "the IPW ranker's self-normalization switch in the rankers command's JSON (--snips)",
    ("pages/_ui/url.py", "snips"): "as above: the URL key of that switch in URL_KEYS",
}


def registered() -> dict[str, dict[str, str]]:
    """Registry -> {name: registry}, read from the records now."""
    return {"off-policy estimator": dict.fromkeys(ope_registry.REGISTRY),
            "position-bias method": dict.fromkeys(propensity.REGISTRY),
            "click model": dict.fromkeys(clickmodels.MODELS)}


def scan(source: str, groups: dict[str, dict]) -> list[tuple[int, str, str]]:
    """(line, name, how) for each registered name the source compares, lists or keys a
    dict with (see the module docstring)."""
    names = {n for g in groups.values() for n in g}

    def named(nodes):
        return [n for n in nodes
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names]

    hits = []
    tree = ast.parse(source)
    skip = set()  # containers read as compared, and __all__ (Python names, e.g. ope.ips)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            skip.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(
                        right, (ast.Tuple, ast.List, ast.Set)):
                    parts += right.elts
                    skip.add(id(right))
            hits += [(n.lineno, n.value, "compared") for n in named(parts)]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and id(node) not in skip:
            found = named(node.elts)
            for g in groups.values():
                mine = [n for n in found if n.value in g]
                if len(mine) >= 2:
                    hits += [(n.lineno, n.value, "listed") for n in mine]
        elif isinstance(node, ast.Dict):
            hits += [(n.lineno, n.value, "dict key") for n in named(
                [k for k in node.keys if k is not None])]
    return sorted(set(hits))


def files() -> list[Path]:
    return sorted([*(ROOT / "ulr").rglob("*.py"), *(ROOT / "pages").rglob("*.py")])


def test_no_module_names_an_estimator_method_or_click_model_outside_its_record():
    groups = registered()
    found, used = [], set()
    for f in files():
        rel = f.relative_to(ROOT).as_posix()
        if rel in HOMES:
            continue
        for line, name, how in scan(f.read_text(), groups):
            if (rel, name) in ALLOWED:
                used.add((rel, name))
            else:
                found.append(f"{rel}:{line}: {name!r} {how}")
    assert found == [], "read the record instead:\n" + "\n".join(found)
    assert set(ALLOWED) - used == set(), "allowed hits that no longer happen: remove them"


def test_the_scan_flags_each_form_and_passes_a_use():
    groups = registered()
    bad = '''
if method == "randomization":
    pass
ok = model in ("pbm", "ubm")
x = "em" in REGISTRY
for name in ("ips", "wips"):
    pass
COLORS = {"dla": "#fff"}
__all__ = ["ips", "snips"]
'''
    got = [(line, name, how) for line, name, how in scan(bad, groups)]
    assert got == [(2, "randomization", "compared"), (4, "pbm", "compared"),
                   (4, "ubm", "compared"), (5, "em", "compared"), (6, "ips", "listed"),
                   (6, "wips", "listed"), (8, "dla", "dict key")]
    fine = '''
r = estimate(log, method="em")
def f(model="pbm"):
    return g(model, ("ips", "a caption"))
'''
    assert scan(fine, groups) == []


def test_a_new_record_is_scanned_at_once():
    propensity.register("probe-method", propensity.REGISTRY["em"])
    try:
        assert scan('if m != "probe-method":\n    pass\n', registered()) == [
            (1, "probe-method", "compared")]
    finally:
        propensity.unregister("probe-method")
