"""Every verdict rule lives in ulr (issue #50): no module under pages/ builds or amends a
verdict. Read from the source (AST), so a page that does fails here whatever it shows."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: names of ulr.verdict that build or change a verdict
BUILDERS = {"Verdict", "Reason", "with_reason", "pbm_misfit", "pbm_misfit_reason",
            "difference_verdict", "weakest", "fill"}
#: keywords that would set a verdict (or what it weighs) on a copy of a result
AMENDING = {"verdict", "misfit", "mapping", "level", "reasons", "takeaway"}


def offences(source: str) -> list[str]:
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ulr.verdict"):
            out += [f"imports {a.name}" for a in node.names if a.name in BUILDERS]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in BUILDERS:
                out.append(f"calls {name}() at line {node.lineno}")
            if name == "replace":  # dataclasses.replace(result, verdict=...)
                out += [f"replace(..., {k.arg}=) at line {node.lineno}" for k in node.keywords
                        if k.arg in AMENDING]
    return out


def test_the_checker_sees_a_page_that_builds_or_amends_a_verdict():
    bad = ("from ulr.verdict import with_reason, fmt\n"
           "v = with_reason(res.verdict, misfit)\n"
           "w = V.Verdict('invalid', 'x', 'b')\n"
           "r = replace(r, misfit=misfit)\n")
    got = offences(bad)
    assert got == ["imports with_reason", "calls with_reason() at line 2",
                   "calls Verdict() at line 3", "replace(..., misfit=) at line 4"]
    assert offences("from ulr.verdict import fmt_interval\nui.show_verdict(res.verdict)\n") == []


def test_no_page_builds_or_amends_a_verdict():
    files = sorted((ROOT / "pages").rglob("*.py")) + [ROOT / "app.py"]
    found = {str(p.relative_to(ROOT)): o for p in files if (o := offences(p.read_text()))}
    assert found == {}
