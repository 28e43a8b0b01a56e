"""Bandit algorithms for ranking, every one batched over ``R`` independent runs.

Each policy keeps its statistics in arrays whose first axis is the run
(shape ``(R, L)`` for per-item statistics, ``(R, d, d)`` for Gram matrices)
and does O(R * L) numpy work per step, with no Python loop over items. The
simulation (:mod:`ulr.bandits.simulate`) loops over time only.

Interface (Open Bandit Pipeline style)::

    lists = policy.select(t)                 # (R, K) item indices, best first
    policy.update(lists, observed, clicks)   # cascade feedback, (R, K) bool each

Algorithms
----------
``cascade-ucb1``, ``cascade-klucb``
    Kveton, Szepesvari, Wen & Ashkan, "Cascading bandits: learning to rank in
    the cascade model", ICML 2015. Index ``w_hat + sqrt(1.5 log t / T)`` and
    the KL-UCB index with rate ``log t + 3 log log t``; both start with one
    free observation of every item.
``cascade-ts``
    Thompson sampling with a Beta(1, 1) prior per item and the Beta-Bernoulli
    posterior updated from cascade feedback (CascadeTS / "TS-Cascade with
    Beta updates", Zhong, Cheung & Tan, 2021).
``cascade-linucb``, ``cascade-lints``
    Zong, Ni, Sung, Ke, Wen & Kveton, "Cascading bandits for large-scale
    recommendation problems", UAI 2016: attraction ``x_e' theta``, Gram matrix
    ``M = I + sigma^-2 sum x x'``, ``theta_bar = sigma^-2 M^-1 B``.
    CascadeLinTS draws ONE ``theta ~ N(theta_bar, M^-1)`` per step (not one
    per item); CascadeLinUCB scores ``x' theta_bar + c sqrt(x' M^-1 x)``.
    ``M^-1`` is kept up to date with Sherman-Morrison rank-1 updates, one per
    observed item (for several runs the updates of one step are applied together
    through the equivalent Woodbury identity, see :func:`sequential_rank1_update`).
``ucb1``, ``ts``
    Plain multi-armed bandit algorithms (UCB1, Auer et al. 2002; Bernoulli
    Thompson sampling with Beta(1, 1) priors). With ``K = 1`` they are exactly
    the plain bandit: the arm is the one shown item and the reward its click.
    With ``K > 1`` they are applied as *ranked bandits* (Radlinski, Kleinberg
    & Joachims, ICML 2008): one independent bandit per position; the bandit of
    position ``k`` picks the best-index item not already placed above it and
    is rewarded 1 if the user clicked at position ``k``, else 0. They ignore
    the cascade structure (an unexamined position counts as "no click"), which
    is what the cascade algorithms improve on.

Modules: :mod:`.base` (interface, top-K, feedback), :mod:`.counting` (CascadeUCB1,
CascadeKL-UCB, CascadeTS), :mod:`.klucb_solver` (the KL-UCB index),
:mod:`.klucb_jit` (its compiled many-run path, imported on demand), :mod:`.ranked`,
:mod:`.linear` and :mod:`.linalg` (their shared inverse-Gram updates).
"""

from __future__ import annotations

import numpy as np

from ulr.bandits.policies.base import (ALGORITHMS, LINEAR_ALGORITHMS, MAX_ONE_HOT_ITEMS, Policy,
                                       cascade_feedback, topk)
from ulr.bandits.policies.counting import CascadeKLUCB, CascadeTS, CascadeUCB1, _has_numba
from ulr.bandits.policies.klucb_solver import (_klucb_slope, klucb_index, klucb_index_one,
                                               klucb_rate, klucb_start, klucb_start_one)
from ulr.bandits.policies.linalg import sequential_rank1_update, sherman_morrison_update
from ulr.bandits.policies.linear import CascadeLinTS, CascadeLinUCB
from ulr.bandits.policies.ranked import RankedTS, RankedUCB1
from ulr import validate
from ulr.errors import UlrError

__all__ = ["ALGORITHMS", "LINEAR_ALGORITHMS", "MAX_ONE_HOT_ITEMS", "CascadeKLUCB",
           "CascadeLinTS", "CascadeLinUCB", "CascadeTS", "CascadeUCB1", "Policy", "RankedTS",
           "RankedUCB1", "cascade_feedback", "klucb_index", "klucb_index_one", "klucb_rate",
           "klucb_start", "klucb_start_one", "make_policy", "sequential_rank1_update",
           "sherman_morrison_update", "topk"]


# --------------------------------------------------------------------------- factory
_CLASSES = {c.name: c for c in (RankedUCB1, RankedTS, CascadeUCB1, CascadeKLUCB, CascadeTS,
                                CascadeLinUCB, CascadeLinTS)}


@validate.retired(k="positions")
def make_policy(name: str, *, n_items: int, positions: int, runs: int = 1, seed=None,
                features: np.ndarray | None = None, **options) -> Policy:
    """Build the policy ``name`` (one of :data:`ALGORITHMS`) for lists of ``positions``.

    The linear algorithms use ``features``; without features they fall back to
    one-hot item vectors (``d = L``, then CascadeLinTS is Gaussian Thompson
    sampling per item) for at most :data:`MAX_ONE_HOT_ITEMS` items.
    ``options`` are passed on (``sigma`` for the linear algorithms, ``c`` for
    CascadeLinUCB).
    """
    if name not in _CLASSES:
        raise UlrError(f"Unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}.")
    cls = _CLASSES[name]
    kw = dict(n_items=n_items, k=positions, runs=runs, seed=seed)
    if name in LINEAR_ALGORITHMS:
        if features is None:
            if n_items > MAX_ONE_HOT_ITEMS:
                raise UlrError(f"{name} needs item features; this environment has none and "
                               f"more than {MAX_ONE_HOT_ITEMS} items for one-hot features. "
                               "Use the linear environment or a log with feature_* columns.")
            features = np.eye(n_items)
        kw["features"] = features
    elif options:
        raise UlrError(f"{name} takes no options, got {', '.join(options)}.")
    return cls(**kw, **options)
