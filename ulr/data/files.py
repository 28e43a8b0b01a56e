"""The store's files: where they live, sniffing a file, durability, temporary files, the
trash, and the in-memory DuckDB connections with their spill folders.

For a store ``data/ulr.duckdb`` (``ULR_DB`` overrides it) the datasets are immutable
Parquet files in ``data/ulr_files`` (:func:`files_dir`): written once under a temporary
name (:func:`tmp_file`), fsync'ed (:func:`fsync`), and renamed into place by the catalog
(:mod:`ulr.data.catalog`). Files of deleted or replaced datasets stay in the trash for
:data:`TRASH_GRACE_S` seconds; :func:`sweep` purges them, and files of dead loads.

Nothing runs at import. The settings (``ULR_MEMORY_LIMIT``, ``ULR_LOCK_TIMEOUT``) are read
from the environment, and the spill folders of dead processes swept, by :func:`configure`:
on first use (:func:`settings`), or explicitly to read the environment again.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import csv
import io
import itertools
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ulr.data import schema
from ulr.errors import UlrError

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "data"
DEFAULT_DB = DATA_DIR / "ulr.duckdb"
TRASH_GRACE_S = 600.0

_TMP_RE = re.compile(r"^\.tmp-(\d+)-[0-9a-f]{16}\.parquet$")


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """What the environment says about the store's resources."""

    memory_limit: str  # ULR_MEMORY_LIMIT: DuckDB's memory limit per in-memory database
    lock_timeout_s: float  # ULR_LOCK_TIMEOUT: how long a catalog block waits for the lock
    spill_root: Path  # the folder of the in-memory databases' spill folders

    @classmethod
    def from_env(cls) -> Settings:
        return cls(memory_limit=os.environ.get("ULR_MEMORY_LIMIT", "4GB"),
                   lock_timeout_s=float(os.environ.get("ULR_LOCK_TIMEOUT", "30")),
                   spill_root=Path(tempfile.gettempdir()) / "ulr_spill")


_settings: list[Settings] = []  # the settings in force, once configured
_configure_lock = threading.Lock()
_spill_ids = itertools.count()


def configure(settings: Settings | None = None) -> Settings:
    """Put ``settings`` (default: read from the environment now) in force, sweep the spill
    folders their root holds for processes that no longer exist, and, the first time,
    have this process's own spill folders removed at exit."""
    new = settings or Settings.from_env()
    with _configure_lock:
        if not _settings:
            atexit.register(_clean_spill, mine=True)
        _settings[:] = [new]
    _clean_spill(mine=False)
    return new


def settings() -> Settings:
    """The settings in force (:func:`configure` reads them on first use)."""
    return _settings[0] if _settings else configure()


# --------------------------------------------------------------------------- paths


def default_db_path() -> str:
    return os.environ.get("ULR_DB") or str(DEFAULT_DB)


def store_path(db_path=None) -> str:
    """The absolute path of the store ``db_path`` (default: :func:`default_db_path`)."""
    return str(Path(db_path or default_db_path()).resolve())


def files_dir(db_path=None) -> Path:
    """The folder of a store's Parquet files: ``data/ulr_files`` for ``data/ulr.duckdb``."""
    p = Path(store_path(db_path))
    return p.with_name(p.stem + "_files")


def file_of(db: str, table: str) -> Path:
    """The Parquet file of table ``table`` (``ds_<hex>`` or ``rj_<hex>``) in store ``db``."""
    return files_dir(db) / f"{schema.table_ident(table)}.parquet"


def tmp_file(db: str) -> Path:
    """A new temporary file name in store ``db``'s folder, owned by this process."""
    return files_dir(db) / f".tmp-{os.getpid()}-{uuid.uuid4().hex[:16]}.parquet"


def sql_str(text) -> str:
    """A SQL string literal (for file paths the store built itself; DDL cannot bind)."""
    return "'" + str(text).replace("'", "''") + "'"


def first_line(exc: Exception) -> str:
    """The first line of an error's message (a reader's errors run over many lines)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --------------------------------------------------------------------------- sniffing


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


#: the longest line a CSV may have: DuckDB's reader (``max_line_size``) skips a longer one
MAX_LINE_BYTES = 2_000_000
#: the longest header line read (a LETOR file's 136 feature names take about 2 KB)
MAX_HEADER_BYTES = 64_000
_CHUNK = 1 << 20


def size_text(n: int) -> str:
    """A byte count as people read it: "60 MB", "1.5 MB", "64 KB", "900 bytes"."""
    if n >= 10_000_000:
        return f"{n / 1e6:,.0f} MB"
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}".removesuffix(".0") + " MB"
    if n >= 1_000:
        return f"{n / 1e3:,.0f} KB"
    return f"{n} bytes"


def long_line(path, limit: int, *, first_only: bool = False) -> tuple[int, int] | None:
    """``(line number, bytes)`` of the first line of ``path`` longer than ``limit`` bytes
    (without its line break), or None; ``first_only`` looks at line 1 alone. ``limit`` is
    at least 1 MB unless ``first_only``.

    One pass in 1 MB chunks, counting line breaks with ``bytes.count`` (memchr speed): a
    line longer than the chunk spans a chunk without a line break, so only the lines that
    cross a chunk's edge are measured.
    """
    lines, run = 0, 0  # complete lines before the current one; its bytes so far
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            first = chunk.find(b"\n")
            if first < 0:
                run += len(chunk)
                continue
            if run + first > limit:
                return lines + 1, run + first
            if first_only:
                return None
            lines += chunk.count(b"\n")
            run = len(chunk) - chunk.rfind(b"\n") - 1
    return (lines + 1, run) if run > limit else None


def refuse_long_lines(path, shown: str, *, header_only: bool = False) -> None:
    """Refuse (one sentence) a CSV whose header passes :data:`MAX_HEADER_BYTES` or whose
    rows pass :data:`MAX_LINE_BYTES`: named as such, before anything reads it."""
    hit = long_line(path, MAX_HEADER_BYTES, first_only=True)
    if hit:
        raise UlrError(f"line 1 of {shown} (its header) is {size_text(hit[1])} long, and a "
                       f"header may take {size_text(MAX_HEADER_BYTES)} (one row per line); "
                       "nothing was stored.")
    if header_only:
        return
    hit = long_line(path, MAX_LINE_BYTES)
    if hit:
        raise UlrError(f"line {hit[0]:,} of {shown} is {size_text(hit[1])} long, and a row "
                       f"may take {size_text(MAX_LINE_BYTES)}; nothing was stored.")


def csv_header(path: Path, shown: str | None = None) -> tuple[list[str], str]:
    """Column names from the first record, and the delimiter.

    Read here rather than by DuckDB's sniffer, which can mistake a ragged
    row for the header. A UTF-8 byte order mark (Excel's "CSV UTF-8") is not
    part of the first name; an empty name becomes "column <n>" (1-based, as a
    spreadsheet reads it; a pandas index column has no name); two
    columns of the same name are refused (:func:`schema.refuse_duplicates`).
    """
    refuse_long_lines(path, shown or path.name, header_only=True)
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
    names = [h.strip() or f"column {i + 1}" for i, h in enumerate(header)]  # as a sheet names it
    schema.refuse_duplicates(names, shown)
    return names, delim


# --------------------------------------------------------------------------- durability


def fsync(path) -> None:
    """Flush a file (or a folder's entries) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """:func:`fsync` a folder, so that renames into it survive a crash (where it can)."""
    with contextlib.suppress(OSError):
        fsync(folder)


# --------------------------------------------------------------------------- trash


def trash(con, tables) -> None:
    """Inside a catalog write block: put the files of ``tables`` in the trash (the catalog's
    ``ulr_trash`` table), where they stay for :data:`TRASH_GRACE_S` seconds."""
    for t in tables:
        if t:
            con.execute("INSERT OR REPLACE INTO ulr_trash VALUES (?, ?)",
                        [schema.table_ident(t), time.time()])


def sweep_dead_tmp(db: str) -> list[Path]:
    """Delete the temporary files of loads whose process no longer exists (a load killed
    before its ``finally``); run once per store by each process that opens it, and by
    :func:`sweep`. Needs no lock: no live load owns them."""
    folder = files_dir(db)
    gone = []
    if folder.is_dir():
        for f in folder.iterdir():
            m = _TMP_RE.match(f.name)
            if m and not _pid_alive(int(m.group(1))):
                f.unlink(missing_ok=True)
                gone.append(f)
    return gone


def sweep(con, db: str) -> None:
    """Inside a catalog write block: purge expired trash and files no live load will publish.

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
        elif f.suffix == ".parquet" and schema.TABLE_RE.match(f.stem) and f.stem not in known:
            f.unlink(missing_ok=True)


# --------------------------------------------------------------------------- spill


def memory_connection() -> duckdb.DuckDBPyConnection:
    """A private in-memory DuckDB with the memory limit and its own spill folder.

    Spill folders live under one shared root, are created by DuckDB only when it
    spills, and are removed at exit (and, for killed processes, by the next one).
    """
    s = settings()
    spill = s.spill_root / f"{os.getpid()}-{next(_spill_ids)}"
    # DuckDB makes the spill folder itself, but not its parent: without the root, the
    # first query that spills fails ("Failed to create directory")
    s.spill_root.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(":memory:", config={"memory_limit": s.memory_limit,
                                              "temp_directory": str(spill)})


def _clean_spill(*, mine: bool) -> None:
    root = settings().spill_root
    if not root.is_dir():
        return
    for d in root.iterdir():
        pid = d.name.split("-", 1)[0]
        if not pid.isdigit():
            continue
        if (mine and int(pid) == os.getpid()) or (not mine and not _pid_alive(int(pid))):
            shutil.rmtree(d, ignore_errors=True)
