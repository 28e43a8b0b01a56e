"""Summaries of a click log: key figures, CTR by position with Wilson intervals (and what
it can say, :class:`CtrByPosition`), true theta.

One function per summary, for every kind of log: a stored :class:`ulr.data.log.Log`, a
:class:`ulr.data.scan.Scan` on any engine (an in-place file, a lake path, a Spark
table) and the statistics a registered source stores (:class:`CellStats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ulr import validate
from ulr.data.scan import CellStats, Scan, scan_of
from ulr.result import Result, cached_property
from ulr.verdict import LEVEL, Verdict

if TYPE_CHECKING:  # pandas is imported where it is used: start-up time of the CLI
    import pandas as pd

    from ulr.data.log import Log

TRUE_THETA_HEAD = 200_000
#: a log is "randomized" for the CTR caption when at least this share of rows is
RANDOMIZED_SHARE = 0.99


@validate.params(level=validate.level)
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
    imp, clk = log.by_position()
    ok = imp > 0
    return wilson_table(np.arange(1, log.positions + 1)[ok], imp[ok], clk[ok], level=level)


@validate.params(level=validate.level)
def ctr_by_position_result(log, *, randomized_share: float = 0.0, level: float = LEVEL,
                           rows: int | None = None, clicks: int | None = None,
                           queries: int | None = None, sessions: int | None = None,
                           mapping=()) -> CtrByPosition:
    """:func:`ctr_by_position` of ``log`` with its verdict and evidence
    (:class:`CtrByPosition`; the other arguments are its fields)."""
    return CtrByPosition(ctr_by_position(log, level=level),
                         randomized_share=float(randomized_share or 0.0),
                         level=level, rows=rows, clicks=clicks, queries=queries,
                         sessions=sessions, mapping=tuple(mapping))


@dataclass(frozen=True)
class CtrByPosition(Result):
    """CTR per position and what it can say (docs/verdicts.md, "CTR by position").

    Attributes
    ----------
    table : pandas.DataFrame
        ``position, impressions, clicks, ...`` by position (:func:`ctr_by_position`).
    randomized_share : float
        Share of rows shown in random order (1.0 when the whole log is declared so). At
        least :data:`RANDOMIZED_SHARE`: a difference between positions is position bias
        alone; otherwise it mixes position bias with the ranker's ordering.
    level : float
        Two-sided level of the verdict's interval.
    rows, clicks, queries, sessions : int or None
        The log's counts the evidence states (``rows`` and ``clicks`` default to the
        table's impressions and clicks; None: not known, e.g. no session column).
    verdict : Verdict
        Set when the result is built: position 1 against the last position (difference of
        two binomial proportions, normal interval), naming the position with the highest
        CTR when it is neither end.
    evidence : dict
        ``rows, clicks, queries, sessions``.
    caveats : tuple of str
        The verdict's reasons, word for word (what a page shows next to the chart).
    """

    table: object
    randomized_share: float = 0.0
    level: float = LEVEL
    rows: int | None = None
    clicks: int | None = None
    queries: int | None = None
    sessions: int | None = None
    #: the log's warnings the verdict weighs (:func:`ulr.lists.mapping_warnings`): a
    #: declared randomization that the data contradict is not read as randomized
    mapping: tuple = ()

    @cached_property
    def verdict(self) -> Verdict:
        return self._verdict()

    @cached_property
    def evidence(self) -> dict:
        rows = int(self.table["impressions"].sum()) if self.rows is None else self.rows
        clicks = int(self.table["clicks"].sum()) if self.clicks is None else self.clicks
        return {"rows": rows, "clicks": clicks, "queries": self.queries,
                "sessions": self.sessions}

    @property
    def caveats(self) -> tuple:
        return tuple(r.message for r in self.verdict.reasons)

    def to_dict(self) -> dict:
        from ulr.result import jsonable
        return {"positions": jsonable(self.table.to_dict(orient="records")),
                "randomized_share": float(self.randomized_share or 0.0),
                "evidence": dict(self.evidence), "verdict": self.verdict.to_dict()}

    def _verdict(self) -> Verdict:
        """:meth:`_judge`, with the reason of a declared randomization that the data
        contradict (:attr:`mapping`), which the words then do not call randomized."""
        from dataclasses import replace
        v = self._judge()
        extra = tuple(w.reason() for w in self.mapping
                      if w.code == "randomization_contradicted")
        return replace(v, reasons=v.reasons + extra) if extra else v

    @property
    def _random_order(self) -> bool:
        return ((self.randomized_share or 0.0) >= RANDOMIZED_SHARE
                and not any(w.code == "randomization_contradicted" for w in self.mapping))

    def _judge(self) -> Verdict:
        """Compares position 1 with the last position and names the position with the
        highest CTR; the words follow the data's shape (a fall, a rise, no trend) and
        whether the log is randomized (:attr:`randomized_share`)."""
        import pandas as pd

        from ulr import verdict as V
        level = self.level
        t = pd.DataFrame(self.table).sort_values("position")
        n = t["impressions"].to_numpy(dtype=float)
        k = t["clicks"].to_numpy(dtype=float)
        p = np.divide(k, n, out=np.zeros_like(k), where=n > 0)
        pos = t["position"].to_numpy()
        basis = "CTR at position 1 - CTR at the last position"
        if len(t) < 2:
            return Verdict("inconclusive", "The log shows a single position: no trend by "
                           "position.", basis)
        se = float(np.sqrt(p[0] * (1 - p[0]) / max(n[0], 1)
                           + p[-1] * (1 - p[-1]) / max(n[-1], 1)))
        d = float(p[0] - p[-1])
        z = V.z_value(level)
        lo, hi = d - z * se, d + z * se
        top = int(np.argmax(p))
        randomized = self._random_order
        se1 = float(np.sqrt(p[0] * (1 - p[0]) / max(n[0], 1)))
        sek = float(np.sqrt(p[-1] * (1 - p[-1]) / max(n[-1], 1)))
        common = min(x for x in (se1, sek, se) if x > 0) if max(se1, sek, se) > 0 else None
        rates = (f"{V.fmt(p[0], common, pct=True)} at position 1, "
                 f"{V.fmt(p[-1], common, pct=True)} at position {pos[-1]}")  # one precision
        # the words follow the data's shape: a fall, a rise, or no trend the clicks can show
        shape = "flat" if V.contains_zero(lo, hi) else "fall" if d > 0 else "rise"
        if randomized:
            why = ("The log is randomized, so every document is shown at every position "
                   "alike: a difference between positions is position bias alone.")
        elif shape == "fall":
            why = ("A fall with position mixes position bias (users examine lower positions "
                   "less) with the ranker putting better documents on top; this chart alone "
                   "does not separate the two.")
        elif shape == "rise":
            why = ("A rise with position is not what position bias alone does (users examine "
                   "lower positions less): the logging policy puts more attractive documents "
                   "lower, and this chart alone does not separate the two.")
        else:
            why = ("The clicks show no trend by position that their intervals can support; "
                   "without randomization a trend would mix position bias with the ranker's "
                   "ordering.")
        estimate = {"delta": d, "lower": lo, "upper": hi, "top_position": int(pos[top]),
                    "randomized": randomized, "shape": shape}
        if V.contains_zero(lo, hi):
            more = V.more_to_exclude_zero(float(n[0] + n[-1]) / 2, d, lo, hi)
            return Verdict("inconclusive", f"Position 1 and position {pos[-1]} cannot be told "
                           f"apart ({rates}). {why}", basis,
                           to_settle=(f"about {V.about(more)} more impressions per position "
                                      f"would give this difference a {level:.0%} interval "
                                      "that excludes 0" if more else None),
                           estimate=estimate)
        head = f"Clicks {shape} with position ({rates})."
        if top not in (0, len(p) - 1):
            head += f" Position {pos[top]} has the highest CTR."
        lvl = "reliable" if k.sum() >= V.MIN_EFFECTIVE_CLICKS else "directional"
        return Verdict(lvl, f"{head} {why}", basis, estimate=estimate,
                       reasons=() if lvl == "reliable" else (V.Reason(
                           "few_clicks", f"{int(k.sum())} clicks in all (thin below "
                           f"{V.MIN_EFFECTIVE_CLICKS})."),))


@validate.params(level=validate.level)
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


def summary_and_ctr(log: Log, *, mapping=()) -> tuple[dict, CtrByPosition]:
    """:func:`summary` of a stored log and its :class:`CtrByPosition`, whose evidence
    states those figures (rows, clicks, queries, sessions) and whose verdict weighs the
    log's randomized share and its warnings (``mapping``: :func:`ulr.lists.mapping_warnings`
    of the log, where a declared randomization that the data contradict is said)."""
    s = summary(log)
    return s, ctr_by_position_result(log, randomized_share=s["randomized_share"],
                                     rows=s["rows"], queries=s["queries"],
                                     sessions=s["sessions"], mapping=mapping)


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
