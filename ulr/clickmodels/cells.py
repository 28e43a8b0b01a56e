"""Cell counts for the models whose rows are independent given earlier clicks (PBM, UBM).

Weighted impressions and clicks per (pair, rank, previous-click rank). When the cell
index space is small against the log (``DENSE_FACTOR``), one compiled pass over the
session matrices adds each slot's weight into dense arrays
(:func:`ulr.clickmodels.cells_jit.dense_cells`); otherwise numpy makes each block's keys
unique (``base.CHUNK`` sessions at a time) and merges them, so the temporaries stay small
whatever the log's size. The EM then iterates over these cells, never over rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base

DENSE_FACTOR = 4  # dense sums when the cell index space is at most this many slots per row


@dataclass(frozen=True)
class Cells:
    pair: np.ndarray
    rank: np.ndarray  # 1..K
    prev: np.ndarray  # 0..rank-1
    n: np.ndarray  # weighted impressions
    c: np.ndarray  # weighted clicks


def _keys(C, K: int, with_prev: bool) -> np.ndarray:
    r = np.arange(K, dtype=np.int64)[None, :]
    key = C.pair.astype(np.int64) * K + r
    key *= K + 1
    if with_prev:
        key += base.prev_click_rank(C.click)
    return key


def cells(S, w: np.ndarray, *, with_prev: bool) -> Cells:
    K = S.ranks
    span = S.n_pairs * K * (K + 1)
    if span <= DENSE_FACTOR * S.pair.size:  # index space small enough for dense sums
        from ulr.clickmodels.cells_jit import dense_cells  # compiled: one pass, no temporaries
        n_acc, c_acc = dense_cells(np.ascontiguousarray(S.pair), np.ascontiguousarray(S.click),
                                   np.ascontiguousarray(w, dtype=float), K, span, with_prev)
        uniq = np.flatnonzero(n_acc > 0)
        n, c = n_acc[uniq], c_acc[uniq]
        del n_acc, c_acc  # 16 bytes a cell slot (176 MB for 100k pairs of 10 ranks): free now
    else:  # sparse: the keys of each block made unique, then merged
        parts = []
        for C, wc in base.chunks(S, w):
            m = C.mask
            key = _keys(C, K, with_prev)[m]
            wr = np.broadcast_to(wc[:, None], m.shape)[m]
            u, inv = np.unique(key, return_inverse=True)
            parts.append((u, np.bincount(inv, wr, minlength=len(u)),
                          np.bincount(inv, wr * C.click[m], minlength=len(u))))
        allk = np.concatenate([p[0] for p in parts])
        uniq, inv = np.unique(allk, return_inverse=True)
        n = np.bincount(inv, np.concatenate([p[1] for p in parts]), minlength=len(uniq))
        c = np.bincount(inv, np.concatenate([p[2] for p in parts]), minlength=len(uniq))
        keep = n > 0
        uniq, n, c = uniq[keep], n[keep], c[keep]
    prev_u = uniq % (K + 1)
    rest = uniq // (K + 1)
    return Cells(pair=rest // K, rank=rest % K + 1, prev=prev_u, n=n, c=c)
