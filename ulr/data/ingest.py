"""Loading a click log: sniff, stage, check the schema rules, refuse or keep, publish.

A load stages and validates the file in a private in-memory DuckDB, without
the store's lock (:mod:`ulr.data.catalog`): a refused, failed or killed load
leaves the catalog and every stored file as they were. Only the final rename of
the fsync'ed Parquet files and the catalog insert take the lock
(:func:`ulr.data.catalog.publish`). :func:`open_file` runs the same steps and opens the
result in memory without storing it. The steps (:func:`new_job`, :func:`stage`,
:func:`check_rows`, :func:`problem_text`, :func:`list_warnings`) are public for the mapping
check before Load (:mod:`ulr.data.precheck`), which runs them on a file's first rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np

if TYPE_CHECKING:  # pandas is imported where it is used: start-up time of the CLI
    import pandas as pd

from ulr.data import catalog, files, schema
from ulr.data.files import first_line, memory_connection, sniff_kind
from ulr.data.log import OPERATOR, DatasetInfo, Log
from ulr.data.mapping import Mapping, derived_columns, plan_columns
from ulr.data.schema import ColumnPlan, quote_ident, safe_ident, table_ident
from ulr import validate
from ulr.errors import Refused, UlrError
from ulr.text import clip

SAMPLE_CSV = files.DATA_DIR / "sample_clicks.csv"
SAMPLE_NAME = "sample"
_FIRST_LINES = 5
_sample_lock = threading.Lock()


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


def _check_parquet_names(path: Path, shown: str) -> None:
    """Refuse a Parquet file with two top-level columns of the same name.

    Read from the file's own schema: DuckDB renames a repeated name (``f``, ``f_1``).
    """
    import pyarrow.parquet as pq
    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # noqa: BLE001 - any reader failure is the file's problem
        raise UlrError(f"cannot read {shown} as Parquet: {first_line(exc)}") from None
    schema.refuse_duplicates(names, shown)


def _file_columns(cur, path: Path, kind: str,
                    shown: str | None = None) -> tuple[list[str], str | None]:
    shown = shown or path.name
    if kind == "csv":
        return files.csv_header(path, shown)
    _check_parquet_names(path, shown)
    try:
        desc = cur.execute("SELECT * FROM read_parquet(?) LIMIT 0", [str(path)]).description
    except duckdb.Error as exc:
        raise UlrError(f"cannot read {shown} as Parquet: {first_line(exc)}") from None
    return [d[0] for d in desc], None


def _lines_of_rows(rowids: np.ndarray, reject_lines: np.ndarray) -> np.ndarray:
    """CSV line numbers of staged rows (header = line 1), skipping rejected lines."""
    r = np.sort(np.asarray(reject_lines, dtype=np.int64))
    if len(r) == 0:
        return rowids + 2
    k = np.searchsorted(r - np.arange(len(r)) - 2, rowids, side="right")
    return rowids + 2 + k


@dataclass
class LoadJob:
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
    stg: str = field(default_factory=lambda: table_ident("ds_" + uuid.uuid4().hex[:16]))
    staged: int = 0
    reject_lines: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    cast_rejects: pd.DataFrame = field(default_factory=schema.no_rejects)
    rules: list = field(default_factory=list)
    # (source, role, count, first lines, problem, first values)
    problems: list = field(default_factory=list)
    bad_total: int = 0
    good: int = 0
    rejected: pd.DataFrame | None = None
    limit: int | None = None  # stage only the file's first rows (the mapping check's sample)

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


def new_job(path, name, mapping, skip_bad_rows, file_name, *, quick_hash: bool,
            whole: bool = True) -> LoadJob:
    """A load of ``path`` (``whole``: every row, so every line's length is checked first:
    the reader would skip a longer one, :func:`ulr.data.files.refuse_long_lines`)."""
    name = catalog.check_name(name)
    p = Path(path)
    shown = clip(file_name or p.name)
    kind = sniff_kind(p, shown)
    if kind == "csv" and whole:
        files.refuse_long_lines(p, shown)
    con = memory_connection()
    columns, delim = _file_columns(con, p, kind, shown)
    m = Mapping.coerce(mapping, columns)  # once: plan_columns takes the Mapping as it is
    plans = plan_columns(columns, m)
    used = m.stored(plans)
    check_feature_values(p, kind, delim, plans)
    extra = json.dumps([used, bool(skip_bad_rows)], sort_keys=True)
    if quick_hash:  # a one-off read: identify the file by path, size and mtime (no full hash)
        st_ = p.stat()
        content_hash = hashlib.sha256(
            f"{p.resolve()}|{st_.st_size}|{st_.st_mtime_ns}|{extra}".encode()).hexdigest()
    else:
        content_hash = file_hash(p, extra)
    return LoadJob(path=p, kind=kind, delim=delim, plans=plans, name=name,
                    shown=shown, content_hash=content_hash, mapping=used,
                    skip_bad_rows=skip_bad_rows, con=con)


def stage(job: LoadJob) -> None:
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
                            f"FROM read_parquet(?){_limit(job)}", [str(job.path)])
        except duckdb.Error as exc:
            raise UlrError(f"cannot read {job.shown} as Parquet: {first_line(exc)}") from None
    job.staged = job.con.execute(f"SELECT count(*) FROM {job.stg}").fetchone()[0]


def _limit(job: LoadJob) -> str:
    return "" if job.limit is None else f" LIMIT {int(job.limit)}"


def _stage_csv(job: LoadJob) -> None:
    import pandas as pd
    types = {pl.stored: pl.read_type for pl in job.plans}
    try:
        job.con.execute(
            f"CREATE TABLE {job.stg} AS SELECT * FROM read_csv(?, header = true, columns = ?, "
            "delim = ?, quote = '\"', escape = '\"', auto_detect = false, "
            "ignore_errors = true, store_rejects = true, rejects_table = 'ulr_rejects', "
            f"rejects_scan = 'ulr_reject_scans', null_padding = false){_limit(job)}",
            [str(job.path), types, job.delim])
    except duckdb.Error as exc:
        raise UlrError(f"cannot read {job.shown} as CSV: {first_line(exc)}") from None
    last = "" if job.limit is None else f" AND line <= {int(job.limit) + 1}"  # in the sample
    rej = job.con.execute(
        "SELECT line, column_name, error_type, csv_line FROM ulr_rejects "
        f"WHERE scan_id = (SELECT max(scan_id) FROM ulr_rejects){last} ORDER BY line").df()
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


def check_rows(job: LoadJob) -> None:
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


def _raw_lines(path: Path, lines) -> list[str]:
    """The text of ``lines`` (1-based line numbers) of a CSV file, exactly as written
    (without the line break), read in one pass that stops after the last one."""
    wanted = {int(n) for n in lines}
    last = max(wanted, default=0)
    found: dict[int, str] = {}
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, start=1):
            if n in wanted:
                found[n] = line.rstrip(b"\r\n").decode("utf-8", errors="replace")
            if n >= last:
                break
    return [found.get(int(n), "") for n in lines]


def _first_breaks(job: LoadJob, pl, cond: str) -> tuple[np.ndarray, list[str]]:
    """Row ids of the first rows breaking a rule, and their distinct non-blank values.

    Numbers are shown as ``%g`` (``0``, ``1.5``, ``nan``, ``-inf``), other values as text.
    """
    c = quote_ident(pl.stored)
    text = f"printf('%g', {c})" if pl.read_type == "DOUBLE" else f"CAST({c} AS VARCHAR)"
    rows = job.con.execute(f"SELECT rowid, {text} FROM {job.stg} WHERE {cond} ORDER BY rowid "
                           "LIMIT ?", [_FIRST_LINES]).fetchall()
    values = [v for v in dict.fromkeys(v for _, v in rows) if v is not None and v.strip()]
    return np.array([r for r, _ in rows], dtype=np.int64), values


def _refuse(job: LoadJob) -> None:
    """Raise the one-sentence refusal when the file may not be stored."""
    if job.problems and not job.skip_bad_rows:
        raise Refused(f"refused {job.shown}: {problem_text(job)}. {job.bad_total} of "
                      f"{job.staged + len(job.cast_rejects)} rows are bad and nothing was "
                      "stored; fix the file, or skip the bad rows to keep the valid ones.",
                      option="skip_bad_rows")
    if job.good <= 0:
        if job.staged == 0 and not len(job.cast_rejects):
            raise UlrError(f"{job.shown} has a header but no data rows; nothing was stored.")
        raise UlrError(f"{job.shown} has no valid data rows; nothing was stored.")


def problem_text(job: LoadJob) -> str:
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
        label = f"column {clip(src, 40)!r}" + (f" ({role})" if role != src and role in
                                     schema.CANONICAL else "")
        found = (f" (value{'s' if len(values) > 1 else ''} "
                 f"{', '.join(repr(clip(v, 40)) for v in values)})"
                 if values else "")
        parts.append(f"{label}: {n} bad value{'s' if n != 1 else ''} ({what}), {where}{found}")
    return "; ".join(parts)


def _collect_rejects(job: LoadJob) -> None:
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
        lines = job.lines(rid)
        if job.kind == "csv":  # the text exactly as read, not the typed values rejoined
            raw = _raw_lines(job.path, lines)
        rule_df = pd.DataFrame({"line": lines, "column": names, "problem": whats,
                                "raw": np.asarray(raw, dtype=object)})
        rejected = pd.concat([job.cast_rejects, rule_df], ignore_index=True).sort_values("line")
    rejected = rejected.reset_index(drop=True)[["line", "column", "problem", "raw"]]
    job.rejected = rejected.astype({"line": "int64", "column": str, "problem": str, "raw": str})


def _final_select(job: LoadJob) -> str:
    """The stored columns, in storage types, of the rows that pass every rule (file order)."""
    select = []
    for pl in job.plans:
        c = quote_ident(pl.stored)
        store_type = schema.STORE_TYPES.get(pl.role)
        select.append(f"CAST({c} AS {store_type}) AS {c}" if store_type else c)
    for stored, expr, _ in derived_columns(job.mapping, job.plans):
        select.append(f"{expr} AS {quote_ident(stored)}")
    return f"SELECT {', '.join(select)} FROM {job.stg} WHERE {job.where_ok}"


def _stored_columns(job: LoadJob) -> dict:
    """``{stored column: source label}``, derived columns (composite keys, constants) included."""
    cols = {pl.stored: pl.source for pl in job.plans}
    cols.update({stored: label for stored, _, label in derived_columns(job.mapping,
                                                                             job.plans)})
    return cols


def _prepare(job: LoadJob) -> None:
    stage(job)
    check_rows(job)
    _refuse(job)
    _collect_rejects(job)


def _write_files(job: LoadJob, db: str) -> tuple[Path, Path | None]:
    """Write the dataset (and its skipped rows) to fsync'ed temporary Parquet files."""
    files.files_dir(db).mkdir(parents=True, exist_ok=True)
    data = files.tmp_file(db)
    job.con.execute(f"COPY ({_final_select(job)}) TO {files.sql_str(data)} "
                    "(FORMAT parquet, COMPRESSION zstd)")
    files.fsync(data)
    rejects = None
    if len(job.rejected):
        rejects = files.tmp_file(db)
        job.con.register("ulr_rejected_df", job.rejected)
        job.con.execute(f"COPY (SELECT line::BIGINT AS line, \"column\"::VARCHAR AS \"column\", "
                        "problem::VARCHAR AS problem, raw::VARCHAR AS raw FROM ulr_rejected_df) "
                        f"TO {files.sql_str(rejects)} (FORMAT parquet)")
        job.con.unregister("ulr_rejected_df")
        files.fsync(rejects)
    return data, rejects


@validate.retired(source_name="file_name")
def load_log(path: str | os.PathLike, name: str, *, cur=None, db_path=None,
             mapping: dict | None = None, skip_bad_rows: bool = False,
             replace: bool = False, file_name: str | None = None,
             actor: str | None = OPERATOR) -> LoadResult:
    """Validate a CSV/Parquet click log and store it as dataset ``name``.

    Parameters
    ----------
    path : file to read (CSV with a header row, or Parquet).
    name : dataset name (any text; stored normalized: Unicode NFC, whitespace trimmed and
        collapsed, :func:`ulr.data.catalog.normal_name`). A name that reads like a stored
        one (differs only by case, whitespace or look-alike characters) is refused.
    cur : reader connection (:func:`ulr.data.catalog.cursor`) of the store to load into, which
        then shows the new dataset; default: the store ``db_path``.
    mapping : ``{canonical: source column}``; unmapped columns are auto-detected.
    skip_bad_rows : load the valid rows and keep the bad ones for download,
        instead of refusing the file.
    replace : replace an existing dataset of the same name (atomically); only its owner
        may (or the operator).
    file_name : file name to record (default: the path's name).
    actor : who loads it, recorded as its owner: an identity string (the dashboard's
        browser or signed-in user), or :data:`OPERATOR` (the default: the command line).
        ``None`` (nobody signed in) may not load.

    Raises
    ------
    UlrError
        For any problem with the file, the mapping or the name. Nothing is
        stored then. The file is staged and validated without holding the
        store; only the final rename and catalog insert take its lock.
    """
    db = catalog.store_of(cur, db_path)
    name = catalog.check_name(name)
    catalog.check_actor(actor)
    if actor is None:
        raise catalog.NotOwner("Sign in to load a dataset: every dataset belongs to whoever "
                               "loaded it.")
    job = new_job(path, name, mapping, skip_bad_rows, file_name, quick_hash=False)
    data = rejects = None
    try:
        catalog.check_free(db, name, actor=actor, replace=replace)  # before the work, and in publish
        _prepare(job)
        data, rejects = _write_files(job, db)
        warnings = list_warnings(job, data)
        info = catalog.publish(db, job.name, data, rejects, rows=job.good, source=job.shown,
                               content_hash=job.content_hash, mapping=job.mapping,
                               columns=_stored_columns(job), rejected=len(job.rejected),
                               replace=replace, actor=actor)
    finally:
        job.con.close()
        for f in (data, rejects):
            if f is not None:
                Path(f).unlink(missing_ok=True)
    if cur is not None:
        catalog.show(cur, info)
    return LoadResult(dataset=name, rows=info.rows, rejected=info.rejected, info=info,
                      rejected_rows=job.rejected, warnings=warnings)


def list_warnings(job: LoadJob, data: Path | None = None, *, scope: str = "") -> tuple:
    """:func:`ulr.lists.mapping_warnings` of the file about to be published (``data``), or
    of the staged rows that pass every rule (the mapping check's sample, ``scope`` saying
    which rows they are)."""
    from ulr.lists import mapping_warnings

    view = table_ident("ds_" + uuid.uuid4().hex[:16])
    rows = (_final_select(job) if data is None
            else f"SELECT * FROM read_parquet({files.sql_str(data)})")
    job.con.execute(f"CREATE TEMP VIEW {view} AS {rows}")
    info = DatasetInfo(name=job.name, table=view, rows=int(job.good), source=job.shown,
                       content_hash=job.content_hash, mapping=job.mapping,
                       columns=_stored_columns(job),
                       rejected=0 if job.rejected is None else len(job.rejected))
    try:
        return mapping_warnings(Log(cur=job.con, table=view, info=info), scope=scope)
    finally:
        job.con.execute(f"DROP VIEW IF EXISTS {view}")


def open_file(path, mapping: dict | None = None, *, skip_bad_rows: bool = False) -> Log:
    """Validate a file into a private in-memory database and open it (nothing is stored)."""
    name = Path(path).name or "input"
    job = new_job(path, name, mapping, skip_bad_rows, None, quick_hash=True)
    try:
        _prepare(job)
        if len(job.rejected) and job.rules:
            job.con.execute(f"DELETE FROM {job.stg} WHERE NOT ({job.where_ok})")
        view = table_ident("ds_" + uuid.uuid4().hex[:16])
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
    db = catalog.store_of(cur, db_path)
    with _sample_lock:  # the threads of one process load it once
        info = catalog.lookup(db, SAMPLE_NAME)
        if info is not None:
            return info
        try:
            return load_log(SAMPLE_CSV, SAMPLE_NAME, db_path=db).info
        except UlrError:
            info = catalog.lookup(db, SAMPLE_NAME)
            if info is None:  # not a lost race with another process
                raise
            return info


@validate.retired(source_name="file_name")
def peek_columns(path, file_name: str | None = None
                 ) -> tuple[list[str], dict[str, str]]:
    """A file's column names and the auto-detected ``{canonical: source}`` map.

    ``file_name`` is the file name messages use (default: the path's name).
    """
    p = Path(path)
    kind = sniff_kind(p, file_name)
    con = memory_connection() if kind == "parquet" else None
    try:
        cols, _ = _file_columns(con, p, kind, file_name)
    finally:
        if con is not None:
            con.close()
    return cols, schema.auto_mapping(cols)


def check_feature_values(path, kind: str, delim: str | None, plans: list[ColumnPlan],
                         sample: int = 2000) -> None:
    """Refuse a feature column none of whose values is a number (first ``sample`` rows).

    A numeric column with a few bad values is left to the loader's row checks
    (which can skip bad rows). One read of the sample, one aggregate query.
    """
    feats = [pl for pl in plans if pl.role == "feature"]
    if not feats:
        return
    import duckdb  # local: schema stays importable without a database

    con = duckdb.connect(":memory:")
    try:
        if kind == "parquet":
            con.execute(f"CREATE TABLE s AS SELECT * FROM read_parquet(?) LIMIT {int(sample)}",
                        [str(path)])
            name = {pl.stored: pl.source.replace('"', '""') for pl in feats}
        else:
            con.execute("CREATE TABLE s AS SELECT * FROM read_csv(?, header = true, "
                        "all_varchar = true, delim = ?, quote = '\"', escape = '\"', "
                        "auto_detect = false, ignore_errors = true, columns = ?) "
                        f"LIMIT {int(sample)}",
                        [str(path), delim or ",", {pl.stored: "VARCHAR" for pl in plans}])
            name = {pl.stored: safe_ident(pl.stored) for pl in feats}
        parts = []
        for pl in feats:
            v = f'NULLIF(trim(CAST("{name[pl.stored]}" AS VARCHAR)), \'\')'
            parts.append(f"any_value({v}), count(TRY_CAST({v} AS DOUBLE))")
        row = con.execute("SELECT " + ", ".join(parts) + " FROM s").fetchone()
        for i, pl in enumerate(feats):
            example, numeric = row[2 * i], row[2 * i + 1]
            if example is not None and numeric == 0:  # no value parses: not a numeric column
                raise UlrError(f"column {clip(pl.source, 40)!r} is not numeric (it holds "
                               f"{clip(example, 40)!r}), "
                               "so it cannot be a feature.")
    finally:
        con.close()
