"""Incremental aggregates: sufficient statistics stored per partition, then merged.

The cell statistics (impressions and clicks per bootstrap bucket, query,
document and position) are additive over rows, so a log split into partitions
(one file, or one day) can be aggregated one partition at a time and the
partitions summed. :func:`add_partition` aggregates ONE partition on any
engine and writes its statistics as a Parquet file; :func:`merged_cell_stats`
sums the partition files it is given (DuckDB, locally) and gives exactly the
:class:`~ulr.propensity.aggregate.CellStats` of a full re-scan, so ``em`` and
``intervention-harvesting`` (and their bootstrap) run on them without touching
the rows again.

Files are immutable: each is written to a temporary name, flushed to disk
(fsync) and renamed, and never rewritten; which files make up the current
statistics is the caller's record (:mod:`ulr.engines.sources` names them in a
manifest), never a listing of the folder.

The running total
-----------------
When a log has few impressions per cell, every partition holds most cells,
and summing the partitions costs as much as scanning the rows. So the sum
over partitions (without bootstrap buckets) is also stored, as a total file:
one row per cell, with its pair number already assigned. :func:`write_total`
computes it from the previous total by adding the statistics of new
partitions and subtracting those of removed ones (exact integer sums), so
adding a day reads only that day's statistics and the total.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ulr.data.files import memory_connection
from ulr.errors import UlrError
from ulr.data import scan as A

STATS_COLUMNS = ("grp", "query_id", "doc_id", "position", "n", "c")


def partition_stats(scan: A.Scan) -> pd.DataFrame:
    """One aggregate query: (bucket, query, doc, position) -> impressions n, clicks c."""
    sql = ("SELECT grp, query_id, doc_id, position, count(*) AS n, "
           "sum(CAST(click AS INTEGER)) AS c FROM "
           f"(SELECT {A.bucket_sql(scan)} AS grp, query_id, doc_id, position, click "
           "FROM {src}) AS t GROUP BY grp, query_id, doc_id, position")
    res = scan.execute(sql).fetchnumpy()
    return pd.DataFrame({
        "grp": np.asarray(res["grp"], dtype=np.int64),
        "query_id": np.asarray(res["query_id"]).astype(str),
        "doc_id": np.asarray(res["doc_id"]).astype(str),
        "position": np.asarray(res["position"], dtype=np.int64),
        "n": np.asarray(res["n"], dtype=np.int64),
        "c": np.nan_to_num(np.asarray(res["c"], dtype=float)).astype(np.int64)})


def key_hash(key: str) -> str:
    """A short fixed-width name for partition ``key`` (a file path with size and time, or a day)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def partition_file(folder, key: str, generation: str) -> Path:
    """Where the statistics of partition ``key`` aggregated by ``generation`` live."""
    return Path(folder) / f"part-{key_hash(key)}-{generation}.parquet"


def flush(path: Path, *, folder: bool = False) -> None:
    """Write a file's data, or a folder's entries (``folder=True``: a rename inside it then
    survives a crash; a file system that cannot flush a folder is not an error), to disk."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        if not folder:
            raise


def sql_literal(text) -> str:
    """A SQL string literal, for a path this package built itself (``COPY ... TO`` cannot bind)."""
    return "'" + str(text).replace("'", "''") + "'"


def publish(tmp: Path, out: Path) -> Path:
    """Flush ``tmp`` to disk and rename it to ``out`` (readers never see half a file)."""
    flush(tmp)
    os.replace(tmp, out)
    return out


def add_partition(folder, key: str, scan: A.Scan, *, generation: str = "0") -> Path:
    """Aggregate ONE partition and store its statistics in a new file (returned).

    Written to a temporary file, flushed and renamed, so a failed aggregate
    leaves no file under the final name.
    """
    df = partition_stats(scan)
    df["partition"] = key
    out = partition_file(folder, key, generation)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".tmp-{os.getpid()}-{out.name}")
    try:
        df.to_parquet(tmp, index=False)
        return publish(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def summary(parts, *, total: Path | None = None, name: str = "source") -> dict:
    """Impressions, clicks, queries, documents and pairs over the partition files ``parts``
    (read from their ``total`` when given)."""
    files = [str(total)] if total is not None else [str(f) for f in parts]
    if not files:
        raise UlrError(f"the source {name!r} has no aggregated partitions yet; refresh it.")
    rows, clicks, queries, docs, pairs, positions = memory_connection().execute(
        "SELECT sum(n), sum(c), count(DISTINCT query_id), count(DISTINCT doc_id), "
        "count(DISTINCT (query_id, doc_id)), max(position) FROM read_parquet($f)",
        {"f": files}).fetchone()
    rows, clicks = int(rows or 0), int(clicks or 0)
    return {"rows": rows, "clicks": clicks, "queries": int(queries), "documents": int(docs),
            "pairs": int(pairs), "positions": int(positions or 0),
            "ctr": clicks / rows if rows else float("nan"), "sessions": None}


def write_total(out: Path, parts, *, base: Path | None = None, plus=(), minus=()) -> Path:
    """Store at ``out`` the total of ``parts``: ``base + plus - minus``, or the sum of ``parts``.

    ``base`` is the total of the partitions before the change, ``plus`` the
    partition files added since and ``minus`` those removed. Without ``base``
    every partition in ``parts`` is summed. Cells whose impressions sum to zero
    are dropped, as a re-scan would never show them. Written to a temporary
    file, flushed and renamed.
    """
    out = Path(out)
    if base is None:
        terms, params = ["SELECT query_id, doc_id, position, n, c FROM read_parquet($p)"], \
            {"p": [str(p) for p in parts]}
    else:
        terms, params = ["SELECT query_id, doc_id, position, n, c FROM read_parquet($b)"], \
            {"b": str(base)}
        if plus:
            terms.append("SELECT query_id, doc_id, position, n, c FROM read_parquet($p)")
            params["p"] = [str(f) for f in plus]
        if minus:
            terms.append("SELECT query_id, doc_id, position, -n, -c FROM read_parquet($m)")
            params["m"] = [str(f) for f in minus]
    tmp = out.with_name(f".tmp-{os.getpid()}-{out.name}")
    sql = (f"COPY (WITH u AS ({' UNION ALL '.join(terms)}), "
           "cells AS (SELECT query_id, doc_id, position, sum(n) AS n, sum(c) AS c FROM u "
           "GROUP BY query_id, doc_id, position HAVING sum(n) <> 0) "
           "SELECT dense_rank() OVER (ORDER BY query_id, doc_id) - 1 AS pair, query_id, doc_id, "
           "position, CAST(n AS BIGINT) AS n, CAST(c AS BIGINT) AS c FROM cells "
           f"ORDER BY pair, position) TO {sql_literal(tmp)} (FORMAT parquet)")
    try:
        memory_connection().execute(sql, params)
        return publish(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def merged_cell_stats(parts, *, total: Path | None = None, positions: int | None = None,
                      groups: bool = False, name: str = "source") -> A.CellStats:
    """The sum of the partition files ``parts``, as :func:`ulr.data.scan.cell_stats`.

    Read from their stored ``total`` when given (not for bootstrap buckets,
    which only the partitions hold).
    """
    files = [str(f) for f in parts]
    if not files:
        raise UlrError(f"the source {name!r} has no aggregated partitions yet; refresh it.")
    if total is not None and not groups:
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
    res = memory_connection().execute(sql, params).fetchnumpy()
    holder = A.Scan(cur=None, from_sql="", params={}, columns=(), name=name, checked=True)
    return A.cells_from(res, holder, positions=positions, groups=groups)


def _cells_of_total(total: Path, *, positions: int | None, name: str) -> A.CellStats:
    """:class:`~ulr.data.scan.CellStats` from the stored total (pairs numbered as a re-scan numbers them)."""
    where, params = "", {"t": str(total)}
    if positions is not None:
        where = "WHERE position <= $k"
        params["k"] = int(positions)
    res = memory_connection().execute(
        f"SELECT pair, position, n, c FROM read_parquet($t) {where}", params).fetchnumpy()
    if positions is not None and len(res["pair"]):  # pairs seen only deeper drop out
        res["pair"] = np.unique(np.asarray(res["pair"]), return_inverse=True)[1]
    holder = A.Scan(cur=None, from_sql="", params={}, columns=(), name=name, checked=True)
    return A.cells_from(res, holder, positions=positions, groups=False)
