"""Clicks on a labelled set: the production ranker and the user models (Joachims et al. 2017).

1. A *production ranker* is trained on a small labelled share of the training queries
   (default 1%, as in Joachims et al.): ridge regression of the grades on the
   standardized features (:func:`production_ranker`).
2. A *session* draws a training query uniformly, adds Gaussian noise to the production
   scores of its documents (``noise`` times the scores' standard deviation, fresh per
   session, so a document is seen at several positions: EM is identified) and shows the
   top ``positions``. A ``randomized`` share of sessions shows a uniformly random
   selection in random order (so randomization-based estimators are identified).
3. The user clicks on the true grades ``y`` with attractiveness
   ``gamma(y) = eps + (1 - eps) (2^y - 1) / (2^ymax - 1)`` (:func:`ulr.simulate.attractiveness`;
   ``eps`` is the click noise on irrelevant results) under one user model:

   - ``pbm``: ``P(click at k) = theta_k gamma(y)``, ``theta_k = (1/k)^eta``;
   - ``cascade``: examine top-down, click the first attractive result, stop;
   - ``dbn``: examine top-down; a click satisfies with probability ``gamma(y)``; an
     unsatisfied user goes on with probability ``continuation`` (Chapelle & Zhang 2009);
   - ``ubm``: examination ``(1/(k - k'))^eta`` after a last click at ``k'``, ``(1/k)^eta``
     before any click (Dupret & Piwowarski 2008);
   - ``trust``: ``P(click) = theta_k (gamma(y) eps+_k + (1 - gamma(y)) eps-_k)`` with
     ``eps+_k = 1`` and ``eps-_k = 0.65 / k`` (Agarwal et al. 2019; Vardasbi et al. 2020).

``theta_true`` is the average probability of examining each position over the simulated
sessions (for the PBM and trust bias exactly ``(1/k)^eta``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr.clickmodels import records
from ulr.errors import UlrError
from ulr.simulate import attractiveness
from ulr.study.labels import LabelledSet

#: the user models: the click models whose record has a ``study`` hook
CLICK_MODELS = records.flagged("study")
PRODUCTION_SHARE = 0.01
LIST_SIZE = 10
NOISE = 0.5
RANDOMIZED = 0.1
EPS = 0.05
CONTINUATION = 0.9
#: cells of the (sessions x documents) score matrix built at once
_CHUNK_CELLS = 8_000_000


@dataclass(frozen=True)
class ProductionRanker:
    """A linear scorer ``s(x) = ((x - mean) / scale) . coef`` (ridge on grades)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    n_queries: int

    def score(self, X: np.ndarray) -> np.ndarray:
        w = (self.coef / self.scale).astype(np.float32)
        return (X @ w - np.float32(self.mean @ (self.coef / self.scale))).astype(np.float64)


def production_ranker(train: LabelledSet, *, share: float = PRODUCTION_SHARE, alpha: float = 1.0,
                      seed: int = 0, feature: str | None = None) -> ProductionRanker:
    """Ridge regression of the grades on the standardized features of a seeded ``share`` of
    the training queries (at least one query); or, with ``feature``, the analyst's own
    score column (a ``feature_*`` of the set: higher ranks first)."""
    if feature is not None:
        if feature not in train.features:
            raise UlrError(f"the production score column {feature!r} is not a feature of the "
                           f"labelled set ({_some(train.features)}).")
        p = train.n_features
        coef = np.zeros(p)
        coef[train.features.index(feature)] = 1.0
        return ProductionRanker(mean=np.zeros(p), scale=np.ones(p), coef=coef, n_queries=0)
    if not 0.0 < float(share) <= 1.0:
        raise UlrError(f"the production share must be in (0, 1], got {share}.")
    n = max(1, int(round(float(share) * train.n_queries)))
    queries = np.random.default_rng(seed).choice(train.n_queries, size=n, replace=False)
    sub = train.subset(queries)
    X = sub.X.astype(np.float64)
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    scale = np.where(sd > 0, sd, 1.0)
    Xs = (X - mean) / scale
    y = sub.relevance.astype(np.float64) - sub.relevance.mean()
    A = Xs.T @ Xs + float(alpha) * np.eye(X.shape[1])
    coef = np.linalg.solve(A, Xs.T @ y)
    return ProductionRanker(mean=mean, scale=scale, coef=coef, n_queries=n)


def _some(names) -> str:
    names = list(names)
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


@dataclass(frozen=True)
class ClickLog:
    """Simulated impressions, one per (session, position), with index arrays into the
    training :class:`LabelledSet` (no feature copy).

    Attributes
    ----------
    doc : row of the document in the training set
    query : query number of the session
    session, position (1-based), click, randomized
    theta_true : average examination probability per position (absolute)
    model, eta : the user model and its severity
    """

    doc: np.ndarray
    query: np.ndarray
    session: np.ndarray
    position: np.ndarray
    click: np.ndarray
    randomized: np.ndarray
    theta_true: np.ndarray
    model: str
    eta: float

    def __len__(self) -> int:
        return int(self.doc.size)

    @property
    def n_sessions(self) -> int:
        return int(self.session.max()) + 1 if self.session.size else 0

    @property
    def n_clicks(self) -> int:
        return int(self.click.sum())

    def frame(self, data: LabelledSet, *, features: bool = False) -> pd.DataFrame:
        """The log in ulr's canonical click-log schema (docs/contract.md §1): ``query_id``
        (the file's), ``doc_id`` (the file's, else ``query_id:row``), ``position``,
        ``click``, ``session_id``, ``randomized``, ``relevance`` (the true grade) and, with
        ``features``, the ``feature_*`` columns."""
        qid = data.query_ids[self.query]
        if data.doc_ids is not None:
            doc = data.doc_ids[self.doc]
        else:
            local = self.doc - data.starts[self.query]
            doc = pd.Series(qid).astype(str).to_numpy().astype(object) + ":" + local.astype(str)
        out = {"query_id": qid, "doc_id": doc, "position": self.position.astype(np.int64),
               "click": self.click.astype(np.int8), "session_id": self.session,
               "randomized": self.randomized.astype(np.int8),
               "relevance": data.relevance[self.doc]}
        df = pd.DataFrame(out)
        if features:
            feats = pd.DataFrame(data.X[self.doc], columns=data.features)
            df = pd.concat([df, feats], axis=1)
        return df


@validate.retired(list_size="positions")
def simulate_clicks(train: LabelledSet, scores: np.ndarray, *, sessions: int,
                    model: str = "pbm", eta: float = 1.0, positions: int = LIST_SIZE,
                    noise: float = NOISE, randomized_fraction: float = RANDOMIZED,
                    eps: float = EPS, continuation: float = CONTINUATION,
                    seed: int = 0) -> ClickLog:
    """Simulate ``sessions`` result lists of the training queries and their clicks.

    ``scores`` are the production ranker's scores of the training rows. See the module
    docstring for the story; everything is vectorized over sessions (in chunks that
    bound the memory by about 100 MB whatever the number of documents per query).
    """
    if records.get(model).study is None:
        raise UlrError(f"the click model must be one of {', '.join(records.flagged('study'))}, "
                       f"not {model!r}.")
    if int(sessions) < 1:
        raise UlrError("sessions must be at least 1.")
    if not np.isfinite(eta) or eta < 0:
        raise UlrError("eta must be a finite number of 0 or more.")
    if int(positions) < 1:
        raise UlrError("the list size must be at least 1.")
    if not 0.0 <= randomized_fraction <= 1.0:
        raise UlrError("the randomized share must lie in [0, 1].")
    if not 0.0 <= eps <= 1.0:
        raise UlrError("the click noise must lie in [0, 1].")
    if noise < 0 or not np.isfinite(noise):
        raise UlrError("the ranking noise must be a finite number of 0 or more.")
    if not 0.0 <= continuation <= 1.0:
        raise UlrError("the continuation probability must lie in [0, 1].")
    S, Q = int(sessions), train.n_queries
    counts, starts = train.counts, train.starts
    dmax = int(counts.max())
    K = min(int(positions), dmax)
    # production scores padded per query: (Q, dmax), -inf beyond a query's documents
    col = np.arange(train.n_documents) - starts[train.qid]
    padded = np.full((Q, dmax), -np.inf, dtype=np.float32)
    padded[train.qid, col] = scores
    sd = float(np.std(scores)) or 1.0
    y_max = max(float(train.relevance.max()), 1.0)
    gamma = attractiveness(train.relevance, eps=eps, y_max=y_max)
    rng = np.random.default_rng(seed)
    q_of_s = rng.integers(0, Q, size=S)
    randomized = rng.random(S) < randomized_fraction
    shown = np.empty((S, K), dtype=np.int64)
    chunk = max(1, _CHUNK_CELLS // dmax)
    for lo in range(0, S, chunk):
        hi = min(S, lo + chunk)
        q = q_of_s[lo:hi]
        s = padded[q]
        s += np.float32(noise * sd) * rng.standard_normal(s.shape, dtype=np.float32)
        r = randomized[lo:hi]
        if r.any():
            valid = np.isfinite(s[r])
            s[r] = np.where(valid, rng.random(valid.shape, dtype=np.float32), -np.inf)
        top = np.argpartition(-s, K - 1, axis=1)[:, :K] if K < dmax else \
            np.broadcast_to(np.arange(dmax), (hi - lo, dmax)).copy()
        order = np.argsort(-np.take_along_axis(s, top, axis=1), axis=1, kind="stable")
        shown[lo:hi] = np.take_along_axis(top, order, axis=1)
    n_shown = np.minimum(counts[q_of_s], K)
    mask = np.arange(K)[None, :] < n_shown[:, None]
    doc = starts[q_of_s][:, None] + np.where(mask, shown, 0)
    g = np.where(mask, gamma[doc], 0.0)
    click, exam = _user_clicks(model, g, mask, eta=float(eta), continuation=continuation,
                               rng=rng)
    with np.errstate(invalid="ignore"):
        theta = exam.sum(axis=0) / mask.sum(axis=0)
    pos = np.broadcast_to(np.arange(1, K + 1), (S, K))
    sess = np.broadcast_to(np.arange(S)[:, None], (S, K))
    return ClickLog(doc=doc[mask], query=np.broadcast_to(q_of_s[:, None], (S, K))[mask],
                    session=sess[mask].astype(np.int64), position=pos[mask].astype(np.int16),
                    click=click[mask], randomized=np.broadcast_to(
                        randomized[:, None], (S, K))[mask],
                    theta_true=theta, model=model, eta=float(eta))


def _user_clicks(model: str, g: np.ndarray, mask: np.ndarray, *, eta: float,
                 continuation: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Clicks (S, K) and the probability that each shown slot was examined, given what
    happened above it (its mean over sessions is theta)."""
    S, K = g.shape
    u = rng.random((S, K))
    return records.get(model).study(g, mask, u, rng, eta=eta, continuation=continuation)
