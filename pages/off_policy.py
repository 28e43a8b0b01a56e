"""Off-policy evaluation: estimate a new policy's value from a log of another, check the
estimators against a simulation with known truth, and learn a policy from the log."""

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from pages import _ui as ui
from ulr import schema, store
from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope import figures as F
from ulr.ope.crm import learn_policy
from ulr.ope.evaluate import FEW_EFFECTIVE_CLICKS, HEAVY_TAIL_ESS_FRACTION, HEAVY_TAIL_MAX_SHARE
from ulr.ope.evaluate import evaluate_log
from ulr.ope.feedback import feedback_from_log
from ulr.ope.simulate import (bias_variance_table, repeated_intervals, repeated_point_estimates,
                              simulate_bandit)

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

def _url_index(name: str, options: list, default) -> int:
    v = ui.url_param(name, default)
    return options.index(v) if v in options else options.index(default)


def _url_estimators(name: str, default: list) -> list:
    return [e for e in ui.url_param(name, [], kind=list) if e in est.ESTIMATORS] or default


view = st.segmented_control("View", VIEWS, default=VIEWS[_url_index("view", VIEWS, VIEWS[0])],
                            key="ope_view") or VIEWS[0]


# ---------------------------------------------------------------- data source


def _open(source: str, name: str):
    if source == SAMPLE_SOURCE:
        return store.open_file(SAMPLE)
    return store.open_dataset(name, cur=store.cursor())


@st.cache_data(show_spinner=False, max_entries=4)
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
                      index=_url_index("log", options, options[0]),
                      format_func=lambda o: label.get(o, f"current dataset “{o}”"))
    if source == SAMPLE_SOURCE:
        return SAMPLE_SOURCE, "sample_ope.csv", _sample_hash(), None
    return log.info.name, log.info.name, log.info.content_hash, log.info


@st.cache_data(show_spinner=False, max_entries=32)
def _evaluate(source: str, name: str, content_hash: str, settings: tuple):
    return evaluate_log(_open(source, name), **dict(settings))


def _estimates_frame(table: pd.DataFrame) -> pd.DataFrame:
    t = table.copy()
    t.insert(0, "method", t["estimator"].map(lambda e: LABELS.get(e, e)))
    return t


# ---------------------------------------------------------------- view 1: a log


def view_log():
    source, name, content_hash, info = _pick_log()
    extras = [] if info is None else [
        c for c in info.columns if c not in schema.CANONICAL
        and not c.startswith(schema.FEATURE_PREFIX) and c != "true_theta"]
    targets = ["fitted", "uniform"] + (["scores", "column"] if extras else [])
    c1, c2, c3 = st.columns([2, 1, 1])
    target = c1.selectbox("Target policy", targets, format_func=TARGETS.get, key="ope_target",
                          index=_url_index("target", targets, "fitted"),
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
                          index=_url_index("action", ["doc_id", "position"], "doc_id"),
                          help="What the policy chooses for a query: which document to show "
                               "(per position), or which position.")
    with st.expander("Estimator options"):
        o1, o2, o3, o4 = st.columns(4)
        estimators = o1.multiselect("Estimators", list(est.ESTIMATORS),
                                    default=_url_estimators("estimators",
                                                            list(est.DEFAULT_ESTIMATORS)),
                                    key="ope_estimators",
                                    format_func=lambda e: LABELS.get(e, e))
        clip_auto = o2.checkbox("Automatic clip", True, key="ope_clip_auto",
                                help="√n × mean weight (Ionides 2008): trims only weights "
                                     "that are extreme for the sample size.")
        clip = o2.number_input("Clip weights at", 1.0, 1e6, 10.0, key="ope_clip",
                               disabled=clip_auto)
        n_boot = int(o3.number_input("Bootstrap draws", 100, 20_000, 1000, step=100,
                                     key="ope_boot"))
        level = o3.select_slider("Confidence level", [0.8, 0.9, 0.95, 0.99], 0.95,
                                 key="ope_level")
        fit_fraction = o4.slider("Share of impressions to fit the target", 0.0, 0.9, 0.5,
                                 step=0.1, key="ope_fit", disabled=target != "fitted",
                                 help="0 fits and evaluates on all rows (optimistic).")
        folds = int(o4.number_input("DR cross-fitting folds", 1, 10, 2, key="ope_folds"))
        seed = int(o1.number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6),
                                   key="ope_seed"))
    ui.set_url_params(view=VIEWS[0], log=source, target=target, temperature=float(temperature),
                      action=action, estimators=list(estimators), seed=seed)
    settings = (("action", action), ("target", target),
                ("target_column", column if target == "column" else None),
                ("score_column", column if target == "scores" else None),
                ("temperature", float(temperature)), ("fit_fraction", float(fit_fraction)),
                ("estimators", tuple(estimators)), ("clip", None if clip_auto else float(clip)),
                ("n_bootstrap", n_boot), ("level", float(level)), ("folds", folds),
                ("seed", seed))
    res = None
    with ui.user_errors("Cannot evaluate: "):
        with st.spinner("Estimating…"):
            res = _evaluate(source, name, content_hash, settings)
    if res is None:
        return
    d = res.diagnostics
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
    for w in res.warnings:
        st.warning(w.message, icon=":material/warning:")
    table = _estimates_frame(res.table)
    st.dataframe(table, hide_index=True, width="stretch", key="ope_table",
                 column_config={c: st.column_config.NumberColumn(format="%.5f")
                                for c in ("value", "lower", "upper", "se")})
    fig = F.estimates_figure(res.table)
    st.plotly_chart(fig, key="ope_chart")
    st.caption(
        f"Values are expected clicks per logged row under the target policy; bars are "
        f"{level:.0%} percentile-bootstrap intervals ({n_boot:,} draws, resampling "
        f"{res.settings['resampling']}). The dashed line is the logging policy's own click "
        f"rate. Warnings: heavy-tailed weights when the effective sample size is below "
        f"{HEAVY_TAIL_ESS_FRACTION:.0%} of the rows or one row carries over "
        f"{HEAVY_TAIL_MAX_SHARE:.0%} of the weight; small sample below "
        f"{FEW_EFFECTIVE_CLICKS} effective clicks.")
    ui.download_csv(table, f"ope_estimates_{name}.csv", "Download estimates (CSV)",
                    key="ope_csv")
    ui.add_to_report("Off-policy estimates", fig=fig, table=table,
                     settings={"log": name, **dict(settings)}, key="ope_log")


# ---------------------------------------------------------------- view 2: simulation


def _target_weights(sim, kind: str, seed: int):
    if kind == "reversed":
        return -sim.beta
    if kind == "noisy":
        rng = np.random.default_rng(seed + 7)
        return sim.beta + rng.standard_normal(len(sim.beta)) / np.sqrt(len(sim.beta))
    return sim.beta


CHUNK = 25  # logs per cached piece of a simulation (progress is shown between pieces)


def _world(s: dict):
    sim = simulate_bandit(contexts=s["contexts"], actions=s["actions"], features=s["features"],
                          slots=s["slots"], base_rate=s["base_rate"], logging=s["logging"],
                          logging_temperature=s["logging_temperature"], seed=s["seed"])
    pi = sim.policy(_target_weights(sim, s["target"], s["seed"]),
                    temperature=s["temperature"])
    return sim, pi


@st.cache_data(show_spinner=False, max_entries=512)
def _simulate_chunk(settings: tuple, chunk: int):
    """Logs ``chunk * CHUNK ...`` of a simulation: estimates and weight statistics."""
    s = dict(settings)
    sim, pi = _world(s)
    n = min(CHUNK, s["draws"] - chunk * CHUNK)
    draws = sim.sample(s["rows"], draws=n, seed=[s["seed"], chunk])
    if s["intervals"]:
        df = repeated_intervals(sim, pi, draws, estimators=s["estimators"],
                                n_bootstrap=s["n_bootstrap"], clip=s["clip"],
                                seed=s["seed"] + chunk * CHUNK)
    else:
        df = repeated_point_estimates(sim, pi, draws, estimators=s["estimators"],
                                      clip=s["clip"], seed=s["seed"] + chunk * CHUNK)
    df["draw"] += chunk * CHUNK
    w = pi[draws.pair] / draws.propensity
    return df, est.effective_sample_size(w) / s["rows"], float(w.max())


def _simulate(settings: tuple, progress=None) -> dict:
    s = dict(settings)
    sim, pi = _world(s)
    chunks = -(-s["draws"] // CHUNK)
    parts = []
    for c in range(chunks):
        parts.append(_simulate_chunk(settings, c))
        if progress is not None:
            progress(c + 1, chunks)
    df = pd.concat([p[0] for p in parts], ignore_index=True)
    truth = float(sim.true_value(pi))
    return {"truth": truth, "logging": float(sim.true_value(sim.logging)), "estimates": df,
            "table": bias_variance_table(df, truth),
            "ess_fraction": float(np.mean(np.concatenate([p[1] for p in parts]))),
            "max_weight": max(p[2] for p in parts)}


def view_simulation():
    st.caption(
        "A logged-bandit world whose click probabilities are known, so the true value of the "
        "target policy is exact. Many independent logs are drawn; each estimator's spread "
        "around the truth shows its bias and variance.")
    with st.form("ope_sim_form"):
        c = st.columns(4)
        contexts = int(c[0].number_input("Queries (contexts)", 1, 500,
                                         ui.url_number("sim_contexts", 20, 1, 500),
                                         key="sim_contexts"))
        actions = int(c[1].number_input("Documents per query", 2, 100,
                                        ui.url_number("sim_actions", 10, 2, 100),
                                        key="sim_actions"))
        slots = int(c[2].number_input("Positions", 1, 10, 1, key="sim_slots"))
        rows = int(c[3].number_input("Rows per log", 50, 100_000,
                                     ui.url_number("sim_rows", 1000, 50, 100_000), step=100,
                                     key="sim_rows"))
        c = st.columns(4)
        draws = int(c[0].number_input("Repeated logs", 10, 2000,
                                      ui.url_number("sim_draws", 200, 10, 2000), step=10,
                                      key="sim_draws"))
        logging = c[1].selectbox("Logging policy", ["uniform", "softmax"], key="sim_logging",
                                 index=_url_index("sim_logging", ["uniform", "softmax"],
                                                  "uniform"),
                                 help="softmax: favours documents of a noisy copy of the true "
                                      "click model")
        logging_temperature = c[2].number_input("Logging temperature", 0.05, 100.0, 1.0,
                                                key="sim_ltemp")
        base_rate = c[3].number_input("Mean click probability", 0.001, 0.9, 0.2,
                                      format="%.3f", key="sim_base")
        c = st.columns(4)
        target = c[0].selectbox("Target policy", ["true", "noisy", "reversed"],
                                index=_url_index("sim_target", ["true", "noisy", "reversed"],
                                                 "true"),
                                format_func={"true": "good (true click model)",
                                             "noisy": "noisy copy of the click model",
                                             "reversed": "bad (reversed)"}.get,
                                key="sim_target")
        temperature = c[1].number_input("Target temperature", 0.0, 100.0, 0.5, step=0.1,
                                        key="sim_temp")
        estimators = c[2].multiselect("Estimators", list(est.ESTIMATORS),
                                      default=_url_estimators(
                                          "sim_estimators", ["ips", "clipped-ips", "snips", "dr"]),
                                      format_func=lambda e: LABELS.get(e, e), key="sim_est")
        clip = c[3].number_input("Clip weights at (0 = automatic)", 0.0, 1e6, 4.0,
                                 key="sim_clip",
                                 help="Clipped IPS uses min(w, M). Automatic: √n × mean weight "
                                      "(Ionides 2008), which rarely clips in small worlds.")
        c = st.columns(4)
        intervals = c[0].checkbox("Bootstrap intervals (coverage)", False, key="sim_ci",
                                  help="Slower: a bootstrap per log.")
        n_boot = int(c[1].number_input("Bootstrap draws", 100, 5000, 400, step=100,
                                       key="sim_boot"))
        seed = int(c[2].number_input("Seed", 0, 10**6, ui.url_number("sim_seed", 0, 0, 10**6),
                                     key="sim_seed"))
        run = st.form_submit_button("Run simulation", type="primary")
    ui.set_url_params(view=VIEWS[1], sim_contexts=contexts, sim_actions=actions, sim_rows=rows,
                      sim_draws=draws, sim_logging=logging, sim_target=target,
                      sim_estimators=list(estimators), sim_seed=seed)
    settings = (("contexts", contexts), ("actions", actions), ("features", 5),
                ("slots", slots), ("rows", rows), ("draws", draws), ("logging", logging),
                ("logging_temperature", float(logging_temperature)),
                ("base_rate", float(base_rate)), ("target", target),
                ("temperature", float(temperature)), ("estimators", tuple(estimators)),
                ("clip", float(clip) if clip > 0 else None), ("intervals", bool(intervals)),
                ("n_bootstrap", n_boot), ("seed", seed))
    if run:
        with ui.user_errors("Cannot simulate: "):
            if not estimators:
                raise UlrError("choose at least one estimator.")
            with st.status("Simulating repeated logs…", expanded=False) as status:
                bar = st.progress(0.0)

                def progress(done, total):
                    bar.progress(done / total, text=f"{min(done * CHUNK, s_draws)} of "
                                                    f"{s_draws} logs")

                s_draws = draws
                _simulate(settings, progress=progress)
                status.update(label="Simulation done", state="complete")
            st.session_state["ope_sim_settings"] = settings
    last = st.session_state.get("ope_sim_settings")
    if last is None:
        st.info("Choose a world and press **Run simulation** (the defaults take a second).")
        return
    out = _simulate(last)
    s = dict(last)
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
    ui.add_to_report("OPE estimators over repeated simulated logs", fig=fig2, table=tab,
                     settings=dict(last), key="ope_sim")


# ---------------------------------------------------------------- view 3: learning


@st.cache_data(show_spinner=False, max_entries=16)
def _learn(source: str, name: str, content_hash: str, action: str, settings: tuple):
    s = dict(settings)
    if source == "simulation":
        sim = simulate_bandit(contexts=s["contexts"], actions=s["actions"], features=5,
                              base_rate=s["base_rate"], seed=s["seed"])
        fb = sim.sample(s["rows"], seed=s["seed"] + 1).feedback(0)
    else:
        sim = None
        fb, _ = feedback_from_log(_open(source, name), action=action)
    kw = {k: s[k] for k in ("objective", "l2", "variance_penalty", "clip", "steps",
                            "learning_rate", "fit_fraction", "seed")}
    res = learn_policy(fb, n_bootstrap=1000, **kw)
    out = {"result": res, "features": list(fb.candidates.feature_names)}
    if sim is not None:
        out["truth_path"] = sim.true_value(res.policy_path(fb.candidates))
        out["truth"] = float(sim.true_value(res.pi))
        out["logging"] = float(sim.true_value(sim.logging))
        out["best"] = float(sim.true_value(sim.policy(temperature=0)))
    return out


def view_learn():
    st.caption(
        "Counterfactual risk minimization: a linear softmax policy over the feature_* columns "
        "is fit by gradient ascent on its IPS or SNIPS estimate on part of the log, then "
        "evaluated, with intervals, on the held-out rest.")
    data = st.radio("Data", ["log", "simulation"], horizontal=True, key="crm_data",
                    index=_url_index("crm_data", ["log", "simulation"], "log"),
                    format_func={"log": "a log with propensities",
                                 "simulation": "a simulated log (true values known)"}.get)
    if data == "log":
        source, name, content_hash, _ = _pick_log()
    else:
        source, name, content_hash = "simulation", "simulation", ""
    with st.form("crm_form"):
        c = st.columns(4)
        objective = c[0].selectbox("Objective", ["snips", "ips"], key="crm_obj",
                                   index=_url_index("crm_objective", ["snips", "ips"], "snips"),
                                   format_func=lambda e: LABELS.get(e, e))
        l2 = c[1].number_input("L2 penalty", 0.0, 100.0, 0.01, format="%.3f", key="crm_l2")
        vp = c[2].number_input("Variance penalty (POEM λ)", 0.0, 100.0, 0.0, key="crm_vp")
        clip = c[3].number_input("Clip weights (0 = off)", 0.0, 1e6, 0.0, key="crm_clip")
        c = st.columns(4)
        steps = int(c[0].number_input("Gradient steps", 10, 5000,
                                      ui.url_number("crm_steps", 200, 10, 5000), step=10,
                                      key="crm_steps"))
        lr = c[1].number_input("Learning rate", 0.001, 10.0, 0.5, key="crm_lr")
        fit = c[2].slider("Share of impressions to learn on", 0.1, 0.9, 0.5, step=0.1,
                          key="crm_fit")
        seed = int(c[3].number_input("Seed", 0, 10**6, ui.url_number("crm_seed", 0, 0, 10**6),
                                     key="crm_seed"))
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
                                                      0.1, format="%.3f", key="crm_base"))))
        submitted = st.form_submit_button("Learn a policy", type="primary")
    ui.set_url_params(view=VIEWS[2], crm_data=data, crm_objective=objective, crm_steps=steps,
                      crm_seed=seed, log=source if data == "log" else None)
    settings = (("objective", objective), ("l2", float(l2)), ("variance_penalty", float(vp)),
                ("clip", float(clip) if clip > 0 else None), ("steps", steps),
                ("learning_rate", float(lr)), ("fit_fraction", float(fit)), ("seed", seed),
                *sim_settings)
    key = (source, name, content_hash, settings)
    if submitted:
        with ui.user_errors("Cannot learn: "):
            with st.status(f"Learning ({steps} gradient steps, then a bootstrap on the "
                           "held-out rows)…", expanded=False) as status:
                _learn(source, name, content_hash, "doc_id", settings)
                status.update(label="Learned", state="complete")
            st.session_state["crm_key"] = key
    last = st.session_state.get("crm_key")
    if last is None or last[0] != source:
        st.info("Press **Learn a policy**.")
        return
    out = None
    with ui.user_errors("Cannot learn: "):
        out = _learn(last[0], last[1], last[2], "doc_id", last[3])
    if out is None:
        return
    res = out["result"]
    t = res.evaluation.table.set_index("estimator")
    m = st.columns(4)
    m[0].metric("Learned policy, SNIPS (held out)", f"{t.loc['snips', 'value']:.4f}",
                help=f"interval [{t.loc['snips', 'lower']:.4f}, {t.loc['snips', 'upper']:.4f}]")
    m[1].metric("Logging policy (held out)", f"{t.loc['logging', 'value']:.4f}")
    if "truth" in out:
        m[2].metric("True value of the learned policy", f"{out['truth']:.4f}",
                    f"{out['truth'] - out['logging']:+.4f} vs logging")
        m[3].metric("Best possible (greedy on the truth)", f"{out['best']:.4f}")
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
    ui.add_to_report("Policy learned by counterfactual risk minimization", fig=fig, table=ev,
                     settings=dict(last[3]), key="ope_crm")


if view == VIEWS[0]:
    view_log()
elif view == VIEWS[1]:
    view_simulation()
else:
    view_learn()
