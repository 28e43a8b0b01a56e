"""Click logs as immutable Parquet files behind a small DuckDB catalog.

Layout, for a store ``data/ulr.duckdb`` (``ULR_DB`` overrides it):

- ``data/ulr.duckdb`` holds only the catalog (one row per dataset) and the small
  tables other modules keep beside the datasets. It is opened in short-lived
  connections inside :func:`catalog`, which every process and thread enters
  in turn through an exclusive ``flock`` on ``data/ulr.duckdb.lock``: the
  dashboard, the CLI and several dashboard processes share the store, and
  nobody holds it for longer than one catalog read or insert.
- ``data/ulr_files/ds_<hex>.parquet`` is a dataset, ``rj_<hex>.parquet`` the rows
  skipped when it was loaded. A file is written once, under a temporary name,
  fsync'ed, and renamed into place inside the catalog lock just before its
  catalog row is inserted; it never changes afterwards.
- Readers get their own in-memory DuckDB connection (:func:`cursor`) in which an
  opened dataset is a view named like its file (``ds_<hex>``) over the Parquet
  file. Readers never take the lock while they compute, and never block each other.

A load stages and validates the file in a private in-memory database, without
the lock; a refused, failed or killed load therefore leaves the catalog and
every stored file exactly as they were. Deleted and replaced files stay in
place for :data:`TRASH_GRACE_S` seconds so that reads in flight finish; files
of dead loads are swept on a later write.

Dataset names are user text: they are stored verbatim and only ever bound as
values. Table names are generated (``ds_<hex>``) and checked against an
allow-list before they reach SQL.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import csv
import fcntl
import hashlib
import io
import itertools
import json
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np

if TYPE_CHECKING:  # pandas is imported where it is used: start-up time of the CLI
    import pandas as pd

from ulr import schema
from ulr.errors import UlrError

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
DEFAULT_DB = DATA_DIR / "ulr.duckdb"
SAMPLE_CSV = DATA_DIR / "sample_clicks.csv"
SAMPLE_NAME = "sample"
MEMORY_LIMIT = os.environ.get("ULR_MEMORY_LIMIT", "4GB")
LOCK_TIMEOUT_S = float(os.environ.get("ULR_LOCK_TIMEOUT", "30"))
TRASH_GRACE_S = 600.0
SPILL_ROOT = Path(tempfile.gettempdir()) / "ulr_spill"
BUSY = "the store is busy with another load; try again in a moment."

_TABLE_RE = re.compile(r"^(ds|rj)_[0-9a-f]{16}$")
_TMP_RE = re.compile(r"^\.tmp-(\d+)-[0-9a-f]{16}\.parquet$")
_MAX_NAME = 200
_FIRST_LINES = 5

_local = threading.local()
_ready: set[str] = set()
_ready_lock = threading.Lock()
_sample_lock = threading.Lock()
_spill_ids = itertools.count()

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
);
CREATE TABLE IF NOT EXISTS ulr_trash (
    table_name VARCHAR PRIMARY KEY,
    deleted_at DOUBLE NOT NULL
);
"""

quote_ident = schema.quote_ident
schema_rules = schema.rule_conditions  # kept for callers that check rules themselves


def default_db_path() -> str:
    return os.environ.get("ULR_DB") or str(DEFAULT_DB)


def _table(name: str) -> str:
    """Allow-list check for generated table names."""
    if not isinstance(name, str) or not _TABLE_RE.match(name):
        raise ValueError(f"not a ulr table name: {name!r}")
    return name


def _resolve(db_path) -> str:
    return str(Path(db_path or default_db_path()).resolve())


def files_dir(db_path=None) -> Path:
    """The folder of a store's Parquet files: ``data/ulr_files`` for ``data/ulr.duckdb``."""
    p = Path(_resolve(db_path))
    return p.with_name(p.stem + "_files")


def _file_of(db: str, table: str) -> Path:
    return files_dir(db) / f"{_table(table)}.parquet"


def _sql_str(text: str) -> str:
    """A SQL string literal (for file paths the store built itself; DDL cannot bind)."""
    return "'" + str(text).replace("'", "''") + "'"


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --------------------------------------------------------------------------- spill


def _memory_connection() -> duckdb.DuckDBPyConnection:
    """A private in-memory DuckDB with the memory limit and its own spill folder.

    Spill folders live under one shared root, are created by DuckDB only when it
    spills, and are removed at exit (and, for killed processes, by the next one).
    """
    spill = SPILL_ROOT / f"{os.getpid()}-{next(_spill_ids)}"
    return duckdb.connect(":memory:", config={"memory_limit": MEMORY_LIMIT,
                                              "temp_directory": str(spill)})


def _clean_spill(*, mine: bool) -> None:
    if not SPILL_ROOT.is_dir():
        return
    for d in SPILL_ROOT.iterdir():
        pid = d.name.split("-", 1)[0]
        if not pid.isdigit():
            continue
        if (mine and int(pid) == os.getpid()) or (not mine and not _pid_alive(int(pid))):
            shutil.rmtree(d, ignore_errors=True)


_clean_spill(mine=False)
atexit.register(_clean_spill, mine=True)


def new_memory_cursor() -> duckdb.DuckDBPyConnection:
    """A private in-memory database (for ``--input`` files)."""
    return _memory_connection()


# --------------------------------------------------------------------------- catalog lock


@contextlib.contextmanager
def waiting(on_wait):
    """Call ``on_wait(seconds)`` while a :func:`catalog` call of this thread waits.

    The dashboard wraps a script run in it to show that another load is finishing.
    """
    before = getattr(_local, "on_wait", None)
    _local.on_wait = on_wait
    try:
        yield
    finally:
        _local.on_wait = before


def _acquire(fd: int, on_wait, timeout: float) -> None:
    start = time.monotonic()
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        waited = time.monotonic() - start
        if waited >= timeout:
            raise UlrError(BUSY)
        if on_wait is not None:
            on_wait(waited)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


@contextlib.contextmanager
def catalog(db_path: str | os.PathLike | None = None, *, write: bool = False,
            on_wait=None, timeout: float | None = None, _stamp_after: list | None = None):
    """A connection to the store's catalog database, held only for the ``with`` block.

    Everything that lives beside the datasets (their catalog rows, saved reports,
    registered sources) is read and written through this one door. Every block,
    in any process or thread, holds an exclusive ``flock`` on the lock file beside
    the database; keep blocks short (one read or one insert), never a computation.
    ``write=True`` also makes the block one transaction: it commits at the end and
    rolls back on an exception. A block nested in another block of the same thread
    (for the same store) reuses the outer connection and its transaction. ``on_wait(seconds)`` is called while another block
    holds the store; after ``timeout`` seconds (default ``ULR_LOCK_TIMEOUT``, 30)
    an :class:`UlrError` says that the store is busy.
    """
    path = _resolve(db_path)
    held = getattr(_local, "held", None)
    if held is None:
        held = _local.held = {}
    if path in held:  # nested in a block of this thread: the same connection
        yield held[path]
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, on_wait if on_wait is not None else getattr(_local, "on_wait", None),
                 LOCK_TIMEOUT_S if timeout is None else timeout)
        con = held[path] = _open_catalog(path)
        try:
            if path not in _ready:
                _init_catalog(con, path)
            if not write:
                yield con
                return
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                raise
        finally:
            del held[path]
            con.close()
            if _stamp_after is not None:  # still under the lock (catalog_read)
                _stamp_after.append(_stamp(path))
    finally:
        os.close(fd)  # releases the flock


def _stamp(path: str) -> tuple:
    """What a change of the catalog changes: the database file and its write-ahead log.

    A commit appends to ``PATH.wal``; a checkpoint rewrites ``PATH`` and removes the log.
    Inode, size and both times of each (None for a missing file) tell any two states apart.
    """
    out = []
    for p in (path, path + ".wal"):
        try:
            st = os.stat(p)
            out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


_reads: dict = {}   # (store path, key) -> (stamp, value) of catalog_read
_reads_lock = threading.Lock()
MAX_CACHED_READS = 512


def catalog_read(db_path, key: str, read):
    """``read(con)`` on the catalog, or its last value while the catalog has not changed.

    Every page view reads the catalog several times, and each :func:`catalog` block opens
    the database file under the store's lock (tens of ms, serialized across sessions and
    processes). The value is kept with the :func:`_stamp` of the files, taken under the
    lock after the connection closed (so a change by any process, committed or
    checkpointed, misses the cache), and reused while the stamp is the same. Inside a
    block of this thread (a write in progress) it always reads. ``read`` must return a
    value nobody mutates (tuples, or rows copied by the caller).
    """
    path = _resolve(db_path)
    if path in (getattr(_local, "held", None) or {}):
        with catalog(db_path) as con:
            return read(con)
    hit = _reads.get((path, key))
    if hit is not None and hit[0] == _stamp(path):
        return hit[1]
    after: list = []
    with catalog(db_path, _stamp_after=after) as con:
        value = read(con)
    with _reads_lock:
        if len(_reads) >= MAX_CACHED_READS:
            _reads.clear()
        _reads[(path, key)] = (after[0], value)
    return value


def _open_catalog(path: str) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(path)
    except duckdb.IOException as exc:
        raise UlrError(f"cannot open the database {path}: {_first_line(exc)}") from None
    except duckdb.Error as exc:
        raise UlrError(f"{path} is not a usable DuckDB database: {_first_line(exc)}") from None


def _init_catalog(con, path: str) -> None:
    """Create the catalog tables, and move datasets of the old layout to Parquet files."""
    con.execute(_CATALOG_DDL)
    old = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
        "AND regexp_matches(table_name, '^(ds|rj)_[0-9a-f]{16}$')").fetchall()]
    if old:
        folder = files_dir(path)
        folder.mkdir(parents=True, exist_ok=True)
        for table in old:
            tmp = _tmp_file(path)
            con.execute(f"COPY (SELECT * FROM {_table(table)}) TO {_sql_str(tmp)} "
                        "(FORMAT parquet, COMPRESSION zstd)")
            _fsync(tmp)
            os.replace(tmp, _file_of(path, table))
        _fsync_dir(folder)
        con.execute("BEGIN TRANSACTION")
        for table in old:
            con.execute(f"DROP TABLE {_table(table)}")
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    with _ready_lock:
        _ready.add(path)


def _tmp_file(db: str) -> Path:
    return files_dir(db) / f".tmp-{os.getpid()}-{uuid.uuid4().hex[:16]}.parquet"


def _fsync(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync(folder)


def _sweep(con, db: str) -> None:
    """Inside a write block: purge expired trash and files no live load will publish.

    A file under a final name that the catalog and the trash do not know can
    only come from a load killed between its rename and its catalog insert
    (both happen inside the lock); a temporary file belongs to a load of a
    process that no longer exists.
    """
    folder = files_dir(db)
    if not folder.is_dir():
        return
    expired = [r[0] for r in con.execute(
        "SELECT table_name FROM ulr_trash WHERE deleted_at < ?",
        [time.time() - TRASH_GRACE_S]).fetchall()]
    if expired:
        con.execute("DELETE FROM ulr_trash WHERE deleted_at < ?", [time.time() - TRASH_GRACE_S])
    known = {t for row in con.execute(
        "SELECT table_name, rejects_table FROM ulr_catalog UNION ALL "
        "SELECT table_name, NULL FROM ulr_trash").fetchall() for t in row if t}
    for f in folder.iterdir():
        m = _TMP_RE.match(f.name)
        if m and not _pid_alive(int(m.group(1))):
            f.unlink(missing_ok=True)
        elif f.suffix == ".parquet" and _TABLE_RE.match(f.stem) and f.stem not in known:
            f.unlink(missing_ok=True)


def _trash(con, tables) -> None:
    for t in tables:
        if t:
            con.execute("INSERT OR REPLACE INTO ulr_trash VALUES (?, ?)", [_table(t), time.time()])


# --------------------------------------------------------------------------- catalog rows


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


def _check_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UlrError("a dataset name must not be empty.")
    if len(name) > _MAX_NAME:
        raise UlrError(f"a dataset name may have at most {_MAX_NAME} characters.")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise UlrError("a dataset name must not contain control characters.")
    return name


# --------------------------------------------------------------------------- readers


def cursor(db_path: str | os.PathLike | None = None) -> duckdb.DuckDBPyConnection:
    """A new reader connection on the store ``db_path``: one per session, thread or call.

    It is a private in-memory DuckDB; the datasets it opens appear in it as
    views (``ds_<hex>``) over their Parquet files.
    """
    con = _memory_connection()
    con.execute("CREATE TABLE ulr_store (db VARCHAR)")
    con.execute("INSERT INTO ulr_store VALUES (?)", [_resolve(db_path)])
    return con


def _db_of(cur) -> str:
    """The store a reader connection belongs to."""
    try:
        return cur.execute("SELECT db FROM ulr_store").fetchone()[0]
    except duckdb.CatalogException:
        raise UlrError("this DuckDB connection is not a ulr store cursor; "
                       "use store.cursor().") from None


def _views(cur) -> set[str]:
    return {r[0] for r in cur.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'"
    ).fetchall()}


def _sync_views(cur, db: str, infos: list[DatasetInfo], *, drop_others: bool) -> None:
    """Make ``cur`` show each dataset (and its skipped rows) as a view over its file."""
    have = _views(cur)
    wanted = {t for d in infos for t in (d.table, d.rejects_table) if t}
    if drop_others:
        for v in have - wanted:
            if _TABLE_RE.match(v):
                cur.execute(f"DROP VIEW IF EXISTS {_table(v)}")
    for d in infos:
        for t in (d.table, d.rejects_table):
            if t and t not in have:
                try:
                    cur.execute(f"CREATE OR REPLACE VIEW {_table(t)} AS SELECT * FROM "
                                f"read_parquet({_sql_str(_file_of(db, t))})")
                except duckdb.IOException:
                    raise UlrError(f"the files of dataset {d.name!r} are missing from "
                                   f"{files_dir(db)}; load it again.") from None


def list_datasets(cur) -> list[DatasetInfo]:
    """Every stored dataset, read fresh from the catalog (another process may have loaded one)."""
    db = _db_of(cur)
    rows = catalog_read(db, "datasets", lambda con: tuple(con.execute(
        f"SELECT {_CAT_COLS} FROM ulr_catalog ORDER BY loaded_at, name").fetchall()))
    infos = [_row_to_info(r) for r in rows]
    _sync_views(cur, db, infos, drop_others=True)
    return infos


def _catalog_row(db: str, name: str):
    def read(con):
        row = con.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?",
                          [name]).fetchone()
        known = () if row is not None else tuple(r[0] for r in con.execute(
            "SELECT name FROM ulr_catalog ORDER BY loaded_at, name LIMIT 10").fetchall())
        return row, known
    return catalog_read(db, "dataset:" + name, read)


def get_dataset(cur, name: str) -> DatasetInfo:
    db = _db_of(cur)
    row, known = _catalog_row(db, name)
    if row is None:
        hint = f" Stored datasets: {', '.join(repr(k) for k in known)}." if known else \
            " No datasets are stored yet; load one first."
        raise UlrError(f"there is no dataset named {name!r}.{hint}")
    info = _row_to_info(row)
    _sync_views(cur, db, [info], drop_others=False)
    return info


def rename_dataset(cur, old: str, new: str) -> None:
    _check_name(new)
    with catalog(_db_of(cur), write=True) as con:
        if con.execute("SELECT 1 FROM ulr_catalog WHERE name = ?", [old]).fetchone() is None:
            raise UlrError(f"there is no dataset named {old!r}.")
        if old == new:
            return
        if con.execute("SELECT 1 FROM ulr_catalog WHERE name = ?", [new]).fetchone():
            raise UlrError(f"a dataset named {new!r} exists already.")
        con.execute("UPDATE ulr_catalog SET name = ? WHERE name = ?", [new, old])


def delete_dataset(cur, name: str) -> None:
    """Remove ``name`` from the catalog; its files go to the trash.

    Sessions reading it finish their reads (the files stay for
    :data:`TRASH_GRACE_S` seconds); new opens no longer find it.
    """
    db = _db_of(cur)
    with catalog(db, write=True) as con:
        row = con.execute("SELECT table_name, rejects_table FROM ulr_catalog WHERE name = ?",
                          [name]).fetchone()
        if row is None:
            raise UlrError(f"there is no dataset named {name!r}.")
        con.execute("DELETE FROM ulr_catalog WHERE name = ?", [name])
        _trash(con, row)
        _sweep(con, db)
    for t in row:
        if t:
            cur.execute(f"DROP VIEW IF EXISTS {_table(t)}")


def _no_rejects() -> pd.DataFrame:
    import pandas as pd
    return pd.DataFrame(columns=["line", "column", "problem", "raw"])


def rejected_rows(cur, name: str) -> pd.DataFrame:
    """The rows skipped when ``name`` was loaded with skip-bad-rows."""
    info = get_dataset(cur, name)
    if not info.rejects_table:
        return _no_rejects()
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
    warnings: tuple = ()  # ulr.lists.MappingWarning: the mapping does not group shown lists


def file_hash(path: str | os.PathLike, extra: str = "") -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    h.update(extra.encode())
    return h.hexdigest()


def sniff_kind(path: Path, shown: str | None = None) -> str:
    """``"csv"`` or ``"parquet"``; UlrError for a missing, empty, binary or non-UTF-8 file.

    ``shown`` is the file name messages use (default: the path's name); the
    dashboard passes the user's own name, not its upload copy's.
    """
    if not path.exists():
        raise UlrError(f"file not found: {shown or path}.")
    shown = shown or path.name
    if not path.is_file():
        raise UlrError(f"{shown} is not a file.")
    if path.stat().st_size == 0:
        raise UlrError(f"{shown} is empty: a click log needs a header and at least one row.")
    with open(path, "rb") as fh:
        head = fh.read(65536)
    if head[:4] == b"PAR1":
        return "parquet"
    if b"\x00" in head:
        raise UlrError(f"{shown} looks like a binary file, not a CSV or Parquet click log.")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a cut multi-byte character
            raise UlrError(f"{shown} is not UTF-8 text (bad byte at offset {exc.start}); "
                           "save it as UTF-8 CSV.") from None
    if not head.removeprefix(codecs.BOM_UTF8).strip():
        raise UlrError(f"{shown} is empty: a click log needs a header and at least one row.")
    return "csv"


def csv_header(path: Path, shown: str | None = None) -> tuple[list[str], str]:
    """Column names from the first record, and the delimiter.

    Read here rather than by DuckDB's sniffer, which can mistake a ragged
    row for the header. A UTF-8 byte order mark (Excel's "CSV UTF-8") is not
    part of the first name; an empty name becomes ``unnamed_<i>``; two
    columns of the same name are refused (:func:`schema.refuse_duplicates`).
    """
    with open(path, "r", encoding="utf-8-sig", errors="replace", newline="") as fh:
        sample = fh.read(65536)
    first = sample.splitlines()[0] if sample.splitlines() else ""
    delim = ","
    if first.count(",") == 0:
        counts = {d: first.count(d) for d in (";", "\t", "|")}
        best = max(counts, key=counts.get)
        if counts[best] > 0:
            delim = best
    header = next(csv.reader(io.StringIO(sample), delimiter=delim), [])
    shown = shown or path.name
    if not header or all(not h.strip() for h in header):
        raise UlrError(f"{shown} has no header row.")
    names = [h.strip() or f"unnamed_{i}" for i, h in enumerate(header)]
    schema.refuse_duplicates(names, shown)
    return names, delim


def _check_parquet_names(path: Path, shown: str) -> None:
    """Refuse a Parquet file with two top-level columns of the same name.

    Read from the file's own schema: DuckDB renames a repeated name (``f``, ``f_1``).
    """
    import pyarrow.parquet as pq
    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # noqa: BLE001 - any reader failure is the file's problem
        raise UlrError(f"cannot read {shown} as Parquet: {_first_line(exc)}") from None
    schema.refuse_duplicates(names, shown)


def _source_columns(cur, path: Path, kind: str,
                    shown: str | None = None) -> tuple[list[str], str | None]:
    shown = shown or path.name
    if kind == "csv":
        return csv_header(path, shown)
    _check_parquet_names(path, shown)
    try:
        desc = cur.execute("SELECT * FROM read_parquet(?) LIMIT 0", [str(path)]).description
    except duckdb.Error as exc:
        raise UlrError(f"cannot read {shown} as Parquet: {_first_line(exc)}") from None
    return [d[0] for d in desc], None


def _lines_of_rows(rowids: np.ndarray, reject_lines: np.ndarray) -> np.ndarray:
    """CSV line numbers of staged rows (header = line 1), skipping rejected lines."""
    r = np.sort(np.asarray(reject_lines, dtype=np.int64))
    if len(r) == 0:
        return rowids + 2
    k = np.searchsorted(r - np.arange(len(r)) - 2, rowids, side="right")
    return rowids + 2 + k


@dataclass
class _LoadJob:
    """One load, passed through its steps: stage, check, refuse, publish (or view).

    ``con`` is the job's private in-memory DuckDB, holding the staged table ``stg``.
    """

    path: Path
    kind: str
    delim: str | None
    plans: list
    name: str
    shown: str
    content_hash: str
    mapping: dict
    skip_bad_rows: bool
    con: object = None
    stg: str = field(default_factory=lambda: _table("ds_" + uuid.uuid4().hex[:16]))
    staged: int = 0
    reject_lines: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    cast_rejects: pd.DataFrame = field(default_factory=_no_rejects)
    rules: list = field(default_factory=list)
    # (source, role, count, first lines, problem, first values)
    problems: list = field(default_factory=list)
    bad_total: int = 0
    good: int = 0
    rejected: pd.DataFrame | None = None

    @property
    def unit(self) -> str:
        return "line" if self.kind == "csv" else "row"

    def lines(self, rowids) -> np.ndarray:
        """File lines (CSV) or row numbers (Parquet) of staged row ids."""
        ids = np.asarray(rowids, dtype=np.int64)
        return _lines_of_rows(ids, self.reject_lines) if self.kind == "csv" else ids + 1

    @property
    def where_ok(self) -> str:
        return " AND ".join(f"NOT {cond}" for _, cond, _ in self.rules) or "true"


def _new_job(path, name, mapping, skip_bad_rows, source_name, *, quick_hash: bool) -> _LoadJob:
    _check_name(name)
    p = Path(path)
    shown = source_name or p.name
    kind = sniff_kind(p, shown)
    con = _memory_connection()
    columns, delim = _source_columns(con, p, kind, shown)
    plans = schema.plan_columns(columns, mapping)
    used = schema.Mapping.coerce(mapping, columns).stored(plans)
    schema.check_feature_values(p, kind, delim, plans)
    extra = json.dumps([used, bool(skip_bad_rows)], sort_keys=True)
    if quick_hash:  # a one-off read: identify the file by path, size and mtime (no full hash)
        st_ = p.stat()
        content_hash = hashlib.sha256(
            f"{p.resolve()}|{st_.st_size}|{st_.st_mtime_ns}|{extra}".encode()).hexdigest()
    else:
        content_hash = file_hash(p, extra)
    return _LoadJob(path=p, kind=kind, delim=delim, plans=plans, name=name,
                    shown=shown, content_hash=content_hash, mapping=used,
                    skip_bad_rows=skip_bad_rows, con=con)


def _stage(job: _LoadJob) -> None:
    """Read the file into the staged table with declared types."""
    if job.kind == "csv":
        _stage_csv(job)
    else:
        select = []
        for pl in job.plans:
            src = quote_ident(pl.source)  # source is one of the file's own column names
            if pl.role in ("click", "randomized"):
                expr = (f"CASE WHEN lower(CAST({src} AS VARCHAR)) IN ('1', 'true', '1.0') "
                        f"THEN true WHEN lower(CAST({src} AS VARCHAR)) IN ('0', 'false', '0.0') "
                        "THEN false END")
            elif pl.read_type == "VARCHAR":
                expr = f"CAST({src} AS VARCHAR)"
            else:
                expr = f"TRY_CAST({src} AS {pl.read_type})"
            select.append(f"{expr} AS {quote_ident(pl.stored)}")
        try:
            job.con.execute(f"CREATE TABLE {job.stg} AS SELECT {', '.join(select)} "
                            "FROM read_parquet(?)", [str(job.path)])
        except duckdb.Error as exc:
            raise UlrError(f"cannot read {job.shown} as Parquet: {_first_line(exc)}") from None
    job.staged = job.con.execute(f"SELECT count(*) FROM {job.stg}").fetchone()[0]


def _stage_csv(job: _LoadJob) -> None:
    import pandas as pd
    types = {pl.stored: pl.read_type for pl in job.plans}
    try:
        job.con.execute(
            f"CREATE TABLE {job.stg} AS SELECT * FROM read_csv(?, header = true, columns = ?, "
            "delim = ?, quote = '\"', escape = '\"', auto_detect = false, "
            "ignore_errors = true, store_rejects = true, rejects_table = 'ulr_rejects', "
            "rejects_scan = 'ulr_reject_scans', null_padding = false)",
            [str(job.path), types, job.delim])
    except duckdb.Error as exc:
        raise UlrError(f"cannot read {job.shown} as CSV: {_first_line(exc)}") from None
    rej = job.con.execute(
        "SELECT line, column_name, error_type, csv_line FROM ulr_rejects "
        "WHERE scan_id = (SELECT max(scan_id) FROM ulr_rejects) ORDER BY line").df()
    if not len(rej):
        return
    by_stored = {pl.stored: pl.source for pl in job.plans}
    role_of = {pl.stored: pl.role for pl in job.plans}
    etype = rej["error_type"].astype(str)
    is_cast = (etype == "CAST").to_numpy()
    other = np.where(etype.isin(["MISSING COLUMNS", "TOO MANY COLUMNS"]), schema.RAGGED_ROW,
                     etype.str.lower().str.replace("_", " "))
    job.cast_rejects = pd.DataFrame({
        "line": rej["line"].astype("int64"),
        "column": np.where(is_cast, rej["column_name"].map(lambda c: by_stored.get(c, c)),
                           schema.WHOLE_ROW),
        "problem": np.where(is_cast, rej["column_name"].map(
            lambda c: schema.problem_of(role_of.get(c, ""))), other),
        "raw": rej["csv_line"].astype(str),
    }).drop_duplicates("line")
    job.reject_lines = job.cast_rejects["line"].to_numpy(dtype=np.int64)


def _check(job: _LoadJob) -> None:
    """Count the rows that break a schema rule, with their first lines."""
    job.rules = schema.rule_conditions(job.plans)
    if not job.rules:
        counts = ()
    else:
        counts = job.con.execute(
            "SELECT " + ", ".join(f"count(*) FILTER (WHERE {cond})" for _, cond, _ in job.rules)
            + f" FROM {job.stg}").fetchone()
    for (pl, cond, what), n in zip(job.rules, counts):
        if n:
            ids, values = _first_breaks(job, pl, cond)
            job.problems.append((pl.source, pl.role, int(n), job.lines(ids).tolist(), what,
                                 values))
    rule_bad = 0
    if job.problems:
        rule_bad = job.con.execute(f"SELECT count(*) FROM {job.stg} WHERE NOT ({job.where_ok})"
                                   ).fetchone()[0]
    if len(job.cast_rejects):
        role_by_source = {pl.source: pl.role for pl in job.plans}
        for (col, what), grp in job.cast_rejects.groupby(["column", "problem"], sort=False):
            job.problems.append((col, role_by_source.get(col, col), len(grp),
                                 grp["line"].head(_FIRST_LINES).tolist(), what, []))
    job.bad_total = len(job.cast_rejects) + rule_bad
    job.good = job.staged - rule_bad


def _first_breaks(job: _LoadJob, pl, cond: str) -> tuple[np.ndarray, list[str]]:
    """Row ids of the first rows breaking a rule, and their distinct non-blank values.

    Numbers are shown as ``%g`` (``0``, ``1.5``, ``nan``, ``-inf``), other values as text.
    """
    c = quote_ident(pl.stored)
    text = f"printf('%g', {c})" if pl.read_type == "DOUBLE" else f"CAST({c} AS VARCHAR)"
    rows = job.con.execute(f"SELECT rowid, {text} FROM {job.stg} WHERE {cond} ORDER BY rowid "
                           "LIMIT ?", [_FIRST_LINES]).fetchall()
    values = [v for v in dict.fromkeys(v for _, v in rows) if v is not None and v.strip()]
    return np.array([r for r, _ in rows], dtype=np.int64), values


def _refuse(job: _LoadJob) -> None:
    """Raise the one-sentence refusal when the file may not be stored."""
    if job.problems and not job.skip_bad_rows:
        raise UlrError(f"refused {job.shown}: {_problem_text(job)}. {job.bad_total} of "
                       f"{job.staged + len(job.cast_rejects)} rows are bad and nothing was "
                       "stored; fix the file, or load with skip_bad_rows=True to keep the valid rows.")
    if job.good <= 0:
        if job.staged == 0 and not len(job.cast_rejects):
            raise UlrError(f"{job.shown} has a header but no data rows; nothing was stored.")
        raise UlrError(f"{job.shown} has no valid data rows; nothing was stored.")


def _problem_text(job: _LoadJob) -> str:
    merged: dict = {}
    for src, role, n, lines, what, values in job.problems:
        m = merged.setdefault((src, what), [role, 0, [], []])
        m[1] += n
        m[2] = sorted(m[2] + lines)[:_FIRST_LINES]
        m[3] = list(dict.fromkeys(m[3] + values))
    parts = []
    for (src, what), (role, n, lines, values) in sorted(merged.items(),
                                                        key=lambda kv: kv[1][2][0]):
        where = f"first at {job.unit}{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"
        if src == schema.WHOLE_ROW:
            parts.append(f"{n} row{'s' if n != 1 else ''} with the {what}, {where}")
            continue
        label = f"column {src!r}" + (f" ({role})" if role != src and role in
                                     schema.CANONICAL else "")
        found = (f" (value{'s' if len(values) > 1 else ''} {', '.join(map(repr, values))})"
                 if values else "")
        parts.append(f"{label}: {n} bad value{'s' if n != 1 else ''} ({what}), {where}{found}")
    return "; ".join(parts)


def _collect_rejects(job: _LoadJob) -> None:
    """The skipped rows, for download: cast failures and rule breaks, by line."""
    import pandas as pd
    rejected = job.cast_rejects
    if job.problems and job.rules:
        # the staged values joined by commas; an empty cell (NULL) stays empty
        raw_sql = "concat_ws(',', " + ", ".join(
            f"coalesce(CAST({quote_ident(pl.stored)} AS VARCHAR), '')" for pl in job.plans) + ")"
        bad = job.con.execute(f"SELECT rowid AS _rid, {raw_sql} AS raw FROM {job.stg} "
                              f"WHERE NOT ({job.where_ok}) ORDER BY rowid").df()
        rid = bad["_rid"].to_numpy(dtype=np.int64)
        raw = bad["raw"].astype(str)
        names = np.full(len(bad), "", dtype=object)
        whats = np.full(len(bad), "", dtype=object)
        for pl, cond, what in reversed(job.rules):  # name the first broken rule per row
            ids = job.con.execute(f"SELECT rowid FROM {job.stg} WHERE {cond}").fetchnumpy()["rowid"]
            hit = np.isin(rid, np.asarray(ids, dtype=np.int64))
            names[hit] = pl.source
            whats[hit] = what
        rule_df = pd.DataFrame({"line": job.lines(rid), "column": names, "problem": whats,
                                "raw": raw.to_numpy()})
        rejected = pd.concat([job.cast_rejects, rule_df], ignore_index=True).sort_values("line")
    rejected = rejected.reset_index(drop=True)[["line", "column", "problem", "raw"]]
    job.rejected = rejected.astype({"line": "int64", "column": str, "problem": str, "raw": str})


def _final_select(job: _LoadJob) -> str:
    """The stored columns, in storage types, of the rows that pass every rule (file order)."""
    select = []
    for pl in job.plans:
        c = quote_ident(pl.stored)
        store_type = schema.STORE_TYPES.get(pl.role)
        select.append(f"CAST({c} AS {store_type}) AS {c}" if store_type else c)
    for stored, expr, _ in schema.derived_columns(job.mapping, job.plans):
        select.append(f"{expr} AS {quote_ident(stored)}")
    return f"SELECT {', '.join(select)} FROM {job.stg} WHERE {job.where_ok}"


def _stored_columns(job: _LoadJob) -> dict:
    """``{stored column: source label}``, derived columns (composite keys, constants) included."""
    cols = {pl.stored: pl.source for pl in job.plans}
    cols.update({stored: label for stored, _, label in schema.derived_columns(job.mapping,
                                                                             job.plans)})
    return cols


def _prepare(job: _LoadJob) -> None:
    _stage(job)
    _check(job)
    _refuse(job)
    _collect_rejects(job)


def _write_files(job: _LoadJob, db: str) -> tuple[Path, Path | None]:
    """Write the dataset (and its skipped rows) to fsync'ed temporary Parquet files."""
    files_dir(db).mkdir(parents=True, exist_ok=True)
    data = _tmp_file(db)
    job.con.execute(f"COPY ({_final_select(job)}) TO {_sql_str(data)} "
                    "(FORMAT parquet, COMPRESSION zstd)")
    _fsync(data)
    rejects = None
    if len(job.rejected):
        rejects = _tmp_file(db)
        job.con.register("ulr_rejected_df", job.rejected)
        job.con.execute(f"COPY (SELECT line::BIGINT AS line, \"column\"::VARCHAR AS \"column\", "
                        "problem::VARCHAR AS problem, raw::VARCHAR AS raw FROM ulr_rejected_df) "
                        f"TO {_sql_str(rejects)} (FORMAT parquet)")
        job.con.unregister("ulr_rejected_df")
        _fsync(rejects)
    return data, rejects


def _publish(job: _LoadJob, db: str, data: Path, rejects: Path | None, *,
             replace: bool) -> DatasetInfo:
    """Rename the files into place and insert the catalog row, inside the catalog lock."""
    table = _table("ds_" + uuid.uuid4().hex[:16])
    rtable = _table("rj_" + uuid.uuid4().hex[:16]) if rejects is not None else None
    placed = []
    try:
        with catalog(db, write=True) as con:
            old = con.execute("SELECT table_name, rejects_table FROM ulr_catalog "
                              "WHERE name = ?", [job.name]).fetchone()
            if old is not None and not replace:
                raise UlrError(f"a dataset named {job.name!r} exists already; choose another "
                               "name or replace it.")
            for src, t in ((data, table), (rejects, rtable)):
                if t:
                    os.replace(src, _file_of(db, t))
                    placed.append(_file_of(db, t))
            _fsync_dir(files_dir(db))
            if old is not None:
                con.execute("DELETE FROM ulr_catalog WHERE name = ?", [job.name])
                _trash(con, old)
            con.execute("INSERT INTO ulr_catalog VALUES (?, ?, ?, ?, ?, now(), ?, ?, ?, ?)",
                        [job.name, table, int(job.good), job.shown, job.content_hash,
                         json.dumps(job.mapping),
                         json.dumps(_stored_columns(job)),
                         int(len(job.rejected)), rtable])
            row = con.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?",
                              [job.name]).fetchone()
            _sweep(con, db)
    except BaseException:
        for f in placed:  # not in the catalog: the rollback made them unreferenced
            f.unlink(missing_ok=True)
        raise
    return _row_to_info(row)


def load_log(path: str | os.PathLike, name: str, *, cur=None, db_path=None,
             mapping: dict | None = None, skip_bad_rows: bool = False,
             replace: bool = False, source_name: str | None = None) -> LoadResult:
    """Validate a CSV/Parquet click log and store it as dataset ``name``.

    Parameters
    ----------
    path : file to read (CSV with a header row, or Parquet).
    name : dataset name (any text; stored verbatim).
    cur : reader connection (:func:`cursor`) of the store to load into, which
        then shows the new dataset; default: the store ``db_path``.
    mapping : ``{canonical: source column}``; unmapped columns are auto-detected.
    skip_bad_rows : load the valid rows and keep the bad ones for download,
        instead of refusing the file.
    replace : replace an existing dataset of the same name (atomically).
    source_name : file name to record (default: the path's name).

    Raises
    ------
    UlrError
        For any problem with the file, the mapping or the name. Nothing is
        stored then. The file is staged and validated without holding the
        store; only the final rename and catalog insert take its lock.
    """
    db = _db_of(cur) if cur is not None else _resolve(db_path)
    job = _new_job(path, name, mapping, skip_bad_rows, source_name, quick_hash=False)
    data = rejects = None
    try:
        if not replace:
            row, _ = _catalog_row(db, name)
            if row is not None:
                raise UlrError(f"a dataset named {name!r} exists already; choose another "
                               "name or replace it.")
        _prepare(job)
        data, rejects = _write_files(job, db)
        warnings = _list_warnings(job, data)
        info = _publish(job, db, data, rejects, replace=replace)
    finally:
        job.con.close()
        for f in (data, rejects):
            if f is not None:
                Path(f).unlink(missing_ok=True)
    if cur is not None:
        _sync_views(cur, db, [info], drop_others=False)
    return LoadResult(dataset=name, rows=info.rows, rejected=info.rejected, info=info,
                      rejected_rows=job.rejected, warnings=warnings)


def _list_warnings(job: _LoadJob, data: Path) -> tuple:
    """:func:`ulr.lists.mapping_warnings` of the file about to be published."""
    from ulr.lists import mapping_warnings

    view = _table("ds_" + uuid.uuid4().hex[:16])
    job.con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM read_parquet({_sql_str(data)})")
    info = DatasetInfo(name=job.name, table=view, rows=int(job.good), source=job.shown,
                       content_hash=job.content_hash, mapping=job.mapping,
                       columns=_stored_columns(job), rejected=int(len(job.rejected)))
    try:
        return mapping_warnings(Log(cur=job.con, table=view, info=info))
    finally:
        job.con.execute(f"DROP VIEW IF EXISTS {view}")


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
        """True absolute theta per position, when the log records it
        (:func:`ulr.data.summary.true_theta`)."""
        from ulr.data.summary import true_theta
        return true_theta(self)


def open_dataset(name: str, db_path=None, *, cur=None) -> Log:
    """Open a stored dataset on ``cur`` (default: a new reader of ``db_path``)."""
    cur = cur if cur is not None else cursor(db_path)
    info = get_dataset(cur, name)
    return Log(cur=cur, table=info.table, info=info)


def open_file(path, mapping: dict | None = None, *, skip_bad_rows: bool = False) -> Log:
    """Validate a file into a private in-memory database and open it (nothing is stored)."""
    name = Path(path).name or "input"
    job = _new_job(path, name, mapping, skip_bad_rows, None, quick_hash=True)
    try:
        _prepare(job)
        if len(job.rejected) and job.rules:
            job.con.execute(f"DELETE FROM {job.stg} WHERE NOT ({job.where_ok})")
        view = _table("ds_" + uuid.uuid4().hex[:16])
        job.con.execute(f"CREATE VIEW {view} AS {_final_select(job)}")
    except BaseException:
        job.con.close()
        raise
    info = DatasetInfo(name=name, table=view, rows=int(job.good), source=job.shown,
                       content_hash=job.content_hash, mapping=job.mapping,
                       columns=_stored_columns(job),
                       rejected=int(len(job.rejected)))
    return Log(cur=job.con, table=view, info=info)


def ensure_sample(db_path=None, *, cur=None) -> DatasetInfo:
    """Store the bundled sample log as dataset 'sample' if it is missing."""
    db = _db_of(cur) if cur is not None else _resolve(db_path)
    with _sample_lock:  # the threads of one process load it once
        row, _ = _catalog_row(db, SAMPLE_NAME)
        if row is not None:
            return _row_to_info(row)
        try:
            return load_log(SAMPLE_CSV, SAMPLE_NAME, db_path=db).info
        except UlrError:
            row, _ = _catalog_row(db, SAMPLE_NAME)
            if row is None:  # not a lost race with another process
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
    """CTR per position with Wilson score intervals (:func:`ulr.data.summary.ctr_by_position`)."""
    from ulr.data.summary import ctr_by_position as by_position
    return by_position(log, z=z)


def peek_columns(path, source_name: str | None = None) -> tuple[list[str], dict[str, str]]:
    """A file's column names and the auto-detected ``{canonical: source}`` map.

    ``source_name`` is the file name messages use (default: the path's name).
    """
    p = Path(path)
    kind = sniff_kind(p, source_name)
    con = new_memory_cursor() if kind == "parquet" else None
    try:
        cols, _ = _source_columns(con, p, kind, source_name)
    finally:
        if con is not None:
            con.close()
    return cols, schema.auto_mapping(cols)


def preview(log: Log, n: int = 100) -> pd.DataFrame:
    return log.cur.execute(f"SELECT * FROM {log.table} LIMIT ?", [int(n)]).df()
