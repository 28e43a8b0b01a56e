"""Bandit lab page through Streamlit's AppTest.

AppTest has no browser timer, so ``st.fragment(run_every=...)`` never fires on
its own: each ``at.run()`` re-runs the script, fragment included, which is one
tick of the live chart (one chunk of simulation).
"""

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from pages._ui import keys as ui_keys

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "bandit_lab.py")


def start(**settings):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    for key, value in settings.items():
        widget = at.multiselect(key=key) if key == "bl_algos" else (
            at.selectbox(key=key) if key == "bl_env" else (
                at.text_input(key=key) if key == "bl_theta" else at.number_input(key=key)))
        widget.set_value(value)
    at.button(key="FormSubmitter:bl_form-Start").click()
    at.run()
    assert not at.exception, at.exception
    return at


def lab(at):
    return at.session_state["bl_lab"]


def chart_traces(at):
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return [t.get("name") for t in spec["data"]]


def test_start_advance_pause_resume_to_the_results_table():
    at = start(bl_steps=10_000, bl_runs=3)  # more than one 0.4 s tick simulates
    assert at.session_state["bl_status"] == "running"
    assert len(at.get("plotly_chart")) == 1
    t1 = lab(at).t
    at.run()                                    # one more fragment tick
    t2 = lab(at).t
    assert 0 < t1 < t2 < 10_000
    assert {"cascade-ucb1", "cascade-klucb", "cascade-ts",
            "asymptotic lower bound (Kveton et al.)"} <= set(chart_traces(at))
    assert "running: step" in at.get("progress")[0].proto.text

    at.button(key="bl_pause").click().run()
    assert at.session_state["bl_status"] == "paused"
    t3 = lab(at).t
    at.run()
    assert lab(at).t == t3                      # paused: no progress
    assert at.subheader[0].value == f"Results so far (paused at step {t3:,})"
    table = at.dataframe[0].value
    assert list(table["algorithm"]) == ["cascade-ucb1", "cascade-klucb", "cascade-ts"]
    assert (table["steps"] == t3).all()
    assert len(at.get("plotly_chart")) == 1

    at.button(key="bl_resume").click().run()
    for _ in range(100):
        if at.session_state["bl_status"] == "done":
            break
        at.run()
    assert at.session_state["bl_status"] == "done" and not at.exception
    table = at.dataframe[0].value
    assert (table["steps"] == 10_000).all() and (table["runs"] == 3).all()
    assert (table["steps per second"] > 0).all() and (table["wall time (s)"] > 0).all()
    row = table.set_index("algorithm").loc["cascade-klucb"]
    from ulr.quantity import show  # the one renderer, no format of the page's own
    assert row["final regret"] == f"{show('number', row['regret mean'])} ± " \
        f"{show('number', row['regret sd'])}"
    assert len(at.get("download_button")) == 1
    assert at.subheader[0].value == "Results"

    at.button(key="bl_reset").click().run()
    assert "bl_lab" not in at.session_state and not at.dataframe
    assert "press **Start**" in at.info[0].value


def test_ucb1_bound_drawn_for_plain_bandit():
    at = start(bl_k=1, bl_items=6, bl_algos=["ucb1", "ts"], bl_steps=500, bl_runs=2)
    names = chart_traces(at)
    assert "ucb1 upper bound" in names and "asymptotic lower bound (Kveton et al.)" in names


def test_data_environment_and_replay_on_the_sample():
    at = start(bl_env="data", bl_items=40, bl_k=3, bl_algos=["cascade-ts"], bl_steps=400,
               bl_runs=2)
    assert not at.error
    assert lab(at).env.name == "data" and lab(at).env.n_items == 40
    at.button(key="FormSubmitter:bl_replay_form-Run replay").click().run()
    assert not at.exception and not at.error
    metrics = {m.label: m for m in at.metric}
    rate = metrics["Acceptance rate"]
    assert rate.value.endswith("%") and rate.value != "0.0%"
    assert " of " in rate.proto.delta and rate.proto.delta.split(" of ")[0] != "0"
    assert any(c.value.startswith("Evidence: ") for c in at.caption)
    assert any("θ from randomized CTR ratios" in c.value for c in at.caption)
    rr = at.session_state[ui_keys.BANDIT_REPLAY]  # the page draws the verdict the result carries
    assert any(m.value == f"**{rr.verdict.takeaway}**" for m in at.markdown)


def test_bad_settings_show_an_error():
    at = start(bl_items=4, bl_k=4)
    assert any("Cannot start" in e.value and "list length k" in e.value for e in at.error)
    assert "bl_lab" not in at.session_state
    at = start(bl_theta="1, 0.5")
    assert any("data environment only" in e.value for e in at.error)


def test_link_fills_the_settings_and_is_written_back():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params.update(env="linear", algorithms="cascade-lints,nope,ucb1", items="30",
                           positions="3",
                           p="0.3", delta="0.1", d="4", steps="500", runs="2", seed="7")
    at.run()
    assert not at.exception
    assert at.selectbox(key="bl_env").value == "linear"
    assert at.multiselect(key="bl_algos").value == ["cascade-lints", "ucb1"]  # unknown dropped
    assert [at.number_input(key=k).value for k in
            ("bl_items", "bl_k", "bl_d", "bl_steps", "bl_runs", "bl_seed")] == [30, 3, 4, 500, 2, 7]
    assert at.number_input(key="bl_p").value == 0.3
    assert at.number_input(key="bl_delta").value == 0.1
    assert at.query_params["algorithms"] == "cascade-lints,ucb1"
    at.button(key="FormSubmitter:bl_form-Start").click().run()
    assert not at.exception and not at.error
    run = lab(at)
    assert (run.env.name, run.env.n_items, run.env.k) == ("linear", 30, 3)
    assert run.algorithms == ("cascade-lints", "ucb1") and (run.steps, run.runs) == (500, 2)
    # out-of-range or unparsable values fall back to the defaults
    bad = AppTest.from_file(PAGE, default_timeout=60)
    bad.query_params.update(env="moon", algorithms="x", items="1", p="nan", steps="1e9",
                            positions="two")
    bad.run()
    assert not bad.exception
    assert bad.selectbox(key="bl_env").value == "kveton"
    assert bad.multiselect(key="bl_algos").value == ["cascade-ucb1", "cascade-klucb",
                                                     "cascade-ts"]
    assert [bad.number_input(key=k).value for k in ("bl_items", "bl_k", "bl_steps")] == [
        16, 2, 20_000]
    assert bad.number_input(key="bl_p").value == 0.2


def test_controls_follow_the_state_of_their_own_click():
    at = start(bl_steps=5000, bl_runs=2)

    def enabled():
        return {k: not at.button(key=k).disabled for k in ("bl_pause", "bl_resume", "bl_reset")}

    assert enabled() == {"bl_pause": True, "bl_resume": False, "bl_reset": True}
    at.button(key="bl_pause").click().run()
    assert enabled() == {"bl_pause": False, "bl_resume": True, "bl_reset": True}
    elapsed = at.session_state["bl_elapsed"]
    at.button(key="bl_resume").click().run()
    assert at.session_state["bl_status"] == "running"
    assert enabled() == {"bl_pause": True, "bl_resume": False, "bl_reset": True}  # can pause again
    at.button(key="bl_pause").click().run()
    assert at.session_state["bl_status"] == "paused"
    assert at.session_state["bl_elapsed"] > elapsed
    at.button(key="bl_reset").click().run()
    assert enabled() == {"bl_pause": False, "bl_resume": False, "bl_reset": False}

