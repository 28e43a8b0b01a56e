"""Off-policy evaluation: estimate a new policy's value from a log of another, check the
estimators against a simulation with known truth, and learn a policy from the log."""

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from pages import _ui as ui
from ulr import schema, store
from ulr import verdict as V
from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope import figures as F
from ulr.ope.evaluate import FEW_EFFECTIVE_CLICKS, HEAVY_TAIL_ESS_FRACTION, HEAVY_TAIL_MAX_SHARE
from ulr.ope.evaluate import evaluate_log
from ulr.ope.feedback import feedback_from_log
from ulr.ope.loggers import MULTI_ESTIMATORS
from ulr.ope.slate import LABELS as SLATE_LABELS
from ulr.ope.slate import slate_from_log
from ulr.ope.study import CHUNK, crm_study, simulation_study, study_chunk
from ulr.ope.verdicts import clipped_table, slate_verdict, study_verdict

NEW_ESTIMATORS = ("sndr", "switch-dr", "dros")
INTERVAL_LABELS = {"bootstrap": "Percentile bootstrap intervals", "t": "Student t intervals",
                   "hoeffding": "Hoeffding bounds", "bernstein": "Empirical Bernstein bounds"}
REWARD_LABELS = {"linear": "linear (logistic)", "gbdt": "gradient-boosted trees",
                 "column": "my own predictions (a column)"}
SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample_ope.csv"
SAMPLE_SOURCE = "sample"
LABELS = F.LABELS
VIEWS = ["Evaluate a log", "Simulation: bias and variance", "Learn a policy"]
TARGETS = {"fitted": "softmax of a linear click model fit on part of the log",
           "scores": "softmax of a score column",
           "column": "a column of target probabilities",
           "uniform": "uniform over each query's documents"}

st.title("Off-policy evaluation")
st.caption(
    "How would a new ranking policy have done, judged only from a log of the old one? "
    "Inverse propensity scoring reweights every logged click by how much more (or less) "
    "often the new policy would have taken that action: w = π(a|x) / p(a|x). The log must "
    "record the logging policy's probability p of each shown document (column `propensity`).")

view = st.segmented_control("View", VIEWS, default=VIEWS[ui.url_index("view", VIEWS, VIEWS[0])],
                            key="ope_view") or VIEWS[0]


# ---------------------------------------------------------------- data source


def _open(source: str, name: str):
    if source == SAMPLE_SOURCE:
        return store.open_file(SAMPLE)
    return store.open_dataset(name, cur=store.cursor())


@ui.cache_data(show_spinner=False, max_entries=4)
def _sample_hash() -> str:
    return store.file_hash(SAMPLE)


def _pick_log():
    """The current dataset if it has propensities, else the bundled OPE sample."""
    log = ui.current_log()
    has_p = log.info.has("propensity")
    options = ([log.info.name] if has_p else []) + [SAMPLE_SOURCE]
    label = {SAMPLE_SOURCE: "bundled OPE sample (uniform-random log, 3 positions)"}
    if not has_p:
        st.info(f"The current dataset “{log.info.name}” has no `propensity` column, so it "
                "cannot be evaluated off-policy. Showing the bundled OPE sample: 10,000 rows "
                "of a uniformly random 3-position log with a click-through rate under 1% "
                "(upload your own log with propensities on the Data page).")
    source = st.radio("Log", options, horizontal=True, key="ope_source",
                      index=ui.url_index("log", options, options[0]),
                      format_func=lambda o: label.get(o, f"current dataset “{o}”"))
    if source == SAMPLE_SOURCE:
        return SAMPLE_SOURCE, "sample_ope.csv", _sample_hash(), None
    return log.info.name, log.info.name, log.info.content_hash, log.info


@ui.cache_data(show_spinner=False, max_entries=32)
def _evaluate(source: str, name: str, content_hash: str, settings: tuple):
    return evaluate_log(_open(source, name), **dict(settings))


def _estimates_frame(table: pd.DataFrame) -> pd.DataFrame:
    t = table.copy()
    t.insert(0, "method", t["estimator"].map(lambda e: LABELS.get(e, e)))
    return t.rename(columns={"variance_ratio": "variance vs pooled IPS",
                             "diff_lower": "minus logging, lower",
                             "diff_upper": "minus logging, upper"})


# ---------------------------------------------------------------- view 1: a log


def view_log():
    source, name, content_hash, info = _pick_log()
    settings = _log_form(info)
    s = dict(settings)
    ui.set_url_params(view=VIEWS[0], log=source, target=s["target"],
                      temperature=s["temperature"], action=s["action"],
                      estimators=list(s["estimators"]), seed=s["seed"])
    res = None
    with ui.user_errors("Cannot evaluate: "):
        with st.spinner("Estimating…"):
            res = _evaluate(source, name, content_hash, settings)
    if res is not None:
        _show_log_result(res, source, name, content_hash, settings)


def _log_form(info) -> tuple:
    """The target policy and estimator options (widgets), as evaluate_log's settings."""
    extras = [] if info is None else [
        c for c in info.columns if c not in schema.CANONICAL
        and not c.startswith(schema.FEATURE_PREFIX) and c != "true_theta"]
    extras = [c for c in extras if not c.startswith("propensity_") and c != "logger"]
    has_features = info is None or bool(info.features)
    has_logger = info is not None and info.has("logger")
    targets = (["fitted"] if has_features else []) + ["uniform"] + \
        (["scores", "column"] if extras else [])
    c1, c2, c3 = st.columns([2, 1, 1])
    target = c1.selectbox("Target policy", targets, format_func=TARGETS.get, key="ope_target",
                          index=ui.url_index("target", targets, targets[0]),
                          help="The policy to evaluate. The fitted one is a logistic click "
                               "model on the feature_* columns, fit on a share of the "
                               "impressions and evaluated on the rest.")
    column = None
    if target in ("scores", "column"):
        column = c1.selectbox("Column", extras, key="ope_column")
    temperature = c2.number_input("Temperature", 0.0, 100.0,
                                  ui.url_number("temperature", 1.0, 0.0, 100.0, kind=float),
                                  step=0.1, key="ope_temp",
                                  disabled=target in ("column", "uniform"),
                                  help="Softmax temperature on standardized scores: 0 = always "
                                       "the top document, large = uniform.")
    action = c3.selectbox("Action", ["doc_id", "position"], key="ope_action",
                          index=ui.url_index("action", ["doc_id", "position"], "doc_id"),
                          help="What the policy chooses for a query: which document to show "
                               "(per position), or which position.")
    if not has_features:
        st.info("This log has no feature columns, so the target policy cannot be a fitted click "
                "model: choose another **Target policy** above, or map feature columns on the "
                "[Data page](/data).", icon=":material/info:")
    choices = list(est.ESTIMATORS) + list(NEW_ESTIMATORS) + \
        (list(MULTI_ESTIMATORS) if has_logger else [])
    default_est = list(est.DEFAULT_ESTIMATORS) + (list(MULTI_ESTIMATORS) if has_logger else [])
    with st.expander("Estimator options"):
        o1, o2, o3, o4 = st.columns(4)
        estimators = o1.multiselect("Estimators", choices,
                                    default=ui.url_options("estimators", choices, default_est),
                                    key="ope_estimators",
                                    format_func=lambda e: LABELS.get(e, e))
        clip_auto = o2.checkbox("Automatic clip", True, key="ope_clip_auto",
                                help="√n × mean weight (Ionides 2008): trims only weights "
                                     "that are extreme for the sample size.")
        clip = o2.number_input("Clip weights at", 1.0, 1e6, 10.0, key="ope_clip",
                               disabled=clip_auto)
        n_bootstrap = int(o3.number_input("Bootstrap draws", 100, 20_000, 1000, step=100,
                                          key="ope_boot"))
        level = o3.select_slider("Confidence level", [0.8, 0.9, 0.95, 0.99], 0.95,
                                 key="ope_level")
        fit_fraction = o4.slider("Share of impressions to fit the target", 0.0, 0.9, 0.5,
                                 step=0.1, key="ope_fit", disabled=target != "fitted",
                                 help="0 fits and evaluates on all rows (optimistic).")
        folds = int(o4.number_input("DR cross-fitting folds", 1, 10, 2, key="ope_folds"))
        seed = int(o1.number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6),
                                   key="ope_seed"))
        interval = o3.selectbox("Intervals", list(INTERVAL_LABELS),
                                format_func=INTERVAL_LABELS.get, key="ope_interval",
                                help="Bootstrap and Student t are approximate; Hoeffding and "
                                     "empirical Bernstein hold for any sample size but are "
                                     "wider, and need an estimator that is not self-normalized.")
        models = ["linear", "gbdt"] + (["column"] if extras else [])
        reward_model = o2.selectbox("Reward model (DR family)", models,
                                    format_func=REWARD_LABELS.get, key="ope_reward_model")
        reward_column = (o2.selectbox("Prediction column", extras, key="ope_reward_column")
                         if reward_model == "column" else None)
    auto = st.toggle("Choose for me", False, key="ope_auto",
                     help="Picks the estimator and its tuning from the log itself (SLOPE: the "
                          "least variable estimate that still agrees with the less biased "
                          "ones) and says why.")
    if auto and "auto" not in estimators:
        estimators = [*estimators, "auto"]
    settings = (("action", action), ("target", target),
                ("target_column", column if target == "column" else None),
                ("score_column", column if target == "scores" else None),
                ("temperature", float(temperature)), ("fit_fraction", float(fit_fraction)),
                ("estimators", tuple(estimators)), ("clip", None if clip_auto else float(clip)),
                ("n_bootstrap", n_bootstrap), ("level", float(level)), ("folds", folds),
                ("seed", seed), ("interval", interval),
                ("reward_model", "linear" if reward_model == "column" else reward_model),
                ("reward_column", reward_column))
    return settings


def _show_log_result(res, source, name, content_hash, settings: tuple):
    """Diagnostics, warnings, the estimates (table, chart, download), the several-loggers
    and slate sections and the report item of one evaluation."""
    s = dict(settings)
    column = s["target_column"] or s["score_column"]
    d = res.diagnostics
    mapping = ui.mapping_warnings(ui.current_log()) if source != SAMPLE_SOURCE else ()
    verdict = res.verdict(mapping=mapping)
    ui.show_verdict(verdict, key="ope")
    _headline(verdict)
    m = st.columns(5)
    m[0].metric("Rows evaluated", f"{d['n']:,}", help=f"of {res.settings['log_rows']:,} in the log")
    m[1].metric("Clicks", f"{d['clicks']:,}", help=f"CTR {d['ctr']:.2%}")
    m[2].metric("Effective sample size", f"{d['ess']:,.0f}", f"{d['ess_fraction']:.0%} of rows",
                delta_color="off", delta_arrow="off", help="(Σw)² / Σw² (Kish)")
    m[3].metric("Effective clicks", f"{d['effective_clicks']:.1f}",
                help="Effective sample size of the weights of the clicked rows: what limits "
                     "the precision when clicks are rare.")
    m[4].metric("Largest weight", f"{d['max_weight']:.3g}",
                f"{d['max_weight_share']:.2%} of the total", delta_color="off",
                delta_arrow="off")
    selected = res.settings.get("selected")
    if selected:
        st.info(f"**Chosen for you: {LABELS.get(selected['estimator'], selected['estimator'])}**"
                f". {selected['reason']}", icon=":material/auto_awesome:")
    for w in res.warnings:
        st.warning(w.message, icon=":material/warning:")
    table = _estimates_frame(clipped_table(res.table))
    raw = res.table[["value", "lower", "upper"]]
    out_of_range = res.table.loc[((raw < 0) | (raw > 1)).any(axis=1), "estimator"]
    if len(out_of_range):
        st.caption(f"{', '.join(LABELS.get(e, e) for e in out_of_range)} left the range of a "
                   "click rate (its reward model, not the clicks, drives it there); its value "
                   "and bounds are shown clipped to [0, 1].")
    st.dataframe(table, hide_index=True, width="stretch", key="ope_table",
                 column_config={c: st.column_config.NumberColumn(format="%.5f")
                                for c in ("value", "lower", "upper", "se")})
    fig = ui.figure(F.estimates_figure, res.table)
    st.plotly_chart(fig, key="ope_chart")
    st.caption(
        f"Values are expected clicks per logged row under the target policy; bars are "
        f"{s['level']:.0%} {INTERVAL_LABELS[s['interval']].lower()} "
        f"({s['n_bootstrap']:,} bootstrap draws for the differences, "
        f"resampling {res.settings['resampling']}). The dashed line is the logging policy's own "
        f"click rate. Warnings: heavy-tailed weights when the effective sample size is below "
        f"{HEAVY_TAIL_ESS_FRACTION:.0%} of the rows or one row carries over "
        f"{HEAVY_TAIL_MAX_SHARE:.0%} of the weight; small sample below "
        f"{FEW_EFFECTIVE_CLICKS} effective clicks.")
    ui.download_csv(table, f"ope_estimates_{name}.csv", "Download estimates (CSV)",
                    key="ope_csv")
    _loggers_section(res)
    _slate_section(source, name, content_hash, s["target"], column, s["temperature"],
                   s["fit_fraction"], s["level"], s["seed"])
    policy = TARGETS[s["target"]] + (f" ({column})" if column else "")
    ui.add_to_report(
        f"Off-policy estimates of the target policy: {policy}", fig=fig, table=table,
        settings={"log": name, "target policy": policy, "estimator": ", ".join(s["estimators"]),
                  "seed": s["seed"], **s},
        caveats=[w.message for w in res.warnings],
        evidence={"rows": d["n"], "clicks": d["clicks"],
                  "queries": res.settings.get("contexts"),
                  "sessions": d["units"] if res.settings["resampling"] == "impressions"
                  else None},
        key="ope_log", verdict=verdict)


def _headline(verdict, *, target: str = "Target policy") -> None:
    """The verdict's numbers as tiles, each interval in plain sight (click rates in %)."""
    e = verdict.estimate
    if "value" not in e or e.get("value") is None:
        return
    name = LABELS.get(e["estimator"], e["estimator"])
    level = e.get("level", 0.95)
    bounded = e.get("lower") is not None and e.get("upper") is not None
    se = V.se_of(e["lower"], e["upper"], level) if bounded else None
    t = st.columns(3)
    t[0].metric(f"{target}, {name}", V.fmt(e["value"], se, pct=True),
                f"{level:.0%} interval {V.fmt(e['lower'], se, pct=True)} to "
                f"{V.fmt(e['upper'], se, pct=True)}" if bounded else
                "no finite-sample bound for a self-normalized estimate",
                delta_color="off", delta_arrow="off", help="expected clicks per row")
    t[1].metric("Logging policy", V.fmt(e["logging"], se, pct=True))
    if e.get("delta_lower") is not None:
        dse = V.se_of(e["delta_lower"], e["delta_upper"], level)
        t[2].metric("Difference", V.fmt(e["delta"], dse, pct=True, sign=True),
                    f"{level:.0%} interval {V.fmt(e['delta_lower'], dse, pct=True, sign=True)} "
                    f"to {V.fmt(e['delta_upper'], dse, pct=True, sign=True)}",
                    delta_color="off", delta_arrow="off",
                    help="target minus logging, paired bootstrap interval; an interval "
                         "containing 0 means the two cannot be told apart")


@ui.cache_data(show_spinner=False, max_entries=16)
def _slates(source, name, content_hash, settings: tuple):
    return slate_from_log(_open(source, name), **dict(settings))


def _slate_section(source, name, content_hash, target, column, temperature, fit_fraction,
                   level, seed):
    """Rankings: the target as a ranking policy, judged per whole slate."""
    with st.expander("Rankings: clicks per ranking (slate estimators)"):
        if target not in ("fitted", "scores"):
            st.info("Slate estimators need a ranking target: choose the fitted click model or "
                    "a score column as **Target policy** above.", icon=":material/info:")
            return
        cdr = st.checkbox("Also Cascade-DR (a per-position click model under the cascade)",
                          False, key="ope_cascade_dr",
                          help="Kiyohara et al. 2022: unbiased like reward-interaction IPS, "
                               "usually narrower; it enumerates each query's rankings, so it "
                               "suits queries with few candidates.")
        names = ("sips", "iips", "rips") + (("cascade-dr",) if cdr else ())
        settings = (("score_column", column if target == "scores" else None),
                    ("estimators", names),
                    ("temperature", max(temperature, 1e-3)),
                    ("fit_fraction", fit_fraction if fit_fraction > 0 else 0.5),
                    ("level", level), ("seed", seed))
        if source != SAMPLE_SOURCE and ui.mapping_stops(ui.current_log(), "slate",
                                                        "Judging whole rankings"):
            return
        out = None
        with ui.user_errors("Cannot evaluate rankings: "):
            out = _slates(source, name, content_hash, settings)
        if out is None:
            return
        ui.show_verdict(slate_verdict(out, level=level), key="ope_slate")
        tab = out["table"].copy()
        tab.insert(0, "method", tab["estimator"].map(SLATE_LABELS))
        st.caption(f"{out['sessions']:,} complete rankings of {out['slots']} slots, "
                   f"{out['clicks']:,} clicks; values are expected clicks per ranking with "
                   f"{level:.0%} normal intervals. Each estimator is right only under its "
                   "assumption (last column). " + " ".join(out["notes"]))
        st.dataframe(tab, hide_index=True, width="stretch", key="ope_slates",
                     column_config={c: st.column_config.NumberColumn(format="%.5f")
                                    for c in ("value", "lower", "upper", "se")})


def _loggers_section(res):
    """Several loggers: per-logger estimates and which combined estimate to trust."""
    if res.per_logger is None:
        return
    st.subheader("Several loggers")
    st.markdown(
        "This log was written by several logging policies. **Pooled IPS** treats every row "
        "alike and is unbiased, but its variance is set by the logger that explored least. "
        "**Balanced IPS** divides by the loggers' average probability of each action, so a "
        "row any logger could easily have produced never gets a huge weight; it needs every "
        "logger's probability of every logged action. **Weighted IPS** (Agarwal et al., KDD "
        "2017) averages the loggers' own estimates, each weighted by how precise it is. "
        "Trust balanced IPS when it is available, WIPS otherwise; both are unbiased (WIPS up "
        "to a small bias from its estimated weights), and the column *variance vs pooled* "
        "shows how much each gains over pooling.")
    per = res.per_logger.rename(columns={"ips": "IPS", "cv_value": "control-variate IPS",
                                         "wips_weight": "WIPS weight"})
    st.dataframe(per, hide_index=True, width="stretch", key="ope_loggers",
                 column_config={c: st.column_config.NumberColumn(format="%.5f")
                                for c in ("IPS", "lower", "upper", "control-variate IPS")})


# ---------------------------------------------------------------- view 2: simulation


@ui.cache_data(show_spinner=False, max_entries=512)
def _simulate_chunk(index: int, opts: tuple):
    return study_chunk(index, **dict(opts))


def _simulate(settings: tuple, progress=None) -> dict:
    return simulation_study(**dict(settings), progress=progress,
                            run_chunk=lambda i, o: _simulate_chunk(i, tuple(sorted(o.items()))))


def view_simulation():
    st.caption(
        "A logged-bandit world whose click probabilities are known, so the true value of the "
        "target policy is exact. Many independent logs are drawn; each estimator's spread "
        "around the truth shows its bias and variance.")
    settings, run = _simulation_form()
    if run:
        draws = dict(settings)["draws"]
        with ui.user_errors("Cannot simulate: "):
            if not dict(settings)["estimators"]:
                raise UlrError("choose at least one estimator.")
            with st.status("Simulating repeated logs…", expanded=False) as status:
                bar = st.progress(0.0)

                def progress(done, total):
                    bar.progress(done / total, text=f"{min(done * CHUNK, draws)} of "
                                                    f"{draws} logs")

                _simulate(settings, progress=progress)
                status.update(label="Simulation done", state="complete")
            st.session_state["ope_sim_settings"] = settings
    last = st.session_state.get("ope_sim_settings")
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
        draws = int(c[0].number_input("Repeated logs", 10, 2000,
                                      ui.url_number("sim_draws", 200, 10, 2000), step=10,
                                      key="sim_draws"))
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
        estimators = c[2].multiselect("Estimators", list(est.ESTIMATORS),
                                      default=ui.url_options(
                                          "sim_estimators", est.ESTIMATORS,
                                          ["ips", "clipped-ips", "snips", "dr"]),
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
                      sim_draws=draws, sim_logging=logging, sim_target=target,
                      sim_estimators=list(estimators), sim_seed=seed)
    settings = (("contexts", contexts), ("actions", actions), ("features", features),
                ("slots", slots), ("rows", rows), ("draws", draws), ("logging", logging),
                ("logging_temperature", float(logging_temperature)),
                ("base_rate", float(base_rate)), ("target", target),
                ("temperature", float(temperature)), ("estimators", tuple(estimators)),
                ("clip", float(clip) if clip > 0 else None), ("intervals", bool(intervals)),
                ("n_bootstrap", n_bootstrap), ("seed", seed))
    return settings, run


def _show_simulation(out: dict, s: dict):
    """Truth, the per-estimator table, the spread and bias-variance figures, intervals,
    the download and the report item of one simulation study."""
    ui.show_verdict(study_verdict(out), key="ope_sim")
    m = st.columns(4)
    m[0].metric("True value of the target", f"{out['truth']:.4f}")
    m[1].metric("Logging policy's value", f"{out['logging']:.4f}")
    m[2].metric("Mean ESS / rows", f"{out['ess_fraction']:.0%}")
    m[3].metric("Largest weight", f"{out['max_weight']:.3g}")
    tab = out["table"].copy()
    tab.insert(0, "method", tab["estimator"].map(lambda e: LABELS.get(e, e)))
    st.dataframe(tab, hide_index=True, width="stretch", key="sim_table")
    c1, c2 = st.columns(2)
    fig1 = F.repeated_figure(out["estimates"], out["truth"])
    c1.plotly_chart(fig1, key="sim_box")
    fig2 = F.bias_variance_figure(out["table"])
    c2.plotly_chart(fig2, key="sim_bv")
    if s["intervals"]:
        names = list(dict.fromkeys(out["estimates"]["estimator"]))
        pick = st.selectbox("Intervals of", names, format_func=lambda e: LABELS.get(e, e),
                            key="sim_pick")
        st.plotly_chart(F.intervals_figure(out["estimates"], out["truth"], estimator=pick),
                        key="sim_intervals")
    st.caption(f"{s['draws']} logs of {s['rows']:,} rows; bias ± 2 standard errors. Clipping "
               "lowers the variance and biases the estimate downwards (rewards are ≥ 0); "
               "SNIPS trades a small bias for much less variance; DR leans on its reward model.")
    ui.download_csv(out["estimates"], "ope_simulation_estimates.csv",
                    "Download all estimates (CSV)", key="sim_csv")
    verdict = study_verdict(out)
    ui.add_to_report(
        f"OPE estimators over repeated simulated logs (target policy: {s['target']})",
        fig=fig2, table=tab,
        settings={"target policy": s["target"], "estimator": ", ".join(s["estimators"]),
                  "seed": s["seed"], **s},
        caveats=[], evidence={"rows": s["rows"] * s["draws"], "clicks": None,
                              "queries": s["contexts"], "sessions": None},
        key="ope_sim", verdict=verdict)


# ---------------------------------------------------------------- view 3: learning


@ui.cache_data(show_spinner=False, max_entries=16)
def _learn(source: str, name: str, content_hash: str, action: str, settings: tuple,
           _should_stop=None):
    s = dict(settings)
    fb = None
    if source != "simulation":
        fb, _ = feedback_from_log(_open(source, name), action=action)
    return crm_study(fb, **s, should_stop=_should_stop)


def view_learn():
    st.caption(
        "Counterfactual risk minimization: a linear softmax policy over the feature_* columns "
        "is fit by gradient ascent on its IPS or SNIPS estimate on part of the log, then "
        "evaluated, with intervals, on the held-out rest.")
    data = st.radio("Data", ["log", "simulation"], horizontal=True, key="crm_data",
                    index=ui.url_index("crm_data", ["log", "simulation"], "log"),
                    format_func={"log": "a log with propensities",
                                 "simulation": "a simulated log (true values known)"}.get)
    if data == "log":
        source, name, content_hash, _ = _pick_log()
    else:
        source, name, content_hash = "simulation", "simulation", ""
    settings, submitted = _learn_form(data)
    s = dict(settings)
    ui.set_url_params(view=VIEWS[2], crm_data=data, crm_objective=s["objective"],
                      crm_steps=s["steps"], crm_seed=s["seed"],
                      log=source if data == "log" else None)
    key = (source, name, content_hash, settings)
    if submitted:
        with ui.user_errors("Cannot learn: "):
            with ui.cancellable() as stop, \
                    st.status(f"Learning ({s['steps']} gradient steps, then a bootstrap on "
                              "the held-out rows)…", expanded=False) as status:
                _learn(source, name, content_hash, "doc_id", settings, _should_stop=stop)
                status.update(label="Learned", state="complete")
            st.session_state["crm_key"] = key
    last = st.session_state.get("crm_key")
    if last is None or last[0] != source:
        st.info("Press **Learn a policy**.")
        return
    out = None
    with ui.user_errors("Cannot learn: "), ui.cancellable() as stop:
        out = _learn(last[0], last[1], last[2], "doc_id", last[3], _should_stop=stop)
    if out is None:
        return
    _show_learned(out, dict(last[3]))


def _learn_form(data: str) -> tuple[tuple, bool]:
    """The learning options (a form; with the simulated world's when ``data`` is
    "simulation"), as crm_study's settings, and whether the form was submitted."""
    with st.form("crm_form"):
        c = st.columns(4)
        objective = c[0].selectbox("Objective", ["snips", "ips"], key="crm_obj",
                                   index=ui.url_index("crm_objective", ["snips", "ips"], "snips"),
                                   format_func=lambda e: LABELS.get(e, e))
        l2 = c[1].number_input("L2 penalty", 0.0, 100.0, 0.01, format="%.3f", key="crm_l2")
        vp = c[2].number_input("Variance penalty (POEM λ)", 0.0, 100.0, 0.0, key="crm_vp")
        clip = c[3].number_input("Clip weights (0 = off)", 0.0, 1e6, 0.0, key="crm_clip")
        c = st.columns(4)
        steps = int(c[0].number_input("Gradient steps", 10, min(5000, ui.limit("ULR_MAX_STEPS")),
                                      ui.url_number("crm_steps", 200, 10, 5000,
                                                    cap="ULR_MAX_STEPS", what="gradient steps"),
                                      step=10, key="crm_steps"))
        lr = c[1].number_input("Learning rate", 0.001, 10.0, 0.5, key="crm_lr")
        fit = c[2].slider("Share of impressions to learn on", 0.1, 0.9, 0.5, step=0.1,
                          key="crm_fit")
        seed = int(c[3].number_input("Seed", 0, 10**6, ui.url_number("crm_seed", 0, 0, 10**6),
                                     key="crm_seed"))
        crm_bootstrap = int(c[0].number_input("Bootstrap draws", 100, 20_000, 1000,
                                              step=100, key="crm_boot"))
        sim_settings = ()
        if data == "simulation":
            c = st.columns(4)
            sim_settings = (
                ("contexts", int(c[0].number_input("Queries", 1, 500, 20, key="crm_ctx"))),
                ("actions", int(c[1].number_input("Documents per query", 2, 100, 10,
                                                  key="crm_act"))),
                ("rows", int(c[2].number_input("Rows", 100, 200_000, 5000, step=500,
                                               key="crm_rows"))),
                ("base_rate", float(c[3].number_input("Mean click probability", 0.001, 0.9,
                                                      0.1, format="%.3f", key="crm_base"))),
                ("features", int(c[0].number_input("Features", 1, 50, 5, key="crm_feat"))))
        submitted = st.form_submit_button("Learn a policy", type="primary")
    settings = (("objective", objective), ("l2", float(l2)), ("variance_penalty", float(vp)),
                ("clip", float(clip) if clip > 0 else None), ("steps", steps),
                ("learning_rate", float(lr)), ("fit_fraction", float(fit)), ("seed", seed),
                ("n_bootstrap", crm_bootstrap), *sim_settings)
    return settings, submitted


def _show_learned(out: dict, s: dict):
    """Held-out values, warnings, the learning curve, the evaluation table, the weights,
    the download and the report item of one learned policy."""
    res = out["result"]
    verdict = res.verdict()
    ui.show_verdict(verdict, key="crm")
    _headline(verdict, target="Learned policy (held out)")
    if "truth" in out:
        m = st.columns(3)
        m[0].metric("True value of the learned policy", f"{out['truth']:.2%}",
                    f"{out['truth'] - out['logging']:+.2%} vs logging")
        m[1].metric("True value of the logging policy", f"{out['logging']:.2%}")
        m[2].metric("Best possible (greedy on the truth)", f"{out['best']:.2%}")
    for w in res.evaluation.warnings:
        st.warning(w.message, icon=":material/warning:")
    fig = F.crm_curve_figure(res.curve, truth=out.get("truth_path"),
                             logging_value=out.get("logging"))
    st.plotly_chart(fig, key="crm_chart")
    ev = _estimates_frame(res.evaluation.table)
    st.dataframe(ev, hide_index=True, width="stretch", key="crm_table")
    st.dataframe(pd.DataFrame({"feature": out["features"], "weight": res.coef}),
                 hide_index=True, key="crm_coef")
    curve = res.curve if "truth_path" not in out else res.curve.assign(
        true_value=out["truth_path"])
    ui.download_csv(curve, "crm_learning_curve.csv", "Download learning curve (CSV)",
                    key="crm_csv")
    ui.add_to_report(
        f"Policy learned by counterfactual risk minimization ({s['objective'].upper()} "
        "objective)",
        fig=fig, table=ev,
        settings={"target policy": "learned linear softmax", "estimator": s["objective"],
                  "seed": s["seed"], **s},
        caveats=[w.message for w in res.evaluation.warnings],
        evidence={"rows": res.evaluation.diagnostics["n"],
                  "clicks": res.evaluation.diagnostics["clicks"], "queries": None,
                  "sessions": None},
        key="ope_crm", verdict=verdict)


if view == VIEWS[0]:
    view_log()
elif view == VIEWS[1]:
    view_simulation()
else:
    view_learn()
