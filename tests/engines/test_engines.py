"""DuckDB and Spark run the same aggregate queries: same statistics, estimates, buckets."""

import numpy as np
import pandas as pd
import pytest

from ulr import engines, propensity
from ulr.errors import UlrError
from ulr.data.scan import Scan, bucket_of, bucket_sql
from ulr.data.summary import ctr_by_position
from ulr.simulate import simulate_clicks


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """A small Parquet lake (two files, one per 'day') and the same rows as one CSV."""
    sim = simulate_clicks(queries=30, positions=5, sessions=1500, seed=3)
    df = sim.df.copy()
    df["randomized"] = (np.arange(len(df)) % 3 == 0).astype(int)
    df["feature_a"] = (df["doc_id"].astype(int) % 4).astype(float)
    root = tmp_path_factory.mktemp("lake")
    (root / "pq").mkdir()
    half = len(df) // 2
    df.iloc[:half].to_parquet(root / "pq" / "day1.parquet")
    df.iloc[half:].to_parquet(root / "pq" / "day2.parquet")
    df.to_csv(root / "all.csv", index=False)
    return root, df


def engines_pair(spark):
    return engines.get("duckdb"), engines.get("spark", master=None, session=spark)


@pytest.mark.parametrize("method,interval", [("em", "information"), ("em", "bootstrap"),
                                             ("randomization", None),
                                             ("intervention-harvesting", None),
                                             ("regression-em", None)])
def test_spark_equals_duckdb(spark, lake, method, interval):
    root, _ = lake
    duck, spk = engines_pair(spark)
    kw = dict(method=method, n_bootstrap=20 if method != "regression-em" else 0, seed=1,
              interval=interval)
    a = propensity.estimate(duck.scan(path=str(root / "pq" / "*.parquet")), **kw)
    b = propensity.estimate(spk.scan(path=str(root / "pq")), **kw)
    np.testing.assert_allclose(b.theta, a.theta, rtol=0, atol=1e-9)
    assert np.isfinite(a.theta).all() and a.rows_used == b.rows_used > 0
    if kw["n_bootstrap"]:
        assert np.isfinite(a.lower[1:]).all() and (a.upper[1:] > a.lower[1:]).all()
        np.testing.assert_allclose(b.lower, a.lower, rtol=0, atol=1e-9)
        np.testing.assert_allclose(b.upper, a.upper, rtol=0, atol=1e-9)


def test_csv_and_ctr_summary_match(spark, lake):
    root, df = lake
    duck, spk = engines_pair(spark)
    a = ctr_by_position(duck.scan(path=str(root / "all.csv")))
    b = ctr_by_position(spk.scan(path=str(root / "all.csv")))
    pd.testing.assert_frame_equal(a, b)
    ref = df.groupby("position")["click"].agg(["size", "sum"]).reset_index()
    np.testing.assert_array_equal(a["impressions"], ref["size"])
    np.testing.assert_array_equal(a["clicks"], ref["sum"])


def test_buckets_equal_on_both_engines_and_python(spark, lake):
    root, df = lake
    sql = ("SELECT DISTINCT session_id, " + bucket_sql(Scan(None, "", {}, ("session_id",),
                                                             "", True)) + " AS b FROM {src}")
    duck, spk = engines_pair(spark)
    got = []
    for eng in (duck, spk):
        r = eng.scan(path=str(root / "pq")).execute(sql).fetchnumpy()
        got.append(dict(zip(map(str, r["session_id"]), map(int, r["b"]))))
    assert got[0] == got[1]
    assert len(got[0]) == df.session_id.nunique()
    assert all(bucket_of(u) == b for u, b in got[0].items())
    assert len(set(got[0].values())) > 100  # spread over many buckets


def test_bad_sources_get_one_sentence(spark, lake, tmp_path):
    root, df = lake
    duck, spk = engines_pair(spark)
    for eng in (duck, spk):
        with pytest.raises(UlrError, match="no Parquet or CSV file matches"):
            eng.scan(path=str(tmp_path / "nope" / "*.parquet"))
    df.drop(columns=["click"]).to_parquet(tmp_path / "noclick.parquet")
    for eng in (duck, spk):
        with pytest.raises(UlrError, match="no 'click' column"):
            eng.scan(path=str(tmp_path / "noclick.parquet"))
    spark.createDataFrame(df[["query_id", "doc_id"]].head(5)).createOrReplaceTempView("thin")
    with pytest.raises(UlrError, match="no 'position', 'click' columns"):
        spk.scan(table="thin")
    with pytest.raises(UlrError, match="has no table"):
        spk.scan(table="missing_table")


def test_a_second_master_in_one_process_is_refused(spark, lake):
    # The running session is local[2]; the builder would silently hand it back for
    # local[1], and a source would be computed and recorded under the wrong master.
    root, _ = lake
    with pytest.raises(UlrError, match="already runs here on master 'local\\[2\\]'"):
        engines.get("spark", master="local[1]").scan(path=str(root / "pq"))
    same = engines.get("spark", master="local[2]").scan(path=str(root / "pq"))
    assert same.execute("SELECT count(*) FROM {src}").fetchone()[0] == len(lake[1])


def test_unreachable_master_fails_fast():
    import time
    from ulr.engines.spark import check_master
    t0 = time.perf_counter()
    with pytest.raises(UlrError, match="not reachable"):
        check_master("spark://127.0.0.1:1")
    with pytest.raises(UlrError, match="not one Spark accepts"):
        check_master("nonsense://x")
    assert time.perf_counter() - t0 < 10


def test_csv_folder_and_bad_values_on_spark(spark, lake, tmp_path):
    root, df = lake
    duck, spk = engines_pair(spark)
    (tmp_path / "csvs").mkdir()
    df.iloc[:500].to_csv(tmp_path / "csvs" / "a.csv", index=False)
    df.iloc[500:].to_csv(tmp_path / "csvs" / "b.csv", index=False)
    a = ctr_by_position(duck.scan(path=str(tmp_path / "csvs")))
    b = ctr_by_position(spk.scan(path=str(tmp_path / "csvs")))
    pd.testing.assert_frame_equal(a, b)
    assert a["impressions"].sum() == len(df)
    df.head(20).assign(position="top").to_csv(tmp_path / "bad.csv", index=False)
    for eng in (duck, spk):
        with pytest.raises(UlrError, match="'bad.csv'"):
            ctr_by_position(eng.scan(path=str(tmp_path / "bad.csv")))


def test_integer_ids_group_before_their_cast_with_the_same_cells_and_estimate(tmp_path):
    """Parquet ids stored as integers: the cell aggregate groups on the integers and casts
    each group's ids to text once. The cells, their pair numbers (text order: "10" before
    "2") and the estimate with its bootstrap are those of the typed rows, to the bit."""
    from dataclasses import replace
    from ulr.data.scan import cell_stats
    sim = simulate_clicks(queries=40, positions=5, sessions=2000, seed=9)
    df = sim.df.copy()
    df["query_id"] = pd.factorize(df["query_id"])[0].astype(np.int64) * 7 + 2
    df["doc_id"] = pd.factorize(df["doc_id"])[0].astype(np.int32) + 1
    df = df.drop(columns=[c for c in ("session_id",) if c in df])  # unit: the query id
    df.to_parquet(tmp_path / "ints.parquet")
    scan = engines.get("duckdb").scan(path=str(tmp_path / "ints.parquet"))
    assert scan.keys_sql is not None and scan.unit == "query_id"
    typed = replace(scan, keys_sql=None, memo={})
    for groups in (False, True):
        a, b = cell_stats(scan, groups=groups), cell_stats(typed, groups=groups)
        for f in ("pair", "position", "impressions", "clicks"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        if groups:
            np.testing.assert_array_equal(a.groups.group, b.groups.group)
            np.testing.assert_array_equal(a.groups.cell, b.groups.cell)
    for interval in ("information", "bootstrap"):
        kw = dict(method="em", n_bootstrap=10, seed=2, interval=interval)
        a, b = propensity.estimate(scan, **kw), propensity.estimate(typed, **kw)
        for f in ("theta", "lower", "upper"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    # ids stored as text keep the one typed projection
    df.astype({"query_id": str, "doc_id": str}).to_parquet(tmp_path / "text.parquet")
    assert engines.get("duckdb").scan(path=str(tmp_path / "text.parquet")).keys_sql is None
