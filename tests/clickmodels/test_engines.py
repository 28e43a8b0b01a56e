"""The session aggregate runs on Spark too, and gives DuckDB's parameters to 1e-9."""

import numpy as np
import pytest

from ulr import engines
from ulr.clickmodels import evaluate, sessions
from ulr.simulate import simulate_click_model
from tests.clickmodels.helpers import record_joins
from tests.engines.conftest import spark  # noqa: F401 - the one local[2] SparkSession


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    df = simulate_click_model("dbn", sessions=800, queries=8, positions=6, seed=4).df
    root = tmp_path_factory.mktemp("cmlake")
    (root / "pq").mkdir()
    half = len(df) // 2  # sessions whole in each file; the query must not rely on file order
    df.iloc[half:].to_parquet(root / "pq" / "day2.parquet")
    df.iloc[:half].to_parquet(root / "pq" / "day1.parquet")
    return root


def test_spark_gives_duckdb_sessions_and_parameters(spark, lake, monkeypatch):  # noqa: F811
    duck = engines.get("duckdb").scan(path=str(lake / "pq" / "*.parquet"))
    spk = engines.get("spark", master=None, session=spark).scan(path=str(lake / "pq"))
    keys = record_joins(monkeypatch)
    a = sessions.collect(duck, test_fraction=0.25, seed=7)
    b = sessions.collect(spk, test_fraction=0.25, seed=7)
    assert keys == ["hash", "text"]  # DuckDB joins on its 64-bit hash, Spark (32) on text
    np.testing.assert_array_equal(a.pair, b.pair)
    np.testing.assert_array_equal(a.click, b.click)
    np.testing.assert_array_equal(a.test, b.test)
    models = ["pbm", "cascade", "dcm", "dbn", "sdbn", "ubm"]
    ra = evaluate.compare(a, models, n_bootstrap=4, seed=1)
    rb = evaluate.compare(b, models, n_bootstrap=4, seed=1)
    assert ra.best == rb.best
    for m in models:
        x, y = ra.score(m), rb.score(m)
        assert abs(x.log_likelihood - y.log_likelihood) < 1e-9
        for k, v in x.parameters.items():
            np.testing.assert_allclose(y.parameters[k], v, rtol=0, atol=1e-9)
        for k, v in x.parameter_intervals.items():
            np.testing.assert_allclose(y.parameter_intervals[k], v, rtol=0, atol=1e-9)
