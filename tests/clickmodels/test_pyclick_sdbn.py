"""SDBN against PyClick's SDBN on the long-tailed search fixture (the web-search shaped log of
test_real_shape.py: a DBN user, 300 Zipf-like queries, 4 orders per query).

PyClick's algorithm is written here as the reference (``pyclick/click_models/SDBN.py``,
``Param.py``, ``Evaluation.py``): per (query, doc) pair, attractiveness = (1 + clicks) / (2 +
results at or above the session's last click, every result when none was clicked),
satisfaction = (1 + last clicks) / (2 + clicks), 1/2 for an unseen pair; the perplexity at
rank r is 2^(-mean log2 P(C_r = c_r)) with ``P(C_r = 1) = attr * exam``,
``exam *= (1 - sat) attr + (1 - attr)``, averaged over ranks.
"""

import math

import numpy as np
import pytest

from tests.clickmodels.helpers import compress, long_tail_log, sessions_of
from ulr.clickmodels import DEFAULT, evaluate


def pyclick_sdbn_perplexity(S):
    tr, te = np.flatnonzero(~S.test), np.flatnonzero(S.test)
    num_a, den_a, num_s, den_s = {}, {}, {}, {}
    for i in tr:
        c = int(S.count[i])
        n = int((S.pair[i] >= 0).sum())
        clicked = [r for r in range(n) if S.click[i, r]]
        last = clicked[-1] if clicked else n
        for r in range(n):
            q = int(S.pair[i, r])
            if r <= last:
                num_a[q] = num_a.get(q, 0) + c * int(S.click[i, r])
                den_a[q] = den_a.get(q, 0) + c
            if S.click[i, r]:
                num_s[q] = num_s.get(q, 0) + c * int(r == last)
                den_s[q] = den_s.get(q, 0) + c
    logs, shown = [0.0] * S.ranks, [0] * S.ranks
    for i in te:
        c = int(S.count[i])
        exam = 1.0
        for r in range(S.ranks):
            q = int(S.pair[i, r])
            if q < 0:
                break
            a = (1 + num_a.get(q, 0)) / (2 + den_a.get(q, 0))
            s = (1 + num_s.get(q, 0)) / (2 + den_s.get(q, 0))
            p = a * exam
            logs[r] += c * math.log2(p if S.click[i, r] else 1 - p)
            shown[r] += c
            exam *= (1 - s) * a + (1 - a)
    by_rank = [2 ** (-x / n) for x, n in zip(logs, shown)]
    return sum(by_rank) / len(by_rank), by_rank


@pytest.fixture(scope="module")
def search():
    """``search(model)``: the fixture's sessions (every 5th held out)."""
    cache = {}

    def get(model):
        if model not in cache:
            sim = long_tail_log(model, sessions=6000, queries=300, orders=4, seed=5)
            cache[model] = compress(sessions_of(sim, test_every=5))
        return cache[model]
    return get


def test_sdbn_counts_with_pyclicks_prior_is_pyclicks_sdbn(search):
    S = search("dbn")
    ref, ref_by_rank = pyclick_sdbn_perplexity(S)
    s = evaluate.compare(S, ["sdbn-counts"], prior="1,1").score("sdbn-counts")
    assert s.perplexity == pytest.approx(ref, abs=1e-9)
    np.testing.assert_allclose(s.perplexity_by_rank, ref_by_rank, atol=1e-9)


def test_sdbn_is_within_0_0005_of_pyclick_on_the_long_tailed_search_fixture(search):
    """With ulr's default (auto) prior the counting SDBN is at least as accurate as PyClick's
    (the issue's bar: within 0.0005 of its held-out perplexity, lower is better)."""
    S = search("dbn")
    ref, _ = pyclick_sdbn_perplexity(S)
    res = evaluate.compare(S, ["sdbn", "sdbn-counts"])
    assert res.score("sdbn-counts").perplexity <= ref + 0.0005
    # the difference of ulr's EM SDBN is definitional: gamma = 1 on users who abandon
    assert res.score("sdbn").perplexity > res.score("sdbn-counts").perplexity


def test_on_users_who_never_abandon_the_em_sdbn_is_the_more_accurate(search):
    S = search("sdbn")
    ref, _ = pyclick_sdbn_perplexity(S)
    res = evaluate.compare(S, ["sdbn", "sdbn-counts"])
    assert res.score("sdbn").perplexity < ref
    assert res.score("sdbn").perplexity < res.score("sdbn-counts").perplexity


def test_default_comparison_is_unchanged():
    assert DEFAULT == ("pbm", "cascade", "dcm", "dbn", "sdbn", "ubm")


def pyclick_dcm_perplexity(S):
    """PyClick's DCM (``pyclick/click_models/DCM.py``): attractiveness counted as SDBN's,
    continuation per rank = (1 + clicks at r that are not the last) / (2 + clicks at r),
    ``exam *= cont attr + (1 - attr)``."""
    tr, te = np.flatnonzero(~S.test), np.flatnonzero(S.test)
    num_a, den_a = {}, {}
    num_c, den_c = [1.0] * S.ranks, [2.0] * S.ranks
    for i in tr:
        c = int(S.count[i])
        n = int((S.pair[i] >= 0).sum())
        clicked = [r for r in range(n) if S.click[i, r]]
        last = clicked[-1] if clicked else n
        for r in range(n):
            q = int(S.pair[i, r])
            if r <= last:
                num_a[q] = num_a.get(q, 0) + c * int(S.click[i, r])
                den_a[q] = den_a.get(q, 0) + c
            if S.click[i, r]:
                num_c[r] += c * int(r != last)
                den_c[r] += c
    logs, shown = [0.0] * S.ranks, [0] * S.ranks
    for i in te:
        c = int(S.count[i])
        exam = 1.0
        for r in range(S.ranks):
            q = int(S.pair[i, r])
            if q < 0:
                break
            a = (1 + num_a.get(q, 0)) / (2 + den_a.get(q, 0))
            cont = num_c[r] / den_c[r]
            p = a * exam
            logs[r] += c * math.log2(p if S.click[i, r] else 1 - p)
            shown[r] += c
            exam *= cont * a + (1 - a)
    by_rank = [2 ** (-x / n) for x, n in zip(logs, shown)]
    return sum(by_rank) / len(by_rank)


def test_dcm_counts_with_pyclicks_prior_is_pyclicks_dcm(search):
    """With "1,1" dcm-counts is PyClick's DCM. With the default (auto) prior it is 0.0019
    behind PyClick on this fixture (measured; unlike SDBN, where the auto prior is ahead):
    the issue's bar of 0.0005 holds for DCM only with PyClick's prior, which is why
    docs/clickmodels.md says to pick it for DCM. ulr's EM DCM is further behind, by
    definition (users who abandon)."""
    S = search("dbn")
    ref = pyclick_dcm_perplexity(S)
    exact = evaluate.compare(S, ["dcm-counts"], prior="1,1").score("dcm-counts")
    assert exact.perplexity == pytest.approx(ref, abs=1e-9)
    res = evaluate.compare(S, ["dcm", "dcm-counts"])
    assert res.score("dcm-counts").perplexity <= ref + 0.0025
    assert res.score("dcm").perplexity > res.score("dcm-counts").perplexity
