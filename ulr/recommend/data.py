"""Explicit ratings missing not at random (MNAR), with a small uniformly exposed slice.

The world (in the spirit of Schnabel et al. 2016's semi-synthetic setting and
of Yahoo! R3 / Coat, which pair MNAR training ratings with uniformly sampled
test ratings):

- true preferences: every user rates every item, ``Y = cut(b_u + b_i + U_u @ V_i + noise)``
  into 1..5 stars with fixed shares (30/25/20/15/10% from 1 to 5 stars);
- logging exposure: ``P(O_ui = 1) = sigmoid(a + alpha (Y_ui - 3) + gamma pop_i)``,
  so liked items and popular items are rated far more often (``a`` solved for
  ``observed_fraction``);
- a randomized slice: uniformly random (user, item) pairs, ``random_share``
  (~3%) of the training ratings;
- test: uniformly random pairs of the full matrix (outside the randomized
  slice; a few were also logged, as in any uniform sample); validation: a share
  of the MNAR ratings (for the naive and IPS criteria) and of the randomized
  slice (for CausE's criterion).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from ulr.errors import UlrError

STAR_SHARES = (0.30, 0.25, 0.20, 0.15, 0.10)


@dataclass(frozen=True)
class Ratings:
    """A set of (user, item, rating) triples with the logging exposure probability."""

    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray
    exposure: np.ndarray  # true P(observed) of the pair (MNAR logging + the random slice)

    def __post_init__(self):
        n = len(self.user)
        for name in ("item", "rating", "exposure"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} needs one entry per rating")

    def __len__(self) -> int:
        return len(self.user)

    def frame(self, split: str) -> pd.DataFrame:
        return pd.DataFrame({"split": split, "user": self.user, "item": self.item,
                             "rating": self.rating, "exposure": self.exposure})


@dataclass(frozen=True)
class MNARData:
    """Training, validation and test ratings of one simulated world.

    ``biased`` / ``biased_val``: MNAR-logged ratings (train / validation);
    ``random`` / ``random_val``: the uniformly exposed slice (train / validation);
    ``test``: uniformly sampled pairs. ``truth`` is the full (users x items) matrix.
    """

    users: int
    items: int
    biased: Ratings
    biased_val: Ratings
    random: Ratings
    random_val: Ratings
    test: Ratings
    truth: np.ndarray
    settings: dict

    def summary(self) -> dict:
        obs = np.r_[self.biased.rating, self.biased_val.rating]
        return {"users": self.users, "items": self.items,
                "mnar_ratings": int(len(obs)),
                "random_ratings": int(len(self.random) + len(self.random_val)),
                "random_share": (len(self.random) + len(self.random_val))
                / (len(obs) + len(self.random) + len(self.random_val)),
                "test_ratings": int(len(self.test)),
                "mean_rating_mnar": float(obs.mean()),
                "mean_rating_uniform": float(self.truth.mean()),
                "mean_rating_test": float(self.test.rating.mean())}

    def frame(self) -> pd.DataFrame:
        """All ratings in one long frame with a ``split`` column (for download)."""
        return pd.concat([self.biased.frame("mnar-train"), self.biased_val.frame("mnar-val"),
                          self.random.frame("random-train"), self.random_val.frame("random-val"),
                          self.test.frame("test")], ignore_index=True)


def simulate_mnar(*, users: int = 400, items: int = 300, rank: int = 5,
                  observed_fraction: float = 0.05, alpha: float = 1.0, gamma: float = 0.5,
                  random_share: float = 0.03, test_fraction: float = 0.05,
                  val_fraction: float = 0.1, random_val_fraction: float = 0.3,
                  noise: float = 0.5, seed=0) -> MNARData:
    """Simulate MNAR ratings with a uniformly exposed slice (see module docstring).

    Parameters
    ----------
    users, items, rank : size of the preference matrix and its latent rank.
    observed_fraction : share of all pairs the logging policy exposes.
    alpha : exposure log-odds per star above 3 (0 = missing at random).
    gamma : exposure log-odds per standard deviation of item popularity.
    random_share : share of the training ratings that were exposed uniformly at random.
    test_fraction : share of all pairs in the uniform test set.
    val_fraction : share of the MNAR ratings held out for validation.
    random_val_fraction : share of the random slice held out for validation.
    noise : standard deviation of the rating noise (latent scale).
    """
    if users < 10 or items < 10 or rank < 1:
        raise UlrError("the rating matrix needs at least 10 users, 10 items and rank >= 1.")
    for name, v in (("observed_fraction", observed_fraction), ("random_share", random_share),
                    ("test_fraction", test_fraction), ("val_fraction", val_fraction),
                    ("random_val_fraction", random_val_fraction)):
        if not 0 < v < 1:
            raise UlrError(f"{name} must lie strictly between 0 and 1.")
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((users, rank)) / np.sqrt(rank)
    V = rng.standard_normal((items, rank))
    latent = (0.5 * rng.standard_normal(users)[:, None] + 0.5 * rng.standard_normal(items)[None, :]
              + U @ V.T + noise * rng.standard_normal((users, items)))
    cuts = np.quantile(latent, np.cumsum(STAR_SHARES)[:-1])
    Y = (np.searchsorted(cuts, latent) + 1).astype(float)  # 1..5 stars
    pop = rng.standard_normal(items)
    logit = alpha * (Y - 3) + gamma * pop[None, :]
    lo, hi = -30.0, 30.0
    for _ in range(80):  # intercept giving the wanted observed fraction
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expit(mid + logit).mean() < observed_fraction else (lo, mid)
    p_mnar = expit((lo + hi) / 2 + logit)
    O = rng.random((users, items)) < p_mnar
    n_obs = int(O.sum())
    n_rand = max(10, int(round(random_share / (1 - random_share) * n_obs)))
    # missing completely at random: any pair, logged or not (a few are rated twice)
    rand_idx = rng.choice(users * items, size=n_rand, replace=False)
    p_rand = n_rand / (users * items)
    # the test set is a uniform sample of the full matrix (so it may include pairs the
    # logging policy exposed); only the randomized slice is kept out of it
    taken = np.zeros(users * items, dtype=bool)
    taken[rand_idx] = True
    free = np.flatnonzero(~taken)
    n_test = int(round(test_fraction * users * items))
    if n_test > len(free):
        raise UlrError("the test fraction is too large.")
    test_idx = rng.choice(free, size=n_test, replace=False)
    P = p_mnar + p_rand  # exposure of a pair in the training data (either route)

    def ratings(idx):
        u, i = np.divmod(idx, items)
        return Ratings(user=u, item=i, rating=Y.ravel()[idx], exposure=P.ravel()[idx])

    obs_idx = rng.permutation(np.flatnonzero(O.ravel()))
    n_val = int(round(val_fraction * len(obs_idx)))
    rand_idx = rng.permutation(rand_idx)
    n_rval = max(1, int(round(random_val_fraction * len(rand_idx))))
    settings = dict(users=users, items=items, rank=rank, observed_fraction=observed_fraction,
                    alpha=alpha, gamma=gamma, random_share=random_share,
                    test_fraction=test_fraction, val_fraction=val_fraction,
                    random_val_fraction=random_val_fraction, noise=noise, seed=seed)
    return MNARData(users=users, items=items, biased=ratings(obs_idx[n_val:]),
                    biased_val=ratings(obs_idx[:n_val]), random=ratings(rand_idx[n_rval:]),
                    random_val=ratings(rand_idx[:n_rval]), test=ratings(test_idx), truth=Y,
                    settings=settings)
