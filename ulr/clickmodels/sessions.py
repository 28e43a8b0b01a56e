"""Session matrices for click models, from ONE aggregate query.

PBM, UBM and cascade only need per-row counts, but DCM, DBN and SDBN need what
happens after the last click in each session (the product of
``1 - alpha`` over the documents below it), which no per-cell count carries.
So the single statement returns one row per (session, rank): the session's
index, the (query, doc) pair's index, the rank, the click and the held-out flag;
numpy then holds the log as two ``S x K`` matrices (pair, click) and every
model's sufficient statistics are ``bincount`` sums over them.

The held-out split is a hash of the session id in SQL (md5 of
``seed:session_id``, first four hex digits, the same on DuckDB and Spark), so a
session is held out or not whatever engine or file order reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.errors import UlrError

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
    """A click log as session matrices.

    Attributes
    ----------
    pair : (S, K) int64, the (query, doc) pair at each rank; -1 where the
        session shows fewer than K results.
    click : (S, K) bool.
    test : (S,) bool, held out.
    n_pairs : number of distinct pairs.
    """

    pair: np.ndarray
    click: np.ndarray
    test: np.ndarray
    n_pairs: int

    def __post_init__(self):
        if self.pair.shape != self.click.shape or self.pair.ndim != 2:
            raise ValueError("pair and click must be matrices of one shape")
        if self.test.shape != (self.pair.shape[0],):
            raise ValueError("test needs one flag per session")
        if np.any(self.click & (self.pair < 0)):
            raise ValueError("a click on an empty slot")

    @property
    def sessions(self) -> int:
        return self.pair.shape[0]

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

    def subset(self, keep: np.ndarray) -> "Sessions":
        return Sessions(pair=self.pair[keep], click=self.click[keep], test=self.test[keep],
                        n_pairs=self.n_pairs)

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


class NeedsSessions(UlrError):
    """The log has no session key, which click models need (rank order within one list)."""


def has_sessions(scan) -> bool:
    return scan.has("session_id")


def require_sessions(scan, models) -> None:
    """A typed error when a model that needs session order meets a log without sessions."""
    if not has_sessions(scan):
        names = ", ".join(models)
        raise NeedsSessions(f"the log {scan.name!r} has no session column, and click models "
                       f"({names}) read the clicks of one result list in rank order; map a "
                       "session id (e.g. --map session_id=COLUMN) to fit them.")


def collect(scan, *, test_fraction: float = 0.2, seed: int = 0,
            positions: int | None = None) -> Sessions:
    """The session matrices of a scan: ONE aggregate statement on its engine.

    The statement (portable SQL: window functions, md5, substr, instr, joins)::

        WITH ss AS (SELECT sid, row_number() OVER (ORDER BY sid) - 1 AS s,
                           md5-slot(seed:sid) < fraction * 65536 AS test
                    FROM (SELECT DISTINCT CAST(session_id AS STRING) AS sid FROM log)),
             pp AS (SELECT q, d, row_number() OVER (ORDER BY q, d) - 1 AS pair
                    FROM (SELECT DISTINCT query_id AS q, doc_id AS d FROM log))
        SELECT s, pair, position, click, test FROM log JOIN ss JOIN pp [WHERE position <= K]

    The windows and the hash run on the distinct sessions and pairs, not on every
    row; the rows stream through two hash joins with the small sides built.
    """
    if not 0.0 <= float(test_fraction) < 1.0:
        raise UlrError(f"test fraction must lie in [0, 1), got {test_fraction}.")
    require_sessions(scan, ["any"])
    where, params = "", {"ulr_seed": int(seed), "ulr_cut": int(round(test_fraction * SPLIT_SLOTS))}
    if positions is not None:
        if int(positions) < 1:
            raise UlrError("positions must be at least 1.")
        where, params["ulr_k"] = "WHERE position <= $ulr_k", int(positions)
    sql = ("WITH ss AS (SELECT sid, CAST(row_number() OVER (ORDER BY sid) - 1 AS INTEGER) AS s, "
           f"CAST(CASE WHEN {_split_slot().replace('session_id', 'sid')} < $ulr_cut THEN 1 "
           "ELSE 0 END AS TINYINT) AS test FROM (SELECT DISTINCT CAST(session_id AS STRING) AS sid "
           f"FROM {{src}} AS t0 {where}) AS d), "
           "pp AS (SELECT q, d, CAST(row_number() OVER (ORDER BY q, d) - 1 AS INTEGER) AS pair "
           "FROM (SELECT DISTINCT CAST(query_id AS STRING) AS q, CAST(doc_id AS STRING) AS d "
           f"FROM {{src}} AS t1 {where}) AS e) "
           "SELECT ss.s, pp.pair, CAST(t.position AS SMALLINT) AS position, "
           "CAST(t.click AS TINYINT) AS click, ss.test "
           f"FROM {{src}} AS t JOIN ss ON CAST(t.session_id AS STRING) = ss.sid "
           "JOIN pp ON CAST(t.query_id AS STRING) = pp.q AND CAST(t.doc_id AS STRING) = pp.d "
           f"{where.replace('position', 't.position')}")
    res = scan.execute(sql, params).fetchnumpy()
    if len(res["s"]) == 0:
        raise UlrError(f"the log {scan.name!r} has no rows to fit click models on.")
    click = res.pop("click")
    if np.ma.isMaskedArray(click) and np.ma.getmaskarray(click).any() \
            or (click.dtype.kind == "f" and np.isnan(click).any()):
        raise UlrError(f"the log {scan.name!r} has rows without a click value.")
    return Sessions.from_rows(res.pop("s"), res.pop("pair"), res.pop("position"), click,
                              res.pop("test"), ranks=positions)
