"""The study's learners: one small record each, one interface (``fit(ctx) -> scorer``).

Every learner trains on the simulated clicks of the training queries (or, for the
references, on their true grades) and returns a function that scores feature rows.

- ``naive-linear`` / ``ipw-linear``: ulr's linear pairwise ranker
  (:class:`ulr.rankers.LinearPairwiseRanker`: hinge loss on ``w . (x_clicked - x_other)``
  for every clicked and non-clicked document of a session, liblinear), with the pair
  weight 1 or ``1 / theta_k`` of the clicked position (Joachims et al. 2017). Identical
  (clicked, other) document pairs are merged with their summed weights first, the same
  objective on far fewer rows (``tests/study`` checks it against the ranker itself).
- ``naive-gbdt`` / ``ipw-gbdt``: ulr's pointwise boosted click model
  (:class:`ulr.rankers.BoostedClickRanker`: every impression a negative with weight 1,
  every click also a positive with weight 1 or ``1 / theta_k``), aggregated per document.
- ``lightgbm``: LightGBM's lambdarank with the clicks as labels, one group per session.
- ``lightgbm-ipw``: the same with inverse propensity weights: a session with clicks at
  ``k1, k2, ...`` becomes one group per click (the clicked document and the session's
  non-clicked ones) with row weights ``1 / theta_k`` (LightGBM multiplies each row's
  gradient by its weight), so every (clicked, non-clicked) pair weighs ``1 / theta_k``.
- ``lightgbm-position``: LightGBM's own position-bias correction: the shown position of
  every row in ``Dataset(position=...)`` and ``lambdarank_position_bias_regularization``
  (LightGBM >= 4.1; Unbiased LambdaMART, Hu et al. 2019).
- ``xgboost``: XGBoost's ``rank:ndcg`` (LambdaMART) on clicks, one query group per session,
  with the cut points of the training documents (as LightGBM's bins above).
- ``xgboost-unbiased``: the same with ``lambdarank_unbiased=True`` (Hu et al., WWW 2019):
  XGBoost estimates position biases from the clicks; the position is the row's order in
  its group, so rows are passed sorted by position.
- ``oracle``: LightGBM lambdarank on the true grades of all training queries (the skyline).
- ``production``: the production ranker that showed the lists (the floor).

References
----------
Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased Feedback". WSDM 2017.
Hu, Wang, Peng, Li. "Unbiased LambdaMART: An Unbiased Pairwise Learning-to-Rank
Algorithm". WWW 2019.
Ke et al. "LightGBM: A Highly Efficient Gradient Boosting Decision Tree". NeurIPS 2017.
Chen, Guestrin. "XGBoost: A Scalable Tree Boosting System". KDD 2016.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ulr.errors import UlrError
from ulr.rankers import MAX_PAIRS, click_pairs, ipw_weights
from ulr.study.labels import LabelledSet
from ulr.study.simulate import ClickLog, ProductionRanker

Scorer = Callable[[np.ndarray], np.ndarray]
#: boosting rounds of the GBDT learners, at learning rate 0.2 with 63 bins per feature: the
#: shape regression EM chose (docs/benchmarks.md: 50 trees at 0.2 rank as well as 100 at 0.1
#: at half the time); a study fits several learners per run on up to a million rows
ROUNDS = 50
LEARNING_RATE = 0.2
MAX_BIN = 63
#: one thread: on a shared machine OpenMP's spinning threads made a LightGBM fit 9x slower
#: than single-threaded (2.4 s against 21 s on 35,000 rows, load average 7 on 2 cores)
THREADS = 1
#: liblinear seeds one process-wide random generator: two fits at the same time (the
#: study's thread pool) would draw from it in turn and stop being reproducible
_LIBLINEAR = threading.Lock()
_SHARED = threading.Lock()
NO_PAIRS = ("No simulated session has both a click and a non-click, so the lambdarank "
            "learners have nothing to learn from.")


@dataclass(frozen=True)
class Context:
    """What a learner trains on: the training queries, their simulated clicks, the theta
    used for IPW (relative, per position), the production ranker and the seed."""

    train: LabelledSet
    log: ClickLog
    theta: np.ndarray
    production: ProductionRanker
    seed: int = 0
    options: dict | None = None
    #: what the runs of one study share (the same training queries): built once, on demand
    shared: dict | None = None

    def option(self, name: str, default):
        return (self.options or {}).get(name, default)

    def lightgbm_bins(self):
        """A LightGBM Dataset of the training documents, constructed once per study and
        passed as ``reference`` to every click Dataset: its bin boundaries (63 per feature,
        from the documents, each counted once) are found once instead of per fit, and a
        fit only sorts its rows into them."""
        import lightgbm as lgb
        shared = self.shared if self.shared is not None else {}
        with _SHARED:
            ref = shared.get("lightgbm_bins")
            if ref is None:
                ref = lgb.Dataset(self.train.X, params={"max_bin": MAX_BIN, "verbose": -1},
                                  free_raw_data=False).construct()
                shared["lightgbm_bins"] = ref
        return ref

    def xgboost_bins(self):
        """An XGBoost ``QuantileDMatrix`` of the training documents, built once per study
        and passed as ``ref`` to every click matrix: its cut points (63 per feature, from the
        documents, each counted once, as for LightGBM) are sketched once instead of per fit
        (sketching a million rows was a third of an XGBoost fit), and a fit only sorts its
        rows into them."""
        import xgboost as xgb
        shared = self.shared if self.shared is not None else {}
        with _SHARED:
            ref = shared.get("xgboost_bins")
            if ref is None:
                ref = xgb.QuantileDMatrix(self.train.X, max_bin=MAX_BIN, nthread=THREADS)
                shared["xgboost_bins"] = ref
        return ref


@dataclass(frozen=True)
class Learner:
    """One learner of the study: its name, a label for people, what it is, and ``fit``."""

    name: str
    label: str
    help: str
    fit: Callable[[Context], Scorer]
    uses_theta: bool = False
    reference: bool = False
    #: trained on each run's clicks (False: the same training data in every run)
    per_run: bool = True
    #: rough relative cost of a fit, to start the longest first
    cost: int = 1
    #: its scorer is a :class:`ClickScorer` (held-out click log-likelihood is reported)
    predicts_clicks: bool = False


# --------------------------------------------------------------------------- linear


def _standardization(X: np.ndarray, rows: np.ndarray, counts: np.ndarray):
    """Mean and scale of the features over the impressions (documents weighted by how
    often they were shown), as the ranker computes them over its log's rows."""
    Xr = X[rows].astype(np.float64)
    w = counts.astype(np.float64)
    mean = (w[:, None] * Xr).sum(axis=0) / w.sum()
    var = (w[:, None] * (Xr - mean) ** 2).sum(axis=0) / w.sum()
    sd = np.sqrt(var)
    return mean, np.where(sd > 0, sd, 1.0)


def _linear(ipw: bool) -> Callable[[Context], Scorer]:
    def fit(ctx: Context) -> Scorer:
        from sklearn.svm import LinearSVC
        log, X = ctx.log, ctx.train.X
        frame = pd.DataFrame({"query_id": log.query, "session_id": log.session,
                              "click": log.click})
        pairs = click_pairs(frame, max_pairs=MAX_PAIRS, seed=ctx.seed)
        n = len(pairs)
        w = (ipw_weights(log.position[pairs.clicked], ctx.theta) if ipw
             else np.ones(n))
        n_docs = ctx.train.n_documents
        key = log.doc[pairs.clicked].astype(np.int64) * n_docs + log.doc[pairs.other]
        uniq, inv = np.unique(key, return_inverse=True)
        weight = np.bincount(inv, weights=w, minlength=uniq.size)
        dc, do = uniq // n_docs, uniq % n_docs
        shown, shown_n = np.unique(log.doc, return_counts=True)
        mean, scale = _standardization(X, shown, shown_n)
        diff = ((X[dc].astype(np.float64) - X[do]) / scale)
        sign = np.where(np.arange(uniq.size) % 2 == 0, 1.0, -1.0)
        diff *= sign[:, None]
        if uniq.size == 1:
            diff, sign, weight = np.vstack([diff, -diff]), np.r_[sign, -sign], np.r_[weight, weight]
        alpha = float(ctx.option("alpha", 1e-2))
        model = LinearSVC(loss="hinge", dual=True, C=1.0 / (alpha * n), fit_intercept=False,
                          random_state=ctx.seed, max_iter=20_000, tol=1e-4)
        with _LIBLINEAR, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*converge.*")
            model.fit(diff, sign, sample_weight=weight)
        coef = (model.coef_.ravel() / scale).astype(np.float32)
        return lambda Xt: (Xt @ coef).astype(np.float64)
    return fit


# --------------------------------------------------------------------------- ulr's GBDT


def _gbdt(ipw: bool) -> Callable[[Context], Scorer]:
    def fit(ctx: Context) -> Scorer:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits
        log, X = ctx.log, ctx.train.X
        if not log.click.any():
            raise UlrError("The simulated log has no click, so there is nothing to learn from.")
        docs, inv = np.unique(log.doc, return_inverse=True)
        neg = np.bincount(inv, minlength=docs.size).astype(np.float64)
        c = log.click
        w = ipw_weights(log.position[c], ctx.theta) if ipw else np.ones(int(c.sum()))
        pos = np.bincount(inv[c], weights=w, minlength=docs.size)
        has = pos > 0
        Xa = np.vstack([X[docs], X[docs[has]]])
        ya = np.r_[np.zeros(docs.size), np.ones(int(has.sum()))]
        wa = np.r_[neg, pos[has]]
        model = HistGradientBoostingClassifier(early_stopping=False, random_state=ctx.seed,
                                               max_iter=100, learning_rate=0.1,
                                               max_leaf_nodes=7, min_samples_leaf=50)
        with threadpool_limits(limits=1, user_api="openmp"):
            model.fit(Xa, ya, sample_weight=wa)
        return ClickScorer(model.decision_function,
                           theta=np.asarray(ctx.theta, dtype=np.float64) if ipw else None)
    return fit


@dataclass(frozen=True)
class ClickScorer:
    """A scorer that also predicts clicks: the boosted click models.

    Every impression is a negative of weight 1 and every click also a positive of weight
    ``w`` (1, or ``1 / theta_k``), so the weighted log-loss is minimized at the odds
    ``exp f(x) = E[w c | x]`` per impression: the click rate ``P(click | x)`` for the
    naive model, ``P(click | examined at 1, x)`` for the IPW one under the PBM. Hence

    .. math::
        P(c = 1 \\mid x, k) = \\min(1, e^{f(x)})\\ \\text{(naive)}, \\qquad
        P(c = 1 \\mid x, k) = \\min(1, \\theta_k e^{f(x)})\\ \\text{(IPW)}

    with ``theta`` relative to position 1 (Joachims et al. 2017; Wang et al., "Position
    bias estimation for unbiased learning to rank in personal search", WSDM 2018).
    """

    decision: Callable[[np.ndarray], np.ndarray]
    theta: np.ndarray | None = None

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.decision(X)

    def click_probability(self, X: np.ndarray, position: np.ndarray, *,
                          eps: float = 1e-6) -> np.ndarray:
        """``P(click)`` of the rows ``X`` shown at the 1-based ``position``, clipped to
        ``[eps, 1 - eps]`` (a log-likelihood stays finite)."""
        return self.probability(self.decision(X), position, eps=eps)

    def probability(self, f: np.ndarray, position: np.ndarray, *,
                    eps: float = 1e-6) -> np.ndarray:
        """:meth:`click_probability` from the scores ``f`` already computed."""
        p = np.exp(np.minimum(np.asarray(f, dtype=np.float64), 0.0))
        if self.theta is not None:
            k = np.asarray(position, dtype=np.int64) - 1
            t = np.where(k < self.theta.size, self.theta[np.minimum(k, self.theta.size - 1)],
                         self.theta[-1])
            p = p * t
        return np.clip(p, eps, 1.0 - eps)


# --------------------------------------------------------------------------- LightGBM / XGBoost


def _sessions_with_pairs(log: ClickLog) -> np.ndarray:
    """Rows of the sessions with at least one click and one non-click (the others give a
    lambdarank objective no pair), in (session, position) order."""
    s = log.session
    n_s = int(s.max()) + 1
    clicks = np.bincount(s, weights=log.click, minlength=n_s)
    shown = np.bincount(s, minlength=n_s)
    keep = (clicks > 0) & (clicks < shown)
    rows = np.flatnonzero(keep[s])
    return rows[np.lexsort((log.position[rows], s[rows]))]


def _group_sizes(ids: np.ndarray) -> np.ndarray:
    """Sizes of the runs of equal consecutive ids."""
    if ids.size == 0:
        return np.empty(0, dtype=np.int64)
    edges = np.flatnonzero(np.diff(ids)) + 1
    return np.diff(np.r_[0, edges, ids.size])


def lightgbm_params(ctx: Context, **extra) -> dict:
    """The LightGBM parameters of the study's lambdarank learners."""
    return {"objective": "lambdarank", "learning_rate": LEARNING_RATE, "num_leaves": 31,
            "min_data_in_leaf": 50, "max_bin": MAX_BIN, "num_threads": THREADS,
            "seed": ctx.seed,
            "deterministic": True, "force_row_wise": True, "verbose": -1, **extra}


def _lgb_train(params: dict, X, y, group, *, weight=None, position=None,
               rounds: int = ROUNDS, reference=None) -> Scorer:
    import lightgbm as lgb
    if len(group) == 0:
        raise UlrError(NO_PAIRS)
    ds = lgb.Dataset(X, label=y, group=group, weight=weight, position=position,
                     params={"max_bin": MAX_BIN, "verbose": -1}, free_raw_data=True,
                     reference=reference)
    return _booster_scorer(lgb.train(params, ds, num_boost_round=rounds))


def _booster_scorer(booster) -> Scorer:
    return lambda Xt: booster.predict(Xt, num_threads=THREADS).astype(np.float64)


#: the learners that train on the same rows of a run (its sessions with pairs, in shown
#: order): when a study fits both, the rows are sorted into LightGBM's bins once per run
SESSION_ROW_LEARNERS = ("lightgbm", "lightgbm-position")


def _session_rows(ctx: Context, rows: np.ndarray):
    """LightGBM's binned copy of this run's click rows, built once per run when both
    :data:`SESSION_ROW_LEARNERS` are fitted (``shared["lightgbm_rows"]`` says so), else None.

    Each learner then takes its own :meth:`lightgbm.Dataset.subset` of every row (in
    order) and sets its labels, groups and positions on it: the same binned rows as a
    Dataset built from the feature rows (the same bin boundaries, ``ctx.lightgbm_bins``),
    so the same boosters, byte for byte (``tests/study``), while sorting a million rows
    of 136 features into their bins, a sixth of a fit, is done once instead of twice."""
    import lightgbm as lgb
    shared = ctx.shared
    if shared is None or not shared.get("lightgbm_rows"):
        return None
    key = ("lightgbm_rows", ctx.seed)
    with _SHARED:
        lock = shared.setdefault(("lock",) + key, threading.Lock())
    with lock:
        ds = shared.get(key)
        if ds is None:
            ds = lgb.Dataset(ctx.train.X[ctx.log.doc[rows]],
                             params={"max_bin": MAX_BIN, "verbose": -1}, free_raw_data=True,
                             reference=ctx.lightgbm_bins()).construct()
            shared[key] = ds
    return ds


def _lightgbm(kind: str) -> Callable[[Context], Scorer]:
    def fit(ctx: Context) -> Scorer:
        log, X = ctx.log, ctx.train.X
        rows = _sessions_with_pairs(log)
        rounds = int(ctx.option("rounds", ROUNDS))
        if rows.size == 0:
            raise UlrError(NO_PAIRS)
        ref = ctx.lightgbm_bins()
        if kind == "ipw":
            rows, group, weight = _ipw_groups(log, rows, ctx.theta)
            return _lgb_train(lightgbm_params(ctx), X[log.doc[rows]],
                              log.click[rows].astype(np.float32), group, weight=weight,
                              rounds=rounds, reference=ref)
        group = _group_sizes(log.session[rows])
        label = log.click[rows].astype(np.float32)
        position = (log.position[rows] - 1).astype(np.int32) if kind == "position" else None
        params = (lightgbm_params(ctx, lambdarank_position_bias_regularization=float(
            ctx.option("position_regularization", 0.0))) if kind == "position"
            else lightgbm_params(ctx))
        binned = _session_rows(ctx, rows)
        if binned is None:
            return _lgb_train(params, X[log.doc[rows]], label, group, position=position,
                              rounds=rounds, reference=ref)
        import lightgbm as lgb
        ds = binned.subset(np.arange(rows.size, dtype=np.int32)).construct()
        ds.set_label(label)
        ds.set_group(group)
        if position is not None:
            ds.set_position(position)
        return _booster_scorer(lgb.train(params, ds, num_boost_round=rounds))
    return fit


def _ipw_groups(log: ClickLog, rows: np.ndarray, theta) -> tuple:
    """One group per click: the clicked row and its session's non-clicked rows, every row
    weighted ``1 / theta_k`` of the click's position."""
    s, c = log.session[rows], log.click[rows]
    clicked = rows[c]
    nonclick = rows[~c]
    # non-clicked rows of every session, contiguous (rows are in session order)
    ns = log.session[nonclick]
    n_s = int(log.session.max()) + 1
    cnt = np.bincount(ns, minlength=n_s)
    start = np.r_[0, np.cumsum(cnt)[:-1]]
    cs = log.session[clicked]
    m = cnt[cs]
    out = np.empty(int(clicked.size + m.sum()), dtype=np.int64)
    group = m + 1
    offsets = np.r_[0, np.cumsum(group)[:-1]]
    out[offsets] = clicked
    within = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
    fill = np.ones(out.size, dtype=bool)
    fill[offsets] = False
    out[fill] = nonclick[np.repeat(start[cs], m) + within]
    w = np.repeat(ipw_weights(log.position[clicked], theta), group).astype(np.float32)
    del s
    return out, group, w


def xgboost_params(ctx: Context, **extra) -> dict:
    """The XGBoost parameters of the study's LambdaMART learners."""
    return {"objective": "rank:ndcg", "eta": LEARNING_RATE, "max_depth": 6,
            "min_child_weight": 1, "tree_method": "hist", "max_bin": MAX_BIN,
            "nthread": THREADS, "seed": ctx.seed,
            "lambdarank_pair_method": "topk", **extra}


def _xgboost(unbiased: bool) -> Callable[[Context], Scorer]:
    def fit(ctx: Context) -> Scorer:
        import xgboost as xgb
        log, X = ctx.log, ctx.train.X
        rows = _sessions_with_pairs(log)  # sorted by session, then position
        if rows.size == 0:
            raise UlrError(NO_PAIRS)
        params = xgboost_params(ctx, **({"lambdarank_unbiased": True} if unbiased else {}))
        d = xgb.QuantileDMatrix(X[log.doc[rows]], label=log.click[rows].astype(np.float32),
                                qid=log.session[rows], max_bin=MAX_BIN, nthread=THREADS,
                                ref=ctx.xgboost_bins())
        booster = xgb.train(params, d, num_boost_round=int(ctx.option("rounds", ROUNDS)))
        return lambda Xt: booster.predict(xgb.DMatrix(Xt, nthread=THREADS)).astype(np.float64)
    return fit


# --------------------------------------------------------------------------- references


def _oracle(ctx: Context) -> Scorer:
    t = ctx.train
    y = np.clip(np.rint(t.relevance), 0, 30).astype(np.float32)
    return _lgb_train(lightgbm_params(ctx), t.X, y, t.counts,
                      rounds=int(ctx.option("rounds", ROUNDS)))


def _production(ctx: Context) -> Scorer:
    return ctx.production.score


LEARNERS = {
    spec.name: spec for spec in (
        Learner("naive-linear", "naive linear",
                "ulr's linear pairwise ranker on clicks, every click weighing 1",
                _linear(False), cost=2),
        Learner("ipw-linear", "IPW linear",
                "ulr's linear pairwise ranker, every click weighing 1/θ of its position",
                _linear(True), uses_theta=True, cost=2),
        Learner("naive-gbdt", "naive GBDT",
                "ulr's boosted click model (scikit-learn), clicks weighing 1", _gbdt(False),
                predicts_clicks=True),
        Learner("ipw-gbdt", "IPW GBDT",
                "ulr's boosted click model, clicks weighing 1/θ of their position",
                _gbdt(True), uses_theta=True, predicts_clicks=True),
        Learner("lightgbm", "LightGBM", "LightGBM lambdarank on clicks, one group per session",
                _lightgbm("plain"), cost=4),
        Learner("lightgbm-ipw", "LightGBM IPW",
                "LightGBM lambdarank with every click's pairs weighing 1/θ of its position",
                _lightgbm("ipw"), uses_theta=True, cost=4),
        Learner("lightgbm-position", "LightGBM position",
                "LightGBM lambdarank with its own position-bias correction (position field)",
                _lightgbm("position"), cost=4),
        Learner("xgboost", "XGBoost", "XGBoost LambdaMART on clicks", _xgboost(False),
                cost=4),
        Learner("xgboost-unbiased", "XGBoost unbiased",
                "XGBoost LambdaMART with lambdarank_unbiased (Unbiased LambdaMART)",
                _xgboost(True), cost=4),
        Learner("oracle", "oracle", "LightGBM lambdarank on the true grades (the skyline)",
                _oracle, reference=True, per_run=False),
        Learner("production", "production",
                "the production ranker that showed the lists (the floor)", _production,
                reference=True, cost=0),
    )
}
DEFAULT_LEARNERS = ("naive-linear", "ipw-linear", "lightgbm", "lightgbm-position",
                    "xgboost-unbiased", "oracle")
BASELINE = "naive-linear"


def parse_learners(spec) -> list[str]:
    """Learner names from ``"a,b,c"`` (or a list): known, unique, in the given order."""
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)
             if str(s).strip()]
    if not names:
        raise UlrError("Name at least one learner.")
    unknown = [n for n in names if n not in LEARNERS]
    if unknown:
        raise UlrError(f"unknown learner {unknown[0]!r}; choose from {', '.join(LEARNERS)}.")
    return list(dict.fromkeys(names))
