"""Click data for the rankers: columns, theta, inverse propensity weights, preference pairs.

Also the adapters to a stored log (:func:`log_frame`) and to the position-bias
estimators (:func:`propensity_theta`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import propensity as methods, validate
from ulr.errors import NeedsFeatures, UlrError

MAX_PAIRS = 2_000_000


def _require(df: pd.DataFrame, cols, what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise UlrError(f"The {what} needs the column(s) {', '.join(missing)}.")


def _features(df: pd.DataFrame) -> list[str]:
    feats = [c for c in df.columns if str(c).startswith("feature_")]
    if not feats:
        raise NeedsFeatures("Training a ranker needs feature_* columns in the log.")
    return feats


def _clicks(df: pd.DataFrame) -> np.ndarray:
    c = df["click"].to_numpy()
    if c.dtype == bool:
        return c
    c = pd.to_numeric(df["click"], errors="coerce").to_numpy(dtype=float)
    if np.isnan(c).any() or not np.isin(c, (0.0, 1.0)).all():
        raise UlrError("The click column must hold 0/1 (or true/false).")
    return c == 1.0


def _positions(df: pd.DataFrame) -> np.ndarray:
    p = pd.to_numeric(df["position"], errors="coerce").to_numpy(dtype=float)
    if np.isnan(p).any() or (p < 1).any() or (p != np.round(p)).any():
        raise UlrError("The position column must hold whole numbers >= 1.")
    return p.astype(np.int64)


def check_theta(theta, *, max_position: int | None = None) -> np.ndarray:
    """Validate a position-bias vector (``theta[k-1]`` for position ``k``).

    Any positive scale is accepted (relative, ``theta_1 = 1``, or absolute); the
    vector must cover every position of the log.
    """
    if theta is None:
        raise UlrError("IPW needs a propensity (theta) per position.")
    try:
        t = np.asarray(theta, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise UlrError("theta must be a list of numbers, one per position.") from None
    if t.size == 0:
        raise UlrError("theta is empty; give one value per position.")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise UlrError("theta values must be finite and > 0.")
    if max_position is not None and t.size < max_position:
        raise UlrError(
            f"theta has {t.size} value(s) but the log shows documents down to position "
            f"{max_position}; give one value per position."
        )
    return t


def ipw_weights(positions, theta, *, clip: float | None = None) -> np.ndarray:
    """Inverse propensity weights ``1 / max(theta_k, clip)`` for 1-based positions ``k``.

    Clipping small propensities bounds the weights (and the variance) at the
    price of some bias (Joachims et al. 2017, Section 5; Strehl et al. 2010).
    """
    pos = np.asarray(positions, dtype=np.int64)
    t = check_theta(theta, max_position=int(pos.max()) if pos.size else None)
    if clip is not None:
        clip = float(clip)
        if not clip > 0:
            raise UlrError(f"clip must be > 0, got {clip}.")
        t = np.maximum(t, clip)
    return 1.0 / t[pos - 1]


@dataclass(frozen=True)
class ClickPairs:
    """Preference pairs ``clicked > not clicked``: row indices into the log.

    ``total`` counts all candidate pairs (before dropping a document paired
    with itself when grouping by query); ``scale`` is the inverse sampling rate
    when they were subsampled (1 when all are kept).
    """

    clicked: np.ndarray
    other: np.ndarray
    total: int
    scale: float = 1.0

    def __post_init__(self):
        if self.clicked.shape != self.other.shape:
            raise ValueError("clicked and other must have the same shape")

    def __len__(self) -> int:
        return int(self.clicked.size)


def click_pairs(df: pd.DataFrame, *, max_pairs: int = MAX_PAIRS, seed: int = 0) -> ClickPairs:
    """All (clicked, non-clicked) row pairs shown together.

    Rows are grouped by ``session_id`` when present, else by ``query_id``
    (then pairs of a document with itself are dropped). Vectorized: rows are
    sorted by (group, click) so every group's non-clicked rows are contiguous
    and each clicked row is paired with that range. More than ``max_pairs``
    pairs are subsampled uniformly (seeded); ``scale`` records the rate. The pairs are
    then numbered in one order of the rows (group, click, document, position, each by
    its value), so the sample does not depend on the order of the log's rows.
    """
    _require(df, ["query_id", "click"], "click log")
    by_session = "session_id" in df.columns and df["session_id"].notna().all()
    group = df["session_id"] if by_session else df["query_id"]
    codes, groups = pd.factorize(group.to_numpy(), sort=False)
    if (codes < 0).any():
        raise UlrError("query_id must not be missing.")
    c = _clicks(df)
    n_rows = np.bincount(codes)
    n_click = np.bincount(codes, weights=c, minlength=n_rows.size)
    if float(np.dot(n_click, n_rows - n_click)) > max_pairs:
        # a sample will be drawn: number the pairs in one order of the rows whatever order
        # they came in (groups, then documents and positions, each by its value), so that
        # shuffling the log's rows cannot change which pairs are drawn (rows alike in all
        # four are taken as interchangeable)
        codes = _value_rank(groups)[codes]
        keys = [c.astype(np.int64)] + [_value_codes(df[col]) for col in ("doc_id", "position")
                                        if col in df.columns]
        key, span = codes.astype(np.int64), codes.size and int(codes.max()) + 1
        for k in keys:  # one integer key when it fits: a radix sort, not a 4-key lexsort
            size = int(k.max()) + 1 if k.size else 1
            if span * size >= 2 ** 62:
                key = None
                break
            key, span = key * size + k, span * size
        order = (np.argsort(key, kind="stable") if key is not None
                 else np.lexsort((*keys[::-1], codes)))
    else:
        order = np.lexsort((c, codes))  # per group: non-clicks first, then clicks
    g = codes[order]
    cs = c[order]
    n_groups = int(codes.max()) + 1 if codes.size else 0
    counts = np.bincount(g, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    n_nonclick = np.bincount(g, weights=~cs, minlength=n_groups).astype(np.int64)
    clicked_sorted = np.flatnonzero(cs)
    m = n_nonclick[g[clicked_sorted]]
    total = int(m.sum())
    if total == 0 and by_session:
        # Sessions that hold one item each (e.g. taken from a timestamp) pair nothing;
        # the documents shown for the same query still compare.
        return click_pairs(df.drop(columns=["session_id"]), max_pairs=max_pairs, seed=seed)
    if total == 0:
        raise UlrError(
            "The log has no (clicked, not clicked) pair in a session or query, so there "
            "is nothing to learn from.")
    # pair number p belongs to clicked element k(p) and is its j-th non-click
    end = np.cumsum(m)
    if total <= max_pairs:
        k = np.repeat(np.arange(clicked_sorted.size), m)
        within = np.arange(total, dtype=np.int64) - np.repeat(end - m, m)
        scale = 1.0
    else:  # sample pair numbers without materializing all pairs
        p = np.sort(np.random.default_rng(seed).choice(total, size=max_pairs, replace=False))
        k = np.searchsorted(end, p, side="right")
        within = p - (end - m)[k]
        scale = total / max_pairs
    left = clicked_sorted[k]
    right = starts[g[left]] + within
    clicked, other = order[left], order[right]
    if not by_session and "doc_id" in df.columns:
        doc = pd.factorize(df["doc_id"].to_numpy(), sort=False)[0]
        keep = doc[clicked] != doc[other]
        clicked, other = clicked[keep], other[keep]
        if not clicked.size:
            raise UlrError("Every clicked document is only paired with itself, so there is "
                           "nothing to learn from.")
    return ClickPairs(clicked=clicked, other=other, total=total, scale=scale)


def _value_codes(column: pd.Series) -> np.ndarray:
    """One code per row numbering the column's distinct values in their sorted order
    (numbers as numbers, anything else as text)."""
    codes, values = pd.factorize(column.to_numpy(), sort=False)
    return _value_rank(values)[codes]


def _value_rank(values) -> np.ndarray:
    """Each value's rank among ``values``: numbers in numeric order, else as text."""
    values = pd.Index(values)
    keys = values.to_numpy() if pd.api.types.is_numeric_dtype(values.dtype) \
        else values.astype(str).to_numpy(dtype=object)
    order = np.argsort(keys, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank


_LOG_COLUMNS = ("query_id", "doc_id", "position", "click", "session_id", "relevance")


def log_frame(log, *, extra=()) -> pd.DataFrame:
    """The columns of a :class:`ulr.data.log.Log` the rankers use, as a DataFrame (and the
    ``extra`` columns, e.g. the segment column of :func:`segment_positions`)."""
    cols = [c for c in _LOG_COLUMNS if log.info.has(c)] + list(log.info.features)
    return log.df(columns=cols + [c for c in extra if c not in cols])


@validate.retired(method="propensity")
def propensity_theta(log, propensity: str, *, seed: int = 0, progress=None,
                     should_stop=None) -> np.ndarray:
    """Relative theta per position from ``ulr.propensity.estimate(log, method=propensity)``.

    The one place the rankers call the position-bias estimators. Positions the
    method cannot estimate (NaN) are refused with a readable message. ``should_stop``:
    see :func:`ulr.propensity.estimate`.
    """
    res = methods.estimate(log, method=propensity, seed=seed, progress=progress,
                              should_stop=should_stop, weigh_facts=False)  # theta only: the
    # comparison's verdict weighs the facts itself (weighed_facts)
    theta = np.asarray(res.theta, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(theta) | (theta <= 0)) + 1
    if bad.size:
        shown = ", ".join(map(str, bad[:10])) + (" ..." if bad.size > 10 else "")
        raise UlrError(f"The {propensity} estimate has no usable theta for position(s) {shown}; "
                       "choose another method or give theta explicitly.")
    return theta


@validate.retired(theta_from="propensity")
def weighed_facts(log, *, propensity: str | None = None, should_stop=None) -> dict:
    """What a ranker comparison's verdict weighs about a stored log, as keyword arguments
    of :func:`ulr.rankers.train_and_evaluate` / :func:`ulr.rankers.compare_learners`:
    ``mapping`` (its mapping warnings, with a contradicted randomization blocking the
    comparison when ``propensity``, the position-bias method θ comes from, is
    ``"randomization"``) and ``misfit`` (the dataset's
    PBM-misfit caveat: the IPW weights assume the position-based model). The page, the
    ``rankers`` and ``report`` commands and the audit all call it, so they give one verdict.
    """
    from ulr import facts
    from ulr.lists import mapping_warnings, theta_warnings
    return {"mapping": theta_warnings(mapping_warnings(log), propensity or ""),
            "misfit": facts.pbm_misfit(log, should_stop=should_stop)}

def segment_positions(df: pd.DataFrame, column: str, thetas: dict
                      ) -> tuple[pd.DataFrame, np.ndarray]:
    """IPW with theta by segment: each row's position renumbered within its segment's block.

    ``thetas`` is ``{value: theta per position 1..K}`` for the values of ``column``
    (:func:`ulr.propensity.segments.by_segment`). Row positions become ``i K + k`` for the
    ``i``-th segment and the thetas are concatenated, so every learner and the click-based
    labels weigh a click by ``1 / theta`` of its own segment at its position, with no other
    change (the rankers read positions only for the weights). Each segment's theta is
    relative to its own position 1: the top result is taken to be examined alike in every
    segment, which relative estimates cannot check. Returns the renumbered frame (without
    ``column``) and the concatenated theta.
    """
    _require(df, [column, "position"], "click log")
    values = list(thetas)
    k = max(len(np.asarray(t)) for t in thetas.values())
    seg = df[column].astype(str).to_numpy()
    index = {str(v): i for i, v in enumerate(values)}
    idx = np.array([index.get(s, -1) for s in seg])
    if (idx < 0).any():
        missing = sorted(set(seg[idx < 0]))[:3]
        raise UlrError(f"rows of {column} {', '.join(map(repr, missing))} have no theta of "
                       "their own segment.")
    pos = _positions(df)
    if pos.max() > k:
        raise UlrError(f"theta by segment covers positions 1..{k}; the log shows position "
                       f"{int(pos.max())}.")
    full = np.ones(len(values) * k)
    for i, v in enumerate(values):
        t = check_theta(thetas[v])
        full[i * k:i * k + len(t)] = t
    out = df.drop(columns=[column]).copy()
    out["position"] = idx * k + pos
    return out, full
