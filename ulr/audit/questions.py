"""The questions a click log can answer, and whether this one can (:func:`assess`).

Each question has a stable id, the page that answers it and what it needs. What
a method needs is read from its own declaration where one exists: the
position-bias estimators' :data:`ulr.propensity.REGISTRY` (randomized rows,
features, sessions), the click models' need of sessions
(:func:`ulr.clickmodels.sessions.has_sessions`), the mapping warnings that stop
an analysis (:data:`ulr.lists.BLOCKS`) and, for off-policy evaluation,
:func:`ope_needs` (one small function, to be switched to ``ulr.ope``'s estimator
registry when it declares its needs).

A reason for "not answerable" names the field of the mapping that would make it
answerable; it never names a command-line flag (the page shows it as is).
"""

from __future__ import annotations

from dataclasses import dataclass

from ulr.audit.shape import LogShape


@dataclass(frozen=True)
class Question:
    """One question: stable ``id``, the ``question`` in plain words, its ``page`` (file
    under ``pages/``) and the page's menu ``label``."""

    id: str
    question: str
    page: str
    label: str


QUESTIONS = (
    Question("ctr_by_position", "How does the click rate change with position?",
             "pages/data.py", "Data"),
    Question("position_bias", "How strongly does examination fall with position?",
             "pages/position_bias.py", "Position bias"),
    Question("user_models", "Which user model explains the clicks?",
             "pages/user_models.py", "User models"),
    Question("rankers", "Does correcting for position bias train a better ranker?",
             "pages/compare_rankers.py", "Compare rankers"),
    Question("off_policy", "How would a new policy have done, judged from this log?",
             "pages/off_policy.py", "Off-policy evaluation"),
    Question("policy_learning", "Can a better policy be learned from this log?",
             "pages/off_policy.py", "Off-policy evaluation"),
    Question("several_loggers", "What does each logging policy's share of the log say?",
             "pages/off_policy.py", "Off-policy evaluation"),
    Question("replay", "How would a bandit algorithm have done online (replay)?",
             "pages/bandit_lab.py", "Bandit lab"),
    Question("slates", "How many clicks per ranking would a new ranking policy get?",
             "pages/off_policy.py", "Off-policy evaluation"),
)
IDS = tuple(q.id for q in QUESTIONS)
BY_ID = {q.id: q for q in QUESTIONS}

#: simulation-only pages: offered to explore, never answers about the log
EXPLORE = (
    ("pages/severity_sweep.py", "Severity sweep",
     "how much position bias costs a naive ranker, on simulated logs of rising severity"),
    ("pages/bandit_lab.py", "Bandit lab",
     "how cascading bandits learn a ranking, in simulated environments"),
    ("pages/debiased_recs.py", "Debiased recommendation",
     "how debiasing changes recommendations, in simulated worlds"),
)

# What each mapped field is, as the reasons say it.
_FIELD = {
    "session_id": "session column (map the column that groups the items shown together as "
                  "one list to the field session_id)",
    "propensity": "propensity column (map the logging policy's probability of each shown "
                  "item to the field propensity, or give a known logging propensity)",
    "features": "feature columns (pick numeric columns as features in the mapping)",
    "logger": "logger column (map the column that says which logging policy wrote each row "
              "to the field logger)",
    "randomized": "randomized rows (map a randomized column, or declare that the whole log "
                  "was shown in random order)",
}


def ope_needs(question: str) -> tuple[str, ...]:
    """The fields an off-policy question needs: ``propensity``, ``features``, ``logger``,
    ``session_id``.

    The one place the audit reads what off-policy evaluation needs; the lead can
    switch it to ``ulr.ope``'s estimator registry once it declares needs. Today:
    every estimator divides by the logged ``propensity``; the page's default target
    is a click model fitted on the features (without them, the uniform policy);
    policy learning fits a linear policy on the features; the several-loggers
    estimators need a ``logger``; the slate estimators need complete rankings
    (``session_id``) and a ranking target (features), and derive each ranking's
    probability from its per-slot propensities (:func:`ulr.ope.slate.logging_prefix_prob`).
    """
    return {"off_policy": ("propensity",),
            "policy_learning": ("propensity", "features"),
            "several_loggers": ("propensity", "logger"),
            "slates": ("session_id", "propensity", "features")}[question]


def _has(shape: LogShape, need: str) -> bool:
    return {"propensity": shape.has_propensities, "features": bool(shape.features),
            "logger": shape.several_loggers, "session_id": shape.has_sessions,
            "randomized": shape.has_randomized_rows}[need]


def _missing(shape: LogShape, needs) -> str | None:
    """"The log has no X and no Y." for the unmet needs, or None."""
    miss = [n for n in needs if not _has(shape, n)]
    if not miss:
        return None
    if miss == ["logger"] and shape.loggers == 1:
        return "The logger column holds a single logging policy."
    return "The log has no " + " and no ".join(_FIELD[n] for n in miss) + "."


def _too_few_queries(shape: LogShape) -> str | None:
    """The rankers' own floor of held-out queries (:func:`ulr.rankers.evaluate.split_queries`
    holds out ``TEST_FRACTION`` of them; a paired test needs ``MIN_TEST_QUERIES``)."""
    from ulr.rankers.evaluate import MIN_TEST_QUERIES, TEST_FRACTION
    held = min(max(1, int(round(TEST_FRACTION * shape.queries))), max(shape.queries - 1, 0))
    if held >= MIN_TEST_QUERIES:
        return None
    return (f"Only {held:,} of its {shape.queries:,} queries would be held out to compare "
            f"rankers, and a paired comparison needs at least {MIN_TEST_QUERIES}; map a query "
            "key with more distinct values (several columns can be combined into query_id).")


def _blocked(shape: LogShape, analysis: str) -> str | None:
    stops = shape.blocked(analysis)
    return stops[0].message if stops else None


@dataclass(frozen=True)
class Assessment:
    """Whether this log supports ``question`` (``answerable``), and why not (``reason``);
    ``method`` is the position-bias method chosen where one is (else "")."""

    question: Question
    answerable: bool
    reason: str = ""
    method: str = ""

    @property
    def id(self) -> str:
        return self.question.id


def position_bias_method(shape: LogShape) -> tuple[str | None, str]:
    """The position-bias method this log supports, and why (or why none does).

    Randomization when the whole log was shown in random order; otherwise EM when
    some query-document pair was shown at more than one position; otherwise
    regression EM when the log has features. Each is the first record of
    :data:`ulr.propensity.REGISTRY` with that need (``randomized``, ``pairs``,
    ``features``), and must also meet the rest of its declaration.
    """
    from ulr.propensity.registry import REGISTRY
    if shape.positions < 2:
        return None, "The log shows results at a single position: there is no position bias."
    stop = _blocked(shape, "propensity")
    if stop:
        return None, stop
    routes = {  # need -> (the log offers it, why), tried in registry order
        "randomized": lambda spec: (shape.randomized and not shape.blocked(spec.analysis),
                                    "the whole log was shown in random order"),
        "pairs": lambda spec: (bool(shape.pairs_at_several_positions),
                               f"{shape.pairs_at_several_positions:,} query-document pairs "
                               "were shown at more than one position"),
        "features": lambda spec: (True, "the features stand in for pairs seen once")}
    for method, spec in REGISTRY.items():
        need = next((n for n in routes if getattr(spec, n)), None)
        if need is None:
            continue
        ok, why = routes.pop(need)(spec)  # only the first record with each need
        needs = [n for n, on in (("randomized", spec.randomized), ("features", spec.features),
                                 ("session_id", spec.sessions)) if on]
        if ok and _missing(shape, needs) is None:
            return method, why
    return None, ("No query-document pair was shown at more than one position and the log has "
                  f"neither {_FIELD['randomized']} nor {_FIELD['features']}.")


def page_methods(shape: LogShape, *, most: int = 2) -> list[str]:
    """The position-bias methods a page opens with on this log: those whose record opens
    a page (``Method.opens``: randomization and EM, the Position bias page's pair) that the
    log supports, else :func:`position_bias_method`'s choice; never a dead end (a method
    the log cannot run). A ``randomized`` method needs rows marked randomized that the data
    do not contradict; a ``pairs`` method, a query-document pair shown at more than one
    position; neither may be blocked by the mapping (its record's ``analysis``)."""
    from ulr.propensity.registry import REGISTRY
    out = [m for m, spec in REGISTRY.items()
           if spec.opens and not shape.blocked(spec.analysis)
           and (shape.has_randomized_rows or not spec.randomized)
           and (shape.pairs_at_several_positions or not spec.pairs)]
    if not out:
        chosen = position_bias_method(shape)[0]
        out = [chosen] if chosen else []
    return out[:most]


def _rows(shape: LogShape, method) -> str | None:
    return None if shape.rows else "The log has no rows."


def _position_bias(shape: LogShape, method) -> str | None:
    return None if method[0] else method[1]


def _user_models(shape: LogShape, method) -> str | None:
    from ulr.clickmodels.sessions import has_sessions
    if has_sessions(shape):
        return None
    return ("Click models read the clicks of one shown list in rank order, and the log has no "
            f"{_FIELD['session_id']}.")


def _rankers(shape: LogShape, method) -> str | None:
    if not shape.features:
        return ("Training a ranker needs " + _FIELD["features"] + "; "
                + ("the relevance labels alone leave nothing to learn from."
                   if shape.has_labels else "the log has none."))
    reason = _blocked(shape, "rankers") or _too_few_queries(shape)
    if reason is None and method[0] is None:
        why = method[1]
        reason = f"Weighting clicks needs a position-bias estimate, and {why[:1].lower()}{why[1:]}"
    return reason


def _off_policy(question: str):
    def need(shape: LogShape, method) -> str | None:
        reason = _missing(shape, ope_needs(question))
        return reason or (_blocked(shape, "slate") if question == "slates" else None)
    return need


def _replay(shape: LogShape, method) -> str | None:
    return _missing(shape, ("session_id", "randomized")) or _blocked(shape, "replay")


#: question id -> (shape, (method, why)) -> the reason it is not answerable, or None
NEEDS = {"ctr_by_position": _rows, "position_bias": _position_bias,
         "user_models": _user_models, "rankers": _rankers,
         **{q: _off_policy(q) for q in ("off_policy", "policy_learning", "several_loggers",
                                        "slates")},
         "replay": _replay}
_USES_METHOD = ("position_bias", "rankers")


def assess(shape: LogShape) -> list[Assessment]:
    """Every question of :data:`QUESTIONS`, in order, assessed for this log."""
    method = position_bias_method(shape)
    out = []
    for q in QUESTIONS:
        reason = NEEDS[q.id](shape, method)
        chosen = (method[0] or "") if q.id in _USES_METHOD else ""
        out.append(Assessment(q, reason is None, reason or "", chosen))
    return out
