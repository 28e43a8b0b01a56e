"""ulr.rankers.clicks: preference pairs and IPW weights against slow references."""

import numpy as np
import pandas as pd
import pytest

from ulr import rankers as R
from ulr.errors import UlrError


def ref_pairs(df, group_col):
    """Double loop over every group: (clicked row, non-clicked row) index pairs."""
    out = set()
    for _, g in df.groupby(group_col, sort=False):
        idx = list(g.index)
        for i in idx:
            if df.at[i, "click"] != 1:
                continue
            for j in idx:
                if df.at[j, "click"] == 1:
                    continue
                if group_col == "query_id" and df.at[i, "doc_id"] == df.at[j, "doc_id"]:
                    continue
                out.add((i, j))
    return out


def small_log(seed=0):
    rng = np.random.default_rng(seed)
    n_sessions, d = 40, 5
    df = pd.DataFrame({
        "query_id": np.repeat(rng.integers(0, 8, size=n_sessions), d),
        "session_id": np.repeat(np.arange(n_sessions), d),
        "position": np.tile(np.arange(1, d + 1), n_sessions),
        "click": (rng.random(n_sessions * d) < 0.3).astype(int),
        "feature_1": rng.normal(size=n_sessions * d),
    })
    df["doc_id"] = df["query_id"] * 10 + rng.integers(0, 6, size=len(df))
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # rows shuffled


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_click_pairs_match_double_loop(seed):
    df = small_log(seed)
    p = R.click_pairs(df)
    got = set(zip(p.clicked.tolist(), p.other.tolist()))
    assert got == ref_pairs(df, "session_id") and len(got) == len(p) == p.total
    # without sessions: pairs within the query, never a document with itself
    dq = df.drop(columns="session_id")
    pq = R.click_pairs(dq)
    assert set(zip(pq.clicked.tolist(), pq.other.tolist())) == ref_pairs(dq, "query_id")


def test_click_pairs_subsample_and_no_pairs():
    df = small_log(0)
    full = R.click_pairs(df)
    sub = R.click_pairs(df, max_pairs=10, seed=3)
    assert len(sub) == 10 and sub.scale == pytest.approx(full.total / 10)
    assert set(zip(sub.clicked, sub.other)) <= set(zip(full.clicked, full.other))
    # sampled pair numbers are uniform: over many seeds every pair turns up about
    # equally often (expected count 200 * 10 / n per pair; allow 5 SD of a binomial)
    n = len(full)
    hits = {}
    for s in range(200):
        r = R.click_pairs(df, max_pairs=10, seed=s)
        for pair in zip(r.clicked.tolist(), r.other.tolist()):
            hits[pair] = hits.get(pair, 0) + 1
    mean = 200 * 10 / n
    sd = np.sqrt(200 * (10 / n) * (1 - 10 / n))
    assert set(hits) <= set(zip(full.clicked.tolist(), full.other.tolist()))
    assert max(abs(v - mean) for v in hits.values()) < 5 * sd
    # by query, sampled pairs never pair a document with itself
    dq = df.drop(columns="session_id")
    sq = R.click_pairs(dq, max_pairs=15, seed=1)
    assert set(zip(sq.clicked.tolist(), sq.other.tolist())) <= ref_pairs(dq, "query_id")
    with pytest.raises(UlrError, match="nothing to learn"):
        R.click_pairs(df.assign(click=0))


@pytest.mark.parametrize("by", ["session_id", "query_id"])
def test_a_subsample_of_pairs_does_not_depend_on_the_order_of_the_rows(by):
    """The same log in another row order draws the same pairs (as what they pair: the
    group, and each side's document and position), with ids as numbers or as text."""
    df = small_log(0)
    if by == "query_id":
        df = df.drop(columns="session_id")

    def drawn(frame):
        r = R.click_pairs(frame, max_pairs=25, seed=4)
        a, b = frame.iloc[r.clicked], frame.iloc[r.other]
        return sorted(zip(a[by].astype(str), a["doc_id"].astype(str), a["position"],
                          b["doc_id"].astype(str), b["position"]))

    first = drawn(df)
    assert 0 < len(first) <= 25  # by query, pairs of a document with itself are dropped
    for seed in (1, 2):
        assert drawn(df.sample(frac=1.0, random_state=seed)) == first
    as_text = df.assign(**{c: "id" + df[c].astype(str) for c in (by, "doc_id")})
    assert drawn(as_text) == drawn(as_text.sample(frac=1.0, random_state=3))


def test_ipw_weights_and_clipping():
    theta = [1.0, 0.5, 0.2, 0.05]
    np.testing.assert_allclose(R.ipw_weights([1, 2, 3, 4, 2], theta), [1, 2, 5, 20, 2])
    np.testing.assert_allclose(R.ipw_weights([1, 2, 3, 4], theta, clip=0.25), [1, 2, 4, 4])
    with pytest.raises(UlrError, match="position 5"):
        R.ipw_weights([1, 5], theta)
    with pytest.raises(UlrError, match="> 0"):
        R.ipw_weights([1], [1.0, 0.0])
    with pytest.raises(UlrError, match="clip"):
        R.ipw_weights([1], theta, clip=0)
