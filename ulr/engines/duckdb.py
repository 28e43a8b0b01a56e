"""The DuckDB engine: files, folders and globs read on this machine."""

from __future__ import annotations

import glob as _glob
from pathlib import Path

from ulr import store
from ulr.engines import declared_columns, typed_projection
from ulr.errors import UlrError
from ulr.propensity.aggregate import Scan


def expand(path: str) -> tuple[list[str], str]:
    """Files behind a path, folder or glob, and their kind (``parquet`` or ``csv``)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(str(f) for f in p.rglob("*") if f.is_file()
                       and f.suffix.lower() in (".parquet", ".csv"))
    else:
        files = sorted(_glob.glob(str(path), recursive=True))
    if not files:
        raise UlrError(f"no file matches {str(path)!r}; check the path (a file, a folder or "
                       "a glob such as 'lake/*.parquet').")
    kinds = {"parquet" if f.lower().endswith(".parquet") else "csv" for f in files}
    if len(kinds) > 1:
        raise UlrError(f"{str(path)!r} mixes Parquet and CSV files; point it at one kind.")
    return files, kinds.pop()


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
                           f"column types: {str(exc).splitlines()[0]}") from None


class DuckDBEngine:
    """Aggregates run in an in-memory DuckDB over the files in place (no copy)."""

    name = "duckdb"

    def scan(self, *, path: str | None = None, table: str | None = None) -> Scan:
        if table is not None:
            raise UlrError("a table name needs the spark engine; with duckdb give a path.")
        files, kind = expand(path)
        cur = store.new_memory_cursor()
        if kind == "parquet":
            reader = "read_parquet($ulr_files, union_by_name = true)"
        else:  # header names first; every value read as text, then cast to the declared type
            names, delim = store.csv_header(Path(files[0]))
            reader = ("read_csv($ulr_files, header = true, all_varchar = true, "
                      "delim = $ulr_delim, union_by_name = true)")
        params = {"ulr_files": files} if kind == "parquet" else \
            {"ulr_files": files, "ulr_delim": delim}
        try:
            names = [d[0] for d in cur.execute(f"DESCRIBE SELECT * FROM {reader}",
                                               params).fetchall()]
        except Exception as exc:  # unreadable file
            raise UlrError(f"cannot read {str(path)!r}: {str(exc).splitlines()[0]}") from None
        cols = declared_columns(names)
        name = Path(str(path)).name or str(path)
        return Scan(cur=_Cursor(cur, name), from_sql=typed_projection(cols, reader), params=params,
                    columns=tuple(cols), name=name, checked=True)
