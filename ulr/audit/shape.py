"""What a click log holds, read once: :class:`LogShape` and :func:`read_shape`.

One aggregate statement over the stored rows counts rows, clicks, queries,
documents, sessions and positions, the rows marked randomized, with a
propensity, with a relevance label, the loggers, and the query-document pairs
shown at more than one position (what EM needs). The columns, the declared
facts (:class:`ulr.data.mapping.LogFacts`) and the mapping warnings
(:func:`ulr.lists.mapping_warnings`) come from the catalog, without a scan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ulr.data.scan import scan_of


@dataclass(frozen=True)
class LogShape:
    """The facts about a log that decide which questions it can answer.

    Counts are over every stored row; ``None`` means the log has no such
    column (``sessions`` without ``session_id``, ``loggers`` without ``logger``).
    """

    name: str
    content_hash: str
    rows: int
    clicks: int
    queries: int
    documents: int
    positions: int
    sessions: int | None
    randomized_rows: int
    declared_randomized: bool
    propensity_rows: int
    per_slot_propensity: bool
    features: tuple
    loggers: int | None
    labelled_rows: int
    pairs: int
    pairs_at_several_positions: int
    has_true_theta: bool = False
    columns: tuple = ()
    mapping_warnings: tuple = field(default=(), compare=False)

    def has(self, column: str) -> bool:
        """The log has this stored column (as :meth:`ulr.data.scan.Scan.has`)."""
        return column in self.columns

    @property
    def randomized(self) -> bool:
        """The whole log was shown in random order (declared, or every row marked)."""
        return self.declared_randomized or (self.rows > 0 and self.randomized_rows == self.rows)

    @property
    def has_randomized_rows(self) -> bool:
        return self.declared_randomized or self.randomized_rows > 0

    @property
    def has_sessions(self) -> bool:
        return self.has("session_id")

    @property
    def has_propensities(self) -> bool:
        return self.propensity_rows > 0

    @property
    def has_labels(self) -> bool:
        return self.labelled_rows > 0

    @property
    def several_loggers(self) -> bool:
        return (self.loggers or 0) >= 2

    def blocked(self, analysis: str) -> list:
        """The mapping warnings that stop ``analysis`` (:func:`ulr.lists.blocking`)."""
        from ulr.lists import blocking
        return blocking(self.mapping_warnings, analysis)

    def lines(self) -> list[str]:
        """The shape in plain words, one fact a line (the report's title slide)."""
        out = [f"{self.rows:,} rows with {self.clicks:,} clicks "
               f"({self.clicks / max(self.rows, 1):.2%} click rate)",
               f"{self.queries:,} queries, {self.documents:,} documents, "
               f"{self.positions:,} positions",
               "sessions: " + ("none mapped" if self.sessions is None
                               else f"{self.sessions:,}")]
        if self.declared_randomized:
            out.append("randomized: the whole log was declared shown in random order")
        else:
            out.append(f"randomized rows: {self.randomized_rows:,}")
        out.append("propensities: " + ("none" if not self.has_propensities else
                                       f"{self.propensity_rows:,} rows, "
                                       + ("per slot" if self.per_slot_propensity
                                          else "not declared per slot")))
        out.append(f"features: {len(self.features)}")
        out.append("loggers: " + ("no logger column" if self.loggers is None
                                  else f"{self.loggers:,}"))
        out.append("relevance labels: " + (f"{self.labelled_rows:,} rows" if self.has_labels
                                           else "none"))
        return out

    def to_dict(self) -> dict:
        return {"dataset": self.name, "rows": self.rows, "clicks": self.clicks,
                "queries": self.queries, "documents": self.documents,
                "positions": self.positions, "sessions": self.sessions,
                "randomized_rows": self.randomized_rows, "randomized": self.randomized,
                "propensity_rows": self.propensity_rows,
                "per_slot_propensity": self.per_slot_propensity,
                "features": len(self.features), "loggers": self.loggers,
                "labelled_rows": self.labelled_rows, "pairs": self.pairs,
                "pairs_at_several_positions": self.pairs_at_several_positions,
                "mapping_warnings": [w.code for w in self.mapping_warnings]}


def _shape_sql(has) -> str:
    """The one statement (column presence decides each term; no user text is pasted)."""
    def opt(col, expr, none="NULL"):
        return expr if has(col) else none
    return (
        "WITH pairs AS (SELECT count(*) AS pairs, count(*) FILTER (WHERE npos > 1) AS several "
        "FROM (SELECT count(DISTINCT position) AS npos FROM {src} GROUP BY query_id, doc_id)), "
        "tot AS (SELECT count(*) AS n, coalesce(sum(CAST(click AS INTEGER)), 0) AS clicks, "
        "count(DISTINCT query_id) AS queries, count(DISTINCT doc_id) AS docs, "
        "coalesce(max(position), 0) AS positions, "
        f"{opt('session_id', 'count(DISTINCT session_id)')} AS sessions, "
        f"{opt('randomized', 'count(*) FILTER (WHERE randomized)', '0')} AS rnd, "
        f"{opt('propensity', 'count(propensity)', '0')} AS prop, "
        f"{opt('logger', 'count(DISTINCT logger)')} AS loggers, "
        f"{opt('relevance', 'count(relevance)', '0')} AS labelled FROM {{src}}) "
        "SELECT n, clicks, queries, docs, positions, sessions, rnd, prop, loggers, labelled, "
        "pairs, several FROM tot, pairs")


def read_shape(log) -> LogShape:
    """The shape of a stored or opened log (:class:`ulr.data.log.Log`): one aggregate statement."""
    from ulr.lists import mapping_warnings
    scan = scan_of(log)
    info = log.info
    (n, clicks, queries, docs, positions, sessions, rnd, prop, loggers, labelled, pairs,
     several) = scan.execute(_shape_sql(scan.has)).fetchone()
    facts = info.facts
    return LogShape(
        name=info.name, content_hash=info.content_hash or "", rows=int(n), clicks=int(clicks),
        queries=int(queries), documents=int(docs), positions=int(positions),
        sessions=None if sessions is None else int(sessions), randomized_rows=int(rnd),
        declared_randomized=bool(facts.randomized), propensity_rows=int(prop),
        per_slot_propensity=bool(facts.per_slot_propensity), features=tuple(info.features),
        loggers=None if loggers is None else int(loggers), labelled_rows=int(labelled),
        pairs=int(pairs or 0), pairs_at_several_positions=int(several or 0),
        has_true_theta=info.has("true_theta"), columns=tuple(info.columns),
        mapping_warnings=tuple(mapping_warnings(log)))
