"""``python -m ulr report`` (docs/contract.md §2): sections, notes, output files, errors."""

import base64
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from ulr import cli, propensity, rankers

from ulr.data import ingest
from ulr.commands import report as cmd
from ulr.errors import UlrError
from ulr.simulate import simulate_clicks, write_log

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample_clicks.csv"


def ulr(*args):
    p = subprocess.run([sys.executable, "-m", "ulr", *map(str, args)], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    return p.returncode, p.stdout, p.stderr


def values(arr) -> np.ndarray:
    """Plotly 7 stores numpy arrays in figure JSON as base64 typed arrays; decode them."""
    if isinstance(arr, dict) and "bdata" in arr:
        return np.frombuffer(base64.b64decode(arr["bdata"]), dtype=arr["dtype"])
    return np.asarray(arr, dtype=float)


def assert_user_error(rc, out, err, needle):
    assert rc == 2, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle in lines[0], lines[0]
    assert out == ""


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """A small PBM log with known theta, randomized rows, features and relevance; 120
    queries hold out 36, enough for the rankers' paired comparison."""
    s = simulate_clicks(model="pbm", queries=120, positions=5, sessions=4000, features=3,
                        randomized_fraction=0.2, seed=3)
    path = tmp_path_factory.mktemp("sim") / "sim.csv"
    write_log(s.df, str(path))
    return s, path


# ----------------------------------------------------------------------------- process


def test_cli_writes_html_and_zip_and_prints_one_json_object(tmp_path):
    out, zpath = tmp_path / "r.html", tmp_path / "r.zip"
    rc, stdout, err = ulr("report", "--input", SAMPLE, "--out", out, "--zip", zpath,
                          "--sections", "summary", "--title", "Weekly <b>review</b>", "--json")
    assert rc == 0, err
    assert stdout.count("\n") == 1
    obj = json.loads(stdout)
    assert obj["path"] == str(out) and obj["zip"] == str(zpath)
    assert obj["sections"] == {"summary": "ok"} and obj["items"] == 2
    doc = out.read_text(encoding="utf-8")
    assert obj["bytes"] == out.stat().st_size
    assert doc.count(get_plotlyjs()) == 1
    rest = doc.replace(get_plotlyjs(), "")
    assert "<title>Weekly &lt;b&gt;review&lt;/b&gt;</title>" in rest
    assert "Click-through rate by position</h2>" in rest and "Key figures</h2>" in rest
    assert rest.count("Plotly.newPlot(") == 1
    assert 'src="http' not in rest and 'href="http' not in rest and "cdn." not in rest
    names = zipfile.ZipFile(zpath).namelist()
    assert names == ["01-key-figures.csv", "02-click-through-rate-by-position.csv",
                     "index.csv", "README.txt"]
    # Human output names the file and each section.
    rc, stdout, err = ulr("report", "--input", SAMPLE, "--out", out, "--sections", "summary")
    assert rc == 0 and stdout.startswith(f"wrote {out}") and "summary: ok" in stdout


def test_cli_bad_arguments_exit_2_with_one_error_line(tmp_path):
    html = tmp_path / "r.html"
    assert_user_error(*ulr("report", "--input", SAMPLE), "required")
    assert_user_error(*ulr("report", "--input", SAMPLE, "--out", tmp_path / "r.txt"), ".html")
    assert_user_error(*ulr("report", "--input", tmp_path / "missing.csv", "--out", html),
                      "not found")
    assert not html.exists()


# ----------------------------------------------------------------------------- in process


def run_main(argv, capsys):
    """``python -m ulr`` in this process (same entry point, no interpreter start-up)."""
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("extra, needle", [
    (["--out", "{tmp}/no/r.html"], "does not exist"),
    (["--out", "{tmp}"], ".html"),
    (["--out", "{html}", "--sections", "summary,bogus"], "'bogus'"),
    (["--out", "{html}", "--sections", ","], "--sections is empty"),
    (["--out", "{html}", "--theta", "1,abc"], "--theta"),
    (["--out", "{html}", "--theta", "1,0"], "> 0"),
    (["--out", "{html}", "--zip", "{tmp}/t.csv"], ".zip"),
    (["--out", "{html}", "--learner", "svm"], "linear, gbdt or both"),
    (["--out", "{html}", "--bootstrap", "-1"], "--bootstrap"),
    (["--out", "{html}", "--positions", "0"], "--positions"),
    (["--out", "{html}", "--title", " "], "--title"),
    (["--out", "{html}", "--bootstrap", "many"], "invalid int value"),
    (["--out", "{html}", "--db", "{tmp}/x.duckdb", "--name", "n"], "not both"),
])
def test_bad_options_exit_2(tmp_path, capsys, extra, needle):
    html = tmp_path / "r.html"
    argv = ["report", "--input", SAMPLE] + [a.format(tmp=tmp_path, html=html) for a in extra]
    assert_user_error(*run_main(argv, capsys), needle)
    assert not html.exists()


def test_unknown_stored_dataset_exits_2(tmp_path, capsys):
    db = tmp_path / "u.duckdb"
    assert run_main(["load", SAMPLE, "--db", db, "--name", "s"], capsys)[0] == 0
    assert_user_error(*run_main(["report", "--db", db, "--name", "other", "--out",
                                 tmp_path / "r.html"], capsys), "no dataset named 'other'")


def test_summary_section_matches_the_log(sim):
    s, path = sim
    log = ingest.open_file(path)
    items, status = cmd.build_items(log, ["summary"])
    assert status == {"summary": "ok"}
    key, ctr = items
    got = dict(zip(key.frame()["figure"], key.frame()["value"]))
    df = s.df
    # Slow obvious reference straight from the simulated DataFrame.
    assert got["rows"] == len(df)
    assert got["queries"] == df["query_id"].nunique()
    assert got["documents"] == df["doc_id"].nunique()
    assert got["sessions"] == df["session_id"].nunique()
    assert got["overall click-through rate"] == pytest.approx(df["click"].mean())
    assert got["share of randomized rows"] == pytest.approx(df["randomized"].mean())
    assert got["deepest position"] == 5
    ref = df.groupby("position")["click"].agg(["size", "mean"])
    t = ctr.frame()
    assert t["impressions"].tolist() == ref["size"].tolist()
    np.testing.assert_allclose(t["ctr"], ref["mean"])
    np.testing.assert_allclose(values(ctr.fig().data[0].y), ref["mean"])
    assert ctr.dataset == log.info.name and ctr.settings["content_hash"] == \
        log.info.content_hash


def fake_estimate(calls, *, fail=None):
    """Stands in for ``ulr.propensity.estimate``: theta_k = 1/k with a +-10% interval."""
    from ulr.data.summary import ctr_by_position
    from ulr.propensity.result import PropensityResult

    def estimate(log, *, method, positions=None, n_bootstrap=0, seed=0, mapping=()):
        calls.append(dict(method=method, positions=positions, n_bootstrap=n_bootstrap, seed=seed))
        if fail:
            raise UlrError(fail)
        k = positions or 5
        theta = 1.0 / np.arange(1, k + 1)
        by_pos = ctr_by_position(log)  # as estimate() sets them: the verdict weighs the counts
        return PropensityResult.build(method=method, positions=k, theta=theta, lower=theta * 0.9,
                                upper=np.minimum(theta * 1.1, 1.0), notes=("a caveat",),
                                clicks=by_pos["clicks"].to_numpy(),
                                impressions=by_pos["impressions"].to_numpy(), mapping=mapping)

    return estimate


def test_propensity_and_rankers_sections_with_an_estimator(sim, monkeypatch, tmp_path,
                                                           capsys):
    s, path = sim
    calls = []
    monkeypatch.setattr(cmd.propensity, "estimate", fake_estimate(calls))
    out = tmp_path / "r.html"
    rc, stdout, err = run_main(["report", "--input", path, "--out", out, "--json",
                                "--bootstrap", 20, "--seed", 4, "--zip", tmp_path / "t.zip"],
                               capsys)
    assert rc == 0, err
    obj = json.loads(stdout)
    assert obj["sections"] == {"summary": "ok", "propensity": "ok", "rankers": "ok"}
    # The log has randomized rows, so randomization is the default method.
    assert calls == [dict(method="randomization", positions=None, n_bootstrap=20, seed=4)]
    doc = out.read_text(encoding="utf-8").replace(get_plotlyjs(), "")
    assert doc.count("Plotly.newPlot(") == 3
    assert "Position bias (randomization)</h2>" in doc and "Naive vs IPW ranker</h2>" in doc
    assert "a caveat" in doc and "theta estimated (randomization)" in doc

    log = ingest.open_file(path)
    items, status = cmd.build_items(log, ["propensity", "rankers"], propensity="em",
                                    positions=5, seed=4)
    prop, rk = items
    assert calls[-1]["method"] == "em" and calls[-1]["positions"] == 5
    fr = prop.frame()
    np.testing.assert_allclose(fr["theta"], 1.0 / np.arange(1, 6))
    # the chart is the Position bias page's: ulr.propensity.plots.theta_figure with the
    # intervals of results_table (bootstrap where drawn, else click counts)
    assert {"interval", "thin", "clicks", "true_theta"} <= set(fr.columns)
    assert prop.fig().layout.title.text == "Examination by position (relative to position 1)"
    names = [t.name for t in prop.fig().data]
    assert names == ["em", "true theta"]  # the simulated truth is drawn over the estimate
    np.testing.assert_allclose(values(prop.fig().data[1].y), s.theta / s.theta[0])
    assert prop.evidence["clicks"] == int(s.df["click"].sum())
    assert prop.evidence["rows"] == len(s.df)
    # The rankers section is exactly ulr.rankers on the estimated theta.
    ref = rankers.train_and_evaluate(log.df(), None, 1.0 / np.arange(1, 6), learner="linear",
                                     seed=4)
    pd.testing.assert_frame_equal(rk.frame(), ref.table(seed=4).reset_index(drop=True),
                                  check_dtype=False)
    assert set(rk.frame()["ranker"]) == {"naive", "ipw"}
    assert rk.settings["theta_from"] == "estimated (em)"
    assert rk.evidence == {"rows": ref.n_train_rows, "clicks": ref.n_train_clicks,
                           "training queries": ref.n_train_queries,
                           "test queries": ref.n_compared,  # the verdict's count
                           "sessions": ref.n_train_sessions}
    assert f"{ref.n_compared:,} test queries" in rk.verdict["takeaway"]


def test_thin_positions_are_named_in_a_caveat(monkeypatch, tmp_path):
    """Few clicks: the positions whose click-count interval is wider than +-50% of the
    estimate are listed, checked against the delta-method formula written out here."""
    s = simulate_clicks(model="pbm", queries=20, positions=5, sessions=60, features=2,
                        seed=1)
    path = tmp_path / "few.csv"
    write_log(s.df, str(path))
    monkeypatch.setattr(cmd.propensity, "estimate", fake_estimate([]))
    (item,), status = cmd.build_items(ingest.open_file(path), ["propensity"],
                                      propensity="em")
    assert status == {"propensity": "ok"}
    g = s.df.groupby("position")["click"].agg(["sum", "count"])
    c, n = g["sum"].to_numpy(float), g["count"].to_numpy(float)
    p = c / n
    want = []
    for k in range(2, 6):
        if c[k - 1] == 0:
            want.append(k)
            continue
        half = 1.96 * np.sqrt((1 - p[k - 1]) / c[k - 1] + (1 - p[0]) / c[0])
        if np.sinh(half) > 0.5:  # (ratio e^h - ratio e^-h) / 2 / ratio
            want.append(k)
    assert want, "the fixture should have thin positions"
    where = ("position " if len(want) == 1 else "positions ") + ", ".join(map(str, want))
    # the Position bias page's words (one wording for one fact), with the log's clicks
    assert item.caveats == [f"Thin evidence: {len(want)} of 4 estimates ({where}) rest on too "
                            f"few clicks ({int(c.sum()):,} in all): their 95% interval is "
                            "wider than ±50% of the estimate, so they are drawn hollow with "
                            "their full interval. Treat them as unknown, not as flat."]


def test_failing_sections_become_notes(sim, monkeypatch, tmp_path, capsys):
    s, path = sim
    log = ingest.open_file(path)
    calls = []
    monkeypatch.setattr(cmd.propensity, "estimate",
                        fake_estimate(calls, fail="this log has no randomized rows."))
    items, status = cmd.build_items(log, ["propensity", "rankers"])
    assert status == {"propensity": "skipped: this log has no randomized rows.",
                      "rankers": status["rankers"]}
    assert "needs a position-bias estimate" in status["rankers"]
    assert [i.kind for i in items] == ["note", "note"]
    assert items[0].title == "Propensity section skipped"
    assert items[0].note == "this log has no randomized rows."

    # --theta feeds the rankers without the propensity section; a wrong length is a note.
    theta = ",".join(str(t) for t in s.theta)
    out = tmp_path / "r.html"
    rc, stdout, err = run_main(["report", "--input", path, "--out", out, "--json",
                                "--sections", "rankers", "--theta", theta], capsys)
    assert rc == 0, err
    assert json.loads(stdout)["sections"] == {"rankers": "ok"}
    rc, stdout, err = run_main(["report", "--input", path, "--out", out, "--json",
                                "--sections", "rankers", "--theta", "1,0.5"], capsys)
    assert rc == 0, err
    assert "position 5" in json.loads(stdout)["sections"]["rankers"]


def test_rankers_section_on_too_few_test_queries_is_an_inconclusive_item(tmp_path):
    """As on the page and in the rankers command: fewer held-out queries than a paired test
    needs give an inconclusive answer, saved as an item with what would settle it."""
    s = simulate_clicks(model="pbm", queries=40, positions=5, sessions=2000, features=3,
                        seed=3)
    path = tmp_path / "small.csv"
    write_log(s.df, str(path))
    items, status = cmd.build_items(ingest.open_file(path), ["rankers"], theta=s.theta)
    assert status["rankers"] == "ok", status
    v = items[0].verdict
    assert v["level"] == "inconclusive" and v["takeaway"].startswith("Too few test queries")
    assert f"at least {rankers.MIN_TEST_QUERIES}" in v["takeaway"]
    assert "more distinct queries" in v["to_settle"]


def test_sections_parse_in_canonical_order():
    assert cmd.parse_sections("rankers, SUMMARY,rankers") == ["summary", "rankers"]
    with pytest.raises(UlrError, match="unknown report section 'x'"):
        cmd.parse_sections("x")


def test_propensity_section_uses_the_real_estimator(sim):
    s, path = sim
    log = ingest.open_file(path)
    items, status = cmd.build_items(log, ["propensity"], propensity="em", seed=2)
    assert status == {"propensity": "ok"}, status
    direct = propensity.estimate(log, method="em", seed=2)
    np.testing.assert_allclose(items[0].frame()["theta"], direct.theta)
    assert [t.name for t in items[0].fig().data] == ["em", "true theta"]
    _, status = cmd.build_items(log, ["propensity"], propensity="no-such-method")
    assert status["propensity"].startswith("skipped: unknown propensity method")


def test_rankers_section_with_both_learners_is_the_pages_significance_item(sim, tmp_path,
                                                                          capsys):
    """--learner linear,gbdt: one "Rankers compared" item, as Compare rankers adds it:
    the significance table of the four rankers, their chart and the several-learner
    verdict (Holm-corrected randomization tests)."""
    s, path = sim
    theta = ",".join(f"{t:.6f}" for t in s.theta)
    out = tmp_path / "both.html"
    rc, stdout, err = run_main(["report", "--input", path, "--out", out, "--json", "--sections",
                                "rankers", "--theta", theta, "--learner", "linear,gbdt",
                                "--seed", 2], capsys)
    assert rc == 0, err
    assert json.loads(stdout)["sections"] == {"rankers": "ok"}
    items, _ = cmd.build_items(ingest.open_file(path), ["rankers"], theta=s.theta,
                               learner="linear,gbdt", seed=2)
    (item,) = items
    assert item.title == "Rankers compared"
    table = item.frame()
    assert len(table) == 4                                  # naive and IPW of each learner
    from ulr import rankers
    sc = rankers.compare_learners(rankers.log_frame(ingest.open_file(path)), None,
                                  s.theta, learners="linear,gbdt", seed=2,
                                  min_queries=rankers.MIN_TEST_QUERIES)
    pairs = sc.pair_table
    pd.testing.assert_frame_equal(pairs, sc.pairs(seed=2))
    pd.testing.assert_frame_equal(table.reset_index(drop=True), rankers.significance_wide(
        sc.significance(pairs)).reset_index(drop=True), check_dtype=False)
    assert item.verdict == sc.verdict.to_dict()
    assert "Rankers compared</h2>" in out.read_text(encoding="utf-8")
    rc, _, err = run_main(["report", "--input", path, "--out", tmp_path / "x.html",
                           "--learner", "linear,svm"], capsys)
    assert rc == 2 and err.startswith("error: --learner must be linear, gbdt or both")


def test_the_ctr_item_is_the_data_pages_with_its_evidence_and_caveats(tmp_path):
    """The report's CTR item carries the Data page's verdict, caveats and evidence (it
    had the verdict only), and a log without a session column shows no "None"."""
    from ulr.data.summary import summary_and_ctr

    log = ingest.open_file(SAMPLE)
    key, ctr_item = cmd.build_items(log, ["summary"])[0]
    page = summary_and_ctr(log)[1]  # what pages/data.py adds to the report
    assert ctr_item.verdict == page.verdict.to_dict()
    assert ctr_item.evidence == page.evidence and ctr_item.evidence["sessions"] == 5000
    assert ctr_item.caveats == list(page.caveats)
    path = tmp_path / "no_sessions.csv"
    pd.read_csv(SAMPLE).drop(columns=["session_id"]).head(5000).to_csv(path, index=False)
    out = tmp_path / "r.html"
    rc, _, err = ulr("report", "--input", path, "--out", out, "--sections", "summary")
    assert rc == 0, err
    text = out.read_text(encoding="utf-8").replace(get_plotlyjs(), "")
    assert not re.search(r"\bNone\b|\bnan\b", text)
