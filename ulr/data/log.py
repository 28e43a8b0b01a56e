"""Handles of a stored click log: its catalog row (:class:`DatasetInfo`) and :class:`Log`.

A :class:`Log` is a reader connection and the validated name of the view that
shows the dataset's Parquet file on it (:mod:`ulr.data.catalog`); the
computations take it (or the :class:`ulr.data.scan.Scan` of it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where it is used: start-up time of the CLI
    import pandas as pd

from ulr.data.mapping import LogFacts
from ulr.data.schema import FEATURE_PREFIX, quote_ident, safe_ident, table_ident
from ulr.errors import UlrError


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

    @property
    def stored_columns(self) -> list[str]:
        return list(self.columns)

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

    def true_theta(self) -> np.ndarray | None:
        """True absolute theta per position, when the log records it
        (:func:`ulr.data.summary.true_theta`)."""
        from ulr.data.summary import true_theta
        return true_theta(self)
