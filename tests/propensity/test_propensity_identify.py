"""What a log identifies: the position graph against a slow reference, and its verdict."""

import itertools
import json

import numpy as np
import pytest

from ulr.propensity.identify import MIN_LINK_PAIRS, from_cells, identify
from ulr.simulate import simulate_clicks


def reference(cells, k):
    """Plain Python: the positions each pair was seen at, pair counts per two positions, and
    the positions reachable from position 1 by breadth-first search."""
    at = {}
    for q, p in cells:
        at.setdefault(q, set()).add(p - 1)
    links = [[0] * k for _ in range(k)]
    for ps in at.values():
        for i, j in itertools.product(ps, ps):
            links[i][j] += 1
    seen, todo = {0}, [0]
    while todo:
        i = todo.pop()
        for j in range(k):
            if j not in seen and links[i][j] > 0:
                seen.add(j)
                todo.append(j)
    return np.array(links), np.array([i in seen for i in range(k)])


def test_graph_matches_a_slow_reference():
    rng = np.random.default_rng(3)
    for trial in range(5):
        k = 6
        cells = {(int(rng.integers(0, 40)), int(rng.integers(1, k + 1))) for _ in range(60)}
        if trial == 0:  # positions 5 and 6 only among themselves
            cells = {(q, p) for q, p in cells if p < 5} | {(100, 5), (100, 6)}
        cells = sorted(cells)
        links, linked = reference(cells, k)
        got = from_cells([c[0] for c in cells], [c[1] for c in cells], k)
        np.testing.assert_array_equal(got.links, links)
        np.testing.assert_array_equal(got.identified, linked)
        if trial == 0:
            assert not got.identified[4] and not got.identified[5]
            assert got.verdict.level == "inconclusive"
            assert "positions 5 and 6" in got.verdict.takeaway
            assert "random order" in got.verdict.takeaway  # names the cure


def test_verdicts_name_the_cure():
    none = from_cells([0, 1, 2], [1, 2, 3], 3)
    assert none.verdict.level == "invalid" and "random order" in none.verdict.takeaway
    thin = from_cells([0, 0, 1, 1], [1, 2, 2, 3], 3)
    assert thin.verdict.level == "directional"
    many = from_cells(np.repeat(np.arange(MIN_LINK_PAIRS), 3),
                      np.tile([1, 2, 3], MIN_LINK_PAIRS), 3)
    assert many.verdict.level == "reliable"
    assert many.to_dict()["linking_pairs"] == [MIN_LINK_PAIRS] * 3


def test_a_simulated_log_is_identified_and_the_cli_says_so(open_df, cli, tmp_path):
    from ulr.simulate import write_log
    sim = simulate_clicks(queries=40, positions=5, sessions=2000, features=0, seed=1)
    ident = identify(open_df(sim.df), method="em")
    assert ident.identified.all() and ident.verdict.level == "reliable"
    path = tmp_path / "log.csv"
    write_log(sim.df, str(path))
    r = cli("propensity", "--method", "em", "--identify", "--input", path, "--json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)
    assert out["identified"] == [True] * 5 and len(out["links"]) == 5
    r = cli("propensity", "--method", "em", "--identify", "--input", path)
    assert r.rc == 0 and "identified" in r.out and "verdict: RELIABLE" in r.out


def test_randomization_is_told_that_the_graph_is_not_its_evidence():
    ident = from_cells([0, 1], [1, 2], 2, method="randomization")
    assert "randomized rows" in ident.verdict.takeaway
