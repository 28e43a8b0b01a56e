"""ulr.metrics against slow, obvious references written here and against sklearn."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import ndcg_score, roc_auc_score

from ulr import metrics as M
from ulr.errors import UlrError

# ---------------------------------------------------------------------------
# Slow references: explicit per-query sorting and pairwise double loops
# ---------------------------------------------------------------------------


def ref_groups(qids):
    """Query -> list of row indices, queries in first-appearance order."""
    groups = {}
    for i, q in enumerate(qids):
        groups.setdefault(q, []).append(i)
    return groups


def ref_tie_ranks(rows, scores):
    """Row -> the 1-based ranks its tie of scores occupies (a lone row: one rank)."""
    ranked = sorted(rows, key=lambda i: -scores[i])
    out = {}
    for r, i in enumerate(ranked):
        first = next(p for p, j in enumerate(ranked) if scores[j] == scores[i])
        last = max(p for p, j in enumerate(ranked) if scores[j] == scores[i])
        out[i] = list(range(first + 1, last + 2))
    return out


def ref_expected(ranks, f):
    """Expectation of f(rank) over a uniformly random order of the tie."""
    return sum(f(r) for r in ranks) / len(ranks)


def ref_arp(rel, scores, qids):
    num = den = 0.0
    per = {}
    for q, rows in ref_groups(qids).items():
        ties = ref_tie_ranks(rows, scores)
        a = sum(rel[i] * ref_expected(ties[i], lambda r: r) for i in rows)
        b = sum(rel[i] for i in rows)
        num += a
        den += b
        per[q] = a / b if b > 0 else math.nan
    return num / den, per


def ref_dcg(rel, scores, qids):
    per = {}
    for q, rows in ref_groups(qids).items():
        ties = ref_tie_ranks(rows, scores)
        per[q] = sum(rel[i] * ref_expected(ties[i], lambda r: 1 / r) for i in rows)
    return sum(per.values()) / len(per), per


def ref_ndcg(rel, scores, qids, k):
    per = {}
    disc = lambda r: 1 / math.log2(r + 1) if r <= k else 0.0  # noqa: E731
    for q, rows in ref_groups(qids).items():
        ties = ref_tie_ranks(rows, scores)
        ideal = sorted((rel[i] for i in rows), reverse=True)
        dcg = sum((2 ** rel[i] - 1) * ref_expected(ties[i], disc) for i in rows)
        idcg = sum((2 ** g - 1) / math.log2(r + 2) for r, g in enumerate(ideal[:k]))
        per[q] = dcg / idcg if idcg > 0 else math.nan
    vals = [v for v in per.values() if not math.isnan(v)]
    return sum(vals) / len(vals), per


def ref_pairs(rel, scores, rows, keep_pos=lambda i: True):
    """Correctly ordered (positive, negative) pairs (ties 1/2) and the pair count."""
    pos = [i for i in rows if rel[i] > 0]
    neg = [j for j in rows if rel[j] <= 0]
    correct = 0.0
    for i in pos:
        if not keep_pos(i):
            continue
        for j in neg:
            if scores[i] > scores[j]:
                correct += 1.0
            elif scores[i] == scores[j]:
                correct += 0.5
    return correct, len(pos) * len(neg)


def ref_auc(rel, scores, qids):
    per = {}
    for q, rows in ref_groups(qids).items():
        c, p = ref_pairs(rel, scores, rows)
        per[q] = c / p if p else math.nan
    vals = [v for v in per.values() if not math.isnan(v)]
    return sum(vals) / len(vals), per


def ref_roc(rel, scores, rows):
    """ROC points (fpr, tpr), one per distinct threshold, from (0, 0) to (1, 1)."""
    n_pos = sum(1 for i in rows if rel[i] > 0)
    n_neg = len(rows) - n_pos
    pts = [(0.0, 0.0)]
    for t in sorted({scores[i] for i in rows}, reverse=True):
        tp = sum(1 for i in rows if scores[i] >= t and rel[i] > 0)
        fp = sum(1 for i in rows if scores[i] >= t and rel[i] <= 0)
        pts.append((fp / n_neg, tp / n_pos))
    return pts


def ref_partial_area(rel, scores, rows, max_fpr):
    """Trapezoids of the ROC polyline clipped at max_fpr (linear interpolation there)."""
    area = 0.0
    pts = ref_roc(rel, scores, rows)
    for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:]):
        if x0 >= max_fpr:
            break
        if x1 > max_fpr:
            y1 = y0 + (y1 - y0) * (max_fpr - x0) / (x1 - x0)
            x1 = max_fpr
        area += (x1 - x0) * (y0 + y1) / 2
    return area


def ref_pauc(rel, scores, qids, max_fpr):
    per = {}
    for q, rows in ref_groups(qids).items():
        classes = {rel[i] > 0 for i in rows}
        per[q] = ref_partial_area(rel, scores, rows, max_fpr) if len(classes) == 2 else math.nan
    vals = [v for v in per.values() if not math.isnan(v)]
    return sum(vals) / len(vals), per


def ref_local_auc(rel, scores, qids, u):
    per = {}
    for q, rows in ref_groups(qids).items():
        ranked_scores = sorted((scores[i] for i in rows), reverse=True)
        t = ranked_scores[math.ceil(round(u * len(rows), 9)) - 1]
        c, p = ref_pairs(rel, scores, rows, keep_pos=lambda i: scores[i] >= t)
        per[q] = c / p if p else math.nan
    vals = [v for v in per.values() if not math.isnan(v)]
    return sum(vals) / len(vals), per


# ---------------------------------------------------------------------------
# Random logs with many ties, in the layouts the implementation special-cases
# ---------------------------------------------------------------------------


def make_log(seed, layout):
    rng = np.random.default_rng(seed)
    if layout == "equal":  # contiguous, equal sizes -> reshape path
        sizes = np.full(60, 7)
    elif layout == "ragged":  # contiguous, sizes 1..12 -> padded matrix path
        sizes = rng.integers(1, 13, size=60)
    elif layout == "long-tail":  # one huge query -> lexsort fallback
        sizes = np.r_[rng.integers(1, 4, size=40), 400]
    else:  # "shuffled": rows of queries interleaved -> lexsort path
        sizes = rng.integers(1, 13, size=60)
    qids = np.repeat(np.array([f"q{i}" for i in range(sizes.size)], dtype=object), sizes)
    n = qids.size
    rel = rng.integers(0, 4, size=n) * (rng.random(n) < 0.6)  # many zeros
    scores = rng.integers(0, 5, size=n).astype(float)  # many ties
    scores[rng.random(n) < 0.2] = -np.inf  # ties at the bottom too
    if layout == "shuffled":
        perm = rng.permutation(n)
        qids, rel, scores = qids[perm], rel[perm], scores[perm]
    return rel, scores, qids


LAYOUTS = ["equal", "ragged", "long-tail", "shuffled"]


def check(result, ref, name):
    value, per = ref
    assert result.name == name
    assert result.value == pytest.approx(value, rel=1e-12, abs=1e-12)
    expected = pd.Series(per, dtype=float)
    assert list(result.per_query.index) == list(expected.index)
    np.testing.assert_allclose(result.per_query.to_numpy(), expected.to_numpy(), rtol=1e-12, atol=1e-12)
    assert result.n_excluded == int(expected.isna().sum())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_all_metrics_match_reference(layout, seed):
    rel, scores, qids = make_log(seed, layout)
    rl, sl, ql = rel.tolist(), scores.tolist(), qids.tolist()
    check(M.arp(rel, scores, query_ids=qids), ref_arp(rl, sl, ql), "arp")
    check(M.dcg(rel, scores, query_ids=qids), ref_dcg(rl, sl, ql), "dcg")
    check(M.ndcg(rel, scores, query_ids=qids, k=3), ref_ndcg(rl, sl, ql, 3), "ndcg@3")
    check(M.ndcg(rel, scores, query_ids=qids, k=None), ref_ndcg(rl, sl, ql, 10**9), "ndcg")
    check(M.auc(rel, scores, query_ids=qids), ref_auc(rl, sl, ql), "auc")
    for m in (0.1, 0.37, 1.0):
        check(M.partial_auc(rel, scores, query_ids=qids, max_fpr=m), ref_pauc(rl, sl, ql, m), "pauc")
    for u in (0.1, 0.3, 0.5, 1.0):
        check(M.local_auc(rel, scores, query_ids=qids, u=u), ref_local_auc(rl, sl, ql, u), "local_auc")


def test_evaluate_matches_individual_functions():
    rel, scores, qids = make_log(3, "shuffled")
    res = M.evaluate(rel, scores, query_ids=qids, k=10, max_fpr=0.2, u=0.3)
    assert list(res) == ["arp", "dcg", "ndcg@10", "auc", "pauc", "local_auc"]
    single = {
        "arp": M.arp(rel, scores, query_ids=qids),
        "dcg": M.dcg(rel, scores, query_ids=qids),
        "ndcg@10": M.ndcg(rel, scores, query_ids=qids, k=10),
        "auc": M.auc(rel, scores, query_ids=qids),
        "pauc": M.partial_auc(rel, scores, query_ids=qids, max_fpr=0.2),
        "local_auc": M.local_auc(rel, scores, query_ids=qids, u=0.3),
    }
    for key, r in single.items():
        assert res[key].value == r.value
        pd.testing.assert_series_equal(res[key].per_query, r.per_query)


def brute_force_over_tie_orders(rel, scores, per_list):
    """Mean of ``per_list(relevances in ranked order)`` over every order of every tie."""
    values = sorted(set(scores), reverse=True)
    blocks = [[i for i in range(len(rel)) if scores[i] == v] for v in values]
    totals = [per_list([rel[i] for block in orders for i in block])
              for orders in itertools.product(*(itertools.permutations(b) for b in blocks))]
    return sum(totals) / len(totals)


def test_ties_equal_brute_force_over_all_orders_of_the_tie():
    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(2, 8))
        rel = rng.integers(0, 4, size=n).tolist()
        scores = rng.integers(0, 3, size=n).astype(float).tolist()
        if sum(rel) == 0:
            rel[0] = 1
        arp_num = brute_force_over_tie_orders(
            rel, scores, lambda ranked: sum(g * (r + 1) for r, g in enumerate(ranked)))
        assert M.arp(rel, scores).value == pytest.approx(arp_num / sum(rel), rel=1e-12)
        dcg = brute_force_over_tie_orders(
            rel, scores, lambda ranked: sum(g / (r + 1) for r, g in enumerate(ranked)))
        assert M.dcg(rel, scores).value == pytest.approx(dcg, rel=1e-12)


def test_all_tied_scores_give_the_expected_rank():
    rel = [0, 0, 3, 1]
    # every document of a 4-way tie sits at rank 2.5 on average
    assert M.arp(rel, [1, 1, 1, 1]).value == pytest.approx(2.5)
    assert M.dcg(rel, [1, 1, 1, 1]).value == pytest.approx(4 * (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    assert M.arp(rel[::-1], [1, 1, 1, 1]).value == M.arp(rel, [1, 1, 1, 1]).value


@pytest.mark.parametrize("layout", LAYOUTS)
def test_shuffled_rows_give_identical_results(layout):
    rel, scores, qids = make_log(7, layout)
    perm = np.random.default_rng(8).permutation(rel.size)
    a = M.evaluate(rel, scores, query_ids=qids, k=3, max_fpr=0.3, u=0.3)
    b = M.evaluate(rel[perm], scores[perm], query_ids=qids[perm], k=3, max_fpr=0.3, u=0.3)
    assert list(a) == list(b)
    for key in a:
        assert a[key].value == b[key].value, key
        pd.testing.assert_series_equal(a[key].per_query.sort_index(), b[key].per_query.sort_index())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 3, 5, None])
def test_ndcg_per_query_equals_sklearn_with_ties(seed, k):
    rel, scores, qids = make_log(seed, "ragged")
    scores = np.where(np.isinf(scores), -1.0, scores)  # sklearn refuses infinite scores
    res = M.ndcg(rel, scores, query_ids=qids, k=k)
    for q in res.per_query.index:
        rows = qids == q
        if rows.sum() < 2 or rel[rows].sum() == 0:  # sklearn needs 2 documents; ulr: NaN
            continue
        want = ndcg_score([2.0 ** rel[rows] - 1], [scores[rows]], k=k)
        assert res.per_query[q] == pytest.approx(want, rel=1e-12, abs=1e-12), q


def test_hand_computed_values():
    rel = [2, 0, 1]
    scores = [0.1, 0.9, 0.5]  # ranking: doc1 (0), doc2 (1), doc0 (2)
    assert M.arp(rel, scores).value == pytest.approx((2 * 3 + 1 * 2) / 3)
    assert M.dcg(rel, scores).value == pytest.approx(2 / 3 + 1 / 2)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert M.ndcg(rel, scores, k=2).value == pytest.approx((1 / math.log2(3)) / idcg)
    assert M.auc(rel, scores).value == pytest.approx(0.0)


# ---------------------------------------------------------------------------
# sklearn
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_auc_and_standardized_pauc_equal_sklearn(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 300))
    y = rng.integers(0, 3, size=n)
    y[:2] = [0, 2]  # both classes
    s = rng.integers(0, 6, size=n).astype(float) if seed % 2 else rng.normal(size=n)
    assert M.auc(y, s).value == pytest.approx(roc_auc_score(y > 0, s), abs=1e-12)
    for m in (0.05, 0.1, 0.25, 0.5, 0.8, 1.0):
        ours = M.partial_auc(y, s, max_fpr=m, standardized=True).value
        assert ours == pytest.approx(roc_auc_score(y > 0, s, max_fpr=m), abs=1e-12)
        raw = M.partial_auc(y, s, max_fpr=m).value
        assert 0.0 <= raw <= m + 1e-15


def test_per_query_auc_equals_sklearn_per_query():
    rel, scores, qids = make_log(7, "shuffled")
    scores[np.isinf(scores)] = -1e9  # sklearn refuses infinities; same order
    res = M.auc(rel, scores, query_ids=qids)
    res_p = M.partial_auc(rel, scores, query_ids=qids, max_fpr=0.3, standardized=True)
    df = pd.DataFrame({"q": qids, "y": rel > 0, "s": scores})
    for q, g in df.groupby("q", sort=False):
        if g["y"].nunique() < 2:
            assert np.isnan(res.per_query[q]) and np.isnan(res_p.per_query[q])
            continue
        assert res.per_query[q] == pytest.approx(roc_auc_score(g["y"], g["s"]), abs=1e-12)
        assert res_p.per_query[q] == pytest.approx(
            roc_auc_score(g["y"], g["s"], max_fpr=0.3), abs=1e-12)


# ---------------------------------------------------------------------------
# Local AUC identity
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("u", [0.05, 0.2, 0.5, 0.9])
def test_local_auc_identity(seed, u):
    """LocAUC(s, u) = PartAUC(s, alpha) + beta (1 - alpha), alpha/beta = FPR/TPR of the top set."""
    rng = np.random.default_rng(seed)
    n = 200
    y = rng.random(n) < 0.3
    y[:2] = [True, False]
    s = rng.integers(0, 15, size=n).astype(float)
    t = np.sort(s)[::-1][math.ceil(round(u * n, 9)) - 1]
    top = s >= t
    alpha = (top & ~y).sum() / (~y).sum()
    beta = (top & y).sum() / y.sum()
    loc = M.local_auc(y, s, u=u).value
    if alpha > 0:
        part = M.partial_auc(y, s, max_fpr=alpha).value
    else:
        part = 0.0  # the ROC area over an empty FPR range
    assert loc == pytest.approx(part + beta * (1 - alpha), abs=1e-12)
    # u = 1 covers everything: LocAUC is the AUC
    assert M.local_auc(y, s, u=1.0).value == pytest.approx(M.auc(y, s).value, abs=1e-12)


# ---------------------------------------------------------------------------
# Undefined cases and validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda y, s, **kw: M.auc(y, s, **kw),
    lambda y, s, **kw: M.partial_auc(y, s, max_fpr=0.2, **kw),
    lambda y, s, **kw: M.local_auc(y, s, u=0.5, **kw),
])
def test_one_class(fn):
    with pytest.raises(UlrError, match="undefined"):
        fn([1, 2, 1], [0.3, 0.2, 0.1])
    with pytest.raises(UlrError, match="undefined"):
        fn([0, 0], [0.3, 0.2])
    # in a log the one-class queries are excluded (NaN) and counted
    y = [1, 0, 1, 1, 0, 0, 2, 0]
    s = [0.9, 0.1, 0.5, 0.4, 0.3, 0.2, 0.1, 0.8]
    q = ["a", "a", "b", "b", "c", "c", "d", "d"]
    res = fn(y, s, query_ids=q)
    assert res.n_queries == 4 and res.n_excluded == 2
    assert np.isnan(res.per_query["b"]) and np.isnan(res.per_query["c"])
    assert res.weight["b"] == 0 and res.weight["c"] == 0
    defined = res.per_query.dropna()
    assert res.value == pytest.approx(defined.mean())
    assert M.auc(y, s, query_ids=q).per_query.to_dict() == {
        "a": 1.0, "b": pytest.approx(np.nan, nan_ok=True),
        "c": pytest.approx(np.nan, nan_ok=True), "d": 0.0}
    with pytest.raises(UlrError, match="no query"):
        fn([1, 1, 0, 0], [1, 2, 3, 4], query_ids=["a", "a", "b", "b"])


def test_no_relevant_document():
    with pytest.raises(UlrError, match="ARP is undefined"):
        M.arp([0, 0], [1, 2])
    with pytest.raises(UlrError, match="nDCG is undefined"):
        M.ndcg([0, 0], [1, 2])
    assert M.dcg([0, 0], [1, 2]).value == 0.0
    res = M.ndcg([0, 0, 1, 0], [1, 2, 1, 2], query_ids=[1, 1, 2, 2])
    assert res.n_excluded == 1 and res.value == pytest.approx(1 / math.log2(3))
    # evaluate leaves undefined metrics out instead of inventing values
    assert set(M.evaluate([1, 1], [1, 2])) == {"arp", "dcg", "ndcg@10"}


@pytest.mark.parametrize("call, msg", [
    (lambda: M.arp([1, 0], [1.0]), "different lengths"),
    (lambda: M.arp([1, 0], [1.0, np.nan]), "NaN"),
    (lambda: M.arp([1, np.nan], [1.0, 2.0]), "finite"),
    (lambda: M.arp([1, -1], [1.0, 2.0]), ">= 0"),
    (lambda: M.arp([1, 0], [1.0, 2.0], query_ids=[1]), "query_ids has length"),
    (lambda: M.arp([1, 0], [1.0, 2.0], query_ids=["a", None]), "missing"),
    (lambda: M.arp([], []), "empty"),
    (lambda: M.arp([[1, 0]], [[1.0, 2.0]]), "one-dimensional"),
    (lambda: M.arp(["x", "y"], [1.0, 2.0]), "numbers"),
    (lambda: M.ndcg([1, 0], [1.0, 2.0], k=0), "k must"),
    (lambda: M.partial_auc([1, 0], [1.0, 2.0], max_fpr=0), "max_fpr"),
    (lambda: M.partial_auc([1, 0], [1.0, 2.0], max_fpr=1.5), "max_fpr"),
    (lambda: M.local_auc([1, 0], [1.0, 2.0], u=0), "u must"),
    (lambda: M.evaluate([1, 0], [1.0, 2.0], k=2.5), "k must"),
])
def test_validation(call, msg):
    with pytest.raises(UlrError, match=msg):
        call()


def test_inputs_accept_series_and_bool_labels():
    y = pd.Series([True, False, True])
    s = pd.Series([0.2, 0.4, 0.9])
    q = pd.Series([5, 5, 5])
    r = M.auc(y, s, query_ids=q)
    assert r.value == pytest.approx(0.5) and list(r.per_query.index) == [5]
    assert float(r) == r.value


# ---------------------------------------------------------------------------
# Resampling
# ---------------------------------------------------------------------------


def test_bootstrap_ci_covers_value_and_shrinks_with_queries():
    rng = np.random.default_rng(0)

    def run(n_queries):
        q = np.repeat(np.arange(n_queries), 10)
        y = rng.integers(0, 2, size=q.size)
        s = y + rng.normal(size=q.size)
        r = M.auc(y, s, query_ids=q)
        lo, hi = M.bootstrap_ci(r, n_bootstrap=400, seed=1)
        assert lo <= r.value <= hi
        return hi - lo

    # width ~ 1/sqrt(queries): 16x the queries should give about 1/4 the width
    w_small, w_large = run(50), run(800)
    assert 0.15 < w_large / w_small < 0.4


def test_bootstrap_ci_ratio_weights_for_arp():
    # one query with all the relevance dominates ARP; every resample is a weighted mean
    r = M.arp([5, 0, 0, 1, 0, 0], [1, 2, 3, 3, 2, 1], query_ids=[1, 1, 1, 2, 2, 2])
    assert r.weight.tolist() == [5.0, 1.0]
    lo, hi = M.bootstrap_ci(r, n_bootstrap=300)
    assert r.per_query.min() <= lo <= r.value <= hi <= r.per_query.max()


def test_paired_test_detects_a_real_difference_and_not_a_null_one():
    rng = np.random.default_rng(4)
    q = np.repeat(np.arange(300), 10)
    y = rng.integers(0, 2, size=q.size)
    good = y + rng.normal(size=q.size)
    bad = y + 3 * rng.normal(size=q.size)
    a = M.auc(y, bad, query_ids=q)
    b = M.auc(y, good, query_ids=q)
    t = M.paired_test(a, b, n_bootstrap=999, seed=2)
    assert t.delta == pytest.approx(b.value - a.value)
    assert t.lower < t.delta < t.upper and t.lower > 0
    assert t.p_value < 0.01 and t.n_queries == 300
    # two rankers drawn from the same distribution: a 95% test rejects rarely
    pvals = []
    for seed in range(10):
        r = np.random.default_rng(50 + seed)
        s1 = y + 2 * r.normal(size=q.size)
        s2 = y + 2 * r.normal(size=q.size)
        pvals.append(M.paired_test(M.auc(y, s1, query_ids=q), M.auc(y, s2, query_ids=q),
                                   n_bootstrap=199, seed=seed).p_value)
    # P(>= 4 of 10 rejections at 5%) < 0.002 under the null
    assert sum(p < 0.05 for p in pvals) <= 3
    # identical systems: no difference at all, p = 1
    same = M.paired_test(a, a, n_bootstrap=99)
    assert same.delta == 0 and same.p_value == 1.0


def test_resampling_does_not_depend_on_the_order_queries_arrive_in():
    """The same queries listed in another order (rows of a shuffled log, or a parallel read)
    give the same interval and p-value: queries are drawn in the order of their ids as text,
    whether the ids are numbers or text."""
    rng = np.random.default_rng(8)
    n_q = 120
    q = np.repeat(np.arange(n_q), 8)
    y = rng.integers(0, 2, size=q.size)
    s1, s2 = y + rng.normal(size=q.size), y + 1.5 * rng.normal(size=q.size)
    # the same rows with whole queries in another order (each query's rows kept in order)
    blocks = rng.permutation(n_q)
    rows = np.concatenate([np.flatnonzero(q == b) for b in blocks])

    def answers(ids, take):
        a = M.auc(y[take], s1[take], query_ids=ids[take])
        b = M.auc(y[take], s2[take], query_ids=ids[take])
        t = M.paired_test(a, b, n_bootstrap=300, seed=3)
        return M.bootstrap_ci(a, n_bootstrap=300, seed=3), (t.lower, t.upper, t.p_value), t.delta

    as_read = answers(q, np.arange(q.size))
    for ids, take in [(q, rows), (q.astype(str), rows), (np.char.add("", q.astype(str)), np.arange(q.size))]:
        ci, test, delta = answers(ids, take)
        assert ci == as_read[0] and test == as_read[1]
        assert delta == pytest.approx(as_read[2], rel=1e-12)
    # a slow reference: resample the queries listed by id as text
    a = M.auc(y[rows], s1[rows], query_ids=q[rows])
    text_order = sorted(range(n_q), key=str)
    v = a.per_query.loc[text_order].dropna().to_numpy()  # a query of one class has no AUC
    r = np.random.default_rng(3)
    means = [np.mean([v[i] for i in r.integers(0, v.size, v.size)]) for _ in range(300)]
    assert as_read[0] == pytest.approx(tuple(np.nanquantile(means, [0.025, 0.975])), rel=1e-12)


def test_paired_test_rejects_different_metrics():
    a = M.auc([1, 0], [1, 0])
    b = M.dcg([1, 0], [1, 0])
    with pytest.raises(UlrError, match="different metrics"):
        M.paired_test(a, b)


def test_many_shuffled_queries_equal_grouped_layout():
    """> 65,536 interleaved queries (two radix passes) give what the grouped rows give."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 5, size=70_000)
    q = np.repeat(np.arange(sizes.size), sizes)
    rel = rng.integers(0, 3, size=q.size)
    s = rng.integers(0, 4, size=q.size).astype(float)
    perm = rng.permutation(q.size)
    q, rel, s = q[perm], rel[perm], s[perm]
    # grouping rows stably keeps each query's input order, hence the same ranking
    grouped = np.argsort(q, kind="mergesort")
    a = M.evaluate(rel, s, query_ids=q, max_fpr=0.3, u=0.5)
    b = M.evaluate(rel[grouped], s[grouped], query_ids=q[grouped], max_fpr=0.3, u=0.5)
    for key in a:
        pd.testing.assert_series_equal(a[key].per_query.sort_index(), b[key].per_query.sort_index())
