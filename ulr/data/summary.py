"""Summaries of a click log: key figures, CTR by position with Wilson intervals, true theta.

One function per summary, for every kind of log: a stored :class:`ulr.data.log.Log`, a
:class:`ulr.data.scan.Scan` on any engine (an in-place file, a lake path, a Spark
table) and the statistics a registered source stores (:class:`CellStats`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ulr.data.scan import CellStats, Scan, scan_of

if TYPE_CHECKING:  # pandas is imported where it is used: start-up time of the CLI
    import pandas as pd

    from ulr.data.log import Log

TRUE_THETA_HEAD = 200_000


def ctr_by_position(log, *, level: float = 0.95):
    """Impressions, clicks and CTR per position with Wilson score intervals.

    Parameters
    ----------
    log : Log, Scan or CellStats
        A stored log, rows on any engine (one aggregate query), or cell
        statistics (a source's stored partitions; no rows read).
    level : float
        Two-sided level of the interval (:func:`ulr.validate.level`).

    Returns
    -------
    pandas.DataFrame
        ``position, impressions, clicks, ctr, lower, upper`` by position
        (:func:`wilson_table`).
    """
    if not isinstance(log, CellStats):
        scan = scan_of(log)
        if scan.cells is None:
            res = scan.execute("SELECT position, count(*) AS impressions, "
                               "sum(CAST(click AS INTEGER)) AS clicks FROM {src} "
                               "GROUP BY position ORDER BY position").fetchnumpy()
            return wilson_table(res["position"], res["impressions"], res["clicks"],
                                level=level)
        log = scan.cells(None, False)
    imp = np.bincount(log.position, log.impressions, minlength=log.positions + 1)[1:]
    clk = np.bincount(log.position, log.clicks, minlength=log.positions + 1)[1:]
    ok = imp > 0
    return wilson_table(np.arange(1, log.positions + 1)[ok], imp[ok], clk[ok], level=level)


def wilson_table(position, impressions, clicks, *, level: float = 0.95):
    """position, impressions, clicks, ctr and its Wilson score interval, by position.

    ``ctr = clicks / impressions``; the interval is :func:`ulr.stats.wilson_interval`
    (Wilson 1927), which stays within [0, 1] and is sound for small counts.
    """
    import pandas as pd
    df = pd.DataFrame({"position": np.asarray(position, dtype=np.int64),
                       "impressions": np.asarray(impressions, dtype=np.int64),
                       "clicks": np.nan_to_num(np.asarray(clicks, dtype=float))
                       .astype(np.int64)}).sort_values("position", ignore_index=True)
    from ulr.stats import wilson_interval
    df["ctr"] = df["clicks"] / df["impressions"]
    df["lower"], df["upper"] = wilson_interval(df["clicks"], df["impressions"], level=level)
    return df


def true_theta(log, positions: int | None = None) -> np.ndarray | None:
    """True absolute theta per position when the log records it (simulated logs).

    The mean of the ``true_theta`` column per position, or None when the log has
    no such column, a position has no value, or the positions are not 1..K.
    For a stored log the mean is over every row. For any other scan (an
    in-place file) it is over the first ``TRUE_THETA_HEAD`` rows only, a cheap
    read: the simulator writes one value per position, so the head holds it
    exactly. ``positions`` keeps 1..K (None when the log has fewer).
    """
    scan: Scan = scan_of(log)
    if not scan.has("true_theta"):
        return None
    if "true_theta" not in scan.memo:
        if scan.log is not None:
            source, params = "{src}", None
        else:
            source = "(SELECT position, true_theta FROM {src} LIMIT $ulr_head) AS h"
            params = {"ulr_head": TRUE_THETA_HEAD}
        rows = scan.execute(f"SELECT position, avg(TRY_CAST(true_theta AS DOUBLE)) FROM {source} "
                            "GROUP BY position ORDER BY position", params).fetchall()
        pos = np.array([r[0] for r in rows], dtype=float)
        ok = (len(rows) > 0 and all(v is not None for _, v in rows)
              and np.array_equal(pos, np.arange(1, len(pos) + 1)))
        scan.memo["true_theta"] = np.array([r[1] for r in rows], dtype=float) if ok else None
    t = scan.memo["true_theta"]
    if t is None:
        return None
    if positions is not None:
        if len(t) < positions:
            return None
        t = t[:positions]
    return t


def summary(log: Log) -> dict:
    """Key figures of a log: rows, queries, documents, sessions, CTR, randomized share."""
    has_s = log.info.has("session_id")
    has_r = log.info.has("randomized")
    q = (f"SELECT count(*), count(DISTINCT query_id), count(DISTINCT doc_id), "
         f"{'count(DISTINCT session_id)' if has_s else 'NULL'}, avg(click::INT), "
         f"{'avg(coalesce(randomized, false)::INT)' if has_r else '0.0'}, max(position) "
         f"FROM {log.table}")
    rows, queries, docs, sessions, ctr, rnd, maxpos = log.cur.execute(q).fetchone()
    return {"rows": int(rows), "queries": int(queries), "documents": int(docs),
            "sessions": None if sessions is None else int(sessions),
            "ctr": float(ctr or 0.0), "randomized_share": float(rnd or 0.0),
            "positions": int(maxpos or 0)}


def preview(log: Log, n: int = 100) -> pd.DataFrame:
    """The first ``n`` stored rows of a log, every column."""
    return log.cur.execute(f"SELECT * FROM {log.table} LIMIT ?", [int(n)]).df()
