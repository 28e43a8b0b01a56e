"""Session matrices for click models, from ONE aggregate query.

PBM, UBM and cascade only need per-row counts, but DCM, DBN and SDBN need what
happens after the last click in each session (the product of
``1 - alpha`` over the documents below it), which no per-cell count carries.
So the aggregate statement pivots each session to one row of K codes (the
(query, doc) pair and the click at each rank) and groups the sessions into
distinct *patterns* with their counts; numpy then holds the log as two ``R x K``
matrices (pair, click) and a count per row, and every model's sufficient
statistics are count-weighted sums over them (compiled passes or ``bincount``).

The held-out split is a hash of the session id in SQL (md5 of
``seed:session_id``, first four hex digits, the same on DuckDB and Spark), so a
session is held out or not whatever engine or file order reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.errors import NeedsSessions, UlrError

_HEX = "0123456789abcdef"
SPLIT_SLOTS = 16 ** 4


def _split_slot() -> str:
    """0..65535 from md5(seed:session_id): portable (md5, substr, instr only)."""
    h = "md5(concat(CAST($ulr_seed AS STRING), ':', CAST(session_id AS STRING)))"
    d = [f"(instr('{_HEX}', substr({h}, {i}, 1)) - 1)" for i in (1, 2, 3, 4)]
    return f"CAST(4096 * {d[0]} + 256 * {d[1]} + 16 * {d[2]} + {d[3]} AS BIGINT)"


def split_slot_of(session_id, seed: int) -> int:
    """The slot :func:`_split_slot` gives a session (plain Python, for tests)."""
    import hashlib
    return int(hashlib.md5(f"{int(seed)}:{session_id}".encode()).hexdigest()[:4], 16)


@dataclass(frozen=True)
class Sessions:
    """A click log as session matrices, one row per distinct session *pattern*.

    Sessions with the same pairs at the same ranks, the same clicks and the
    same held-out flag have the same likelihood under every model, so a row
    stands for ``count`` identical sessions and every sum over sessions is a
    ``count``-weighted sum over rows (:func:`collect` returns one row per
    pattern; :meth:`from_rows` one row per session, count 1).

    Attributes
    ----------
    pair : (R, K) int, the (query, doc) pair at each rank; -1 where the
        session shows fewer than K results.
    click : (R, K) bool.
    test : (R,) bool, held out.
    n_pairs : number of distinct pairs.
    count : (R,) int64, sessions per row (default 1 each).
    """

    pair: np.ndarray
    click: np.ndarray
    test: np.ndarray
    n_pairs: int
    count: np.ndarray | None = None

    def __post_init__(self):
        if self.pair.shape != self.click.shape or self.pair.ndim != 2:
            raise ValueError("pair and click must be matrices of one shape")
        if self.test.shape != (self.pair.shape[0],):
            raise ValueError("test needs one flag per session")
        if np.any(self.click & (self.pair < 0)):
            raise ValueError("a click on an empty slot")
        if self.count is None:
            object.__setattr__(self, "count", np.ones(self.pair.shape[0], dtype=np.int64))
        elif self.count.shape != self.test.shape or np.any(self.count < 1):
            raise ValueError("count needs one positive number per row")

    @property
    def total(self) -> int:
        """Sessions in the log (the rows' counts summed)."""
        return int(self.count.sum())

    @property
    def train_total(self) -> int:
        return int(self.count[~self.test].sum())

    @property
    def test_total(self) -> int:
        return int(self.count[self.test].sum())

    @property
    def ranks(self) -> int:
        return self.pair.shape[1]

    @property
    def mask(self) -> np.ndarray:
        return self.pair >= 0

    @property
    def length(self) -> np.ndarray:
        """Results shown per session (ranks 1..length)."""
        return self.mask.sum(axis=1)

    @property
    def sessions(self) -> int:
        """Rows (distinct patterns; sessions when built by :meth:`from_rows`)."""
        return self.pair.shape[0]

    def subset(self, keep: np.ndarray) -> "Sessions":
        return Sessions(pair=self.pair[keep], click=self.click[keep], test=self.test[keep],
                        n_pairs=self.n_pairs, count=self.count[keep])

    @classmethod
    def from_rows(cls, s, pair, position, click, test=None, *, ranks: int | None = None
                  ) -> "Sessions":
        """Matrices from one row per (session index, rank); ranks must be 1..n per session."""
        pair = np.asarray(pair)
        pos = np.asarray(position)
        n_s = int(np.max(s)) + 1 if len(s) else 0
        k = int(ranks or (pos.max() if len(pos) else 0))
        if n_s == 0 or k < 1:
            raise UlrError("the log has no sessions to fit click models on.")
        if pos.min() < 1 or pos.max() > k:
            raise UlrError(f"positions must lie in 1..{k}.")
        # one int64 temporary (the slot of each row); everything else stays narrow
        key = np.asarray(s, dtype=np.int64) * k
        key += pos
        key -= 1
        kind = np.int32 if pair.max() < 2 ** 31 - 1 else np.int64
        P = np.full((n_s, k), -1, dtype=kind)
        C = np.zeros((n_s, k), dtype=bool)
        P.ravel()[key] = pair
        if int(np.count_nonzero(P >= 0)) != len(key):  # two rows landed on one slot
            raise UlrError("a session shows two results at one position; click models need "
                           "one result per rank in each session.")
        C.ravel()[key] = np.asarray(click) != 0
        m = P >= 0
        if np.any(m[:, 1:] & ~m[:, :-1]):
            raise UlrError("some sessions skip a position; click models need ranks 1..n "
                           "without gaps in every session.")
        T = np.zeros(n_s, dtype=bool)
        if test is not None:
            T[key // k] = np.asarray(test) != 0
        return cls(pair=P, click=C, test=T, n_pairs=int(pair.max()) + 1)


def has_sessions(scan) -> bool:
    return scan.has("session_id")


def require_sessions(scan, models) -> None:
    """A typed error when a model that needs session order meets a log without sessions."""
    if not has_sessions(scan):
        names = ", ".join(models)
        raise NeedsSessions(f"the log {scan.name!r} has no session column, and click models "
                            f"({names}) read the clicks of one result list in rank order; map a "
                            "session id (e.g. --map session_id=COLUMN) to fit them.")


def _ranks(scan, where: str, params: dict, positions) -> tuple[int, int, bool]:
    """K (``positions`` or the log's largest position), the rows, and whether the engine's
    ``hash`` has 64 bits (DuckDB's; Spark's has 32): a cheap first statement that also
    refuses positions below 1 and an empty log."""
    n, lo, hi, kind = scan.execute(
        f"SELECT count(*), min(position), max(position), typeof(hash('q', 'd')) FROM {{src}} "
        f"AS t {where}", params).fetchone()
    if not n:
        raise UlrError(f"the log {scan.name!r} has no rows to fit click models on.")
    k = int(positions) if positions is not None else int(hi)
    if int(lo) < 1:
        raise UlrError(f"positions must lie in 1..{k}.")
    return k, int(n), str(kind).upper() in _WIDE_HASH


_WIDE_HASH = ("UBIGINT", "BIGINT", "LONG")  # typeof() names of a 64-bit hash


def _pattern_sql(k: int, where: str, *, key: str = "hash", code_type: str = "INTEGER") -> str:
    """The statement of :func:`collect`: pairs numbered, each session pivoted to one row
    of K codes (``2 * pair + click``; -2 for an empty slot), then the sessions grouped
    into patterns with their counts.

    ``key="hash"`` joins the rows to the numbered pairs on ``hash(query_id, doc_id)`` (an
    integer: far cheaper than the join on two strings); a collision would join a row to two
    pairs, which :func:`_decode` sees as two results at one position (:class:`_Clash`),
    and :func:`collect` then runs ``key="text"``, the join on the two strings.
    ``code_type`` INTEGER halves the pivot's aggregate state against BIGINT; it holds ``2 * pair + 1`` whenever the log has fewer than 2**30 rows.
    A NULL click is counted (``nc < n``) rather than coded per slot."""
    code = (f"CAST(2 * pp.pair + CASE WHEN t.click <> 0 THEN 1 ELSE 0 END AS {code_type})")
    xs = [f"x{r}" for r in range(1, k + 1)]
    pivot = ", ".join(f"coalesce(max(CASE WHEN t.position = {r} THEN {code} END), -2) AS x{r}"
                      for r in range(1, k + 1))
    slot = _split_slot().replace("session_id", "sid")
    cols = ", ".join(xs)
    pairs = ("SELECT DISTINCT CAST(query_id AS STRING) AS q, CAST(doc_id AS STRING) AS d "
             f"FROM {{src}} AS t1 {where}")
    if key == "hash":  # NULL ids never match, as in the join on text
        h = ("CASE WHEN {q} IS NULL OR {d} IS NULL THEN NULL ELSE hash({q}, {d}) END")
        pp = (f"SELECT {h.format(q='q', d='d')} AS h, CAST(row_number() OVER (ORDER BY q, d) "
              f"- 1 AS {code_type}) AS pair FROM ({pairs}) AS e")
        row_h = h.format(q="CAST(query_id AS STRING)", d="CAST(doc_id AS STRING)")
        rows = (f"(SELECT session_id, position, click, {row_h} AS h FROM {{src}} AS t0 "
                f"{where}) AS t JOIN pp ON t.h = pp.h")
    else:
        pp = (f"SELECT q, d, CAST(row_number() OVER (ORDER BY q, d) - 1 AS {code_type}) "
              f"AS pair FROM ({pairs}) AS e")
        rows = ("{src} AS t JOIN pp ON CAST(t.query_id AS STRING) = pp.q AND "
                f"CAST(t.doc_id AS STRING) = pp.d {where.replace('position', 't.position')}")
    return (f"WITH pp AS ({pp}), "
            "per AS (SELECT CAST(t.session_id AS STRING) AS sid, count(*) AS n, "
            f"count(t.click) AS nc, {pivot} FROM {rows} GROUP BY CAST(t.session_id AS STRING)), "
            # rows without a session id form one group, flagged and dropped in numpy: a
            # WHERE on the session id (anywhere) makes DuckDB hold the joined rows in memory
            f"tagged AS (SELECT {cols}, n, nc, CAST(CASE WHEN {slot} < $ulr_cut THEN 1 ELSE 0 "
            "END AS TINYINT) AS test, CAST(CASE WHEN sid IS NULL THEN 1 ELSE 0 END AS TINYINT) "
            "AS nosid FROM per) "
            f"SELECT {cols}, n, nc, test, nosid, count(*) AS m FROM tagged "
            f"GROUP BY {cols}, n, nc, test, nosid ORDER BY test, {cols}, n, nc, nosid")


class _Clash(UlrError):
    """Two results at one position: in the log, or a hash shared by two pairs."""


def _decode(res: dict, k: int, name: str) -> Sessions:
    """Pattern rows -> :class:`Sessions`, with the checks :meth:`Sessions.from_rows` makes."""
    keep = np.asarray(res["nosid"]) == 0  # rows without a session id are not a session
    if not keep.all():
        res = {c: np.asarray(v)[keep] for c, v in res.items()}
    if not keep.any():
        raise UlrError(f"the log {name!r} has no rows with a session id.")
    n = np.asarray(res["n"], dtype=np.int64)
    if np.any(np.asarray(res["nc"], dtype=np.int64) != n):
        raise UlrError(f"the log {name!r} has rows without a click value.")
    x = np.empty((len(n), k), dtype=np.asarray(res["x1"]).dtype)
    for r in range(k):
        x[:, r] = res[f"x{r + 1}"]
    shown = x >= 0
    if np.any(np.count_nonzero(shown, axis=1) != n):
        raise _Clash("a session shows two results at one position; click models need "
                     "one result per rank in each session.")
    if np.any(shown[:, 1:] & ~shown[:, :-1]):
        raise UlrError("some sessions skip a position; click models need ranks 1..n "
                       "without gaps in every session.")
    click = (x & 1).astype(bool)  # empty slots (-2) are even
    x >>= 1  # the pair; -2 >> 1 = -1 on empty slots
    n_pairs = int(x.max()) + 1
    kind = np.int32 if n_pairs < 2 ** 31 else np.int64
    return Sessions(pair=x.astype(kind, copy=False), click=click,
                    test=np.asarray(res["test"]) != 0, n_pairs=n_pairs,
                    count=np.asarray(res["m"], dtype=np.int64))


def collect(scan, *, test_fraction: float = 0.2, seed: int = 0,
            positions: int | None = None) -> Sessions:
    """The log's distinct session patterns with their counts, aggregated on its engine.

    A first statement reads K (the largest position, unless ``positions`` is
    given); the second (portable SQL: window functions, md5, substr, instr, a
    join, GROUP BY) returns one row per pattern::

        WITH pp  AS (distinct (query_id, doc_id), numbered by row_number() in (q, d) order,
                     with h = hash(query_id, doc_id)),
             per AS (SELECT session_id, count(*) AS n, count(click) AS nc,
                            max(CASE WHEN position = r THEN 2 * pair + click END) AS x_r, ...
                     FROM log JOIN pp ON hash(query_id, doc_id) = h GROUP BY session_id)
        SELECT x_1..x_K, n, test = md5-slot(seed:session_id) < fraction * 65536, count(*)
        FROM per GROUP BY x_1..x_K, n, test ORDER BY test, x_1..x_K, n

    Sessions with the same codes are the same for every model's likelihood and
    EM, so numpy iterates over patterns weighted by their count; on a log whose
    ranker shows each query's list in a few orders the patterns are far fewer
    than the sessions. The ORDER BY makes the rows (and so the bootstrap's
    draws) the same on every engine. Should two pairs share a hash (the join then
    gives a row two pairs, which the decoding sees as two results at one position),
    the statement runs again joined on the ids as text; an engine whose ``hash`` has
    fewer than 64 bits (Spark) joins on text from the start.
    """
    if not 0.0 <= float(test_fraction) < 1.0:
        raise UlrError(f"test fraction must lie in [0, 1), got {test_fraction}.")
    require_sessions(scan, ["any"])
    where, params = "", {"ulr_seed": int(seed), "ulr_cut": int(round(test_fraction * SPLIT_SLOTS))}
    if positions is not None:
        if int(positions) < 1:
            raise UlrError("positions must be at least 1.")
        where, params["ulr_k"] = "WHERE position <= $ulr_k", int(positions)
    k, rows, wide = _ranks(scan, where, {k: v for k, v in params.items() if k == "ulr_k"},
                           positions)
    code_type = "INTEGER" if rows < 2 ** 30 else "BIGINT"  # pairs <= rows: 2 * pair + 1 fits
    # a 32-bit hash (Spark's) is shared by two of 100k pairs more often than not: text join
    for key in ("hash", "text") if wide else ("text",):
        res = scan.execute(_pattern_sql(k, where, key=key, code_type=code_type),
                           params).fetchnumpy()
        if len(res["m"]) == 0:
            raise UlrError(f"the log {scan.name!r} has no rows to fit click models on.")
        try:
            return _decode(res, k, scan.name)
        except _Clash:
            if key == "text":  # the log itself shows two results at one position
                raise
