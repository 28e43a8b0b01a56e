"""View 1 of Off-policy evaluation: estimate a target policy's value from a log."""

import streamlit as st

from pages import _ui as ui
from pages._ope.common import (LABELS, OPE_SAMPLE, VIEWS, _headline, _open, _pick_log,
                               estimates_table)
from ulr import theme
from ulr.data import schema
from ulr.ope import figures as F
from ulr.ope import registry
from ulr.ope.evaluate import HEAVY_TAIL_ESS_FRACTION, HEAVY_TAIL_MAX_SHARE
from ulr.ope.evaluate import evaluate_log
from ulr.ope.loggers import PER_LOGGER_LABELS
from ulr.ope.settings import OPESettings
from ulr.ope.slate import slate_from_log
from ulr.quantity import Quantity, rate_of, show
from ulr.verdict import MIN_EFFECTIVE_CLICKS

INTERVAL_LABELS = {"bootstrap": "Percentile bootstrap intervals", "t": "Student t intervals",
                   "hoeffding": "Hoeffding bounds", "bernstein": "Empirical Bernstein bounds"}
REWARD_LABELS = {"linear": "linear (logistic)", "gbdt": "gradient-boosted trees",
                 "column": "my own predictions (a column)"}
TARGETS = {"fitted": "softmax of a linear click model fit on part of the log",
           "scores": "softmax of a score column",
           "column": "a column of target probabilities",
           "uniform": "uniform over each query's documents",
           "table": "a table of its probabilities of every action (upload)"}
#: how this page meets each need of an estimator (ulr.ope.registry.NEEDS)
PAGE_MEETS = {"full_target": "choose a fitted, score or uniform **Target policy**, or upload "
                             "a **Target table** of its probabilities of every action",
              "loggers": "map a column to the field logger on the Data page"}



@ui.cache_data(show_spinner=False, max_entries=32)
def _evaluate(dataset: str, name: str, content_hash: str, settings: tuple,
              table: bytes | None = None, mapping: tuple = ()):
    # estimators the input does not identify are left out (and explained), not refused;
    # the mapping warnings are part of the key: the result's verdict weighs them
    return evaluate_log(_open(dataset, name), OPESettings(**dict(settings), explicit=False),
                        target_table=table, mapping=mapping)



def view_log():
    dataset, name, content_hash, info = _pick_log()
    settings, table = _log_form(info)
    s = dict(settings)
    ui.set_url_params(view=VIEWS[0], dataset=dataset, target=s["target"],
                      temperature=s["temperature"], action=s["action"],
                      estimators=list(s["estimators"]), seed=s["seed"])
    if s["target"] == "table" and table is None:
        st.info("Upload the **Target table** above: one row per query and document, with "
                "columns query_id, doc_id and probability (each query's probabilities add "
                "up to 1).", icon=":material/upload_file:")
        return
    res = None
    mapping = ui.mapping_warnings(ui.current_log()) if dataset != OPE_SAMPLE else ()
    with ui.user_errors("Cannot evaluate: "):
        with st.spinner("Estimating…"):
            res = _evaluate(dataset, name, content_hash, settings, table, mapping)
    if res is not None:
        _show_log_result(res, dataset, name, content_hash, settings)


def _log_form(info) -> tuple:
    """The target policy and estimator options (widgets), as evaluate_log's settings."""
    extras = [] if info is None else [
        c for c in info.columns if c not in schema.CANONICAL
        and not c.startswith(schema.FEATURE_PREFIX) and c != "true_theta"]
    extras = [c for c in extras if not c.startswith("propensity_") and c != "logger"]
    has_features = info is None or bool(info.features)
    has_logger = info is not None and info.has("logger")
    targets = (["fitted"] if has_features else []) + ["uniform"] + \
        (["scores", "column"] if extras else []) + ["table"]
    c1, c2, c3 = st.columns([2, 1, 1])
    target = c1.selectbox("Target policy", targets, format_func=TARGETS.get, key="ope_target",
                          index=ui.url_index("target", targets, targets[0]),
                          help="The policy to evaluate. The fitted one is a logistic click "
                               "model on the feature_* columns, fit on a share of the "
                               "impressions and evaluated on the rest.")
    column = table = None
    if target in ("scores", "column"):
        column = c1.selectbox("Column", extras, key="ope_column")
    if target == "table":
        up = c1.file_uploader("Target table (CSV or Parquet)", type=["csv", "parquet"],
                              key="ope_target_table",
                              help="The target's probability of every document for each "
                                   "query: columns query_id, doc_id, probability. DM and "
                                   "the DR family need it.")
        table = up.getvalue() if up is not None else None
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
    choices = list(registry.names(loggers=has_logger))
    default_est = list(registry.defaults()) + [
        n for n in choices if registry.get(n).needs_loggers]
    with st.expander("Estimator options"):
        o1, o2, o3, o4 = st.columns(4)
        estimators = o1.multiselect("Estimators", choices,
                                    default=ui.url_options("estimators", choices, default_est),
                                    key="ope_estimators",
                                    format_func=registry.label)
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
    # "auto" lives in the link's estimators (set_url_params below): a link or a refresh
    # reopens with the choice on
    auto = st.toggle("Choose for me", "auto" in ui.url_param("estimators", [], kind=list),
                     key="ope_auto",
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
    return settings, table


def _show_log_result(res, dataset, name, content_hash, settings: tuple):
    """Diagnostics, warnings, the estimates (table, chart, download), the several-loggers
    and slate sections and the report item of one evaluation."""
    s = dict(settings)
    column = s["target_column"] or s["score_column"]
    d = res.diagnostics
    verdict = res.verdict  # set when evaluated, with the log's mapping warnings
    ui.show_verdict(verdict, key="ope")
    _headline(verdict)
    m = st.columns(5)
    m[0].metric("Rows evaluated", f"{d['n']:,}", help=f"of {res.settings['log_rows']:,} in the log")
    m[1].metric("Clicks", f"{d['clicks']:,}", help=f"CTR {rate_of(d['ctr'], d['n']).text()}")
    m[2].metric("Effective sample size", show('count', round(d['ess'])), f"{show('rate', d['ess_fraction'])} of rows",
                delta_color="off", delta_arrow="off", help="(Σw)² / Σw² (Kish)")
    m[3].metric("Effective clicks", show('number', d['effective_clicks']),
                help="Effective sample size of the weights of the clicked rows: what limits "
                     "the precision when clicks are rare.")
    m[4].metric("Largest weight", Quantity("weight", d["max_weight"]).text(),
                f"{show('rate', d['max_weight_share'])} of the total", delta_color="off",
                delta_arrow="off")
    selected = res.settings.get("selected")
    if selected:
        st.info(f"**Chosen for you: {LABELS.get(selected['estimator'], selected['estimator'])}**"
                f". {ui.literal(selected['reason'])}", icon=":material/auto_awesome:")
    left_out = not_computed(res)
    if left_out:
        st.info(left_out, icon=":material/block:")
    for w in res.warnings:
        if w.code not in ("not_identified", "clipped_rate"):  # said with the controls/table
            st.warning(ui.literal(w.message), icon=":material/warning:")
    table = estimates_table(res)
    ui.dataframe(theme.styled(table,  # rates as the headline reads them
                              rates=("value", "lower", "upper", "standard error"),
                              points=("minus logging, lower", "minus logging, upper"),
                              interval=("lower", "upper")),
                 hide_index=True, width="stretch", key="ope_table")
    fig = ui.figure(F.estimates_figure, res.table, logging_label=res.logging_label)
    st.plotly_chart(fig, key="ope_chart")
    st.caption(
        f"Values are expected clicks per logged row under the target policy; bars are "
        f"{s['level']:.0%} {INTERVAL_LABELS[s['interval']].lower()} "
        f"({s['n_bootstrap']:,} bootstrap draws for the differences, "
        f"resampling {res.settings['resampling']}). The dashed line is the click rate of the "
        f"{res.logging_label}. Warnings: heavy-tailed weights when the effective sample size "
        f"is below {HEAVY_TAIL_ESS_FRACTION:.0%} of the rows or one row carries over "
        f"{HEAVY_TAIL_MAX_SHARE:.0%} of the weight; small sample below "
        f"{MIN_EFFECTIVE_CLICKS} effective clicks.")
    ui.download_csv(table, f"ope_estimates_{name}.csv", "Download estimates (CSV)",
                    key="ope_csv")
    _loggers_section(res)
    _slate_section(dataset, name, content_hash, s["target"], column, s["temperature"],
                   s["fit_fraction"], s["level"], s["seed"])
    policy = TARGETS[s["target"]] + (f" ({column})" if column else "")
    ui.add_to_report(
        f"Off-policy estimates of the target policy: {policy}", fig=fig, table=table,
        settings={"log": name, "target policy": policy,
                  "estimators": registry.labels(s["estimators"]), "seed": s["seed"],
                  **{k: v for k, v in s.items() if k != "estimators"}},
        caveats=[w.message for w in res.warnings],
        evidence={"rows": d["n"], "clicks": d["clicks"],
                  "queries": res.settings.get("contexts"),
                  "sessions": d["units"] if res.settings["resampling"] == "impressions"
                  else None},
        key="ope_log", verdict=verdict)


@ui.cache_data(show_spinner=False, max_entries=16)
def _slates(dataset, name, content_hash, settings: tuple, mapping: tuple = ()):
    # the mapping warnings are part of the key: the slate verdict weighs them
    return slate_from_log(_open(dataset, name), **dict(settings), mapping=mapping)


def _slate_section(dataset, name, content_hash, target, column, temperature, fit_fraction,
                   level, seed):
    """Rankings: the target as a ranking policy, judged per whole slate; computed and drawn
    only while its section is open (most visits never open it)."""
    section = st.expander("Rankings: clicks per ranking (slate estimators)", key="ope_slates_open",
                          on_change="rerun")
    with section:
        if not section.open:
            return
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
        mapping = () if dataset == OPE_SAMPLE else ui.mapping_warnings(ui.current_log())
        if dataset != OPE_SAMPLE and ui.mapping_stops(ui.current_log(), "slate",
                                                        "Judging whole rankings"):
            return
        out = None
        with ui.user_errors("Cannot evaluate rankings: "):
            out = _slates(dataset, name, content_hash, settings, mapping)
        if out is None:
            return
        ui.show_verdict(out.verdict, key="ope_slate")
        tab = out.shown_table()
        st.caption(f"{out.sessions:,} complete rankings of {out.slots} slots, "
                   f"{out.clicks:,} clicks; values are expected clicks per ranking with "
                   f"{level:.0%} normal intervals. Each estimator is right only under its "
                   "assumption (last column). " + " ".join(out.notes))
        ui.dataframe(theme.styled(tab, groups=(("value", "lower", "upper"),)),
                     hide_index=True, width="stretch", key="ope_slates")


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
    per = res.per_logger.rename(columns=PER_LOGGER_LABELS)
    ui.dataframe(theme.styled(per, rates=("IPS", "lower", "upper", "control-variate IPS")),
                 hide_index=True, width="stretch", key="ope_loggers")


def not_computed(res) -> str | None:
    """One sentence per need the input leaves unmet: which estimators it keeps out (asked
    for, or among "Choose for me"'s candidates), and this page's way to meet it."""
    by_need = {}
    for name, need in res.settings.get("not_identified", {}).items():
        by_need.setdefault(need, []).append(name)
    for x in (res.settings.get("selected") or {}).get("excluded", []):
        for need in registry.get(x["estimator"]).needs:
            if x["estimator"] not in by_need.setdefault(need, []):
                by_need[need].append(x["estimator"])
    if not by_need:
        return None
    out = []
    for need, names in by_need.items():
        who = ", ".join(registry.label(n) for n in names)
        out.append(f"Not computed: {who}. {'It needs' if len(names) == 1 else 'They need'} "
                   f"{registry.NEEDS[need]}, which this input does not give: "
                   f"{PAGE_MEETS[need]}. The verdict rests on the estimators that were "
                   "computed.")
    return " ".join(out)
