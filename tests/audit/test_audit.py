"""ulr.audit: which questions each real-shaped log supports, why not, and the answers."""

import numpy as np
import pytest

from ulr import audit
from ulr.data import ingest
from ulr.audit import questions


def _sets(answers):
    yes = {a.id for a in answers if a.answerable}
    return yes, {a.id: a.reason for a in answers if not a.answerable}


@pytest.fixture(scope="module")
def rec_audit(rec_log):
    path, mapping = rec_log
    return audit.run(ingest.open_file(path, mapping))


@pytest.fixture(scope="module")
def search_audit(search_log):
    path, mapping = search_log
    return audit.run(ingest.open_file(path, mapping))


def test_recommendation_log_answers_the_off_policy_questions_and_names_the_session_column(
        rec_audit):
    yes, no = _sets(rec_audit.answers)
    assert {"off_policy", "policy_learning", "several_loggers", "ctr_by_position",
            "position_bias"} <= yes
    assert {"user_models", "replay", "slates"} <= set(no)
    for q in ("user_models", "replay", "slates"):
        assert "session column" in no[q] and "session_id" in no[q], no[q]
    # 16 user segments: too few queries to hold out for a paired ranker comparison
    assert "rankers" in no and "32" in no["rankers"]
    pb = next(a for a in rec_audit.answers if a.id == "position_bias")
    assert pb.method == "em"  # not randomized as a whole; pairs seen at several slots


def test_search_log_answers_user_models_em_and_replay_and_names_the_propensity_column(
        search_audit):
    yes, no = _sets(search_audit.answers)
    assert {"ctr_by_position", "position_bias", "user_models", "replay"} <= yes
    assert next(a for a in search_audit.answers if a.id == "position_bias").method == "em"
    for q in ("off_policy", "policy_learning", "several_loggers", "slates"):
        assert "propensity column" in no[q], no[q]
    assert "feature columns" in no["rankers"]


def test_every_answer_carries_its_verdict_its_time_and_a_report_item(rec_audit, search_audit):
    for result in (rec_audit, search_audit):
        assert [a.id for a in result.answers] == list(audit.IDS)
        for a in result.answered:
            assert a.verdict is not None and a.verdict.level in (
                "reliable", "directional", "inconclusive", "invalid")
            assert a.seconds > 0 and (a.fig is not None or a.table is not None)
        for a in result.answers:
            if not a.answerable:
                assert a.verdict is None and a.reason.endswith(".")
                assert "--" not in a.reason  # a page shows it: no command-line flag


def test_the_answers_are_the_pages_computations(search_log, search_audit):
    """The position-bias answer is propensity.estimate with the page's defaults, and the
    CTR answer the Data page's table: the same numbers, not a look-alike."""
    from ulr import propensity
    path, mapping = search_log
    log = ingest.open_file(path, mapping)
    r = propensity.estimate(log, method="em", positions=10, n_bootstrap=50, seed=0)
    pb = next(a for a in search_audit.answers if a.id == "position_bias")
    np.testing.assert_allclose(pb.table["theta"].to_numpy(), r.theta, rtol=1e-9)
    ctr = next(a for a in search_audit.answers if a.id == "ctr_by_position").table
    assert int(ctr["clicks"].sum()) == search_audit.shape.clicks
    assert ((ctr["lower"] >= 0) & (ctr["upper"] <= 1)).all()


def test_shape_is_counted_right_against_pandas(rec_log):
    path, mapping = rec_log
    log = ingest.open_file(path, mapping)
    df = log.df()
    s = audit.read_shape(log)
    assert (s.rows, s.clicks, s.queries, s.positions) == (
        len(df), int(df["click"].sum()), df["query_id"].nunique(), df["position"].max())
    assert s.sessions is None and s.loggers == df["logger"].nunique() == 2
    assert s.propensity_rows == len(df) and s.per_slot_propensity and len(s.features) == 8
    npos = df.groupby(["query_id", "doc_id"])["position"].nunique()
    assert (s.pairs, s.pairs_at_several_positions) == (len(npos), int((npos > 1).sum()))


def test_bundled_sample_supports_the_click_questions_and_not_off_policy():
    log = ingest.open_file(ingest.SAMPLE_CSV)
    yes, no = _sets([audit.answer(None, a) if not a.answerable else a
                     for a in audit.assess(audit.read_shape(log))])
    assert yes == {"ctr_by_position", "position_bias", "user_models", "rankers", "replay"}
    assert set(no) == {"off_policy", "policy_learning", "several_loggers", "slates"}


def test_position_bias_method_follows_the_registry_and_the_log():
    base = dict(name="x", content_hash="", rows=100, clicks=5, queries=10, documents=20,
                positions=5, sessions=None, randomized_rows=0, declared_randomized=False,
                propensity_rows=0, per_slot_propensity=False, features=(), loggers=None,
                labelled_rows=0, pairs=20, pairs_at_several_positions=0)
    shape = audit.LogShape(**base)
    assert questions.position_bias_method(shape)[0] is None
    assert audit.position_bias_method(
        audit.LogShape(**{**base, "declared_randomized": True}))[0] == "randomization"
    assert audit.position_bias_method(
        audit.LogShape(**{**base, "pairs_at_several_positions": 3}))[0] == "em"
    assert audit.position_bias_method(
        audit.LogShape(**{**base, "features": ("feature_a",)}))[0] == "regression-em"
    # a method's own declaration decides: regression-em declared to need sessions is refused
    from ulr import propensity
    spec = propensity.REGISTRY["regression-em"]
    propensity.register("regression-em", type(spec)(**{**spec.__dict__, "sessions": True}))
    try:
        method, why = audit.position_bias_method(
            audit.LogShape(**{**base, "features": ("feature_a",)}))
        assert method is None and "randomized" in why
    finally:
        propensity.register("regression-em", spec)


def test_a_cancelled_audit_stops_between_questions(search_log):
    from ulr.errors import Cancelled
    path, mapping = search_log
    asked = []

    def stop():
        asked.append(1)
        return len(asked) > 1
    with pytest.raises(Cancelled):
        audit.run(ingest.open_file(path, mapping), should_stop=stop)


def test_a_bug_in_one_method_is_reported_on_its_question_and_the_others_still_answer(
        search_log, monkeypatch, caplog):
    from ulr.audit import answers
    path, mapping = search_log

    def broken(ctx, a):
        raise ZeroDivisionError("division by zero")
    monkeypatch.setitem(answers.RUNNERS, "replay", broken)
    result = audit.run(ingest.open_file(path, mapping), only=["ctr_by_position", "replay"])
    by = {a.id: a for a in result.answers}
    assert by["ctr_by_position"].answerable and by["ctr_by_position"].verdict is not None
    assert not by["replay"].answerable and by["replay"].verdict is None
    assert "internal error (ZeroDivisionError)" in by["replay"].reason
    assert "audit question replay failed" in caplog.text  # the traceback goes to the log
