"""Registered sources: a Parquet/CSV lake or a Spark table, aggregated incrementally.

A source is a name for a path (file, folder or glob) or a Spark table, and
the engine that aggregates it; the catalog table ``ulr_sources`` records it.
For a local path every file is a partition, keyed by path, size and
modification time: a refresh aggregates only new or changed files and drops
the statistics of files that are gone. A Spark table, or a path Spark reads
from elsewhere (hdfs://, s3a://), is one partition, re-aggregated on each
refresh.

Layout and the one commit point
-------------------------------
Its per-partition statistics (:mod:`ulr.engines.incremental`) live in the
store's own folder, ``<store>_files/sources/<name>/`` (``data/ulr_files/
sources/NAME`` for ``data/ulr.duckdb``), so two stores in one folder never
share them. Every add or refresh is a new *generation* (a random id): it
writes new immutable files (the statistics of new or changed partitions, the
running total) and a manifest ``manifest-<generation>.json`` naming every file
of the generation, each flushed to disk. The ONE commit point is the catalog
transaction that writes the source's row with ``rows``, ``partitions`` and the
new ``generation``. Readers (:func:`scan`, :func:`summary`,
:func:`ctr_by_position`, :func:`version`) read the row, then only the files its
manifest names; they never list the folder. Files of the previous generation
are deleted after the commit, and any file no committed manifest names (left
by a killed run) is swept by the next add or refresh of that source; the
folder of a source without a row (a killed remove or add) is swept by the
next add, refresh or remove of any source. So a kill at any point leaves the
row and what readers see both as they were before, or both as after.

An add, refresh or remove holds ``sources/.<name>.lock`` (``flock``) for its
whole run: a second one on the same source is refused with a sentence. A
reader that loses its files to a refresh that committed meanwhile reads the
new generation instead.

Statistics of the old layout
----------------------------
Older versions kept the statistics in ``sources/<name>/`` beside the store
file, shared by every store of that folder. A row without a generation is of
that layout: readers sum its partition files there, as before, until the next
``source refresh``, which copies in the statistics of the files that are
unchanged (a partition's statistics depend only on its file's path, size and
modification time, so they are valid for any store), aggregates the rest, and
from then on the source reads only its own folder. The old folder is never
written or deleted here, since other stores may still read it: delete
``<db folder>/sources/`` once every store in that folder has been refreshed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from ulr import engines
from ulr import validate

from ulr.data import catalog
from ulr.data.files import default_db_path, files_dir, memory_connection
from ulr.engines import incremental as inc
from ulr.errors import UlrError
from ulr.text import clip
from ulr.data import scan as A
from ulr.data import summary as data_summary

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DDL = ("CREATE TABLE IF NOT EXISTS ulr_sources (name VARCHAR PRIMARY KEY, engine VARCHAR, "
        "path VARCHAR, tbl VARCHAR, spark_master VARCHAR, partitions INTEGER, rows BIGINT, "
        "refreshed_at TIMESTAMP, generation VARCHAR)")
_MIGRATE = "ALTER TABLE ulr_sources ADD COLUMN IF NOT EXISTS generation VARCHAR"
_COLS = ("name", "engine", "path", "tbl", "spark_master", "partitions", "rows", "refreshed_at")
_EMPTY = {"generation": None, "parts": {}, "total": None}


def _root(db_path=None) -> Path:
    return files_dir(db_path) / "sources"


def stats_dir(name: str, db_path=None) -> Path:
    """Where a source's statistics live: ``data/ulr_files/sources/NAME`` for ``data/ulr.duckdb``."""
    return _root(db_path) / name


def _legacy_dir(name: str, db_path=None) -> Path:
    """Where older versions kept them, shared by every store of the folder."""
    return Path(default_db_path() if db_path is None else db_path).parent / "sources" / name


# --------------------------------------------------------------------------- manifests


def _manifest_file(folder: Path, generation: str) -> Path:
    return folder / f"manifest-{generation}.json"


def _write_manifest(folder: Path, manifest: dict) -> None:
    """Write the manifest of a generation, flushed, and flush the folder's entries."""
    out = _manifest_file(folder, manifest["generation"])
    tmp = out.with_name(f".tmp-{os.getpid()}-{out.name}")
    try:
        tmp.write_text(json.dumps(manifest, sort_keys=True))
        inc.publish(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    inc.flush(folder, folder=True)


def _read_manifest(folder: Path, generation: str | None) -> dict:
    return _EMPTY if generation is None else \
        json.loads(_manifest_file(folder, generation).read_text())


def _files_of(manifest: dict) -> set[str]:
    """The file names a manifest keeps alive (itself included)."""
    if manifest["generation"] is None:
        return set()
    return {*manifest["parts"].values(), manifest["total"],
            _manifest_file(Path(), manifest["generation"]).name} - {None}


# --------------------------------------------------------------------------- lock and sweeps


@contextlib.contextmanager
def _locked(name: str, db_path):
    """Hold the source's lock file for the block; yields a dict: set ``drop`` to delete it.

    The lock file is re-checked after the ``flock``: a holder that deleted it
    (the source is gone) makes the next one lock a fresh file.
    """
    root = _root(db_path)
    root.mkdir(parents=True, exist_ok=True)
    path = root / f".{name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UlrError(f"the source {name!r} is being added, refreshed or removed by "
                           "another process; try again when it is done.") from None
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        os.close(fd)
    state = {"drop": False}
    try:
        yield state
    finally:
        if state["drop"]:
            path.unlink(missing_ok=True)
        os.close(fd)


def _cleanup(folder: Path, keep: set[str]) -> None:
    """Delete every file of the folder that ``keep`` does not name (the lock is held)."""
    if not folder.is_dir():
        return
    for f in sorted(folder.iterdir()):
        if f.name not in keep:
            f.unlink(missing_ok=True)
    if not keep:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _sweep_orphans(db_path) -> None:
    """Delete the statistics folders (and lock files) of sources that have no row (left by a
    killed add or remove)."""
    root = _root(db_path)
    if not root.is_dir():
        return
    names = {f.name for f in root.iterdir() if f.is_dir()} | \
        {f.name[1:-len(".lock")] for f in root.glob(".*.lock")}
    known = {s["name"] for s in _rows(db_path)}
    for name in sorted(names - known):
        with contextlib.suppress(UlrError), _locked(name, db_path) as lock:
            if _row(name, db_path) is None:  # still none, now that it is ours
                shutil.rmtree(root / name, ignore_errors=True)
                lock["drop"] = True


# --------------------------------------------------------------------------- aggregation


def _local_files(path: str) -> list[str] | None:
    """The files behind a local path/glob (None for a URI only Spark reads)."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", path):
        return None
    from ulr.engines.duckdb import expand
    return expand(path)[0]


def _partition_key(f: str) -> str:
    st = Path(f).stat()
    return f"{Path(f).resolve()}|{st.st_size}|{st.st_mtime_ns}"


def _copy_legacy(legacy: Path | None, key: str, out: Path) -> bool:
    """Copy the old layout's statistics of ``key`` to ``out``, if it has them."""
    old = legacy / f"part-{inc.key_hash(key)}.parquet" if legacy is not None else None
    if old is None or not old.is_file():
        return False
    tmp = out.with_name(f".tmp-{os.getpid()}-{out.name}")
    try:
        shutil.copyfile(old, tmp)
        inc.publish(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _aggregate(name: str, src: dict, old: dict, db_path, legacy: Path | None):
    """Write the files of a new generation; returns (manifest, scanned now, rows).

    Partitions of the ``old`` manifest that are unchanged are kept as they are;
    the total is ``old total + new partitions - dropped ones`` when there is an
    old total, else the sum of every partition. Nothing old is touched.
    """
    folder = stats_dir(name, db_path)
    folder.mkdir(parents=True, exist_ok=True)
    gen = uuid.uuid4().hex[:16]
    engine, path, table = src["engine"], src["path"], src["tbl"]
    eng = engines.get(engine, **({"master": src["spark_master"]} if engine == "spark" else {}))
    files = _local_files(path) if path else None
    keys = {f"{table or path}": None} if files is None else \
        {_partition_key(f): f for f in files}
    parts, scanned = {}, 0
    for key, f in keys.items():
        h = inc.key_hash(key)
        if f is not None and h in old["parts"]:
            parts[h] = old["parts"][h]  # already aggregated and unchanged
            continue
        out = inc.partition_file(folder, key, gen)
        if f is None or not _copy_legacy(legacy, key, out):
            inc.add_partition(folder, key, eng.scan(path=f or path, table=None if f else table),
                              generation=gen)
            scanned += 1
        parts[h] = out.name
    if parts == old["parts"]:
        return old, 0, None  # nothing changed: the generation stays
    plus = [folder / p for p in parts.values() if p not in old["parts"].values()]
    minus = [folder / p for p in old["parts"].values() if p not in parts.values()]
    base = folder / old["total"] if old["total"] else None
    total = inc.write_total(folder / f"total-{gen}.parquet",
                            [folder / p for p in parts.values()], base=base,
                            plus=plus if base else (), minus=minus if base else ())
    manifest = {"generation": gen, "parts": parts, "total": total.name}
    _write_manifest(folder, manifest)
    rows = int(inc.merged_cell_stats([folder / p for p in parts.values()], total=total,
                                     name=name).rows)
    return manifest, scanned, rows


def _run(name: str, src: dict, db_path, commit, legacy: Path | None = None) -> dict:
    """Aggregate a generation, ``commit(con, manifest, rows, now)`` it, delete the old one.

    Under the source's lock: on any failure the new files are deleted and the
    old generation stays; after the commit the old generation's files (and any
    leftovers of killed runs) are deleted.
    """
    folder = stats_dir(name, db_path)
    try:
        old = _read_manifest(folder, src["generation"])
    except (FileNotFoundError, ValueError):  # lost or damaged by hand: aggregate afresh
        old = _EMPTY
    try:
        manifest, scanned, rows = _aggregate(name, src, old, db_path, legacy)
        rows = src["rows"] if rows is None else rows
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        with catalog.catalog(db_path, write=True) as con:
            con.execute(_DDL)
            con.execute(_MIGRATE)
            commit(con, manifest, rows, now)
    except BaseException:
        _cleanup(folder, _files_of(old))
        raise
    _cleanup(folder, _files_of(manifest))
    _sweep_orphans(db_path)
    return _jsonable({**{k: src[k] for k in _COLS}, "partitions": len(manifest["parts"]),
                      "rows": rows, "refreshed_at": now, "scanned": scanned})


def add(name: str, *, path: str | None = None, table: str | None = None,
        engine: str = "duckdb", master: str | None = "local[2]", db_path=None) -> dict:
    """Register a source and aggregate it (the catalog row is the commit point)."""
    if not _NAME.match(name or ""):
        raise UlrError(f"source name {clip(str(name))!r} must be letters, digits, '_', '.' "
                       "or '-'.")
    if (path is None) == (table is None):
        raise UlrError("a source is either a path or a table.")
    if table is not None and engine != "spark":
        raise UlrError("a table source needs the spark engine.")
    src = {"name": name, "engine": engine, "path": path, "tbl": table,
           "spark_master": master if engine == "spark" else None, "partitions": 0, "rows": 0,
           "refreshed_at": None, "generation": None}

    def insert(con, manifest, rows, now):
        row = {**src, "partitions": len(manifest["parts"]), "rows": rows, "refreshed_at": now,
               "generation": manifest["generation"]}
        # the column names are the fixed keys of ``src`` above; every value is bound (?)
        con.execute(f"INSERT INTO ulr_sources ({', '.join(row)}) VALUES "
                    f"({', '.join('?' * len(row))})", list(row.values()))

    with _locked(name, db_path) as lock:
        if _row(name, db_path) is not None:
            raise UlrError(f"a source called {name!r} already exists; refresh it or pick "
                           "another name.")
        twin = next((s["name"] for s in _rows(db_path)
                     if catalog.name_key(s["name"]) == catalog.name_key(name)), None)
        if twin is not None:  # the picker would show two names that read alike
            raise UlrError(f"the source name {name!r} reads like the registered source "
                           f"{twin!r} (they differ only by case or look-alike characters); "
                           "choose a clearly different name.")
        try:
            return _run(name, src, db_path, insert)
        except BaseException:
            lock["drop"] = True
            raise


def refresh(name: str, *, db_path=None) -> dict:
    """Aggregate the partitions added or changed since the last refresh."""
    _known(name, db_path)
    with _locked(name, db_path):
        src = _known(name, db_path)  # as it is now that the source is ours

        def update(con, manifest, rows, now):
            con.execute("UPDATE ulr_sources SET partitions = ?, rows = ?, refreshed_at = ?, "
                        "generation = ? WHERE name = ?",
                        [len(manifest["parts"]), rows, now, manifest["generation"], name])
        legacy = _legacy_dir(name, db_path) if src["generation"] is None else None
        return _run(name, src, db_path, update, legacy)


def remove(name: str, *, db_path=None) -> dict:
    """Forget a source and delete its stored statistics (the rows it points at stay).

    Deleting the catalog row is the commit point: a failure before it leaves
    the source as it was; the statistics folder is deleted after it (a kill
    in between leaves a folder without a row, swept by the next add, refresh
    or remove of any source).
    """
    _known(name, db_path)
    with _locked(name, db_path) as lock:
        src = _known(name, db_path)
        with catalog.catalog(db_path, write=True) as con:
            con.execute("DELETE FROM ulr_sources WHERE name = ?", [name])
        lock["drop"] = True
        shutil.rmtree(stats_dir(name, db_path), ignore_errors=True)
    _sweep_orphans(db_path)
    return {**{k: src[k] for k in _COLS}, "removed": True}


# --------------------------------------------------------------------------- readers


def _rows(db_path=None) -> list[dict]:
    """Every catalog row, with its ``generation`` (None for the old layout)."""
    def read(con):
        try:
            cur = con.execute("SELECT * FROM ulr_sources ORDER BY name")
        except duckdb.CatalogException:  # no source registered yet: the table does not exist
            return ()
        cols = [d[0] for d in cur.description]
        return tuple(tuple(zip(cols, r)) for r in cur.fetchall())
    rows = catalog.catalog_read(db_path, "sources", read)
    return [{"generation": None, **_jsonable(dict(r))} for r in rows]


def _row(name: str, db_path=None) -> dict | None:
    return next((s for s in _rows(db_path) if s["name"] == name), None)


def _known(name: str, db_path) -> dict:
    src = _row(name, db_path)
    if src is None:
        raise UlrError(f"no source called {name!r}; see `source list`.")
    return src


def list_sources(db_path=None) -> list[dict]:
    return [{k: s[k] for k in _COLS} for s in _rows(db_path)]


def _jsonable(src: dict) -> dict:
    t = src.get("refreshed_at")
    if isinstance(t, datetime):
        src["refreshed_at"] = t.strftime("%Y-%m-%d %H:%M:%S")
    return src


def get(name: str, *, db_path=None) -> dict | None:
    src = _row(name, db_path)
    return None if src is None else {k: src[k] for k in _COLS}


def _snapshot(name: str, db_path) -> tuple[list[Path], Path | None, str]:
    """The committed statistics: (partition files, total file or None, version)."""
    src = _known(name, db_path)
    if src["generation"] is None:  # the old layout: its partitions, summed afresh
        parts = sorted(_legacy_dir(name, db_path).glob("part-*.parquet"))
        h = hashlib.sha256()
        for p in parts:
            st = p.stat()
            h.update(f"{p.name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        return parts, None, "legacy-" + h.hexdigest()[:16]
    folder = stats_dir(name, db_path)
    m = _read_manifest(folder, src["generation"])
    return [folder / p for p in m["parts"].values()], folder / m["total"], m["generation"]


def _reading(name: str, db_path, read):
    """``read(parts, total, version)`` on the committed statistics; read again if a
    refresh that committed meanwhile deleted the files being read."""
    for _ in range(3):
        snap = None
        try:
            snap = _snapshot(name, db_path)
            return read(*snap)
        except (FileNotFoundError, duckdb.IOException):
            if snap is not None and _all_exist(*snap[:2]):
                raise  # not a file deleted under the reader
    raise UlrError(f"the statistics of the source {name!r} changed or went missing while "
                   "they were read; try again, or refresh it.")


def _all_exist(parts, total) -> bool:
    return all(p.exists() for p in [*parts, *([total] if total else [])])


def scan(name: str, *, db_path=None) -> A.Scan:
    """A Scan whose cell statistics come from the stored partitions (no rows read).

    Every ``cells`` call of one Scan reads the same generation; if a refresh
    deleted it meanwhile, the call says so in one sentence.
    """
    parts, total, _ = _reading(name, db_path, lambda *snap: snap)

    def cells(positions, groups):
        try:
            return inc.merged_cell_stats(parts, total=total, positions=positions,
                                         groups=groups, name=name)
        except duckdb.IOException:
            if not _all_exist(parts, total):
                raise UlrError(f"the source {name!r} was refreshed while it was read; run "
                               "again.") from None
            raise
    return A.Scan(cur=None, from_sql="", params={}, columns=(), name=name, checked=False,
                  cells=cells)


def mapping_warnings(name: str, *, db_path=None) -> tuple:
    """:func:`ulr.lists.mapping_warnings` of a source, on its stored statistics: they keep
    (query, document) per cell, so the query check is exact over every row. A source stores
    no sessions, so the session checks do not apply."""
    from ulr.lists import mapping_warnings as check

    def read(parts, total, _version):
        files = [str(total)] if total is not None else [str(p) for p in parts]
        return check(A.Scan(cur=memory_connection(), from_sql="read_parquet($ulr_files)",
                            params={"ulr_files": files}, columns=("query_id", "doc_id"),
                            name=name, checked=True))
    return _reading(name, db_path, read)


def version(name: str, *, db_path=None) -> str:
    """Changes whenever the source's stored statistics change (a cheap cache key)."""
    return _snapshot(name, db_path)[2]


def summary(name: str, *, db_path=None) -> dict:
    """Rows, clicks, queries, documents, pairs and positions from the stored statistics
    (sessions are not stored: ``None``), plus ``version``, which changes on every change."""
    return _reading(name, db_path, lambda parts, total, v: {
        **inc.summary(parts, total=total, name=name), "version": v})


@validate.params(level=validate.level)
def ctr_by_position(name: str, *, db_path=None, level: float = 0.95):
    """The Data page's CTR table from the stored statistics (no rows read)."""
    st = _reading(name, db_path, lambda parts, total, v: inc.merged_cell_stats(
        parts, total=total, name=name))
    return data_summary.ctr_by_position(st, level=level)


@validate.params(level=validate.level)
def ctr_by_position_result(name: str, *, db_path=None, level: float = 0.95
                           ) -> data_summary.CtrByPosition:
    """:func:`ctr_by_position` with its verdict, and the evidence of the same stored
    statistics (rows, clicks, queries; a source stores no sessions)."""
    summ, st = _reading(name, db_path, lambda parts, total, v: (
        inc.summary(parts, total=total, name=name),
        inc.merged_cell_stats(parts, total=total, name=name)))
    return data_summary.CtrByPosition(data_summary.ctr_by_position(st, level=level),
                                      level=level, rows=summ["rows"], clicks=summ["clicks"],
                                      queries=summ["queries"])
