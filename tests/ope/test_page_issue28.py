"""Off-policy page, issue 28: new estimators, the interval choice, 'Choose for me', Cascade-DR."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "off_policy.py")


def test_choose_for_me_intervals_and_new_estimators():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    at.multiselect(key="ope_estimators").set_value(["ips", "dr", "sndr", "switch-dr", "dros"])
    at.selectbox(key="ope_interval").select("bernstein")
    at.toggle(key="ope_auto").set_value(True).run()
    assert not at.exception, at.exception
    t = at.dataframe[0].value
    assert list(t["estimator"]) == ["ips", "dr", "sndr", "switch-dr", "dros", "auto", "logging"]
    chosen = [i.value for i in at.info if "Chosen for you" in i.value]
    assert len(chosen) == 1 and "SLOPE" in chosen[0]
    assert any("empirical bernstein bounds" in c.value for c in at.caption)
    assert not any("--" in m.value for m in [*at.info, *at.warning, *at.error])
    assert not [d for d in at.dataframe if "assumption" in d.value.columns]  # section closed
    at.session_state["ope_slates_open"] = True  # the visitor opens the rankings section
    at.run()
    at.checkbox(key="ope_cascade_dr").check().run()
    assert not at.exception, at.exception
    slate = [d.value for d in at.dataframe if "assumption" in d.value.columns]
    assert list(slate[0]["estimator"]) == ["sips", "iips", "rips", "cascade-dr"]


def test_concentration_bounds_with_the_default_estimators():
    """SNIPS (the verdict's usual basis) has no Hoeffding bound: the headline says so."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    at.selectbox(key="ope_interval").select("hoeffding").run()
    assert not at.exception, at.exception
    assert any("no finite-sample bound" in str(m.delta) for m in at.metric)
