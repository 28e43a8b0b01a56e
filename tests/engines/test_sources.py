"""``source add/refresh/list`` and ``propensity --source`` (docs/contract.md §2)."""

import json

import numpy as np

from ulr.engines import sources
from ulr.data.scan import cell_stats
from ulr.simulate import simulate_clicks


def _lake(tmp_path, df, *, n_parts: int):
    """A Parquet folder holding the first two of ``n_parts`` row blocks as d0, d1."""
    lake = tmp_path / "lake"
    lake.mkdir()
    parts = np.array_split(np.arange(len(df)), n_parts)
    for i in range(2):
        df.iloc[parts[i]].to_parquet(lake / f"d{i}.parquet")
    return lake, parts


def test_source_refresh_scans_only_new_files(cli, tmp_path, user_error):
    db = tmp_path / "store" / "ulr.duckdb"
    df = simulate_clicks(queries=20, positions=5, sessions=900, seed=2).df
    lake, parts = _lake(tmp_path, df, n_parts=3)
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
    res = sources.ctr_by_position_result("clicks", db_path=db)  # the pages' CTR with evidence
    summ = sources.summary("clicks", db_path=db)
    assert res.table.equals(ctr) and res.verdict.level in ("reliable", "directional")
    assert res.evidence == {"rows": summ["rows"], "clicks": summ["clicks"],
                            "queries": summ["queries"], "sessions": None}
    listed = json.loads(cli("source", "list", "--db", db, "--json").out)["sources"]
    assert [s["name"] for s in listed] == ["clicks"]
    # bad input: one sentence, nothing written
    user_error(cli("source", "add", "clicks", "--path", str(lake), "--db", db), "already exists")
    user_error(cli("source", "add", "gone", "--path", str(tmp_path / "none/*.parquet"),
                   "--db", db), "no Parquet or CSV file matches")
    df.drop(columns=["click"]).to_parquet(tmp_path / "bad.parquet")
    user_error(cli("source", "add", "bad", "--path", str(tmp_path / "bad.parquet"), "--db", db),
               "no 'click' column")
    assert not sources.stats_dir("bad", db).exists() and not sources.stats_dir("gone", db).exists()
    assert [s["name"] for s in sources.list_sources(db)] == ["clicks"]
    user_error(cli("propensity", "--method", "randomization", "--source", "clicks", "--db", db),
               "needs rows")
    user_error(cli("propensity", "--method", "em", "--source", "nope", "--db", db),
               "no source called")


def _cells(st):
    order = np.lexsort((st.position, st.pair))
    return np.column_stack([st.pair, st.position, st.impressions, st.clicks])[order]


def test_stored_total_tracks_added_changed_and_removed_files(tmp_path):
    """The running total equals the partitions summed afresh after every kind of refresh."""
    from ulr.engines import incremental as inc
    db = tmp_path / "store" / "ulr.duckdb"
    df = simulate_clicks(queries=30, positions=6, sessions=900, seed=5).df
    lake, parts = _lake(tmp_path, df, n_parts=4)
    sources.add("t", path=str(lake / "*.parquet"), db_path=db)
    folder = sources.stats_dir("t", db)

    def check(rows):
        parts, total, _ = sources._snapshot("t", db)
        assert total is not None and list(folder.glob("total-*")) == [total]
        fresh = {k: inc.merged_cell_stats(parts, positions=k) for k in (None, 3)}  # summed
        for k, want in fresh.items():
            got = inc.merged_cell_stats(parts, total=total, positions=k)
            np.testing.assert_array_equal(_cells(got), _cells(want))
            assert got.n_pairs == want.n_pairs and got.positions == want.positions
        assert sources.get("t", db_path=db)["rows"] == rows == fresh[None].rows

    check(len(parts[0]) + len(parts[1]))
    df.iloc[parts[2]].to_parquet(lake / "d2.parquet")  # a new file
    assert sources.refresh("t", db_path=db)["scanned"] == 1
    check(sum(len(p) for p in parts[:3]))
    (lake / "d0.parquet").unlink()  # a file removed
    df.iloc[parts[3]].to_parquet(lake / "d1.parquet")  # and one rewritten
    assert sources.refresh("t", db_path=db)["scanned"] == 1
    check(len(parts[2]) + len(parts[3]))
    # the total equals a re-scan of the lake as it is now
    from ulr import engines

    full = cell_stats(engines.get("duckdb").scan(path=str(lake)))
    np.testing.assert_array_equal(_cells(sources.scan("t", db_path=db).cells(None, False)),
                                  _cells(full))


def test_source_remove_forgets_it_and_its_statistics(cli, tmp_path, user_error):
    db = tmp_path / "store" / "ulr.duckdb"
    df = simulate_clicks(queries=10, positions=4, sessions=200, seed=1).df
    df.to_parquet(tmp_path / "a.parquet")
    assert cli("source", "add", "s", "--path", tmp_path / "a.parquet", "--db", db).rc == 0
    assert sources.stats_dir("s", db).exists()
    r = cli("source", "remove", "s", "--db", db, "--json")
    assert r.rc == 0 and json.loads(r.out)["removed"] is True
    assert sources.list_sources(db) == [] and not sources.stats_dir("s", db).exists()
    assert (tmp_path / "a.parquet").exists()  # the rows stay
    user_error(cli("source", "remove", "s", "--db", db), "no source called 's'")


def _registered(tmp_path):
    db = tmp_path / "store" / "ulr.duckdb"
    simulate_clicks(queries=10, positions=4, sessions=200, seed=3).df.to_parquet(
        tmp_path / "a.parquet")
    sources.add("s", path=str(tmp_path / "a.parquet"), db_path=db)
    folder = sources.stats_dir("s", db)
    return db, folder, sorted(p.name for p in folder.iterdir())


def test_a_failed_catalog_write_leaves_row_and_statistics(tmp_path, monkeypatch):
    db, folder, files = _registered(tmp_path)
    from contextlib import contextmanager

    from ulr.data import catalog
    real = catalog.catalog

    @contextmanager
    def failing(db_path=None, write=False):
        if write:
            raise RuntimeError("disk full")
        with real(db_path) as con:
            yield con
    monkeypatch.setattr(catalog, "catalog", failing)
    try:
        sources.remove("s", db_path=db)
    except RuntimeError:
        pass
    else:
        raise AssertionError("remove should have failed")
    monkeypatch.setattr(catalog, "catalog", real)
    assert sources.get("s", db_path=db) is not None
    assert sorted(p.name for p in folder.iterdir()) == files
    assert sorted(p.name for p in folder.parent.iterdir()) == [".s.lock", "s"]
    assert sources.ctr_by_position("s", db_path=db)["impressions"].sum() == 800


def test_two_stores_in_one_folder_keep_their_own_statistics(tmp_path):
    df = simulate_clicks(queries=10, positions=4, sessions=300, seed=4).df
    df.iloc[:500].to_parquet(tmp_path / "small.parquet")
    df.to_parquet(tmp_path / "all.parquet")
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    sources.add("s", path=str(tmp_path / "small.parquet"), db_path=a)
    sources.add("s", path=str(tmp_path / "all.parquet"), db_path=b)
    assert sources.stats_dir("s", a) == tmp_path / "a_files" / "sources" / "s"
    for db, rows in ((a, 500), (b, len(df))):
        assert sources.get("s", db_path=db)["rows"] == rows
        assert sources.summary("s", db_path=db)["rows"] == rows
        assert sources.ctr_by_position("s", db_path=db)["impressions"].sum() == rows
    sources.remove("s", db_path=a)
    assert sources.get("s", db_path=a) is None and not sources.stats_dir("s", a).exists()
    assert sources.summary("s", db_path=b)["rows"] == len(df)
    assert sources.scan("s", db_path=b).cells(None, True).rows == len(df)
    assert sources.refresh("s", db_path=b)["scanned"] == 0


def test_statistics_of_the_old_layout_are_read_then_moved_by_a_refresh(tmp_path):
    """Rows written by an older version (no generation; statistics in ``sources/NAME``
    beside the store file, shared by the folder's stores) keep working; a refresh copies
    the statistics of unchanged files into the store's own folder and reads only those."""
    from ulr import engines
    from ulr.data import catalog
    from ulr.engines import incremental as inc
    df = simulate_clicks(queries=10, positions=4, sessions=300, seed=8).df
    lake, parts = _lake(tmp_path, df, n_parts=3)
    db = tmp_path / "old.duckdb"
    legacy = tmp_path / "sources" / "s"
    legacy.mkdir(parents=True)
    for f in sorted(lake.iterdir()):  # what the old version stored
        key = sources._partition_key(str(f))
        st = inc.partition_stats(engines.get("duckdb").scan(path=str(f)))
        st.assign(partition=key).to_parquet(legacy / f"part-{inc.key_hash(key)}.parquet")
    with catalog.catalog(db, write=True) as con:
        con.execute("CREATE TABLE ulr_sources (name VARCHAR PRIMARY KEY, engine VARCHAR, "
                    "path VARCHAR, tbl VARCHAR, spark_master VARCHAR, partitions INTEGER, "
                    "rows BIGINT, refreshed_at TIMESTAMP)")
        con.execute("INSERT INTO ulr_sources VALUES ('s', 'duckdb', ?, NULL, NULL, 2, ?, "
                    "now())", [str(lake / "*.parquet"), len(parts[0]) + len(parts[1])])
    assert sources.summary("s", db_path=db)["rows"] == len(parts[0]) + len(parts[1])
    df.iloc[parts[2]].to_parquet(lake / "d2.parquet")
    assert sources.refresh("s", db_path=db)["scanned"] == 1  # d0 and d1 copied, not read
    kept = sorted(p.name for p in legacy.iterdir())
    import shutil
    shutil.rmtree(tmp_path / "sources")  # the store no longer needs the old folder
    assert sources.summary("s", db_path=db)["rows"] == sources.get("s", db_path=db)["rows"] \
        == len(df)
    full = cell_stats(engines.get("duckdb").scan(path=str(lake)), groups=True)
    np.testing.assert_array_equal(_cells(sources.scan("s", db_path=db).cells(None, True)),
                                  _cells(full))
    assert len(kept) == 2  # the refresh left the old folder as it was


def test_a_second_run_on_a_busy_source_is_refused_and_readers_keep_their_generation(tmp_path):
    from ulr.errors import UlrError
    df = simulate_clicks(queries=10, positions=4, sessions=300, seed=9).df
    lake, parts = _lake(tmp_path, df, n_parts=3)
    db = tmp_path / "s.duckdb"
    sources.add("s", path=str(lake), db_path=db)
    with sources._locked("s", db):  # as another process refreshing it would
        for run in (sources.refresh, sources.remove):
            try:
                run("s", db_path=db)
            except UlrError as exc:
                assert str(exc) == ("the source 's' is being added, refreshed or removed by "
                                    "another process; try again when it is done.")
            else:
                raise AssertionError("a second run should be refused")
    reading = sources.scan("s", db_path=db)  # a reader holding the generation of now
    df.iloc[parts[2]].to_parquet(lake / "d2.parquet")
    sources.refresh("s", db_path=db)  # commits, then deletes the files being read
    try:
        reading.cells(None, False)
    except UlrError as exc:
        assert str(exc) == "the source 's' was refreshed while it was read; run again."
    else:
        raise AssertionError("the reader's files are gone")
    assert sources.scan("s", db_path=db).cells(None, False).rows == len(df)


def _pair_keyed(df):
    """The log with query_id mapped to a pair key: most "queries" hold one document."""
    out = df.copy()
    out["query_id"] = out.query_id.astype(str) + ":" + out.doc_id.astype(str)
    return out


def test_a_source_and_an_engine_weigh_the_query_column_like_the_stored_log(cli, tmp_path):
    """The query check reads a source's stored statistics (exact: they keep query and
    document per cell) and an engine's first rows, and gives the stored log's verdict."""
    db = tmp_path / "store" / "ulr.duckdb"
    df = _pair_keyed(simulate_clicks(queries=20, positions=5, sessions=900, seed=2).df)
    df["query_id"] = df.query_id.where(df.index % 7 > 0, "q0:shared")  # one shared query
    lake, _ = _lake(tmp_path, df, n_parts=2)
    csv = tmp_path / "log.csv"
    df.to_csv(csv, index=False)
    assert cli("source", "add", "lk", "--path", str(lake / "*.parquet"), "--db", db).rc == 0
    assert cli("load", csv, "--db", db, "--name", "lg").rc == 0
    verdicts = {}
    for how in (["--source", "lk", "--db", db], ["--engine", "duckdb", "--input", lake],
                ["--name", "lg", "--db", db], ["--input", csv]):
        r = cli("propensity", "--method", "em", *how, "--bootstrap", "10", "--json")
        assert r.rc == 0, r.err
        verdicts[how[0]] = json.loads(r.out)["verdict"]
    v = verdicts["--name"]
    assert v["level"] == "invalid" and "single_document_queries" in \
        [r["code"] for r in v["reasons"]]
    assert all(other == v for other in verdicts.values()), verdicts
    # the counts in the message: a slow count of distinct documents per query
    docs = df.groupby("query_id").doc_id.nunique()
    message = next(r["message"] for r in v["reasons"] if r["code"] == "single_document_queries")
    assert message.startswith(f"{(docs == 1).sum():,} of {len(docs):,} queries have a single "
                              "document"), message
    assert [w.code for w in sources.mapping_warnings("lk", db_path=db)] == \
        ["single_document_queries"]


def test_a_source_of_a_well_mapped_log_has_no_mapping_warning(tmp_path):
    db = tmp_path / "store" / "ulr.duckdb"
    df = simulate_clicks(queries=20, positions=5, sessions=300, seed=3).df
    lake, _ = _lake(tmp_path, df, n_parts=2)
    sources.add("ok", path=str(lake), db_path=db)
    assert sources.mapping_warnings("ok", db_path=db) == ()
