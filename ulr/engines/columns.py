"""The columns every engine reads, with declared types, and the SQL that casts them.

Every source is read through :func:`typed_projection`: the canonical columns
with declared types (ids as strings, ``position``/``click`` as integers,
``randomized`` as boolean, ``feature_*`` as doubles), so the two engines see
the same values and give the same statistics (to 1e-9, see tests/engines).
"""

from __future__ import annotations

from ulr.data import schema
from ulr.errors import UlrError

REQUIRED = ("query_id", "doc_id", "position", "click")
# canonical column -> declared type (portable SQL type names: both engines accept them)
DECLARED = {"query_id": "STRING", "doc_id": "STRING", "session_id": "STRING",
            "position": "INTEGER", "click": "INTEGER", "randomized": "BOOLEAN",
            "true_theta": "DOUBLE"}


def declared_columns(columns) -> dict[str, str]:
    """The columns of a source that ulr reads, with their declared types."""
    cols = list(columns)
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise UlrError(f"the source has no {', '.join(repr(m) for m in missing)} column"
                       f"{'s' if len(missing) > 1 else ''}; its files need columns named "
                       f"{', '.join(REQUIRED)}.")
    out = {}
    for c in cols:
        if c in DECLARED:
            out[c] = DECLARED[c]
        elif c.startswith(schema.FEATURE_PREFIX) and _plain(c):
            out[c] = "DOUBLE"  # plain identifiers only: they are pasted unquoted
    return out


def _plain(name: str) -> bool:
    try:
        return schema.safe_ident(name) == name
    except ValueError:
        return False


def typed_projection(columns: dict[str, str], raw: str, *, keep=()) -> str:
    """``(SELECT CAST(col AS type) AS col, ... FROM raw)`` for the declared columns.

    ``randomized`` goes through INTEGER first, so 0/1 stored as text or numbers
    become false/true identically on both engines. Columns in ``keep`` are passed
    through as the files store them (:func:`integer_keys`).
    """
    parts = []
    for c, t in columns.items():
        q = schema.safe_ident(c)  # unquoted: DuckDB quotes with ", Spark with `
        expr = q if c in keep else f"CAST(CAST({q} AS INTEGER) AS BOOLEAN)" \
            if c == "randomized" else f"CAST({q} AS {t})"
        parts.append(f"{expr} AS {q}")
    return f"(SELECT {', '.join(parts)} FROM {raw})"


#: Integer types whose text form (CAST AS STRING) is one to one.
INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                           "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"})


def integer_keys(types: dict[str, str]) -> tuple[str, ...]:
    """The id columns (``query_id``, ``doc_id``) that the files store as integers (``types``:
    column -> the reader's type). Grouping on such a column groups exactly as on its text,
    since the cast to text is one to one, so an aggregate can group first and cast once per
    group (:attr:`ulr.data.scan.Scan.keys_sql`) instead of once per row."""
    return tuple(c for c in ("query_id", "doc_id") if str(types.get(c, "")).upper()
                 in INTEGER_TYPES)
