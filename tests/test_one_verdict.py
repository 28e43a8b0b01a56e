"""One estimate, one verdict (issue #50): on a search-like log where the position-based
model fits worse than the best click model, the position-bias verdict is the same on every
surface, never reliable, and names the reason, whatever was pressed before."""

import json
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ulr.data import catalog, ingest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
NAME = "search-like ubm"
MISFIT = "finds the PBM fitting worse than"
DB = os.environ["ULR_DB"]  # the test session's store, which the pages read too


@pytest.fixture(scope="module")
def search_log(tmp_path_factory):
    """Sessions of 10 results over 20 queries, each shown in one of 3 orders, clicked by
    the UBM (whose examination depends on the distance to the last click, which the PBM
    cannot express): the shape of a web-search log."""
    from ulr.cli import main
    path = tmp_path_factory.mktemp("search") / "search.csv"
    assert main(["simulate", "--click-model", "ubm", "--orders", "3", "--queries", "20",
                 "--positions", "10", "--sessions", "8000", "--seed", "1",
                 "--out", str(path)]) == 0
    ingest.load_log(path, NAME, replace=True)
    return path


def _codes(v) -> list:
    return [r["code"] for r in v["reasons"]]


def test_the_position_bias_verdict_is_the_same_everywhere(search_log, cli, tmp_path):
    # the CLI
    r = cli("propensity", "--db", DB, "--name", NAME, "--method", "em", "--json")
    assert r.rc == 0, r.err
    v = json.loads(r.out)["verdict"]
    assert v["level"] != "reliable" and "pbm_misfit" in _codes(v)
    misfit = next(x["message"] for x in v["reasons"] if x["code"] == "pbm_misfit")
    assert MISFIT in misfit
    # the audit, with the same method and bootstrap (the page's defaults)
    r = cli("audit", "--db", DB, "--name", NAME, "--json")
    assert r.rc == 0, r.err
    q = next(q for q in json.loads(r.out)["questions"] if q["id"] == "position_bias")
    assert q["verdict"]["level"] == v["level"] and q["verdict"]["takeaway"] == v["takeaway"]
    assert misfit in [x["message"] for x in q["verdict"]["reasons"]]
    # the report and its deck
    out = tmp_path / "r.html"
    r = cli("report", "--db", DB, "--name", NAME, "--sections", "propensity", "--propensity", "em",
            "--bootstrap", "50", "--out", out)
    assert r.rc == 0, r.err
    html = out.read_text()
    assert MISFIT in html and v["takeaway"].split(" (")[0] in html
    # the page, on first view: no button decides whether the caveat is there
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = NAME
    at.run()
    at.switch_page("pages/position_bias.py").run()
    at.multiselect(key="pb_methods").set_value(["em"])
    at.run()
    assert not at.exception, at.exception
    assert not [b for b in at.button if "position-based model fits" in (b.label or "")]
    marks = [m.value for m in at.markdown]
    assert f"**{v['takeaway']}**" in marks  # the CLI's verdict, word for word
    assert f"- {misfit}" in marks and misfit in [w.value for w in at.warning]


def test_the_fact_is_computed_once_per_dataset_version(search_log):
    """The PBM's fit is kept beside the dataset: a second estimate reads it."""
    from ulr import facts
    log = catalog.open_dataset(NAME)
    fit = facts.pbm_fit(log)
    assert fit is not None and fit.misfit and fit.best != "pbm"
    assert fit.reason().message.startswith("This result assumes the position-based model")
