"""SweepSettings: a severity sweep's options as one frozen object, checked once when built,
with the same sentences as before and the same sweep as the keywords."""

import dataclasses

import pytest

from ulr import rankers
from ulr.rankers import SweepSettings
from ulr.validate import BadOption


@pytest.mark.parametrize("option, bad, sentence", [
    ("queries", 0, "queries must be at least 1."),
    ("sessions", -5, "sessions must be at least 1."),
    ("positions", 0, "positions must be at least 1."),
    ("runs", 0, "runs must be at least 1."),
    ("runs", "two", "runs must be at least 1."),
    ("learner", "forest", "learner must be one of linear, gbdt, not 'forest'."),
    ("seed", -1, "seed must be 0 or more, got -1."),
    ("level", 1.5, "level must lie strictly between 0 and 1, got 1.5."),
])
def test_each_bad_option_is_refused_with_its_sentence_before_any_simulation(option, bad,
                                                                            sentence):
    with pytest.raises(BadOption) as err:
        SweepSettings(**{option: bad})
    assert str(err.value) == sentence and err.value.option == option
    calls = []
    with pytest.raises(BadOption, match=sentence.replace(".", r"\.").replace("(", r"\(")):
        rankers.severity_sweep([1.0], progress=lambda *a: calls.append(a), **{option: bad})
    assert calls == []  # refused at entry: nothing simulated


def test_the_sweep_is_the_same_from_settings_and_from_keywords():
    kw = dict(queries=20, positions=5, sessions=300, runs=2, seed=4, clip=10.0,
              normalize=True, level=0.9)
    a = rankers.severity_sweep([0.0, 1.0], **kw)
    b = rankers.severity_sweep([0.0, 1.0], SweepSettings(**kw))
    c = rankers.severity_sweep([0.0, 1.0], SweepSettings(**{**kw, "seed": 7}), seed=4)
    assert a.rows.equals(b.rows) and a.rows.equals(c.rows)
    assert a.verdicts["ndcg@10"].to_dict() == b.verdicts["ndcg@10"].to_dict()
    assert set(a.rows["eta"]) == {0.0, 1.0} and set(a.rows["run"]) == {0, 1}


def test_settings_are_frozen_and_unknown_or_retired_keywords_are_named():
    s = SweepSettings(queries=40)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.queries = 10
    with pytest.raises(TypeError, match=r"severity_sweep\(\) got an unexpected keyword "
                                        r"argument 'temperature'"):
        rankers.severity_sweep([1.0], temperature=1.0)
    with pytest.raises(TypeError, match="takes positions=, not docs_per_query="):
        rankers.severity_sweep([1.0], docs_per_query=5)
