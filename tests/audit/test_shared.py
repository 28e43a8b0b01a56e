"""The audit shares work between its questions (issue 54) and its answers stay the same
bit for bit: each answer of a whole audit equals the one the question gives when it is
asked alone, in a context of its own, and the shared pieces equal the calls they replace."""

import numpy as np
import pandas as pd
import pytest

from ulr import audit
from ulr.audit.answers import Context, answer
from ulr.data import ingest


def _same(one, other) -> None:
    """Two answers of the same question are identical: verdict, table, chart and words."""
    assert one.id == other.id
    for name in ("answerable", "reason", "method", "title", "settings", "caveats",
                 "evidence", "params"):
        assert getattr(one, name) == getattr(other, name), (one.id, name)
    assert (one.verdict is None) == (other.verdict is None), one.id
    if one.verdict is not None:
        assert one.verdict.to_dict() == other.verdict.to_dict(), one.id
    assert (one.table is None) == (other.table is None), one.id
    if isinstance(one.table, pd.DataFrame):
        pd.testing.assert_frame_equal(one.table, other.table, check_exact=True)
    assert (one.fig is None) == (other.fig is None), one.id
    if one.fig is not None:
        assert one.fig.to_json() == other.fig.to_json(), one.id


@pytest.mark.parametrize("which", ["rec_log", "search_log"])
def test_every_answer_of_an_audit_is_the_answer_its_question_gives_alone(which, request):
    path, mapping = request.getfixturevalue(which)
    log = ingest.open_file(path, mapping)
    shape = audit.read_shape(log)
    together = audit.run(log, shape=shape)
    asked = [a for a in audit.assess(shape) if a.answerable]
    assert len(asked) >= 4  # the logs answer several questions that share work
    for a in asked:
        alone = answer(Context(log, shape), a)  # a context of its own: nothing shared
        _same(next(x for x in together.answers if x.id == a.id), alone)


def test_the_shared_ctr_table_and_true_theta_are_the_calls_they_replace():
    from ulr.data.summary import ctr_by_position, ctr_by_position_result, true_theta
    log = ingest.open_file(ingest.SAMPLE_CSV)  # records the true theta
    shape = audit.read_shape(log)
    ctx = Context(log, shape)
    pd.testing.assert_frame_equal(ctx.ctr(), ctr_by_position(log), check_exact=True)
    truth = true_theta(log)
    assert truth is not None and np.array_equal(ctx.true_theta(), truth)
    assert ctx.true_theta() is ctx.true_theta()  # read once
    a = answer(ctx, next(x for x in audit.assess(shape) if x.id == "ctr_by_position"))
    share = shape.randomized_rows / shape.rows
    direct = ctr_by_position_result(log, randomized_share=share, mapping=shape.mapping_warnings,
                                    rows=shape.rows, clicks=shape.clicks,
                                    queries=shape.queries, sessions=shape.sessions)
    assert a.verdict.to_dict() == direct.verdict.to_dict()
    pd.testing.assert_frame_equal(a.table, direct.table, check_exact=True)
    assert a.caveats == list(direct.caveats) and a.evidence == direct.evidence


def test_a_shared_value_is_computed_once_when_two_threads_ask_at_once():
    import threading
    import time
    ctx = Context(None, None)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.05)
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(ctx.once("k", slow)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
