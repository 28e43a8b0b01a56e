"""What position-bias estimators add to the cell statistics of :mod:`ulr.data.scan`.

The log handle (:class:`~ulr.data.scan.Scan`) and the cell statistics every estimator
and engine aggregates live in :mod:`ulr.data.scan`, the per-position summaries in
:mod:`ulr.data.summary`. This module holds what only estimation needs:
whether the positions are identified (:func:`connected_to_top`), the log's counts per
position read off the cells (:func:`position_counts`) and the Poisson bootstrap weights
(:func:`poisson_weights`).
"""

from __future__ import annotations

import numpy as np

from ulr.data.scan import CellStats


def position_counts(stats: CellStats, positions: int | None) -> dict:
    """``clicks`` and ``impressions`` per position of the whole log, from its cells: the
    counts a result's verdict weighs (:class:`ulr.propensity.result.PropensityResult`),
    without a second scan of the log. Empty when ``positions`` cut the cells to 1..K, which
    then no longer hold every row."""
    if positions is not None:
        return {}
    # the rows of ulr.data.summary.ctr_by_position (positions with impressions), without
    # its table: building that imported pandas and scipy.stats on the estimate's path
    imp, clk = stats.by_position()
    ok = imp > 0
    return {"clicks": np.nan_to_num(clk[ok]).astype(np.int64),
            "impressions": imp[ok].astype(np.int64)}


def connected_to_top(stats: CellStats) -> np.ndarray:
    """Positions linked to position 1 through pairs shown at several positions.

    theta_k / theta_1 is identified from position effects only when a chain of
    (query, doc) pairs connects k to 1; otherwise position and relevance are
    confounded. Returns a boolean mask over positions 1..K.
    """
    k = stats.positions
    seen = stats.impressions > 0
    pair, pos = stats.pair[seen], stats.position[seen] - 1
    key = pair * k + pos
    if np.any(key[1:] < key[:-1]):  # cells usually come sorted (ulr.data.scan.cell_order)
        order = np.lexsort((pos, pair))
        pair, pos = pair[order], pos[order]
    same = pair[1:] == pair[:-1]
    edges = np.flatnonzero(np.bincount(pos[:-1][same] * k + pos[1:][same], minlength=k * k))
    parent = list(range(k))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for e in edges.tolist():  # at most K^2 distinct edges
        ra, rb = find(e // k), find(e % k)
        if ra != rb:
            parent[rb] = ra
    root = find(0)
    return np.array([find(i) == root for i in range(k)])


# --------------------------------------------------------------------------- weights


def poisson_weights(n_replicates: int, n_groups: int, seed) -> np.ndarray:
    """Poisson(1) bootstrap weights, one row per replicate."""
    rng = np.random.default_rng(seed)
    return rng.poisson(1.0, size=(int(n_replicates), int(n_groups))).astype(float)
