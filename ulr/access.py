"""What a browser visitor may read on the server: the operator's data roots and Spark masters.

The dashboard can register a server path as a source (Data page, "Large
logs"). On a shared server that form must not become a way to read files the
operator did not open, so everything a browser names goes through this module
first; the command line is the operator's own tool and does not.

Two settings, read from the environment of the ``streamlit run`` process:

``ULR_DATA_ROOTS``
    Folders the browser may register files from, comma-separated. A root may
    also be a URI prefix Spark reads
    (``s3a://bucket/lake``). Unset or empty: the browser registers no server
    path at all (uploads work as before).
``ULR_SPARK_MASTERS``
    Spark masters the browser may use, comma-separated (``local[2]``,
    ``spark://host:7077``). Unset or empty: the browser cannot use Spark, so
    nothing is dialled.

A path is resolved (symbolic links, ``..``) before it is compared with the
roots, and so is every file a folder or glob expands to; the store's own files
are never readable. A refusal is one sentence that repeats only what the
visitor typed: it never says whether a path outside the roots exists, and never
quotes a byte of any file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ulr.errors import UlrError

ROOTS_ENV = "ULR_DATA_ROOTS"
MASTERS_ENV = "ULR_SPARK_MASTERS"
_URI = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
_GLOB = re.compile(r"[*?\[]")
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
# Spark reads `format`.`path` as a file: a table's database part may not be a format name
_FILE_FORMATS = {"parquet", "csv", "json", "orc", "text", "avro", "delta", "binaryfile",
                 "jdbc", "file", "hive"}


class AccessDenied(UlrError):
    """A browser visitor named something the operator has not opened to the browser."""


def data_roots(environ=None) -> tuple[str, ...]:
    """The allowed roots: local folders resolved, URI prefixes without a trailing slash."""
    raw = (os.environ if environ is None else environ).get(ROOTS_ENV, "")
    roots = []
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        roots.append(entry.rstrip("/") if _URI.match(entry) else os.path.realpath(entry))
    return tuple(roots)


def spark_masters(environ=None) -> tuple[str, ...]:
    """The Spark masters the browser may use (none unless the operator names some)."""
    raw = (os.environ if environ is None else environ).get(MASTERS_ENV, "")
    return tuple(m.strip() for m in raw.split(",") if m.strip())


def _refuse(typed: str) -> AccessDenied:
    return AccessDenied(f"“{typed}” is not in a folder this server opens to the browser; "
                        "upload the file instead, or ask the operator to open its folder.")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _split_glob(typed: str) -> tuple[str, str]:
    """(the part before the first glob character's segment, the glob pattern after it)."""
    parts = Path(typed).parts
    for i, part in enumerate(parts):
        if _GLOB.search(part):
            return str(Path(*parts[:i])) if i else "", str(Path(*parts[i:]))
    return typed, ""


def _own_store(db_path) -> list[str]:
    """Folders a visitor never reads through a source: the store's datasets and statistics."""
    from ulr.data import files
    db = Path(files.default_db_path() if db_path is None else db_path)
    return [os.path.realpath(files.files_dir(db)), os.path.realpath(db.parent / "sources")]


def browser_path(typed: str, *, roots: tuple[str, ...] | None = None, db_path=None) -> str:
    """The path a browser visitor typed, checked against the roots; returns it resolved.

    Parameters
    ----------
    typed : str
        A file, folder or glob as typed; a relative one is taken relative to the
        first local root.
    roots : tuple of str, optional
        The allowed roots (default: :func:`data_roots`).
    db_path : path, optional
        The store, whose own files are never readable.

    Raises
    ------
    AccessDenied
        When the path, or any file it expands to, falls outside every root, or
        inside the store.
    """
    typed = (typed or "").strip()
    roots = data_roots() if roots is None else roots
    if not typed:
        raise UlrError("say where the source's files are.")
    if not roots:
        raise AccessDenied("This server does not let the browser register server folders; "
                           "upload the file instead, or ask the operator to open a folder "
                           "to the dashboard.")
    if _URI.match(typed):
        return _browser_uri(typed, roots)
    local = [r for r in roots if not _URI.match(r)]
    if not local:
        raise _refuse(typed)
    prefix, pattern = _split_glob(typed)
    if ".." in Path(pattern).parts:
        raise _refuse(typed)
    if not os.path.isabs(prefix):
        prefix = os.path.join(local[0], prefix)
    base = os.path.realpath(prefix)
    if not any(_inside(base, r) for r in local):
        raise _refuse(typed)
    checked = os.path.join(base, pattern) if pattern else base
    _check_files(typed, checked, local, _own_store(db_path))
    return checked


def _check_files(typed: str, checked: str, roots: list[str], own: list[str]) -> None:
    """Every file the path expands to must resolve inside a root and outside the store:
    checked before anything is said about the files themselves (their kinds, their
    number), so a link out of the roots gets the roots' refusal and nothing else."""
    from ulr.engines.duckdb import expand, matching
    for f in matching(checked):
        real = os.path.realpath(f)
        if not any(_inside(real, r) for r in roots) or any(_inside(real, o) for o in own):
            raise _refuse(typed)
    expand(checked, label=typed)  # none, or a mix of kinds: said once the paths are fine


def _browser_uri(typed: str, roots: tuple[str, ...]) -> str:
    scheme = _URI.match(typed).group(1).lower()
    rest = typed[len(scheme) + 3:]
    if scheme == "file" or ".." in rest.split("/"):
        raise _refuse(typed)
    if not any(_URI.match(r) and (typed.rstrip("/") == r or typed.startswith(r + "/"))
               for r in roots):
        raise _refuse(typed)
    return typed


def browser_master(master: str, *, masters: tuple[str, ...] | None = None) -> str:
    """A Spark master the operator lets the browser use; anything else is refused."""
    masters = spark_masters() if masters is None else masters
    master = (master or "").strip()
    if not masters:
        raise AccessDenied("This server does not let the browser use Spark; pick the DuckDB "
                           "engine, or ask the operator to name a Spark master for the "
                           "dashboard.")
    if master not in masters:
        raise AccessDenied(f"Spark master “{master}” is not one this server lets the browser "
                           f"use; pick one of: {', '.join(masters)}.")
    return master


def browser_table(name: str) -> str:
    """A Spark catalog table a browser names: a plain ``db.table`` identifier, never a path."""
    name = (name or "").strip()
    db = name.split(".")[0].lower() if "." in name else ""
    if not _TABLE.match(name) or db in _FILE_FORMATS:
        raise AccessDenied(f"“{name}” is not a table name (letters, digits and '_', as "
                           "table or database.table).")
    return name


def browser_source(where: str, engine: str, master: str | None):
    """``(path, table, master)`` for a source a browser names; refuses what is not opened.

    With the Spark engine a plain name (no ``/`` or ``*``) is a catalog table.
    """
    where = (where or "").strip()
    if engine == "spark":
        master = browser_master(master)
        if where and "/" not in where and "*" not in where:
            return None, browser_table(where), master
    return browser_path(where), None, master
