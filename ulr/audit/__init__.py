"""What can this log tell me? One step from a click log to every answer it supports.

:func:`read_shape` reads what the log holds (one aggregate statement);
:func:`assess` decides, for every question of :data:`QUESTIONS`, whether the log
supports it and, if not, which mapped field would make it answerable;
:func:`run` answers every answerable question with its page's defaults; and
:func:`build_report` saves the answers as a new report that opens with a title
slide. Simulation-only pages are offered to explore (:data:`EXPLORE`), never as
answers about the log.

One module per role: :mod:`.shape`, :mod:`.questions`, :mod:`.answers`,
:mod:`.report`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ulr.audit.answers import Answer, Context, answer, link
from ulr.audit.questions import (BY_ID, EXPLORE, IDS, QUESTIONS, Assessment, Question, assess,
                                 ope_needs, page_methods, position_bias_method)
from ulr.audit.report import build_report, title_item
from ulr.audit.shape import LogShape, read_shape


@dataclass
class Audit:
    """The shape of a log and one :class:`Answer` per question, in question order."""

    shape: LogShape
    answers: list
    seconds: float = 0.0

    @property
    def answered(self) -> list:
        return [a for a in self.answers if a.answerable]

    def to_dict(self) -> dict:
        return {"dataset": self.shape.name, "shape": self.shape.to_dict(),
                "questions": [a.to_dict() for a in self.answers],
                "explore": [{"page": label, "what": what} for _, label, what in EXPLORE],
                "seconds": self.seconds}


def steps(shape: LogShape) -> list[Assessment]:
    """The questions to run for this log, in order (the progress display counts them)."""
    return assess(shape)


def run(log, *, shape: LogShape | None = None, only=None, progress=None,
        should_stop=None) -> Audit:
    """Assess and answer every question for ``log`` (a :class:`ulr.data.log.Log`).

    Parameters
    ----------
    log : ulr.data.log.Log
    shape : LogShape, optional
        :func:`read_shape` of ``log`` when already read.
    only : iterable of str, optional
        Question ids to answer (the others are assessed only); default all.
    progress : callable(fraction, text), optional
        Called before each question with the share done and the question.
    should_stop : callable() -> bool, optional
        Passed to the long computations; the run ends with
        :class:`ulr.errors.Cancelled` within one step when it says yes.
    """
    t0 = time.perf_counter()
    shape = shape or read_shape(log)
    ctx = Context(log, shape, should_stop)
    todo = assess(shape)
    wanted = set(IDS if only is None else only)
    answers = []
    for i, a in enumerate(todo):
        if progress is not None and a.answerable and a.id in wanted:
            progress(i / len(todo), a.question.question)
        if a.id not in wanted and a.answerable:
            a = Assessment(a.question, False, "Not asked in this run.", a.method)
        answers.append(answer(ctx, a))
    if progress is not None:
        progress(1.0, "done")
    return Audit(shape, answers, time.perf_counter() - t0)


__all__ = ["Answer", "Assessment", "Audit", "BY_ID", "Context", "EXPLORE", "IDS", "LogShape",
           "QUESTIONS", "Question", "answer", "assess", "build_report", "link", "ope_needs",
           "page_methods", "position_bias_method", "read_shape", "run", "steps", "title_item"]
