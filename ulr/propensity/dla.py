"""Dual Learning Algorithm (DLA): ranking and propensity models learned together.

Ai, Bi, Luo, Guo & Croft, "Unbiased learning to rank with unbiased propensity
estimation", SIGIR 2018.

Two models are trained on the same clicked lists:

- a ranking model ``f(x)`` on the features (here a one-hidden-layer MLP), and
- a propensity model ``g(k)``, one logit per position.

Within one list, ``softmax(f)`` plays the relevance and ``softmax(g)`` the
examination distribution. Each model is trained with a softmax cross-entropy
on the clicks, reweighted by the *other* model:

    IPW loss (ranking):     l(f) = - sum_{clicked i} (theta_1 / theta_i) log softmax(f)_i
                            with theta_1 / theta_i = exp(g_1 - g_i);
    IRW loss (propensity):  l(g) = - sum_{clicked i} (r_1 / r_i) log softmax(g)_i
                            with r_1 / r_i = exp(f_{x at 1} - f_{x at i}),

each normalized by its total weight and with the weights held constant
(as in the authors' ULTRA code, ``get_normalized_weights``). At the joint
optimum ``softmax(f) ~ gamma`` within a list and ``softmax(g) ~ theta``, so
``theta_k / theta_1 = exp(g_k - g_1)``.

Sensitivity to initialization. The two losses are coupled through their
weights and the joint objective is not convex: a ranking model that starts
far off reweights the propensity loss wrongly, which in turn skews the
ranker's weights, and the pair can settle at a biased point. Where training
starts (the ranker's random weights, the position logits) and the ranker's
capacity both matter. We start from the neutral point (g = 0: no position
bias; a small random ranker drawn from ``seed``), train with full-batch Adam
for a fixed number of steps and clip weights at ``max_weight``. Estimates
spread more across seeds than EM's, and a linear ranker (``hidden=0``) is too
rigid for a saturating relevance (figures in docs/benchmarks.md). Compare seeds
before trusting small differences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr import validate
from ulr.data import schema
from ulr.errors import NeedsFeatures, NeedsSessions, UlrError, check
from ulr.data.scan import Scan, bucket_sql, max_position, require_table, resolve_positions


@dataclass(frozen=True)
class ListStats:
    """Clicked lists as padded arrays: S lists x K positions."""

    X: np.ndarray  # (S, K, P) features (0 where absent)
    clicks: np.ndarray  # (S, K)
    mask: np.ndarray  # (S, K) a result was shown there
    group: np.ndarray  # (S,) bootstrap bucket
    positions: int
    rows: int
    lists_total: int
    features: tuple


def collect(scan: Scan, *, positions=None, max_lists: int = 100_000, seed: int = 0
            ) -> ListStats:
    """Rows of the lists with at least one click, one SQL statement."""
    require_table(scan, "dla")
    feats = [schema.safe_ident(f) for f in scan.features]
    if not feats:
        raise NeedsFeatures(f"the log {scan.name!r} has no feature_* columns; dla learns a ranking "
                       "model on features, so use em or another method.")
    if not scan.has("session_id"):
        raise NeedsSessions(f"the log {scan.name!r} has no session_id column; dla learns from whole "
                       "result lists and needs to know which rows were shown together.")
    k = resolve_positions(scan, positions, max_position(scan))
    flist = ", ".join(f"t.{f}" for f in feats)
    sql = ("WITH s AS (SELECT session_id FROM {src} WHERE position <= $ulr_k "
           "GROUP BY session_id HAVING sum(CAST(click AS INTEGER)) > 0 "
           "AND min(position) = 1) "
           f"SELECT dense_rank() OVER (ORDER BY t.session_id) - 1 AS list, "
           f"{bucket_sql(scan).replace('session_id', 't.session_id')} AS grp, "
           f"t.position, CAST(t.click AS INTEGER) AS click, {flist} "
           "FROM {src} AS t WHERE t.position <= $ulr_k "
           "AND t.session_id IN (SELECT session_id FROM s)")
    res = scan.execute(sql, {"ulr_k": k}).fetchnumpy()
    lst = np.asarray(res["list"], dtype=np.int64)
    if len(lst) == 0:
        raise UlrError(f"the log {scan.name!r} has no result list with a click in positions "
                       f"1..{k}; dla learns from clicked lists.")
    n_lists = int(lst.max()) + 1
    keep_lists = np.arange(n_lists)
    if n_lists > max_lists:  # subsample whole lists for speed
        keep_lists = np.sort(np.random.default_rng(seed).choice(n_lists, max_lists,
                                                                replace=False))
        sel = np.isin(lst, keep_lists)
        lst = np.searchsorted(keep_lists, lst[sel])
        res = {key: np.asarray(v)[sel] for key, v in res.items()}
    s = len(keep_lists)
    pos0 = np.asarray(res["position"], dtype=np.int64) - 1
    X = np.zeros((s, k, len(feats)))
    for j, f in enumerate(feats):
        X[lst, pos0, j] = np.nan_to_num(np.asarray(res[f], dtype=float))
    clicks = np.zeros((s, k))
    clicks[lst, pos0] = np.asarray(res["click"], dtype=float)
    mask = np.zeros((s, k), dtype=bool)
    mask[lst, pos0] = True
    group = np.zeros(s, dtype=np.int64)
    group[lst] = np.asarray(res["grp"], dtype=np.int64)
    return ListStats(X=X, clicks=clicks, mask=mask, group=group, positions=k,
                     rows=int(mask.sum()), lists_total=n_lists, features=tuple(feats))


@dataclass
class DLAFit:
    theta: np.ndarray  # relative
    g: np.ndarray
    params: dict
    loss: tuple  # (ipw, irw) per step


def _standardize(X, mask):
    x = X[mask]
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return np.where(mask[..., None], (X - mu) / sd, 0.0)


def _masked_log_softmax(z, mask):
    z = np.where(mask, z, -np.inf)
    m = z.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    return np.where(mask, z - lse, 0.0)


def losses_and_grads(params: dict, g: np.ndarray, X2: np.ndarray, mask: np.ndarray,
                     cw: np.ndarray, *, max_weight: float = 100.0):
    """IPW loss of the ranker, IRW loss of the propensity logits, and their gradients.

    ``X2`` holds the features of the S x K slots as rows (S*K, P); ``cw`` the
    (weighted) clicks (S, K). Each loss's weights come from the other model and
    are held constant (no gradient flows through them). Returns
    ``(loss_f, loss_g, grads)`` with ``grads`` keyed like ``params`` plus "g".
    """
    s, k = mask.shape
    hidden = "W1" in params
    if hidden:
        H = np.tanh(X2 @ params["W1"] + params["b1"])  # (S*K, h)
        f = (H @ params["w2"]).reshape(s, k).astype(float)
    else:
        f = (X2 @ params["w"]).reshape(s, k).astype(float)
    lsm_f = _masked_log_softmax(f, mask)
    lsm_g = _masked_log_softmax(np.broadcast_to(g, (s, k)), mask)
    pw = np.clip(np.exp(g[0] - g), 0.0, max_weight)  # theta_1 / theta_k, (K,)
    rw = np.clip(np.exp(f[:, :1] - f), 0.0, max_weight)  # r_1 / r_i, (S, K)
    tf = cw * pw  # IPW targets for f
    tg = cw * rw  # IRW targets for g
    zf, zg = max(tf.sum(), 1e-12), max(tg.sum(), 1e-12)
    loss_f = float(-(tf * lsm_f).sum() / zf)
    loss_g = float(-(tg * lsm_g).sum() / zg)
    # Softmax cross-entropy: d/dz [-sum_i t_i log softmax(z)_i] = (sum t) softmax(z) - t.
    d_f = ((tf.sum(axis=1, keepdims=True) * np.exp(lsm_f) * mask - tf) / zf).ravel()
    d_g = ((tg.sum(axis=1, keepdims=True) * np.exp(lsm_g) * mask - tg) / zg).sum(axis=0)
    if hidden:
        d_pre = np.outer(d_f.astype(X2.dtype), params["w2"])
        d_pre *= 1.0 - H * H
        grads = {"w2": H.T @ d_f, "W1": X2.T @ d_pre, "b1": d_pre.sum(axis=0), "g": d_g}
    else:
        grads = {"w": X2.T @ d_f, "g": d_g}
    return loss_f, loss_g, grads


def dla(ls: ListStats, *, hidden: int = 8, steps: int = 150, lr: float = 0.05,
        max_weight: float = 100.0, seed: int = 0, list_weights=None, init: DLAFit | None = None,
        progress=None, should_stop=None) -> DLAFit:
    """Train the ranking MLP and the position logits jointly (full-batch Adam).

    ``hidden`` = 0 makes the ranker linear; on our simulated logs that is too
    rigid (relevance saturates in the features) and biases theta by ~0.2,
    while 8 tanh units get within ~0.02. ``list_weights`` (S,) reweights lists
    (bootstrap); ``init`` warm-starts. ``should_stop`` is checked every step
    (:class:`ulr.errors.Cancelled`).
    """
    rng = np.random.default_rng(seed)
    Xs = _standardize(ls.X, ls.mask)
    s, k, p = Xs.shape
    X2 = Xs.reshape(s * k, p).astype(np.float32)  # float32 halves the memory traffic
    c = ls.clicks * ls.mask
    lw = np.ones(s) if list_weights is None else np.asarray(list_weights, dtype=float)
    cw = c * lw[:, None]
    if init is not None:
        params = {key: v.copy() for key, v in init.params.items()}
        g = init.g.copy()
    elif hidden:
        params = {"W1": rng.normal(0.0, 1.0 / np.sqrt(p), (p, hidden)).astype(np.float32),
                  "b1": np.zeros(hidden, dtype=np.float32),
                  "w2": rng.normal(0.0, 0.1 / np.sqrt(hidden), hidden).astype(np.float32)}
        g = np.zeros(k)
    else:
        params = {"w": rng.normal(0.0, 0.1 / np.sqrt(p), p)}
        g = np.zeros(k)
    adam = {key: (np.zeros_like(v), np.zeros_like(v)) for key, v in
            {**params, "g": g}.items()}
    b1m, b2m, eps = 0.9, 0.999, 1e-8
    losses = []
    for t in range(1, int(steps) + 1):
        check(should_stop)
        loss_f, loss_g, grads = losses_and_grads(params, g, X2, ls.mask, cw,
                                                 max_weight=max_weight)
        losses.append((loss_f, loss_g))
        # Adam.
        for key, grad in grads.items():
            m, v = adam[key]
            m *= b1m
            m += (1 - b1m) * grad
            v *= b2m
            v += (1 - b2m) * grad ** 2
            step = lr * (m / (1 - b1m ** t)) / (np.sqrt(v / (1 - b2m ** t)) + eps)
            if key == "g":
                g = g - step
            else:
                params[key] = (params[key] - step).astype(params[key].dtype)
        if progress is not None and t % 20 == 0:
            progress(t / steps, f"DLA step {t}/{steps}")
    theta = np.exp(g - g[0])
    return DLAFit(theta=theta, g=g, params=params, loss=tuple(losses))


@validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def run(scan, *, positions=None, n_bootstrap: int = 0, seed=0, assume_randomized: bool = False,
        progress=None, level: float = 0.95, steps: int = 150, bootstrap_steps: int = 50,
        should_stop=None):
    from ulr.propensity import bootstrap as bs
    from ulr.propensity.result import PropensityResult

    prog = bs.Progress(progress)
    prog(0.02, "collecting clicked result lists in SQL")
    ls = collect(scan, positions=positions, seed=seed)
    end = 0.5 if n_bootstrap else 0.98
    fit = dla(ls, steps=steps, seed=seed, progress=prog.sub(0.1, end), should_stop=should_stop)
    notes = ["DLA is sensitive to initialization (see the method's documentation); "
             "compare seeds before relying on small differences."]
    if ls.lists_total > ls.X.shape[0]:
        notes.append(f"trained on a random {ls.X.shape[0]:,} of {ls.lists_total:,} clicked "
                     "lists.")
    lower = upper = None
    if n_bootstrap > 0:
        notes.append(f"each bootstrap replicate retrains for {bootstrap_steps} steps from the "
                     "point estimate.")

        def one(w):
            return dla(ls, steps=bootstrap_steps, seed=seed, list_weights=w[ls.group],
                       init=fit, should_stop=should_stop).theta
        from ulr.data.scan import N_GROUPS
        samples = bs.replicate(one, n_groups=N_GROUPS, n_bootstrap=n_bootstrap, seed=seed,
                               progress=prog.sub(end, 1.0), should_stop=should_stop)
        lower, upper, more = bs.standard_interval(samples, fit.theta, level)
        notes += more
    return PropensityResult.build(
        method="dla", positions=ls.positions, theta=fit.theta, lower=lower, upper=upper,
        rows_used=ls.rows, notes=notes,
        extras={"lists": int(ls.X.shape[0]), "steps": steps,
                "final_ipw_loss": fit.loss[-1][0], "final_irw_loss": fit.loss[-1][1]},
        n_bootstrap=n_bootstrap, level=level)
