"""Every result type of ulr, built through its builder, follows the one protocol
(ulr/result.py, docs/verdicts.md §6): ``verdict``, ``evidence``, ``quantities()``,
``tables()`` and ``to_dict()``; built once, never written into afterwards.

A result type without a builder here fails the first test, so a new one cannot slip past.
"""

import ast
import importlib
import inspect
import json
import pkgutil
from dataclasses import FrozenInstanceError, fields, is_dataclass

import numpy as np
import pandas as pd
import pytest

import ulr
from tests.test_verdict import _comparison, _heavy_tailed, _open, _randomized
from ulr import verdict as V
from ulr.quantity import Quantity
from ulr.result import RESULT_TYPES, Result
from ulr.simulate import simulate_clicks


def _all_result_types() -> dict:
    for m in pkgutil.walk_packages(ulr.__path__, "ulr."):
        if m.name != "ulr.__main__":
            importlib.import_module(m.name)
    return {f"{c.__module__}.{c.__name__}": c for c in RESULT_TYPES}


def _search_log(tmp):
    sim = simulate_clicks(queries=30, positions=5, sessions=1500, eta=1.0,
                          randomized_fraction=0.3, seed=3)
    df = sim.df.drop(columns=["true_theta"], errors="ignore")
    df["device"] = np.where(df["session_id"].astype(str).str[-1].isin(list("01234")),
                            "mobile", "desktop")
    return _open(df, tmp, "search.parquet")


def _ope(tmp):
    return _heavy_tailed()


def _crm(tmp):
    from ulr.ope.study import crm_study
    return crm_study(None, steps=30, rows=600, base_rate=0.05)["result"]


def _slate(tmp):
    from ulr.ope.simulate import make_sample_log
    from ulr.ope.slate import slate_from_log
    return slate_from_log(_open(make_sample_log(rows=3000, ctr=0.02, seed=2), tmp, "s.parquet"))


def _ope_study(tmp):
    from ulr.ope.study import simulation_study
    return simulation_study(rows=200, runs=20, estimators=("ips", "snips"), logging="softmax",
                            temperature=0.3)


def _click_models(tmp):
    from ulr.clickmodels import evaluate, sessions
    from ulr.data.scan import scan_of
    S = sessions.collect(scan_of(_search_log(tmp)), test_fraction=0.2, seed=0)
    return evaluate.compare(S, ["pbm", "dcm"], n_bootstrap=20, seed=0, test_fraction=0.2,
                            refit_intervals=False)


def _ctr(tmp):
    from ulr.data.summary import ctr_by_position_result
    return ctr_by_position_result(_search_log(tmp), randomized_share=0.3)


def _propensity(tmp):
    from ulr import propensity
    return propensity.estimate(_search_log(tmp), method="em", n_bootstrap=20,
                               weigh_facts=False)


def _identify(tmp):
    from ulr.propensity.identify import identify
    return identify(_search_log(tmp), method="em")


def _segments(tmp):
    from ulr.propensity.segments import by_segment
    return by_segment(_search_log(tmp), method="randomization", column="device",
                      n_bootstrap=20)


def _rankers(tmp):
    return _comparison(40, 600, n_bootstrap=100)


def _systems(tmp):
    from ulr.rankers.systems import compare_learners
    sim = simulate_clicks(queries=40, positions=10, sessions=600, eta=1.5, seed=1)
    return compare_learners(sim.df, None, sim.theta, learners=("linear", "gbdt"),
                            min_queries=0, n_bootstrap=100, n_resamples=200)


def _sweep(tmp):
    from ulr.rankers.sweep import severity_sweep
    return severity_sweep((1.0,), queries=40, sessions=1000, runs=2)


def _replay(tmp):
    from ulr.bandits.replay import replay
    return replay(_randomized(tmp, 200, "r.parquet"), "ucb1", positions=1)


def _bandit(tmp):
    from ulr.bandits.envs import make_env
    from ulr.bandits.simulate import simulate
    return simulate("ucb1", make_env("kveton", items=6, positions=2, p=0.2, delta=0.15, seed=0),
                    steps=200, runs=3)


def _lab(tmp):
    from ulr.bandits.envs import make_env
    from ulr.bandits.simulate import BanditLab
    lab = BanditLab(env=make_env("kveton", items=6, positions=2, p=0.2, delta=0.15, seed=0),
                    algorithms=("ucb1", "cascade-klucb"), steps=300, runs=3)
    lab.advance(5.0)
    return lab


def _recommend(tmp):
    from ulr.recommend.data import simulate_mnar
    from ulr.recommend.experiment import compare_seeds, run_experiment
    from ulr.recommend.models import MFConfig
    return compare_seeds([run_experiment(simulate_mnar(users=60, items=40, seed=s),
                                         models=("naive-mf", "propensity-mf"),
                                         base=MFConfig(seed=s, epochs=3)) for s in range(2)])


def _study(tmp):
    from tests.study.letor import linear_set
    from ulr.study import run_study
    return run_study(linear_set(queries=30, docs=8, seed=3), eta=1.0, sessions=1500, runs=2,
                     learners=["naive-linear", "ipw-linear"], n_bootstrap=100, seed=0)


BUILDERS = {
    "ulr.ope.evaluate.OPEResult": _ope,
    "ulr.ope.crm.CRMResult": _crm,
    "ulr.ope.slate.SlateResult": _slate,
    "ulr.ope.study.StudyResult": _ope_study,
    "ulr.clickmodels.evaluate.Comparison": _click_models,
    "ulr.data.summary.CtrByPosition": _ctr,
    "ulr.propensity.result.PropensityResult": _propensity,
    "ulr.propensity.identify.Identification": _identify,
    "ulr.propensity.segments.SegmentResult": _segments,
    "ulr.rankers.evaluate.RankerComparison": _rankers,
    "ulr.rankers.systems.SystemsComparison": _systems,
    "ulr.rankers.sweep.SweepResult": _sweep,
    "ulr.bandits.replay.ReplayResult": _replay,
    "ulr.bandits.simulate.BanditRuns": _bandit,
    "ulr.bandits.simulate.BanditLab": _lab,
    "ulr.recommend.experiment.SeedComparison": _recommend,
    "ulr.study.run.StudyResult": _study,
}
#: live simulations that a page advances step by step: mutable on purpose, their verdict
#: the one of the steps so far
LIVE = {"ulr.bandits.simulate.BanditRuns", "ulr.bandits.simulate.BanditLab"}


def test_every_result_type_has_a_builder_here():
    assert set(_all_result_types()) == set(BUILDERS)


def _json_clean(obj, where="to_dict"):
    """Plain JSON: no NaN, no numpy, no Python object."""
    json.dumps(obj, allow_nan=False)
    if isinstance(obj, dict):
        for k, v in obj.items():
            assert isinstance(k, str), (where, k)
            _json_clean(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            _json_clean(v, where)
    else:
        assert obj is None or isinstance(obj, (str, int, float, bool)), (where, type(obj))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_result_follows_the_protocol(name, tmp_path):
    res = BUILDERS[name](tmp_path)
    cls = _all_result_types()[name]
    assert type(res) is cls and isinstance(res, Result)
    v = res.verdict
    assert isinstance(v, V.Verdict) and v.level in V.LEVELS
    assert res.verdict is v  # computed once
    ev = res.evidence
    assert isinstance(ev, dict) and ev, name
    for k, n in ev.items():
        assert isinstance(k, str) and (n is None or (isinstance(n, int)
                                                     and not isinstance(n, bool) and n >= 0)), \
            (name, k, n)
    qs = res.quantities()
    assert isinstance(qs, dict)
    for q in qs.values():
        assert isinstance(q, Quantity) and q.text()
    tabs = res.tables()
    assert isinstance(tabs, dict) and tabs, name
    for t in tabs.values():
        assert isinstance(t, pd.DataFrame)
    d = res.to_dict()
    _json_clean(d, name)
    assert d["verdict"] == v.to_dict()
    if name not in LIVE:  # built once: nothing writes into it afterwards
        assert is_dataclass(res) and type(res).__dataclass_params__.frozen
        with pytest.raises(FrozenInstanceError):
            setattr(res, fields(res)[0].name, None)
        assert "verdict" not in {f.name for f in fields(res)} or not any(
            f.name == "verdict" and not f.init for f in fields(res))


def test_no_result_type_writes_into_itself():
    """No ``object.__setattr__`` (nor a helper that wraps it) in a result type's class: its
    computed members are cached properties of its fields."""
    for name, cls in _all_result_types().items():
        src = inspect.getsource(cls)
        tree = ast.parse(src.lstrip() if src.startswith(" ") else src)
        calls = [ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
        assert "object.__setattr__" not in calls and "fill" not in calls \
            and "V.fill" not in calls, name
    assert not hasattr(V, "fill")
