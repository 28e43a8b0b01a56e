"""Rank-1 and rank-m updates of inverse Gram matrices, batched over runs."""

from __future__ import annotations

import numpy as np


def sherman_morrison_update(m_inv: np.ndarray, x: np.ndarray, *, scale: float = 1.0,
                            mask: np.ndarray | None = None) -> None:
    """In-place rank-1 update ``M^-1 <- (M + scale x x')^-1`` for every run.

    Sherman-Morrison: with ``u = M^-1 x``,

        (M + s x x')^-1 = M^-1 - u u' / (1/s + x' u).

    Parameters
    ----------
    m_inv : ndarray of shape (R, d, d)
        Symmetric inverse Gram matrices, updated in place.
    x : ndarray of shape (R, d)
        One vector per run.
    scale : float
        ``s > 0`` (``sigma^-2`` in CascadeLinUCB/TS).
    mask : bool ndarray of shape (R,), optional
        Runs to update; the others are left unchanged.
    """
    u = np.matmul(m_inv, x[:, :, None])                       # (R, d, 1)
    denom = 1.0 / scale + np.matmul(x[:, None, :], u)[:, 0, 0]
    coef = 1.0 / denom
    if mask is not None:
        coef = coef * mask
    m_inv -= np.matmul(u * coef[:, None, None], u.transpose(0, 2, 1))


def sequential_rank1_update(m_inv: np.ndarray, xs: np.ndarray, *, scale: float = 1.0,
                            mask: np.ndarray | None = None) -> None:
    """In place: the ``m`` Sherman-Morrison steps ``M^-1 <- (M + scale x_j x_j')^-1``,
    ``j = 1..m``, for every run, applied together.

    The product of the sequential rank-1 updates equals the Woodbury identity

        (M + s X'X)^-1 = M^-1 - P (I/s + X M^-1 X')^-1 P',   P = M^-1 X',

    so one batched (m, m) solve per run replaces ``m`` rounds of (d, d) work.
    Masked-out vectors are zeroed and contribute nothing.

    Parameters
    ----------
    m_inv : ndarray of shape (R, d, d)
        Symmetric inverse Gram matrices, updated in place.
    xs : ndarray of shape (R, m, d)
        The vectors of each run.
    scale : float
        ``s > 0``.
    mask : bool ndarray of shape (R, m), optional
        Which vectors to add.
    """
    if mask is not None:
        xs = xs * mask[:, :, None]
    p = np.matmul(m_inv, xs.transpose(0, 2, 1))                 # (R, d, m)
    g = np.matmul(xs, p)                                         # (R, m, m)
    g[:, np.arange(xs.shape[1]), np.arange(xs.shape[1])] += 1.0 / scale
    m_inv -= np.matmul(p, np.linalg.solve(g, p.transpose(0, 2, 1)))
