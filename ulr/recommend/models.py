"""Matrix factorization on MNAR ratings: naive, propensity-weighted (IPS) and CausE.

All three predict ``y_ui = mu + b_u + b_i + p_u @ q_i`` and are trained by numpy
mini-batch SGD with (heavy-ball) momentum, vectorized per batch (``np.add.at``
scatters the per-row gradients onto the embedding rows).

- ``naive-mf``: squared error on every training rating (MNAR ratings plus the
  training part of the randomized slice).
- ``propensity-mf``: the same ratings, each weighted by ``1 / P(O = 1 | y)``
  (inverse propensity scoring of the observed ratings; Schnabel, Swaminathan,
  Singh, Chandak & Joachims, "Recommendations as treatments", ICML 2016).
  The propensity is estimated by naive Bayes from the randomized slice,
  ``P(O=1 | Y=r) = P(Y=r | O=1) P(O=1) / P(Y=r)``, with ``P(Y=r | O=1)`` from
  the training ratings, ``P(O=1)`` their share of all pairs, and ``P(Y=r)``
  from the missing-completely-at-random slice (add-one smoothing) -- the
  estimator of Schnabel et al. Section 5.2. (``exposure="true"`` uses the
  simulator's exposure probabilities instead.)
- ``cause``: Causal Embeddings (Bonner & Vasile, "Causal embeddings for
  recommendation", RecSys 2018): users are shared; items get two embedding
  sets (and biases), a *control* set fit on the randomized slice and a
  *treatment* set fit on the rest; an L1 or L2 penalty on their difference
  ties them. Each domain's loss is its own mean, so the small slice weighs as
  much as the large biased log. It predicts with the treatment set.

The objective of every model is a mean loss plus ``l2 / N`` times the squared
norm of all parameters (``N`` the number of ratings the parameters are fit on),
so ``l2`` is a prior worth ``l2`` ratings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError, check
from ulr.recommend.data import MNARData, Ratings

MODELS = ("naive-mf", "propensity-mf", "cause")
LEVELS = np.arange(1, 6)


def naive_bayes_propensity(observed, mcar, *, observed_share: float,
                           smoothing: float = 1.0) -> np.ndarray:
    """``P(O = 1 | Y = r)`` for r = 1..5 by naive Bayes (Schnabel et al. 2016, Sec. 5.2).

    Parameters
    ----------
    observed : ratings seen in the (MNAR) training data.
    mcar : ratings of the uniformly exposed slice (an unbiased sample of ``P(Y = r)``).
    observed_share : ``P(O = 1)``, the training ratings' share of all pairs.
    smoothing : add-``smoothing`` counts for both rating distributions.
    """
    obs = np.asarray(observed, dtype=int)
    mc = np.asarray(mcar, dtype=int)
    if len(mc) == 0:
        raise UlrError("naive-Bayes propensities need the randomized slice; it is empty.")
    p_obs = (np.bincount(obs, minlength=6)[1:6] + smoothing) / (len(obs) + 5 * smoothing)
    p_all = (np.bincount(mc, minlength=6)[1:6] + smoothing) / (len(mc) + 5 * smoothing)
    return np.clip(p_obs * observed_share / p_all, 1e-6, 1.0)


@dataclass(frozen=True)
class MFConfig:
    """Hyper-parameters of one training run."""

    factors: int = 8
    l2: float = 2.0
    learning_rate: float = 0.05
    momentum: float = 0.9
    batch_size: int = 256
    epochs: int = 40
    discrepancy: float = 1.0  # CausE tie strength
    discrepancy_norm: str = "l2"  # CausE: "l1" or "l2"
    control_weight: float = 1.0  # CausE: weight of the randomized slice's mean loss
    seed: int = 0

    def __post_init__(self):
        if self.factors < 1 or self.batch_size < 1 or self.epochs < 1:
            raise UlrError("factors, batch size and epochs must be at least 1.")
        if self.l2 < 0 or self.discrepancy < 0 or self.control_weight <= 0:
            raise UlrError("the penalties must be >= 0.")
        if self.learning_rate <= 0 or not 0 <= self.momentum < 1:
            raise UlrError("use a positive learning rate and a momentum in [0, 1).")
        if self.discrepancy_norm not in ("l1", "l2"):
            raise UlrError("the CausE discrepancy norm is 'l1' or 'l2'.")


class _Params:
    """Parameter arrays plus their momentum buffers."""

    def __init__(self, users, items, k, mu, rng, control: bool):
        self.p = {"mu": np.array([mu]), "bu": np.zeros(users), "bi": np.zeros(items),
                  "P": 0.1 * rng.standard_normal((users, k)),
                  "Q": 0.1 * rng.standard_normal((items, k))}
        if control:
            self.p["bi_c"] = self.p["bi"].copy()
            self.p["Q_c"] = self.p["Q"].copy()
        self.v = {k_: np.zeros_like(v) for k_, v in self.p.items()}

    def predict(self, u, i, *, control: bool = False):
        p = self.p
        bi, Q = (p["bi_c"], p["Q_c"]) if control else (p["bi"], p["Q"])
        return p["mu"][0] + p["bu"][u] + bi[i] + np.einsum("ij,ij->i", p["P"][u], Q[i])

    def step(self, grads: dict, lr: float, momentum: float):
        for k_, g in grads.items():
            v = self.v[k_]
            v *= momentum
            v -= lr * g
            self.p[k_] += v


def _data_grads(params: _Params, u, i, y, w, scale: float, *, control: bool, out: dict):
    """Add the gradient of ``scale * sum w (pred - y)^2 / 2`` to ``out`` (scatter by rows)."""
    pred = params.predict(u, i, control=control)
    g = scale * w * (pred - y)
    bi_k, Q_k = ("bi_c", "Q_c") if control else ("bi", "Q")
    P, Q = params.p["P"], params.p[Q_k]
    out["mu"] += g.sum()
    np.add.at(out["bu"], u, g)
    np.add.at(out[bi_k], i, g)
    np.add.at(out["P"], u, g[:, None] * Q[i])
    np.add.at(out[Q_k], i, g[:, None] * P[u])
    return pred


def _tie(params: _Params, step: float, norm: str):
    """Proximal step for the CausE penalty ``lam * D(treatment - control)`` on item parameters.

    The exact minimizer of ``step * D(d) + |d - d0|^2 / 4`` for the difference
    ``d`` (the midpoint is unchanged): shrinkage ``d / (1 + 4 step)`` for the
    squared L2 norm, soft thresholding at ``2 step`` for L1. Stable for any
    penalty strength, unlike a plain gradient step.
    """
    for t, c in (("Q", "Q_c"), ("bi", "bi_c")):
        a, b = params.p[t], params.p[c]
        m, d = (a + b) / 2, a - b
        if norm == "l2":
            d = d / (1 + 4 * step)
        else:
            d = np.sign(d) * np.maximum(np.abs(d) - 2 * step, 0.0)
        a[...] = m + d / 2
        b[...] = m - d / 2


def _mse(pred, y, w=None) -> float:
    e = (pred - y) ** 2
    return float(e.mean() if w is None else np.sum(w * e) / np.sum(w))


@dataclass
class TrainResult:
    """Per-epoch history of one model and configuration, and the final parameters."""

    model: str
    config: MFConfig
    history: pd.DataFrame  # epoch, train_loss, validation, test_mse, test_improvement
    params: dict
    exposure: np.ndarray | None = None  # P(O=1 | y = 1..5) used by propensity-mf


@validate.retired(propensity="exposure")
def train(data: MNARData, model: str, config: MFConfig = MFConfig(), *,
          exposure: str = "naive-bayes", progress=None, should_stop=None) -> TrainResult:
    """Train one model; evaluate its own validation criterion and the test MSE every epoch.

    Validation criteria: ``naive-mf`` -- MSE on held-out MNAR ratings (biased);
    ``propensity-mf`` -- the self-normalized IPS-weighted MSE on them (unbiased
    up to the propensity model); ``cause`` -- MSE on the held-out part of the
    randomized slice. Test: MSE on uniformly sampled ratings and its relative
    improvement over predicting the test mean, ``1 - MSE / Var(test ratings)``.
    ``exposure`` is the model of P(O = 1 | y) that ``propensity-mf`` divides by:
    ``naive-bayes`` (from the randomized slice) or ``true`` (the simulator's).
    ``should_stop`` is asked every epoch (:class:`ulr.errors.Cancelled`).
    """
    if model not in MODELS:
        raise UlrError(f"unknown model {model!r}; choose from {', '.join(MODELS)}.")
    if exposure not in ("naive-bayes", "true"):
        raise UlrError("propensities are 'naive-bayes' or 'true'.")
    rng = np.random.default_rng(config.seed)
    cfg = config
    if model == "cause":
        tr, ctrl = data.biased, data.random
    else:  # naive and IPS: every training rating (MNAR + randomized slice)
        tr = Ratings(*(np.r_[getattr(data.biased, f), getattr(data.random, f)]
                       for f in ("user", "item", "rating", "exposure")))
        ctrl = None
    w_tr, w_val, prop_levels = _rating_weights(data, tr, model, exposure)
    mu0 = float(np.sum(w_tr * tr.rating) / np.sum(w_tr))
    if ctrl is not None:
        mu0 = 0.5 * (mu0 + float(ctrl.rating.mean()))
    params = _Params(data.users, data.items, cfg.factors, mu0, rng, control=ctrl is not None)
    test = data.test
    var_test = float(np.var(test.rating))
    val_set = data.random_val if model == "cause" else data.biased_val
    rows = []
    for epoch in range(cfg.epochs + 1):
        check(should_stop)
        if epoch > 0:
            loss = _sgd_epoch(params, tr, w_tr, ctrl, cfg, rng, items=data.items)
            if not np.isfinite(loss):
                raise UlrError(f"{model} diverged at epoch {epoch}; lower the learning rate.")
        else:
            loss = _mse(params.predict(tr.user, tr.item), tr.rating, w_tr)
        vpred = params.predict(val_set.user, val_set.item)
        val = _mse(vpred, val_set.rating, w_val if model == "propensity-mf" else None)
        tmse = _mse(params.predict(test.user, test.item), test.rating)
        rows.append((epoch, loss, val, tmse, 1.0 - tmse / var_test))
        if progress is not None:
            progress(epoch, cfg.epochs)
    hist = pd.DataFrame(rows, columns=["epoch", "train_loss", "validation", "test_mse",
                                       "test_improvement"])
    return TrainResult(model=model, config=cfg, history=hist,
                       params={k_: v.copy() for k_, v in params.p.items()},
                       exposure=prop_levels)


def _rating_weights(data: MNARData, tr: Ratings, model: str, propensity: str):
    """``(w_tr, w_val, prop_levels)``: training weights (mean 1), validation weights
    ``1 / P(O=1 | y)`` and the naive-Bayes propensity per star for ``propensity-mf``;
    ones, ``None`` and ``None`` for the other models."""
    if model != "propensity-mf":
        return np.ones(len(tr)), None, None
    prop_levels = None
    if propensity == "true":
        p_tr, p_val = tr.exposure, data.biased_val.exposure
    else:
        share = (len(tr) + len(data.biased_val)) / (data.users * data.items)
        prop_levels = naive_bayes_propensity(
            np.r_[tr.rating, data.biased_val.rating], data.random.rating,
            observed_share=share)
        p_tr = prop_levels[tr.rating.astype(int) - 1]
        p_val = prop_levels[data.biased_val.rating.astype(int) - 1]
    w_tr = 1.0 / p_tr
    return w_tr / w_tr.mean(), 1.0 / p_val, prop_levels


def _sgd_epoch(params: _Params, tr: Ratings, w_tr, ctrl: Ratings | None, cfg: MFConfig,
               rng, *, items: int) -> float:
    """One pass of mini-batch SGD over ``tr`` (with a control batch and the CausE tie
    when ``ctrl`` is given); returns the mean of the batches' weighted MSE."""
    n_tr, B = len(tr), cfg.batch_size
    steps = max(1, int(np.ceil(n_tr / B)))
    order = rng.permutation(n_tr)
    loss = 0.0
    for s in range(steps):
        idx = order[s * B:(s + 1) * B]
        grads = {k_: np.zeros_like(v) for k_, v in params.p.items()}
        pred = _data_grads(params, tr.user[idx], tr.item[idx], tr.rating[idx],
                           w_tr[idx], 1.0 / len(idx), control=False, out=grads)
        loss += _mse(pred, tr.rating[idx], w_tr[idx])
        reg = cfg.l2 / n_tr
        for k_ in ("bu", "bi", "P", "Q"):
            grads[k_] += reg * params.p[k_]
        if ctrl is not None:
            cidx = rng.integers(0, len(ctrl), size=min(B, len(ctrl)))
            _data_grads(params, ctrl.user[cidx], ctrl.item[cidx], ctrl.rating[cidx],
                        np.ones(len(cidx)), cfg.control_weight / len(cidx),
                        control=True, out=grads)
            reg_c = cfg.l2 / len(ctrl)
            grads["bi_c"] += reg_c * params.p["bi_c"]
            grads["Q_c"] += reg_c * params.p["Q_c"]
        params.step(grads, cfg.learning_rate, cfg.momentum)
        if ctrl is not None:
            _tie(params, cfg.learning_rate * cfg.discrepancy / items, cfg.discrepancy_norm)
    return loss / steps
