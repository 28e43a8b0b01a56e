"""CascadeLinUCB and CascadeLinTS (Zong et al. 2016): attraction linear in item features."""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf

from ulr.bandits.policies.base import Policy
from ulr.bandits.policies.linalg import sequential_rank1_update
from ulr.errors import UlrError


# --------------------------------------------------------------------------- linear
class _LinearPolicy(Policy):
    """Shared statistics of CascadeLinUCB / CascadeLinTS (Zong et al. 2016).

    ``M = I_d + sigma^-2 sum x x'`` over observed items (only its inverse is
    stored, shape (R, d, d)) and ``B = sum x * click``; ``theta_bar = sigma^-2 M^-1 B``.
    """

    default_sigma = 1.0

    def __init__(self, *, features, sigma: float | None = None, **kw):
        super().__init__(**kw)
        x = np.ascontiguousarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] != self.n_items:
            raise UlrError("Linear bandits need one feature row per item.")
        sigma = self.default_sigma if sigma is None else sigma
        if not sigma > 0:
            raise UlrError(f"sigma must be positive, got {sigma}.")
        self.x = x
        self._xt = np.ascontiguousarray(x.T)
        self.d = x.shape[1]
        self.sigma = float(sigma)
        self._scale = self.sigma ** -2
        self.m_inv = np.broadcast_to(np.eye(self.d), (self.runs, self.d, self.d)).copy()
        self.b = np.zeros((self.runs, self.d))
        self._buf = np.empty((self.runs, self.n_items))

    def theta_bar(self) -> np.ndarray:
        """Posterior mean ``sigma^-2 M^-1 B``, shape (R, d)."""
        return np.matmul(self.m_inv, self.b[:, :, None])[:, :, 0] * self._scale

    def update(self, lists, observed, clicks):
        if self.runs == 1:
            return self._update_one(lists[0], observed[0], clicks[0])
        # several runs: the rank-1 updates of the observed items of a step, applied
        # together (identical result, one small solve instead of K rounds)
        depth = int(observed.sum(axis=1).max())   # observations are a prefix of the list
        xs = self.x[lists[:, :depth]]              # (R, depth, d)
        sequential_rank1_update(self.m_inv, xs, scale=self._scale, mask=observed[:, :depth])
        self.b += np.matmul(clicks[:, None, :depth].astype(np.float64), xs)[:, 0, :]

    def _update_one(self, items, observed, clicks):
        """One run: a Sherman-Morrison rank-1 update per observed item, on 2-d arrays."""
        m_inv, b, sigma2 = self.m_inv[0], self.b[0], self.sigma ** 2
        for j in range(items.shape[0]):
            if not observed[j]:
                break                                   # observations are a prefix
            x = self.x[items[j]]
            u = m_inv @ x                               # M^-1 x
            m_inv -= np.multiply.outer(u / (sigma2 + float(x @ u)), u)
            if clicks[j]:
                b += x


class CascadeLinUCB(_LinearPolicy):
    """CascadeLinUCB: ``x_e' theta_bar + c sqrt(x_e' M^-1 x_e)``.

    Zong et al. cap the index at 1; the cap only creates ties and is left out.
    Their theory uses ``c = sigma^-1 sqrt(d log(1 + nK / (d sigma^2)) + 2 log(nK))
    + ||theta*||``; the default ``c = 1`` is the usual practical choice.
    """

    name = "cascade-linucb"

    def __init__(self, *, c: float = 1.0, **kw):
        super().__init__(**kw)
        if not c >= 0:
            raise UlrError(f"The exploration constant c must be >= 0, got {c}.")
        self.c = float(c)

    def scores(self, t, items=None):
        x = self.x if items is None else self.x[items]
        mean = self.theta_bar() @ (self._xt if items is None else x.T)
        xm = np.matmul(x, self.m_inv)                       # (R, n, d)
        width = np.einsum("rnd,nd->rn", xm, x)
        np.maximum(width, 0.0, out=width)
        return mean + self.c * np.sqrt(width)


class CascadeLinTS(_LinearPolicy):
    """CascadeLinTS: one ``theta ~ N(theta_bar, M^-1)`` per run and step.

    The sample is ``theta_bar + chol(M^-1) z`` with ``z ~ N(0, I_d)``; the items
    are then ranked by ``x_e' theta``, an (R, d) x (d, L) product.
    """

    name = "cascade-lints"
    default_sigma = 0.5  # clicks are Bernoulli, hence 1/2-sub-Gaussian

    def sample_theta(self) -> np.ndarray:
        """One draw ``theta ~ N(theta_bar, M^-1)`` per run, shape (R, d)."""
        if self.runs == 1:    # LAPACK potrf directly: a quarter of np.linalg's overhead
            chol, info = dpotrf(self.m_inv[0], lower=1, clean=1)
            chol = chol[None] if info == 0 else self._robust_sqrt()
        else:
            try:
                chol = np.linalg.cholesky(self.m_inv)
            except np.linalg.LinAlgError:
                chol = self._robust_sqrt()
        z = self.rng.standard_normal((self.runs, self.d, 1))
        v = np.matmul(self.m_inv, self.b[:, :, None])
        v *= self._scale
        v += np.matmul(chol, z)
        return v[:, :, 0]

    def _robust_sqrt(self) -> np.ndarray:
        """A square root of ``M^-1`` when rounding broke positive definiteness."""
        self.m_inv = 0.5 * (self.m_inv + self.m_inv.transpose(0, 2, 1))
        vals, vecs = np.linalg.eigh(self.m_inv)
        return vecs * np.sqrt(np.maximum(vals, 0.0))[:, None, :]

    def scores(self, t, items=None):
        theta = self.sample_theta()
        if items is not None:
            return theta @ self._xt[:, items]
        return np.matmul(theta, self._xt, out=self._buf)
