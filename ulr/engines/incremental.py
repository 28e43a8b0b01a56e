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


def merged_cell_stats(folder, *, positions: int | None = None, groups: bool = False,
                      name: str = "source") -> A.CellStats:
    """The sum of every stored partition, as :func:`ulr.propensity.aggregate.cell_stats`."""
    files = [str(f) for f in partitions(folder)]
    if not files:
        raise UlrError(f"the source {name!r} has no aggregated partitions yet; refresh it.")
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
