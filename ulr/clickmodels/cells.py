"""Cell counts for the models whose rows are independent given earlier clicks (PBM, UBM).

``bincount`` over the session matrices: weighted impressions and clicks per
(pair, rank, previous-click rank). The EM then iterates over these cells,
never over rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels.base import prev_click_rank


@dataclass(frozen=True)
class Cells:
    pair: np.ndarray
    rank: np.ndarray  # 1..K
    prev: np.ndarray  # 0..rank-1
    n: np.ndarray  # weighted impressions
    c: np.ndarray  # weighted clicks


def cells(S, w: np.ndarray, *, with_prev: bool) -> Cells:
    K = S.ranks
    m = S.mask
    r = np.broadcast_to(np.arange(1, K + 1), S.pair.shape)
    prev = prev_click_rank(S.click) if with_prev else np.zeros_like(S.pair)
    key = (S.pair.astype(np.int64) * K + (r - 1)) * (K + 1) + prev
    key, clk = key[m], S.click[m]
    wr = np.broadcast_to(w[:, None], S.pair.shape)[m]
    uniq, inv = np.unique(key, return_inverse=True)
    n = np.bincount(inv, wr, minlength=len(uniq))
    c = np.bincount(inv, wr * clk, minlength=len(uniq))
    keep = n > 0
    uniq, n, c = uniq[keep], n[keep], c[keep]
    prev_u = uniq % (K + 1)
    rest = uniq // (K + 1)
    return Cells(pair=rest // K, rank=rest % K + 1, prev=prev_u, n=n, c=c)
