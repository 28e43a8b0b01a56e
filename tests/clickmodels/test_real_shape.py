"""A log shaped like real web search, from the CLI and on the User models page.

10 results per list, 300 queries with Zipf-like frequencies (a few shown hundreds of times,
most a handful), each query's list in one of 4 orders, text ids and sessions with several
clicks (a DBN user who goes on after an unsatisfying click). Both surfaces show held-out
quality by how often the pair was seen in training, from one result, and, with their shared
defaults, give the same verdict (issue 36: one default, one answer).
"""

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.clickmodels.helpers import long_tail_log
from tests.clickmodels.test_page import APP
from ulr.clickmodels import LABELS
from ulr.clickmodels.evaluate import FREQUENCY_BUCKETS

NAME = "web search shaped"


@pytest.fixture(scope="module")
def web_log(tmp_path_factory):
    df = long_tail_log("dbn", sessions=6000, queries=300, orders=4, seed=5).df
    clicks = df.groupby("session_id").click.sum()
    assert (clicks >= 2).mean() > 0.15  # multi-click sessions
    df = df.assign(query_id="q" + df.query_id.astype(str).str.zfill(4),
                   doc_id="https://example.org/r/" + df.doc_id.astype(str),
                   session_id=[f"s{x * 7919 % 100003:06x}" for x in df.session_id])
    df = df.drop(columns=["true_theta"]).sample(frac=1.0, random_state=1)  # rows unordered
    path = tmp_path_factory.mktemp("web") / "web_search.csv"
    df.to_csv(path, index=False)
    from ulr.data import ingest
    ingest.load_log(path, NAME, replace=True)
    return path


def test_cli_and_page_show_one_frequency_table_and_one_verdict(cli, web_log):
    r = cli("clickmodels", "--input", web_log, "--json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)
    assert out["settings"]["bootstrap"] == 50 and out["settings"]["prior"]["kind"] == "auto"
    labels = [b[0] for b in FREQUENCY_BUCKETS]
    for m in out["models"].values():
        ll, pp = m["log_likelihood_by_frequency"], m["perplexity_by_frequency"]
        assert list(ll) == list(pp) == labels
        assert sum(b["impressions"] for b in ll.values()) == 10 * out["test_sessions"]
        assert sum(1 for b in ll.values() if b["impressions"]) >= 3  # the tail is there
        assert all(b["value"] >= 1 for b in pp.values() if b["impressions"])
    text = cli("clickmodels", "--input", web_log)
    assert text.rc == 0 and "pair seen" in text.out and " 2-9 " in text.out

    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["dataset"] = NAME
    at.run()
    at.switch_page("pages/user_models.py").run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 1  # the frequency section is drawn when opened
    at.session_state["um_freq_open"] = True
    at.run()
    assert not at.exception, at.exception
    # the same verdict: level and takeaway
    assert f"**{out['verdict']['takeaway']}**" in [m.value for m in at.markdown]
    badges = [m.value for m in at.markdown if "badge[" in m.value]
    assert badges and badges[0].endswith(f"{out['verdict']['level'].capitalize()}]"), badges
    # the same frequency table
    freq = next(d.value for d in at.dataframe if "held-out impressions" in d.value.columns)
    for _, row in freq.iterrows():
        name = next(k for k, v in LABELS.items() if v == row["model"])
        b = row["training sessions of the pair"]
        want = out["models"][name]
        assert row["held-out impressions"] == want["perplexity_by_frequency"][b]["impressions"]
        assert np.isclose(row["perplexity"], want["perplexity_by_frequency"][b]["value"],
                          rtol=1e-9)
        assert np.isclose(row["log-likelihood / impression"],
                          want["log_likelihood_by_frequency"][b]["value"], rtol=1e-9)
    assert len(freq) == sum(1 for m in out["models"].values()
                            for b in m["perplexity_by_frequency"].values() if b["impressions"])
    assert len(at.get("plotly_chart")) == 2
