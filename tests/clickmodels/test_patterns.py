"""Fitting on the aggregate's distinct session patterns (rows weighted by their count) gives
what fitting on one row per session gives, to 1e-9: the same sums in another grouping."""

import numpy as np
import pandas as pd
import pytest

from tests.clickmodels.helpers import compress, per_session, record_joins
from ulr.data import ingest
from ulr.clickmodels import DEFAULT, MODELS, evaluate, sessions
from ulr.data.scan import scan_of
from ulr.simulate import simulate_click_model, write_log

MODEL_NAMES = list(DEFAULT)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Per model: 3,000 sessions of 4 documents (in 24 orders) over 4 queries, as the
    aggregate's patterns and as one row per session."""
    root, out = tmp_path_factory.mktemp("patterns"), {}
    for name in MODEL_NAMES:
        sim = simulate_click_model(name, sessions=3000, queries=4, positions=4, seed=5)
        df = sim.df.drop(columns=["true_theta"])
        write_log(df, str(root / f"{name}.parquet"))
        scan = scan_of(ingest.open_file(root / f"{name}.parquet"))
        S = sessions.collect(scan, test_fraction=0.25, seed=2)
        out[name] = (S, per_session(df, test_fraction=0.25, seed=2))
    return out


def test_the_aggregate_is_the_per_session_log_grouped(logs):
    for S, P in logs.values():
        expected = compress(P)
        for k in ("pair", "click", "test", "count"):
            np.testing.assert_array_equal(getattr(S, k), getattr(expected, k))
        assert S.sessions < P.sessions / 2  # 4 documents in 24 orders: patterns repeat
        assert S.total == P.sessions == 3000


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_pattern_fit_equals_per_session_fit(logs, name):
    S, P = logs[name]
    cls = MODELS[name]
    a, b = cls.fit(S, max_iter=30, tol=0), cls.fit(P, max_iter=30, tol=0)
    for k, v in vars(b).items():
        if isinstance(v, (np.ndarray, float)):
            np.testing.assert_allclose(getattr(a, k), v, rtol=0, atol=1e-9, err_msg=k)
    np.testing.assert_allclose(a.examination_by_rank(S), b.examination_by_rank(P), atol=1e-9)


def test_comparison_on_patterns_equals_per_session(logs):
    S, P = logs["dbn"]
    a = evaluate.compare(S, MODEL_NAMES)
    b = evaluate.compare(P, MODEL_NAMES)
    assert a.best == b.best
    assert (a.train_sessions, a.test_sessions) == (b.train_sessions, b.test_sessions)
    for m in MODEL_NAMES:
        x, y = a.score(m), b.score(m)
        for k in ("log_likelihood", "perplexity", "conditional_perplexity", "gap"):
            assert abs(getattr(x, k) - getattr(y, k)) < 1e-9, (m, k)
        for k in ("perplexity_by_rank", "ctr_predicted", "ctr_observed", "examination"):
            np.testing.assert_allclose(getattr(x, k), getattr(y, k), atol=1e-9)


def test_pattern_bootstrap_has_the_per_session_spread(logs):
    """A row of c sessions gets Poisson(c) per replicate, the sum of its sessions' Poisson(1)
    weights, so the bootstrap's law is the per-session one (the draws differ). With 1,000
    replicates each, the 95% intervals' widths agree within four Monte Carlo standard errors
    (a percentile width's relative error is about 3% at B = 1000, so 4 x sqrt(2) x 3%)."""
    S, P = logs["dbn"]
    kw = dict(n_bootstrap=1000, refit_intervals=False)
    a = evaluate.compare(S, ["pbm", "dbn"], seed=4, **kw).score("dbn").ll_interval
    b = evaluate.compare(P, ["pbm", "dbn"], seed=9, **kw).score("dbn").ll_interval
    wa, wb = a[1] - a[0], b[1] - b[0]
    assert abs(wa - wb) <= 4 * np.sqrt(2) * 0.03 * wb, (a, b)


def _scan(tmp_path, df):
    write_log(df, str(tmp_path / "log.parquet"))
    return scan_of(ingest.open_file(tmp_path / "log.parquet"))


def test_positions_keep_ranks_1_to_k(tmp_path):
    df = simulate_click_model("dbn", sessions=400, queries=3, positions=5, seed=8).df
    df = df.drop(columns=["true_theta"])
    S = sessions.collect(_scan(tmp_path, df), test_fraction=0.3, seed=1, positions=3)
    expected = compress(per_session(df[df.position <= 3], test_fraction=0.3, seed=1))
    assert S.ranks == 3
    for k in ("pair", "click", "test", "count"):
        np.testing.assert_array_equal(getattr(S, k), getattr(expected, k))


@pytest.mark.parametrize("change,words", [
    (lambda df: pd.concat([df, df.iloc[[0]]]), "two results at one position"),
    (lambda df: df[~((df.session_id == 3) & (df.position == 2))], "skip a position"),
])
def test_broken_sessions_are_one_sentence(tmp_path, change, words):
    from ulr.errors import UlrError
    df = simulate_click_model("pbm", sessions=50, queries=2, positions=4, seed=2).df
    df = change(df.drop(columns=["true_theta"]))
    with pytest.raises(UlrError, match=words):
        sessions.collect(_scan(tmp_path, df))


def test_rows_without_a_session_id_are_left_out(tmp_path):
    df = simulate_click_model("dbn", sessions=300, queries=3, positions=4, seed=6).df
    df = df.drop(columns=["true_theta"])
    df["session_id"] = df.session_id.astype(str)
    gone = df.session_id.isin(["4", "17", "250"])
    df.loc[gone, "session_id"] = None
    S = sessions.collect(_scan(tmp_path, df), test_fraction=0.2, seed=3)
    kept = df[~gone]  # still shows all 12 pairs, so the pairs are numbered alike
    assert S.total == 297 and S.n_pairs == 12
    expected = compress(per_session(kept, test_fraction=0.2, seed=3))
    for k in ("pair", "click", "test", "count"):
        np.testing.assert_array_equal(getattr(S, k), getattr(expected, k))


def test_a_hash_shared_by_pairs_falls_back_to_the_join_on_text(tmp_path, monkeypatch):
    """Every pair hashed alike (the worst collision): the hash join gives rows two pairs,
    and collect answers with the join on the ids as text, the same patterns."""
    df = simulate_click_model("dbn", sessions=300, queries=3, positions=4, seed=6).df
    df = df.drop(columns=["true_theta"])
    scan = _scan(tmp_path, df)
    keys = record_joins(monkeypatch, rewrite=lambda sql: sql.replace(" hash(", " 0 * hash("))
    S = sessions.collect(scan, test_fraction=0.2, seed=3)
    assert keys == ["hash", "text"]
    expected = compress(per_session(df, test_fraction=0.2, seed=3))
    for k in ("pair", "click", "test", "count"):
        np.testing.assert_array_equal(getattr(S, k), getattr(expected, k))


def test_a_true_repeat_is_refused_after_the_join_on_text(tmp_path, monkeypatch):
    df = simulate_click_model("pbm", sessions=50, queries=2, positions=4, seed=2).df
    df = pd.concat([df.drop(columns=["true_theta"])] * 2)  # every row twice
    keys = record_joins(monkeypatch)
    from ulr.errors import UlrError
    with pytest.raises(UlrError, match="two results at one position"):
        sessions.collect(_scan(tmp_path, df))
    assert keys == ["hash", "text"]


def test_bigint_codes_give_the_integer_codes_patterns(tmp_path, monkeypatch):
    """Logs of 2**30 rows or more pivot BIGINT codes: the same patterns as INTEGER ones."""
    df = simulate_click_model("ubm", sessions=300, queries=3, positions=4, seed=9).df
    scan = _scan(tmp_path, df.drop(columns=["true_theta"]))
    a = sessions.collect(scan, test_fraction=0.2, seed=3)
    real = sessions._pattern_sql
    monkeypatch.setattr(sessions, "_pattern_sql", lambda k, where, **kw: real(
        k, where, **{**kw, "code_type": "BIGINT"}))
    b = sessions.collect(scan, test_fraction=0.2, seed=3)
    for k in ("pair", "click", "test", "count"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert a.pair.dtype == b.pair.dtype == np.int32
