"""Incremental aggregates: sufficient statistics stored per partition, then merged.

The cell statistics (impressions and clicks per bootstrap bucket, query,
document and position) are additive over rows, so a log split into partitions
(one file, or one day) can be aggregated one partition at a time and the
partitions summed. :func:`add_partition` aggregates ONE partition on any
engine and writes its statistics as a Parquet file in a statistics folder;
:func:`merged_cell_stats` sums every stored partition (DuckDB, locally) and
gives exactly the :class:`~ulr.propensity.aggregate.CellStats` of a full
re-scan, so ``em`` and ``intervention-harvesting`` (and their bootstrap)
run on them without touching the rows again.

The running total
-----------------
When a log has few impressions per cell, every partition holds most cells,
and summing the partitions costs as much as scanning the rows. So the sum
over partitions (without bootstrap buckets) is also stored, as
``total-<digest>.parquet``: one row per cell, with its pair number already
assigned. :func:`update_total` keeps it current by adding the statistics of
new partitions to it and subtracting those of removed ones (exact integer
sums), so adding a day reads only that day's statistics and the total. The
digest names the partition files it sums (name, size, modification time):
a total that does not match the folder is never read (the partitions are
summed instead), so an interrupted refresh cannot give a wrong answer.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ulr import store
from ulr.errors import UlrError
from ulr.propensity import aggregate as A

STATS_COLUMNS = ("grp", "query_id", "doc_id", "position", "n", "c")


def partition_stats(scan: A.Scan) -> pd.DataFrame:
    """One aggregate query: (bucket, query, doc, position) -> impressions n, clicks c."""
    sql = ("SELECT grp, query_id, doc_id, position, count(*) AS n, "
           "sum(CAST(click AS INTEGER)) AS c FROM "
           f"(SELECT {A._bucket(scan)} AS grp, query_id, doc_id, position, click "
           "FROM {src}) AS t GROUP BY grp, query_id, doc_id, position")
    res = scan.execute(sql).fetchnumpy()
    return pd.DataFrame({
        "grp": np.asarray(res["grp"], dtype=np.int64),
        "query_id": np.asarray(res["query_id"]).astype(str),
        "doc_id": np.asarray(res["doc_id"]).astype(str),
        "position": np.asarray(res["position"], dtype=np.int64),
        "n": np.asarray(res["n"], dtype=np.int64),
        "c": np.nan_to_num(np.asarray(res["c"], dtype=float)).astype(np.int64)})


def partition_file(folder, key: str) -> Path:
    """Where the statistics of partition ``key`` (e.g. a file path or a day) live."""
    return Path(folder) / f"part-{hashlib.sha256(key.encode()).hexdigest()[:16]}.parquet"


def add_partition(folder, key: str, scan: A.Scan) -> Path:
    """Aggregate ONE partition and store its statistics (replacing older ones of ``key``).

    Written to a temporary file and renamed, so a failed aggregate leaves the
    folder as it was.
    """
    df = partition_stats(scan)
    df["partition"] = key
    out = partition_file(folder, key)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def partitions(folder) -> list[Path]:
    return sorted(Path(folder).glob("part-*.parquet"))


def _digest(parts) -> str:
    """Which partition files (name, size, modification time) a total sums."""
    h = hashlib.sha256()
    for p in sorted(parts):
        st = Path(p).stat()
        h.update(f"{Path(p).name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def digest(folder) -> str:
    """Changes whenever the stored statistics change (a cache key for the dashboard)."""
    return _digest(partitions(folder))


def summary(folder, *, name: str = "source") -> dict:
    """Impressions, clicks, queries, documents and pairs over every stored partition."""
    total = total_file(folder)
    files = [str(total)] if total is not None else [str(f) for f in partitions(folder)]
    if not files:
        raise UlrError(f"the source {name!r} has no aggregated partitions yet; refresh it.")
    rows, clicks, queries, docs, pairs, positions = store.new_memory_cursor().execute(
        "SELECT sum(n), sum(c), count(DISTINCT query_id), count(DISTINCT doc_id), "
        "count(DISTINCT (query_id, doc_id)), max(position) FROM read_parquet($f)",
        {"f": files}).fetchone()
    rows, clicks = int(rows or 0), int(clicks or 0)
    return {"rows": rows, "clicks": clicks, "queries": int(queries), "documents": int(docs),
            "pairs": int(pairs), "positions": int(positions or 0),
            "ctr": clicks / rows if rows else float("nan"), "sessions": None}


def total_file(folder, parts=None) -> Path | None:
    """The stored total of ``parts`` (default: the partitions on disk), if it is current."""
    parts = partitions(folder) if parts is None else parts
    if not parts:
        return None
    p = Path(folder) / f"total-{_digest(parts)}.parquet"
    return p if p.exists() else None


def update_total(folder, parts, *, base: Path | None = None, plus=(), minus=()) -> Path:
    """Store the total of ``parts``: ``base + plus - minus``, or the sum of ``parts``.

    ``base`` is the current total of the partitions before the change, ``plus``
    the partition files added since and ``minus`` those removed (still on disk).
    Without ``base`` every partition in ``parts`` is summed. Cells whose
    impressions sum to zero are dropped, as a re-scan would never show them.
    Written to a temporary file and renamed; older totals are removed after.
    """
    parts = [str(p) for p in parts]
    out = Path(folder) / f"total-{_digest(parts)}.parquet"
    if base is None:
        terms, params = ["SELECT query_id, doc_id, position, n, c FROM read_parquet($p)"], \
            {"p": parts}
    else:
        terms, params = ["SELECT query_id, doc_id, position, n, c FROM read_parquet($b)"], \
            {"b": str(base)}
        if plus:
            terms.append("SELECT query_id, doc_id, position, n, c FROM read_parquet($p)")
            params["p"] = [str(f) for f in plus]
        if minus:
            terms.append("SELECT query_id, doc_id, position, -n, -c FROM read_parquet($m)")
            params["m"] = [str(f) for f in minus]
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    sql = (f"COPY (WITH u AS ({' UNION ALL '.join(terms)}), "
           "cells AS (SELECT query_id, doc_id, position, sum(n) AS n, sum(c) AS c FROM u "
           "GROUP BY query_id, doc_id, position HAVING sum(n) <> 0) "
           "SELECT dense_rank() OVER (ORDER BY query_id, doc_id) - 1 AS pair, query_id, doc_id, "
           "position, CAST(n AS BIGINT) AS n, CAST(c AS BIGINT) AS c FROM cells "
           f"ORDER BY pair, position) TO '{str(tmp).replace(chr(39), chr(39) * 2)}' "
           "(FORMAT parquet)")
    try:
        store.new_memory_cursor().execute(sql, params)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    for old in Path(folder).glob("total-*.parquet"):
        if old != out:
            old.unlink(missing_ok=True)
    return out


def merged_cell_stats(folder, *, positions: int | None = None, groups: bool = False,
                      name: str = "source") -> A.CellStats:
    """The sum of every stored partition, as :func:`ulr.propensity.aggregate.cell_stats`."""
    files = [str(f) for f in partitions(folder)]
    if not files:
        raise UlrError(f"the source {name!r} has no aggregated partitions yet; refresh it.")
    total = None if groups else total_file(folder)
    if total is not None:
        return _cells_of_total(total, positions=positions, name=name)
    grp_key = "grp, " if groups else ""
    where, params = "", {"ulr_files": files}
    if positions is not None:
        where = "WHERE position <= $ulr_k"
        params["ulr_k"] = int(positions)
    sql = (f"WITH cells AS (SELECT {grp_key}query_id, doc_id, position, sum(n) AS n, "
           f"sum(c) AS c FROM read_parquet($ulr_files) {where} "
           f"GROUP BY {grp_key}query_id, doc_id, position) "
           f"SELECT {grp_key}dense_rank() OVER (ORDER BY query_id, doc_id) - 1 AS pair, "
           f"position, n, c FROM cells")
    res = store.new_memory_cursor().execute(sql, params).fetchnumpy()
    holder = A.Scan(cur=None, from_sql="", params={}, columns=(), name=name, checked=True)
    return A.cells_from(res, holder, positions=positions, groups=groups)


def _cells_of_total(total: Path, *, positions: int | None, name: str) -> A.CellStats:
    """:class:`CellStats` from the stored total (pairs numbered as a re-scan numbers them)."""
    where, params = "", {"t": str(total)}
    if positions is not None:
        where = "WHERE position <= $k"
        params["k"] = int(positions)
    res = store.new_memory_cursor().execute(
        f"SELECT pair, position, n, c FROM read_parquet($t) {where}", params).fetchnumpy()
    if positions is not None and len(res["pair"]):  # pairs seen only deeper drop out
        res["pair"] = np.unique(np.asarray(res["pair"]), return_inverse=True)[1]
    holder = A.Scan(cur=None, from_sql="", params={}, columns=(), name=name, checked=True)
    return A.cells_from(res, holder, positions=positions, groups=False)
