"""The audit as a saved report: a title slide, then every answered question in order."""

from __future__ import annotations

from ulr.audit.answers import Answer


def _known(evidence: dict) -> dict:
    """The evidence without the counts the log does not have (no "None sessions" on a slide)."""
    return {k: v for k, v in evidence.items() if v is not None}


def title_item(audit, *, dataset: str = "", content_hash: str = ""):
    """The opening item: what the log holds, how many questions it answers, and for each
    question it cannot answer, why (a note item: no chart, no table)."""
    from ulr.report import ReportItem
    s = audit.shape
    done = [a for a in audit.answers if a.answerable]
    lines = ["What the log holds:"] + [f"• {line}" for line in s.lines()]
    missing = [a for a in audit.answers if not a.answerable]
    if missing:
        lines += ["", "Not answerable from this log:"]
        lines += [f"• {a.question} {a.reason}" for a in missing]
    return ReportItem.from_result(
        f"What can “{s.name}” tell us?", note="\n".join(lines),
        takeaway=(f"This log answers {len(done)} of {len(audit.answers)} questions; the "
                  "following slides give each answer with its verdict." if done else
                  f"This log answers none of the {len(audit.answers)} questions; the reasons "
                  "are below."),
        evidence=_known({"rows": s.rows, "clicks": s.clicks, "queries": s.queries,
                         "sessions": s.sessions}),
        settings={"dataset": s.name}, dataset=dataset, content_hash=content_hash)


def answer_item(a: Answer, *, dataset: str = "", content_hash: str = ""):
    """One answered question as the report item its page's "Add to report" saves."""
    from ulr.report import ReportItem
    return ReportItem.from_result(a.title or a.question, fig=a.fig, table=a.table,
                                  settings=a.settings, caveats=a.caveats,
                                  evidence=_known(a.evidence),
                                  dataset=dataset, content_hash=content_hash, verdict=a.verdict)


def build_report(audit, *, name: str, actor: str, dataset: str = "", content_hash: str = "",
                 db=None) -> str:
    """A new saved report named ``name`` owned by ``actor``: the title item, then every
    answered question in :data:`ulr.audit.questions.QUESTIONS` order. Returns its id.

    Every item is built (and so validated) before the report is created, so a broken
    result creates no half report.
    """
    from ulr.report import saved
    items = [title_item(audit, dataset=dataset, content_hash=content_hash)]
    items += [answer_item(a, dataset=dataset, content_hash=content_hash)
              for a in audit.answers if a.answerable]
    info = saved.create(name, actor=actor, db=db)
    for it in items:
        saved.add_item(info.id, it, actor=actor, db=db)
    return info.id
