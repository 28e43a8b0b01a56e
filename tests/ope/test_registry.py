"""ulr.ope.registry: one record per estimator, read by every surface (issue 35)."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from ulr.ope import registry, selection
from ulr.ope.evaluate import NotIdentified, evaluate
from ulr.ope.simulate import contextual_world

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def dummy():
    """An IPS-like estimator that declares it needs the target's whole distribution."""
    e = registry.register(registry.Estimator(
        "dummy-full", "dummy estimator", "importance", needs_full_target=True, in_auto=True,
        terms=lambda r, w, h, ql, qt: (0.9 * w * r, np.ones_like(w))))
    yield e
    registry.unregister(e.name)


def test_a_registered_estimator_reaches_every_surface(dummy, capsys):
    from ulr.cli import main
    with pytest.raises(SystemExit) as done:
        main(["ope", "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "dummy-full" in "".join(out.split())
    assert "dummy-full" in selection.auto_families() and registry.label("dummy-full") == \
        "dummy estimator"
    w = contextual_world(seed=1)
    s = w.sample(800, seed=2)
    fb, pi = w.feedback(s, whole=True)
    res = evaluate(fb, pi, estimators=["snips", "dummy-full", "auto"], n_bootstrap=50)
    assert res.estimate("dummy-full") == pytest.approx(
        0.9 * np.mean(pi[fb.pair] / fb.propensity * fb.reward), rel=1e-12)
    assert "dummy-full" in set(selection.select(fb.reward, pi[fb.pair] / fb.propensity)
                               .candidates["estimator"])
    # its need unmet: refused by name, left out of auto with the reason
    fb_col, _ = w.feedback(s, whole=False)
    with pytest.raises(NotIdentified, match="dummy estimator needs the target's probabilities"):
        evaluate(fb_col, None, estimators=["dummy-full"], n_bootstrap=50)
    res = evaluate(fb_col, None, estimators=["snips", "auto"], n_bootstrap=50)
    excluded = {x["estimator"]: x["reason"] for x in res.settings["selected"]["excluded"]}
    assert "dummy estimator needs the target's probabilities" in excluded["dummy-full"]
    at = AppTest.from_file(str(ROOT / "pages" / "off_policy.py"), default_timeout=120)
    at.run()
    assert not at.exception
    assert "dummy-full" in at.multiselect(key="ope_estimators").options or \
        "dummy estimator" in at.multiselect(key="ope_estimators").options


def test_records_declare_what_the_audit_reads():
    for name in ("dr", "dm", "sndr", "switch-dr", "dros", "sg-dr"):
        e = registry.REGISTRY[name]
        assert e.needs_reward_model and e.needs_full_target and "full_target" in e.needs
    for name in ("ips", "snips", "clipped-ips", "sg-ips"):
        assert not registry.REGISTRY[name].needs_full_target
    assert [k for k, e in registry.REGISTRY.items() if e.unbiased] == ["ips", "dr",
                                                                       "balanced-ips"]
    with pytest.raises(ValueError, match=r"clip must lie in \[0, inf\]"):
        registry.REGISTRY["clipped-ips"].hyperparameter.check(-1)
    assert dict(registry.LABELS)["auto"] == registry.AUTO_LABEL
