"""View 2 of Off-policy evaluation: the estimators on repeated simulated logs with a
known truth (bias, variance, coverage)."""

import streamlit as st

from pages import _ui as ui
from pages._ope.common import LABELS, VIEWS
from ulr import theme
from ulr.errors import UlrError
from ulr.ope import registry
from ulr.ope import figures as F
from ulr.ope.study import CHUNK, simulation_study, study_chunk
from ulr.quantity import Quantity, show

@ui.cache_data(show_spinner=False, max_entries=512)
def _simulate_chunk(index: int, opts: tuple):
    return study_chunk(index, **dict(opts))


# the page's settings (as its report item shows them) -> the study's keywords (glossary names)
KEYWORDS = {"features": "n_features", "slots": "positions"}


def _simulate(settings: tuple, progress=None):
    opts = {KEYWORDS.get(k, k): v for k, v in settings}
    return simulation_study(**opts, progress=progress,
                            run_chunk=lambda i, o: _simulate_chunk(i, tuple(sorted(o.items()))))


def view_simulation():
    st.caption(
        "A logged-bandit world whose click probabilities are known, so the true value of the "
        "target policy is exact. Many independent logs are drawn; each estimator's spread "
        "around the truth shows its bias and variance.")
    settings, run = _simulation_form()
    if run:
        runs = dict(settings)["runs"]
        with ui.user_errors("Cannot simulate: "):
            if not dict(settings)["estimators"]:
                raise UlrError("choose at least one estimator.")
            with st.status("Simulating repeated logs…", expanded=False) as status:
                bar = st.progress(0.0)

                def progress(done, total):
                    bar.progress(done / total, text=f"{min(done * CHUNK, runs)} of "
                                                    f"{runs} logs")

                _simulate(settings, progress=progress)
                status.update(label="Simulation done", state="complete")
            ui.submitted("ope_sim_form", settings)
    last = ui.submitted("ope_sim_form")
    if last is None:
        st.info("Choose a world and press **Run simulation** (the defaults take a second).")
        return
    _show_simulation(_simulate(last), dict(last))


def _simulation_form() -> tuple[tuple, bool]:
    """The simulated world, target and estimators (a form), as simulation_study's
    settings, and whether the form was submitted."""
    with st.form("ope_sim_form"):
        c = st.columns(4)
        contexts = int(c[0].number_input("Queries (contexts)", 1, 500,
                                         ui.url_number("sim_contexts", 20, 1, 500),
                                         key="sim_contexts"))
        actions = int(c[1].number_input("Documents per query", 2, 100,
                                        ui.url_number("sim_actions", 10, 2, 100),
                                        key="sim_actions"))
        slots = int(c[2].number_input("Positions", 1, 10, 1, key="sim_slots"))
        features = int(c[2].number_input("Features", 1, 50, 5, key="sim_features"))
        rows = int(c[3].number_input("Rows per log", 50, 100_000,
                                     ui.url_number("sim_rows", 1000, 50, 100_000), step=100,
                                     key="sim_rows"))
        c = st.columns(4)
        runs = int(c[0].number_input("Repeated logs", 10, 2000,
                                     ui.url_number("sim_runs", 200, 10, 2000), step=10,
                                     key="sim_runs"))
        logging = c[1].selectbox("Logging policy", ["uniform", "softmax"], key="sim_logging",
                                 index=ui.url_index("sim_logging", ["uniform", "softmax"],
                                                  "uniform"),
                                 help="softmax: favours documents of a noisy copy of the true "
                                      "click model")
        logging_temperature = c[2].number_input("Logging temperature", 0.05, 100.0, 1.0,
                                                key="sim_ltemp")
        base_rate = c[3].number_input("Mean click probability", 0.001, 0.9, 0.2,
                                      format="%.3f", key="sim_base")
        c = st.columns(4)
        target = c[0].selectbox("Target policy", ["true", "noisy", "reversed"],
                                index=ui.url_index("sim_target", ["true", "noisy", "reversed"],
                                                 "true"),
                                format_func={"true": "good (true click model)",
                                             "noisy": "noisy copy of the click model",
                                             "reversed": "bad (reversed)"}.get,
                                key="sim_target")
        temperature = c[1].number_input("Target temperature", 0.0, 100.0, 0.5, step=0.1,
                                        key="sim_temp")
        estimators = c[2].multiselect("Estimators", list(registry.single_log()),
                                      default=ui.url_options(
                                          "sim_estimators", registry.single_log(),
                                          registry.defaults()),
                                      format_func=lambda e: LABELS.get(e, e), key="sim_est")
        clip = c[3].number_input("Clip weights at (0 = automatic)", 0.0, 1e6, 4.0,
                                 key="sim_clip",
                                 help="Clipped IPS uses min(w, M). Automatic: √n × mean weight "
                                      "(Ionides 2008), which rarely clips in small worlds.")
        c = st.columns(4)
        intervals = c[0].checkbox("Bootstrap intervals (coverage)", False, key="sim_ci",
                                  help="Slower: a bootstrap per log.")
        n_bootstrap = int(c[1].number_input("Bootstrap draws", 100, 5000, 400, step=100,
                                            key="sim_boot"))
        seed = int(c[2].number_input("Seed", 0, 10**6, ui.url_number("sim_seed", 0, 0, 10**6),
                                     key="sim_seed"))
        run = st.form_submit_button("Run simulation", type="primary")
    ui.set_url_params(view=VIEWS[1], sim_contexts=contexts, sim_actions=actions, sim_rows=rows,
                      sim_runs=runs, sim_logging=logging, sim_target=target,
                      sim_estimators=list(estimators), sim_seed=seed)
    settings = (("contexts", contexts), ("actions", actions), ("features", features),
                ("slots", slots), ("rows", rows), ("runs", runs), ("logging", logging),
                ("logging_temperature", float(logging_temperature)),
                ("base_rate", float(base_rate)), ("target", target),
                ("temperature", float(temperature)), ("estimators", tuple(estimators)),
                ("clip", float(clip) if clip > 0 else None), ("intervals", bool(intervals)),
                ("n_bootstrap", n_bootstrap), ("seed", seed))
    return settings, run


def _show_simulation(out, s: dict):
    """Truth, the per-estimator table, the spread and bias-variance figures, intervals,
    the download and the report item of one simulation study."""
    ui.show_verdict(out.verdict, key="ope_sim")
    m = st.columns(4)
    m[0].metric("True value of the target", show('rate', out.truth))
    m[1].metric("Logging policy's value", show('rate', out.logging))
    m[2].metric("Mean ESS / rows", show('rate', out.ess_fraction))
    m[3].metric("Largest weight", Quantity("weight", out.max_weight).text())
    tab = out.shown_table()  # click rates in %, as the tiles above read them
    ui.dataframe(theme.styled(tab, rates=("truth", "mean", "coverage"), points=("bias",),
                              relative=("relative bias",)),
                 hide_index=True, width="stretch", key="sim_table")
    c1, c2 = st.columns(2)
    fig1 = F.repeated_figure(out.estimates, out.truth)
    c1.plotly_chart(fig1, key="sim_box")
    fig2 = F.bias_variance_figure(out.table)
    c2.plotly_chart(fig2, key="sim_bv")
    if s["intervals"]:
        names = list(dict.fromkeys(out.estimates["estimator"]))
        pick = st.selectbox("Intervals of", names, format_func=lambda e: LABELS.get(e, e),
                            key="sim_pick")
        st.plotly_chart(F.intervals_figure(out.estimates, out.truth, estimator=pick),
                        key="sim_intervals")
    st.caption(f"{s['runs']} logs of {s['rows']:,} rows; bias ± 2 standard errors. Clipping "
               "lowers the variance and biases the estimate downwards (rewards are ≥ 0); "
               "SNIPS trades a small bias for much less variance; DR leans on its reward model.")
    ui.download_csv(out.estimates, "ope_simulation_estimates.csv",
                    "Download all estimates (CSV)", key="sim_csv")
    ui.add_to_report(
        f"OPE estimators over repeated simulated logs (target policy: {s['target']})",
        fig=fig2, table=tab,
        settings={"target policy": s["target"], "estimators": registry.labels(s["estimators"]),
                  "seed": s["seed"], **{k: v for k, v in s.items() if k != "estimators"}},
        caveats=[], evidence=out.evidence, key="ope_sim", verdict=out.verdict, simulated=True)
