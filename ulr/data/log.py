"""Handles of a stored click log: its catalog row (:class:`DatasetInfo`) and :class:`Log`.

A :class:`Log` is a reader connection and the validated name of the view that
shows the dataset's Parquet file on it (:mod:`ulr.data.catalog`); the
computations take it (or the :class:`ulr.data.scan.Scan` of it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where it is used: start-up time of the CLI
    import pandas as pd

from ulr.data.mapping import LogFacts
from ulr.data.schema import FEATURE_PREFIX, quote_ident, safe_ident, table_ident
from ulr.errors import UlrError

#: The command line's identity: whoever runs ``python -m ulr`` holds the store's files, so
#: it may change every dataset (and every report, :mod:`ulr.report.saved`).
OPERATOR = "operator"


@dataclass(frozen=True)
class DatasetInfo:
    """One catalog row."""

    name: str
    table: str
    rows: int
    source: str | None = None
    content_hash: str | None = None
    loaded_at: object = None
    mapping: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)  # stored name -> source name
    rejected: int = 0
    rejects_table: str | None = None
    owner: str | None = None  # who loaded it (an identity, OPERATOR, or None: before owners)

    def may_change(self, actor: str | None) -> bool:
        """Whether ``actor`` may rename, replace or delete this dataset: the identity that
        loaded it, and the operator. A dataset loaded before datasets had owners (``owner``
        None) is the operator's alone; nobody in particular (``actor`` None) changes nothing."""
        return actor == OPERATOR or (actor is not None and self.owner == actor)

    def loaded_by(self, actor: str | None) -> str:
        """Who loaded it, as ``actor`` reads it: "you", "the operator", "someone else", or
        "nobody recorded" (loaded before datasets had owners)."""
        if self.owner is None:
            return "nobody recorded"
        if self.owner == actor:
            return "you"
        return "the operator" if self.owner == OPERATOR else "someone else"

    def refusal(self, actor: str | None, verb: str) -> str | None:
        """One sentence saying why ``actor`` may not ``verb`` ("delete", "rename",
        "replace") this dataset; None when it may."""
        if self.may_change(actor):
            return None
        if actor is None:
            return f"Sign in to {verb} datasets; “{self.name}” can still be used."
        who = {"nobody recorded": "before datasets had owners",
               "the operator": "by the operator"}.get(self.loaded_by(actor), "by someone else")
        only = "they or the operator" if who == "by someone else" else "the operator"
        return (f"“{self.name}” was loaded {who}; you can use it, but only {only} "
                f"can {verb} it.")

    @property
    def features(self) -> list[str]:
        return [c for c in self.columns if c.startswith(FEATURE_PREFIX)]

    def has(self, column: str) -> bool:
        return column in self.columns

    @property
    def facts(self) -> LogFacts:
        """Facts declared when the log was loaded (randomized, per-slot propensities, ...)."""
        return LogFacts.from_mapping(self.mapping)


@dataclass
class Log:
    """A stored click log ready for computation.

    ``table`` is a validated identifier and the only text that may be pasted
    into SQL; bind every value.
    """

    cur: object
    table: str
    info: DatasetInfo

    def __post_init__(self):
        table_ident(self.table)

    def df(self, columns: list[str] | None = None) -> pd.DataFrame:
        if columns is None:
            cols = "*"
        else:
            unknown = [c for c in columns if c not in self.info.columns]
            if unknown:
                raise UlrError(f"dataset {self.info.name!r} has no column "
                               f"{', '.join(map(repr, unknown))}.")
            cols = ", ".join(quote_ident(safe_ident(c)) for c in columns)
        return self.cur.execute(f"SELECT {cols} FROM {self.table}").df()
