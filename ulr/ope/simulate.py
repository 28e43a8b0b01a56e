"""Synthetic logged bandit feedback with a known policy value, and the bundled sample log.

The world: ``contexts`` contexts, each with ``actions`` candidate actions
described by standard-normal features ``x``; the click probability of action
``a`` in context ``c`` shown in slot ``k`` is ``theta_k * sigmoid(b + x @ beta)``
(a position-based model with ``theta_k = (1/k)^eta``; one slot gives a plain
contextual bandit). Contexts and slots are drawn uniformly. A logging policy
(uniform, or a softmax of a noisy copy of the true scores) picks the action;
its probability is logged as the propensity. The true value of any policy
``pi`` over the pairs is then exact:

``V(pi) = sum_c P(c) sum_k P(k) sum_a pi(a|c) q_k(c, a)``.

Many independent logs are drawn at once (arrays ``(draws, rows)``), so the
estimators' bias and variance against the truth come from vectorized code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from ulr import validate
from ulr.errors import UlrError
from ulr.ope.feedback import BanditFeedback, Candidates, softmax_policy, standardize_scores


@dataclass(frozen=True)
class LoggedDraws:
    """``draws`` independent logs of ``rows`` rows each (arrays of shape (draws, rows))."""

    pair: np.ndarray
    slot: np.ndarray
    reward: np.ndarray
    propensity: np.ndarray
    candidates: Candidates

    @property
    def draws(self) -> int:
        return self.pair.shape[0]

    def feedback(self, i: int = 0) -> BanditFeedback:
        """Log ``i`` as :class:`BanditFeedback` (slots only when there are several)."""
        slot = self.slot[i] if self.slot.max() > 0 else None
        return BanditFeedback(candidates=self.candidates, pair=self.pair[i],
                              reward=self.reward[i], propensity=self.propensity[i], slot=slot)

    def to_frame(self, i: int = 0) -> pd.DataFrame:
        """Log ``i`` in the canonical click-log schema (one row per logged action)."""
        c = self.candidates
        p = self.pair[i]
        df = pd.DataFrame({
            "query_id": np.asarray(c.context_labels)[c.context[p]],
            "doc_id": np.asarray(c.action_labels)[p],
            "position": self.slot[i] + 1,
            "click": self.reward[i].astype(int),
            "propensity": self.propensity[i],
        })
        for j, name in enumerate(c.feature_names):
            df[name] = c.features[p, j]
        return df


@dataclass(frozen=True)
class BanditSimulation:
    """A logged-bandit world with known click probabilities (see module docstring).

    Attributes
    ----------
    candidates : pairs with their features.
    q : (n_slots, n_pairs) true click probability of each pair in each slot.
    logging : (n_pairs,) the logging policy.
    beta : (d,) true feature weights of the click model.
    context_prob, slot_prob : distributions of contexts and slots.
    """

    candidates: Candidates
    q: np.ndarray
    logging: np.ndarray
    beta: np.ndarray
    context_prob: np.ndarray
    slot_prob: np.ndarray

    @property
    def n_slots(self) -> int:
        return self.q.shape[0]

    def true_value(self, pi) -> np.ndarray:
        """Exact ``V = sum_c P(c) sum_k P(k) sum_a pi(a|c) q_k(c, a)``; pi is (..., n_pairs)."""
        qbar = self.slot_prob @ self.q  # (n_pairs,) slot-averaged click probability
        pc = self.context_prob[self.candidates.context]
        return np.sum(np.asarray(pi, dtype=float) * qbar * pc, axis=-1)

    def policy(self, weights=None, *, temperature: float = 1.0) -> np.ndarray:
        """Softmax policy of the standardized scores ``x @ weights`` (default: the true beta)."""
        v = self.beta if weights is None else np.asarray(weights, dtype=float)
        s = standardize_scores(self.candidates.features @ v)
        return softmax_policy(s, self.candidates, temperature=temperature)

    def clipped_moments(self, pi, clip: float = np.inf) -> tuple[float, float]:
        """Exact mean and variance of one row's term ``min(w, M) r`` under the logging policy.

        ``E = sum_c P(c) sum_k P(k) sum_a pi_0(a|c) min(w, M) q``,
        ``E[term^2] = ... min(w, M)^2 q`` (Bernoulli rewards, ``r^2 = r``).
        ``clip = inf`` gives plain IPS (then ``E`` is the true value).
        """
        pi = np.asarray(pi, dtype=float)
        w = np.minimum(pi / self.logging, clip)
        qbar = self.slot_prob @ self.q
        m = self.logging * self.context_prob[self.candidates.context] * qbar
        mean = float(np.sum(m * w))
        second = float(np.sum(m * w * w))
        return mean, second - mean ** 2

    @validate.retired(draws="runs")
    def sample(self, rows: int, *, runs: int = 1, seed=0) -> LoggedDraws:
        """``runs`` independent logs of ``rows`` rows, vectorized over runs and rows."""
        if rows < 1 or runs < 1:
            raise UlrError("rows and runs must be at least 1.")
        rng = np.random.default_rng(seed)
        cand = self.candidates
        ctx = rng.choice(cand.n_contexts, size=(runs, rows), p=self.context_prob)
        slot = rng.choice(self.n_slots, size=(runs, rows), p=self.slot_prob)
        # inverse-CDF sampling of the logged action within the context's pairs
        cum = np.cumsum(self.logging)
        base = np.concatenate([[0.0], cum])[cand.starts]  # cumulative mass before each context
        u = rng.random((runs, rows))
        target = base[ctx] + u * (cum[np.r_[cand.starts[1:], cand.n_pairs] - 1] - base)[ctx]
        pair = np.searchsorted(cum, target, side="right")
        ends = np.r_[cand.starts[1:], cand.n_pairs] - 1
        pair = np.clip(pair, cand.starts[ctx], ends[ctx])
        reward = (rng.random((runs, rows)) < self.q[slot, pair]).astype(float)
        return LoggedDraws(pair=pair, slot=slot, reward=reward,
                           propensity=self.logging[pair], candidates=cand)


@validate.retired(features="n_features", slots="positions")
def simulate_bandit(*, contexts: int = 20, actions: int = 10, n_features: int = 5,
                    positions: int = 1, eta: float = 1.0, base_rate: float = 0.2,
                    signal: float = 1.5, logging: str = "uniform",
                    logging_temperature: float = 1.0, logging_noise: float = 1.0,
                    seed=0) -> BanditSimulation:
    """Build a :class:`BanditSimulation`.

    Parameters
    ----------
    contexts, actions, n_features : sizes of the world (every context has ``actions``
        candidates, each with ``n_features`` features).
    positions : the list length (slots); examination ``theta_k = (1/k)^eta``.
    base_rate : mean attraction ``sigmoid(b + signal * x @ beta)`` over pairs (``b`` solved for).
    signal : scale of the feature effect (0 = every action alike).
    logging : ``"uniform"`` or ``"softmax"`` (softmax at ``logging_temperature`` of
        ``x @ (beta + logging_noise * noise)``, standardized).
    """
    if contexts < 1 or actions < 2 or n_features < 1 or positions < 1:
        raise UlrError("the simulation needs >= 1 context, >= 2 actions, >= 1 feature and "
                       ">= 1 slot.")
    if not 0 < base_rate < 1:
        raise UlrError("the base rate must lie strictly between 0 and 1.")
    if logging not in ("uniform", "softmax"):
        raise UlrError("the logging policy must be 'uniform' or 'softmax'.")
    rng = np.random.default_rng(seed)
    n_pairs = contexts * actions
    ctx = np.repeat(np.arange(contexts), actions)
    X = rng.standard_normal((n_pairs, n_features))
    beta = rng.standard_normal(n_features)
    beta /= np.linalg.norm(beta)
    z = signal * X @ beta
    lo, hi = -30.0, 30.0
    for _ in range(100):  # bisection for the intercept giving the base rate
        mid = (lo + hi) / 2
        if expit(mid + z).mean() < base_rate:
            lo = mid
        else:
            hi = mid
    attraction = expit((lo + hi) / 2 + z)
    theta = (1.0 / np.arange(1, positions + 1)) ** eta
    q = theta[:, None] * attraction[None, :]
    cand = Candidates(context=ctx, features=X,
                      context_labels=np.array([f"c{i:03d}" for i in range(contexts)]),
                      action_labels=np.array([f"a{j:03d}" for j in np.tile(np.arange(actions),
                                                                             contexts)]),
                      feature_names=tuple(f"feature_{j + 1}" for j in range(n_features)))
    if logging == "uniform":
        pi0 = np.full(n_pairs, 1.0 / actions)
    else:
        v = beta + logging_noise * rng.standard_normal(n_features) / np.sqrt(n_features)
        pi0 = softmax_policy(standardize_scores(X @ v), cand, temperature=logging_temperature)
        pi0 = np.maximum(pi0, 1e-6)
        pi0 = pi0 / cand.per_context_sum(pi0)[ctx]
    return BanditSimulation(candidates=cand, q=q, logging=pi0, beta=beta,
                            context_prob=np.full(contexts, 1.0 / contexts),
                            slot_prob=np.full(positions, 1.0 / positions))


# --------------------------------------------------------------------------- repeated logs


def repeated_point_estimates(sim: BanditSimulation, pi, logs: LoggedDraws, *,
                             estimators=None, clip: float | None = None,
                             reward_model=None, folds: int = 2, seed=0,
                             progress=None) -> pd.DataFrame:
    """Point estimates of ``V(pi)`` on every draw: long frame (draw, estimator, value).

    Every estimator with per-row terms in :mod:`ulr.ope.registry` (default: the registry's
    defaults), each as ``sum num / sum den`` of its record's terms. Those that need neither
    a reward model nor SLOPE are vectorized across draws (a per-log hyperparameter such as
    clipped IPS's ``M``: ``clip``, else its per-log default); the rest are computed draw by
    draw, with one reward model fitted per draw (``progress(done, total)`` is called after
    each) and the hyperparameter SLOPE picks within the estimator's family, as
    :func:`ulr.ope.evaluate.evaluate` does.
    """
    from ulr.ope import registry
    from ulr.ope.reward_models import reward_predictions

    estimators = list(registry.defaults() if estimators is None else estimators)
    unknown = [e for e in estimators if e not in registry.single_log()]
    if unknown:
        raise UlrError(f"a simulated log cannot give {', '.join(unknown)}; choose from "
                       f"{', '.join(registry.single_log())}.")
    pi = np.asarray(pi, dtype=float)
    w = pi[logs.pair] / logs.propensity
    r = logs.reward
    out = {}
    per_draw = []
    for e in estimators:
        rec = registry.get(e)
        if rec.needs_reward_model or rec.tuned:
            per_draw.append(e)
            continue
        h = registry.hyperparameter_for(e, w, clip=clip)
        if h is not None:  # one value per log (the draws' axis), or the caller's
            h = np.full((logs.draws, 1), float(clip)) if clip is not None else h[:, None]
        out[e] = _ratio(*rec.terms(r, w, h, None, None))
    if per_draw:
        from threadpoolctl import threadpool_limits

        from ulr.ope import selection

        vals = {e: np.empty(logs.draws) for e in per_draw}
        wants_model = any(registry.get(e).needs_reward_model for e in per_draw)
        with threadpool_limits(1):  # many small fits: threads only add overhead
            for i in range(logs.draws):
                ql = qt = None
                if wants_model:
                    ql, qt = reward_predictions(logs.feedback(i), pi, model=reward_model,
                                                folds=folds, seed=seed + i)
                for e in per_draw:
                    rec = registry.get(e)
                    mq = (ql, qt) if rec.needs_reward_model else (None, None)
                    h = registry.hyperparameter_for(e, w[i], clip=clip)
                    if rec.tuned:
                        h = selection.select(r[i], w[i], q_logged=mq[0], q_target=mq[1],
                                             families=(e,)).hyperparameter
                    num, den = registry.row_terms(e, r[i], w[i], hyperparameter=h,
                                                  q_logged=mq[0], q_target=mq[1])
                    vals[e][i] = num.sum() / den.sum()
                if progress is not None:
                    progress(i + 1, logs.draws)
        out.update(vals)
    frames = [pd.DataFrame({"draw": np.arange(logs.draws), "estimator": e, "value": out[e]})
              for e in estimators]
    return pd.concat(frames, ignore_index=True)


def _ratio(num, den) -> np.ndarray:
    """``sum num / sum den`` along the last axis; ``nan`` where ``sum den`` is 0."""
    n, d = np.sum(num, axis=-1), np.sum(den, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, n / np.where(d > 0, d, 1.0), np.nan)


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def repeated_intervals(sim: BanditSimulation, pi, logs: LoggedDraws, *,
                       estimators=None, n_bootstrap: int = 400, level: float = 0.95,
                       clip: float | None = None, folds: int = 2, seed=0,
                       progress=None) -> pd.DataFrame:
    """Estimates with bootstrap intervals on every draw, and whether each covers the truth
    (``estimators``: as in :func:`ulr.ope.evaluate.evaluate`, default the registry's)."""
    from ulr.ope.evaluate import evaluate

    from threadpoolctl import threadpool_limits

    truth = float(sim.true_value(pi))
    rows = []
    with threadpool_limits(1):  # many small fits: threads only add overhead
        for i in range(logs.draws):
            res = evaluate(logs.feedback(i), pi, estimators=estimators, clip=clip,
                           n_bootstrap=n_bootstrap, level=level, folds=folds, seed=seed + i)
            rows.append(res.table[res.table["estimator"] != "logging"].assign(draw=i))
            if progress is not None:
                progress(i + 1, logs.draws)
    df = pd.concat(rows, ignore_index=True)
    df["covers"] = (df["lower"] <= truth) & (truth <= df["upper"])
    return df[["draw", "estimator", "value", "lower", "upper", "se", "covers"]]


def bias_variance_table(estimates: pd.DataFrame, truth: float) -> pd.DataFrame:
    """Per estimator: mean, bias (with its standard error), sd, RMSE, and coverage when known."""
    g = estimates.groupby("estimator", sort=False)["value"]
    t = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "draws": g.size()})
    t["bias"] = t["mean"] - truth
    t["bias_se"] = t["sd"] / np.sqrt(t["draws"])
    t["rmse"] = np.sqrt(g.apply(lambda v: float(np.mean((v - truth) ** 2))))
    t["relative_bias"] = t["bias"] / truth if truth else np.nan
    if "covers" in estimates:
        t["coverage"] = estimates.groupby("estimator", sort=False)["covers"].mean()
    t.insert(0, "truth", truth)
    return t.reset_index()


# --------------------------------------------------------------------------- sample log


SAMPLE_SEED = 20240606


@validate.retired(features="n_features")
def make_sample_log(*, rows: int = 10_000, contexts: int = 20, actions: int = 10,
                    positions: int = 3, n_features: int = 5, ctr: float = 0.006,
                    seed: int = SAMPLE_SEED) -> pd.DataFrame:
    """A uniform-random logged log like the Open Bandit Dataset's random campaign.

    Every impression draws a context uniformly and shows ``positions`` distinct
    actions in uniformly random order, so the logging probability of the
    action at any position is ``1 / actions`` (the propensity). Clicks follow
    the position-based model of :func:`simulate_bandit` with ``eta = 1`` and
    the attraction scaled so the overall click-through rate is about ``ctr``.
    Features are rounded to 4 decimals. Columns: session_id, query_id,
    doc_id, position, click, randomized, propensity, feature_1..feature_d.
    """
    if positions > actions:
        raise UlrError("there must be at least as many actions as positions.")
    theta = 1.0 / np.arange(1, positions + 1)
    sim = simulate_bandit(contexts=contexts, actions=actions, n_features=n_features, positions=1,
                          base_rate=ctr / theta.mean(), signal=1.5, seed=seed)
    rng = np.random.default_rng(seed + 1)
    imps = -(-rows // positions)
    ctx = rng.integers(0, contexts, size=imps)
    order = np.argsort(rng.random((imps, actions)), axis=1)[:, :positions]  # random ranking
    pair = ctx[:, None] * actions + order  # pairs are context-major, `actions` per context
    attraction = sim.q[0]
    click = rng.random((imps, positions)) < theta[None, :] * attraction[pair]
    cand = sim.candidates
    n = imps * positions
    df = pd.DataFrame({
        "session_id": np.repeat([f"s{i:05d}" for i in range(imps)], positions),
        "query_id": np.asarray(cand.context_labels)[ctx].repeat(positions),
        "doc_id": np.asarray(cand.action_labels)[pair.ravel()],
        "position": np.tile(np.arange(1, positions + 1), imps),
        "click": click.ravel().astype(int),
        "randomized": np.ones(n, dtype=int),
        "propensity": np.full(n, 1.0 / actions),
    })
    X = np.round(cand.features[pair.ravel()], 4)
    for j in range(n_features):
        df[f"feature_{j + 1}"] = X[:, j]
    return df.iloc[:rows].reset_index(drop=True)


def write_sample_log(path, **kwargs) -> pd.DataFrame:
    """Write :func:`make_sample_log` to ``path`` as CSV (how ``data/sample_ope.csv`` is made)."""
    df = make_sample_log(**kwargs)
    df.to_csv(path, index=False, float_format="%.6g")
    return df


# --------------------------------------------------------------------------- contextual world


@dataclass(frozen=True)
class ContextualWorld:
    """A contextual bandit whose contexts are rows: each carries its own features.

    ``contexts`` contexts with standard-normal features ``x_c`` (d of them) are drawn
    uniformly for each row; action ``a``'s click probability is logistic,
    ``q(c, a) = sigmoid(b + x_c @ beta_a)``; the logger is a softmax of a noisy copy
    of the scores at ``logging_temperature`` and the target a softmax of the true
    scores at a lower (sharper) ``target_temperature``. Exact values:
    ``V(pi) = (1/K) sum_c sum_a pi(a | c) q(c, a)``.

    Attributes
    ----------
    X : (K, d) context features.
    q : (K, A) click probabilities.
    logging, target : (K, A) the two policies.
    """

    X: np.ndarray
    q: np.ndarray
    logging: np.ndarray
    target: np.ndarray

    @property
    def actions(self) -> int:
        return self.q.shape[1]

    def value(self, pi) -> float:
        """Exact value of a policy ``pi`` (K, A)."""
        return float(np.mean(np.sum(np.asarray(pi, dtype=float) * self.q, axis=1)))

    @validate.retired(draws="runs")
    def sample(self, rows: int, *, runs: int = 1, seed=0) -> dict:
        """``runs`` logs of ``rows`` rows: arrays (runs, rows) ``context``, ``action``,
        ``reward``, ``propensity`` and ``target_prob`` (the target's probability of the
        logged action), vectorized."""
        rng = np.random.default_rng(seed)
        K, A = self.q.shape
        ctx = rng.integers(0, K, size=(runs, rows))
        cum = np.cumsum(self.logging, axis=1)[ctx]  # (runs, rows, A)
        act = np.minimum((rng.random((runs, rows, 1)) > cum).sum(axis=2), A - 1)
        reward = (rng.random((runs, rows)) < self.q[ctx, act]).astype(float)
        return {"context": ctx, "action": act, "reward": reward,
                "propensity": self.logging[ctx, act], "target_prob": self.target[ctx, act]}

    def frame(self, s: dict, i: int = 0) -> pd.DataFrame:
        """Log ``i`` in the click-log schema: one row per context (``query_id`` r<row>),
        ``doc_id`` a<action>, the features, and the target's probability of the logged
        action as column ``target_p``."""
        n = s["context"].shape[1]
        df = pd.DataFrame({"query_id": [f"r{j:05d}" for j in range(n)],
                           "doc_id": [f"a{a}" for a in s["action"][i]],
                           "position": 1, "click": s["reward"][i].astype(int),
                           "propensity": s["propensity"][i], "target_p": s["target_prob"][i]})
        for j in range(self.X.shape[1]):
            df[f"feature_{j + 1}"] = self.X[s["context"][i], j]
        return df

    def target_table(self, s: dict, i: int = 0) -> pd.DataFrame:
        """The target's probability of every action of each row of log ``i``."""
        n, A = s["context"].shape[1], self.actions
        return pd.DataFrame({"query_id": np.repeat([f"r{j:05d}" for j in range(n)], A),
                             "doc_id": np.tile([f"a{a}" for a in range(A)], n),
                             "probability": self.target[s["context"][i]].ravel()})

    def feedback(self, s: dict, i: int = 0, *, whole: bool = True):
        """Log ``i`` as :class:`BanditFeedback` over every action of each row, with the
        target over the pairs (``whole``) or only its logged actions' probabilities
        (``target_prob``; then the target returned is ``None``). Same layout as
        :func:`ulr.ope.feedback.feedback_from_log` builds from :meth:`frame`."""
        from ulr.ope.feedback import every_action
        n = s["context"].shape[1]
        ctx = s["context"][i]
        labels = np.array([f"a{a}" for a in s["action"][i]], dtype=object)
        rows = Candidates(context=np.arange(n), features=self.X[ctx],
                          context_labels=np.array([f"r{j:05d}" for j in range(n)]),
                          action_labels=labels,
                          feature_names=tuple(f"feature_{j + 1}" for j in range(self.X.shape[1])))
        cand, pair = every_action(rows, np.arange(n))
        fb = BanditFeedback(candidates=cand, pair=pair, reward=s["reward"][i],
                            propensity=s["propensity"][i],
                            target_prob=None if whole else s["target_prob"][i])
        act = np.array([int(str(a)[1:]) for a in cand.action_labels])
        return fb, (self.target[ctx[cand.context], act] if whole else None)


@validate.retired(features="n_features")
def contextual_world(*, contexts: int = 2000, actions: int = 10, n_features: int = 5,
                     base_rate: float = 0.25, signal: float = 1.0,
                     logging_temperature: float = 1.0, target_temperature: float = 0.3,
                     logging_noise: float = 1.0, seed=0) -> ContextualWorld:
    """Build a :class:`ContextualWorld` (the issue-35 world: 10 actions, 5 features)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((contexts, n_features))
    beta = rng.standard_normal((actions, n_features)) * signal / np.sqrt(n_features)
    s = X @ beta.T  # (K, A)
    lo, hi = -10.0, 10.0
    for _ in range(60):  # b such that the mean click probability is base_rate
        b = (lo + hi) / 2
        lo, hi = (b, hi) if expit(b + s).mean() < base_rate else (lo, b)
    q = expit(b + s)

    def soft(z, t):
        z = (z - z.max(axis=1, keepdims=True)) / t
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    noisy = s + logging_noise * rng.standard_normal(s.shape) * s.std()
    return ContextualWorld(X=X, q=q, logging=soft(noisy, logging_temperature * s.std()),
                           target=soft(s, target_temperature * s.std()))


# --------------------------------------------------------------------------- selection worlds


def selection_world(*, logging_temperature: float = 0.5, temperature: float = 0.5,
                    model_scale: float = 1.5, seed: int = 4):
    """A simulated world where IPS is heavy-tailed and the reward model misspecified.

    Softmax logging at ``logging_temperature`` of a noisy copy of the click
    model; target: softmax at ``temperature`` of the click model with its
    feature weights rotated (so it favours actions the logger rarely shows).
    The reward model per pair is ``model_scale * mean(q) + 0.3 (q - mean(q))``
    plus noise (sd 0.05), clipped to [0.01, 0.99]: right ordering, wrong level
    and scale. Returns ``(sim, pi, qhat)``.
    """
    sim = simulate_bandit(contexts=20, actions=10, logging="softmax",
                          logging_temperature=logging_temperature, base_rate=0.2, seed=seed)
    pi = sim.policy(np.r_[sim.beta[1:], sim.beta[:1]], temperature=temperature)
    q = sim.q[0]
    noise = np.random.default_rng(seed + 5).standard_normal(len(q))
    qhat = np.clip(model_scale * q.mean() + 0.3 * (q - q.mean()) + 0.05 * noise, 0.01, 0.99)
    return sim, pi, qhat
