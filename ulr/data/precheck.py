"""The mapping checked on the file before Load, on a sample of its first rows.

A column's name says little about what it holds: a ``timestamp`` mapped to
``session_id`` may differ between the slots of one shown list, a ``user_id`` mapped
to ``query_id`` may be unique per row, a ``prob`` mapped to ``propensity`` may hold
percentages. :func:`check_mapping` stages the file's first :data:`SAMPLE_ROWS` rows
exactly as a load would (the same column plans, types and schema rules, in a private
in-memory DuckDB), and runs on them the checks a stored log gets
(:func:`ulr.lists.mapping_warnings`) plus the schema rules. Nothing is stored and
the store is not touched. The first rows keep the rows of one shown list together
(a log is written list by list), which a random sample would split; one aggregate
query per check keeps it cheap on big files (DuckDB stops reading at the sample).
"""

from __future__ import annotations

from dataclasses import dataclass

from ulr.data.ingest import check_rows, list_warnings, new_job, problem_text, stage
from ulr import validate
from ulr.errors import UlrError

SAMPLE_ROWS = 50_000


@dataclass(frozen=True)
class MappingIssue:
    """What the check found: ``code`` (a :mod:`ulr.lists` code, ``propensity_range`` or
    ``bad_values``), the canonical ``field`` it is about, and one sentence naming the
    column and what would be right."""

    code: str
    field: str
    message: str


@validate.retired(source_name="file_name")
def check_mapping(path, mapping=None, *, file_name: str | None = None,
                  sample_rows: int = SAMPLE_ROWS) -> tuple[MappingIssue, ...]:
    """Check ``mapping`` on the first ``sample_rows`` rows of the file at ``path``.

    Parameters
    ----------
    path : CSV or Parquet file.
    mapping : a :class:`ulr.data.mapping.Mapping` or ``{canonical: source}``, as
        :func:`ulr.data.ingest.load_log` takes it.
    file_name : the file name messages use (the user's, not an upload copy's).
    sample_rows : how many of the first rows to check.

    Returns
    -------
    tuple of MappingIssue
        Empty when the sample shows nothing wrong. Sessions of one row, sessions that
        repeat a position, queries of one document (:mod:`ulr.lists`), propensities
        outside (0, 1], and any other value the load would refuse.

    Raises
    ------
    UlrError
        The mapping itself cannot be loaded (a column the file lacks, a pattern that
        matches nothing, a text column as a feature, ...): the load's own sentence.
    """
    if not isinstance(sample_rows, int) or sample_rows < 1:
        raise UlrError("sample_rows must be a whole number >= 1.")
    job = new_job(path, "mapping check", mapping, True, file_name, quick_hash=True,
                  whole=False)
    job.limit = sample_rows
    try:
        stage(job)
        check_rows(job)
        rows = job.staged + len(job.cast_rejects)
        scope = f" in the first {rows:,} rows" if rows >= sample_rows else ""
        out = [_range_issue(job, p, rows) for p in job.problems if p[1] == "propensity"
               and p[4].startswith("must lie")]
        others = [p for p in job.problems if not (p[1] == "propensity"
                                                  and p[4].startswith("must lie"))]
        if others:
            job.problems = others
            where = f"the first {rows:,} rows" if scope else "the file"
            out.append(MappingIssue("bad_values", others[0][1],
                                    f"In {where}, {problem_text(job)}; the load will refuse "
                                    "these rows unless bad rows are skipped."))
        if job.good > 0:
            out += [MappingIssue(w.code, _FIELD[w.code], w.message)
                    for w in list_warnings(job, scope=scope)]
        return tuple(out)
    finally:
        job.con.close()


_FIELD = {"single_row_sessions": "session_id", "repeated_position": "session_id",
          "single_document_queries": "query_id"}


def _range_issue(job, problem, rows: int) -> MappingIssue:
    """Propensities outside (0, 1]: what a propensity is, and percentages named as such."""
    src, _, n, _, _, values = problem
    nums = [float(v) for v in values if _is_number(v)]
    pct = bool(nums) and all(1 < v <= 100 for v in nums)
    shown = ", ".join(values[:3])
    where = f"the first {rows:,} rows" if rows >= job.limit else f"its {rows:,} rows"
    return MappingIssue(
        "propensity_range", "propensity",
        f"{src!r}, mapped to propensity, lies outside (0, 1] in {n:,} of {where}"
        + (f" (such as {shown})" if shown else "")
        + ": a propensity is the logging policy's probability of showing the row's item, "
        "above 0 and at most 1"
        + ("; these look like percentages, so divide them by 100 in the file" if pct else
           "; map a column of such probabilities, or none") + ".")


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True
