"""Cascading bandit environments (Kveton et al., ICML 2015).

An environment is a vector ``w`` of attraction probabilities, one per item, and
a list length ``k``. In the cascade model (Craswell et al., 2008) the user scans
a shown list ``A = (a_1, ..., a_K)`` from the top and clicks the first item that
attracts her; item ``e`` attracts her with probability ``w(e)``, independently.
The expected reward of a list is the probability of a click,

    f(A, w) = 1 - prod_{k=1}^{K} (1 - w(a_k)),

maximised by the ``K`` most attractive items ``A*``. The per-step (expected)
regret of a list is ``f(A*, w) - f(A, w)``.

Three environments:

- :func:`kveton_env` -- the class ``B_LB(L, K, p, delta)`` of Kveton et al.
  (2015), Section 5: ``K`` items with attraction ``p``, ``L - K`` with ``p - delta``.
- :func:`linear_env` -- items described by multi-hot tag vectors ``x_e`` in
  ``{0, 1}^d``; attraction is linear in the tags, ``w(e) = clip(x_e' theta*, 0, 1)``
  (the setting of CascadeLinTS, Zong et al., UAI 2016).
- :func:`data_env` -- attraction of the documents of a stored click log: the
  click-through rate of each document corrected for position bias,
  ``w_d = clicks_d / sum_{impressions of d} theta[position]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ulr import validate
from ulr.errors import NeedsRandomizedRows, UlrError
from ulr import validate

ENVIRONMENTS = ("kveton", "linear", "data")


def _check_int(name: str, value, *, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise UlrError(f"{name} must be a whole number, got {value!r}.")
    value = int(value)
    if value < low or (high is not None and value > high):
        upper = f" and at most {high}" if high is not None else ""
        raise UlrError(f"{name} must be at least {low}{upper}, got {value}.")
    return value


def _check_float(name: str, value, *, low: float, high: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise UlrError(f"{name} must be a number, got {value!r}.") from None
    if not (low <= value <= high):
        raise UlrError(f"{name} must be between {low} and {high}, got {value}.")
    return value


@dataclass(frozen=True, eq=False)
class CascadeEnv:
    """A cascading bandit problem: attraction probabilities and a list length.

    Parameters
    ----------
    name : str
        Environment id (``"kveton"``, ``"linear"``, ``"data"``).
    w : ndarray of shape (L,)
        Attraction probability of every item, in [0, 1].
    k : int
        Number of positions of the shown list, ``1 <= k <= L``.
    features : ndarray of shape (L, d), optional
        Item feature vectors for the linear algorithms.
    item_ids : ndarray of shape (L,), optional
        Names of the items (document ids of the ``data`` environment).
    params : dict
        Settings the environment was built with (for reports).
    """

    name: str
    w: np.ndarray
    k: int
    features: np.ndarray | None = None
    item_ids: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        w = np.array(self.w, dtype=np.float64)
        if w.ndim != 1 or w.size < 2:
            raise UlrError("A bandit environment needs at least 2 items.")
        if not np.all(np.isfinite(w)) or w.min() < 0 or w.max() > 1:
            raise UlrError("Attraction probabilities must lie in [0, 1].")
        k = _check_int("The list length k", self.k, low=1, high=w.size)
        w.setflags(write=False)
        object.__setattr__(self, "w", w)
        object.__setattr__(self, "k", k)
        if self.features is not None:
            x = np.array(self.features, dtype=np.float64)
            if x.ndim != 2 or x.shape[0] != w.size or x.shape[1] < 1:
                raise UlrError("Item features must have one row per item.")
            if not np.all(np.isfinite(x)):
                raise UlrError("Item features must be finite numbers.")
            x.setflags(write=False)
            object.__setattr__(self, "features", x)
        if self.item_ids is not None and len(self.item_ids) != w.size:
            raise UlrError("There must be one item id per item.")

    @property
    def n_items(self) -> int:
        """Number of items ``L``."""
        return int(self.w.size)

    @property
    def optimal(self) -> np.ndarray:
        """The optimal list ``A*``: the ``k`` most attractive items, best first."""
        return np.argsort(-self.w, kind="stable")[: self.k]

    @property
    def optimal_reward(self) -> float:
        """``f(A*, w)``, the click probability of the optimal list."""
        return float(1.0 - np.prod(1.0 - self.w[self.optimal]))

    def expected_reward(self, lists) -> np.ndarray:
        """``f(A, w) = 1 - prod_k (1 - w(a_k))`` of lists of shape (..., K)."""
        lists = np.asarray(lists)
        return 1.0 - np.prod(1.0 - self.w[lists], axis=-1)

    def regret(self, lists) -> np.ndarray:
        """Expected per-step regret ``f(A*, w) - f(A, w)``, never below 0."""
        return np.maximum(self.optimal_reward - self.expected_reward(lists), 0.0)

    def describe(self) -> dict:
        """JSON-able summary of the environment."""
        return {"env": self.name, "items": self.n_items, "k": self.k,
                "features": None if self.features is None else int(self.features.shape[1]),
                "optimal_reward": self.optimal_reward, **self.params}


@validate.retired(k="positions")
def kveton_env(*, items: int = 16, positions: int = 2, p: float = 0.2, delta: float = 0.15,
               seed: int = 0) -> CascadeEnv:
    """The Kveton et al. (2015) problem ``B_LB(L, K, p, delta)``.

    ``K`` items have attraction ``p`` and the other ``L - K`` have ``p - delta``.
    The attractive items sit at positions drawn with ``seed`` so that an
    algorithm's tie-breaking order cannot favour them.

    Parameters
    ----------
    items : int
        ``L``, number of items (> positions).
    positions : int
        ``K``, the list length.
    p : float
        Attraction of the optimal items, in (0, 1].
    delta : float
        Gap, ``0 < delta <= p``.
    seed : int
        Seed of the permutation of the items.
    """
    items = _check_int("The number of items", items, low=2)
    k = _check_int("The list length k", positions, low=1, high=items - 1)
    p = _check_float("p", p, low=0.0, high=1.0)
    delta = _check_float("delta", delta, low=0.0, high=p)
    if p <= 0 or delta <= 0:
        raise UlrError("The kveton environment needs p > 0 and 0 < delta <= p.")
    rng = np.random.default_rng(seed)
    w = np.full(items, p - delta)
    w[rng.permutation(items)[:k]] = p
    return CascadeEnv("kveton", w, k, params={"p": p, "delta": delta})


@validate.retired(k="positions", features="n_features")
def linear_env(*, items: int = 100, positions: int = 4, n_features: int = 10, p: float = 0.2,
               seed: int = 0) -> CascadeEnv:
    """Items with multi-hot tags whose attraction is linear in the tags.

    Each item carries each of ``d`` tags independently with probability
    ``q = min(0.5, 3 / d)`` (an item without tags gets one at random), so
    ``x_e`` is in ``{0, 1}^d``. The tag weights ``theta*`` are uniform on
    [0, 1], rescaled so that the average attraction is ``p``, and

        w(e) = clip(x_e' theta*, 0, 1).

    This is the linear generalization of cascading bandits of Zong et al.
    (UAI 2016), where CascadeLinUCB / CascadeLinTS learn ``theta*`` instead of
    one attraction per item. ``positions`` is the list length ``K``, ``n_features`` the
    number of tags ``d``.
    """
    items = _check_int("The number of items", items, low=2)
    k = _check_int("The list length k", positions, low=1, high=items - 1)
    d = _check_int("The number of features", n_features, low=1, high=1000)
    p = _check_float("p", p, low=0.0, high=1.0)
    if p <= 0:
        raise UlrError("The linear environment needs a mean attraction p > 0.")
    rng = np.random.default_rng(seed)
    q = min(0.5, 3.0 / d)
    x = rng.random((items, d)) < q
    empty = np.flatnonzero(~x.any(axis=1))
    x[empty, rng.integers(d, size=empty.size)] = True
    x = x.astype(np.float64)
    theta = rng.random(d)
    theta *= p / (x @ theta).mean()
    w = np.clip(x @ theta, 0.0, 1.0)
    return CascadeEnv("linear", w, k, features=x,
                      params={"p": p, "theta": theta.round(6).tolist()})


def randomized_theta(log) -> np.ndarray | None:
    """Relative position bias from the randomized rows of a log.

    When the order of a list is randomized, a document is equally likely to be
    shown at every position, so under the position-based model the click-through
    rate at position ``k`` is proportional to the examination probability:
    ``theta_k = CTR_k / CTR_1`` over the rows with ``randomized = 1``. Positions
    without randomized rows get NaN. Returns None when the log has no randomized
    rows or no click at position 1 among them.
    """
    if not log.info.has("randomized"):
        return None
    rows = log.cur.execute(
        f"SELECT position, avg(click::INT) FROM {log.table} "
        "WHERE randomized GROUP BY position ORDER BY position").fetchall()
    if not rows:
        return None
    pos = np.array([r[0] for r in rows], dtype=np.int64)
    ctr = np.array([r[1] for r in rows], dtype=np.float64)
    if pos[0] != 1 or ctr[0] <= 0:
        return None
    theta = np.full(int(pos.max()), np.nan)
    theta[pos - 1] = ctr / ctr[0]
    return theta


def doc_features(log, ids) -> np.ndarray | None:
    """Feature vector of each document: its average ``feature_*`` values, plus 1.

    Averaged in SQL over all rows of the document (features are query-document
    features; a document shown for several queries gets their mean). The last
    column is a constant 1 (intercept). None when the log has no features.
    """
    if not log.info.features:
        return None
    rows = log.cur.execute(
        f"SELECT doc_id::VARCHAR, avg(COLUMNS('^feature_')) FROM {log.table} GROUP BY ALL"
    ).fetchall()
    fid = np.array([r[0] for r in rows], dtype=object)
    fx = np.array([r[1:] for r in rows], dtype=np.float64)
    order = np.argsort(fid)
    pos = order[np.searchsorted(fid[order], np.asarray(ids, dtype=object))]
    x = np.nan_to_num(fx[pos])
    return np.hstack([x, np.ones((x.shape[0], 1))])


def _env_theta(log, theta, raw_ctr: bool) -> tuple[np.ndarray, str]:
    """The position bias of :func:`data_env` and where it came from (checked)."""
    theta_from = "given"
    if theta is None:
        theta = randomized_theta(log)
        theta_from = "randomized CTR ratios"
        if theta is None and not raw_ctr:
            raise NeedsRandomizedRows("The data environment needs position bias theta to turn clicks into "
                           "attraction, and this log has no randomized rows to estimate it "
                           "from; give theta by position, or declare the log randomized.")
        if theta is None:
            maxpos = log.cur.execute(f"SELECT max(position) FROM {log.table}").fetchone()[0]
            theta = np.ones(int(maxpos or 1))
            theta_from = "none: raw CTR, not corrected for position bias (asked for)"
    theta = np.asarray(theta, dtype=np.float64).ravel()
    if theta.size == 0:
        raise UlrError("The position-bias vector theta is empty.")
    if np.any(theta[np.isfinite(theta)] < 0):
        raise UlrError("Position-bias values theta must not be negative.")
    return theta, theta_from


@validate.retired(k="positions")
def data_env(log, *, items: int | None = 50, positions: int = 4, theta=None,
             raw_ctr: bool = False) -> CascadeEnv:
    """Attraction probabilities of the documents of a stored click log.

    For every document ``d`` (``doc_id``, pooled over queries),

        w_d = clicks_d / sum_{impressions i of d} theta[position_i],

    the click-through rate corrected for position bias: with examination
    probability ``theta_k`` relative to the top position (``theta_1 = 1``), the
    expected number of clicks of ``d`` is ``w_d * sum theta[position]``. The
    sums run in SQL over ``log.table``. Rows at positions without a (positive)
    ``theta`` value are left out; ``w`` is clipped into [0, 1].

    Parameters
    ----------
    log : ulr.data.log.Log
        The click log.
    items : int or None
        Keep the ``items`` documents with the most impressions (ties by
        ``doc_id``); None keeps all.
    positions : int
        The list length of the simulated lists (< number of documents).
    theta : array-like, optional
        Position bias ``theta[0]`` for position 1, ... (e.g. from the propensity
        module). Default: :func:`randomized_theta` of the log; when the log
        has no randomized rows, UlrError, unless ``raw_ctr``.
    raw_ctr : bool
        Without theta and randomized rows, use the raw CTR (no position-bias
        correction) instead of refusing. ``params["theta_from"]`` always
        says where the θ that turned clicks into attraction came from.

    Notes
    -----
    When the log has ``feature_*`` columns, each document gets the average of
    its feature vectors plus a constant 1 (intercept), for the linear
    algorithms.
    """
    if items is not None:
        items = _check_int("The number of items", items, low=2)
    k = _check_int("The list length k", positions, low=1)
    theta, theta_from = _env_theta(log, theta, raw_ctr)
    theta_list = [float(v) if np.isfinite(v) and v > 0 else None for v in theta]
    sql = (
        "SELECT doc_id, count(*) AS impressions, sum(click::INT) AS clicks, sum(th) AS exam "
        f"FROM (SELECT doc_id::VARCHAR AS doc_id, click, list_extract(?::DOUBLE[], position) AS th "
        f"      FROM {log.table}) "
        "WHERE th IS NOT NULL GROUP BY doc_id ORDER BY impressions DESC, doc_id"
    )
    params = [theta_list]
    if items is not None:
        sql += " LIMIT ?"
        params.append(items)
    rows = log.cur.execute(sql, params).fetchall()
    if len(rows) <= k:
        raise UlrError(f"The log has {len(rows)} documents at positions with a position-bias "
                       f"value; the data environment needs more than k = {k}.")
    ids = np.array([r[0] for r in rows], dtype=object)
    clicks = np.array([r[2] for r in rows], dtype=np.float64)
    exam = np.array([r[3] for r in rows], dtype=np.float64)
    w = np.clip(clicks / exam, 0.0, 1.0)
    return CascadeEnv("data", w, k, features=doc_features(log, ids), item_ids=ids,
                      params={"dataset": log.info.name, "theta": [None if v is None else round(v, 6)
                                                                  for v in theta_list],
                              "theta_from": theta_from})


@validate.retired(k="positions", features="n_features")
@validate.params(seed=validate.seed)
def make_env(name: str, *, items: int = 16, positions: int = 2, p: float = 0.2,
             delta: float = 0.15, n_features: int = 10, seed: int = 0, log=None, theta=None,
             raw_ctr: bool = False) -> CascadeEnv:
    """Build an environment by id (``kveton``, ``linear`` or ``data``)."""
    if name == "kveton":
        return kveton_env(items=items, positions=positions, p=p, delta=delta, seed=seed)
    if name == "linear":
        return linear_env(items=items, positions=positions, n_features=n_features, p=p, seed=seed)
    if name == "data":
        if log is None:
            raise UlrError("The data environment needs a click log.")
        return data_env(log, items=items, positions=positions, theta=theta, raw_ctr=raw_ctr)
    raise UlrError(f"Unknown environment {name!r}; choose one of {', '.join(ENVIRONMENTS)}.")
