"""ulr.data.scan.list_sample: the rows read in place that the mapping checks and the PBM's
fit read, whole lists drawn by a hash of their id (never by the rows' order)."""

import numpy as np
import pandas as pd
import pytest

from ulr.data import scan as scan_mod
from ulr.data.scan import csv_scan, list_sample
from ulr.simulate import simulate_clicks, write_log


def _rows(sample):
    return (sample.execute("SELECT * FROM {src}").fetchdf()
            .sort_values(["session_id", "position"]).reset_index(drop=True))


def _classes(path, unit):
    """A slow reference: per list, its rows and hash."""
    return csv_scan(path).execute(f"SELECT {unit} AS k, count(*) AS n, any_value(hash({unit})) "
                                  f"AS h FROM {{src}} GROUP BY {unit}").fetchdf()


def test_the_sample_is_the_smallest_class_within_the_cap_whatever_the_guess(tmp_path,
                                                                            monkeypatch):
    """A guess too coarse (the file's first line far longer than the rest, so its size
    reads as fewer rows) or too fine gives the same sample as any other guess."""
    df = simulate_clicks(queries=30, positions=5, sessions=2_000, seed=3).df
    path = tmp_path / "log.csv"
    write_log(df, str(path))
    cap = 1_000
    per = _classes(path, "session_id")
    h = per["h"].to_numpy(dtype=np.uint64)
    j = next(j for j in range(64) if per["n"][h % np.uint64(2 ** j) == 0].sum() <= cap)
    want = sorted(per["k"][h % np.uint64(2 ** j) == 0])
    got = []
    for guess in (0, 1, j, j + 3, 12):
        monkeypatch.setattr(scan_mod, "_coarsest_class", lambda scan, m, g=guess: g)
        sample, sampled = list_sample(csv_scan(path), max_rows=cap)
        assert sampled
        rows = _rows(sample)
        assert sorted(rows["session_id"].unique()) == want
        assert len(rows) <= cap
        got.append(rows)
    for rows in got[1:]:
        pd.testing.assert_frame_equal(rows, got[0])


def test_a_log_within_the_cap_is_read_whole(tmp_path):
    df = simulate_clicks(queries=10, positions=4, sessions=100, seed=1).df
    path = tmp_path / "small.csv"
    write_log(df, str(path))
    scan = csv_scan(path)
    sample, sampled = list_sample(scan, max_rows=len(df))
    assert sample is scan and not sampled
    assert list_sample(scan, max_rows=len(df))[0] is scan  # kept on the scan


def test_a_log_without_sessions_is_sampled_by_whole_queries(tmp_path):
    df = simulate_clicks(queries=200, positions=5, sessions=1_000, seed=2).df
    df = df.drop(columns=["session_id"])
    path = tmp_path / "nosess.csv"
    df.to_csv(path, index=False)
    sample, sampled = list_sample(csv_scan(path), max_rows=1_500)
    assert sampled
    rows = sample.execute("SELECT query_id, count(*) AS n FROM {src} GROUP BY 1").fetchdf()
    whole = df.groupby(df["query_id"].astype(str)).size()
    assert (rows.set_index("query_id")["n"] == whole.loc[rows["query_id"]].to_numpy()).all()
    assert 0 < rows["n"].sum() <= 1_500


def test_the_guess_reads_the_file_size(tmp_path):
    """About four times the cap's rows: a 10,000-row file and a cap of 100 read a class of
    2**4 (625 rows expected)."""
    df = simulate_clicks(queries=20, positions=5, sessions=2_000, seed=4).df
    path = tmp_path / "g.csv"
    write_log(df, str(path))
    assert scan_mod._coarsest_class(csv_scan(path), 100) in (4, 5)
    assert scan_mod._coarsest_class(csv_scan(path), 10_000) == 0


@pytest.mark.parametrize("groups", [False, True])
def test_a_sample_read_along_with_the_cells_equals_its_own_pass(tmp_path, groups):
    """cell_stats reads the sample in its own pass when asked (RIDE): the same cells as
    without, and the same sample, with the same column types, as list_sample's own pass;
    identical rows are kept as many times as they occur."""
    from ulr.data.scan import RIDE, cell_stats
    df = simulate_clicks(queries=30, positions=5, sessions=2_000, seed=6).df
    df = pd.concat([df, df.iloc[:40]])  # identical rows
    path = tmp_path / "log.csv"
    write_log(df, str(path))
    plain = cell_stats(csv_scan(path), groups=groups)
    for cap in (1_000, 3_000, len(df)):
        rode = csv_scan(path)
        rode.memo[RIDE] = cap
        cells = cell_stats(rode, groups=groups)
        for f in ("pair", "position", "impressions", "clicks"):
            np.testing.assert_array_equal(getattr(cells, f), getattr(plain, f))
        assert cells.n_pairs == plain.n_pairs
        if groups:
            for f in ("cell", "group", "impressions", "clicks"):
                np.testing.assert_array_equal(getattr(cells.groups, f),
                                              getattr(plain.groups, f))
        assert ("list-sample", cap) in rode.memo
        got, sampled = list_sample(rode, max_rows=cap)
        want, want_sampled = list_sample(csv_scan(path), max_rows=cap)
        assert sampled == want_sampled == (cap < len(df))
        if sampled:
            a, b = got.execute("SELECT * FROM {src}").fetchdf(), \
                want.execute("SELECT * FROM {src}").fetchdf()
            assert a.dtypes.to_dict() == b.dtypes.to_dict()
            key = list(a.columns)
            pd.testing.assert_frame_equal(a.sort_values(key).reset_index(drop=True),
                                          b.sort_values(key).reset_index(drop=True))
