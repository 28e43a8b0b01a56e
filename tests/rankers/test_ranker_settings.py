"""RankerSettings: train_and_evaluate's options as one frozen object, checked once when
built, with the sentences of before and the same comparison as the keywords."""

import pytest

from ulr import rankers
from ulr.rankers import RankerSettings
from ulr.simulate import simulate_clicks
from ulr.validate import BadOption


@pytest.mark.parametrize("option, bad, sentence", [
    ("learner", "svm", "learner must be one of linear, gbdt, not 'svm'."),
    ("seed", -1, "seed must be 0 or more, got -1."),
    ("n_bootstrap", 1, "n_bootstrap must be 0 (no interval) or between 2 and 10,000, got 1."),
    ("level", 0.0, "level must lie strictly between 0 and 1, got 0.0."),
])
def test_each_bad_option_is_refused_with_its_sentence_before_any_fit(option, bad, sentence):
    with pytest.raises(BadOption) as err:
        RankerSettings(**{option: bad})
    assert str(err.value) == sentence and err.value.option == option
    with pytest.raises(BadOption) as err:  # before the frame is even read
        rankers.train_and_evaluate(None, None, [1.0], **{option: bad})
    assert str(err.value) == sentence


def test_the_comparison_is_the_same_from_settings_and_from_keywords():
    sim = simulate_clicks(queries=40, positions=5, sessions=1500, eta=1.0, seed=3)
    kw = dict(clip=5.0, normalize=True, seed=2, test_fraction=0.4, k=5, n_bootstrap=100,
              level=0.9)
    a = rankers.train_and_evaluate(sim.df, None, sim.theta, **kw)
    b = rankers.train_and_evaluate(sim.df, None, sim.theta, RankerSettings(**kw))
    c = rankers.train_and_evaluate(sim.df, None, sim.theta,
                                   RankerSettings(**{**kw, "seed": 9}), seed=2)
    assert a.metrics() == b.metrics() == c.metrics()
    assert a.verdict.to_dict() == b.verdict.to_dict() and a.settings == b.settings
    assert a.settings["k"] == 5 and a.level == 0.9 and a.n_bootstrap == 100
    several = rankers.compare_learners(sim.df, None, sim.theta, RankerSettings(**kw),
                                       learners=("linear",))
    assert several.first.metrics() == a.metrics() and several.level == 0.9
    with pytest.raises(TypeError, match=r"train_and_evaluate\(\) got an unexpected keyword "
                                        r"argument 'eta'"):
        rankers.train_and_evaluate(sim.df, None, sim.theta, eta=1.0)
