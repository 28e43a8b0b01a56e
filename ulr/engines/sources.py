"""Registered sources: a Parquet/CSV lake or a Spark table, aggregated incrementally.

A source is a name for a path (file, folder or glob) or a Spark table, and
the engine that aggregates it. Its per-partition statistics
(:mod:`ulr.engines.incremental`) live in ``sources/<name>/`` beside the
store; the catalog table ``ulr_sources`` records it. For a local path every
file is a partition, keyed by path, size and modification time: a refresh
aggregates only new or changed files and drops the statistics of files that
are gone. A Spark table, or a path Spark reads from elsewhere (hdfs://,
s3a://), is one partition, re-aggregated on each refresh.

A failed add or refresh leaves the catalog and the stored statistics as they
were (new statistics are written to new files and the row is written last).
"""

from __future__ import annotations

import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

from ulr import engines, store
from ulr.engines import incremental as inc
from ulr.errors import UlrError
from ulr.propensity import aggregate as A

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DDL = ("CREATE TABLE IF NOT EXISTS ulr_sources (name VARCHAR PRIMARY KEY, engine VARCHAR, "
        "path VARCHAR, tbl VARCHAR, spark_master VARCHAR, partitions INTEGER, rows BIGINT, "
        "refreshed_at TIMESTAMP)")
_COLS = ("name", "engine", "path", "tbl", "spark_master", "partitions", "rows", "refreshed_at")


def stats_dir(name: str, db_path=None) -> Path:
    return Path(store.default_db_path() if db_path is None else db_path).parent / "sources" / name


def _local_files(path: str) -> list[str] | None:
    """The files behind a local path/glob (None for a URI only Spark reads)."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", path):
        return None
    from ulr.engines.duckdb import expand
    return expand(path)[0]


def _partition_key(f: str) -> str:
    st = Path(f).stat()
    return f"{Path(f).resolve()}|{st.st_size}|{st.st_mtime_ns}"


def _refresh_stats(name, engine_name, path, table, master, db_path) -> tuple[int, int, int]:
    """Aggregate new partitions; returns (partitions, scanned now, rows)."""
    folder = stats_dir(name, db_path)
    eng = engines.get(engine_name, **({"master": master} if engine_name == "spark" else {}))
    files = _local_files(path) if path else None
    if files is None:  # one partition: the whole table / remote path
        keys = {f"{table or path}": None}
    else:
        keys = {_partition_key(f): f for f in files}
    before = {p: p.stat().st_mtime_ns for p in inc.partitions(folder)}
    base = inc.total_file(folder)
    scanned = 0
    for key, f in keys.items():
        if f is not None and inc.partition_file(folder, key).exists():
            continue  # already aggregated and unchanged
        scan = eng.scan(path=f, table=None) if f is not None else \
            eng.scan(path=path, table=table)
        inc.add_partition(folder, key, scan)
        scanned += 1
    _update_total(folder, {inc.partition_file(folder, k) for k in keys}, before, base)
    rows = int(inc.merged_cell_stats(folder, name=name).rows)
    return len(keys), scanned, rows


def _update_total(folder: Path, wanted: set, before: dict, base) -> None:
    """Bring the stored total up to date, then drop the statistics of files that are gone.

    Incremental (old total + new partitions - removed ones) when the old total
    was current and no partition was rewritten in place; else summed afresh.
    """
    now = inc.partitions(folder)
    gone = [p for p in now if p not in wanted]
    kept = [p for p in now if p in wanted]
    added = [p for p in kept if p not in before]
    rewritten = [p for p in kept if p in before and p.stat().st_mtime_ns != before[p]]
    if base is not None and not rewritten:
        if added or gone:
            inc.update_total(folder, kept, base=base, plus=added, minus=gone)
    else:
        inc.update_total(folder, kept)
    for p in gone:
        p.unlink()  # a file that is gone, or changed (its new statistics are stored)


def add(name: str, *, path: str | None = None, table: str | None = None,
        engine: str = "duckdb", master: str | None = "local[2]", db_path=None) -> dict:
    """Register a source and aggregate it (the catalog row is written last)."""
    if not _NAME.match(name or ""):
        raise UlrError(f"source name {name!r} must be letters, digits, '_', '.' or '-'.")
    if (path is None) == (table is None):
        raise UlrError("a source is either a path or a table.")
    if table is not None and engine != "spark":
        raise UlrError("a table source needs the spark engine.")
    if get(name, db_path=db_path) is not None:
        raise UlrError(f"a source called {name!r} already exists; refresh it or pick "
                       "another name.")
    folder = stats_dir(name, db_path)
    if folder.exists():
        shutil.rmtree(folder)  # leftovers of an add that failed before its row was written
    try:
        parts, scanned, rows = _refresh_stats(name, engine, path, table, master, db_path)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    row = (name, engine, path, table, master if engine == "spark" else None, parts, rows,
           datetime.now(timezone.utc).replace(tzinfo=None))
    with store.catalog(db_path, write=True) as con:
        con.execute(_DDL)
        con.execute(f"INSERT INTO ulr_sources ({', '.join(_COLS)}) VALUES "
                    f"({', '.join('?' * len(_COLS))})", list(row))
    return _jsonable({**dict(zip(_COLS, row)), "scanned": scanned})


def refresh(name: str, *, db_path=None) -> dict:
    """Aggregate the partitions added or changed since the last refresh."""
    src = get(name, db_path=db_path)
    if src is None:
        raise UlrError(f"no source called {name!r}; see `source list`.")
    parts, scanned, rows = _refresh_stats(name, src["engine"], src["path"], src["tbl"],
                                          src["spark_master"], db_path)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.catalog(db_path, write=True) as con:
        con.execute("UPDATE ulr_sources SET partitions = ?, rows = ?, refreshed_at = ? "
                    "WHERE name = ?", [parts, rows, now, name])
    return _jsonable({**src, "partitions": parts, "rows": rows, "refreshed_at": now,
                      "scanned": scanned})


def remove(name: str, *, db_path=None) -> dict:
    """Forget a source and delete its stored statistics (the rows it points at stay).

    The catalog row and the statistics go together: the statistics folder is
    first renamed aside (one atomic rename), then the row is deleted; if that
    fails the folder is renamed back, so a failure leaves both as they were.
    Only then is the renamed folder deleted (a crash at that point leaves an
    unused hidden folder, cleared by the next ``remove`` of that name).
    """
    src = get(name, db_path=db_path)
    if src is None:
        raise UlrError(f"no source called {name!r}; see `source list`.")
    folder = stats_dir(name, db_path)
    aside = folder.with_name(f".{name}.removing-{os.getpid()}")
    if folder.exists():
        try:
            folder.rename(aside)
        except OSError as exc:
            raise UlrError(f"could not remove the statistics of {name!r} ({exc.strerror}); "
                           "nothing was changed.") from None
    try:
        with store.catalog(db_path, write=True) as con:
            con.execute("DELETE FROM ulr_sources WHERE name = ?", [name])
    except BaseException:
        if aside.exists():
            aside.rename(folder)
        raise
    for old in folder.parent.glob(f".{name}.removing-*"):  # this one, and any a crash left
        shutil.rmtree(old, ignore_errors=True)
    return {**src, "removed": True}


def list_sources(db_path=None) -> list[dict]:
    with store.catalog(db_path) as con:
        try:
            rows = con.execute(f"SELECT {', '.join(_COLS)} FROM ulr_sources "
                               "ORDER BY name").fetchall()
        except Exception:  # no source registered yet: the table does not exist
            return []
    return [_jsonable(dict(zip(_COLS, r))) for r in rows]


def _jsonable(src: dict) -> dict:
    t = src.get("refreshed_at")
    if isinstance(t, datetime):
        src["refreshed_at"] = t.strftime("%Y-%m-%d %H:%M:%S")
    return src


def get(name: str, *, db_path=None) -> dict | None:
    return next((s for s in list_sources(db_path) if s["name"] == name), None)


def scan(name: str, *, db_path=None) -> A.Scan:
    """A Scan whose cell statistics come from the stored partitions (no rows read)."""
    if get(name, db_path=db_path) is None:
        raise UlrError(f"no source called {name!r}; see `source list`.")
    folder = stats_dir(name, db_path)

    def cells(positions, groups):
        return inc.merged_cell_stats(folder, positions=positions, groups=groups, name=name)
    return A.Scan(cur=None, from_sql="", params={}, columns=(), name=name, checked=False,
                  cells=cells)


def version(name: str, *, db_path=None) -> str:
    """Changes whenever the source's stored statistics change (a cheap cache key)."""
    return inc.digest(stats_dir(name, db_path))


def summary(name: str, *, db_path=None) -> dict:
    """Rows, clicks, queries, documents, pairs and positions from the stored statistics
    (sessions are not stored: ``None``), plus ``version``, which changes on every change."""
    if get(name, db_path=db_path) is None:
        raise UlrError(f"no source called {name!r}; see `source list`.")
    folder = stats_dir(name, db_path)
    return {**inc.summary(folder, name=name), "version": inc.digest(folder)}


def ctr_by_position(name: str, *, db_path=None, z: float = 1.96):
    """The Data page's CTR table from the stored statistics (no rows read)."""
    import numpy as np
    st = scan(name, db_path=db_path).cells(None, False)
    imp = np.bincount(st.position, st.impressions, minlength=st.positions + 1)[1:]
    clk = np.bincount(st.position, st.clicks, minlength=st.positions + 1)[1:]
    ok = imp > 0
    return A.wilson_table(np.arange(1, st.positions + 1)[ok], imp[ok], clk[ok], z=z)
