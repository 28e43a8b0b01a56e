"""Synthetic click logs with known ground truth.

The generative story (one *session* = one result list shown for one query):

1. Each query has ``positions`` documents with feature vectors
   ``x ~ N(0, I_P)``. Graded relevance ``y in {0..4}`` is a linear model of
   the features plus noise, cut at fixed quantiles (most documents are not
   relevant, few are perfect).
2. A *production ranker* scores documents with a weight vector that differs
   from the true one (its errors live in feature space, so naive learning from
   its clicks imitates it) plus fresh Gaussian noise per session, so a
   (query, doc) pair is seen at several positions.
3. A fraction of sessions is shown in uniformly random order (``randomized=1``).
4. Clicks follow the position-based model (PBM),
   ``P(click) = theta_k * gamma(y)``, or the cascade model (scan top-down,
   click the first attractive document, stop), or trust bias (``model="trust"``: a
   document is relevant when its grade is above 0, and ``P(click) = theta_k (eps+_k R +
   eps-_k (1 - R))`` with :func:`trust_truth`'s ``eps``). Attractiveness is
   ``gamma(y) = eps + (1 - eps) (2^y - 1) / (2^ymax - 1)`` and examination is
   ``theta_k = (1/k)^eta`` unless a vector is given.

Everything is vectorized over sessions (``benchmarks/bench_data.py`` times 1M rows).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ulr.clickmodels import records
from ulr.clickmodels.simulators import RELEVANT_ABOVE, trust_truth  # noqa: F401  (their home)
from ulr import validate
from ulr.errors import UlrError
from ulr import validate

Y_MAX = 4
# Quantiles of the latent relevance score at which grades 1..4 start.
_GRADE_QUANTILES = np.array([0.55, 0.78, 0.90, 0.97])


def power_law_theta(n_positions: int, eta: float) -> np.ndarray:
    """Examination probabilities ``theta_k = (1/k)^eta`` for k = 1..n."""
    k = np.arange(1, n_positions + 1, dtype=float)
    return (1.0 / k) ** float(eta)


def attractiveness(y: np.ndarray, *, eps: float, y_max: int = Y_MAX) -> np.ndarray:
    """Click probability of an examined document of grade ``y``.

    ``gamma(y) = eps + (1 - eps) * (2^y - 1) / (2^y_max - 1)``.
    """
    y = np.asarray(y, dtype=float)
    return eps + (1.0 - eps) * (np.exp2(y) - 1.0) / (2.0 ** y_max - 1.0)


@dataclass(frozen=True)
class SimulationConfig:
    """Parameters of :func:`simulate_clicks`; validates itself."""

    model: str = "pbm"
    queries: int = 1000
    positions: int = 10
    sessions: int = 10000
    eta: float = 1.0
    theta: tuple[float, ...] | None = None
    randomized_fraction: float = 0.1
    features: int = 5
    eps: float = 0.05
    ranker_noise: float = 0.5
    ranker_error: float = 0.8
    seed: int = 0

    def __post_init__(self):
        if records.get(self.model).graded is None:  # the records with this simulator's hook
            raise UlrError(f"model must be {records.quoted(records.flagged('graded'))}, "
                           f"not {self.model!r}.")
        for name in ("queries", "positions", "sessions"):
            if int(getattr(self, name)) < 1:
                raise UlrError(f"{name} must be at least 1.")
        if self.features < 0:
            raise UlrError("features must be 0 or more.")
        if not 0.0 <= self.randomized_fraction <= 1.0:
            raise UlrError("randomized fraction must lie in [0, 1].")
        if not 0.0 <= self.eps <= 1.0:
            raise UlrError("eps must lie in [0, 1].")
        if self.eta < 0 or not np.isfinite(self.eta):
            raise UlrError("eta must be a finite number >= 0.")
        if self.theta is not None:
            t = np.asarray(self.theta, dtype=float)
            if t.ndim != 1 or len(t) < self.positions:
                raise UlrError(
                    f"theta needs one value per position ({self.positions}), got {len(t)}.")
            if np.any(~np.isfinite(t)) or np.any(t <= 0) or np.any(t > 1):
                raise UlrError("theta values must lie in (0, 1].")

    def examination(self) -> np.ndarray:
        if self.theta is not None:
            return np.asarray(self.theta, dtype=float)[: self.positions]
        return power_law_theta(self.positions, self.eta)


@dataclass
class SimulatedLog:
    """A simulated click log and its ground truth.

    Attributes
    ----------
    df : DataFrame in the canonical click-log schema (docs/contract.md §1) plus
        ``true_theta`` (the true examination probability of the row's position).
    theta : true absolute examination probability per position. For the
        cascade model it is the average probability that position k is examined.
    relevance_weights, ranker_weights : the true and the production ranker's
        linear weights in feature space.
    config : the :class:`SimulationConfig` used.
    """

    df: pd.DataFrame
    theta: np.ndarray
    relevance_weights: np.ndarray
    ranker_weights: np.ndarray
    config: SimulationConfig
    extra: dict = field(default_factory=dict)

    @property
    def relative_theta(self) -> np.ndarray:
        return self.theta / self.theta[0]


@validate.retired(docs_per_query="positions")
@validate.params(seed=validate.seed)
def simulate_clicks(*, model: str = "pbm", queries: int = 1000, positions: int = 10,
                    sessions: int = 10000, eta: float = 1.0, theta=None,
                    randomized_fraction: float = 0.1, features: int = 5, eps: float = 0.05,
                    ranker_noise: float = 0.5, ranker_error: float = 0.8,
                    seed: int = 0) -> SimulatedLog:
    """Simulate a click log with known examination and relevance.

    Parameters
    ----------
    model : {"pbm", "cascade"}
        Click model.
    queries, positions, sessions : int
        Number of queries, documents shown per list (= positions) and lists
        shown. The log has ``sessions * positions`` rows.
    eta : float
        Severity of position bias, ``theta_k = (1/k)^eta``; ignored when
        ``theta`` is given.
    theta : sequence of float, optional
        Examination probability per position (absolute, in (0, 1]).
    randomized_fraction : float
        Share of sessions shown in uniformly random order.
    features : int
        Number of ``feature_*`` columns. With 0, relevance is a per-document
        random effect and the production ranker is noisy relevance.
    eps : float
        Click noise: an examined irrelevant document is clicked with prob. eps.
    ranker_noise : float
        Standard deviation of the per-session noise added to ranker scores,
        relative to the spread of its scores.
    ranker_error : float
        Size of the production ranker's weight error relative to the true
        weights (0 = it ranks by the true linear score).
    seed : int
        Seed of the random generator; the same seed gives the same log.
    """
    cfg = SimulationConfig(model=model, queries=int(queries), positions=int(positions),
                           sessions=int(sessions), eta=float(eta),
                           theta=None if theta is None else tuple(float(t) for t in theta),
                           randomized_fraction=float(randomized_fraction), features=int(features),
                           eps=float(eps), ranker_noise=float(ranker_noise),
                           ranker_error=float(ranker_error), seed=int(seed))
    rng = np.random.default_rng(cfg.seed)
    X, w_true, w_prod, latent, prod_score = _documents(cfg, rng)
    cuts = np.quantile(latent, _GRADE_QUANTILES)
    grade = np.searchsorted(cuts, latent, side="right").astype(np.int64)  # 0..4
    gamma = attractiveness(grade, eps=cfg.eps)
    q_of_s, randomized, order = _sessions(cfg, rng, prod_score)
    if records.get(cfg.model).binary_relevance:  # any grade above 0
        g_shown = np.take_along_axis((grade >= 1).astype(float)[q_of_s], order, axis=1)
    else:
        g_shown = np.take_along_axis(gamma[q_of_s], order, axis=1)
    clicks, exam_true, theta_out = _clicks(cfg, rng, g_shown)
    df = _log_frame(cfg, X, grade, q_of_s, randomized, order, clicks, exam_true)
    return SimulatedLog(df=df, theta=theta_out, relevance_weights=w_true,
                        ranker_weights=w_prod, config=cfg,
                        extra={"gamma": gamma, "grade": grade})


def _documents(cfg: SimulationConfig, rng):
    """Features ``X`` (Q, D, P), true and production weights, latent relevance and
    production scores (Q, D) of every query's documents."""
    Q, D, P = cfg.queries, cfg.positions, cfg.features
    if P == 0:  # relevance is a per-document random effect; the ranker sees it noisily
        latent = rng.standard_normal((Q, D))
        prod_score = latent + cfg.ranker_error * rng.standard_normal((Q, D))
        return np.empty((Q, D, 0)), np.empty(0), np.empty(0), latent, prod_score
    X = rng.standard_normal((Q, D, P))
    w_true = rng.standard_normal(P)
    w_true /= np.linalg.norm(w_true)
    latent = X @ w_true + 0.4 * rng.standard_normal((Q, D))
    err = rng.standard_normal(P)
    err -= (err @ w_true) * w_true  # error orthogonal to the truth
    err /= max(np.linalg.norm(err), 1e-12)
    w_prod = w_true + cfg.ranker_error * err
    return X, w_true, w_prod, latent, X @ w_prod


def _sessions(cfg: SimulationConfig, rng, prod_score):
    """Each session's query, whether it was randomized, and ``order[s, k]`` = the
    document shown at position k+1."""
    S, D = cfg.sessions, cfg.positions
    q_of_s = rng.integers(0, cfg.queries, size=S)
    score_sd = float(prod_score.std()) or 1.0
    scores = prod_score[q_of_s] + cfg.ranker_noise * score_sd * rng.standard_normal((S, D))
    randomized = rng.random(S) < cfg.randomized_fraction
    scores[randomized] = rng.random((int(randomized.sum()), D))
    return q_of_s, randomized, np.argsort(-scores, axis=1, kind="stable")


def _clicks(cfg: SimulationConfig, rng, g_shown):
    """Clicks (S, D), the true examination probability of every shown slot and the
    per-position theta (for the cascade model, the average probability that the
    position is examined)."""
    return records.get(cfg.model).graded(cfg, rng, g_shown)  # its record's hook


def _log_frame(cfg: SimulationConfig, X, grade, q_of_s, randomized, order, clicks,
               exam_true) -> pd.DataFrame:
    """One row per (session, position) in the canonical schema plus ``true_theta``."""
    S, D, P = cfg.sessions, cfg.positions, cfg.features
    pos = np.broadcast_to(np.arange(1, D + 1), (S, D))
    q_rows = np.repeat(q_of_s, D)
    doc_local = order.ravel()
    data = {
        "query_id": q_rows,
        "doc_id": q_rows * D + doc_local,
        "position": pos.ravel().astype(np.int64),
        "click": clicks.ravel().astype(np.int8),
        "session_id": np.repeat(np.arange(S), D),
        "randomized": np.repeat(randomized, D).astype(np.int8),
        "relevance": grade[q_rows, doc_local],
    }
    if P > 0:
        feats = X[q_rows, doc_local].round(4)
        for j in range(P):
            data[f"feature_{j + 1}"] = feats[:, j]
    data["true_theta"] = np.asarray(exam_true, dtype=float).ravel()
    return pd.DataFrame(data)


def write_log(df: pd.DataFrame, path: str) -> None:
    """Write a log as CSV or Parquet (by file extension) without SQL."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    try:
        if str(path).lower().endswith((".parquet", ".pq")):
            pq.write_table(table, path)
        else:
            pacsv.write_csv(table, path)
    except OSError as exc:
        raise UlrError(f"cannot write {path}: {exc.strerror or exc}.") from None


# --------------------------------------------------------------------------- a foreign log

OBD_LIKE_SEED = 20261123


@validate.retired(slots="positions")
def obd_like_log(*, impressions: int = 3334, items: int = 80, positions: int = 3,
                 theta=(1.0, 0.65, 0.45), base_ctr: float = 0.004,
                 seed: int = OBD_LIKE_SEED, row_timestamps: bool = False) -> pd.DataFrame:
    """A click log in a foreign format, shaped like the Open Bandit Dataset's random campaign.

    One impression shows ``positions`` distinct items (its slots) drawn uniformly at random
    from ``items``; its rows share one ``timestamp`` (there is no query or
    session column). Columns: ``timestamp, item_id, position, click,
    propensity_score`` (the per-slot logging probability ``1 / items``),
    ``user_feature_0..3`` (hashed categorical strings, not numbers) and
    ``user-item_affinity_0..items-1`` (sparse numbers). Clicks follow the
    position-based model ``P(click) = theta_k * a(user, item)`` with an
    attraction around ``base_ctr`` raised by the user's affinity to the item,
    so the overall CTR is under 1%. With ``row_timestamps`` each slot gets its
    own timestamp (a second apart), as in logs where the slots of one
    impression do not share one: mapping ``session_id`` to it is then wrong.
    """
    slots = positions
    if slots > items or len(theta) != slots:
        raise UlrError("obd_like_log needs slots <= items and one theta per slot.")
    rng = np.random.default_rng(seed)
    n = int(impressions)
    cards = (3, 4, 5, 3)
    ufeat = [rng.integers(0, c, size=n) for c in cards]
    hashes = [[hashlib.md5(f"{seed}:{j}:{v}".encode()).hexdigest()[:12] for v in range(c)]
              for j, c in enumerate(cards)]
    # Affinity depends on the user's first two features (a profile), sparse.
    profile = ufeat[0] * cards[1] + ufeat[1]
    prof_aff = np.where(rng.random((cards[0] * cards[1], items)) < 0.15,
                        np.round(rng.exponential(1.0, (cards[0] * cards[1], items)), 2), 0.0)
    affinity = prof_aff[profile]  # (n, items)
    shown = np.argsort(rng.random((n, items)), axis=1)[:, :slots]  # uniform random order
    aff_shown = np.take_along_axis(affinity, shown, axis=1)
    attract = np.clip(base_ctr * (1.0 + 2.0 * aff_shown), 0, 1)
    p_click = attract * np.asarray(theta, dtype=float)[None, :]
    click = rng.random((n, slots)) < p_click
    t0 = np.datetime64("2019-11-24T00:00:00")
    ts = t0 + np.cumsum(rng.integers(1, 30, size=n)).astype("timedelta64[s]")
    rows = np.repeat(np.arange(n), slots)
    stamp = ts[rows]
    if row_timestamps:
        stamp = stamp + np.tile(np.arange(slots), n).astype("timedelta64[s]")
    df = pd.DataFrame({
        "timestamp": pd.Series(stamp).dt.strftime("%Y-%m-%d %H:%M:%S").to_numpy(),
        "item_id": shown.ravel(),
        "position": np.tile(np.arange(1, slots + 1), n),
        "click": click.ravel().astype(int),
        "propensity_score": np.full(n * slots, 1.0 / items),
    })
    for j in range(len(cards)):
        df[f"user_feature_{j}"] = np.asarray(hashes[j])[ufeat[j]][rows]
    aff = pd.DataFrame(affinity[rows], columns=[f"user-item_affinity_{i}" for i in range(items)])
    return pd.concat([df, aff], axis=1)


def write_obd_like_log(path: str, **kwargs) -> pd.DataFrame:
    """Write :func:`obd_like_log` as CSV (compact number format) and return it."""
    df = obd_like_log(**kwargs)
    df.to_csv(path, index=False, float_format="%.6g")
    return df


# --------------------------------------------------------------------------- click models

#: the models :func:`simulate_clicks` offers: those whose record has a ``graded`` hook
GRADED_MODELS = records.flagged("graded")
#: the models :func:`simulate_click_model` offers: those whose record has a ``world`` hook
CLICK_MODELS = records.flagged("world")


@validate.retired(docs_per_query="positions")
@validate.params(seed=validate.seed)
def simulate_click_model(model: str, *, sessions: int = 10000, queries: int = 100,
                         positions: int = 10, seed: int = 0,
                         orders: int = 0, session_seed: int | None = None,
                         query_weights=None, randomized: float = 0.0, theta=None,
                         eps_plus=None, eps_minus=None) -> SimulatedLog:
    """A log generated by one click model of :mod:`ulr.clickmodels`, with its true parameters.

    Each session shows the ``positions`` documents of a random query in a
    uniformly random order (so every document is seen at every rank); with
    ``orders = m > 0``, in one of m random orders fixed per query (a ranker that
    shows few lists, as production rankers do: sessions then repeat).
    Per document: attractiveness ``alpha ~ Beta(1, 2)`` and satisfaction
    ``sigma ~ Uniform(0.2, 0.8)``. Per model: PBM ``theta_r = 1 / r^0.8``; UBM
    ``gamma_{r, r'} = 1 / (r - r')^0.6`` times 0.9 without a click above
    (``r' = 0``: ``0.9 / r^0.6``); DCM ``lambda_r = 0.7 - 0.03 r``; DBN
    ``gamma = 0.85``; SDBN ``gamma = 1``; cascade stops at the first click. Trust bias
    (Agarwal et al. 2019): a document is relevant (``R = 1``) when its ``alpha`` exceeds
    ``RELEVANT_ABOVE``, and ``P(click) = theta_k (eps+_k R + eps-_k (1 - R))``
    (:func:`trust_truth`; ``theta``, ``eps_plus``, ``eps_minus`` per position override it).
    ``randomized``: with ``orders``, this share of sessions is shown in a uniformly random
    order instead (as a randomized bucket of traffic).

    ``extra["truth"]`` holds ``alpha`` and ``sigma`` per document (index
    ``doc_id``), and ``theta``, ``gamma`` or ``lam`` as the model has them.
    ``session_seed``: the sessions are drawn from this seed and the parameters (and the
    fixed orders) from ``seed`` alone, so logs written in chunks share one truth.
    ``query_weights``: each session's query is drawn with these (relative) weights, e.g.
    Zipf-like ones for a long tail of rarely shown pairs; default uniform.
    ``theta`` of the result is the average probability of examining each rank.
    """
    rec = records.get(model)
    if rec.world is None:
        offered = records.flagged("world")
        raise UlrError(f"model must be one of {', '.join(offered)}, not {model!r}.")
    S, D, Q = int(sessions), int(positions), int(queries)
    if min(S, D, Q) < 1:
        raise UlrError("sessions, queries and positions must be at least 1.")
    if int(orders) < 0:
        raise UlrError(f"orders must be 0 (a random order per session) or more, not {orders}.")
    if not 0.0 <= float(randomized) <= 1.0:
        raise UlrError(f"the randomized share must lie in [0, 1], got {randomized}.")
    if not rec.per_rank_truth and not (theta is None and eps_plus is None
                                       and eps_minus is None):
        raise UlrError("theta, eps plus and eps minus per position go with the trust model.")
    tt = trust_truth(D, theta=theta, eps_plus=eps_plus, eps_minus=eps_minus) \
        if rec.per_rank_truth else None
    rng = np.random.default_rng(seed)
    alpha = rng.beta(1.0, 2.0, size=Q * D)
    sigma = rng.uniform(0.2, 0.8, size=Q * D)
    if session_seed is not None:  # the orders with the parameters; sessions from their own
        lists = np.argsort(rng.random((Q, max(int(orders), 1), D)), axis=2)
        rng = np.random.default_rng([int(seed), int(session_seed)])
    if query_weights is not None:
        p = np.asarray(query_weights, dtype=float)
        q = rng.choice(Q, size=S, p=p / p.sum())
    else:
        q = rng.integers(0, Q, size=S)
    if orders:
        if session_seed is None:
            lists = np.argsort(rng.random((Q, int(orders), D)), axis=2)
        doc = q[:, None] * D + lists[q, rng.integers(0, int(orders), size=S)]
        if randomized > 0:  # a randomized bucket: these sessions get a random order
            rand = rng.random(S) < float(randomized)
            doc[rand] = q[rand, None] * D + np.argsort(rng.random((int(rand.sum()), D)), axis=1)
    else:
        doc = q[:, None] * D + np.argsort(rng.random((S, D)), axis=1)
    a, s = alpha[doc], sigma[doc]
    u = rng.random((S, D, 3))  # attraction, satisfaction, continuation draws
    r = np.arange(1, D + 1, dtype=float)
    click, exam_p, truth = rec.world(SimpleNamespace(  # the model's hook, in its record
        S=S, D=D, r=r, u=u, a=a, s=s, alpha=alpha, sigma=sigma, doc=doc, trust=tt))
    df = pd.DataFrame({
        "query_id": np.repeat(q, D), "doc_id": doc.ravel(),
        "position": np.tile(np.arange(1, D + 1), S), "click": click.ravel().astype(np.int8),
        "session_id": np.repeat(np.arange(S), D)})
    df["true_theta"] = exam_p.mean(axis=0)[np.tile(np.arange(D), S)]
    cfg = SimulationConfig(model="pbm", queries=Q, positions=D, sessions=S, seed=int(seed))
    return SimulatedLog(df=df, theta=exam_p.mean(axis=0), relevance_weights=np.empty(0),
                        ranker_weights=np.empty(0), config=cfg,
                        extra={"model": model, "truth": truth})
