"""Click logs in DuckDB: atomic, validated loads and a small catalog.

One DuckDB connection per process and database file, cached; every caller
(session, thread) works on its own ``cursor()``. A load reads the file with
declared column types, validates the schema rules, and publishes the table
and its catalog row in one transaction, so a refused or failed load leaves
every stored dataset exactly as it was.

Dataset names are user text: they are stored verbatim and only ever bound as
values. Table names are generated (``ds_<hex>``) and checked against an
allow-list before they reach SQL.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from ulr import schema
from ulr.errors import UlrError

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
DEFAULT_DB = DATA_DIR / "ulr.duckdb"
SAMPLE_CSV = DATA_DIR / "sample_clicks.csv"
SAMPLE_NAME = "sample"
MEMORY_LIMIT = os.environ.get("ULR_MEMORY_LIMIT", "4GB")

_TABLE_RE = re.compile(r"^(ds|rj)_[0-9a-f]{16}$")
_MAX_NAME = 200
_FIRST_LINES = 5

_connections: dict[str, duckdb.DuckDBPyConnection] = {}
_conn_lock = threading.Lock()
_write_lock = threading.Lock()

_CATALOG_DDL = """
CREATE TABLE IF NOT EXISTS ulr_catalog (
    name VARCHAR PRIMARY KEY,
    table_name VARCHAR NOT NULL,
    rows BIGINT NOT NULL,
    source VARCHAR,
    content_hash VARCHAR,
    loaded_at TIMESTAMP,
    mapping VARCHAR,
    columns VARCHAR,
    rejected BIGINT,
    rejects_table VARCHAR
)
"""


def default_db_path() -> str:
    return os.environ.get("ULR_DB") or str(DEFAULT_DB)


def _table(name: str) -> str:
    """Allow-list check for generated table names."""
    if not isinstance(name, str) or not _TABLE_RE.match(name):
        raise ValueError(f"not a ulr table name: {name!r}")
    return name


def quote_ident(ident: str) -> str:
    """Quote an identifier that was checked against the file's own columns."""
    return '"' + str(ident).replace('"', '""') + '"'


def connection(db_path: str | os.PathLike | None = None) -> duckdb.DuckDBPyConnection:
    """The process-wide connection to ``db_path`` (created on first use)."""
    path = str(db_path or default_db_path())
    key = path if path == ":memory:" else str(Path(path).resolve())
    with _conn_lock:
        con = _connections.get(key)
        if con is not None:
            return con
        if key == ":memory:":
            tmp = _process_tmp()
        else:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            tmp = str(Path(key).parent / "duckdb_tmp")
        try:
            con = duckdb.connect(key, config={"memory_limit": MEMORY_LIMIT,
                                              "temp_directory": tmp})
        except duckdb.IOException as exc:
            raise UlrError(f"cannot open the database {path}: {_first_line(exc)}") from None
        except duckdb.Error as exc:
            raise UlrError(f"{path} is not a usable DuckDB database: {_first_line(exc)}") from None
        con.execute(_CATALOG_DDL)
        _connections[key] = con
        return con


@contextlib.contextmanager
def catalog(db_path: str | os.PathLike | None = None, *, write: bool = False,
            on_wait=None, timeout: float | None = None):
    """A connection to the store's catalog database, held only for the ``with`` block.

    Everything that lives beside the datasets (their catalog rows, saved reports,
    registered sources) is read and written through this one door, so that the
    store can be shared by the dashboard, the CLI and several processes.
    ``write=True`` asks for exclusive access for the block; ``on_wait(seconds)``
    is called while another writer holds it; after ``timeout`` seconds an
    :class:`UlrError` says that the store is busy.
    """
    if write:
        with _write_lock:
            yield cursor(db_path)
    else:
        yield cursor(db_path)


def _process_tmp() -> str:
    """One spill directory per process for in-memory databases."""
    path = Path(tempfile.gettempdir()) / f"ulr_duckdb_{os.getpid()}"
    path.mkdir(exist_ok=True)
    return str(path)


def cursor(db_path: str | os.PathLike | None = None) -> duckdb.DuckDBPyConnection:
    """A new cursor on the cached connection: one per session or thread."""
    return connection(db_path).cursor()


def new_memory_cursor() -> duckdb.DuckDBPyConnection:
    """A private in-memory database (for ``--input`` files)."""
    con = duckdb.connect(":memory:", config={"memory_limit": MEMORY_LIMIT,
                                              "temp_directory": _process_tmp()})
    con.execute(_CATALOG_DDL)
    return con


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# --------------------------------------------------------------------------- catalog


@dataclass(frozen=True)
class DatasetInfo:
    """One catalog row."""

    name: str
    table: str
    rows: int
    source: str | None = None
    content_hash: str | None = None
    loaded_at: object = None
    mapping: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)  # stored name -> source name
    rejected: int = 0
    rejects_table: str | None = None

    @property
    def stored_columns(self) -> list[str]:
        return list(self.columns)

    @property
    def features(self) -> list[str]:
        return [c for c in self.columns if c.startswith(schema.FEATURE_PREFIX)]

    def has(self, column: str) -> bool:
        return column in self.columns

    @property
    def facts(self) -> "schema.LogFacts":
        """Facts declared when the log was loaded (randomized, per-slot propensities, ...)."""
        return schema.LogFacts.from_mapping(self.mapping)


def _row_to_info(row) -> DatasetInfo:
    (name, table, rows, source, h, loaded, mapping, columns, rejected, rtable) = row
    return DatasetInfo(name=name, table=_table(table), rows=int(rows), source=source,
                       content_hash=h, loaded_at=loaded, mapping=json.loads(mapping or "{}"),
                       columns=json.loads(columns or "{}"), rejected=int(rejected or 0),
                       rejects_table=rtable)


_CAT_COLS = ("name, table_name, rows, source, content_hash, loaded_at, mapping, columns, "
             "rejected, rejects_table")


def list_datasets(cur) -> list[DatasetInfo]:
    rows = cur.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog ORDER BY loaded_at, name").fetchall()
    return [_row_to_info(r) for r in rows]


def get_dataset(cur, name: str) -> DatasetInfo:
    row = cur.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?", [name]).fetchone()
    if row is None:
        known = [d.name for d in list_datasets(cur)]
        hint = f" Stored datasets: {', '.join(repr(k) for k in known[:10])}." if known else \
            " No datasets are stored yet; load one first."
        raise UlrError(f"there is no dataset named {name!r}.{hint}")
    return _row_to_info(row)


def _check_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UlrError("a dataset name must not be empty.")
    if len(name) > _MAX_NAME:
        raise UlrError(f"a dataset name may have at most {_MAX_NAME} characters.")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise UlrError("a dataset name must not contain control characters.")
    return name


def rename_dataset(cur, old: str, new: str) -> None:
    _check_name(new)
    with _write_lock:
        get_dataset(cur, old)
        if old == new:
            return
        if cur.execute("SELECT 1 FROM ulr_catalog WHERE name = ?", [new]).fetchone():
            raise UlrError(f"a dataset named {new!r} exists already.")
        cur.execute("UPDATE ulr_catalog SET name = ? WHERE name = ?", [new, old])


def delete_dataset(cur, name: str) -> None:
    with _write_lock:
        info = get_dataset(cur, name)
        cur.execute("BEGIN TRANSACTION")
        try:
            cur.execute(f"DROP TABLE IF EXISTS {_table(info.table)}")
            if info.rejects_table:
                cur.execute(f"DROP TABLE IF EXISTS {_table(info.rejects_table)}")
            cur.execute("DELETE FROM ulr_catalog WHERE name = ?", [name])
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise


def rejected_rows(cur, name: str) -> pd.DataFrame:
    """The rows skipped when ``name`` was loaded with skip-bad-rows."""
    info = get_dataset(cur, name)
    if not info.rejects_table:
        return pd.DataFrame(columns=["line", "column", "problem", "raw"])
    return cur.execute(
        f"SELECT line, \"column\", problem, raw FROM {_table(info.rejects_table)} ORDER BY line"
    ).df()


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class LoadResult:
    dataset: str
    rows: int
    rejected: int
    info: DatasetInfo
    rejected_rows: pd.DataFrame


def file_hash(path: str | os.PathLike, extra: str = "") -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    h.update(extra.encode())
    return h.hexdigest()


def sniff_kind(path: Path) -> str:
    if not path.exists():
        raise UlrError(f"file not found: {path}.")
    if not path.is_file():
        raise UlrError(f"{path} is not a file.")
    if path.stat().st_size == 0:
        raise UlrError(f"{path.name} is empty: a click log needs a header and at least one row.")
    with open(path, "rb") as fh:
        head = fh.read(65536)
    if head[:4] == b"PAR1":
        return "parquet"
    if b"\x00" in head:
        raise UlrError(f"{path.name} looks like a binary file, not a CSV or Parquet click log.")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a cut multi-byte character
            raise UlrError(f"{path.name} is not UTF-8 text (bad byte at offset {exc.start}); "
                           "save it as UTF-8 CSV.") from None
    if not head.strip():
        raise UlrError(f"{path.name} is empty: a click log needs a header and at least one row.")
    return "csv"


def csv_header(path: Path) -> tuple[list[str], str]:
    """Column names from the first record, and the delimiter.

    Read here rather than by DuckDB's sniffer, which can mistake a ragged
    row for the header.
    """
    with open(path, "r", encoding="utf-8", errors="replace", newline="") as fh:
        sample = fh.read(65536)
    first = sample.splitlines()[0] if sample.splitlines() else ""
    delim = ","
    if first.count(",") == 0:
        counts = {d: first.count(d) for d in (";", "\t", "|")}
        best = max(counts, key=counts.get)
        if counts[best] > 0:
            delim = best
    header = next(csv.reader(io.StringIO(sample), delimiter=delim), [])
    if not header or all(not h.strip() for h in header):
        raise UlrError(f"{path.name} has no header row.")
    names, seen = [], set()
    for i, h in enumerate(header):
        base = h.strip() or f"unnamed_{i}"
        n, k = base, 2
        while n in seen:
            n, k = f"{base}_{k}", k + 1
        seen.add(n)
        names.append(n)
    return names, delim


def _source_columns(cur, path: Path, kind: str) -> tuple[list[str], str | None]:
    if kind == "csv":
        return csv_header(path)
    try:
        desc = cur.execute("SELECT * FROM read_parquet(?) LIMIT 0", [str(path)]).description
    except duckdb.Error as exc:
        raise UlrError(f"cannot read {path.name} as Parquet: {_first_line(exc)}") from None
    return [d[0] for d in desc], None


# Rule checks on the staged (typed) table: (role, SQL condition for a bad row, problem).
def schema_rules(plans: list[schema.ColumnPlan]):
    out = []
    for p in plans:
        c = quote_ident(p.stored)
        if p.role in ("query_id", "doc_id"):
            out.append((p, f"({c} IS NULL OR trim({c}) = '')", "missing value"))
        elif p.role == "position":
            out.append((p, f"({c} IS NULL OR NOT isfinite({c}) OR {c} < 1 OR {c} <> floor({c}))",
                        "must be an integer >= 1"))
        elif p.role == "click":
            out.append((p, f"({c} IS NULL)", "must be 0/1 or true/false"))
        elif p.role == "relevance":
            out.append((p, f"({c} IS NOT NULL AND (NOT isfinite({c}) OR {c} < 0 "
                           f"OR {c} <> floor({c})))", "must be an integer >= 0"))
        elif p.role == "propensity":
            out.append((p, f"({c} IS NOT NULL AND (isnan({c}) OR {c} <= 0 OR {c} > 1))",
                        "must lie in (0, 1]"))
    return out


def _lines_of_rows(rowids: np.ndarray, reject_lines: np.ndarray) -> np.ndarray:
    """CSV line numbers of staged rows (header = line 1), skipping rejected lines."""
    r = np.sort(np.asarray(reject_lines, dtype=np.int64))
    if len(r) == 0:
        return rowids + 2
    k = np.searchsorted(r - np.arange(len(r)) - 2, rowids, side="right")
    return rowids + 2 + k


def load_log(path: str | os.PathLike, name: str, *, cur=None, db_path=None,
             mapping: dict | None = None, skip_bad_rows: bool = False,
             replace: bool = False, source_name: str | None = None,
             _view: bool = False) -> LoadResult:
    """Validate a CSV/Parquet click log and store it as dataset ``name``.

    Parameters
    ----------
    path : file to read (CSV with a header row, or Parquet).
    name : dataset name (any text; stored verbatim).
    cur : DuckDB cursor to use; default: a new cursor on ``db_path``.
    mapping : ``{canonical: source column}``; unmapped columns are auto-detected.
    skip_bad_rows : load the valid rows and keep the bad ones for download,
        instead of refusing the file.
    replace : replace an existing dataset of the same name (atomically).
    source_name : file name to record (default: the path's name).

    Raises
    ------
    UlrError
        For any problem with the file, the mapping or the name. Nothing is
        stored then.
    """
    _check_name(name)
    p = Path(path)
    kind = sniff_kind(p)
    cur = cur if cur is not None else cursor(db_path)
    columns, delim = _source_columns(cur, p, kind)
    plans = schema.plan_columns(columns, mapping)
    used_mapping = schema.Mapping.coerce(mapping, columns).stored(plans)  # byol (#11)
    schema.check_feature_values(p, kind, delim, plans)  # byol (#11)
    extra = json.dumps([used_mapping, bool(skip_bad_rows)], sort_keys=True)
    if _view:  # a one-off CLI read: identify the file by path, size and mtime (no full hash)
        st_ = p.stat()
        content_hash = hashlib.sha256(
            f"{p.resolve()}|{st_.st_size}|{st_.st_mtime_ns}|{extra}".encode()).hexdigest()
    else:
        content_hash = file_hash(p, extra)
    shown = source_name or p.name

    if not replace and cur.execute("SELECT 1 FROM ulr_catalog WHERE name = ?", [name]).fetchone():
        raise UlrError(f"a dataset named {name!r} exists already; choose another name or "
                       "replace it.")

    stg = _table("ds_" + uuid.uuid4().hex[:16])
    rj = _table("rj_" + uuid.uuid4().hex[:16])
    keep = False
    try:
        res = _stage_validate_publish(cur, p, kind, delim, plans, stg, rj, name, shown,
                                      content_hash, used_mapping, skip_bad_rows, replace, _view)
        keep = _view
        return res
    finally:
        if not keep:
            try:
                cur.execute(f"DROP TABLE IF EXISTS temp.{stg}")
            except duckdb.Error:
                pass


def _stage_validate_publish(cur, p, kind, delim, plans, stg, rj, name, shown, content_hash,
                            used_mapping, skip_bad_rows, replace, view) -> LoadResult:
    reject_lines = np.empty(0, dtype=np.int64)
    cast_rejects = pd.DataFrame(columns=["line", "column", "problem", "raw"])
    if kind == "csv":
        types = {pl.stored: pl.read_type for pl in plans}
        try:
            cur.execute(
                f"CREATE TEMP TABLE {stg} AS SELECT * FROM read_csv(?, header = true, columns = ?, "
                "delim = ?, quote = '\"', escape = '\"', auto_detect = false, "
                "ignore_errors = true, store_rejects = true, rejects_table = 'ulr_rejects', "
                "rejects_scan = 'ulr_reject_scans', null_padding = false)",
                [str(p), types, delim])
        except duckdb.Error as exc:
            raise UlrError(f"cannot read {shown} as CSV: {_first_line(exc)}") from None
        rej = cur.execute(
            "SELECT line, column_name, error_type, csv_line FROM ulr_rejects "
            "WHERE scan_id = (SELECT max(scan_id) FROM ulr_rejects) ORDER BY line").df()
        if len(rej):
            by_stored = {pl.stored: pl.source for pl in plans}
            role_of = {pl.stored: pl.role for pl in plans}
            rule_text = {"query_id": "missing value", "doc_id": "missing value",
                         "position": "must be an integer >= 1",
                         "click": "must be 0/1 or true/false",
                         "session_id": "not text", "randomized": "must be 0/1 or true/false",
                         "relevance": "must be an integer >= 0",
                         "propensity": "must lie in (0, 1]", "feature": "must be a number"}
            etype = rej["error_type"].astype(str)
            is_cast = (etype == "CAST").to_numpy()
            cast_problem = rej["column_name"].map(
                lambda c: rule_text.get(role_of.get(c, ""), "not a valid value"))
            other = np.where(etype.isin(["MISSING COLUMNS", "TOO MANY COLUMNS"]),
                             "wrong number of fields (ragged row)",
                             etype.str.lower().str.replace("_", " "))
            cast_rejects = pd.DataFrame({
                "line": rej["line"].astype("int64"),
                "column": np.where(is_cast, rej["column_name"].map(
                    lambda c: by_stored.get(c, c)), "(whole row)"),
                "problem": np.where(is_cast, cast_problem, other),
                "raw": rej["csv_line"].astype(str),
            }).drop_duplicates("line")
            reject_lines = cast_rejects["line"].to_numpy(dtype=np.int64)
    else:
        select = []
        for pl in plans:
            src = quote_ident(pl.source)  # source is one of the file's own column names
            if pl.role == "click" or pl.role == "randomized":
                expr = (f"CASE WHEN lower(CAST({src} AS VARCHAR)) IN ('1', 'true', '1.0') "
                        f"THEN true WHEN lower(CAST({src} AS VARCHAR)) IN ('0', 'false', '0.0') "
                        "THEN false END")
            elif pl.read_type == "VARCHAR":
                expr = f"CAST({src} AS VARCHAR)"
            else:
                expr = f"TRY_CAST({src} AS {pl.read_type})"
            select.append(f"{expr} AS {quote_ident(pl.stored)}")
        try:
            cur.execute(f"CREATE TEMP TABLE {stg} AS SELECT {', '.join(select)} FROM read_parquet(?)",
                        [str(p)])
        except duckdb.Error as exc:
            raise UlrError(f"cannot read {shown} as Parquet: {_first_line(exc)}") from None

    staged = cur.execute(f"SELECT count(*) FROM temp.{stg}").fetchone()[0]
    rules = schema_rules(plans)
    if rules:
        counts = cur.execute(
            "SELECT " + ", ".join(f"count(*) FILTER (WHERE {cond})" for _, cond, _ in rules)
            + f" FROM temp.{stg}").fetchone()
    else:
        counts = ()
    problems = []  # (source column, count, first lines, problem)
    rule_rows = []
    for (pl, cond, what), n in zip(rules, counts):
        if not n:
            continue
        ids = cur.execute(f"SELECT rowid FROM temp.{stg} WHERE {cond} ORDER BY rowid LIMIT ?",
                          [_FIRST_LINES]).fetchnumpy()["rowid"]
        lines = _lines_of_rows(np.asarray(ids, dtype=np.int64), reject_lines) \
            if kind == "csv" else np.asarray(ids, dtype=np.int64) + 1
        problems.append((pl.source, pl.role, int(n), lines.tolist(), what))
    if len(cast_rejects):
        role_by_source = {pl.source: pl.role for pl in plans}
        for (col, what), grp in cast_rejects.groupby(["column", "problem"], sort=False):
            problems.append((col, role_by_source.get(col, col), len(grp),
                             grp["line"].head(_FIRST_LINES).tolist(), what))
    bad_total = len(cast_rejects) + (
        cur.execute(f"SELECT count(*) FROM temp.{stg} WHERE "
                    + " OR ".join(cond for _, cond, _ in rules)).fetchone()[0]
        if problems and rules else 0)
    where_ok = " AND ".join(f"NOT {cond}" for _, cond, _ in rules) or "true"

    unit = "line" if kind == "csv" else "row"
    if problems and not skip_bad_rows:
        merged: dict = {}
        for src, role, n, lines, what in problems:
            m = merged.setdefault((src, what), [role, 0, []])
            m[1] += n
            m[2] = sorted(m[2] + lines)[:_FIRST_LINES]
        parts = []
        for (src, what), (role, n, lines) in sorted(merged.items(), key=lambda kv: kv[1][2][0]):
            where = f"first at {unit}{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"
            if src == "(whole row)":
                parts.append(f"{n} row{'s' if n != 1 else ''} with the {what}, {where}")
                continue
            label = f"column {src!r}" + (f" ({role})" if role != src and role in
                                         schema.CANONICAL else "")
            parts.append(f"{label}: {n} bad value{'s' if n != 1 else ''} ({what}), {where}")
        raise UlrError(f"refused {shown}: {'; '.join(parts)}. {bad_total} of "
                       f"{staged + len(cast_rejects)} rows are bad and nothing was stored; "
                       "fix the file, or load with --skip-bad-rows to keep the valid rows.")
    good = staged - (bad_total - len(cast_rejects))
    if good <= 0:
        if staged == 0 and not len(cast_rejects):
            raise UlrError(f"{shown} has a header but no data rows; nothing was stored.")
        raise UlrError(f"{shown} has no valid data rows; nothing was stored.")

    # Rejected rows kept for download.
    rejected_df = cast_rejects
    if problems and rules:
        cols = ", ".join(quote_ident(pl.stored) for pl in plans)
        bad = cur.execute(f"SELECT rowid AS _rid, {cols} FROM temp.{stg} WHERE NOT ({where_ok}) "
                          "ORDER BY rowid").df()
        rid = bad.pop("_rid").to_numpy(dtype=np.int64)
        lines = _lines_of_rows(rid, reject_lines) if kind == "csv" else rid + 1
        raw = bad.astype(str).agg(",".join, axis=1) if len(bad) else pd.Series([], dtype=str)
        rule_df = pd.DataFrame({"line": lines, "column": "", "problem": "schema rule",
                                "raw": raw.to_numpy()})
        # Name the first broken rule per row.
        names = np.full(len(bad), "", dtype=object)
        whats = np.full(len(bad), "", dtype=object)
        for pl, cond, what in reversed(rules):
            ids = cur.execute(f"SELECT rowid FROM temp.{stg} WHERE {cond}").fetchnumpy()["rowid"]
            hit = np.isin(rid, np.asarray(ids, dtype=np.int64))
            names[hit] = pl.source
            whats[hit] = what
        rule_df["column"] = names
        rule_df["problem"] = whats
        rejected_df = pd.concat([cast_rejects, rule_df], ignore_index=True).sort_values("line")
    rejected_df = rejected_df.reset_index(drop=True)[["line", "column", "problem", "raw"]]
    rejected_df = rejected_df.astype({"line": "int64", "column": str, "problem": str,
                                      "raw": str})

    # Publish atomically: the final table in storage types, rejects, catalog row.
    final = _table("ds_" + uuid.uuid4().hex[:16])
    select = []
    for pl in plans:
        c = quote_ident(pl.stored)
        store_type = schema.STORE_TYPES.get(pl.role)
        select.append(f"CAST({c} AS {store_type}) AS {c}" if store_type else c)
    columns_json = {pl.stored: pl.source for pl in plans}
    for stored, expr, label in schema.derived_columns(used_mapping, plans):  # byol (#11)
        select.append(f"{expr} AS {quote_ident(stored)}")
        columns_json[stored] = label
    columns_json = json.dumps(columns_json)
    if view:  # private in-memory read: no copy, a typed view over the staged rows
        if len(rejected_df) and rules:
            cur.execute(f"DELETE FROM temp.{stg} WHERE NOT ({where_ok})")
        cur.execute(f"CREATE TEMP VIEW {final} AS SELECT {', '.join(select)} FROM temp.{stg}")
        info = DatasetInfo(name=name, table=final, rows=int(good), source=shown,
                           content_hash=content_hash, mapping=used_mapping,
                           columns=json.loads(columns_json), rejected=int(len(rejected_df)))
        return LoadResult(dataset=name, rows=int(good), rejected=int(len(rejected_df)),
                          info=info, rejected_rows=rejected_df)
    with _write_lock:
        cur.execute("BEGIN TRANSACTION")
        try:
            # Insertion order is preserved, so rows keep the file's order.
            cur.execute(f"CREATE TABLE {final} AS SELECT {', '.join(select)} FROM temp.{stg} "
                        f"WHERE {where_ok}")
            rtable = None
            if len(rejected_df):
                rtable = rj
                cur.execute(f"CREATE TABLE {rj} (line BIGINT, \"column\" VARCHAR, "
                            "problem VARCHAR, raw VARCHAR)")
                cur.register("ulr_rejected_df", rejected_df)
                cur.execute(f"INSERT INTO {rj} SELECT * FROM ulr_rejected_df")
                cur.unregister("ulr_rejected_df")
            if replace:
                old = cur.execute("SELECT table_name, rejects_table FROM ulr_catalog "
                                  "WHERE name = ?", [name]).fetchone()
                if old is not None:
                    cur.execute(f"DROP TABLE IF EXISTS {_table(old[0])}")
                    if old[1]:
                        cur.execute(f"DROP TABLE IF EXISTS {_table(old[1])}")
                    cur.execute("DELETE FROM ulr_catalog WHERE name = ?", [name])
            try:
                cur.execute("INSERT INTO ulr_catalog VALUES (?, ?, ?, ?, ?, now(), ?, ?, ?, ?)",
                            [name, final, int(good), shown, content_hash,
                             json.dumps(used_mapping), columns_json, int(len(rejected_df)),
                             rtable])
            except duckdb.ConstraintException:
                raise UlrError(f"a dataset named {name!r} exists already; choose another "
                               "name.") from None
            info = _row_to_info(cur.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog "
                                            "WHERE name = ?", [name]).fetchone())
            cur.execute("COMMIT")
        except BaseException:
            try:
                cur.execute("ROLLBACK")
            except duckdb.Error:
                pass
            raise
    return LoadResult(dataset=name, rows=int(good), rejected=int(len(rejected_df)), info=info,
                      rejected_rows=rejected_df)


# --------------------------------------------------------------------------- reading


@dataclass
class Log:
    """A stored click log ready for computation.

    ``table`` is a validated identifier and the only text that may be pasted
    into SQL; bind every value.
    """

    cur: object
    table: str
    info: DatasetInfo

    def __post_init__(self):
        _table(self.table)

    def df(self, columns: list[str] | None = None) -> pd.DataFrame:
        if columns is None:
            cols = "*"
        else:
            unknown = [c for c in columns if c not in self.info.columns]
            if unknown:
                raise UlrError(f"dataset {self.info.name!r} has no column "
                               f"{', '.join(map(repr, unknown))}.")
            cols = ", ".join(quote_ident(schema.safe_ident(c)) for c in columns)
        return self.cur.execute(f"SELECT {cols} FROM {self.table}").df()

    def true_theta(self) -> np.ndarray | None:
        """True absolute theta per position, when the log records it."""
        if "true_theta" not in self.info.columns:
            return None
        rows = self.cur.execute(
            f"SELECT position, avg(TRY_CAST(true_theta AS DOUBLE)) FROM {self.table} "
            "GROUP BY position ORDER BY position").fetchall()
        if not rows or any(v is None for _, v in rows):
            return None
        pos = np.array([r[0] for r in rows])
        if not np.array_equal(pos, np.arange(1, len(pos) + 1)):
            return None
        return np.array([r[1] for r in rows], dtype=float)


def open_dataset(name: str, db_path=None, *, cur=None) -> Log:
    cur = cur if cur is not None else cursor(db_path)
    info = get_dataset(cur, name)
    return Log(cur=cur, table=info.table, info=info)


def open_file(path, mapping: dict | None = None, *, skip_bad_rows: bool = False) -> Log:
    """Load a file into a private in-memory database and open it."""
    cur = new_memory_cursor()
    name = Path(path).name or "input"
    res = load_log(path, name, cur=cur, mapping=mapping, skip_bad_rows=skip_bad_rows, _view=True)
    return Log(cur=cur, table=res.info.table, info=res.info)


def ensure_sample(db_path=None, *, cur=None) -> DatasetInfo:
    """Store the bundled sample log as dataset 'sample' if it is missing."""
    cur = cur if cur is not None else cursor(db_path)
    row = cur.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?",
                      [SAMPLE_NAME]).fetchone()
    if row is not None:
        return _row_to_info(row)
    try:
        return load_log(SAMPLE_CSV, SAMPLE_NAME, cur=cur).info
    except UlrError:
        row = cur.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?",
                          [SAMPLE_NAME]).fetchone()
        if row is None:  # not a lost race with another session
            raise
        return _row_to_info(row)


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


def ctr_by_position(log: Log, *, z: float = 1.96) -> pd.DataFrame:
    """CTR per position with Wilson score intervals (binomial)."""
    df = log.cur.execute(
        f"SELECT position, count(*) AS impressions, sum(click::INT) AS clicks "
        f"FROM {log.table} GROUP BY position ORDER BY position").df()
    n = df["impressions"].to_numpy(dtype=float)
    k = df["clicks"].to_numpy(dtype=float)
    p = k / n
    denom = 1 + z ** 2 / n
    centre = (p + z ** 2 / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z ** 2 / (4 * n ** 2)) / denom
    df["ctr"] = p
    df["lower"] = np.clip(centre - half, 0, 1)
    df["upper"] = np.clip(centre + half, 0, 1)
    return df


def peek_columns(path) -> tuple[list[str], dict[str, str]]:
    """A file's column names and the auto-detected ``{canonical: source}`` map."""
    p = Path(path)
    kind = sniff_kind(p)
    cols, _ = _source_columns(new_memory_cursor() if kind == "parquet" else None, p, kind)
    return cols, schema.auto_mapping(cols)


def preview(log: Log, n: int = 100) -> pd.DataFrame:
    return log.cur.execute(f"SELECT * FROM {log.table} LIMIT ?", [int(n)]).df()
