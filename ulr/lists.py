"""Does the mapping group shown lists? Checks run on the file before Load (a sample of its
first rows, :func:`ulr.data.precheck.check_mapping`) and when a log is stored.

A click log is one row per (shown list, shown document). When the column
mapped to ``session_id`` does not group one shown list (a per-row timestamp,
a row id), or ``query_id`` is unique per row, every list-based method gets
nonsense silently. These checks name the symptom and the fix; a result whose
method needs lists turns ``invalid`` when one of them blocks it
(:func:`blocking`).

Rules (``MOST`` = more than half):

- ``single_row_sessions``: most sessions hold one row while positions go
  above 1 -- the slots of one shown list do not share the session column.
- ``repeated_position``: a session holds one position twice -- the session
  column joins several lists.
- ``single_document_queries``: most queries hold a single document -- the
  query column is (nearly) unique per row, so there is nothing to rank.
- ``randomization_contradicted``: rows declared randomized (a column, the constant
  ``randomized=1``, or "treat every row as randomized") whose positions depend on the
  document, which a random order rules out (:func:`ulr.facts.randomization_check`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ulr.verdict import Reason

MOST = 0.5
FIX = "map a column that groups one shown list"

#: which analyses each warning stops (the others still run, with the warning shown)
BLOCKS = {
    "single_row_sessions": ("replay", "slate"),
    "repeated_position": ("replay", "slate", "randomization", "propensity"),
    # every (query, document) seen once: nothing to rank, and click models
    # (EM, regression EM, harvesting) cannot separate relevance from position
    "single_document_queries": ("rankers", "propensity"),
    # a declared randomization that the data contradict (ulr.facts): everything
    # that relies on a random order; "randomized-theta" is any use of theta from the
    # randomization method (the IPW rankers' weights)
    "randomization_contradicted": ("randomization", "replay", "randomized-theta"),
}


@dataclass(frozen=True)
class MappingWarning:
    """A mapping that does not group shown lists: ``code``, ``message`` (naming the fix),
    the affected ``share`` and the analyses it ``blocks``."""

    code: str
    message: str
    share: float
    blocks: tuple = ()

    def __post_init__(self):
        if self.code not in BLOCKS:
            raise ValueError(f"unknown mapping warning {self.code!r}.")
        if not 0.0 <= float(self.share) <= 1.0:
            raise ValueError("share must lie in [0, 1].")
        object.__setattr__(self, "blocks", tuple(self.blocks) or BLOCKS[self.code])

    def reason(self) -> Reason:
        return Reason(self.code, self.message)

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "share": self.share,
                "blocks": list(self.blocks)}


def _column(mapping: dict, field: str) -> str:
    """How a message names the column mapped to ``field``: its name in the user's file."""
    src = mapping.get(field)
    return f"{src!r}, mapped to {field}," if isinstance(src, str) else \
        f"the column mapped to {field}"


def _rows_of(log):
    """``(has, one_row, mapping)`` of a stored log (``ulr.data.log.Log``) or a scan of rows
    read in place (``ulr.data.scan.Scan``): ``one_row(sql)`` runs ``sql`` on its rows
    (``{src}``) and returns the first row; ``mapping`` names the user's columns."""
    if hasattr(log, "table"):  # a stored log: ``table`` is a validated identifier
        return (log.info.has,
                lambda sql: log.cur.execute(sql.replace("{src}", log.table)).fetchone(),
                log.info.mapping or {})
    # an engine's or a source's scan reads columns by their canonical names (no plans)
    return (log.has, lambda sql: log.execute(sql).fetchone(),
            {pl.role: pl.source for pl in log.plans} or {c: c for c in log.columns})


def mapping_warnings(log, *, scope: str = "") -> tuple[MappingWarning, ...]:
    """The checks of the module doc on a stored log (``ulr.data.log.Log``) or on rows read
    in place (``ulr.data.scan.Scan``: a file, an engine's path or table, a source's stored
    statistics); ``scope`` says which rows were checked when they are not the whole log
    (" in a sample of 49,990 rows"). Each message names the column by its name in the user's
    file and says what kind of column would be right."""
    out = []
    has, one_row, mapping = _rows_of(log)
    if has("session_id"):
        n_s, single, maxpos, repeated = one_row(
            "SELECT count(*), count(*) FILTER (WHERE n = 1), max(maxpos), "
            "count(*) FILTER (WHERE n > npos) FROM (SELECT session_id, count(*) AS n, "
            "count(DISTINCT position) AS npos, max(position) AS maxpos FROM {src} "
            "GROUP BY session_id)")
        n_s = int(n_s or 0)
        col = _column(mapping, "session_id")
        if n_s and (maxpos or 0) > 1 and single / n_s > MOST:
            out.append(MappingWarning(
                "single_row_sessions",
                f"{single:,} of {n_s:,} sessions{scope} hold a single row while positions go "
                f"up to {maxpos}: {col} differs between the documents shown together; {FIX} "
                "to session_id, one value shared by all the rows of one shown list (an "
                "impression or request id).", share=single / n_s))
        if n_s and repeated:
            out.append(MappingWarning(
                "repeated_position",
                f"{repeated:,} of {n_s:,} sessions{scope} show one position twice: {col} joins "
                f"several shown lists; {FIX} to session_id, one value per shown list (an "
                "impression or request id).", share=repeated / n_s))
    n_q, single_q = one_row(
        "SELECT count(*), count(*) FILTER (WHERE nd = 1) FROM (SELECT query_id, "
        "count(DISTINCT doc_id) AS nd FROM {src} GROUP BY query_id)")
    n_q = int(n_q or 0)
    if n_q and single_q / n_q > MOST:
        out.append(MappingWarning(
            "single_document_queries",
            f"{single_q:,} of {n_q:,} queries{scope} have a single document, so there is "
            f"nothing to rank within them: {_column(mapping, 'query_id')} looks unique per "
            f"row; {FIX} to query_id: the query or context that all its documents answered.",
            share=single_q / n_q))
    out.extend(randomization_warnings(log))
    return tuple(out)


def randomization_warnings(log, *, assume: bool = False) -> tuple[MappingWarning, ...]:
    """The warning of a declared randomization that the log's data contradict
    (:func:`ulr.facts.randomization_check`, kept per dataset version), as a tuple
    (empty when it holds or nothing was declared). ``assume``: every row is treated as
    randomized, as "treat every row as randomized" does for one analysis."""
    from ulr.facts import randomization_check
    chk = randomization_check(log, assume=assume)
    if chk is None or not chk.contradicted:
        return ()
    return (MappingWarning("randomization_contradicted", chk.message(), share=1.0),)


def theta_warnings(warnings, propensity: str) -> tuple[MappingWarning, ...]:
    """``warnings`` as weighed by a result that uses theta from the position-bias method
    ``propensity`` (the IPW rankers): with theta from randomization, a contradicted
    randomization blocks it."""
    from ulr.propensity.registry import spec
    if not spec(propensity).randomized:
        return tuple(warnings)
    from dataclasses import replace
    return tuple(replace(w, blocks=tuple(w.blocks) + ("rankers",))
                 if w.code == "randomization_contradicted" and "rankers" not in w.blocks
                 else w for w in warnings)


RANDOM_ORDER_STOP = ("The rows treated as randomized are not randomly ordered, so an answer "
                     "that relies on a random order means nothing here; declare randomized "
                     "only the rows whose order was really shuffled.")


def stopped_takeaway(stops, mapping_sentence: str) -> str:
    """The takeaway of a result that ``stops`` (warnings from :func:`blocking`) make
    ``invalid``: ``mapping_sentence`` for a mapping that does not group lists, one sentence
    of its own for a contradicted randomization."""
    if stops and all(w.code == "randomization_contradicted" for w in stops):
        return RANDOM_ORDER_STOP
    return mapping_sentence


def blocking(warnings, analysis: str) -> list[MappingWarning]:
    """The warnings among ``warnings`` that stop ``analysis`` ("replay", "slate", "rankers",
    "randomization" (the randomization estimate of position bias), "propensity" (the
    click-model estimates))."""
    return [w for w in warnings if analysis in w.blocks]
