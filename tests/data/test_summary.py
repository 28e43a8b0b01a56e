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
    sim = simulate_clicks(queries=40, docs_per_query=6, sessions=300, seed=3)
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
