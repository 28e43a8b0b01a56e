"""Position bias from result randomization (RandTopN) and swap interventions (RandPair).

RandTopN
    When a list is shown in uniformly random order, every position sees the
    same mix of documents, so the CTR at position k is ``theta_k`` times one
    common average attractiveness and

        theta_k / theta_1 = CTR_k / CTR_1        (over the randomized rows).

    (Joachims, Swaminathan & Schnabel, "Unbiased learning-to-rank with biased
    feedback", WSDM 2017; Wang et al., "Learning to rank with selection bias
    in personal search", SIGIR 2016.)

RandPair (swap interventions)
    Wang et al., "Position bias estimation for unbiased learning to rank in
    personal search", WSDM 2018: the production list is shown, except
    that the documents at a pivot position j (usually 1) and at one other
    position k are swapped with probability 1/2. Over the sessions of the pair
    (j, k) both documents sit at j and at k equally often, so

        theta_k / theta_j = clicks at k / clicks at j      (over those sessions).

How a log marks them
    ``randomized`` is a per-row flag: it marks the rows whose position was
    randomized. A session whose randomized rows are exactly two, at positions
    j < k, is a swap intervention on (j, k) (its other rows are the production
    order). Every other randomized row (a fully randomized list, or the
    randomized top N of a longer list) counts as RandTopN. Rows without a
    ``session_id`` cannot form pairs and count as RandTopN. With
    ``assume_randomized`` every row counts as RandTopN.

Combining
    With only RandTopN rows the estimate is the CTR ratio above, exactly; with
    only pivot-1 pairs it is the click ratio per pair, exactly. When both kinds
    (or pairs on other pivots) are present, theta is the maximum-likelihood
    fit of the Poisson model ``clicks ~ impressions * theta_k * a_source``
    with one average attractiveness ``a`` for the RandTopN rows and one per
    swapped pair, fitted by alternating closed-form updates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr import validate
from ulr.errors import NeedsRandomizedRows, UlrError, check
from ulr.data.scan import N_GROUPS, Scan, bucket_sql, max_position, require_table, resolve_positions


@dataclass(frozen=True)
class RandStats:
    """Click statistics of randomized rows, optionally per bootstrap bucket.

    Arrays carry a leading bucket axis of length ``G`` (1 without buckets).
    ``impressions``/``clicks`` (G, K): RandTopN rows per position.
    ``sessions``/``clicks_j``/``clicks_k`` (G, P): swap sessions per pair (j, k).
    """

    positions: int
    impressions: np.ndarray
    clicks: np.ndarray
    pair_j: np.ndarray  # (P,) 1-based
    pair_k: np.ndarray
    sessions: np.ndarray
    clicks_j: np.ndarray
    clicks_k: np.ndarray

    @property
    def rows(self) -> int:
        return int(round(self.impressions.sum() + 2 * self.sessions.sum()))

    @property
    def n_groups(self) -> int:
        return self.impressions.shape[0]


def collect(scan: Scan, *, positions: int | None = None, groups: bool = False,
            assume_randomized: bool = False) -> RandStats:
    """One SQL statement: randomized rows per (bucket, position) and per swapped pair."""
    require_table(scan, "randomization")
    k = resolve_positions(scan, positions, max_position(scan))
    grp = bucket_sql(scan) if groups else "0"
    g_count = N_GROUPS if groups else 1
    if assume_randomized:
        sql = (f"SELECT 0 AS kind, grp, position AS j, position AS k, count(*) AS n, "
               f"sum(CAST(click AS INTEGER)) AS cj, 0 AS ck "
               f"FROM (SELECT {grp} AS grp, position, click FROM {{src}}) AS t "
               f"WHERE position <= $ulr_k GROUP BY grp, position")
    else:
        if not scan.has("randomized"):
            raise NeedsRandomizedRows(f"the log {scan.name!r} has no 'randomized' column, so it holds no "
                           "randomized rows; set assume_randomized if every list was shown "
                           "in random order, or use another method.")
        if scan.has("session_id"):
            rr = (f"SELECT {grp} AS grp, session_id, position, CAST(click AS INTEGER) AS click, "
                  "count(*) OVER (PARTITION BY session_id) AS r, "
                  "min(position) OVER (PARTITION BY session_id) AS j, "
                  "max(position) OVER (PARTITION BY session_id) AS k "
                  "FROM {src} WHERE randomized")
            is_pair = "session_id IS NOT NULL AND r = 2 AND j < k"
        else:
            rr = (f"SELECT {grp} AS grp, position, CAST(click AS INTEGER) AS click, "
                  "0 AS r, position AS j, position AS k FROM {src} WHERE randomized")
            is_pair = "false"
        sql = (f"WITH rr AS ({rr}) "
               f"SELECT 0 AS kind, grp, position AS j, position AS k, count(*) AS n, "
               f"sum(click) AS cj, 0 AS ck FROM rr WHERE NOT ({is_pair}) AND position <= $ulr_k "
               f"GROUP BY grp, position "
               f"UNION ALL "
               f"SELECT 1 AS kind, grp, j, k, count(*) / 2 AS n, "
               f"sum(CASE WHEN position = j THEN click ELSE 0 END) AS cj, "
               f"sum(CASE WHEN position = k THEN click ELSE 0 END) AS ck "
               f"FROM rr WHERE {is_pair} AND k <= $ulr_k GROUP BY grp, j, k")
    res = scan.execute(sql, {"ulr_k": k}).fetchnumpy()
    kind = np.asarray(res["kind"], dtype=np.int64)
    g = np.asarray(res["grp"], dtype=np.int64)
    j = np.asarray(res["j"], dtype=np.int64)
    kk = np.asarray(res["k"], dtype=np.int64)
    n = np.asarray(res["n"], dtype=float)
    cj = np.nan_to_num(np.asarray(res["cj"], dtype=float))
    ck = np.nan_to_num(np.asarray(res["ck"], dtype=float))
    if len(kind) == 0 or n.sum() == 0:
        raise NeedsRandomizedRows(f"the log {scan.name!r} has no randomized rows (randomized = 1) in "
                       f"positions 1..{k}; randomization needs some, or assume_randomized "
                       "if every list was shown in random order.")
    top = kind == 0
    imp = np.zeros((g_count, k))
    clk = np.zeros((g_count, k))
    np.add.at(imp, (g[top], j[top] - 1), n[top])
    np.add.at(clk, (g[top], j[top] - 1), cj[top])
    pairs = ~top
    codes = (j[pairs] - 1) * k + (kk[pairs] - 1)
    uniq, inv = np.unique(codes, return_inverse=True)
    p = len(uniq)
    sess = np.zeros((g_count, p))
    c_j = np.zeros((g_count, p))
    c_k = np.zeros((g_count, p))
    np.add.at(sess, (g[pairs], inv), n[pairs])
    np.add.at(c_j, (g[pairs], inv), cj[pairs])
    np.add.at(c_k, (g[pairs], inv), ck[pairs])
    return RandStats(positions=k, impressions=imp, clicks=clk, pair_j=uniq // k + 1,
                     pair_k=uniq % k + 1, sessions=sess, clicks_j=c_j, clicks_k=c_k)


def fit_many(stats: RandStats, weights: np.ndarray | None = None, *, max_iter: int = 2000,
             tol: float = 1e-13) -> np.ndarray:
    """Relative theta for each row of bucket ``weights`` (B, G); (1, K) without weights.

    Vectorized over replicates. A replicate whose reference position has no
    clicks gives inf (or NaN where both counts are 0), never a false number.
    """
    if weights is None:
        w = np.ones((1, stats.n_groups))
    else:
        w = np.atleast_2d(np.asarray(weights, dtype=float))
    n = w @ stats.impressions  # (B, K)
    c = w @ stats.clicks
    s = w @ stats.sessions  # (B, P)
    cj = w @ stats.clicks_j
    ck = w @ stats.clicks_k
    k = stats.positions
    j_idx, k_idx = stats.pair_j - 1, stats.pair_k - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        if len(j_idx) == 0:  # RandTopN only: the CTR ratio
            ctr = c / n
            return ctr / ctr[:, :1]
        if n.sum() == 0 and np.all(j_idx == 0):  # pivot-1 pairs only: the click ratio
            theta = np.full(n.shape, np.nan)
            theta[:, 0] = 1.0
            theta[:, k_idx] = ck / cj
            return theta
        return _poisson_ml(n, c, s, cj, ck, j_idx, k_idx, k, max_iter, tol)


def _poisson_ml(n, c, s, cj, ck, j_idx, k_idx, k, max_iter, tol):
    """ML of clicks ~ Poisson(exposure * theta_pos * a_source), alternating updates."""
    b_count = n.shape[0]
    inc_j = np.zeros((len(j_idx), k))
    inc_j[np.arange(len(j_idx)), j_idx] = 1.0
    inc_k = np.zeros((len(k_idx), k))
    inc_k[np.arange(len(k_idx)), k_idx] = 1.0
    num = c + cj @ inc_j + ck @ inc_k  # clicks per position (all sources)
    seen = (n + s @ inc_j + s @ inc_k) > 0
    theta = np.ones((b_count, k))
    for _ in range(int(max_iter)):
        a = c.sum(axis=1) / np.maximum((n * theta).sum(axis=1), 1e-300)
        b = (cj + ck) / np.maximum(s * (theta[:, j_idx] + theta[:, k_idx]), 1e-300)
        den = n * a[:, None] + (s * b) @ inc_j + (s * b) @ inc_k
        new = num / den
        new = new / new[:, :1]
        new[~seen] = np.nan
        if np.nanmax(np.abs(new - theta)) < tol:
            theta = new
            break
        theta = np.where(np.isfinite(new), new, 1.0)
    theta = np.where(seen, theta, np.nan)
    return theta


def check_point(stats: RandStats, theta: np.ndarray) -> list[str]:
    """Refuse an undefined estimate; notes on positions without data."""
    notes = []
    n1 = stats.impressions[:, 0].sum() + stats.sessions[:, stats.pair_j == 1].sum()
    c1 = stats.clicks[:, 0].sum() + stats.clicks_j[:, stats.pair_j == 1].sum()
    if n1 == 0:
        raise UlrError("the randomized rows never show position 1, so theta relative to "
                       "position 1 is undefined.")
    if c1 == 0:
        raise UlrError("the randomized rows have no clicks at position 1, so theta relative "
                       "to position 1 is undefined; more randomized traffic is needed.")
    missing = [i + 1 for i in range(stats.positions) if not np.isfinite(theta[i])]
    if missing:
        notes.append(f"no randomized data at position(s) {', '.join(map(str, missing))}; "
                     "their theta is left empty.")
    if len(stats.pair_j):
        notes.append(f"{int(stats.sessions.sum())} swap-intervention sessions over "
                     f"{len(stats.pair_j)} position pair(s) were used.")
    return notes


@validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def run(scan: Scan, *, positions=None, n_bootstrap: int = 0, seed=0,
        assume_randomized: bool = False, progress=None, level: float = 0.95,
        should_stop=None):
    """Estimate theta from randomized rows (see the module docstring)."""
    from ulr.propensity import bootstrap as bs
    from ulr.propensity.result import PropensityResult

    prog = bs.Progress(progress)
    prog(0.02, "aggregating randomized rows in SQL")
    stats = collect(scan, positions=positions, groups=n_bootstrap > 0,
                    assume_randomized=assume_randomized)
    check(should_stop)
    theta = fit_many(stats)[0]
    notes = check_point(stats, theta)
    if assume_randomized:
        notes.insert(0, "every row was treated as randomized (assume_randomized).")
    lower = upper = None
    if n_bootstrap > 0:
        samples = bs.replicate(lambda w: fit_many(stats, w), n_groups=stats.n_groups,
                               n_bootstrap=n_bootstrap, seed=seed, progress=prog.sub(0.1, 1.0),
                               batch=256, should_stop=should_stop)
        lower, upper, more = bs.standard_interval(samples, theta, level)
        notes += more
    n_k = stats.impressions.sum(axis=0)
    c_k = stats.clicks.sum(axis=0)
    extras = {"randomized_impressions": n_k.tolist(), "randomized_clicks": c_k.tolist()}
    if len(stats.pair_j):
        extras["swap_pairs"] = [
            {"j": int(j), "k": int(k), "sessions": float(s), "clicks_j": float(a),
             "clicks_k": float(b)}
            for j, k, s, a, b in zip(stats.pair_j, stats.pair_k, stats.sessions.sum(0),
                                     stats.clicks_j.sum(0), stats.clicks_k.sum(0))]
    return PropensityResult.build(method="randomization", positions=stats.positions, theta=theta,
                            lower=lower, upper=upper, rows_used=stats.rows, notes=notes,
                            extras=extras, n_bootstrap=n_bootstrap, level=level)
