"""Logged bandit feedback and target policies.

A log becomes a :class:`BanditFeedback`: every row names one (context,
action) *pair* of a :class:`Candidates` table, plus its reward, logging
propensity and (optionally) the slot (list position) it was shown at and the
impression it belongs to. The candidate actions of a context are the actions
the log shows for it (an approximation of the logging policy's action set;
see :func:`feedback_from_log`).

A target policy is an array over the pairs, ``pi[j] = pi(action_j | context_j)``,
summing to one within each context. It comes from a scorer turned into a
stochastic policy by a softmax with a temperature (:func:`softmax_policy`), or
from a column of target probabilities supplied by the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import duckdb
import numpy as np
import pandas as pd

from ulr.data import schema
from ulr.errors import NeedsFeatures, UlrError
from ulr.ope.checks import per_slot_fact, propensity_checks


@dataclass(frozen=True)
class Candidates:
    """The (context, action) pairs of a log, sorted by context.

    Attributes
    ----------
    context : int array (n_pairs,), context index of each pair, non-decreasing.
    features : float array (n_pairs, d), features of each pair (may have d = 0).
    context_labels : array (n_contexts,), the context ids (e.g. ``query_id``).
    action_labels : array (n_pairs,), the action ids (e.g. ``doc_id``).
    feature_names : names of the feature columns.
    """

    context: np.ndarray
    features: np.ndarray
    context_labels: np.ndarray
    action_labels: np.ndarray
    feature_names: tuple = ()

    def __post_init__(self):
        c = np.asarray(self.context)
        if c.ndim != 1 or len(c) == 0:
            raise ValueError("context must be a non-empty 1-d array")
        if np.any(np.diff(c) < 0):
            raise ValueError("pairs must be sorted by context")
        k = len(self.context_labels)
        if c[0] != 0 or c[-1] != k - 1 or np.any(np.diff(c) > 1):
            raise ValueError("every context must have at least one pair")
        f = np.asarray(self.features, dtype=float)
        if f.ndim != 2 or f.shape[0] != len(c):
            raise ValueError("features must have one row per pair")
        if len(self.action_labels) != len(c):
            raise ValueError("action_labels must have one entry per pair")
        if f.shape[1] != len(self.feature_names):
            raise ValueError("feature_names must name every feature column")
        object.__setattr__(self, "context", c.astype(np.int64))
        object.__setattr__(self, "features", f)

    @property
    def n_pairs(self) -> int:
        return len(self.context)

    @property
    def n_contexts(self) -> int:
        return len(self.context_labels)

    @property
    def starts(self) -> np.ndarray:
        """Index of each context's first pair (for ``np.ufunc.reduceat``)."""
        return np.searchsorted(self.context, np.arange(self.n_contexts))

    def per_context_sum(self, values) -> np.ndarray:
        """Sum of ``values`` (..., n_pairs) within each context -> (..., n_contexts)."""
        return np.add.reduceat(np.asarray(values, dtype=float), self.starts, axis=-1)


@dataclass(frozen=True)
class BanditFeedback:
    """Logged bandit feedback: one row per logged (context, action).

    Attributes
    ----------
    candidates : the pair table.
    pair : int array (n,), the logged pair of each row.
    reward : float array (n,), e.g. the click.
    propensity : float array (n,) in (0, 1], the logging policy's probability
        of the logged action.
    slot : optional int array (n,) in [0, n_slots): the list position, used by
        the reward model (the target policy fills every slot from the same
        distribution).
    cluster : optional int array (n,): rows of one impression (resampled together).
    target_prob : optional float array (n,): target probabilities of the logged
        actions supplied by the user.
    logger : optional int array (n,): which logging policy wrote each row (codes
        into ``logger_labels``).
    logger_propensity : optional float array (n, n_loggers): every logger's
        probability of each row's logged action (NaN where unknown), column
        ``j`` for ``logger_labels[j]``; what balanced IPS needs.
    """

    candidates: Candidates
    pair: np.ndarray
    reward: np.ndarray
    propensity: np.ndarray
    slot: np.ndarray | None = None
    cluster: np.ndarray | None = None
    target_prob: np.ndarray | None = None
    notes: tuple = field(default=())
    logger: np.ndarray | None = None
    logger_labels: tuple = ()
    logger_propensity: np.ndarray | None = None

    def __post_init__(self):
        n = len(self.pair)
        pair = np.asarray(self.pair, dtype=np.int64)
        if n == 0:
            raise UlrError("the log has no rows to evaluate.")
        if pair.min() < 0 or pair.max() >= self.candidates.n_pairs:
            raise ValueError("pair index out of range")
        r = np.asarray(self.reward, dtype=float)
        p = np.asarray(self.propensity, dtype=float)
        if r.shape != (n,) or p.shape != (n,):
            raise ValueError("reward and propensity need one entry per row")
        if not np.all(np.isfinite(r)):
            raise ValueError("rewards must be finite")
        if np.any(~np.isfinite(p)) or np.any(p <= 0) or np.any(p > 1):
            raise UlrError("propensities must lie in (0, 1].")
        object.__setattr__(self, "pair", pair)
        object.__setattr__(self, "reward", r)
        object.__setattr__(self, "propensity", p)
        for name in ("slot", "cluster"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v, dtype=np.int64)
                if v.shape != (n,) or v.min() < 0:
                    raise ValueError(f"{name} needs one non-negative entry per row")
                object.__setattr__(self, name, v)
        if self.target_prob is not None:
            t = np.asarray(self.target_prob, dtype=float)
            if t.shape != (n,):
                raise ValueError("target_prob needs one entry per row")
            object.__setattr__(self, "target_prob", t)
        if self.logger is not None:
            g = np.asarray(self.logger, dtype=np.int64)
            if g.shape != (n,) or g.min() < 0 or g.max() >= len(self.logger_labels):
                raise ValueError("logger needs one code per row into logger_labels")
            object.__setattr__(self, "logger", g)
        if self.logger_propensity is not None:
            lp = np.asarray(self.logger_propensity, dtype=float)
            if lp.shape != (n, len(self.logger_labels)):
                raise ValueError("logger_propensity needs shape (rows, loggers)")
            object.__setattr__(self, "logger_propensity", lp)

    @property
    def n(self) -> int:
        return len(self.pair)

    @property
    def context(self) -> np.ndarray:
        return self.candidates.context[self.pair]

    @property
    def n_slots(self) -> int:
        return 0 if self.slot is None else int(self.slot.max()) + 1

    def subset(self, rows) -> "BanditFeedback":
        """The same log restricted to ``rows`` (boolean mask or indices)."""
        idx = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows)
        pick = (lambda v: None if v is None else v[idx])
        return BanditFeedback(candidates=self.candidates, pair=self.pair[idx],
                              reward=self.reward[idx], propensity=self.propensity[idx],
                              slot=pick(self.slot), cluster=pick(self.cluster),
                              target_prob=pick(self.target_prob), notes=self.notes,
                              logger=pick(self.logger), logger_labels=self.logger_labels,
                              logger_propensity=pick(self.logger_propensity))

    def split(self, fraction: float, *, seed=0) -> tuple[np.ndarray, np.ndarray]:
        """Seeded split of the rows by cluster (impression), ``fraction`` to the first part.

        Returns two boolean masks (fit, evaluate).
        """
        if not 0 < fraction < 1:
            raise UlrError("the fit fraction must lie strictly between 0 and 1.")
        units = self.cluster if self.cluster is not None else np.arange(self.n)
        codes, inv = np.unique(units, return_inverse=True)
        rng = np.random.default_rng(seed)
        first = rng.random(len(codes)) < fraction
        mask = first[inv.ravel()]
        if mask.all() or not mask.any():
            raise UlrError("the log is too small to split into a fitting and an evaluation part.")
        return mask, ~mask


# --------------------------------------------------------------------------- policies


def softmax_policy(scores, candidates: Candidates, *, temperature: float = 1.0) -> np.ndarray:
    """Softmax over each context's candidates, ``pi(a|x) = exp(s_a/tau) / sum_b exp(s_b/tau)``.

    ``temperature = 0`` gives the greedy policy (ties share the mass equally);
    a large temperature approaches the uniform policy. Scores of shape
    ``(..., n_pairs)`` broadcast.
    """
    s = np.asarray(scores, dtype=float)
    if s.shape[-1] != candidates.n_pairs:
        raise ValueError("one score per pair is needed")
    if not np.isfinite(temperature) or temperature < 0:
        raise UlrError("the temperature must be a number >= 0.")
    if not np.all(np.isfinite(s)):
        raise UlrError("the scores contain missing or infinite values.")
    starts = candidates.starts
    ctx = candidates.context
    smax = np.maximum.reduceat(s, starts, axis=-1)[..., ctx]
    if temperature == 0:
        e = (s >= smax - 1e-12).astype(float)
    else:
        e = np.exp((s - smax) / temperature)
    z = np.add.reduceat(e, starts, axis=-1)[..., ctx]
    return e / z


def uniform_policy(candidates: Candidates) -> np.ndarray:
    """``pi(a|x) = 1 / |candidates(x)|``."""
    sizes = np.bincount(candidates.context, minlength=candidates.n_contexts)
    return 1.0 / sizes[candidates.context]


def standardize_scores(scores) -> np.ndarray:
    """Scores scaled to unit standard deviation over the pairs (so the temperature is unit-free)."""
    s = np.asarray(scores, dtype=float)
    sd = s.std()
    return (s - s.mean()) / sd if sd > 0 else s - s.mean()


@dataclass(frozen=True)
class LinearScorer:
    """``s(x, a) = features(x, a) @ coef + intercept``."""

    coef: np.ndarray
    intercept: float = 0.0

    def __call__(self, features: np.ndarray) -> np.ndarray:
        X = np.asarray(features, dtype=float)
        return X @ np.asarray(self.coef, dtype=float) + self.intercept


def fit_linear_scorer(feedback: BanditFeedback, rows=None, *, C: float = 1.0) -> LinearScorer:
    """A linear click model on the pair features, fit by logistic regression.

    The slot (list position) enters as one-hot covariates so the feature
    weights are not confounded by where documents were shown; the returned
    scorer keeps only the feature weights (the slot terms are the same for
    every candidate). Rows are weighted by ``1 / propensity`` so a
    non-uniform logging policy does not tilt the fit.
    """
    fb = feedback if rows is None else feedback.subset(rows)
    X = fb.candidates.features[fb.pair]
    d = X.shape[1]
    if d == 0:
        raise NeedsFeatures("the log has no feature columns, so no click model can be fit for the "
                       "target policy; evaluate a column of target probabilities or of scores "
                       "instead.")
    y = fb.reward
    if len(np.unique(y)) < 2:
        raise UlrError("the rows used to fit the target policy's scorer have no clicks "
                       "(or only clicks); a scorer cannot be fit. Use more rows or a "
                       "supplied target.")
    from sklearn.linear_model import LogisticRegression
    design = X if fb.slot is None else np.hstack([X, np.eye(fb.n_slots)[fb.slot][:, 1:]])
    model = LogisticRegression(C=C, max_iter=2000)
    model.fit(design, (y > 0).astype(int), sample_weight=1.0 / fb.propensity)
    return LinearScorer(coef=model.coef_[0, :d].copy(), intercept=float(model.intercept_[0]))


def policy_from_scorer(candidates: Candidates, scorer: Callable, *, temperature: float = 1.0,
                       standardize: bool = True) -> np.ndarray:
    """Target policy from a scorer: softmax of the (standardized) scores at ``temperature``.

    ``scorer`` maps pair features (n_pairs, d) to scores (n_pairs,): e.g. a
    :class:`LinearScorer`, or a ranker from elsewhere wrapped in a callable.
    """
    s = np.asarray(scorer(candidates.features), dtype=float)
    if standardize:
        s = standardize_scores(s)
    return softmax_policy(s, candidates, temperature=temperature)


def policy_from_target_column(feedback: BanditFeedback) -> tuple[np.ndarray, float, float]:
    """Pair-level target policy from user-supplied per-row target probabilities.

    Each pair gets the mean of its rows' values. Returns ``(pi, lo, hi)`` with
    the smallest and largest per-context sum of ``pi`` (ideally both 1: a sum
    below 1 means the target puts mass on actions the log never shows, which
    only the importance-weighted estimators account for).
    """
    t = feedback.target_prob
    if t is None:
        raise ValueError("the feedback carries no target probabilities")
    cand = feedback.candidates
    pi = np.bincount(feedback.pair, weights=t, minlength=cand.n_pairs)
    cnt = np.bincount(feedback.pair, minlength=cand.n_pairs)
    pi = np.where(cnt > 0, pi / np.maximum(cnt, 1), 0.0)
    sums = cand.per_context_sum(pi)
    return pi, float(sums.min()), float(sums.max())


# --------------------------------------------------------------------------- from a log


class _FrameInfo:
    def __init__(self, df: pd.DataFrame, name: str):
        self.name = name
        self.rows = len(df)
        self.columns = {c: c for c in df.columns}
        self.features = [c for c in df.columns if c.startswith(schema.FEATURE_PREFIX)]
        self.content_hash = None

    def has(self, col: str) -> bool:
        return col in self.columns


class FrameLog:
    """A pandas DataFrame in the canonical schema behind the :class:`ulr.data.log.Log`
    interface.

    For simulated logs and tests: a private in-memory DuckDB with the frame
    registered as table ``frame_log``. No schema validation beyond what
    :func:`feedback_from_log` checks.
    """

    table = "frame_log"

    def __init__(self, df: pd.DataFrame, name: str = "frame"):
        bad = [c for c in df.columns if not isinstance(c, str)]
        if bad:
            raise ValueError("column names must be strings")
        self.cur = duckdb.connect()
        self.cur.register(self.table, df)
        self.info = _FrameInfo(df, name)


def _col(info, name: str, what: str) -> str:
    """A user-named column, checked against the log's stored columns, as SQL text."""
    stored = name if name in info.columns else next(
        (s for s, src in info.columns.items() if src == name), None)
    if stored is None or stored in schema.REQUIRED:
        raise UlrError(f"the log has no column {name!r} for {what}; its columns are "
                       f"{', '.join(sorted(info.columns))}.")
    return '"' + schema.safe_ident(stored) + '"'


def feedback_from_log(log, *, action: str = "doc_id", target_column: str | None = None,
                      score_column: str | None = None) -> tuple[BanditFeedback, np.ndarray | None]:
    """Build :class:`BanditFeedback` from a click log (docs/contract.md §1) with a ``propensity`` column.

    Context = ``query_id``; action = ``doc_id`` (the slot is then the
    position) or ``position``. The candidate actions of a context are the
    actions logged for it; their features are the means of the ``feature_*``
    columns over the pair's rows (aggregated in DuckDB). Rows of one
    ``session_id`` form one resampling cluster.

    Parameters
    ----------
    log : a :class:`ulr.data.log.Log` (or :class:`FrameLog`).
    action : ``"doc_id"`` or ``"position"``.
    target_column : optional column with the target probability of each row's action.
    score_column : optional column with a score for each row's action (pairs get
        the mean); returned as the second value for :func:`softmax_policy`.

    Returns
    -------
    (feedback, pair_scores or None)
    """
    if action not in ("doc_id", "position"):
        raise UlrError("the action must be 'doc_id' or 'position'.")
    info = log.info
    _check_propensity_column(log)
    extra = {}
    if target_column:
        extra["target"] = _col(info, target_column, "target probabilities")
    if score_column:
        extra["score"] = _col(info, score_column, "scores")
    act = "doc_id::VARCHAR" if action == "doc_id" else "position::VARCHAR"
    pairs, rows, labels = _pair_and_row_queries(log, act, extra)
    cand = _candidates(pairs)
    pair = np.asarray(rows["pair"], dtype=np.int64)
    if row_contexts(cand, len(pair)):
        if "score" in extra:
            raise UlrError("each context of this log is one row, so a score column gives the "
                           "scores of the logged actions only, where the target needs every "
                           "action's: give the target's probabilities of every action as a "
                           "target table instead.")
        cand, pair = every_action(cand, pair)
    pos = np.asarray(rows["position"], dtype=np.int64)
    slot = np.unique(pos, return_inverse=True)[1].ravel() if action == "doc_id" else None
    target = None
    if "target" in extra:
        target = np.asarray(rows["target"], dtype=float)
        if target.min() < 0 or target.max() > 1:
            raise UlrError("target probabilities must lie in [0, 1].")
    cluster = _clusters(rows) if info.has("session_id") else None
    prop = np.asarray(rows["propensity"], dtype=float)
    notes = []
    if np.all((prop > 0) & (prop <= 1)):
        from ulr.facts import propensity_check  # a dataset fact: kept per version
        per_slot = per_slot_fact(info)
        chk = propensity_check(log, action=action, per_slot=per_slot,
                               compute=lambda: propensity_checks(
                                   context=cand.context[pair], action=pair, propensity=prop,
                                   slot=pos if action == "doc_id" else None, cluster=cluster,
                                   per_slot=per_slot, positions=int(len(np.unique(pos)))))
        if chk["fails"]:
            notes.append(("propensity_sum", chk))
    fb = BanditFeedback(candidates=cand, pair=pair,
                        reward=np.asarray(rows["click"], dtype=float), propensity=prop,
                        slot=slot, cluster=cluster, target_prob=target, notes=tuple(notes),
                        **_logger_arrays(rows, labels))
    scores = pairs["score"].to_numpy(dtype=float) if "score" in extra else None
    return fb, scores


def _check_propensity_column(log) -> None:
    """Refuse a log without a complete ``propensity`` column, or without rows."""
    if not log.info.has("propensity"):
        raise UlrError("this log has no propensity column, so off-policy evaluation is not "
                       "possible: it needs the logging policy's probability of every logged "
                       "action: map the column that holds it to the field 'propensity'.")
    n_rows, n_null = log.cur.execute(
        f"SELECT count(*), count(*) FILTER (WHERE propensity IS NULL) FROM {log.table}"
    ).fetchone()
    if n_rows == 0:
        raise UlrError("the log has no rows.")
    if n_null:
        raise UlrError(f"{n_null} of {n_rows} rows have no propensity; off-policy evaluation "
                       "needs the logging probability of every row.")


def _pair_and_row_queries(log, act: str, extra: dict) -> tuple[pd.DataFrame, dict, tuple]:
    """The per-pair aggregates (a frame ordered by context and action), the per-row
    arrays (with ``extra`` columns as floats, checked complete) and the logger labels."""
    info, t = log.info, log.table
    feat_sql = ", AVG(COLUMNS('^feature_'))" if info.features else ""
    pair_extra = "".join(f", AVG(TRY_CAST({c} AS DOUBLE)) AS {k}" for k, c in extra.items())
    pairs = log.cur.execute(
        f"SELECT query_id::VARCHAR AS ctx, {act} AS act, AVG(propensity) AS prop{pair_extra}"
        f"{feat_sql} FROM {t} GROUP BY 1, 2 ORDER BY 1, 2").df()
    row_extra = "".join(f", TRY_CAST({c} AS DOUBLE) AS {k}" for k, c in extra.items())
    logger_sql, labels = _logger_sql(log, info)
    sess = (", dense_rank() OVER (ORDER BY session_id) - 1 AS cluster, "
            "session_id IS NULL AS nos") if info.has("session_id") else ""
    # ORDER BY ALL: a window's output order depends on DuckDB's threads, and so would the
    # last bits of every sum over rows; sorted on every column, only identical rows tie.
    rows = log.cur.execute(
        f"SELECT dense_rank() OVER (ORDER BY query_id::VARCHAR, {act}) - 1 AS pair, "
        f"position, click::INT AS click, propensity{sess}{row_extra}{logger_sql} "
        f"FROM {t} ORDER BY ALL").fetchnumpy()
    for k, c in extra.items():
        rows[k] = np.ma.filled(np.ma.asarray(rows[k], dtype=float), np.nan)
        bad = int(np.isnan(rows[k]).sum())
        if bad:
            raise UlrError(f"column {c.strip(chr(34))!r} has {bad} missing or non-numeric "
                           f"values; every row needs its {k} value.")
    return pairs, rows, labels


def _candidates(pairs: pd.DataFrame) -> Candidates:
    """Candidates from the pair aggregates; a missing feature mean becomes the column's
    mean (0 when the whole column is missing)."""
    ctx_codes, ctx_labels = pd.factorize(pairs["ctx"], sort=False)
    fnames = [c for c in pairs.columns if c.startswith(schema.FEATURE_PREFIX)]
    X = pairs[fnames].to_numpy(dtype=float) if fnames else np.zeros((len(pairs), 0))
    if np.isnan(X).any():
        X = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
        X = np.nan_to_num(X)
    return Candidates(context=ctx_codes, features=X, context_labels=np.asarray(ctx_labels),
                      action_labels=pairs["act"].to_numpy(), feature_names=tuple(fnames))


#: most (context, action) pairs a log whose contexts are its rows is expanded to
MAX_ROW_CONTEXT_PAIRS = 2_000_000
#: most numbers in the action-by-feature design of such a log (else additive features)
MAX_INTERACTION_CELLS = 30_000_000


def row_contexts(candidates: Candidates, rows: int) -> bool:
    """Whether each context is one row (a contextual log with no query of its own):
    then a context's candidates are every action of the log, not only the logged one."""
    return rows > 1 and candidates.n_contexts == rows == candidates.n_pairs and \
        len(np.unique(np.asarray(candidates.action_labels).astype(str))) > 1


def every_action(candidates: Candidates, pair) -> tuple[Candidates, np.ndarray]:
    """Candidates of a log whose contexts are its rows: every context x every action.

    A pair's features are the context's own (its row's ``feature_*``) times a one-hot
    of the action, plus the action's one-hot: a linear model on them is a separate
    linear model per action (the reward model and the fitted target see the action and
    the context). With too many cells the features are the context's plus the action's
    one-hot. Returns the candidates and each row's pair.
    """
    acts, act_of = np.unique(np.asarray(candidates.action_labels).astype(str),
                             return_inverse=True)
    k, A = candidates.n_contexts, len(acts)
    if k * A > MAX_ROW_CONTEXT_PAIRS:
        raise UlrError(f"each of this log's {k:,} contexts is one row and it has {A:,} "
                       f"actions: {k * A:,} context-action pairs are more than "
                       f"{MAX_ROW_CONTEXT_PAIRS:,}; map a coarser context to query_id.")
    X = candidates.features  # one row per context (pair j is context j)
    d = X.shape[1]
    onehot = np.tile(np.eye(A), (k, 1))
    Xc = np.repeat(X, A, axis=0)
    names = [f"action {a}" for a in acts]
    if k * A * A * (d + 1) <= MAX_INTERACTION_CELLS:
        feats = np.hstack([(Xc[:, :, None] * onehot[:, None, :]).reshape(k * A, d * A),
                           onehot])
        fn = [f"{f} x action {a}" for f in candidates.feature_names for a in acts] + names
    else:
        feats, fn = np.hstack([Xc, onehot]), list(candidates.feature_names) + names
    ctx_order = np.asarray(candidates.context)  # context j has pair j
    new = Candidates(context=np.repeat(np.arange(k), A), features=feats,
                     context_labels=candidates.context_labels,
                     action_labels=np.tile(acts, k).astype(object), feature_names=tuple(fn))
    p = np.asarray(pair)
    return new, ctx_order[p] * A + act_of[p]


def _clusters(rows) -> np.ndarray:
    """Resampling unit of each row: its session; a row without a session is its own unit."""
    cluster = np.asarray(rows["cluster"], dtype=np.int64).copy()
    m = np.asarray(rows["nos"], dtype=bool)
    if m.any():
        cluster[m] = cluster.max() + 1 + np.arange(m.sum())
    return cluster


def _logger_sql(log, info) -> tuple[str, tuple]:
    """SQL select items for the logger code and every logger's propensity, and the labels.

    Columns ``propensity_<logger>`` (the logger label sanitized like any column
    name) give a logger's probability of each logged action; a logger without
    such a column gets NULL (unknown).
    """
    if not info.has("logger"):
        return "", ()
    # log.table passed table_ident (the allow-list) when the Log was built; no user text
    got = log.cur.execute(f"SELECT DISTINCT coalesce(logger::VARCHAR, '') AS g "
                          f"FROM {log.table} ORDER BY 1").fetchall()
    labels = tuple(r[0] for r in got)
    items = [", coalesce(logger::VARCHAR, '') AS logger_label"]
    for j, g in enumerate(labels):
        c = "propensity_" + schema.sanitize(g)
        col = f'TRY_CAST("{schema.safe_ident(c)}" AS DOUBLE)' if c in info.columns \
            else "NULL::DOUBLE"
        items.append(f", {col} AS lp_{j}")
    return "".join(items), labels


def _logger_arrays(rows, labels) -> dict:
    if not labels:
        return {}
    lab = np.asarray(rows["logger_label"], dtype=object)
    code = {g: j for j, g in enumerate(labels)}
    lp = np.column_stack([np.ma.filled(np.ma.asarray(rows[f"lp_{j}"], dtype=float), np.nan)
                          for j in range(len(labels))])
    return {"logger": np.array([code[g] for g in lab], dtype=np.int64), "logger_labels": labels,
            "logger_propensity": lp}


def feedback_from_frame(df: pd.DataFrame, **kwargs) -> tuple[BanditFeedback, np.ndarray | None]:
    """:func:`feedback_from_log` for a DataFrame in the canonical schema."""
    return feedback_from_log(FrameLog(df), **kwargs)
