"""ulr.ope.settings: the options of an evaluation and of policy learning as one frozen,
validated object, the same results as the keywords, the same sentences as before."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from ulr.data import ingest
from ulr.ope import OPESettings, evaluate_log
from ulr.ope.crm import learn_policy
from ulr.ope.settings import CRMSettings
from ulr.ope.simulate import simulate_bandit
from ulr.ope.study import crm_study
from ulr.result import jsonable
from ulr.validate import BadOption

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_ope.csv"


@pytest.mark.parametrize("option, bad, sentence", [
    ("level", 1.0, "level must lie strictly between 0 and 1, got 1.0."),
    ("n_bootstrap", 0, "n_bootstrap must be between 2 and 10,000, got 0."),
    ("seed", -3, "seed must be 0 or more, got -3."),
    ("interval", "wald", "unknown interval 'wald'; choose from bootstrap, t, hoeffding, "
                         "bernstein."),
    ("target", "best", "unknown target 'best'; choose from fitted, column, scores, uniform, "
                       "table."),
    ("action", "slot", "the action must be 'doc_id' or 'position'."),
    ("fit_fraction", 1.0, "the fit fraction must lie strictly between 0 and 1."),
    ("fit_fraction", -0.2, "the fit fraction must lie strictly between 0 and 1."),
    ("clip", 0, "the clipping threshold must be a positive number."),
    ("clip", float("nan"), "the clipping threshold must be a positive number."),
    ("folds", 0, "the number of cross-fitting folds must be at least 1."),
    ("folds", 1.5, "the number of cross-fitting folds must be at least 1."),
    ("reward_model", "forest", "unknown reward model 'forest'; choose from linear, gbdt."),
])
def test_ope_settings_refuse_each_bad_option_with_its_sentence(option, bad, sentence):
    with pytest.raises(BadOption) as err:
        OPESettings(**{option: bad})
    assert str(err.value) == sentence and err.value.option == option
    with pytest.raises(BadOption):  # replacing checks again
        OPESettings().replace(**{option: bad})


def test_ope_settings_are_frozen_hashable_and_keep_what_they_were_given():
    s = OPESettings(estimators=["ips", "snips"], fit_fraction=0, clip=5, level=np.float64(0.9))
    assert s.estimators == ("ips", "snips") and s.fit_fraction == 0 and s.clip == 5
    assert type(s.level) is float and hash(s) == hash(OPESettings(**dataclasses.asdict(s)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.level = 0.5
    assert OPESettings(fit_fraction=None).fit_fraction is None


def _json(res) -> str:
    return json.dumps(jsonable(res.to_dict()), sort_keys=True)


def test_evaluate_log_gives_the_same_result_from_settings_and_from_keywords():
    log = ingest.open_file(SAMPLE)
    kw = dict(estimators=["ips", "snips", "dr"], n_bootstrap=60, level=0.9, seed=3,
              fit_fraction=0.4, temperature=0.5, interval="t", folds=3)
    by_keywords = evaluate_log(log, **kw)
    by_settings = evaluate_log(log, OPESettings(**kw))
    overridden = evaluate_log(log, OPESettings(**{**kw, "seed": 9, "level": 0.5}), seed=3,
                              level=0.9)
    assert _json(by_keywords) == _json(by_settings) == _json(overridden)
    assert by_settings.settings["level"] == 0.9 and by_settings.settings["folds"] == 3


def test_evaluate_log_names_an_unknown_keyword_and_a_wrong_settings_object():
    log = ingest.open_file(SAMPLE)
    with pytest.raises(TypeError, match="evaluate_log\\(\\) got an unexpected keyword "
                                        "argument 'bootstrap'"):
        evaluate_log(log, bootstrap=100)
    with pytest.raises(TypeError, match="takes its settings as a OPESettings, not dict"):
        evaluate_log(log, {"level": 0.9})
    with pytest.raises(TypeError, match="not CRMSettings"):
        evaluate_log(log, CRMSettings())


@pytest.mark.parametrize("option, bad, sentence", [
    ("objective", "dr", "unknown objective 'dr'; choose ips or snips."),
    ("steps", 0, "steps >= 1, a positive learning rate and a momentum in [0, 1) are needed."),
    ("learning_rate", 0.0, "steps >= 1, a positive learning rate and a momentum in [0, 1) "
                           "are needed."),
    ("momentum", 1.0, "steps >= 1, a positive learning rate and a momentum in [0, 1) are "
                      "needed."),
    ("l2", -0.1, "the penalties must be >= 0."),
    ("variance_penalty", -1, "the penalties must be >= 0."),
    ("clip", 0, "the clipping threshold must be positive."),
    ("fit_fraction", 0, "the fit fraction must lie strictly between 0 and 1."),
    ("n_bootstrap", 1, "n_bootstrap must be between 2 and 10,000, got 1."),
    ("level", 0, "level must lie strictly between 0 and 1, got 0."),
    ("seed", -1, "seed must be 0 or more, got -1."),
])
def test_crm_settings_refuse_each_bad_option_with_its_sentence(option, bad, sentence):
    with pytest.raises(BadOption) as err:
        CRMSettings(**{option: bad})
    assert str(err.value) == sentence and err.value.option == option


def test_learn_policy_and_crm_study_give_the_same_result_from_settings_and_keywords():
    kw = dict(objective="ips", l2=0.1, variance_penalty=0.2, clip=30.0, steps=15,
              fit_fraction=0.6, n_bootstrap=50, level=0.8, seed=2)
    fb = simulate_bandit(contexts=5, actions=4, n_features=2, seed=1).sample(1200, seed=2) \
        .feedback(0)
    a = learn_policy(fb, **kw)
    b = learn_policy(fb, CRMSettings(**kw))
    assert json.dumps(jsonable(a.to_dict())) == json.dumps(jsonable(b.to_dict()))
    assert np.array_equal(a.coef, b.coef) and a.settings["objective"] == "ips"
    world = dict(contexts=5, actions=4, n_features=2, rows=1200)
    c = crm_study(None, **world, **kw)
    d = crm_study(None, CRMSettings(**kw), **world)
    assert c["truth"] == d["truth"] and np.array_equal(c["truth_path"], d["truth_path"])
    assert json.dumps(jsonable(c["result"].to_dict())) == \
        json.dumps(jsonable(d["result"].to_dict()))
    with pytest.raises(TypeError, match="crm_study\\(\\) got an unexpected keyword argument "
                                        "'temperature'"):
        crm_study(None, temperature=1.0)
