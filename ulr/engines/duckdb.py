"""The DuckDB engine: files, folders and globs read on this machine."""

from __future__ import annotations

import glob as _glob
import os
import re
import stat
from pathlib import Path

from ulr.data.files import csv_header, memory_connection
from ulr.engines.columns import declared_columns, integer_keys, typed_projection
from ulr.errors import UlrError
from ulr.data.scan import Scan


_KINDS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def _walk(folder: str) -> list[str]:
    """Every file under a folder; unreadable folders are skipped, links are not followed."""
    out = []
    for top, dirs, names in os.walk(folder, onerror=lambda exc: None, followlinks=False):
        out.extend(os.path.join(top, n) for n in names)
    return out


def expand(path: str, *, label: str | None = None) -> tuple[list[str], str]:
    """Regular Parquet or CSV files behind a path, folder or glob, and their kind.

    Only regular files with a ``.parquet``, ``.pq`` or ``.csv`` name count:
    devices, pipes and other files (a store's ``.duckdb``) never match, and an
    unreadable folder is skipped rather than failing the walk. Messages name
    ``label`` (what the user typed) instead of ``path`` when it is given.
    """
    p = str(path)
    shown = f"“{label}”" if label else repr(p)
    files = matching(p)
    if not files:
        raise UlrError(f"no Parquet or CSV file matches {shown}; check the path (a "
                       "file, a folder or a glob such as 'lake/*.parquet').")
    kinds = {_KINDS[Path(f).suffix.lower()] for f in files}
    if len(kinds) > 1:
        raise UlrError(f"{shown} mixes Parquet and CSV files; point it at one kind.")
    return files, kinds.pop()


def matching(path: str) -> list[str]:
    """The regular ``.parquet``, ``.pq`` and ``.csv`` files behind a path, folder or glob
    (sorted), of either kind: what :func:`expand` checks, and what a browser's path is
    checked against the roots with (:mod:`ulr.access`) before any check of their kinds."""
    p = str(path)
    try:
        found = _walk(p) if os.path.isdir(p) else _glob.glob(p, recursive=True)
    except OSError:
        found = []
    return sorted(f for f in found if Path(f).suffix.lower() in _KINDS and _regular(f))


def _regular(f: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(f).st_mode)
    except OSError:
        return False


_LINE = re.compile(r"\bline (\d+)", re.IGNORECASE)


def error_place(exc: Exception) -> str:
    """Where a reader failed ("at line N"), never what it read there."""
    m = _LINE.search(str(exc))
    return f" (at line {m.group(1)})" if m else ""


class _Cursor:
    """A DuckDB cursor whose errors (a value that does not cast) become one sentence."""

    def __init__(self, cur, name):
        self.cur, self.name = cur, name

    def execute(self, sql, params=None):
        import duckdb
        try:
            return self.cur.execute(sql, params)
        except duckdb.Error as exc:
            raise UlrError(f"the source {self.name!r} has values that do not fit the declared "
                           f"column types{error_place(exc)}.") from None


class DuckDBEngine:
    """Aggregates run in an in-memory DuckDB over the files in place (no copy)."""

    name = "duckdb"

    def scan(self, *, path: str | None = None, table: str | None = None) -> Scan:
        if table is not None:
            raise UlrError("a table name needs the spark engine; with duckdb give a path.")
        files, kind = expand(path)
        cur = memory_connection()
        if kind == "parquet":
            reader = "read_parquet($ulr_files, union_by_name = true)"
        else:  # header names first; every value read as text, then cast to the declared type
            names, delim = csv_header(Path(files[0]))
            reader = ("read_csv($ulr_files, header = true, all_varchar = true, "
                      "delim = $ulr_delim, union_by_name = true)")
        params = {"ulr_files": files} if kind == "parquet" else \
            {"ulr_files": files, "ulr_delim": delim}
        try:
            # reader: one of the two literals above; the files and delimiter are bound parameters
            types = {d[0]: d[1] for d in cur.execute(f"DESCRIBE SELECT * FROM {reader}",
                                                     params).fetchall()}
        except Exception as exc:  # unreadable file
            raise UlrError(f"cannot read {str(path)!r} as {kind.upper()}{error_place(exc)}.") from None
        cols = declared_columns(types)
        name = Path(str(path)).name or str(path)
        keep = integer_keys(types)  # Parquet ids stored as integers: cast per group, not row
        return Scan(cur=_Cursor(cur, name), from_sql=typed_projection(cols, reader), params=params,
                    columns=tuple(cols), name=name, checked=True,
                    keys_sql=typed_projection(cols, reader, keep=keep) if keep else None)
