"""Per-partition statistics, merged, equal a full re-scan exactly (both engines)."""

import numpy as np
import pytest

from ulr import engines
from ulr.engines import incremental as inc
from ulr.data.scan import N_GROUPS, cell_stats
from ulr.propensity import em
from ulr.simulate import simulate_clicks


def frame(st):
    order = np.lexsort((st.position, st.pair))
    return np.column_stack([st.pair, st.position, st.impressions, st.clicks])[order]


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_adding_a_partition_equals_full_rescan(engine, request, tmp_path):
    opts = {"master": None, "session": request.getfixturevalue("spark")} \
        if engine == "spark" else {}
    eng = engines.get(engine, **opts)
    df = simulate_clicks(queries=25, positions=5, sessions=1200, seed=4).df
    lake = tmp_path / "lake"
    lake.mkdir()
    days = np.array_split(np.arange(len(df)), 3)
    folder = tmp_path / "stats"
    stats = []
    for i, rows in enumerate(days[:2]):
        df.iloc[rows].to_parquet(lake / f"day{i}.parquet")
        stats.append(inc.add_partition(folder, f"day{i}",
                                       eng.scan(path=str(lake / f"day{i}.parquet"))))
    before = {p: p.stat().st_mtime_ns for p in stats}
    df.iloc[days[2]].to_parquet(lake / "day2.parquet")  # a new day arrives
    stats.append(inc.add_partition(folder, "day2", eng.scan(path=str(lake / "day2.parquet"))))
    assert {p: p.stat().st_mtime_ns for p in before} == before  # old days not re-scanned
    assert len(set(stats)) == 3 and sorted(folder.iterdir()) == sorted(stats)
    full_scan = eng.scan(path=str(lake))
    for groups in (False, True):
        merged = inc.merged_cell_stats(stats, groups=groups)
        full = cell_stats(full_scan, groups=groups)
        np.testing.assert_array_equal(frame(merged), frame(full))
        assert merged.n_pairs == full.n_pairs and merged.positions == full.positions
    w = np.random.default_rng(0).poisson(1.0, N_GROUPS).astype(float)
    np.testing.assert_array_equal(frame(inc.merged_cell_stats(stats, groups=True).reweighted(w)),
                                  frame(cell_stats(full_scan, groups=True).reweighted(w)))
    assert merged.rows == len(df)
    np.testing.assert_allclose(em.pbm_em(inc.merged_cell_stats(stats)).theta,
                               em.pbm_em(cell_stats(full_scan)).theta, atol=1e-12)
