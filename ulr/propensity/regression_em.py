"""Regression EM: PBM EM whose relevance side is one gradient-boosted model.

Wang, Golbandi, Bendersky, Metzler & Najork, "Position bias estimation for
unbiased learning to rank in personal search", WSDM 2018.

Plain EM (:mod:`.em`) keeps one gamma per (query, doc) pair and so needs each
pair to be seen many times, at several positions. Regression EM replaces the
table by a model ``gamma(x) = P(R = 1 | x)`` of the pair's features, which
shares strength across pairs and works when most pairs are seen once:

E-step, for a skipped result at position k with features x:

    P(R = 1 | C = 0) = (1 - theta_k) gamma(x) / (1 - theta_k gamma(x)),
    P(E = 1, R = 0 | C = 0) = theta_k (1 - gamma(x)) / (1 - theta_k gamma(x));

a clicked result has E = R = 1.

M-step: theta_k in closed form as in EM; gamma by fitting ONE
``HistGradientBoostingClassifier`` from the features to relevance. The paper
samples a binary label per impression from the posterior; we use the
posterior-weighted labels instead (each distinct feature vector appears once
with label 1 and weight ``sum [c + (n - c) P(R=1|C=0)]`` and once with label 0
and the rest of its impressions as weight), which is the same objective in
expectation without the sampling noise.

Each item's own clicks. A GBDT's leaf holds ``min_samples_leaf`` fit rows, one per
distinct feature vector, so where few vectors are each shown many times (30 queries x 5
documents, 100 impressions each) its trees have about three leaves and gamma is smoothed
along the features the ranker ranks by, hence along position: theta came out 7-15% low
at positions 2-5, and more sessions did not shrink that (issue 54). So each item's gamma
is the posterior mean of its own rate with the GBDT's prediction ``g(x)`` as prior mean,
worth ``a = ITEM_PRIOR`` impressions: ``(c_i + a g) / (exposure_i + a)`` in the Poisson
start (a Gamma prior), ``(sum c + (n - c) P(R=1|C=0) + a g) / (n_i + a)`` in the M-step
(a Beta prior). An item seen a few times keeps the GBDT's prediction, as before; one seen
far more than ``a`` times gets its own rate, so the prior's pull vanishes as sessions
grow (figures in docs/benchmarks.md). For an item shown at one position only, its own
clicks add nothing to the Poisson start's theta at its fixed point (they cancel in
``theta_k = C_k / sum n gamma``), so logs where most pairs are seen once are fitted much
as before.

Initialization. EM converges slowly on click logs: for a skipped result at a
deep position the posterior of R is almost the prior, so each iteration moves
gamma by only about ``theta_k`` of the way (plain EM on our simulated logs
needs hundreds of iterations; see :mod:`.em`). Algorithm 1 of the paper takes
initial theta and gamma as input; we start it from a fast moment fit of the
same model with no hidden variables: alternate ``theta_k = sum c / sum n
gamma(x)`` and a Poisson-loss GBDT of ``clicks / exposure`` on the features
(exposure = ``sum n theta_k``), i.e. the maximum-likelihood fit of the Poisson
approximation ``clicks ~ Poisson(n theta_k gamma(x))``. The alternation
contracts linearly, so SQUAREM's extrapolation (as in :mod:`.em`) jumps ahead
after every two fits; that converges in about four GBDT fits. Regression EM
then refines the fit under the exact Bernoulli likelihood for as long as each
refit raises it (see :func:`regression_em`).

Sufficient statistics come from one SQL statement grouped by (position,
feature vector): rows with identical features at the same position are
interchangeable for this model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr import validate
from ulr.data import schema
from ulr.errors import NeedsFeatures, UlrError, check
from ulr.data.scan import CellStats, Scan, bucket_sql, file_checks_sql, make_cells, max_position, refuse_bad_rows, resolve_positions
from ulr.propensity.em import initial_theta

EPS = 1e-4


@dataclass(frozen=True)
class FeatureStats:
    cells: CellStats  # ``pair`` indexes distinct feature vectors ("items")
    X: np.ndarray  # (items, P), each feature replaced by its quantile-bin code
    features: tuple


def prebin(X: np.ndarray, max_bins: int = 255) -> np.ndarray:
    """Replace each feature by its quantile-bin code (NaN stays NaN).

    The GBDT bins features into 255 quantiles anyway; doing it once here, from
    the unweighted item distribution, spares every M-step sklearn's weighted
    quantile search (a Python loop over the percentiles, seconds per fit).
    """
    out = np.full(X.shape, np.nan)
    for j in range(X.shape[1]):
        col = X[:, j]
        ok = ~np.isnan(col)
        if not ok.any():
            continue
        edges = np.unique(np.quantile(col[ok], np.linspace(0, 1, max_bins + 1)[1:-1]))
        out[ok, j] = np.searchsorted(edges, col[ok], side="left")
    return out


def collect(scan: Scan, *, positions=None, groups: bool = False) -> FeatureStats:
    """Impressions and clicks per (position, feature vector): one SQL statement.

    The statement keeps every position (a stored log's is filtered to
    ``positions`` in SQL) and K is the deepest one in its result, so the log
    is read once. An in-place file scan checks the rows it reads inside the
    same statement (:func:`ulr.data.scan.file_checks_sql`).
    """
    feats = [schema.safe_ident(f) for f in scan.features]
    if not feats:
        raise NeedsFeatures(f"the log {scan.name!r} has no feature_* columns; regression EM learns "
                       "relevance from features, so use em or another method.")
    filtered = positions is not None and scan.checked  # a file scan filters after its checks
    res = scan.execute(_feature_sql(scan, feats, filtered, groups),
                       {"ulr_k": int(positions)} if filtered else {}).fetchnumpy()
    if not scan.checked:
        refuse_bad_rows(res)
    pos = np.asarray(res["position"], dtype=np.int64)
    if len(pos) == 0 and not filtered:
        raise UlrError(f"the log {scan.name!r} has no rows to estimate from.")
    deepest = int(pos.max()) if len(pos) else 0
    if filtered and deepest < int(positions):  # the filter hid deeper positions
        deepest = max_position(scan)
    k = resolve_positions(scan, positions, deepest)
    keep = pos <= k
    if not keep.any():
        raise UlrError(f"the log {scan.name!r} has no rows in positions 1..{k}.")
    every_item = np.asarray(res["item"], dtype=np.int64)
    X = np.empty((int(every_item.max()) + 1, len(feats)))
    for j, f in enumerate(feats):
        X[every_item, j] = np.asarray(res[f], dtype=float)  # NULL -> NaN (the GBDT handles it)
    item, pos = every_item[keep], pos[keep]
    n = np.asarray(res["n"], dtype=float)[keep]
    c = np.nan_to_num(np.asarray(res["c"], dtype=float))[keep]
    if not keep.all():  # number only the items seen in positions 1..K, in the same order
        shown, item = np.unique(item, return_inverse=True)
        X = X[shown]
    m = len(X)
    grp = np.asarray(res["grp"], dtype=np.int64)[keep] if groups else None
    cells = make_cells(item, pos, n, c, n_pairs=m, positions=k, grp=grp)
    return FeatureStats(cells=cells, X=prebin(X), features=tuple(feats))


def _feature_sql(scan: Scan, feats: list, filtered: bool, groups: bool) -> str:
    """The cell statement: (position, features) groups, items numbered by dense_rank."""
    flist = ", ".join(feats)
    src = f"(SELECT *, {bucket_sql(scan)} AS grp FROM {{src}})" if groups else "{src}"
    grp = "grp, " if groups else ""
    where = "WHERE position <= $ulr_k " if filtered else ""
    used = {"position", "click", *feats} | ({scan.unit} if groups else set())
    row_checks, checks = ("", "") if scan.checked else file_checks_sql(scan, used)
    return (f"WITH cells AS (SELECT {grp}position, {flist}, count(*) AS n, "
            f"count(click) AS n_known, sum(CAST(click AS INTEGER)) AS c{row_checks} "
            f"FROM {src} AS t {where}GROUP BY {grp}position, {flist}) "
            f"SELECT {grp}dense_rank() OVER (ORDER BY {flist}) - 1 AS item, position, n, c, "
            f"{flist}{checks} FROM cells")


@dataclass
class RegressionEMFit:
    theta: np.ndarray
    gamma: np.ndarray  # per item
    loglik: tuple
    converged: bool
    model: object  # the last accepted GBDT (None when no refit was kept)
    rejected: bool = False  # True: the last refit lowered the likelihood and was undone


def _threads(n_rows: int):
    """OpenMP threads for a GBDT fit: 1 for small fits.

    On a busy machine OpenMP's spinning threads make a small fit many times slower
    than single-threaded; parallelism only pays on large data.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1 if n_rows < 200_000 else None, user_api="openmp")


# One GBDT shape for every fit: 50 trees at step 0.2 reach what 100 at 0.1 do, at half
# the time of each fit and each prediction (figures in docs/benchmarks.md).
# min_samples_leaf counts the fits' rows, one per distinct feature vector, not impressions:
# on few vectors each shown many times it smooths gamma across positions, which biased
# theta low (issue 54). The GBDT's gamma is now only the prior mean of each item's gamma
# (ITEM_PRIOR below), which removed most of it (coverage 79.5% -> 92.5%), and a leaf
# counts impressions (LEAF_IMPRESSIONS below): both together 94.5% on the same 50 logs
# (docs/benchmarks.md, benchmarks/coverage_propensity_interval.py --method regression-em).
_GBDT = dict(max_iter=50, learning_rate=0.2, max_leaf_nodes=15, min_samples_leaf=40,
             l2_regularization=1.0, early_stopping=False)


# Each item's gamma is the posterior mean of its own rate around the GBDT's prediction,
# with the prediction worth ITEM_PRIOR impressions (see _poisson_step and _m_step). On 20
# logs of 30 queries x 5 documents x 3000 sessions the mean log error of theta at
# position 5 was -0.191 with the GBDT's gamma alone, -0.120 / -0.081 / -0.065 / -0.058
# with 40 / 10 / 3 / 0.001 (its sd over the logs 0.15-0.19); on a long-tail log (10,000
# queries and sessions) theta moved by at most 0.0024 for any of them
# (benchmarks/regression_em_item_prior.py, docs/benchmarks.md).
ITEM_PRIOR = 10.0


# A GBDT leaf holds at least LEAF_IMPRESSIONS impressions' worth of items:
# round(LEAF_IMPRESSIONS m / N) fit rows for m items shown N times in all, between 1 and
# _GBDT's min_samples_leaf (40 rows). On a long-tail log (each item shown about once) that
# is the 40 rows as before; on few items each shown many times the trees may split down
# to single items instead of averaging 40 of them across positions (the smoothing bias
# above). ``None``: always 40 rows (the rule before issue 54's last change; the benchmarks
# set it to compare).
LEAF_IMPRESSIONS = 40.0


def _leaf(fs: FeatureStats) -> int:
    """min_samples_leaf for ``fs`` (see :data:`LEAF_IMPRESSIONS`)."""
    cap = _GBDT["min_samples_leaf"]
    total = float(np.sum(fs.cells.impressions))
    if LEAF_IMPRESSIONS is None or total <= 0:
        return cap
    return int(np.clip(round(LEAF_IMPRESSIONS * fs.cells.n_pairs / total), 1, cap))


def _classifier(seed, leaf: int = _GBDT["min_samples_leaf"]):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(**{**_GBDT, "min_samples_leaf": leaf},
                                          random_state=seed)


def _poisson_regressor(seed, leaf: int = _GBDT["min_samples_leaf"]):
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(loss="poisson", **{**_GBDT, "min_samples_leaf": leaf},
                                         random_state=seed)


def _poisson_step(fs: FeatureStats, theta: np.ndarray, seed, *, prior: float = ITEM_PRIOR
                  ) -> tuple[np.ndarray, np.ndarray]:
    """One map of the moment start: a Poisson GBDT for gamma given theta, then theta_k.

    gamma(x) is fitted to ``clicks / exposure`` per item with ``exposure = sum n theta_k``
    as weight, and each item's gamma is then its Gamma-Poisson posterior mean
    ``(c_i + a g(x_i)) / (exposure_i + a)`` around the GBDT's ``g`` (``a = prior``; see
    :data:`ITEM_PRIOR`); then ``theta_k = C_k / sum n gamma``, relative to position 1.
    """
    st = fs.cells
    k, m = st.positions, st.n_pairs
    pos0, item, n = st.position - 1, st.pair, st.impressions
    c_k = np.bincount(pos0, st.clicks, minlength=k)
    c_i = np.bincount(item, st.clicks, minlength=m)
    exposure = np.bincount(item, n * theta[pos0], minlength=m)
    keep = exposure > 0
    model = _poisson_regressor(seed, _leaf(fs))
    with _threads(int(keep.sum())):
        model.fit(fs.X[keep], c_i[keep] / exposure[keep], sample_weight=exposure[keep])
        gamma = model.predict(fs.X)
    if prior is not None:
        gamma = (c_i + prior * gamma) / (exposure + prior)
    new = c_k / np.maximum(np.bincount(pos0, n * gamma[item], minlength=k), 1e-300)
    return new / new[0], gamma


def _extrapolate(t0, t1, t2):
    """SQUAREM's step (Varadhan & Roland 2008, S3) from three iterates of a fixed-point map.

    ``r = t1 - t0``, ``v = t2 - t1 - r``, ``alpha = -|r| / |v|`` (at most -1),
    ``t0 - 2 alpha r + alpha^2 v``; for a map that contracts at one rate this
    lands on the fixed point. Falls back to ``t2`` when the step leaves theta > 0.
    """
    r, v = t1 - t0, t2 - 2 * t1 + t0
    nv = float(np.linalg.norm(v))
    if nv == 0.0:
        return t2
    alpha = min(-float(np.linalg.norm(r)) / nv, -1.0)
    out = t0 - 2 * alpha * r + alpha * alpha * v
    return out / out[0] if np.all(np.isfinite(out)) and np.all(out > 0) else t2


def poisson_start(fs: FeatureStats, *, theta0=None, max_iter: int = 20, tol: float = 1e-3,
                  patience: int = 4, seed: int = 0, prior: float = ITEM_PRIOR, progress=None,
                  should_stop=None) -> tuple[np.ndarray, np.ndarray, int]:
    """Moment start: the fixed point of :func:`_poisson_step`, accelerated by SQUAREM.

    The plain alternation contracts linearly (by about half per GBDT fit), so
    reaching ``tol`` takes many fits; after every two maps the
    iterate jumps by :func:`_extrapolate` to where the sequence is heading.
    Stops when one map moves relative theta by less than ``tol`` at every
    position, or when ``patience`` maps in a row have not moved it by less than the
    smallest move so far: the map is piecewise smooth (a GBDT's splits jump as its
    weights change), and near a split the alternation can circle a few iterates
    apart instead of settling; regression EM refines from there with its own stop.
    Returns relative theta, gamma per item (same scale) and the number of GBDT fits.
    ``should_stop`` is checked before each fit.
    """
    theta = np.array(theta0 if theta0 is not None else initial_theta(fs.cells), dtype=float)
    theta = theta / theta[0]
    trail, new, gamma, it = [theta], theta, None, 0
    smallest, stalled = np.inf, 0
    while it < int(max_iter):
        check(should_stop)
        new, gamma = _poisson_step(fs, trail[-1], seed, prior=prior)
        it += 1
        if progress is not None:
            progress(it / max_iter, f"Poisson start, iteration {it}")
        move = float(np.max(np.abs(new - trail[-1])))
        if move < tol:
            break
        smallest, stalled = (move, 0) if move < smallest else (smallest, stalled + 1)
        if patience is not None and stalled >= patience:
            break
        trail.append(new)
        if len(trail) == 3:
            trail = [_extrapolate(*trail)]
    return new, gamma, it


def regression_em(fs: FeatureStats, *, theta0=None, gamma0=None, tol: float = 1e-7,
                  theta_tol: float = 1e-3, max_iter: int = 20, min_iter: int = 2,
                  seed: int = 0, prior: float = ITEM_PRIOR, progress=None,
                  should_stop=None) -> RegressionEMFit:
    """Fit theta and a GBDT relevance model by regression EM (Bernoulli likelihood).

    Stops when the log-likelihood per impression changes by less than ``tol``,
    or relative theta by less than ``theta_tol`` at every position (after at
    least ``min_iter`` iterations). A GBDT refit is not an exact M-step and
    can lower the likelihood; then the fit before it is kept and the loop
    stops (a generalized EM never goes down). On low-CTR logs the Poisson
    start (:func:`poisson_start`) fits the clicks directly, and the first
    refit on posterior labels usually lowers the likelihood by hundreds of
    nats, with theta no closer to the truth; ``rejected`` says so. ``should_stop`` is
    checked before each refit (:class:`ulr.errors.Cancelled`).
    """
    st = fs.cells
    k, m = st.positions, st.n_pairs
    pos0, item = st.position - 1, st.pair
    n, c = st.impressions, st.clicks
    nc = n - c
    n_k = np.bincount(pos0, n, minlength=k)
    c_k = np.bincount(pos0, c, minlength=k)
    n_i = np.bincount(item, n, minlength=m)
    c_i = np.bincount(item, c, minlength=m)
    total = max(float(n.sum()), 1.0)
    theta = np.array(theta0 if theta0 is not None else initial_theta(st), dtype=float)
    if gamma0 is not None:
        gamma = np.asarray(gamma0, dtype=float)
    else:  # one common relevance to start
        gamma = np.full(m, c.sum() / max(float(n @ theta[pos0]), 1e-12))
    # Put the (weakly identified) scale where theta * gamma < 1 with room on both sides.
    s = 0.95 / max(float(theta.max()), 1e-12)
    theta = np.clip(theta * s, EPS, 1 - EPS)
    gamma = np.clip(gamma / s, EPS, 1 - EPS)
    lls, model, converged, rejected, kept = [], None, False, False, None
    prev = theta / theta[0]
    for it in range(int(max_iter) + 1):  # the last pass only checks the last refit
        q = 1.0 - theta[pos0] * gamma[item]
        ll = float(c @ np.log(theta[pos0] * gamma[item]) + nc @ np.log(q))
        if lls and ll < lls[-1]:  # the refit lowered the likelihood: keep the fit before it
            theta, gamma, model = kept
            converged = rejected = True
            break
        lls.append(ll)
        kept = (theta, gamma, model)
        rel = theta / theta[0]
        if it >= min_iter and (abs(lls[-1] - lls[-2]) / total < tol
                               or np.max(np.abs(rel - prev)) < theta_tol):
            converged = True
            break
        if it == int(max_iter):
            break
        prev = rel
        check(should_stop)
        theta, gamma, model = _m_step(fs, theta, gamma, w=nc / q, sums=(n_k, c_k, n_i, c_i),
                                      seed=seed, prior=prior)
        if progress is not None:
            progress((it + 1) / max_iter, f"regression EM iteration {it + 1}")
    return RegressionEMFit(theta=theta, gamma=gamma, loglik=tuple(lls), converged=converged,
                           model=model, rejected=rejected)


def _m_step(fs: FeatureStats, theta, gamma, *, w, sums, seed, prior=ITEM_PRIOR):
    """One M-step: theta in closed form, then ONE GBDT on posterior-weighted labels.

    ``w = (n - c) / (1 - theta gamma)`` per cell; each item appears once with
    label 1 and weight ``c + sum w gamma (1 - theta)`` and once with label 0
    and the rest of its impressions.
    """
    st = fs.cells
    pos0, item = st.position - 1, st.pair
    n_k, c_k, n_i, c_i = sums
    th, g = theta[pos0], gamma[item]
    new_theta = np.clip((c_k + np.bincount(pos0, w * th * (1 - g), minlength=st.positions))
                        / np.where(n_k > 0, n_k, 1.0), EPS, 1 - EPS)
    pos_w = c_i + np.bincount(item, w * g * (1 - th), minlength=st.n_pairs)
    neg_w = np.clip(n_i - pos_w, 0.0, None)
    seen = n_i > 0
    X2 = np.vstack([fs.X[seen], fs.X[seen]])
    y2 = np.repeat([1.0, 0.0], int(seen.sum()))
    model = _classifier(seed, _leaf(fs))
    with _threads(len(y2)):
        model.fit(X2, y2, sample_weight=np.concatenate([pos_w[seen], neg_w[seen]]))
        new_gamma = model.predict_proba(fs.X)[:, 1]
    if prior is not None:
        new_gamma = (pos_w + prior * new_gamma) / (n_i + prior)
    new_gamma = np.clip(new_gamma, EPS, 1 - EPS)
    return new_theta, new_gamma, model


@validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def run(scan, *, positions=None, n_bootstrap: int = 0, seed=0, assume_randomized: bool = False,
        progress=None, level: float = 0.95, max_iter: int = 20, bootstrap_iter: int = 3,
        should_stop=None):
    from ulr.propensity import bootstrap as bs
    from ulr.propensity.result import PropensityResult

    prog = bs.Progress(progress)
    prog(0.02, "aggregating impressions and clicks per (position, features) in SQL")
    fs = collect(scan, positions=positions, groups=n_bootstrap > 0)
    end = 0.6 if n_bootstrap else 0.98
    theta0, gamma0, start_iter = poisson_start(fs, seed=seed, progress=prog.sub(0.05, 0.4 * end),
                                               should_stop=should_stop)
    fit = regression_em(fs, theta0=theta0, gamma0=gamma0, max_iter=max_iter, seed=seed,
                        progress=prog.sub(0.4 * end, end), should_stop=should_stop)
    theta = fit.theta / fit.theta[0]
    notes = []
    if not fit.converged:
        notes.append(f"regression EM stopped after {max_iter} iterations before the "
                     "log-likelihood settled.")
    if fit.rejected and len(fit.loglik) == 1:
        notes.append("no regression-EM refit raised the likelihood above the Poisson start's, "
                     "so theta is that start's fit.")
    lower = upper = None
    if n_bootstrap > 0:
        notes.append(f"each bootstrap replicate refits the Poisson start and then runs "
                     f"up to {bootstrap_iter} regression-EM iterations (fewer when a refit "
                     "lowers the likelihood).")

        def one(w):
            rf = FeatureStats(cells=fs.cells.reweighted(w), X=fs.X, features=fs.features)
            t0, g0, _ = poisson_start(rf, theta0=theta0, max_iter=5, seed=seed,
                                      should_stop=should_stop)
            f = regression_em(rf, theta0=t0, gamma0=g0, max_iter=bootstrap_iter,
                              min_iter=bootstrap_iter, seed=seed, should_stop=should_stop)
            return f.theta / f.theta[0]
        samples = bs.replicate(one, n_groups=fs.cells.groups.n_groups, n_bootstrap=n_bootstrap,
                               seed=seed, progress=prog.sub(0.6, 1.0), should_stop=should_stop)
        lower, upper, more = bs.standard_interval(samples, theta, level)
        notes += more
    return PropensityResult.build(
        method="regression-em", positions=fs.cells.positions, theta=theta, lower=lower,
        upper=upper, absolute=fit.theta, loglik=fit.loglik, rows_used=fs.cells.rows,
        notes=notes, extras={"converged": fit.converged, "feature_vectors": fs.cells.n_pairs,
                             "start_iterations": start_iter,
                             "refits_kept": len(fit.loglik) - 1,
                             "features": list(fs.features)},
        n_bootstrap=n_bootstrap, level=level)
