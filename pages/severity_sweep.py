"""Severity sweep: IPW's advantage over naive learning as position bias grows (Joachims et al. 2017)."""

from collections import OrderedDict

import pandas as pd
import streamlit as st

from pages import _ui as ui
from ulr import propensity, rankers, theme
from ulr.errors import UlrError
from ulr.quantity import setting
from ulr.text import parse_numbers

st.title("Severity sweep")
st.caption(
    "Reproduces the classic experiment of Joachims, Swaminathan & Schnabel (WSDM 2017): "
    "simulate click logs with examination θₖ = (1/k)^η for growing η, train a naive and an "
    "IPW ranker on each, and compare them on held-out relevance. At η = 0 there is no position "
    "bias and the two coincide; the stronger the bias, the more IPW helps.")

try:
    st.page_link("pages/debiasing_study.py", icon=":material/science:",
                 label="The same study on your own labelled queries, with LightGBM and XGBoost: "
                       "Debiasing study")
except Exception:  # a page run on its own (no navigation): nothing to link to
    pass

NONE = "none"
MAX_CACHED = 16


@st.cache_resource
def _results() -> OrderedDict:
    """Finished sweeps shared by all sessions, newest last (bounded below)."""
    return OrderedDict()


def _parse_etas(text: str) -> tuple:
    etas = sorted(set(parse_numbers(text, what="η values", example="0, 0.5, 1")))
    if len(etas) > 12:
        raise UlrError("Give at most 12 η values.")
    return tuple(etas)


RUNS = rankers.SWEEP_RUNS  # runs averaged by default, as the CLI: the verdict needs a spread


methods = [NONE, *propensity.METHODS]
learners = list(rankers.LEARNERS)
url_etas = ", ".join(setting(e) for e in ui.url_param("etas", [0, 0.5, 1, 1.5, 2], kind="floats"))
with st.form("sweep_form"):
    c1, c2, c3 = st.columns(3)
    etas_text = c1.text_input("η values (severity of position bias)", url_etas, key="sw_etas")
    learner = c2.selectbox("Learner", learners, index=ui.url_index("learner", learners, "linear"),
                           key="sw_learner",
                           format_func={"linear": "linear pairwise (SVM-Rank)",
                                        "gbdt": "gradient boosting"}.get)
    method = c3.selectbox("Estimated θ by", methods,
                          index=ui.url_index("propensity", methods, NONE),
                          key="sw_method",
                          help="Besides the true θ, train IPW with θ estimated from each "
                               "simulated log by this method (slower methods take longer).")
    c4, c5, c6, c7 = st.columns(4)
    queries = int(c4.number_input("Queries", 20, 5000, ui.url_number("queries", 300, 20, 5000),
                                  step=50, key="sw_queries"))
    sessions = int(c5.number_input("Sessions per log", 500, 500_000,
                                   ui.url_number("sessions", 20_000, 500, 500_000), step=1000,
                                   key="sw_sessions"))
    runs = int(c6.number_input("Runs per η", 1, min(10, ui.limit("ULR_MAX_RUNS")),
                               ui.url_number("runs", min(RUNS, ui.limit("ULR_MAX_RUNS")), 1,
                                             10, cap="ULR_MAX_RUNS", what="runs per η"),
                               key="sw_runs",
                               help="Independent simulations (seeds); the chart shows their "
                                    "mean and range, the verdict an interval over them (one run "
                                    "has none)."))
    seed = int(c7.number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6),
                               key="sw_seed"))
    submitted = st.form_submit_button("Run sweep", type="primary")

try:
    etas_now = _parse_etas(etas_text)
except UlrError:
    etas_now = None   # reported when the sweep is run
ui.set_url_params(etas=etas_now, learner=learner, propensity=method, queries=queries,
                  sessions=sessions, runs=runs, seed=seed)
if ui.submitted("sweep_form") is None and etas_now is not None:
    # a shared link: show its sweep at once if this server has already run it
    url_key = (etas_now, learner, method, queries, sessions, runs, seed)
    if url_key in _results():
        ui.submitted("sweep_form", url_key)

if submitted:
    with ui.user_errors("Cannot run the sweep: "):
        etas = _parse_etas(etas_text)
        key = (etas, learner, method, queries, sessions, runs, seed)
        cache = _results()
        if key not in cache:
            bar = st.progress(0.0, text="Starting…")

            def progress(done, total, msg):
                bar.progress(done / total, text=f"{msg} ({done}/{total})")

            with ui.cancellable() as stop:  # ends with the script run (tab closed, ...)
                estimator = None if method == NONE else rankers.propensity_estimator(
                    method, seed=seed, should_stop=stop)
                res = rankers.severity_sweep(etas, queries=queries, sessions=sessions,
                                             runs=runs, learner=learner,
                                             estimate_theta=estimator, propensity=method,
                                             seed=seed, progress=progress, should_stop=stop)
            bar.empty()
            cache[key] = res
            while len(cache) > MAX_CACHED:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        ui.submitted("sweep_form", key)

key = ui.submitted("sweep_form")
res = _results().get(key) if key is not None else None
if res is None:
    st.info("Choose the settings and press **Run sweep**. With the defaults (5 values of η, "
            "300 queries, 20,000 sessions each) it takes a few seconds.")
else:
    etas, learner_k, method_k, queries_k, sessions_k, runs_k, seed_k = key
    df, metric_names = res.rows, res.metrics
    metric = st.selectbox("Metric", metric_names,
                          index=ui.url_index("metric", metric_names, rankers.SWEEP_METRIC), key="sw_metric",
                          format_func=theme.metric_label,
                          help="Short names: " + ", ".join(f"{theme.metric_label(m)} = {m}"
                                                           for m in metric_names))
    ui.set_url_params(metric=metric)
    verdict = res.verdicts[metric]
    ui.show_verdict(verdict, key="sweep")
    fig = rankers.sweep_figure(df, metric=metric)
    st.plotly_chart(fig, key="sw_chart")
    st.caption(f"{learner_k} learner, {queries_k} queries, {sessions_k:,} sessions per log, "
               f"{runs_k} run(s) per η, seed {seed_k}; metrics on 30% held-out queries. "
               + ("The band spans the runs. " if runs_k > 1 else "")
               + ("" if method_k == NONE else
                  f"“ipw (estimated theta)” uses θ estimated by {method_k} from each log."))
    summary = rankers.sweep_table(df, metric=metric)
    change = rankers.SWEEP_CHANGE
    ui.dataframe(theme.styled(summary, relative=(change,)), hide_index=True, width="stretch")
    st.caption("Mean over runs; lower and upper bound a 95% Student-t interval over the runs "
               "(none for a single run).")
    if metric in rankers.LOWER_IS_BETTER:
        st.caption(f"{theme.metric_label(metric)} ({metric}): lower is better, so a negative "
                   "change favours IPW.")
    ui.download_csv(pd.DataFrame(df), "severity_sweep.csv", "Download all results (CSV)",
                    key="sw_csv")
    ui.add_to_report(f"Severity sweep: {metric} vs η", fig=fig, table=summary,
                     settings={"etas": list(etas), "learner": learner_k, "estimator": method_k,
                               "queries": queries_k, "sessions": sessions_k, "runs": runs_k,
                               "seed": seed_k},
                     evidence=res.evidence,
                     key="severity_sweep", verdict=verdict, simulated=True)
