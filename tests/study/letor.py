"""Labelled sets written by the tests (LETOR text and in-memory sets)."""

from __future__ import annotations

import numpy as np

from ulr.study.labels import LabelledSet


def linear_set(*, queries: int = 60, docs: int = 12, features: int = 5, noise: float = 0.3,
               seed: int = 0) -> LabelledSet:
    """Grades 0..4 linear in Gaussian features plus noise, cut at fixed quantiles."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=features)
    X = rng.normal(size=(queries * docs, features)).astype(np.float32)
    latent = X @ w + noise * rng.normal(size=queries * docs)
    y = np.searchsorted(np.quantile(latent, [0.55, 0.78, 0.9, 0.97]), latent).astype(np.float32)
    return LabelledSet(X=X, relevance=y, qid=np.repeat(np.arange(queries), docs),
                       query_ids=np.arange(1, queries + 1), features=[
                           f"feature_{j + 1}" for j in range(features)], source="test")


def letor_text(data: LabelledSet) -> str:
    lines = []
    for i in range(data.n_documents):
        feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(data.X[i]) if v != 0)
        lines.append(f"{int(data.relevance[i])} qid:{data.query_ids[data.qid[i]]} {feats}"
                     f" # doc {i}")
    return "\n".join(lines) + "\n"


def biased_production_set(*, queries: int = 100, docs: int = 10, features: int = 4,
                          seed: int = 0) -> LabelledSet:
    """Grades linear in features 1..P; one more feature, the production score, is the
    relevance signal plus an error of its own (it says nothing about the grade that the
    other features do not): a naive learner imitates it, IPW should not."""
    base = linear_set(queries=queries, docs=docs, features=features, seed=seed)
    rng = np.random.default_rng(seed + 1)
    z = base.X.astype(np.float64)
    signal = z @ np.linalg.lstsq(z, base.relevance, rcond=None)[0]
    prod = signal / signal.std() + 1.5 * rng.normal(size=signal.size)
    X = np.hstack([base.X, prod[:, None].astype(np.float32)])
    return LabelledSet(X=X, relevance=base.relevance, qid=base.qid, query_ids=base.query_ids,
                       features=base.features + [f"feature_{features + 1}"], source="test")
