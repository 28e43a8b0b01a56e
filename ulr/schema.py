"""The canonical click-log schema (docs/contract.md §1) and column mapping.

Stored tables use canonical names. Columns of the source file map onto them
either explicitly (``{"position": "rank"}``) or by auto-detection (exact name,
then case-insensitive, then common synonyms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ulr.errors import UlrError

REQUIRED = ("query_id", "doc_id", "position", "click")
OPTIONAL = ("session_id", "randomized", "relevance", "propensity")
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
}

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


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


def parse_map_args(items) -> dict[str, str]:
    """Parse CLI ``--map canonical=theirs`` items into a dict."""
    mapping: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise UlrError(f"--map expects canonical=theirs, got {item!r}.")
        canon, theirs = item.split("=", 1)
        canon, theirs = canon.strip(), theirs.strip()
        if not canon or not theirs:
            raise UlrError(f"--map expects canonical=theirs, got {item!r}.")
        mapping[canon] = theirs
    return mapping


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


def plan_columns(columns: list[str], mapping: dict[str, str] | None) -> list[ColumnPlan]:
    """Decide the role and stored name of every source column.

    ``mapping`` gives ``{canonical: source}``; canonical names not in it are
    auto-detected. ``feature_*`` canonical names may map features too.
    """
    mapping = dict(mapping or {})
    for canon, src in mapping.items():
        if canon not in CANONICAL and not canon.startswith(FEATURE_PREFIX):
            raise UlrError(
                f"unknown canonical column {canon!r} in the mapping; known: "
                f"{', '.join(CANONICAL)} and feature_*.")
        if src not in columns:
            raise UlrError(
                f"column {src!r} mapped to {canon!r} is not in the file; the file has: "
                f"{_preview(columns)}.")
    if len(set(mapping.values())) != len(mapping):
        raise UlrError("the mapping uses one source column for two canonical columns.")
    auto = auto_mapping([c for c in columns if c not in mapping.values()])
    full = {**{k: v for k, v in auto.items() if k not in mapping}, **mapping}
    missing = [c for c in REQUIRED if c not in full]
    if missing:
        raise UlrError(
            f"missing required column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}; the file has: {_preview(columns)}. "
            f"Map {'them' if len(missing) > 1 else 'it'} with --map "
            f"{missing[0]}=COLUMN (or the mapping form).")
    by_source = {src: canon for canon, src in full.items()}
    plans: list[ColumnPlan] = []
    taken: set[str] = set(c for c in full if not c.startswith(FEATURE_PREFIX))
    for col in columns:
        canon = by_source.get(col)
        if canon is not None and not canon.startswith(FEATURE_PREFIX):
            plans.append(ColumnPlan(col, canon, canon))
            continue
        if canon is not None:  # explicit feature mapping
            base, role = sanitize(canon), "feature"
        elif col.lower().startswith(FEATURE_PREFIX):
            base, role = sanitize(col), "feature"
        else:
            base, role = sanitize(col), "extra"
            if base.startswith(FEATURE_PREFIX) or base in CANONICAL:
                base = "x_" + base
        stored, i = base, 2
        while stored in taken:
            stored = f"{base}_{i}"
            i += 1
        taken.add(stored)
        plans.append(ColumnPlan(col, safe_ident(stored), role))
    return plans


def _preview(columns, n=12) -> str:
    shown = ", ".join(repr(c) for c in columns[:n])
    return shown + (f" and {len(columns) - n} more" if len(columns) > n else "")
