"""A click log to aggregate (:class:`Scan`) and its cell statistics, computed in SQL.

Every estimator and every engine starts with ONE aggregate query over the rows
and then works in numpy on the (much smaller) result. The statements use plain
SQL (``GROUP BY``, ``count(*) FILTER``, ``dense_rank() OVER``) so they could run
on Spark (:mod:`ulr.engines`); the only DuckDB-specific piece is ``read_csv``
(the in-place file scan).

A :class:`Scan` says where rows come from: a stored, validated table
(:func:`scan_of` a :class:`ulr.data.log.Log`), a CSV file aggregated in place
(:func:`csv_scan`), a path or table on an engine (:mod:`ulr.engines`), or
statistics stored per partition (:mod:`ulr.engines.sources`). The file scan
lets ``propensity --input big.csv --method em`` skip materializing the file:
the schema rules are checked inside the same aggregate query, and any problem
raises :class:`NeedsFullLoad` so the caller falls back to
:func:`ulr.data.ingest.open_file`, which refuses the file with the loader's own
message.

:class:`CellStats` are impressions and clicks per (query-doc pair, position):
the sufficient statistics of the position-based model, additive over rows, so
engines compute and store them per partition.

Bootstrap buckets
-----------------
With ``groups=True`` the statistics are also split by resampling unit: the
session (``session_id``), or the query when the log has no sessions. Units
are hashed into ``N_GROUPS`` buckets by md5 (:func:`bucket_sql`, the same on DuckDB and Spark); a bootstrap
replicate draws one Poisson(1) weight per bucket (the "Poisson bootstrap",
Chamandy et al. 2012). With fewer units than buckets nearly every bucket is
one unit, i.e. the plain session bootstrap; with more, buckets are random
blocks of independent units, which has the same variance to first order, and
the replicate arrays stay small however large the log is.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np

from ulr.data import schema
from ulr.data.files import csv_header, memory_connection, sniff_kind
from ulr.data.log import Log
from ulr.data.mapping import Mapping, plan_columns
from ulr.errors import Cancelled, UlrError

N_GROUPS = 4096  # = 16**3: three hex digits of md5 (see bucket_sql)


class NeedsFullLoad(Exception):
    """The in-place file scan met something only the full loader can report."""


# --------------------------------------------------------------------------- scans


@dataclass
class Scan:
    """Rows to aggregate: ``FROM {from_sql}`` with ``params`` bound by name.

    ``from_sql`` is either a validated table name or a ``read_csv(...)`` call
    whose arguments are all ``$``-parameters; no user text is ever pasted.
    """

    cur: object
    from_sql: str
    params: dict
    columns: tuple
    name: str
    checked: bool  # True: a stored table whose rows already passed the schema rules
    rows: int | None = None
    content_hash: str | None = None
    log: object = None
    plans: tuple = ()  # file scans: the loader's column plans (schema rules to check)
    memo: dict = field(default_factory=dict)
    # stored statistics instead of rows (ulr.engines.sources): (positions, groups) -> CellStats
    cells: object = None
    # callable() -> bool: asked while a statement runs; True interrupts it (Cancelled)
    should_stop: object = None
    # the same rows with query_id and doc_id as the files store them, when those are integers
    # (ulr.engines.columns.integer_keys): ``{keys}`` in a statement; cell_stats groups on
    # them and casts each group's ids to text once, not each row's
    keys_sql: str | None = None

    @property
    def features(self) -> list[str]:
        return [c for c in self.columns if c.startswith(schema.FEATURE_PREFIX)]

    def has(self, column: str) -> bool:
        return column in self.columns

    @property
    def unit(self) -> str:
        """Resampling unit column: the session, else the query."""
        return "session_id" if self.has("session_id") else "query_id"

    def execute(self, sql: str, params: dict | None = None):
        """Run ``sql`` (which references ``{src}``, or ``{keys}``: :attr:`keys_sql`, else
        the same as ``{src}``) with the scan's parameters."""
        bound = {**self.params, **(params or {})}
        text = sql.replace("{src}", self.from_sql).replace("{keys}",
                                                            self.keys_sql or self.from_sql)
        if self.checked:
            return self._run(text, bound or None)
        try:
            return self._run(text, bound)
        except duckdb.Error as exc:  # a cast error, a ragged row, ...
            raise NeedsFullLoad(str(exc)) from None

    def _run(self, text: str, bound):
        """``cur.execute``; with ``should_stop``, the statement runs on a helper thread
        while this one asks ``should_stop`` every 0.1 s and interrupts it on True."""
        if self.should_stop is None:
            return self.cur.execute(text, bound)
        if self.should_stop():
            raise Cancelled("stopped on request")
        box = {}

        def work():
            try:
                box["result"] = self.cur.execute(text, bound)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
                box["error"] = exc
        t = threading.Thread(target=work, name="ulr-sql", daemon=True)
        t.start()
        while True:
            t.join(0.1)
            if not t.is_alive():
                break
            if self.should_stop():
                self.cur.interrupt()
                t.join()
                raise Cancelled("stopped on request")
        if "error" in box:
            raise box["error"]
        return box["result"]


def scan_of(log) -> Scan:
    """The scan of a stored :class:`ulr.data.log.Log` (or a Scan, returned as is)."""
    if isinstance(log, Scan):
        return log
    if not isinstance(log, Log):
        raise TypeError(f"expected a ulr.data.log.Log, got {type(log).__name__}")
    return Scan(cur=log.cur, from_sql=log.table, params={}, columns=tuple(log.info.columns),
                name=log.info.name, checked=True, rows=log.info.rows,
                content_hash=log.info.content_hash, log=log)


#: the columns of a :func:`list_sample` (those the log has): what the mapping checks and
#: the PBM's fit read
SAMPLE_COLUMNS = ("session_id", "query_id", "doc_id", "position", "click", "randomized")


#: :attr:`Scan.memo` key: the cap of a :func:`list_sample` that :func:`cell_stats` reads
#: along with its aggregate (set by a caller that will ask for that sample)
RIDE = "list-sample-ride"


def list_sample(scan: Scan, *, max_rows: int) -> tuple[Scan, bool]:
    """Rows read in place to check or fit on: all of them up to ``max_rows``; past it, the
    whole lists (sessions; queries in a log without sessions) whose ``hash`` of the list's
    id is a multiple of ``2**j``, for the smallest ``j`` that leaves at most ``max_rows``
    rows (between about a half and all of ``max_rows``), with their
    :data:`SAMPLE_COLUMNS`.

    A property of the rows, not of their order: the same rows in any order give the same
    sample, where a file's first rows depend on how it was written (those of a shuffled file
    break its sessions apart), and no list is cut. The classes are nested (a multiple of
    ``2**(j+1)`` is one of ``2**j``), so one pass reads a class at least as large as the
    sample's (``g``, guessed from the file's size; when the guess proves too coarse, a finer
    class is read again) and the sample is taken from it in memory, where it is held (its
    readers read it several times) and kept in :attr:`Scan.memo`. A CSV read in place can
    have that class read by :func:`cell_stats` in its own pass (:data:`RIDE`), which saves
    the pass. Returns ``(rows, sampled)``: ``scan`` itself and False when every row fits.
    """
    key = ("list-sample", int(max_rows))
    if key in scan.memo:
        return scan.memo[key]
    # canonical column names (the list's key: the session, else the query), never user
    # text; the keys alone: parsing every column of every row would cost more
    cols = ", ".join(c for c in SAMPLE_COLUMNS if scan.has(c))
    g = _coarsest_class(scan, max_rows)
    if g == 0 and _rows(scan) <= max_rows:  # every row fits: nothing to draw
        scan.memo[key] = (scan, False)
        return scan.memo[key]
    while True:
        res = scan.execute(f"SELECT {cols}, hash({scan.unit}) AS ulr_h FROM {{src}} "
                           f"WHERE hash({scan.unit}) % $ulr_mod = 0", {"ulr_mod": 2 ** g})
        if hasattr(res, "fetchdf"):  # DuckDB: nullable types keep their NULLs
            rows = res.fetchdf()
        else:
            import pandas as pd
            rows = pd.DataFrame(res.fetchnumpy())
        h = _bits(rows.pop("ulr_h"))
        j = _smallest_class(h, np.ones(len(h), dtype=np.int64), g, max_rows)
        if j is not None:
            break
        g = max(0, g - 4)  # the guess was too coarse: a class 16 times as large
    out = (scan, False) if j == 0 else (_held(scan, rows[_in_class(h, j)]), True)
    scan.memo[key] = out
    return out


def _bits(h) -> np.ndarray:
    """A hash column as uint64 bits (DuckDB's 64 unsigned; Spark's 32 signed, sign-extended:
    the low bits, and so being a multiple of 2**j, are kept)."""
    return np.asarray(h).astype(np.int64).view(np.uint64)


def _in_class(h: np.ndarray, j: int) -> np.ndarray:
    return (h & np.uint64((1 << j) - 1)) == 0 if j < 64 else h == 0


def _smallest_class(h: np.ndarray, n: np.ndarray, g: int, max_rows: int) -> int | None:
    """The smallest ``j`` whose class holds at most ``max_rows`` rows, from the rows of
    class ``g`` (hashes ``h``, each row ``n`` times); None when class ``g`` is too small to
    tell (it fits, but a larger class might too)."""
    if g > 0 and n.sum() <= max_rows:
        return None
    j = g
    while n[_in_class(h, j)].sum() > max_rows and j < 64:
        j += 1
    return j


def _held(scan: Scan, rows) -> Scan:
    """``rows`` (a frame of sample columns) held in memory as a scan like ``scan``."""
    from dataclasses import replace
    rows = rows.reset_index(drop=True)
    cur = memory_connection()
    cur.register("ulr_sample", rows)
    return replace(scan, cur=cur, from_sql="ulr_sample", params={}, rows=len(rows),
                   columns=tuple(rows.columns), memo={}, keys_sql=None)


def _rows(scan: Scan) -> int:
    """The scan's rows: :attr:`Scan.rows`, else counted once (kept in :attr:`Scan.memo`)."""
    if scan.rows is not None:
        return int(scan.rows)
    if "rows" not in scan.memo:
        scan.memo["rows"] = int(scan.execute("SELECT count(*) FROM {src}").fetchone()[0])
    return scan.memo["rows"]


def _coarsest_class(scan: Scan, max_rows: int) -> int:
    """A guess ``g`` at the class to read for :func:`list_sample`: about four times the
    sample's rows. From :attr:`Scan.rows` when known; for a file, its size over the mean
    length of its first lines (a guess: only the cost depends on it, never the sample);
    else the rows counted."""
    n = scan.rows
    path = scan.params.get("ulr_path")
    if n is None and isinstance(path, str):
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as fh:
                head = fh.read(1 << 18)
            n = size / max(1.0, len(head) / max(1, head.count(b"\n")))
        except OSError:
            n = None
    if n is None:
        n = _rows(scan)
    ratio = float(n) / (4 * max(1, int(max_rows)))
    return max(0, int(np.floor(np.log2(ratio)))) if ratio > 1 else 0


_READ_CSV = ("read_csv($ulr_path, header = true, columns = $ulr_columns, delim = $ulr_delim, "
             "quote = '\"', escape = '\"', auto_detect = false, null_padding = false)")


def csv_scan(path, mapping: dict | None = None) -> Scan | None:
    """Aggregate a CSV file in place (no copy); None for a Parquet file.

    Columns are read with the loader's declared types (``schema``), so a value
    that does not parse makes the query fail (:class:`NeedsFullLoad`).
    """
    p = Path(path)
    if sniff_kind(p) != "csv":  # raises UlrError for missing/empty/binary files
        return None
    names, delim = csv_header(p)
    m = Mapping.coerce(mapping, names)  # once: plan_columns takes the Mapping as it is
    if not m.is_plain():  # derived fields
        return None  # composite keys, constants and feature patterns need the full loader
    plans = plan_columns(names, m)
    columns = {pl.stored: pl.read_type for pl in plans}
    return Scan(cur=memory_connection(), from_sql=_READ_CSV,
                params={"ulr_path": str(p), "ulr_columns": columns, "ulr_delim": delim},
                columns=tuple(columns), name=p.name, checked=False, plans=tuple(plans))


_KEY_ROLES = ("query_id", "doc_id", "position")


def file_checks_sql(scan: Scan, used) -> tuple[str, str]:
    """SQL for the schema rules of an in-place file scan, on the columns it reads.

    ``used`` names the columns the estimate reads. Only they are checked,
    with the loader's own rules: a file scan never parses the other columns
    (DuckDB's CSV reader skips the cast of a column the query does not use),
    so a stray value in a feature that position bias does not look at cannot
    block the estimate, and extra columns cost no time. ``load`` still
    checks every column.

    Returns (row-level aggregate, cell-level expressions). Rules on the group
    keys are checked once per cell, the others per row in ONE filtered count.
    That count also touches every other typed column it checks (their sum),
    because a value that does not parse must fail the query.
    """
    plans = [pl for pl in scan.plans if pl.stored in used]
    rules = schema.rule_conditions(plans)
    key_conds = [cond for pl, cond, _ in rules if pl.role in _KEY_ROLES]
    row_conds = [cond for pl, cond, _ in rules if pl.role not in _KEY_ROLES + ("click",)]
    touch = []
    for pl in plans:
        if pl.role in _KEY_ROLES + ("click",) or pl.read_type == "VARCHAR":
            continue
        col = schema.quote_ident(pl.stored)
        touch.append(f"CAST({col} AS DOUBLE)" if pl.read_type == "BOOLEAN" else col)
    if touch:
        row_conds.append(f"isnan({' + '.join(touch)})")
    row = (f", count(*) FILTER (WHERE {' OR '.join(row_conds)}) AS bad_rows" if row_conds
           else ", 0 AS bad_rows")
    cell = " OR ".join(key_conds) if key_conds else "false"
    return row, f", n - n_known AS missing_clicks, bad_rows, ({cell}) AS bad_key"


def require_table(scan: Scan, method: str) -> None:
    if not scan.checked:
        raise TypeError(f"{method} needs a stored (validated) log, not an in-place file scan")


_HEX = "0123456789abcdef"


def bucket_sql(scan: Scan) -> str:
    """Bootstrap bucket of a row's unit: the first 3 hex digits of md5(unit as text).

    Written with ``md5``, ``substr`` and ``instr`` only, which DuckDB and Spark
    compute identically, so both engines put every unit in the same bucket
    (``N_GROUPS`` = 16**3) and their bootstrap intervals agree.
    """
    h = f"md5(coalesce(CAST({scan.unit} AS STRING), ''))"
    digits = [f"(instr('{_HEX}', substr({h}, {i}, 1)) - 1)" for i in (1, 2, 3)]
    return f"CAST(256 * {digits[0]} + 16 * {digits[1]} + {digits[2]} AS BIGINT)"


def bucket_of(unit) -> int:
    """The bucket :func:`bucket_sql` gives ``unit`` (plain Python; for checks and tests)."""
    import hashlib
    return int(hashlib.md5(str(unit).encode()).hexdigest()[:3], 16)


def max_position(scan: Scan) -> int:
    """Largest position in the log."""
    (m,) = scan.execute("SELECT max(position) FROM {src}").fetchone()
    return int(m or 0)


def resolve_positions(scan: Scan, positions: int | None, available: int) -> int:
    """Number of positions K to estimate; at least 2."""
    if positions is not None and int(positions) < 2:
        raise UlrError(f"positions must be at least 2, got {int(positions)}.")
    if available < 2:
        raise UlrError(f"the log {scan.name!r} shows a single position, so there is no position "
                       "bias to estimate; it needs results at two or more positions.")
    if positions is None:
        return int(available)
    k = int(positions)
    if k > available:
        raise UlrError(f"positions = {k} asks for more positions than the log has "
                       f"(its deepest position is {available}).")
    return k


# --------------------------------------------------------------------------- cells


@dataclass(frozen=True)
class Groups:
    """Statistics split by bootstrap bucket: one entry per (bucket, cell)."""

    cell: np.ndarray  # entry -> cell index
    group: np.ndarray  # entry -> bucket 0..n_groups-1
    impressions: np.ndarray
    clicks: np.ndarray
    n_groups: int = N_GROUPS

    def totals(self, weights: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
        """Impressions and clicks per cell with bucket ``weights`` applied."""
        w = np.asarray(weights, dtype=float)[self.group]
        return (np.bincount(self.cell, self.impressions * w, minlength=n_cells),
                np.bincount(self.cell, self.clicks * w, minlength=n_cells))


@dataclass(frozen=True)
class CellStats:
    """Impressions and clicks per cell = (query-doc pair, position).

    The PBM's sufficient statistics: ``impressions[c]`` rows showed pair
    ``pair[c]`` at ``position[c]``, ``clicks[c]`` of them were clicked.
    """

    pair: np.ndarray
    position: np.ndarray  # 1..positions
    impressions: np.ndarray
    clicks: np.ndarray
    n_pairs: int
    positions: int
    groups: Groups | None = None

    @property
    def rows(self) -> int:
        return int(round(self.impressions.sum()))

    def by_position(self) -> tuple[np.ndarray, np.ndarray]:
        """Impressions and clicks per position 1..``positions`` (arrays of that length)."""
        imp = np.bincount(self.position, self.impressions, minlength=self.positions + 1)[1:]
        clk = np.bincount(self.position, self.clicks, minlength=self.positions + 1)[1:]
        return imp, clk

    def reweighted(self, weights: np.ndarray) -> "CellStats":
        """The statistics of a bootstrap replicate (bucket ``weights``)."""
        if self.groups is None:
            raise ValueError("these statistics were collected without bootstrap buckets")
        imp, clk = self.groups.totals(weights, len(self.pair))
        return CellStats(pair=self.pair, position=self.position, impressions=imp, clicks=clk,
                         n_pairs=self.n_pairs, positions=self.positions)


def cell_order(pair, pos, positions: int, grp=None) -> np.ndarray:
    """Indices that put cell rows in one order: by pair, then position, then bucket.

    An aggregate query returns its groups in an order that depends on the
    engine's threads. Every sum over cells (an EM step, a likelihood) would
    then differ in its last bits from run to run; in this order it does not.
    """
    key = np.asarray(pair, dtype=np.int64) * positions + (np.asarray(pos, dtype=np.int64) - 1)
    if grp is not None:
        key = key * N_GROUPS + np.asarray(grp, dtype=np.int64)
    span = int(key.max()) + 1 if len(key) else 0
    if span > 4 * len(key):
        return np.argsort(key)  # keys are unique, so any sort gives the same order
    slot = np.full(span, -1, dtype=np.int64)  # dense keys: place each row at its key
    slot[key] = np.arange(len(key))
    return slot[slot >= 0]


def make_cells(pair, pos, n, c, *, n_pairs: int, positions: int, grp=None) -> CellStats:
    """:class:`CellStats` from cell rows, in :func:`cell_order`.

    With ``grp`` (one bootstrap bucket per row) the rows are per (bucket, cell);
    they are summed per cell and the bucket layout is kept for the replicates.
    """
    order = cell_order(pair, pos, positions, grp)
    pair, pos, n, c = pair[order], pos[order], n[order], c[order]
    if grp is None:
        return CellStats(pair=pair, position=pos, impressions=n, clicks=c, n_pairs=n_pairs,
                         positions=positions)
    key = pair * positions + (pos - 1)  # ascending in this order: its runs are the cells
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    uniq, inv = key[first], np.cumsum(first) - 1  # np.unique's, without sorting again
    groups = Groups(cell=inv.astype(np.int64), group=np.asarray(grp, dtype=np.int64)[order],
                    impressions=n, clicks=c)
    return CellStats(pair=uniq // positions, position=uniq % positions + 1,
                     impressions=np.bincount(inv, n, minlength=len(uniq)),
                     clicks=np.bincount(inv, c, minlength=len(uniq)),
                     n_pairs=n_pairs, positions=positions, groups=groups)


def cell_stats(scan: Scan, *, positions: int | None = None, groups: bool = False
               ) -> CellStats:
    """Impressions and clicks per (query, doc, position): one aggregate query.

    Parameters
    ----------
    scan : Scan
    positions : int, optional
        Keep positions 1..K (default: all; at least 2 must exist).
    groups : bool
        Also split by bootstrap bucket (see the module docstring).

    The statement::

        WITH cells AS (
          SELECT [bucket,] query_id, doc_id, position, count(*) AS n,
                 sum(CAST(click AS INTEGER)) AS c
          FROM log [WHERE position <= K] GROUP BY [bucket,] query_id, doc_id, position)
        SELECT [bucket,] dense_rank() OVER (ORDER BY query_id, doc_id) - 1 AS pair,
               position, n, c FROM cells

    With :attr:`Scan.keys_sql` (ids the files store as integers) the cells group on the
    integers and the window orders by ``CAST(query_id AS STRING), CAST(doc_id AS STRING)``:
    the same cells and pair numbers, one cast per cell instead of one per row.
    """
    if scan.cells is not None:
        return scan.cells(positions, groups)
    grp_key = "grp, " if groups else ""
    params = {}
    where = ""
    if scan.checked and positions is not None:  # a file scan filters after validation
        where = "WHERE position <= $ulr_k"
        params["ulr_k"] = int(positions)
    used = set(_KEY_ROLES) | {"click"} | ({scan.unit} if groups else set())
    row_checks, checks = file_checks_sql(scan, used) if not scan.checked else ("", "")
    # ids the files store as integers are grouped as they are and ordered by their text, the
    # order (and so the pair numbers) the typed rows give; a file scan has no such ids
    src = "{keys}" if scan.keys_sql and scan.checked else "{src}"
    order = ("CAST(query_id AS STRING), CAST(doc_id AS STRING)" if src == "{keys}"
             else "query_id, doc_id")
    grp_col = f", {bucket_sql(scan)} AS grp" if groups else ""

    def cells(source: str | None = None, extra: str = "", sets: str = "") -> str:
        """The aggregate; a ride-along (:func:`_cells_with_sample`) reads rows from
        ``source`` (the default's columns and more), returns ``extra`` columns and groups
        them as one more grouping set (``sets``)."""
        if source is None:
            source = f"(SELECT *{grp_col} FROM {src})" if grp_col else src
        group = f"{grp_key}query_id, doc_id, position"
        if sets:
            group = f"GROUPING SETS (({group}), ({sets}))"
        return (f"WITH cells AS (SELECT {grp_key}query_id, doc_id, position, count(*) AS n, "
                f"count(click) AS n_known, sum(CAST(click AS INTEGER)) AS c{row_checks}"
                f"{extra} FROM {source} AS t {where} GROUP BY {group}) ")
    select = (f"SELECT {grp_key}dense_rank() OVER (ORDER BY {order}) - 1 AS pair, "
              f"position, n, c{checks} FROM cells")
    ride = scan.memo.get(RIDE)
    if (ride and not scan.checked and scan.from_sql == _READ_CSV
            and ("list-sample", int(ride)) not in scan.memo):
        res = _cells_with_sample(scan, cells, select, params, int(ride), grp_col, src)
    else:
        res = scan.execute(cells() + select, params).fetchnumpy()
    if not scan.checked:
        refuse_bad_rows(res)
    return cells_from(res, scan, positions=positions, groups=groups)


def _cells_with_sample(scan: Scan, cells, select: str, params: dict, cap: int,
                       grp_col: str, src: str) -> dict:
    """The rows of :func:`cell_stats`' statement (``cells``: its aggregate; ``select``: what
    it returns), with the class of :func:`list_sample` (cap ``cap``) read in the same pass
    over the file, as one more grouping set: the class's rows with their
    :data:`SAMPLE_COLUMNS` (every other row falls in one group of NULLs, dropped). Both go
    to a temporary table, and the cells and the class's rows are read off it, with the
    values and types their own statements give. Kept in :attr:`Scan.memo` for
    :func:`list_sample`."""
    g = _coarsest_class(scan, cap)
    cols = [c for c in SAMPLE_COLUMNS if scan.has(c)]
    # column names: SAMPLE_COLUMNS and the scan's unit, constants; the table's name, digits
    keyed = (f"(SELECT *{grp_col}, hash({scan.unit}) AS ulr_h0, "
             f"hash({scan.unit}) % $ulr_smod = 0 AS ulr_k FROM {src})")
    masked = ", ".join(f"CASE WHEN ulr_k THEN {c} END AS s_{c}" for c in cols + ["ulr_h0"])
    source = f"(SELECT *, {masked} FROM {keyed})"
    s_cols = [f"s_{c}" for c in cols + ["ulr_h0"]]
    extra = ", " + ", ".join(s_cols) + ", grouping(query_id) AS ulr_set"
    table = f"ulr_cells_{id(scan)}"
    try:
        scan.execute(f"CREATE TEMP TABLE {table} AS "
                     f"{cells(source, extra, ', '.join(s_cols))}SELECT * FROM cells",
                     {**params, "ulr_smod": 2 ** g})
        res = scan.cur.execute(select.replace(
            " FROM cells", f" FROM (SELECT * FROM {table} WHERE ulr_set = 0) AS cells")
        ).fetchnumpy()
        total = scan.cur.execute(f"SELECT sum(n) FROM {table} WHERE ulr_set = 0").fetchone()[0]
        if int(total or 0) <= cap:  # every row fits
            scan.memo[("list-sample", cap)] = (scan, False)
            return res
        got = scan.cur.execute(f"SELECT s_ulr_h0, n FROM {table} WHERE ulr_set = 1 AND "
                               "s_ulr_h0 IS NOT NULL").fetchnumpy()
        j = _smallest_class(_bits(got["s_ulr_h0"]), np.asarray(got["n"], dtype=np.int64), g,
                            cap)
        if j is None:  # the guess was too coarse: list_sample reads its own pass
            return res
        sel = ", ".join(f"s_{c} AS {c}" for c in cols)
        in_class = "s_ulr_h0 % $m = 0" if j < 64 else "s_ulr_h0 = $m"  # 2**64: no UBIGINT
        rows = scan.cur.execute(f"SELECT {sel}, n FROM {table} WHERE ulr_set = 1 AND "
                                f"{in_class}", {"m": 2 ** j if j < 64 else 0}).fetchdf()
    finally:
        scan.cur.execute(f"DROP TABLE IF EXISTS {table}")
    # identical rows were grouped: as many again as they were
    rows = rows.loc[rows.index.repeat(rows.pop("n").to_numpy())]
    scan.memo[("list-sample", cap)] = (_held(scan, rows), True)
    return res


def refuse_bad_rows(res: dict) -> None:
    """Raise :class:`NeedsFullLoad` when :func:`file_checks_sql`' columns flag any cell."""
    if (np.any(np.asarray(res["missing_clicks"]) > 0) or np.any(np.asarray(res["bad_key"]))
            or np.any(np.asarray(res["bad_rows"]) > 0)):
        raise NeedsFullLoad("rows that break the schema")


def cells_from(res: dict, scan, *, positions: int | None, groups: bool) -> CellStats:
    """:class:`CellStats` from the rows of the cell query (``[grp,] pair, position, n, c``).

    Shared by :func:`cell_stats` and the merged per-partition statistics of
    :mod:`ulr.engines.incremental`; ``scan`` only names the log in messages.
    """
    pair = np.asarray(res["pair"], dtype=np.int64)
    pos = np.asarray(res["position"]).astype(np.int64)
    n = np.asarray(res["n"], dtype=float)
    c = np.nan_to_num(np.asarray(res["c"], dtype=float))
    if len(pos) == 0:
        raise UlrError(f"the log {scan.name!r} has no rows to estimate from.")
    k = resolve_positions(scan, positions, int(pos.max()))
    keep = pos <= k
    if not keep.all():
        pair, pos, n, c = pair[keep], pos[keep], n[keep], c[keep]
        if groups:
            res = {"grp": np.asarray(res["grp"])[keep]}
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    grp = np.asarray(res["grp"], dtype=np.int64) if groups else None
    return make_cells(pair, pos, n, c, n_pairs=n_pairs, positions=k, grp=grp)
