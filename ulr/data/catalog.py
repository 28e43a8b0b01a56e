"""The store's catalog: its lock, its rows (one per dataset), publishing a load, readers.

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

A load (:mod:`ulr.data.ingest`) stages and validates the file in a private
in-memory database, without the lock; a refused, failed or killed load therefore leaves the catalog and
every stored file exactly as they were. Deleted and replaced files stay in
place for :data:`ulr.data.files.TRASH_GRACE_S` seconds so that reads in flight finish; files
of dead loads are swept on a later write.

The files themselves (their folder, durability, the trash, spill folders) are
:mod:`ulr.data.files`'s; this module renames them into place (:func:`publish`) and
records them.

Dataset names are user text: they are stored normalized (:func:`normal_name`), two
names that read alike are never both stored (:func:`name_key`), and they are only ever bound as
values. Table names are generated (``ds_<hex>``) and checked against an
allow-list before they reach SQL.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:  # pandas is imported where it is used: start-up time of the CLI
    import pandas as pd

from ulr.data import files, schema
from ulr.data.files import file_of, store_path
from ulr.data.log import OPERATOR, DatasetInfo, Log
from ulr.data.schema import table_ident
from ulr.errors import Refused, UlrError
from ulr.text import clip

BUSY = "the store is busy with another load; try again in a moment."
_MAX_NAME = 200

_local = threading.local()

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
    rejects_table VARCHAR,
    owner VARCHAR
);
CREATE TABLE IF NOT EXISTS ulr_trash (
    table_name VARCHAR PRIMARY KEY,
    deleted_at DOUBLE NOT NULL
);
"""


class NotOwner(UlrError):
    """The acting identity may not rename, replace or delete this dataset (not its own)."""


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
    holds the store; after ``timeout`` seconds (default ``ULR_LOCK_TIMEOUT``, 30: :func:`ulr.data.files.settings`)
    an :class:`UlrError` says that the store is busy.
    """
    path = store_path(db_path)
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
                 files.settings().lock_timeout_s if timeout is None else timeout)
        con = held[path] = _open_catalog(path)
        try:
            if not store_cache(path).ready:
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


MAX_CACHED_READS = 512  # catalog_read values kept per store


@dataclass(eq=False)
class StoreCache:
    """What this process keeps about one store, held per store path (:func:`store_cache`).

    ``ready``: the catalog tables were checked (and migrated) by this process.
    ``reads``: ``key -> (stamp, value)`` of :func:`catalog_read`. ``database``: the
    in-memory DuckDB whose cursors are the store's readers (:func:`cursor`), with the
    ``views`` it has and ``view_lock``, which serializes their DDL (two cursors replacing
    one view conflict). ``clear()`` forgets what was read from the files; the reader
    database stays, since cursors handed out may still read from it.
    """

    path: str
    ready: bool = False
    reads: dict = field(default_factory=dict)
    database: duckdb.DuckDBPyConnection | None = None
    views: set = field(default_factory=set)
    view_lock: threading.Lock = field(default_factory=threading.Lock)
    reads_lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.reads_lock:
            self.ready = False
            self.reads.clear()
        for state in list(_cursors.values()):
            if state.store is self:
                state.shown = None


@dataclass(eq=False)
class _CursorState:
    """A reader connection's store, and the catalog rows it last showed as views (a page
    view lists the datasets several times; with these, a repeat asks DuckDB nothing)."""

    store: StoreCache
    shown: tuple | None = None


_stores: dict[str, StoreCache] = {}
_stores_lock = threading.Lock()  # also: the reader database is used by one thread at a time
_cursors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # cursor -> _CursorState


def store_cache(db_path=None) -> StoreCache:
    """This process's :class:`StoreCache` of the store ``db_path`` (made on first use)."""
    path = store_path(db_path)
    with _stores_lock:
        cache = _stores.get(path)
        if cache is None:
            cache = _stores[path] = StoreCache(path)
        return cache


def clear_caches(db_path=None) -> None:
    """Forget what this process read from the store ``db_path`` (every store: None), as a
    new process would: the catalog is checked again and every catalog read asks the file.
    """
    with _stores_lock:
        caches = list(_stores.values()) if db_path is None else \
            [c for p, c in _stores.items() if p == store_path(db_path)]
    for cache in caches:
        cache.clear()


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
    path = store_path(db_path)
    if path in (getattr(_local, "held", None) or {}):
        with catalog(db_path) as con:
            return read(con)
    cache = store_cache(path)
    hit = cache.reads.get(key)
    if hit is not None and hit[0] == _stamp(path):
        return hit[1]
    after: list = []
    with catalog(db_path, _stamp_after=after) as con:
        value = read(con)
    with cache.reads_lock:
        if len(cache.reads) >= MAX_CACHED_READS:
            cache.reads.clear()
        cache.reads[key] = (after[0], value)
    return value


def _open_catalog(path: str) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(path)
    except duckdb.IOException as exc:
        raise UlrError(f"cannot open the database {path}: {files.first_line(exc)}") from None
    except duckdb.Error as exc:
        raise UlrError(f"{path} is not a usable DuckDB database: {files.first_line(exc)}") from None


def _init_catalog(con, path: str) -> None:
    """Create the catalog tables, give a catalog from before owners its ``owner`` column
    (its datasets keep no owner: the operator's alone), and move datasets of the old layout
    to Parquet files."""
    con.execute(_CATALOG_DDL)
    if not con.execute("SELECT 1 FROM duckdb_columns() WHERE schema_name = 'main' AND "
                       "table_name = 'ulr_catalog' AND column_name = 'owner'").fetchone():
        con.execute("ALTER TABLE ulr_catalog ADD COLUMN IF NOT EXISTS owner VARCHAR")
    old = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
        "AND regexp_matches(table_name, '^(ds|rj)_[0-9a-f]{16}$')").fetchall()]
    if old:
        folder = files.files_dir(path)
        folder.mkdir(parents=True, exist_ok=True)
        for table in old:
            tmp = files.tmp_file(path)
            con.execute(f"COPY (SELECT * FROM {table_ident(table)}) TO {files.sql_str(tmp)} "
                        "(FORMAT parquet, COMPRESSION zstd)")
            files.fsync(tmp)
            os.replace(tmp, file_of(path, table))
        files.fsync_dir(folder)
        con.execute("BEGIN TRANSACTION")
        for table in old:
            con.execute(f"DROP TABLE {table_ident(table)}")
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    files.sweep_dead_tmp(path)  # a killed load's temporary files: gone when a process starts
    store_cache(path).ready = True


def _row_to_info(row) -> DatasetInfo:
    (name, table, rows, source, h, loaded, mapping, columns, rejected, rtable, owner) = row
    return DatasetInfo(name=name, table=table_ident(table), rows=int(rows), source=source,
                       content_hash=h, loaded_at=loaded, mapping=json.loads(mapping or "{}"),
                       columns=json.loads(columns or "{}"), rejected=int(rejected or 0),
                       rejects_table=rtable, owner=owner)


_CAT_COLS = ("name, table_name, rows, source, content_hash, loaded_at, mapping, columns, "
             "rejected, rejects_table, owner")


def check_actor(actor) -> None:
    """An acting identity is a non-empty string (an identity, :data:`OPERATOR`) or None."""
    if actor is not None and (not isinstance(actor, str) or not actor.strip()):
        raise UlrError("the acting identity must be a non-empty string (or None).")


def _may_change(con, name: str, actor, verb: str):
    """The catalog row of ``name`` (inside a write block) when ``actor`` may ``verb`` it;
    UlrError when there is none, :class:`NotOwner` when it is not ``actor``'s."""
    check_actor(actor)
    row = con.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?", [name]).fetchone()
    if row is None:
        raise UlrError(f"there is no dataset named {name!r}.")
    refusal = _row_to_info(row).refusal(actor, verb)
    if refusal:
        raise NotOwner(refusal)
    return row


# Characters that show as nothing (zero-width spaces and joiners, the word joiner, the BOM,
# the soft hyphen): a name keeps none of them.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff"))

# Look-alikes that NFKC and case folding leave apart: Cyrillic and Greek letters drawn like
# Latin ones (after case folding), dashes and the minus sign, typographic quotes, and the
# digits 0 and 1 beside o and l. A chosen subset of Unicode's confusables (UTS #39) that
# covers the letters of Latin-script names; extend it here.
_LOOK_ALIKE = str.maketrans({
    **dict(zip("аеорсухіјѕԁԛԝһӏɡ", "aeopcyxijsdqwhlg")),        # Cyrillic (and Latin ɡ)
    **dict(zip("αβεηικμνοτυχρ", "abenikmvotuxp")),              # Greek
    **dict.fromkeys("‐‑‒–—―−﹣", "-"),
    **dict.fromkeys("‘’‚‛′", "'"), **dict.fromkeys("“”„‟″", '"'),
    "0": "o", "1": "l",
})


def normal_name(name: str) -> str:
    """A dataset name as it is stored: Unicode NFC, invisible characters dropped, leading
    and trailing whitespace trimmed and every run of whitespace one space."""
    import unicodedata
    return " ".join(unicodedata.normalize("NFC", name).translate(_INVISIBLE).split())


def name_key(name: str) -> str:
    """What two names that read alike share: NFKC, case folded, look-alike characters
    (:data:`_LOOK_ALIKE`) replaced and whitespace removed. Two datasets never share one."""
    import unicodedata
    s = unicodedata.normalize("NFKC", normal_name(name)).casefold()
    return "".join(unicodedata.normalize("NFKC", s).translate(_LOOK_ALIKE).split())


def check_name(name) -> str:
    """``name`` as stored (:func:`normal_name`) when it may name a dataset (UlrError
    otherwise): non-empty text of at most 200 characters, without control characters
    (tabs and line breaks included)."""
    if not isinstance(name, str) or not normal_name(name):
        raise UlrError("a dataset name must not be empty.")
    if any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in name):
        raise UlrError("a dataset name must not contain control characters.")
    name = normal_name(name)
    if len(name) > _MAX_NAME:
        raise UlrError(f"a dataset name may have at most {_MAX_NAME} characters.")
    return name


def _look_alike(names, name: str, *, besides: str | None = None) -> str | None:
    """The stored name among ``names`` (other than ``name`` itself and ``besides``) that
    reads like ``name`` (:func:`name_key`), or None."""
    key = name_key(name)
    return next((n for n in names if n not in (name, besides) and name_key(n) == key), None)


def _refuse_look_alike(names, name: str, *, besides: str | None = None) -> None:
    twin = _look_alike(names, name, besides=besides)
    if twin is not None:
        raise UlrError(f"the name {clip(name)!r} reads like the stored dataset {clip(twin)!r} "
                       "(they differ only by case, spaces or look-alike characters); choose a "
                       "clearly different name, or use that dataset's own name.")


# --------------------------------------------------------------------------- publish


def _refuse_taken(row, name: str, actor, replace: bool) -> None:
    """Refuse a load under the name of the stored dataset ``row`` (a catalog row, or None
    when the name is free) unless ``replace`` is asked and ``actor`` may replace it."""
    if row is None:
        return
    info = _row_to_info(row)
    if not info.may_change(actor):
        who = info.loaded_by(actor)
        who = "before datasets had owners" if who == "nobody recorded" else "by " + who
        raise NotOwner(f"a dataset named {name!r} exists already, loaded {who}; choose "
                       "another name (only its owner can replace it).")
    if not replace:
        raise Refused(f"a dataset named {name!r} exists already; choose another name or "
                      "replace it.", option="replace")


def check_free(db: str, name: str, *, actor, replace: bool) -> None:
    """Refuse (before a load's work) a name that is taken, unless ``replace`` is asked and
    ``actor`` may replace its dataset, and a name that reads like a stored one
    (:func:`name_key`); :func:`publish` checks again under the lock."""
    _refuse_taken(_catalog_row(db, name)[0], name, actor, replace)
    _refuse_look_alike(catalog_read(db, "names", _all_names), name)


def look_alike(cur, name: str) -> str | None:
    """The stored dataset whose name reads like ``name`` without being it (as stored), or
    None: such a name is refused (:func:`name_key`). For a form's check before Load."""
    try:
        name = check_name(name)
    except UlrError:
        return None
    return _look_alike(catalog_read(_db_of(cur), "names", _all_names), name)


def _all_names(con) -> tuple[str, ...]:
    return tuple(r[0] for r in con.execute("SELECT name FROM ulr_catalog").fetchall())


def publish(db: str, name: str, data: Path, rejects: Path | None, *, rows: int, source: str,
            content_hash: str, mapping: dict, columns: dict, rejected: int, replace: bool,
            actor: str) -> DatasetInfo:
    """Rename a load's fsync'ed files into place and insert its catalog row, in the lock.

    ``data`` (and ``rejects``, its skipped rows, or None) are temporary files of store
    ``db`` (:func:`ulr.data.files.tmp_file`); the other arguments are the row's values
    (``columns``: ``{stored column: source label}``). Whether the name is free, or its
    dataset ``actor``'s to replace, is checked again here, under the lock, so that two
    loads cannot both take one name; a replaced dataset's files go to the trash."""
    table = table_ident("ds_" + uuid.uuid4().hex[:16])
    rtable = table_ident("rj_" + uuid.uuid4().hex[:16]) if rejects is not None else None
    placed = []
    try:
        with catalog(db, write=True) as con:
            old = con.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?",
                              [name]).fetchone()
            _refuse_taken(old, name, actor, replace)
            _refuse_look_alike(_all_names(con), name)
            for src, t in ((data, table), (rejects, rtable)):
                if t:
                    os.replace(src, file_of(db, t))
                    placed.append(file_of(db, t))
            files.fsync_dir(files.files_dir(db))
            if old is not None:
                con.execute("DELETE FROM ulr_catalog WHERE name = ?", [name])
                files.trash(con, (old[1], old[9]))  # its table and rejects table
            con.execute(f"INSERT INTO ulr_catalog ({_CAT_COLS}) "
                        "VALUES (?, ?, ?, ?, ?, now(), ?, ?, ?, ?, ?)",
                        [name, table, int(rows), source, content_hash, json.dumps(mapping),
                         json.dumps(columns), int(rejected), rtable, actor])
            row = con.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?",
                              [name]).fetchone()
            files.sweep(con, db)
    except BaseException:
        for f in placed:  # not in the catalog: the rollback made them unreferenced
            f.unlink(missing_ok=True)
        raise
    return _row_to_info(row)


# --------------------------------------------------------------------------- readers


def cursor(db_path: str | os.PathLike | None = None) -> duckdb.DuckDBPyConnection:
    """A new reader connection on the store ``db_path``: one per session, thread or call.

    It is a cursor of this process's in-memory DuckDB for the store (one database
    per store, with the memory limit and a spill folder of its own, shared by all
    its cursors): the datasets opened appear in it as views (``ds_<hex>``) over
    their Parquet files, made once for every session. A private database per session
    would make each new visitor pay for opening it, and give each its own memory limit.
    """
    cache = store_cache(db_path)
    with _stores_lock:  # the shared connection itself is used by one thread at a time
        if cache.database is None:
            cache.database = files.memory_connection()
        cur = cache.database.cursor()
    _cursors[cur] = _CursorState(cache)
    return cur


def store_of(cur=None, db_path=None) -> str:
    """The store of reader connection ``cur`` (:func:`cursor`), else the store ``db_path``."""
    return _db_of(cur) if cur is not None else store_path(db_path)


def _db_of(cur) -> str:
    """The store a reader connection belongs to."""
    state = _cursors.get(cur)
    if state is None:
        raise UlrError("this DuckDB connection is not a ulr store cursor; "
                       "use catalog.cursor().")
    return state.store.path


def _sync_views(cur, db: str, infos: list[DatasetInfo], *, drop_others: bool) -> None:
    """Make ``cur`` show each dataset (and its skipped rows) as a view over its file.

    The views of the store's shared reader database (:func:`cursor`) are remembered,
    so repeated opens ask DuckDB nothing. A view is dropped only once its file is gone
    (``drop_others``: one not in ``infos``): a session may still be reading a dataset
    that another one deleted, whose file stays in the trash for
    :data:`ulr.data.files.TRASH_GRACE_S`; the catalog, not the views, says what exists.
    """
    cache = store_cache(db)
    with cache.view_lock:
        have = cache.views
        if drop_others:
            wanted = {t for d in infos for t in (d.table, d.rejects_table) if t}
            for v in [v for v in have - wanted if not file_of(db, v).exists()]:
                cur.execute(f"DROP VIEW IF EXISTS {table_ident(v)}")
                have.discard(v)
        _make_views(cur, db, infos, have)


def _make_views(cur, db: str, infos: list[DatasetInfo], have: set[str]) -> None:
    for d in infos:
        for t in (d.table, d.rejects_table):
            if t and t not in have:
                try:
                    cur.execute(f"CREATE OR REPLACE VIEW {table_ident(t)} AS SELECT * FROM "
                                f"read_parquet({files.sql_str(file_of(db, t))})")
                except duckdb.IOException:
                    raise UlrError(f"the files of dataset {d.name!r} are missing from "
                                   f"{files.files_dir(db)}; load it again.") from None
                have.add(t)


def list_datasets(cur) -> list[DatasetInfo]:
    """Every stored dataset, read fresh from the catalog (another process may have loaded one)."""
    db = _db_of(cur)
    rows = catalog_read(db, "datasets", lambda con: tuple(con.execute(
        f"SELECT {_CAT_COLS} FROM ulr_catalog ORDER BY loaded_at, name").fetchall()))
    state = _cursors[cur]
    shown = state.shown
    if shown is not None and shown[0] is rows:  # the catalog_read value this cursor shows
        return list(shown[1])
    infos = [_row_to_info(r) for r in rows]
    _sync_views(cur, db, infos, drop_others=True)
    state.shown = (rows, tuple(infos))
    return infos


def _catalog_row(db: str, name: str):
    def read(con):
        row = con.execute(f"SELECT {_CAT_COLS} FROM ulr_catalog WHERE name = ?",
                          [name]).fetchone()
        known = () if row is not None else tuple(r[0] for r in con.execute(
            "SELECT name FROM ulr_catalog ORDER BY loaded_at, name LIMIT 10").fetchall())
        return row, known
    return catalog_read(db, "dataset:" + name, read)


def lookup(db: str, name: str) -> DatasetInfo | None:
    """The catalog row of dataset ``name`` in store ``db``, or None when there is none."""
    row, _ = _catalog_row(db, name)
    return None if row is None else _row_to_info(row)


def show(cur, info: DatasetInfo) -> None:
    """Make reader connection ``cur`` show dataset ``info`` (and its skipped rows) as views."""
    _sync_views(cur, _db_of(cur), [info], drop_others=False)


def get_dataset(cur, name: str) -> DatasetInfo:
    db = _db_of(cur)
    row, known = _catalog_row(db, name)
    if row is None:
        hint = f" Stored datasets: {', '.join(repr(clip(k, 40)) for k in known)}." if known \
            else " No datasets are stored yet; load one first."
        raise UlrError(f"there is no dataset named {clip(name)!r}.{hint}")
    info = _row_to_info(row)
    _sync_views(cur, db, [info], drop_others=False)
    return info


def rename_dataset(cur, old: str, new: str, *, actor: str | None = OPERATOR) -> str:
    """Rename ``old`` to ``new`` (returns ``new`` as stored, :func:`normal_name`); only its
    owner (or the operator, the default) may; a name that reads like another stored
    dataset's is refused."""
    new = check_name(new)
    with catalog(_db_of(cur), write=True) as con:
        _may_change(con, old, actor, "rename")
        if old == new:
            return new
        if con.execute("SELECT 1 FROM ulr_catalog WHERE name = ?", [new]).fetchone():
            raise UlrError(f"a dataset named {clip(new)!r} exists already.")
        _refuse_look_alike(_all_names(con), new, besides=old)
        con.execute("UPDATE ulr_catalog SET name = ? WHERE name = ?", [new, old])
    return new


def delete_dataset(cur, name: str, *, actor: str | None = OPERATOR) -> None:
    """Remove ``name`` from the catalog; its files go to the trash.

    Only its owner may, or the operator (the default: the command line and library
    callers hold the store's files); a dataset loaded before owners existed is the
    operator's alone (:meth:`DatasetInfo.may_change`). The owner is read and the row
    deleted in one write block, under the store's lock. Sessions reading it finish
    their reads (the files stay for :data:`ulr.data.files.TRASH_GRACE_S` seconds); new opens no
    longer find it.
    """
    db = _db_of(cur)
    with catalog(db, write=True) as con:
        row = _row_to_info(_may_change(con, name, actor, "delete"))
        con.execute("DELETE FROM ulr_catalog WHERE name = ?", [name])
        files.trash(con, (row.table, row.rejects_table))
        files.sweep(con, db)
    _cursors[cur].shown = None  # its view stays while its file may be read (_sync_views)


def rejected_rows(cur, name: str) -> pd.DataFrame:
    """The rows skipped when ``name`` was loaded with skip-bad-rows."""
    info = get_dataset(cur, name)
    if not info.rejects_table:
        return schema.no_rejects()
    return cur.execute(
        f"SELECT line, \"column\", problem, raw FROM {table_ident(info.rejects_table)} "
        "ORDER BY line"
    ).df()


def open_dataset(name: str, db_path=None, *, cur=None) -> Log:
    """Open a stored dataset on ``cur`` (default: a new reader of ``db_path``)."""
    cur = cur if cur is not None else cursor(db_path)
    info = get_dataset(cur, name)
    return Log(cur=cur, table=info.table, info=info)
