"""``source add/refresh/list`` and ``propensity --source`` (docs/contract.md §2)."""

import json

import numpy as np

from ulr.engines import sources
from ulr.simulate import simulate_clicks


def test_source_refresh_scans_only_new_files(cli, tmp_path, user_error):
    db = tmp_path / "store" / "ulr.duckdb"
    lake = tmp_path / "lake"
    lake.mkdir()
    df = simulate_clicks(queries=20, docs_per_query=5, sessions=900, seed=2).df
    parts = np.array_split(np.arange(len(df)), 3)
    for i in range(2):
        df.iloc[parts[i]].to_parquet(lake / f"d{i}.parquet")
    r = cli("source", "add", "clicks", "--path", str(lake / "*.parquet"), "--db", db, "--json")
    assert r.rc == 0, r.err
    assert json.loads(r.out)["scanned"] == 2
    df.iloc[parts[2]].to_parquet(lake / "d2.parquet")
    out = json.loads(cli("source", "refresh", "clicks", "--db", db, "--json").out)
    assert out["scanned"] == 1 and out["partitions"] == 3 and out["rows"] == len(df)
    got = json.loads(cli("propensity", "--method", "em", "--source", "clicks", "--db", db,
                         "--bootstrap", "10", "--json").out)
    full = json.loads(cli("propensity", "--method", "em", "--engine", "duckdb", "--input",
                          lake, "--bootstrap", "10", "--json").out)
    np.testing.assert_allclose(got["theta"], full["theta"], atol=1e-12)
    np.testing.assert_allclose(got["upper"], full["upper"], atol=1e-12)
    ctr = sources.ctr_by_position("clicks", db_path=db)
    assert ctr["impressions"].sum() == len(df) and ctr["clicks"].sum() == df.click.sum()
    listed = json.loads(cli("source", "list", "--db", db, "--json").out)["sources"]
    assert [s["name"] for s in listed] == ["clicks"]
    # bad input: one sentence, nothing written
    user_error(cli("source", "add", "clicks", "--path", str(lake), "--db", db), "already exists")
    user_error(cli("source", "add", "gone", "--path", str(tmp_path / "none/*.parquet"),
                   "--db", db), "no file matches")
    df.drop(columns=["click"]).to_parquet(tmp_path / "bad.parquet")
    user_error(cli("source", "add", "bad", "--path", str(tmp_path / "bad.parquet"), "--db", db),
               "no 'click' column")
    assert not sources.stats_dir("bad", db).exists() and not sources.stats_dir("gone", db).exists()
    assert [s["name"] for s in sources.list_sources(db)] == ["clicks"]
    user_error(cli("propensity", "--method", "randomization", "--source", "clicks", "--db", db),
               "needs rows")
    user_error(cli("propensity", "--method", "em", "--source", "nope", "--db", db),
               "no source called")
