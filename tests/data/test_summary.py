"""ulr.data.summary: ONE ctr_by_position and ONE true_theta for every kind of log.

A stored log, its scan, the same file scanned in place, and cell statistics must give the
same table, and that table must equal a reference computed here in pandas with the Wilson
(1927) formula written out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from ulr.data import catalog, ingest

from ulr.data.summary import ctr_by_position
from ulr.data import scan as S
from ulr.data import summary
from ulr.simulate import simulate_clicks, write_log


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("summary")
    sim = simulate_clicks(queries=40, positions=6, sessions=300, seed=3)
    path = tmp / "sim.csv"
    write_log(sim.df, str(path))
    log = ingest.load_log(path, "sim", db_path=tmp / "s.duckdb").info
    return sim, path, catalog.open_dataset(log.name, tmp / "s.duckdb")


def wilson_reference(df: pd.DataFrame, z: float) -> pd.DataFrame:
    """Impressions, clicks and the Wilson score interval per position, row by row."""
    rows = []
    for pos, g in df.groupby("position"):
        n, k = len(g), int(g["click"].astype(int).sum())
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        rows.append((int(pos), n, k, p, max(0.0, centre - half), min(1.0, centre + half)))
    return pd.DataFrame(rows, columns=["position", "impressions", "clicks", "ctr", "lower",
                                       "upper"])


@pytest.mark.parametrize("level", [0.95, 0.99])
def test_ctr_by_position_is_one_table_for_every_kind_of_log(logged, level):
    sim, path, log = logged
    ref = wilson_reference(sim.df, float(norm.ppf(0.5 + level / 2)))
    tables = {
        "stored log": summary.ctr_by_position(log, level=level),
        "its scan": summary.ctr_by_position(S.scan_of(log), level=level),
        "file in place": summary.ctr_by_position(S.csv_scan(path), level=level),
        "cell statistics": summary.ctr_by_position(S.cell_stats(S.scan_of(log)), level=level),
        "ctr_by_position": ctr_by_position(log, level=level),
    }
    for name, t in tables.items():
        assert list(t.columns) == list(ref.columns), name
        assert t["clicks"].dtype == np.int64 and t["impressions"].dtype == np.int64, name
        np.testing.assert_array_equal(t[["position", "impressions", "clicks"]].to_numpy(),
                                      ref[["position", "impressions", "clicks"]].to_numpy())
        np.testing.assert_allclose(t[["ctr", "lower", "upper"]].to_numpy(),
                                   ref[["ctr", "lower", "upper"]].to_numpy(), rtol=1e-12,
                                   atol=1e-15, err_msg=name)


def test_true_theta_of_a_stored_log_and_of_the_file_agree_with_the_simulator(logged):
    sim, path, log = logged
    expected = sim.df.groupby("position")["true_theta"].mean().to_numpy()
    np.testing.assert_allclose(expected, sim.theta, rtol=1e-9)  # one value per position
    np.testing.assert_allclose(summary.true_theta(log), expected, rtol=1e-9)
    np.testing.assert_allclose(summary.true_theta(S.csv_scan(path)), expected, rtol=1e-9)
    np.testing.assert_allclose(summary.true_theta(log, 3), expected[:3], rtol=1e-9)
    assert summary.true_theta(log, len(expected) + 1) is None


def test_true_theta_is_none_without_the_column(tmp_path):
    p = tmp_path / "plain.csv"
    p.write_text("query_id,doc_id,position,click\nq,a,1,1\nq,b,2,0\n")
    assert summary.true_theta(ingest.open_file(p)) is None
    assert summary.true_theta(S.csv_scan(p)) is None


# ------------------------------------------------------------------ CtrByPosition (#38)


def _ctr_verdict_by_hand(ctr: pd.DataFrame, randomized: bool):
    """The CTR caption's verdict written out with ulr.verdict's helpers (what the free
    function ``ctr_by_position_verdict`` computed before the verdict became a field)."""
    from ulr import verdict as V
    n = ctr["impressions"].to_numpy(dtype=float)
    k = ctr["clicks"].to_numpy(dtype=float)
    p = k / n
    se1, sek = (float(np.sqrt(p[i] * (1 - p[i]) / n[i])) for i in (0, -1))
    se = float(np.sqrt(se1 ** 2 + sek ** 2))
    d = float(p[0] - p[-1])
    lo, hi = d - V.z_value() * se, d + V.z_value() * se
    common = min(se1, sek, se)
    rates = (f"{V.fmt(p[0], common, pct=True)} at position 1, "
             f"{V.fmt(p[-1], common, pct=True)} at position {len(p)}")
    return d, lo, hi, rates


def test_ctr_by_position_result_carries_its_verdict_and_evidence(logged):
    """The verdict, evidence and caveats are computed from the result's fields, equal to
    the caption's rules written out here; the log's counts go to the evidence."""
    from dataclasses import fields

    from ulr import verdict as V
    from ulr.data.summary import CtrByPosition, ctr_by_position_result
    _, _, log = logged
    # computed from the fields, never set (ulr.result): not fields at all
    assert not {"verdict", "evidence", "caveats"} & {f.name for f in fields(CtrByPosition)}
    res = ctr_by_position_result(log, queries=40, sessions=300)
    pd.testing.assert_frame_equal(res.table, ctr_by_position(log))
    assert res.evidence == {"rows": int(res.table["impressions"].sum()),
                            "clicks": int(res.table["clicks"].sum()), "queries": 40,
                            "sessions": 300}
    s, both = summary.summary_and_ctr(log)  # the pages' pair: the evidence states the figures
    assert both.evidence == {"rows": s["rows"], "clicks": int(res.table["clicks"].sum()),
                             "queries": s["queries"], "sessions": s["sessions"]}
    assert both.randomized_share == s["randomized_share"] and both.verdict == res.verdict
    assert res.caveats == tuple(r.message for r in res.verdict.reasons)
    # a fall, not randomized; then the same counts declared randomized
    big = pd.DataFrame({"position": [1, 2, 3], "impressions": [100_000] * 3,
                        "clicks": [3000, 1500, 900]})
    d, lo, hi, rates = _ctr_verdict_by_hand(big, randomized=False)
    v = CtrByPosition(big).verdict
    assert v.level == "reliable" and not V.contains_zero(lo, hi)
    assert v.takeaway.startswith(f"Clicks fall with position ({rates}). A fall with position")
    assert v.estimate == {"delta": d, "lower": lo, "upper": hi, "top_position": 1,
                          "randomized": False, "shape": "fall"}
    r = CtrByPosition(big, randomized_share=1.0).verdict
    assert r.takeaway == (f"Clicks fall with position ({rates}). The log is randomized, so "
                          "every document is shown at every position alike: a difference "
                          "between positions is position bias alone.")
    # thin: cannot be told apart, with how many more impressions would settle it
    thin = pd.DataFrame({"position": [1, 2], "impressions": [500, 500], "clicks": [6, 3]})
    d, lo, hi, rates = _ctr_verdict_by_hand(thin, randomized=False)
    v = CtrByPosition(thin).verdict
    more = V.more_to_exclude_zero(500.0, d, lo, hi)
    assert v.level == "inconclusive" and v.takeaway.startswith(
        f"Position 1 and position 2 cannot be told apart ({rates}).")
    assert v.to_settle == (f"about {V.about(more)} more impressions per position would give "
                           "this difference a 95% interval that excludes 0")
    few = pd.DataFrame({"position": [1, 2], "impressions": [200, 200], "clicks": [20, 1]})
    v = CtrByPosition(few, rows=400, clicks=21).verdict
    assert v.level == "directional" and v.codes == ["few_clicks"]
    assert CtrByPosition(few, rows=400, clicks=21).caveats == ("21 clicks in all (thin below "
                                                               "30).",)
