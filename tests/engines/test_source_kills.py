"""A ``source add``, ``refresh`` or ``remove`` killed (SIGKILL) at any point leaves the
catalog row and the statistics readers see equal, and both as before or as after.

Each run is the real CLI in a subprocess that SIGKILLs itself at ``<point>``: the test
wraps one step of ``ulr.engines.sources`` in that process (:data:`KILL_AT`), so no hook
lives in the product. The runs of one test go in parallel (one store each). The truth is
a re-scan of the files with DuckDB.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ulr import engines
from ulr.engines import sources
from ulr.errors import UlrError
from ulr.data.scan import cell_stats
from ulr.simulate import simulate_clicks

ROOT = Path(__file__).resolve().parents[2]
DF = simulate_clicks(queries=15, positions=5, sessions=300, seed=7).df
BLOCKS = np.array_split(np.arange(len(DF)), 6)
BEFORE = {"d0": 0, "d1": 1, "d2": 2}
AFTER = {"d0": 3, "d2": 2, "d3": 4, "d4": 5}  # d0 rewritten in place, d1 deleted, two new


def _write(folder: Path, files: dict, was: dict | None = None) -> None:
    """The lake of state ``files`` (name -> row block), from that of state ``was``."""
    folder.mkdir(parents=True, exist_ok=True)
    for f, b in files.items():
        p = folder / f"{f}.parquet"
        if (was or {}).get(f) == b:
            continue
        had = p.stat().st_mtime if p.exists() else None
        DF.iloc[BLOCKS[b]].to_parquet(p)
        if had is not None:  # a rewrite always shows (file times are coarser than a write)
            os.utime(p, (had + 1, had + 1))
    for p in folder.glob("*.parquet"):
        if p.stem not in files:
            p.unlink()


def _cells(st):
    order = np.lexsort((st.position, st.pair))
    return np.column_stack([st.pair, st.position, st.impressions, st.clicks])[order]


@pytest.fixture(scope="module")
def truth(tmp_path_factory):
    """The cell statistics (plain and per bootstrap bucket) of each state, re-scanned."""
    out = {}
    for state, files in (("before", BEFORE), ("after", AFTER)):
        folder = tmp_path_factory.mktemp(state)
        _write(folder, files)
        scan = engines.get("duckdb").scan(path=str(folder))
        out[state] = (cell_stats(scan), cell_stats(scan, groups=True), len(files))
    return out


# ``python -c KILL_AT POINT ARGS...``: ``python -m ulr source ARGS...``, SIGKILLed at POINT:
# partition / total / manifest: right after a partition's, the total's, the manifest's file is
# written; commit: right after the catalog write commits (the source's row); cleanup: right
# after the first file of the old generation is deleted.
KILL_AT = """
import contextlib, os, pathlib, signal, sys
from ulr.data import catalog
from ulr.engines import incremental, sources

point = sys.argv[1]


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def then_die(owner, attr):
    real = getattr(owner, attr)

    def step(*a, **k):
        out = real(*a, **k)
        die()
        return out
    setattr(owner, attr, step)


if point == "partition":
    then_die(incremental, "add_partition")
elif point == "total":
    then_die(incremental, "write_total")
elif point == "manifest":
    then_die(sources, "_write_manifest")
elif point == "commit":
    real_catalog = catalog.catalog

    @contextlib.contextmanager
    def committed_then_die(*a, write=False, **k):
        with real_catalog(*a, write=write, **k) as con:
            yield con
        if write:
            die()
    catalog.catalog = committed_then_die
elif point == "cleanup":
    real_cleanup, real_unlink = sources._cleanup, pathlib.Path.unlink

    def cleanup(folder, keep):
        def unlink(self, *a, **k):
            real_unlink(self, *a, **k)
            die()
        pathlib.Path.unlink = unlink
        try:
            return real_cleanup(folder, keep)
        finally:
            pathlib.Path.unlink = real_unlink
    sources._cleanup = cleanup
else:
    raise SystemExit(f"unknown kill point {point}")
from ulr.cli import main
sys.exit(main(["source", *sys.argv[2:]]))
"""


def _spawn(point: str, *args):
    return subprocess.Popen([sys.executable, "-c", KILL_AT, point, *map(str, args)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _killed(procs: dict) -> None:
    for point, p in procs.items():
        out, err = p.communicate(timeout=120)
        assert p.returncode == -9, (point, p.returncode, err)


def _state(db, truth) -> str | None:
    """Which state the catalog and every reader agree on (None: no source)."""
    row = sources.get("s", db_path=db)
    if row is None:
        with pytest.raises(UlrError, match="no source called 's'"):
            sources.summary("s", db_path=db)
        return None
    got = sources.scan("s", db_path=db)
    plain, by_bucket = got.cells(None, False), got.cells(None, True)
    assert row["rows"] == sources.summary("s", db_path=db)["rows"] == plain.rows == \
        sources.ctr_by_position("s", db_path=db)["impressions"].sum()
    for state, (want, want_buckets, parts) in truth.items():
        if np.array_equal(_cells(plain), _cells(want)):
            assert np.array_equal(_cells(by_bucket), _cells(want_buckets))
            assert plain.n_pairs == want.n_pairs and row["partitions"] == parts
            return state
    raise AssertionError(f"neither before nor after: {row}")


def _clean(db) -> None:
    """The source's folder holds exactly the files its manifest names."""
    parts, total, generation = sources._snapshot("s", db)
    assert {p.name for p in sources.stats_dir("s", db).iterdir()} == \
        {*(p.name for p in parts), total.name, f"manifest-{generation}.json"}


REFRESH_POINTS = {"partition": "before", "total": "before", "manifest": "before",
                  "commit": "after", "cleanup": "after"}


def test_a_killed_refresh_leaves_before_or_after_then_heals(tmp_path, truth):
    runs = {}
    for point in REFRESH_POINTS:
        lake, db = tmp_path / point / "lake", tmp_path / point / "s.duckdb"
        _write(lake, BEFORE)
        sources.add("s", path=str(lake / "*.parquet"), db_path=db)
        runs[point] = (db, sources.version("s", db_path=db))
        _write(lake, AFTER, was=BEFORE)
    _killed({p: _spawn(p, "refresh", "s", "--db", runs[p][0]) for p in REFRESH_POINTS})
    for point, (db, version) in runs.items():
        assert _state(db, truth) == REFRESH_POINTS[point], point
        assert (sources.version("s", db_path=db) == version) == \
            (REFRESH_POINTS[point] == "before")
        healed = sources.refresh("s", db_path=db)
        assert healed["scanned"] == (3 if REFRESH_POINTS[point] == "before" else 0)
        assert _state(db, truth) == "after"
        _clean(db)


ADD_POINTS = {"partition": None, "total": None, "manifest": None, "commit": "before"}


def test_a_killed_add_leaves_nothing_or_the_source_then_heals(tmp_path, truth):
    runs = {}
    for point in ADD_POINTS:
        _write(tmp_path / point / "lake", BEFORE)
        runs[point] = tmp_path / point / "s.duckdb"
        runs[point].parent.mkdir(exist_ok=True)
    _killed({p: _spawn(p, "add", "s", "--path", tmp_path / p / "lake", "--db", runs[p])
             for p in ADD_POINTS})
    for point, db in runs.items():
        assert _state(db, truth) == ADD_POINTS[point], point
    # an add that finds the files a killed one left, and is killed deleting them
    assert any(sources.stats_dir("s", runs["manifest"]).iterdir())
    _killed({"cleanup": _spawn("cleanup", "add", "s", "--path", tmp_path / "manifest" / "lake",
                               "--db", runs["manifest"])})
    assert _state(runs["manifest"], truth) == "before"
    for point, db in runs.items():
        if sources.get("s", db_path=db) is None:
            assert sources.add("s", path=str(tmp_path / point / "lake"), db_path=db)["scanned"] == 3
        else:
            assert sources.refresh("s", db_path=db)["scanned"] == 0
        assert _state(db, truth) == "before"
        _clean(db)


def test_a_killed_remove_is_done_and_its_folder_swept_later(tmp_path, truth):
    _write(tmp_path / "lake", BEFORE)
    db = tmp_path / "s.duckdb"
    sources.add("s", path=str(tmp_path / "lake"), db_path=db)
    _killed({"commit": _spawn("commit", "remove", "s", "--db", db)})
    assert _state(db, truth) is None and sources.stats_dir("s", db).exists()
    sources.add("t", path=str(tmp_path / "lake"), db_path=db)  # any add, refresh or remove
    assert sorted(p.name for p in sources.stats_dir("s", db).parent.iterdir()) == [".t.lock", "t"]
