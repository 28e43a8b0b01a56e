"""The canonical click-log schema (docs/contract.md §1): fields, types, identifiers, rules.

Stored tables use canonical names. Each field has a type it is read as and a
type it is stored as; :func:`auto_mapping` finds the fields among a file's
columns (exact name, then case-insensitive, then common synonyms). Every
identifier that reaches SQL text is allow-listed here (:func:`safe_ident`,
:func:`table_ident`), and the schema rules are SQL conditions on staged columns
(:func:`rule_conditions`). How a file's columns become the schema (the mapping,
column plans, declared facts) is :mod:`ulr.data.mapping`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ulr.errors import UlrError
from ulr.text import clip

REQUIRED = ("query_id", "doc_id", "position", "click")
OPTIONAL = ("session_id", "randomized", "relevance", "propensity", "logger")
CANONICAL = REQUIRED + OPTIONAL
FEATURE_PREFIX = "feature_"

# Type used to *read* each canonical column (values that do not parse are
# rejected by DuckDB's CSV reader), and the type it is stored as.
READ_TYPES = {
    "query_id": "VARCHAR",
    "doc_id": "VARCHAR",
    "position": "DOUBLE",  # read as DOUBLE so 1.5 is caught, not rounded
    "click": "BOOLEAN",  # 0/1, true/false (and DuckDB's t/f, yes/no)
    "session_id": "VARCHAR",
    "randomized": "BOOLEAN",
    "relevance": "DOUBLE",
    "propensity": "DOUBLE",
    "logger": "VARCHAR",  # which logging policy wrote the row (logs of several loggers)
}
STORE_TYPES = {
    "query_id": "VARCHAR",
    "doc_id": "VARCHAR",
    "position": "BIGINT",
    "click": "BOOLEAN",
    "session_id": "VARCHAR",
    "randomized": "BOOLEAN",
    "relevance": "BIGINT",
    "propensity": "DOUBLE",
    "logger": "VARCHAR",
}
FEATURE_TYPE = "DOUBLE"
EXTRA_TYPE = "VARCHAR"

SYNONYMS = {
    "query_id": ("query_id", "qid", "query", "queryid", "context_id", "context", "user_id",
                 "search_id", "request_id"),
    "doc_id": ("doc_id", "docid", "doc", "document", "document_id", "item_id", "item",
               "itemid", "product_id", "url", "result_id", "action", "item_index"),
    "position": ("position", "pos", "rank", "ranking", "slot", "display_position"),
    "click": ("click", "clicked", "clicks", "is_click", "click_label"),
    "session_id": ("session_id", "session", "sessionid", "impression_id", "list_id", "sid"),
    "randomized": ("randomized", "is_randomized", "random", "randomised"),
    "relevance": ("relevance", "rel", "label", "grade", "judgment", "judgement"),
    "propensity": ("propensity", "propensity_score", "pscore", "logging_propensity", "prob"),
    "logger": ("logger", "logging_policy", "logger_id"),
}

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
TABLE_RE = re.compile(r"^(ds|rj)_[0-9a-f]{16}$")


def safe_ident(name: str) -> str:
    """Return ``name`` if it is a plain lowercase SQL identifier, else raise.

    Every identifier that reaches SQL text passes through here (allow-list).
    """
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"unsafe SQL identifier: {name!r}")
    return name


def sanitize(name: str) -> str:
    """Lowercase ``[a-z0-9_]`` form of a column name, for storage."""
    s = re.sub(r"[^a-z0-9_]+", "_", str(name).strip().lower()).strip("_")
    if not s:
        s = "col"
    if s[0].isdigit():
        s = "c_" + s
    return s[:60]


@dataclass(frozen=True)
class ColumnPlan:
    """How one source column is read and stored."""

    source: str  # name in the file
    stored: str  # safe identifier in the stored table
    role: str  # canonical name, "feature" or "extra"

    @property
    def read_type(self) -> str:
        if self.role in READ_TYPES:
            return READ_TYPES[self.role]
        return FEATURE_TYPE if self.role == "feature" else EXTRA_TYPE


def auto_mapping(columns: list[str]) -> dict[str, str]:
    """Guess ``{canonical: source}`` from a file's column names."""
    found: dict[str, str] = {}
    used: set[str] = set()
    lower = {c.lower().strip(): c for c in reversed(columns)}
    for canon in CANONICAL:
        if canon in columns:
            found[canon] = canon
            used.add(canon)
    for canon in CANONICAL:
        if canon in found:
            continue
        for syn in SYNONYMS[canon]:
            src = lower.get(syn)
            if src is not None and src not in used:
                found[canon] = src
                used.add(src)
                break
    return found


def preview_columns(columns, n=12) -> str:
    """The first ``n`` column names of a file, quoted, for messages."""
    shown = ", ".join(repr(clip(c, 40)) for c in columns[:n])
    return shown + (f" and {len(columns) - n} more" if len(columns) > n else "")


# --------------------------------------------------------------------------- rules
# The single source of the schema rules: the SQL condition that marks a bad
# value of a staged (typed) column, and the problem text users read.

PROBLEMS = {
    "query_id": "missing value",
    "doc_id": "missing value",
    "position": "must be an integer >= 1",
    "click": "must be 0/1 or true/false",
    "session_id": "not text",
    "randomized": "must be 0/1 or true/false",
    "relevance": "must be an integer >= 0",
    "propensity": "must lie in (0, 1]",
    "feature": "must be a number",
}
NOT_FINITE = "must be a finite number, not NaN or infinite"
RAGGED_ROW = "wrong number of fields (ragged row)"
WHOLE_ROW = "(whole row)"
REJECT_COLUMNS = ("line", "column", "problem", "raw")  # a skipped row: where, what, its text


def no_rejects():
    """An empty table of skipped rows (:data:`REJECT_COLUMNS`)."""
    import pandas as pd  # local: pandas costs the CLI's start-up time
    return pd.DataFrame(columns=list(REJECT_COLUMNS))


def quote_ident(ident: str) -> str:
    """Quote an identifier that was checked against the file's own columns."""
    return '"' + str(ident).replace('"', '""') + '"'


def problem_of(role: str) -> str:
    """The problem text for a value of ``role`` that does not parse."""
    return PROBLEMS.get(role, "not a valid value")


def rule_conditions(plans: list[ColumnPlan]) -> list[tuple[ColumnPlan, str, str]]:
    """``(plan, SQL condition true for a bad row, problem)`` per rule of the staged columns."""
    out = []
    for p in plans:
        c = quote_ident(p.stored)
        if p.role in ("query_id", "doc_id"):
            cond = f"({c} IS NULL OR trim({c}) = '')"
        elif p.role == "position":
            cond = f"({c} IS NULL OR NOT isfinite({c}) OR {c} < 1 OR {c} <> floor({c}))"
        elif p.role == "click":
            cond = f"({c} IS NULL)"
        elif p.role == "relevance":
            cond = f"({c} IS NOT NULL AND (NOT isfinite({c}) OR {c} < 0 OR {c} <> floor({c})))"
        elif p.role == "propensity":
            cond = f"({c} IS NOT NULL AND (isnan({c}) OR {c} <= 0 OR {c} > 1))"
        elif p.role == "feature":  # an empty cell is a missing value (NULL), allowed
            cond = f"({c} IS NOT NULL AND NOT isfinite({c}))"
        else:
            continue
        out.append((p, cond, NOT_FINITE if p.role == "feature" else PROBLEMS[p.role]))
    return out


def refuse_duplicates(columns: list[str], shown: str) -> None:
    """Refuse (UlrError) a file in which two columns have the same name.

    Parameters
    ----------
    columns : the file's column names, in file order.
    shown : the file name to name in the message (the user's, not a copy's).
    """
    seen: set[str] = set()
    dups: list[str] = []
    for c in columns:
        if c in seen and c not in dups:
            dups.append(c)
        seen.add(c)
    if dups:
        raise UlrError(f"{shown} has more than one column named "
                       f"{preview_columns(dups, 3)}; give every column its own "
                       "name and load it again.")


def table_ident(name: str) -> str:
    """Allow-list check for generated table names (``ds_<hex>``, ``rj_<hex>``)."""
    if not isinstance(name, str) or not TABLE_RE.match(name):
        raise ValueError(f"not a ulr table name: {name!r}")
    return name
