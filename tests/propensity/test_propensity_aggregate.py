"""SQL sufficient statistics: against pandas, file scan vs stored table, bootstrap buckets."""

import numpy as np
import pandas as pd
import pytest

from ulr.data import ingest
from ulr.errors import UlrError
from ulr.propensity import aggregate as A
from ulr.data.scan import CellStats, N_GROUPS, NeedsFullLoad, bucket_of, cell_stats, csv_scan, scan_of
from ulr.data.summary import true_theta
from ulr.simulate import simulate_clicks, write_log


@pytest.fixture(scope="module")
def sim():
    return simulate_clicks(queries=40, positions=6, sessions=3000, seed=11)


def cells_frame(st: CellStats) -> pd.DataFrame:
    return pd.DataFrame({"pair": st.pair, "position": st.position, "n": st.impressions,
                         "c": st.clicks}).sort_values(["pair", "position"]).reset_index(drop=True)


def pandas_cells(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["query_id", "doc_id", "position"]).agg(n=("click", "size"),
                                                           c=("click", "sum")).reset_index()
    return g


def test_cell_stats_equal_pandas_groupby(sim, open_df):
    log = open_df(sim.df)
    st = cell_stats(scan_of(log))
    got = cells_frame(st)
    ref = pandas_cells(sim.df)
    assert len(got) == len(ref) and st.rows == len(sim.df)
    # Same multiset of (n, c) per position, and pairs map one-to-one onto (query, doc).
    ref_pairs = ref.groupby(["query_id", "doc_id"]).ngroup()
    assert st.n_pairs == ref_pairs.max() + 1
    a = got.sort_values(["position", "n", "c"])[["position", "n", "c"]].to_numpy()
    b = ref.sort_values(["position", "n", "c"])[["position", "n", "c"]].to_numpy(float)
    np.testing.assert_array_equal(a, b)
    # Per pair totals agree with pandas per (query, doc) after matching by impressions order.
    per_pair = got.groupby("pair")[["n", "c"]].sum().sort_values(["n", "c"]).to_numpy()
    per_qd = ref.groupby(["query_id", "doc_id"])[["n", "c"]].sum().sort_values(
        ["n", "c"]).to_numpy(float)
    np.testing.assert_array_equal(per_pair, per_qd)


@pytest.mark.parametrize("groups", [False, True])
def test_cells_come_in_one_order_whatever_duckdbs_threads(groups, tmp_path):
    # GROUP BY returns groups in an order that depends on the threads. Sums over cells
    # then differ in their last bits from run to run, and so did em's theta (CI saw a
    # sweep's theta_error change at the 14th digit between two identical runs).
    from ulr import propensity
    from ulr.propensity import regression_em as R
    path = tmp_path / "log.parquet"
    write_log(simulate_clicks(queries=2000, sessions=30_000, seed=1).df, str(path))
    runs = []
    for threads in (1, 4, 8):
        log = ingest.open_file(path)
        log.cur.execute(f"SET threads = {threads}")
        st = cell_stats(scan_of(log), groups=groups)
        g = st.groups
        fit = propensity.estimate(log, method="em", n_bootstrap=4 if groups else 0, seed=0)
        feat = R.collect(scan_of(log), groups=groups).cells  # regression-em's cells
        runs.append([st.pair, st.position, st.impressions, st.clicks, fit.theta,
                     feat.pair, feat.position, feat.impressions]
                    + ([g.cell, g.group, g.impressions, fit.lower, fit.upper] if groups else []))
    key = (runs[0][0] * 100 + runs[0][1])
    assert np.all(np.diff(key) > 0)  # by pair, then position
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


def test_positions_cut_and_errors(sim, open_df):
    log = open_df(sim.df)
    scan = scan_of(log)
    st = cell_stats(scan, positions=3)
    assert st.positions == 3 and st.position.max() == 3
    assert st.rows == int((sim.df.position <= 3).sum())
    with pytest.raises(UlrError, match="more positions than the log has"):
        cell_stats(scan, positions=7)
    with pytest.raises(UlrError, match="at least 2"):
        cell_stats(scan, positions=1)


def test_single_position_log_is_refused(open_df):
    df = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": [1, 2, 3], "position": [1, 1, 1],
                       "click": [1, 0, 1]})
    log = open_df(df)
    with pytest.raises(UlrError, match="single position"):
        cell_stats(scan_of(log))


def test_bootstrap_buckets_reweight_like_pandas(sim, open_df):
    log = open_df(sim.df)
    st = cell_stats(scan_of(log), groups=True)
    plain = cell_stats(scan_of(log))
    # All-ones weights give the plain totals.
    ones = st.reweighted(np.ones(N_GROUPS))
    np.testing.assert_array_equal(cells_frame(ones), cells_frame(plain))
    np.testing.assert_array_equal(cells_frame(st), cells_frame(plain))
    # Random weights: each row counts with the weight of its session's bucket, computed
    # independently in Python (hashlib md5 of the id's text).
    ids = log.cur.execute(f"SELECT DISTINCT CAST(session_id AS VARCHAR) AS session_id "
                          f"FROM {log.table}").df()
    buckets = ids.assign(b=[bucket_of(u) for u in ids.session_id])
    w = np.random.default_rng(5).poisson(1.0, N_GROUPS).astype(float)
    df = sim.df.assign(session_id=sim.df.session_id.astype(str))
    df = df.merge(buckets, on="session_id")
    df["w"] = w[df["b"].to_numpy()]
    df["wc"] = df["w"] * df["click"]
    ref = df.groupby(["query_id", "doc_id", "position"])[["w", "wc"]].sum()
    rw = st.reweighted(w)
    assert np.isclose(rw.impressions.sum(), ref["w"].sum())
    assert np.isclose(rw.clicks.sum(), ref["wc"].sum())
    a = np.sort(rw.impressions[rw.impressions > 0])
    np.testing.assert_allclose(a, np.sort(ref["w"].to_numpy()[ref["w"].to_numpy() > 0]))


def test_csv_scan_equals_stored_table(sim, tmp_path):
    path = tmp_path / "log.csv"
    write_log(sim.df, str(path))
    log = ingest.open_file(path)
    from_table = cell_stats(scan_of(log), groups=True)
    scan = csv_scan(path)
    from_file = cell_stats(scan, groups=True)
    np.testing.assert_array_equal(cells_frame(from_file), cells_frame(from_table))
    np.testing.assert_array_equal(np.sort(from_file.groups.group),
                                  np.sort(from_table.groups.group))
    np.testing.assert_allclose(true_theta(scan), true_theta(log))


def test_csv_scan_of_parquet_is_none(sim, tmp_path):
    path = tmp_path / "log.parquet"
    write_log(sim.df, str(path))
    assert csv_scan(path) is None


@pytest.mark.parametrize("text", [
    "query_id,doc_id,position,click\nq,a,1,1\nq,b,2.5,0\n",  # non-integer position
    "query_id,doc_id,position,click\nq,a,1,1\nq,b,0,0\n",  # position < 1
    "query_id,doc_id,position,click\nq,a,1,1\nq,b,2,7\n",  # click not 0/1
    "query_id,doc_id,position,click\nq,a,1,1\nq,b,2,\n",  # missing click
    "query_id,doc_id,position,click\nq,a,1,1\n,b,2,0\n",  # missing query
    "query_id,doc_id,position,click\nq,a,1,1\nq,b,2\n",  # ragged row
])
def test_csv_scan_sends_bad_files_to_the_loader(text, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(NeedsFullLoad):
        cell_stats(csv_scan(path))
    with pytest.raises(UlrError, match="refused"):
        ingest.open_file(path)


@pytest.mark.parametrize("extra,bad", [
    ("feature_1", "abc"), ("relevance", "-1"), ("randomized", "maybe"),
])
def test_csv_scan_reads_only_the_columns_the_estimate_uses(extra, bad, tmp_path):
    # A value the loader refuses, in a column EM does not read, does not block the
    # estimate (and is never parsed): the statistics equal those of the file without it.
    plain = tmp_path / "plain.csv"
    plain.write_text("query_id,doc_id,position,click\nq,a,1,1\nq,b,2,0\nr,a,2,0\nr,b,1,1\n")
    lines = plain.read_text().splitlines()
    rows = [lines[0] + f",{extra}"] + [f"{ln},1" for ln in lines[1:3]] + \
        [f"{lines[3]},{bad}", f"{lines[4]},1"]
    messy = tmp_path / "messy.csv"
    messy.write_text("\n".join(rows) + "\n")
    with pytest.raises(UlrError, match="refused"):
        ingest.open_file(messy)  # the loader still checks every column
    np.testing.assert_array_equal(cells_frame(cell_stats(csv_scan(messy))),
                                  cells_frame(cell_stats(csv_scan(plain))))


def test_connected_positions():
    # Pair 0 links positions 1-2, pair 1 links 2-3; position 4 only ever shows pair 2.
    st = CellStats(pair=np.array([0, 0, 1, 1, 2]), position=np.array([1, 2, 2, 3, 4]),
                     impressions=np.ones(5), clicks=np.zeros(5), n_pairs=3, positions=4)
    np.testing.assert_array_equal(A.connected_to_top(st), [True, True, True, False])
    # cells in any order (not the scan's): the same answer
    for order in ([4, 2, 0, 3, 1], [1, 3, 0, 4, 2]):
        shuffled = CellStats(pair=st.pair[order], position=st.position[order],
                             impressions=np.ones(5), clicks=np.zeros(5), n_pairs=3, positions=4)
        np.testing.assert_array_equal(A.connected_to_top(shuffled), [True, True, True, False])
    # pair 1 at positions 3 and 2 only when read in order: unsorted, the link 2-3 is still seen
    st2 = CellStats(pair=np.array([1, 0, 0, 1]), position=np.array([3, 1, 2, 2]),
                    impressions=np.ones(4), clicks=np.zeros(4), n_pairs=2, positions=3)
    np.testing.assert_array_equal(A.connected_to_top(st2), [True, True, True])


@pytest.mark.parametrize("method", ["em", "intervention-harvesting"])
@pytest.mark.parametrize("positions", [None, 4])
def test_cell_methods_read_the_position_counts_off_their_cells(tmp_path, monkeypatch, method,
                                                               positions):
    """The verdict's clicks and impressions per position are the whole log's, and a cell
    method reads them off its one aggregate instead of scanning the file again (unless
    ``positions`` cut the cells short)."""
    from ulr.data import scan as scan_mod
    from ulr.data.summary import ctr_by_position
    from ulr.propensity import estimate
    sim = simulate_clicks(queries=60, positions=6, sessions=3000, seed=5)
    path = tmp_path / "log.csv"
    sim.df.to_csv(path, index=False)
    scan = scan_mod.csv_scan(path, None)
    want = ctr_by_position(scan)
    statements = []
    execute = scan_mod.Scan.execute
    monkeypatch.setattr(scan_mod.Scan, "execute",
                        lambda self, sql, params=None: statements.append((self.params, sql))
                        or execute(self, sql, params))
    # the dataset's facts (the PBM's fit, ulr.facts) read a sample of their own: left out
    res = estimate(scan, method=method, positions=positions, weigh_facts=False)
    np.testing.assert_array_equal(res.clicks, want["clicks"])
    np.testing.assert_array_equal(res.impressions, want["impressions"])
    assert len(statements) == (1 if positions is None else 2)
