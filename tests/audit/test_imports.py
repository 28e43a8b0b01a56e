"""What the audit's CLI path imports, and how its process ends (issue 54).

In a new process most of a 10,000-row audit was imports: plotly (the figures, which
the CLI without ``--report`` never draws), scikit-learn and scipy.stats (only the
fitted target policy needs them), the rankers' modules (for one constant). Each test
runs the command in a process of its own, so a module another test imported cannot
hide one the audit imports.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_HEAVY = ("plotly", "sklearn", "scipy.stats", "ulr.theme", "ulr.plots", "ulr.rankers.plots",
          "kaleido", "pptx")


def _imported_by_audit(db: Path, name: str) -> dict:
    """Run ``main(['audit', ...])`` in a new process; its exit status, its answers and
    which of the heavy modules it had imported by the end."""
    code = ("import io, json, sys, contextlib\n"
            "from ulr.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    rc = main(['audit', '--db', {str(db)!r}, '--name', {name!r}, '--json'])\n"
            f"heavy = [m for m in {_HEAVY!r} if m in sys.modules]\n"
            "print(json.dumps({'rc': rc, 'heavy': heavy, 'audit': json.loads(out.getvalue()),"
            " 'rankers': sorted(m for m in sys.modules if m.startswith('ulr.rankers'))}))\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def stored(search_log, rec_log, tmp_path_factory):
    from ulr.data import ingest
    db = tmp_path_factory.mktemp("store") / "logs.duckdb"
    for name, (path, mapping) in (("search", search_log), ("recs", rec_log)):
        ingest.load_log(path, name, db_path=str(db), mapping=mapping)
    return db


def test_the_search_logs_audit_imports_no_plotting_no_sklearn_no_scipy_stats(stored):
    """Sessions, no features: no question needs a fitted model or a chart, and the
    rankers' question is assessed from one constant."""
    got = _imported_by_audit(stored, "search")
    assert got["rc"] == 0
    answered = {q["id"] for q in got["audit"]["questions"] if q["answerable"]}
    assert {"ctr_by_position", "position_bias", "user_models", "replay"} <= answered
    assert got["heavy"] == []
    assert "ulr.rankers.plots" not in got["rankers"]


def test_the_recommendation_logs_audit_imports_no_plotting(stored):
    """Features and propensities: the fitted target policy needs scikit-learn, the
    answers still need no chart."""
    got = _imported_by_audit(stored, "recs")
    assert got["rc"] == 0
    answered = {q["id"] for q in got["audit"]["questions"] if q["answerable"]}
    assert {"position_bias", "off_policy", "policy_learning"} <= answered
    assert [m for m in got["heavy"] if m not in ("sklearn", "scipy.stats")] == []


def test_python_m_ulr_audit_ends_at_once_with_its_answers_and_a_report_still_saves(
        stored, tmp_path):
    """``python -m ulr audit`` without ``--report`` ends right after printing (no
    interpreter teardown): the JSON is whole and the status 0; with ``--report`` the
    usual exit, and the report is in the store."""
    from ulr.report import saved

    def run(*args):
        return subprocess.run([sys.executable, "-m", "ulr", "audit", "--db", str(stored),
                               "--name", "search", "--json", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
    p = run()
    assert p.returncode == 0 and p.stderr == ""
    out = json.loads(p.stdout)
    assert out["dataset"] == "search" and len(out["questions"]) == 9
    p = run("--report", "Search audit")
    assert p.returncode == 0, p.stderr
    rid = json.loads(p.stdout)["report"]
    items = saved.items(rid, actor=saved.OPERATOR, db=str(stored))
    assert len(items) == 1 + sum(q["answerable"] for q in out["questions"])


def test_end_now_only_from_python_m_ulr(monkeypatch, stored):
    """A caller of ``main`` in its own process (the tests, a notebook) goes on running:
    the quick end is asked for by ``ulr/__main__.py`` alone, and only when the command
    says it wrote nothing."""
    from ulr import cli
    from ulr.commands import audit
    ended = []
    monkeypatch.setattr(cli, "end_now", ended.append)

    class Args:
        report = None
    assert audit.read_only(Args())
    Args.report = "x"
    assert not audit.read_only(Args())
    assert "main(end_at_once=True)" in (ROOT / "ulr" / "__main__.py").read_text()
    args = ["audit", "--db", str(stored), "--name", "search", "--json"]
    assert cli.main(args, end_at_once=True) == 0  # the stub returned: main goes on
    assert ended == [0]
    assert cli.main(args) == 0
    assert ended == [0]
