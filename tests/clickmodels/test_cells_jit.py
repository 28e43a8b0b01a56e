"""The PBM's EM kernel at the edge maximum likelihood reaches on sparse logs."""

import numpy as np
import pytest

from ulr.clickmodels.cells_jit import cell_step


def test_a_pair_always_clicked_in_an_always_examined_slot_adds_its_clicks():
    # without a prior, EM drives a = e = 1 for a pair clicked at each showing in slot 1:
    # q = 1 - a e = 0, and the cell (no skips) must add its clicks, not divide 0 by 0
    pair, idx = np.array([0, 1]), np.array([0, 1])
    n, c = np.array([3.0, 5.0]), np.array([3.0, 2.0])
    alpha, exam = np.array([1.0, 0.4]), np.array([1.0, 0.5])
    num_a, num_e, ll = cell_step(pair, idx, n, c, alpha, exam)
    q = 1 - 0.4 * 0.5  # the slow formula for the ordinary cell
    assert num_a.tolist() == pytest.approx([3.0, 2.0 + 3.0 * 0.4 * 0.5 / q], rel=1e-15)
    assert num_e.tolist() == pytest.approx([3.0, 2.0 + 3.0 * 0.5 * 0.6 / q], rel=1e-15)
    assert ll == pytest.approx(3 * np.log(1.0) + 2 * np.log(0.2) + 3 * np.log(q), rel=1e-15)


def test_a_skip_where_the_model_says_certain_click_stays_finite():
    num_a, num_e, ll = cell_step(np.array([0]), np.array([0]), np.array([2.0]),
                                 np.array([1.0]), np.array([1.0]), np.array([1.0]))
    assert np.isfinite(num_a).all() and np.isfinite(num_e).all() and np.isfinite(ll)


def test_the_clickmodels_command_without_a_prior_on_a_sparse_long_tailed_log(cli, tmp_path):
    from ulr.audit import logs
    path, _ = logs.search_log(tmp_path / "search.csv", sessions=1200, queries=200, seed=11)
    maps = ["query_id=QueryID", "doc_id=URLID", "position=Rank", "click=Clicked",
            "session_id=SearchID"]
    rc, out, err = cli("clickmodels", "--input", path, *[a for m in maps for a in ("--map", m)],
                       "--prior", "none", "--json")
    assert rc == 0, err  # was: internal error (ZeroDivisionError) in the PBM's EM
