"""The report item: one collected result with its provenance.

A :class:`ReportItem` is one result (a chart and/or a table) with its title,
note, provenance (the dataset it came from, or ``"simulated"``), settings,
creation date and software version. It round-trips through the plain dict the
store keeps (:mod:`ulr.report.saved`): the figure as plotly JSON, the table as
``DataFrame.to_json(orient="split")``. The figure is parsed once per item
(:meth:`ReportItem.figure_dict`); exports use that dict and never parse it again.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import uuid
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ulr import __version__, theme
from ulr.errors import UlrError

MAX_TITLE = 300
MAX_NOTE = 20_000
#: where a result came from: a stored dataset (or registered source), or a simulation
PROVENANCES = ("dataset", "simulated")



def now_text() -> str:
    """The date-time now, ISO 8601 to the second (an item's and an export's stamp)."""
    return _dt.datetime.now().isoformat(timespec="seconds")


@dataclass
class ReportItem:
    """One collected result.

    Parameters
    ----------
    title : non-empty heading (at most 300 characters).
    note : free text shown under the heading.
    figure : plotly figure as JSON text (``fig.to_json()``), or None.
    table : table as ``DataFrame.to_json(orient="split")``, or None.
    settings : JSON-able dict of the settings that produced the result.
    dataset : name of the dataset the result came from ("" for a simulated result).
    created : ISO 8601 date-time of creation.
    version : ulr version that produced the result.
    id : stable identifier (the Report page keys its widgets on it).
    caveats : the warnings the page showed next to the result, word for word.
    evidence : what the result rests on, e.g. ``{"rows": .., "clicks": .., "queries": ..}``.
    takeaway : one line in plain words (pre-filled from the result, editable).
    verdict : the result's :class:`ulr.verdict.Verdict` as a dict (docs/verdicts.md), or
        None; its level is shown as a badge beside the takeaway.
    provenance : ``"dataset"`` (the result came from ``dataset``, whose content hash is
        kept to flag a later change) or ``"simulated"`` (it came from simulated data: it
        has no dataset and is never out of date).

    An item holds a chart, a table, both, or neither (a plain note, e.g. a
    report section that could not run). Raises ``ValueError`` on bad fields.
    """

    title: str
    note: str = ""
    figure: str | None = None
    table: str | None = None
    settings: dict = field(default_factory=dict)
    dataset: str = ""
    created: str = field(default_factory=now_text)
    version: str = __version__
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    caveats: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    takeaway: str = ""
    content_hash: str = ""
    verdict: dict | None = None
    provenance: str = "dataset"
    _parsed: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.title, str) or not self.title.strip():
            raise ValueError("a report item needs a non-empty title.")
        if len(self.title) > MAX_TITLE:
            raise ValueError(f"a report item title may have at most {MAX_TITLE} characters.")
        if self.note is None:
            self.note = ""
        if not isinstance(self.note, str):
            raise ValueError("a report item note must be text.")
        if len(self.note) > MAX_NOTE:
            raise ValueError(f"a report item note may have at most {MAX_NOTE} characters.")
        if self.takeaway is None:
            self.takeaway = ""
        if not isinstance(self.takeaway, str) or len(self.takeaway) > MAX_TITLE * 2:
            raise ValueError(f"a report item takeaway must be text of at most {MAX_TITLE * 2} "
                             "characters.")
        self.caveats = [str(c) for c in (self.caveats or [])]
        if self.evidence is None:
            self.evidence = {}
        if not isinstance(self.evidence, dict):
            raise ValueError("report item evidence must be a dict.")
        for name in ("dataset", "created", "version", "id", "content_hash"):
            v = getattr(self, name)
            if v is None:
                setattr(self, name, "")
            elif not isinstance(v, str):
                raise ValueError(f"report item field {name!r} must be text.")
        if self.provenance not in PROVENANCES:
            raise ValueError(f"a report item's provenance is one of {', '.join(PROVENANCES)}, "
                             f"not {self.provenance!r}.")
        if self.provenance == "simulated" and (self.dataset or self.content_hash):
            raise ValueError("a simulated report item has no dataset.")
        if self.figure is not None:
            fig = self.figure_dict()
            if not isinstance(fig, dict) or not isinstance(fig.get("data", []), list):
                raise ValueError("a report item figure must be plotly figure JSON "
                                 "(an object with a 'data' list).")
        if self.table is not None:
            tab = _loads(self.table, "table")
            if not (isinstance(tab, dict) and isinstance(tab.get("columns"), list)
                    and isinstance(tab.get("data"), list)):
                raise ValueError("a report item table must be DataFrame JSON in 'split' "
                                 "orientation (an object with 'columns' and 'data').")
        if self.verdict is not None:
            from ulr.verdict import Verdict
            if isinstance(self.verdict, Verdict):
                self.verdict = self.verdict.to_dict()
            if not isinstance(self.verdict, dict):
                raise ValueError("a report item verdict must be a dict.")
            try:
                self.verdict = Verdict.from_dict(self.verdict).to_dict()
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"a report item verdict is not a verdict: {exc}") from None
        if self.settings is None:
            self.settings = {}
        if not isinstance(self.settings, dict):
            raise ValueError("report item settings must be a dict.")
        try:
            json.dumps(self.settings)
        except (TypeError, ValueError):
            raise ValueError("report item settings must be JSON-able.") from None

    # -- construction and conversion

    @classmethod
    def from_result(cls, title: str, *, fig: go.Figure | None = None,
                    table: pd.DataFrame | None = None, settings: dict | None = None,
                    dataset: str = "", note: str = "", caveats=None, evidence=None,
                    takeaway: str = "", content_hash: str = "",
                    verdict=None, provenance: str = "dataset") -> "ReportItem":
        """Item from a live figure and DataFrame (what the CLI and pages produce).

        An empty ``takeaway`` is pre-filled from ``verdict`` (a
        :class:`ulr.verdict.Verdict` or its dict), else by :func:`default_takeaway`.
        """
        if verdict is not None and not isinstance(verdict, dict):
            verdict = verdict.to_dict()
        if not takeaway and verdict:
            takeaway = verdict["takeaway"]
        return cls(title=title, note=note,
                   figure=None if fig is None else fig.to_json(),
                   table=None if table is None else table.to_json(orient="split"),
                   settings=json.loads(json.dumps(settings or {}, default=str)),
                   dataset=dataset, caveats=[str(c) for c in (caveats or [])],
                   evidence=json.loads(json.dumps(evidence or {}, default=str)),
                   takeaway=takeaway or default_takeaway(title, table, evidence),
                   content_hash=content_hash or "", verdict=verdict, provenance=provenance)

    @classmethod
    def from_dict(cls, d: dict) -> "ReportItem":
        """Item from the session-state dict; unknown keys are ignored."""
        if isinstance(d, ReportItem):
            return d
        if not isinstance(d, dict):
            raise ValueError("a report item must be a dict.")
        known = {k: d[k] for k in ("title", "note", "figure", "table", "settings", "dataset",
                                   "created", "version", "id", "caveats", "evidence",
                                   "takeaway", "content_hash", "verdict", "provenance")
                 if k in d}
        if "title" not in known:
            raise ValueError("a report item needs a title.")
        return cls(**known)

    def to_dict(self) -> dict:
        return {"title": self.title, "note": self.note, "figure": self.figure,
                "table": self.table, "settings": dict(self.settings), "dataset": self.dataset,
                "created": self.created, "version": self.version, "id": self.id,
                "caveats": list(self.caveats), "evidence": dict(self.evidence),
                "takeaway": self.takeaway, "content_hash": self.content_hash,
                "verdict": self.verdict, "provenance": self.provenance}

    def figure_dict(self) -> dict | None:
        """The chart's JSON parsed, once per figure text (None if the item has none).

        Exports read the figure through this dict; treat it as read-only.
        """
        if self.figure is None:
            return None
        if self._parsed is None or self._parsed[0] is not self.figure:
            self._parsed = (self.figure, _loads(self.figure, "figure"))
        return self._parsed[1]

    def fig(self) -> go.Figure | None:
        """The chart as a plotly figure (None if the item has none)."""
        if self.figure is None:
            return None
        return go.Figure(self.figure_dict(), skip_invalid=True)

    @property
    def origin(self) -> str:
        """Where the result came from, as shown: the dataset's name, "simulated" or "—"."""
        return "simulated" if self.provenance == "simulated" else (self.dataset or "—")

    def frame(self) -> pd.DataFrame | None:
        """The table; a meaningful index comes back as leading column(s).

        Read once per table version (:func:`ulr.report.drawn.memo`); each call returns a
        copy of its own."""
        if self.table is None:
            return None
        from ulr.report import drawn
        return drawn.memo("frame", drawn.digest("frame", self.table), self._frame).copy()

    def _frame(self) -> pd.DataFrame:
        # dtype=False: keep JSON types (text stays text, "007" stays "007").
        df = pd.read_json(io.StringIO(self.table), orient="split", dtype=False)
        idx = df.index
        default = pd.api.types.is_integer_dtype(idx) and bool(
            (idx.to_numpy() == np.arange(len(idx))).all())
        return df.reset_index(drop=default)

    @property
    def kind(self) -> str:
        if self.figure is not None and self.table is not None:
            return "chart and table"
        if self.figure is not None:
            return "chart"
        if self.table is not None:
            return "table"
        return "note"


def _loads(text, what: str):
    if not isinstance(text, str):
        raise ValueError(f"a report item {what} must be JSON text.")
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"a report item {what} is not valid JSON.") from None


_VALUE_COLS = ("value", "estimate", "ctr", "theta", "improvement (best on validation)")
_LABEL_COLS = ("ranker", "estimator", "method", "model", "policy", "position", "learner")


def default_takeaway(title: str, table: pd.DataFrame | None = None,
                     evidence: dict | None = None) -> str:
    """A one-line plain-words summary of a result, to pre-fill the editable takeaway.

    With a table that has a label column (ranker, estimator, method, ...) and a
    value column (value, estimate, ctr, theta, ...) it names the highest and the
    lowest row; otherwise it states what the result rests on.
    """
    ev = evidence or {}
    rests = ", ".join(f"{count_text(ev[k])} {k}" for k in ("rows", "clicks", "queries",
                                                           "sessions") if ev.get(k) is not None)
    if isinstance(table, pd.DataFrame) and len(table) >= 2:
        vcol = next((c for c in _VALUE_COLS if c in table.columns
                     and pd.api.types.is_numeric_dtype(table[c])), None)
        lcol = next((c for c in _LABEL_COLS if c in table.columns), None)
        if vcol and lcol and "metric" not in table.columns and table[vcol].notna().any():
            t = table.dropna(subset=[vcol])
            ih, il = t[vcol].idxmax(), t[vcol].idxmin()
            vals = t[vcol].to_numpy(dtype=float)
            if vcol == "ctr":
                d = theme.sig_decimals(vals * 100, 2)
                fmt = lambda v: f"{theme.format_number(v * 100, d)}%"  # noqa: E731
            else:
                d = theme.sig_decimals(vals)
                fmt = lambda v: theme.format_number(v, d)  # noqa: E731
            out = (f"{theme.metric_label(vcol)} is highest for {lcol} {t[lcol][ih]} "
                   f"({fmt(t[vcol][ih])}) and lowest for {lcol} {t[lcol][il]} "
                   f"({fmt(t[vcol][il])})")
            out = out[:1].upper() + out[1:]
            return out + (f"; based on {rests}." if rests else ".")
    return f"{title}" + (f", based on {rests}." if rests else ".")


def count_text(v) -> str:
    """A count as people read it: 12,000; a non-integer to 3 significant digits."""
    from ulr.text import count
    return count(v)


def as_items(items) -> list[ReportItem]:
    """Validate a list of :class:`ReportItem` or session-state dicts."""
    if items is None:
        return []
    out = []
    for i, it in enumerate(items, start=1):
        try:
            out.append(ReportItem.from_dict(it))
        except ValueError as exc:
            raise UlrError(f"report item {i} is broken: {exc}") from None
    return out

