"""One name per concept (docs/glossary.md): the CLI flags, the URL keys and the public keyword
arguments use the glossary's names, and no retired name is live anywhere.

Each check is a function of its inputs (parsers, URL registry, module sources), run on the real
tree and on a small synthetic bad case, so each one is seen to fail.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
URL_PY = ROOT / "pages" / "_ui" / "url.py"

# The glossary's one documented exception: the `propensity` command (and its package
# ulr.propensity) keeps `--method` / `method=`: there the option is qualified by its command.
CLI_EXCEPTIONS = {("propensity", "--method")}
PY_EXCEPTION_MODULES = ("ulr.propensity",)

# Public keywords not yet renamed, each with why (remove an entry when it is renamed; the
# test fails if an entry is no longer needed, so this list cannot go stale).
PENDING: set = {
    # result and environment fields whose JSON keys keep the old word (docs/glossary.md, "Not
    # yet renamed"): renaming them changes every bandit and slate output
    ("ulr.ope.slate", "SlateResult", "slots"),
    ("ulr.bandits.replay", "ReplayResult", "k"),
    ("ulr.bandits.envs", "CascadeEnv", "k"),
}


# --------------------------------------------------------------------------- the glossary

_TOKEN = re.compile(r"`([^`]+)`(?:\s*\(([^()]*)\))?")


def parse_glossary(text: str) -> dict:
    """``{"cli": set, "url": set, "python": set, "retired": [(kind, name, scope)],
    "exceptions": str}`` from the glossary's ``- CLI:``, ``- URL:``, ``- Python:`` and
    ``- Retired:`` lines (a line continues on the lines indented below it)."""
    out = {"cli": set(), "url": set(), "python": set(), "retired": [], "exceptions": ""}
    items, current = [], None
    for line in text.splitlines():
        m = re.match(r"- (\w+): (.*)", line)
        if m:
            current = [m.group(1), m.group(2)]
            items.append(current)
        elif current is not None and line.startswith("  ") and line.strip():
            current[1] += " " + line.strip()
        else:
            current = None
    for kind, body in items:
        if kind == "CLI":
            out["cli"] |= {t for t, _ in _TOKEN.findall(body) if re.fullmatch(r"--[a-z-]+", t)}
        elif kind == "URL":
            out["url"] |= {t for t, _ in _TOKEN.findall(body) if re.fullmatch(r"\w+", t)}
        elif kind == "Python":
            out["python"] |= {t for t, _ in _TOKEN.findall(body) if re.fullmatch(r"\w+", t)}
        elif kind == "Exception":
            out["exceptions"] += body
        elif kind == "Retired":
            for token, scope in _TOKEN.findall(body):
                if token.startswith("--"):
                    out["retired"].append(("cli", token, scope))
                elif token.endswith("="):
                    out["retired"].append(("python", token[:-1], scope))
                else:
                    out["retired"].append(("url", token, scope))
    return out


@pytest.fixture(scope="module")
def glossary():
    return parse_glossary(GLOSSARY.read_text(encoding="utf-8"))


def test_the_glossary_names_the_concepts_and_its_one_exception(glossary):
    text = GLOSSARY.read_text(encoding="utf-8")
    for concept in ("Position-bias method", "Logging propensity", "Exposure", "Run",
                    "List length", "Metric cutoff", "Features", "Level", "Session",
                    "Impression", "Slot / position"):
        assert f"## {concept}" in text, concept
    assert {"--propensity", "--runs", "--positions", "--n-features", "--features",
            "--exposure", "--level"} <= glossary["cli"]
    assert {"propensity", "runs", "positions", "exposure"} <= glossary["url"]
    assert {"propensity", "runs", "positions", "n_features", "k", "level"} <= glossary["python"]
    assert "`propensity` command" in glossary["exceptions"] and "`--method`" in glossary[
        "exceptions"] and "`ulr.propensity`" in glossary["exceptions"]


# --------------------------------------------------------------------------- CLI

def subparsers(parser: argparse.ArgumentParser) -> dict:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _scope_commands(scope: str) -> set[str] | None:
    names = {s.strip() for s in scope.split(",") if s.strip()}
    return names or None  # None: every command


def cli_violations(commands: dict, glossary: dict) -> list[str]:
    """Visible flags that are retired names, retired flags that are not refused, and
    glossary flags that no command has."""
    from ulr.commands.common import _Retired
    bad = []
    visible, refused = {}, {}
    for name, p in commands.items():
        for a in p._actions:
            for flag in a.option_strings:
                if isinstance(a, _Retired):
                    refused.setdefault(flag, set()).add(name)
                elif a.help != argparse.SUPPRESS:
                    visible.setdefault(flag, set()).add(name)
    for kind, flag, scope in glossary["retired"]:
        if kind != "cli":
            continue
        where = _scope_commands(scope)
        for cmd in sorted(visible.get(flag, set())):
            if (where is None or cmd in where) and (cmd, flag) not in CLI_EXCEPTIONS:
                bad.append(f"`{cmd} {flag}` is a retired name")
        for cmd in sorted(where or set()):
            if cmd in commands and cmd not in refused.get(flag, set()):
                bad.append(f"`{cmd} {flag}` is not refused (common.retire)")
    for flag in sorted(glossary["cli"] - set(visible)):
        bad.append(f"the glossary's {flag} is on no command")
    return bad


def test_every_cli_flag_uses_the_glossary_names(glossary):
    from ulr.cli import build_parser
    assert cli_violations(subparsers(build_parser()), glossary) == []


def test_the_cli_check_fails_on_a_retired_flag(glossary):
    from ulr.commands.common import retire
    p = argparse.ArgumentParser(prog="ulr recommend")
    p.add_argument("--seeds", type=int)  # visible: a retired name in use
    p.add_argument("--exposure")
    q = argparse.ArgumentParser(prog="ulr sweep")
    retire(q, "--method", "--propensity")
    bad = cli_violations({"recommend": p, "sweep": q, "propensity": q}, glossary)
    assert "`recommend --seeds` is a retired name" in bad
    assert "`recommend --propensity` is not refused (common.retire)" in bad
    assert "`sweep --docs-per-query` is not refused (common.retire)" in bad
    assert "the glossary's --runs is on no command" in bad


# --------------------------------------------------------------------------- URL keys

def _literal(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return ast.literal_eval(node.value)
    raise LookupError(name)


def url_registry(source: str) -> tuple[set, dict, dict]:
    tree = ast.parse(source)
    return (set(_literal(tree, "URL_KEYS")), _literal(tree, "RETIRED"),
            _literal(tree, "RETIRED_ON_PAGE"))


_READ = re.compile(r"url_(?:param|number|index|options)\(\s*\"(\w+)\"")
_WRITE = re.compile(r"set_url_params\(((?:[^()]|\([^()]*\))*)\)", re.S)
_PARAMS = re.compile(r"a\.params(?:\[\"(\w+)\"\]| = \{([^}]*)\})", re.S)
_QP = re.compile(r"query_params(?:\.get\(|\[|\.pop\(|=\{)\s*\"(\w+)\"")


def keys_used(sources: dict[str, str]) -> dict[str, str]:
    """Every URL key the pages read or write, and the audit's links write: ``{key: file}``."""
    used = {}
    for path, text in sources.items():
        keys = set(_READ.findall(text)) | set(_QP.findall(text))
        for args in _WRITE.findall(text):
            keys |= set(re.findall(r"(?<![\w.])(\w+)=(?!=)", args))
        for one, many in _PARAMS.findall(text):
            keys |= {one} if one else set(re.findall(r"\"(\w+)\":", many))
        for k in keys:
            used.setdefault(k, path)
    return used


def url_violations(registry: tuple[set, dict, dict], used: dict, glossary: dict) -> list[str]:
    keys, retired, on_page = registry
    refused = set(retired) | {o for olds in on_page.values() for o in olds}
    bad = [f"URL key {k!r} ({f}) is not in URL_KEYS" for k, f in sorted(used.items())
           if k not in keys]
    for kind, key, _ in glossary["retired"]:
        if kind != "url":
            continue
        if key in keys and key not in glossary["url"]:
            bad.append(f"URL key {key!r} is retired but still in URL_KEYS")
        if key not in refused:
            bad.append(f"retired URL key {key!r} is not in RETIRED")
    bad += [f"the glossary's URL key {k!r} is not in URL_KEYS" for k in
            sorted(glossary["url"] - keys)]
    bad += [f"RETIRED maps {o!r} to {n!r}, which is not a URL key" for o, n in
            sorted(retired.items()) if n not in keys]
    return bad


def _page_sources() -> dict[str, str]:
    files = [*ROOT.glob("pages/**/*.py"), ROOT / "app.py", ROOT / "ulr" / "audit" / "answers.py"]
    return {str(f.relative_to(ROOT)): f.read_text(encoding="utf-8") for f in files}


def test_every_url_key_is_registered_and_uses_the_glossary_names(glossary):
    registry = url_registry(URL_PY.read_text(encoding="utf-8"))
    used = keys_used(_page_sources())
    assert {"propensity", "positions", "runs", "dataset", "exposure"} <= set(used)
    assert url_violations(registry, used, glossary) == []


def test_the_url_check_fails_on_a_retired_or_unregistered_key(glossary):
    pages = {"pages/x.py": 'ui.url_options("methods", M, [])\n'
                           'ui.set_url_params(theta_from=t, runs=int(r))\n'}
    used = keys_used(pages)
    assert set(used) == {"methods", "theta_from", "runs"}
    bad = url_violations(({"runs", "methods", "propensity"}, {"K": "positions"}, {}), used,
                         glossary)
    assert "URL key 'theta_from' (pages/x.py) is not in URL_KEYS" in bad
    assert "URL key 'methods' is retired but still in URL_KEYS" in bad
    assert "retired URL key 'seeds' is not in RETIRED" in bad
    assert "RETIRED maps 'K' to 'positions', which is not a URL key" in bad


# --------------------------------------------------------------------------- Python

def public_parameters(sources: dict[str, str]):
    """``(module, function, parameter)`` of every public function and method (and the
    ``__init__`` of public classes) of public modules, read from the source."""
    out = []
    for module, text in sources.items():
        if any(part.startswith("_") for part in module.split(".")[1:]):
            continue

        def walk(body, prefix=""):
            for n in body:
                if isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                    walk(n.body, prefix + n.name + ".")
                    if any(isinstance(d, (ast.Name, ast.Call)) and "dataclass" in ast.dump(d)
                           for d in n.decorator_list):
                        out.extend((module, n.name, s.target.id) for s in n.body
                                   if isinstance(s, ast.AnnAssign)
                                   and isinstance(s.target, ast.Name))
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not n.name.startswith("_") or n.name == "__init__"):
                    a = n.args
                    out.extend((module, prefix + n.name, p.arg)
                               for p in a.posonlyargs + a.args + a.kwonlyargs)
        walk(ast.parse(text).body)
    return out


def _in_scope(module: str, scope: str) -> bool:
    mods = re.findall(r"`(ulr[\w.]*)`", scope)
    return not mods or any(module == m or module.startswith(m + ".") for m in mods)


def python_violations(params, glossary: dict, pending=None) -> list[str]:
    pending = PENDING if pending is None else pending
    retired = [(name, scope) for kind, name, scope in glossary["retired"] if kind == "python"]
    bad, pending_seen = [], set()
    for module, fn, arg in params:
        for name, scope in retired:
            if arg != name or not _in_scope(module, scope):
                continue
            if name == "method" and module.startswith(PY_EXCEPTION_MODULES):
                continue
            if (module, fn, arg) in pending:
                pending_seen.add((module, fn, arg))
                continue
            bad.append(f"{module}.{fn}({arg}=) is a retired name")
    bad += [f"PENDING {p} no longer occurs: remove it" for p in sorted(pending - pending_seen)
            if p[0] in {m for m, _, _ in params}]
    return bad


def _ulr_sources() -> dict[str, str]:
    out = {}
    for f in (ROOT / "ulr").rglob("*.py"):
        mod = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        out[mod.removesuffix(".__init__")] = f.read_text(encoding="utf-8")
    return out


def test_public_keywords_use_the_glossary_names(glossary):
    params = public_parameters(_ulr_sources())
    # a settings object's fields are read too (the sweep's options live in SweepSettings)
    assert ("ulr.rankers.sweep", "SweepSettings", "positions") in params
    assert ("ulr.ope.settings", "OPESettings", "n_bootstrap") in params
    assert python_violations(params, glossary) == []


def test_the_python_check_fails_on_a_retired_keyword(glossary):
    src = {"ulr.ope.fake": "def study(*, draws=1, seeds=None, k=10):\n    pass\n"
                           "class W:\n    def sample(self, rows, *, n_slots=1):\n        pass\n"
                           "def _private(draws):\n    pass\n",
           "ulr.rankers.clicks": "def theta(log, method):\n    pass\n",
           "ulr.propensity.fake": "def estimate(log, *, method='em'):\n    pass\n",
           "ulr.recommend.experiment": "def run(data, *, propensity='true'):\n    pass\n",
           "ulr.simulate": "def simulate_clicks(*, positions=10):\n    pass\n"
                           "def simulate_click_model(*, docs_per_query=10):\n    pass\n"}
    bad = python_violations(public_parameters(src), glossary,
                            pending={("ulr.simulate", "simulate_clicks", "docs_per_query")})
    assert "ulr.simulate.simulate_click_model(docs_per_query=) is a retired name" in bad
    assert "ulr.ope.fake.study(draws=) is a retired name" in bad
    assert "ulr.ope.fake.study(seeds=) is a retired name" in bad
    assert "ulr.ope.fake.W.sample(n_slots=) is a retired name" in bad
    assert "ulr.rankers.clicks.theta(method=) is a retired name" in bad
    assert "ulr.recommend.experiment.run(propensity=) is a retired name" in bad
    assert not any("_private" in b or "propensity.fake" in b or "k=" in b for b in bad)
    assert any(b.startswith("PENDING ('ulr.simulate', 'simulate_clicks'") for b in bad)


def test_a_retired_keyword_is_refused_naming_the_new_one():
    from ulr import rankers, validate

    @validate.retired(draws="runs")
    def f(*, runs=1):
        return runs

    assert f(runs=3) == 3
    with pytest.raises(TypeError, match=r"^f\(\) takes runs=, not draws= \(renamed\)\.$"):
        f(draws=3)
    with pytest.raises(TypeError, match="takes positions=, not docs_per_query="):
        rankers.severity_sweep([1.0], docs_per_query=5)
    import inspect
    assert "docs_per_query" not in inspect.signature(rankers.severity_sweep).parameters
