"""Each answerable question answered with its page's defaults (:func:`answer`).

One function per question calls the ulr functions its page calls, with the
settings the page opens with, and returns an :class:`Answer`: the verdict, the
chart, table, caveats and evidence the page's "Add to report" would save, and
the page's link settings (its URL keys, so the link reopens the same view).
Settings the page leaves to the visitor and the audit must choose are said in
the function (the position-bias method of :func:`~ulr.audit.questions.
position_bias_method`, where Compare rankers would default to randomization).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass, field

from ulr.audit.questions import Assessment
from ulr.audit.shape import LogShape
from ulr.errors import Cancelled, UlrError

# The pages' opening settings (pages/*.py); one place here so the CLI and the page agree.
POSITIONS_SHOWN = 10          # Position bias: positions 1..min(K, 10)
PB_BOOTSTRAP = 50             # Position bias and User models: bootstrap replicates
UM_TEST_FRACTION = 0.2        # User models: held-out share of sessions
CR_BOOTSTRAP = 1000           # Compare rankers: bootstrap replicates
OPE_BOOTSTRAP = 1000          # Off-policy: bootstrap draws
REPLAY_ALGORITHM = "cascade-klucb"  # Bandit lab's replay: the algorithm it opens with
SLATE_ESTIMATORS = ("sips", "iips", "rips")
SEED = 0
OPE_VIEWS = ("Evaluate a log", "Simulation: bias and variance", "Learn a policy")


@dataclass
class Answer:
    """One question's outcome: ``answerable`` and ``reason`` (why not, or why it could not
    run), the ``verdict`` (:class:`ulr.verdict.Verdict`), the ``seconds`` it took, and
    what a report item needs (``title``, ``fig``, ``table``, ``settings``, ``caveats``,
    ``evidence``). ``params`` are the page's URL settings for the link."""

    id: str
    question: str
    page: str
    label: str
    answerable: bool
    reason: str = ""
    method: str = ""
    verdict: object = None
    seconds: float = 0.0
    title: str = ""
    figure: object = None  # builds the chart when first asked for (:attr:`fig`)
    table: object = None
    settings: dict = field(default_factory=dict)
    caveats: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    _fig: object = field(default=None, repr=False, compare=False)

    @property
    def fig(self):
        """The chart (a plotly figure) or None; built on first use, so an audit that only
        prints (the CLI without ``--report``) never imports plotly."""
        if self._fig is None and self.figure is not None:
            self._fig = self.figure()
        return self._fig

    def to_dict(self) -> dict:
        """The CLI's JSON entry: ``{id, question, answerable, reason, verdict, seconds}``
        plus the page and its link settings."""
        return {"id": self.id, "question": self.question, "answerable": self.answerable,
                "reason": self.reason or None,
                "verdict": None if self.verdict is None else self.verdict.to_dict(),
                "seconds": self.seconds, "method": self.method or None, "page": self.label,
                "link": link(self)}


class _Slot:
    """One shared value, computed once under its own lock."""

    def __init__(self):
        self._lock, self._done, self._value = threading.Lock(), False, None

    def get(self, compute):
        with self._lock:
            if not self._done:
                self._value, self._done = compute(), True
            return self._value


def _chart(module: str, name: str, *args, **kwargs):
    """A chart builder ``module.name(*args, **kwargs)`` for :attr:`Answer.figure` (a
    picklable partial: the page caches answers)."""
    return functools.partial(_build, module, name, *args, **kwargs)


def _build(module: str, name: str, *args, **kwargs):
    import importlib
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


def link(a: Answer) -> str:
    """The page's address with its settings, relative to the app (``/position_bias?...``)."""
    from urllib.parse import urlencode
    path = "/" + a.page.rsplit("/", 1)[-1].removesuffix(".py")
    return path + ("?" + urlencode(a.params) if a.params else "")


class Context:
    """What the answers of one audit share: the log, its shape and results computed once.

    Shared: the off-policy evaluation (three questions), the CTR table by position (CTR by
    position and Position bias), the true theta a simulated log records (read once through
    the context's one :attr:`scan`, whose memo keeps it), and the mapping warnings (every
    question). Each is computed by the first question that needs it, with the same call
    that question makes alone, so an answer is the same bit for bit whether it is asked
    alone or in an audit (tests/audit/test_shared.py).
    """

    def __init__(self, log, shape: LogShape, should_stop=None):
        self.log, self.shape, self.should_stop = log, shape, should_stop
        self.memo: dict = {}
        self._lock = threading.Lock()
        self._scan = None

    def once(self, key, compute):
        """``compute()`` the first time ``key`` is asked for, its value after that (also
        when two threads ask at once: the second waits for the first's value)."""
        with self._lock:
            slot = self.memo.get(key)
            if slot is None:
                slot = self.memo[key] = _Slot()
        return slot.get(compute)

    @property
    def scan(self):
        """The log's :class:`ulr.data.scan.Scan`, one per audit (its memo is shared)."""
        if self._scan is None:
            from ulr.data.scan import scan_of
            self._scan = scan_of(self.log)
        return self._scan

    def ctr(self):
        """:func:`ulr.data.summary.ctr_by_position` of the log at the verdicts' level."""
        from ulr.data.summary import ctr_by_position
        from ulr.verdict import LEVEL
        return self.once("ctr", lambda: ctr_by_position(self.log, level=LEVEL))

    def true_theta(self):
        """:func:`ulr.data.summary.true_theta` of the log, read once."""
        from ulr.data.summary import true_theta
        return self.once("true_theta", lambda: true_theta(self.scan))

    @property
    def mapping(self):
        return self.shape.mapping_warnings

    @property
    def name(self) -> str:
        return self.shape.name

    def evidence(self) -> dict:
        s = self.shape
        return {"rows": s.rows, "clicks": s.clicks, "queries": s.queries,
                "sessions": s.sessions}


def _ctr_by_position(c: Context, a: Answer) -> None:
    from ulr.data.summary import ctr_by_position_result
    s = c.shape
    share = 1.0 if s.declared_randomized else s.randomized_rows / max(s.rows, 1)
    res = ctr_by_position_result(c.log, randomized_share=share, mapping=c.mapping,
                                 **c.evidence())
    c.once("ctr", lambda: res.table)  # Context.ctr's table: the question after needs it
    a.verdict = res.verdict
    a.title, a.table = "CTR by position", res.table
    a.figure = _chart("ulr.plots", "ctr_by_position_figure", res.table)
    a.settings = {"dataset": c.name}
    a.caveats = list(res.caveats)
    a.evidence = res.evidence


def _position_bias(c: Context, a: Answer) -> None:
    from ulr import propensity
    from ulr.propensity import plots
    positions = min(c.shape.positions, POSITIONS_SHOWN)
    assume = c.shape.declared_randomized and propensity.REGISTRY[a.method].randomized
    r = propensity.estimate(c.log, method=a.method, positions=positions,
                            n_bootstrap=PB_BOOTSTRAP, seed=SEED, assume_randomized=assume,
                            should_stop=c.should_stop, mapping=c.mapping)
    by_pos = c.ctr()  # clicks and impressions per position (the level plays no part)
    truth = c.true_theta()
    table = plots.results_table([r], truth, clicks=by_pos["clicks"].to_numpy(),
                                impressions=by_pos["impressions"].to_numpy())
    a.verdict = r.verdict
    a.title, a.table = "Position bias", table
    a.figure = _chart("ulr.propensity.plots", "theta_figure", [r], truth, table=table)
    a.caveats = [n for n in [plots.thin_note(table, clicks=c.shape.clicks)] if n]
    a.evidence = c.evidence()
    a.settings = {"dataset": c.name, "methods": [a.method], "positions": positions,
                  "bootstrap": PB_BOOTSTRAP, "seed": SEED, "assume_randomized": assume}
    a.params = {"propensity": a.method, "positions": positions, "bootstrap": PB_BOOTSTRAP,
                "seed": SEED}
    _segment_question(c, a)


def _segment_question(c: Context, a: Answer) -> None:
    """A log with a column of 2 to 12 values (a device, a query type) raises the question
    whether position bias differs between its values: asked as a caveat, and the link opens
    the page split by the first such column (issue 52). Logs without one are untouched."""
    from ulr.propensity.segments import segment_columns
    cols = segment_columns(c.log)
    if not cols:
        return
    col, n = next(iter(cols.items()))
    others = [f"“{k}”" for k in list(cols)[1:]]
    a.caveats.append(f"This log has a column “{col}” with {n} values"
                     + (f" (and {', '.join(others)})" if others else "")
                     + ": position bias may differ between them (mobile users scroll less "
                     "than desktop users). The Position bias page, split by it, tells whether "
                     "the segments differ.")
    a.params["by"] = col


def _user_models(c: Context, a: Answer) -> None:
    from ulr import propensity
    from ulr.clickmodels import DEFAULT as MODELS, evaluate, sessions
    S = sessions.collect(c.scan, test_fraction=UM_TEST_FRACTION, seed=SEED)
    res = evaluate.compare(S, list(MODELS), n_bootstrap=PB_BOOTSTRAP, seed=SEED,
                           test_fraction=UM_TEST_FRACTION, refit_intervals=False,
                           should_stop=c.should_stop)
    try:
        pbm = propensity.estimate(c.log, method="em", weigh_facts=False,  # theta only
                                  positions=res.scores[0].examination.shape[0]).theta
    except UlrError:
        pbm = None
    a.verdict, a.title, a.table = res.verdict, "User models", res.table()
    a.figure = _chart("ulr.clickmodels.plots", "examination_figure", res, pbm,
                      truth=c.true_theta())
    a.caveats = list(res.caveats)
    a.evidence = res.evidence
    a.settings = {"dataset": c.name, "models": list(MODELS), "test_fraction": UM_TEST_FRACTION,
                  "bootstrap": PB_BOOTSTRAP, "seed": SEED}
    a.params = {"models": ",".join(MODELS), "test": UM_TEST_FRACTION,
                "bootstrap": PB_BOOTSTRAP, "seed": SEED}


def _rankers(c: Context, a: Answer) -> None:
    import numpy as np

    from ulr import rankers
    truth = c.true_theta()
    if truth is not None:
        theta, theta_from = tuple(float(t) for t in truth), "true theta (recorded in the log)"
    else:
        theta = tuple(float(t) for t in rankers.propensity_theta(
            c.log, a.method, seed=SEED, should_stop=c.should_stop))
        theta_from = f"estimated: {a.method}"
    facts = rankers.weighed_facts(c.log, propensity=None if truth is not None else a.method,
                                  should_stop=c.should_stop)
    sc = rankers.compare_learners(rankers.log_frame(c.log), None, np.array(theta),
                                  learners="linear", clip=None, normalize=False, seed=SEED,
                                  min_queries=rankers.MIN_TEST_QUERIES,
                                  n_bootstrap=CR_BOOTSTRAP, should_stop=c.should_stop,
                                  **facts)
    comp = sc.first
    view = sc.view(n_bootstrap=CR_BOOTSTRAP, seed=SEED)  # the page's tables and caveats
    a.verdict = view["verdict"]
    a.title = "Naive vs IPW ranker"
    a.table = view["side_by_side"]
    a.figure = _chart("ulr.rankers.plots", "comparison_figure", view["table"],
                      estimated=comp.estimated, title=f"Naive vs IPW (linear) on “{c.name}”")
    a.caveats.extend(text for _, text in view["caveats"])
    a.evidence = {"rows": comp.n_train_rows, "clicks": comp.n_train_clicks,
                  "queries": comp.n_train_queries + comp.n_test_queries,
                  "sessions": comp.n_train_sessions}
    a.settings = {"dataset": c.name, "theta_from": theta_from, "learner": "linear",
                  "theta": list(theta), "clip": None, "self-normalized": False, "seed": SEED,
                  "bootstrap": CR_BOOTSTRAP}
    a.params = {"propensity": theta_from, "learner": "linear", "seed": SEED,
                "bootstrap": CR_BOOTSTRAP}


def _ope_settings(shape: LogShape) -> dict:
    """The Off-policy page's opening settings for this log (pages/_ope/log.py)."""
    from ulr.ope import registry
    loggers = shape.has("logger")
    return dict(action="doc_id", target="fitted" if shape.features else "uniform",
                target_column=None, score_column=None, temperature=1.0, fit_fraction=0.5,
                estimators=tuple(registry.defaults()) + tuple(
                    n for n in registry.names(loggers=loggers) if registry.get(n).needs_loggers),
                clip=None, n_bootstrap=OPE_BOOTSTRAP, level=0.95, folds=2, seed=SEED,
                interval="bootstrap", reward_model="linear", reward_column=None)


def _evaluation(c: Context):
    from ulr.ope.evaluate import evaluate_log
    from ulr.ope.settings import OPESettings
    s = _ope_settings(c.shape)
    return c.once("ope", lambda: evaluate_log(c.log, OPESettings(**s), mapping=c.mapping)), s


def _ope_common(c: Context, a: Answer, res, s) -> None:
    from ulr.ope import registry
    d = res.diagnostics
    a.verdict = res.verdict  # weighs c.mapping (_evaluation)
    a.caveats = [w.message for w in res.warnings]
    a.evidence = {"rows": d["n"], "clicks": d["clicks"], "queries": res.settings.get("contexts"),
                  "sessions": d["units"] if res.settings["resampling"] == "impressions"
                  else None}
    a.settings = {"log": c.name, "target policy": s["target"],
                  "estimators": registry.labels(s["estimators"]), "seed": SEED}
    a.params = {"view": OPE_VIEWS[0], "dataset": c.name, "target": s["target"],
                "temperature": s["temperature"], "action": s["action"],
                "estimators": ",".join(s["estimators"]), "seed": SEED}


def _off_policy(c: Context, a: Answer) -> None:
    res, s = _evaluation(c)
    _ope_common(c, a, res, s)
    policy = {"fitted": "softmax of a linear click model fit on part of the log",
              "uniform": "uniform over each query's documents"}[s["target"]]
    a.title = f"Off-policy estimates of the target policy: {policy}"
    a.table = res.estimates_table()
    a.figure = _chart("ulr.ope.figures", "estimates_figure", res.table,
                      logging_label=res.logging_label)


def _several_loggers(c: Context, a: Answer) -> None:
    res, s = _evaluation(c)
    if res.per_logger is None:
        raise UlrError("the evaluation found a single logging policy in the evaluated rows.")
    _ope_common(c, a, res, s)
    a.title = "Several loggers: each logging policy's estimate and the combined ones"
    from ulr.ope.loggers import PER_LOGGER_LABELS
    a.table = res.per_logger.rename(columns=PER_LOGGER_LABELS)


def _policy_learning(c: Context, a: Answer) -> None:
    from ulr.ope.feedback import feedback_from_log
    from ulr.ope.study import crm_study
    fb, _ = feedback_from_log(c.log, action="doc_id")
    out = crm_study(fb, seed=SEED, should_stop=c.should_stop,
                    mapping=c.mapping)  # the page's defaults
    res = out["result"]
    a.verdict = res.verdict
    a.title = "Policy learned by counterfactual risk minimization (SNIPS objective)"
    a.figure = _chart("ulr.ope.figures", "crm_curve_figure", res.curve)
    a.table = res.evaluation.estimates_table()
    a.caveats = [w.message for w in res.evaluation.warnings]
    d = res.evaluation.diagnostics
    a.evidence = {"rows": d["n"], "clicks": d["clicks"]}
    a.settings = {"target policy": "learned linear softmax", "estimator": "SNIPS",
                  "seed": SEED}
    a.params = {"view": OPE_VIEWS[2], "crm_data": "log", "crm_objective": "snips",
                "crm_steps": 200, "crm_seed": SEED, "dataset": c.name}


def _replay(c: Context, a: Answer) -> None:
    import pandas as pd

    from ulr.bandits.replay import replay
    rr = replay(c.log, REPLAY_ALGORITHM, positions=1, seed=SEED,
                assume_randomized=c.shape.declared_randomized, mapping=c.mapping)
    a.verdict = rr.verdict
    a.title = f"Replay of {REPLAY_ALGORITHM} (top 1)"
    a.table = pd.DataFrame([{"algorithm": rr.algorithm, "ctr": rr.ctr, "lower": rr.ci_lower,
                             "upper": rr.ci_upper, "random order ctr": rr.random_ctr,
                             "accepted sessions": rr.accepted, "sessions": rr.events}])
    a.caveats = list(rr.caveats())
    a.evidence = dict(rr.evidence)
    a.settings = {"dataset": c.name, "algorithm": REPLAY_ALGORITHM, "k": 1, "seed": SEED}


def _slates(c: Context, a: Answer) -> None:
    from ulr.ope.slate import slate_from_log
    s = _ope_settings(c.shape)
    out = slate_from_log(c.log, score_column=None, estimators=SLATE_ESTIMATORS,
                         temperature=s["temperature"], fit_fraction=s["fit_fraction"],
                         level=s["level"], seed=SEED, mapping=c.mapping)
    a.verdict = out.verdict
    a.title, a.table = "Clicks per ranking (slate estimators)", out.shown_table()
    a.caveats = list(out.notes)
    a.evidence = dict(out.evidence)
    a.settings = {"log": c.name, "estimators": list(SLATE_ESTIMATORS), "seed": SEED}
    a.params = {"view": OPE_VIEWS[0], "dataset": c.name, "target": s["target"], "seed": SEED}


RUNNERS = {"ctr_by_position": _ctr_by_position, "position_bias": _position_bias,
           "user_models": _user_models, "rankers": _rankers, "off_policy": _off_policy,
           "policy_learning": _policy_learning, "several_loggers": _several_loggers,
           "replay": _replay, "slates": _slates}


def _refused(a: Answer, reason: str) -> None:
    a.answerable, a.reason, a.verdict = False, reason, None
    a.figure, a._fig, a.table = None, None, None


def answer(ctx: Context | None, assessment: Assessment) -> Answer:
    """Run one assessed question (a refused run becomes "not answerable" with its reason);
    a question the log does not support needs no ``ctx``."""
    q = assessment.question
    a = Answer(q.id, q.question, q.page, q.label, assessment.answerable, assessment.reason,
               assessment.method)
    if not a.answerable:
        return a
    if ctx.should_stop is not None and ctx.should_stop():
        raise Cancelled("stopped on request")
    t0 = time.perf_counter()
    try:
        RUNNERS[q.id](ctx, a)
    except Cancelled:
        raise
    except UlrError as exc:
        text = str(exc).strip()
        _refused(a, f"It could not run on this log: {text[:1].lower()}{text[1:]}")
    except Exception as exc:  # noqa: BLE001 - a bug in one method must not hide the others
        logging.getLogger(__name__).exception("audit question %s failed", q.id)
        _refused(a, f"It could not run on this log: an internal error ({type(exc).__name__}); "
                    "please report it.")
    a.seconds = time.perf_counter() - t0
    return a
