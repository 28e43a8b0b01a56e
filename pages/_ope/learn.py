"""View 3 of Off-policy evaluation: learn a policy from the log (counterfactual risk
minimization) and evaluate it on held-out rows."""

import pandas as pd
import streamlit as st

from pages import _ui as ui
from pages._ope.common import (LABELS, OPE_SAMPLE, VIEWS, _headline, _open, _pick_log,
                               estimates_table)
from ulr import theme
from ulr.ope import figures as F
from ulr.ope.crm import OBJECTIVES
from ulr.ope.feedback import feedback_from_log
from ulr.ope.study import crm_study
from ulr.quantity import Quantity, show

@ui.cache_data(show_spinner=False, max_entries=16)
def _learn(dataset: str, name: str, content_hash: str, action: str, settings: tuple,
           mapping: tuple = (), _should_stop=None):
    # the mapping warnings are part of the key: the learned policy's verdict weighs them
    s = {"n_features" if k == "features" else k: v for k, v in settings}  # glossary name
    fb = None
    if dataset != "simulation":
        fb, _ = feedback_from_log(_open(dataset, name), action=action)
    return crm_study(fb, **s, should_stop=_should_stop, mapping=mapping)


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
        dataset, name, content_hash, _ = _pick_log()
    else:
        dataset, name, content_hash = "simulation", "simulation", ""
    settings, submitted = _learn_form(data)
    s = dict(settings)
    ui.set_url_params(view=VIEWS[2], crm_data=data, crm_objective=s["objective"],
                      crm_steps=s["steps"], crm_seed=s["seed"],
                      dataset=dataset if data == "log" else None)
    key = (dataset, name, content_hash, settings)
    mapping = () if dataset in ("simulation", OPE_SAMPLE) else \
        ui.mapping_warnings(ui.current_log())
    if submitted:
        with ui.user_errors("Cannot learn: "):
            with ui.cancellable() as stop, \
                    st.status(f"Learning ({s['steps']} gradient steps, then a bootstrap on "
                              "the held-out rows)…", expanded=False) as status:
                _learn(dataset, name, content_hash, "doc_id", settings, mapping,
                       _should_stop=stop)
                status.update(label="Learned", state="complete")
            ui.submitted("crm_form", key)
    last = ui.submitted("crm_form")
    if last is None or last[0] != dataset:
        st.info("Press **Learn a policy**.")
        return
    out = None
    with ui.user_errors("Cannot learn: "), ui.cancellable() as stop:
        out = _learn(last[0], last[1], last[2], "doc_id", last[3], mapping, _should_stop=stop)
    if out is None:
        return
    _show_learned(out, dict(last[3]), simulated=last[0] == "simulation")


def _learn_form(data: str) -> tuple[tuple, bool]:
    """The learning options (a form; with the simulated world's when ``data`` is
    "simulation"), as crm_study's settings, and whether the form was submitted."""
    with st.form("crm_form"):
        c = st.columns(4)
        offered = list(reversed(OBJECTIVES))  # SNIPS first, the default
        objective = c[0].selectbox("Objective", offered, key="crm_obj",
                                   index=ui.url_index("crm_objective", offered, "snips"),
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


def _show_learned(out: dict, s: dict, *, simulated: bool):
    """Held-out values, warnings, the learning curve, the evaluation table, the weights,
    the download and the report item of one learned policy."""
    res = out["result"]
    verdict = res.verdict
    ui.show_verdict(verdict, key="crm")
    _headline(verdict, target="Learned policy (held out)")
    if "truth" in out:
        m = st.columns(3)
        m[0].metric("True value of the learned policy", show('rate', out['truth']),
                    f"{Quantity('points', out['truth'] - out['logging']).text()} vs logging")
        m[1].metric("True value of the logging policy", show('rate', out['logging']))
        m[2].metric("Best possible (greedy on the truth)", show('rate', out['best']))
    for w in res.evaluation.warnings:
        if w.code != "clipped_rate":  # the caption under the table says it
            st.warning(ui.literal(w.message), icon=":material/warning:")
    fig = F.crm_curve_figure(res.curve, truth=out.get("truth_path"),
                             logging_value=out.get("logging"))
    st.plotly_chart(fig, key="crm_chart")
    ev = estimates_table(res.evaluation)
    ui.dataframe(theme.styled(ev, rates=("value", "lower", "upper", "standard error"),
                              points=("minus logging, lower", "minus logging, upper"),
                              interval=("lower", "upper")),  # as on Evaluate a log
                 hide_index=True, width="stretch", key="crm_table")
    ui.dataframe(pd.DataFrame({"feature": out["features"], "weight": res.coef}),
                 hide_index=True, key="crm_coef")
    curve = res.curve if "truth_path" not in out else res.curve.assign(
        true_value=out["truth_path"])
    ui.download_csv(curve, "crm_learning_curve.csv", "Download learning curve (CSV)",
                    key="crm_csv")
    ui.add_to_report(
        f"Policy learned by counterfactual risk minimization ({s['objective'].upper()} "
        "objective)",
        fig=fig, table=ev,
        settings={"target policy": "learned linear softmax",
                  "estimator": LABELS.get(s["objective"], s["objective"]), "seed": s["seed"],
                  **{k: v for k, v in s.items() if k != "objective"}},
        caveats=[w.message for w in res.evaluation.warnings],
        evidence={"rows": res.evaluation.diagnostics["n"],
                  "clicks": res.evaluation.diagnostics["clicks"], "queries": None,
                  "sessions": None},
        key="ope_crm", verdict=verdict, simulated=simulated)
