"""Compare rankers: naive vs IPW trained on the same clicks, with per-query CIs and a paired test."""

import html

import numpy as np
import pandas as pd
import streamlit as st

from pages import _ui as ui
from pages._rankers import several, theta_sources
from ulr import propensity, rankers, theme
from ulr.data import catalog
from ulr.errors import NeedsFeatures, NeedsRandomizedRows, TooFewQueries, UlrError
from ulr.quantity import setting, show
from ulr.text import parse_numbers, plain
from ulr.verdict import fmt_interval

st.title("Compare rankers")
log = ui.current_log()
info = log.info
st.caption(
    "Does bias correction make the ranker you train on your clicks better? Both rankers learn "
    "from the same clicks; the IPW one weights each click by 1/θ at its position. Both are "
    + ("scored on relevance labels of held-out queries (30%, seeded), which they never "
       "trained on." if info.has("relevance") else
       "scored on held-out queries (30%, seeded), which they never trained on; this log has "
       "no relevance labels, so the scores are click-based IPW estimates."))

REPORT_KEY = "compare_rankers"  # the page's "Add to report" (one key, both layouts)
TRUE = "true theta (recorded in the log)"
TYPED = "typed theta"
METHOD_PREFIX = "estimated: "
TEST_LABELS = {"randomization": "randomization (sign flips)", "bootstrap": "paired bootstrap",
               "t": "paired t-test"}
CORRECTION_LABELS = {"holm": "Holm (family-wise)", "bh": "Benjamini-Hochberg (false discovery)",
                     "none": "none"}


@ui.cache_data(show_spinner=False, max_entries=32)
def _compare(content_hash: str, name: str, theta: tuple, learner: str, clip, snips: bool,
             seed: int, n_bootstrap: int, test: str = "randomization",
             correction: str = "holm", theta_method: str | None = None,
             affine: tuple | None = None, by: tuple | None = None, _should_stop=None):
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    extra = {} if affine is None else {"affine": (np.array(affine[0]), np.array(affine[1]))}
    frame = rankers.log_frame(lg, extra=[by[0]] if by else [])
    if by:  # theta by segment: each click weighted by its own segment's theta
        frame, theta = rankers.segment_positions(frame, by[0], dict(by[1]))
    sc = rankers.compare_learners(frame, None, np.array(theta),
                                  learners=learner, clip=clip, normalize=snips, seed=seed,
                                  min_queries=rankers.MIN_TEST_QUERIES, n_bootstrap=n_bootstrap,
                                  test=test, correction=correction,
                                  n_resamples=rankers.PAIR_RESAMPLES, should_stop=_should_stop,
                                  **rankers.weighed_facts(lg, propensity=theta_method,
                                                          should_stop=_should_stop), **extra)
    return sc.view(n_bootstrap=n_bootstrap, seed=seed)  # computed and worded in ulr


def _parse_theta(text: str) -> tuple:
    return tuple(rankers.check_theta(parse_numbers(text, what="Theta")))


def _chart(res):
    table = res["table"]
    if CORR != "IPW":  # the corrected ranker by its name
        table = table.assign(ranker=table["ranker"].replace({"ipw": CORR}))
    fig = ui.figure(rankers.comparison_figure, table, estimated=res["estimated"],
                    title=f"Naive vs {CORR} ({learner.replace(',', ' and ')}) on "
                          f"“{html.escape(ui.clip(info.name))}”")  # Plotly reads tags
    st.plotly_chart(fig, key="cr_chart")
    st.caption("Dots show the metric on the held-out queries; whiskers are 95% percentile "
               "bootstrap intervals over queries. pAUC is McClish-standardized at max FPR "
               f"{setting(res['max_fpr'])}; local AUC counts the top {show('rate', res['u'])} "
               "of each list.")
    return fig


# ---------------------------------------------------------------- settings
true_theta = theta_sources.true_theta(info.content_hash, info.name)
theta_options = ([TRUE] if true_theta is not None else []) + \
    [METHOD_PREFIX + m for m in propensity.METHODS] + [TYPED]
c1, c2, c3 = st.columns([2, 1, 1])
# opened from the menu: the recorded truth, else the first method this dataset supports
supported = [METHOD_PREFIX + m for m in ui.page_methods(log)]
theta_from = c1.selectbox("θ from", theta_options,
                          index=ui.url_index("propensity", theta_options,
                                             theta_options[0] if true_theta is not None
                                             else (supported or [TYPED])[0]),
                          key="cr_theta_from",
                          help="Where θ (examination probability per position) comes from: "
                               "the simulator's truth, an estimator from the Position bias "
                               "page, or your own numbers (e.g. from an eye-tracking study).")
BOTH = ",".join(rankers.LEARNERS)
learner_options = [*rankers.LEARNERS, BOTH]
learner = c2.selectbox("Learner", learner_options,
                       index=ui.url_index("learner", learner_options, "linear"),
                       key="cr_learner",
                       format_func={"linear": "linear pairwise (SVM-Rank)",
                                    "gbdt": "gradient boosting",
                                    BOTH: "both (4 rankers)"}.get,
                       help="Linear pairwise: a clicked document should outrank the unclicked "
                            "ones of its session. Gradient boosting: pointwise, clicks "
                            "weighted by 1/θ. Both: the naive and the IPW ranker of each "
                            "learner, every pair compared.")
n_bootstrap = c3.number_input("Bootstrap replicates", 100, 10_000,
                         ui.url_number("bootstrap", rankers.N_BOOTSTRAP, 100, 10_000), step=100, key="cr_boot",
                         help="Queries are resampled to get the confidence intervals (and, "
                              "with both learners, as many sign flips for the randomization "
                              "test).")
typed = None
if theta_from == TYPED:
    typed = st.text_input("θ per position, comma-separated (position 1 first)",
                          ui.url_param("theta",
                                       "1, 0.5, 0.33, 0.25, 0.2, 0.17, 0.14, 0.125, 0.11, 0.1"),
                          key="cr_theta")
with st.expander("IPW options"):
    o1, o2, o3 = st.columns(3)
    url_clip = ui.url_number("clip", 0.0, 0.001, 1.0, kind=float)  # 0 = off
    clip_on = o1.checkbox("Clip small θ", url_clip > 0, key="cr_clip_on",
                          help="Bounds the weights at 1/clip: less variance, some bias.")
    clip = o1.number_input("clip θ below at", 0.001, 1.0, url_clip or 0.05, step=0.01,
                           format="%.3f", key="cr_clip", disabled=not clip_on)
    snips = o2.checkbox("Self-normalize (SNIPS)", ui.url_param("snips", False, kind=bool),
                        key="cr_snips")
    seed = int(o3.number_input("Seed", 0, 10**6, ui.url_number("seed", 0, 0, 10**6),
                               key="cr_seed"))
    debias_options = ["ipw", "affine"]
    debias = st.selectbox(
        "Bias correction", debias_options, index=ui.url_index("debias", debias_options),
        key="cr_debias", format_func={"ipw": "IPW: each click weighted by 1/θ",
                                      "affine": "affine: (click − β) / α, also removes trust "
                                                "bias (gradient boosting)"}.get,
        help="IPW divides clicks by θ, so clicks users give the top results out of trust stay "
             "in. The affine correction subtracts them with the trust-bias model's α and β, "
             "estimated from this log by trust-em (Vardasbi et al. 2020).")
    seg_cols = theta_sources.segment_columns(info.content_hash, info.name)
    by_options = ["(none)"] + list(seg_cols)
    by_col = st.selectbox(
        "θ by segment", by_options, index=ui.url_index("by", by_options), key="cr_by",
        disabled=not seg_cols, format_func=lambda c: "one θ for the whole log" if c == "(none)"
        else f"{c} ({seg_cols[c]} values)",
        help="Estimate θ separately for each value of a column (such as a device) with the "
             "estimator picked above, and weight each click by its own segment's θ.")
CORR = "affine-corrected" if debias == "affine" else "IPW"
with st.expander("Significance options (several learners)"):
    s1, s2 = st.columns(2)
    sig_test = s1.selectbox(
        "Paired test", list(rankers.TESTS), index=ui.url_index("test", rankers.TESTS),
        key="cr_test", disabled=learner != BOTH, format_func=TEST_LABELS.get,
        help="How each pair of rankers is compared over the same queries. Randomization "
             "(default) assumes no distribution, only that a difference is as likely either "
             "sign when the rankers are equal; it is seeded, so it gives the same answer every "
             "run.")
    correction = s2.selectbox(
        "Multiple-comparison correction", list(rankers.CORRECTIONS),
        index=ui.url_index("correction", rankers.CORRECTIONS), key="cr_correction",
        disabled=learner != BOTH, format_func=CORRECTION_LABELS.get,
        help="Many pairs are compared at once, so some look different by chance. Holm keeps "
             "the chance of any false difference at 5%; Benjamini-Hochberg keeps the share of "
             "false differences at 5% (more lenient).")
ui.set_url_params(propensity=theta_from, learner=learner, seed=seed, bootstrap=int(n_bootstrap),
                  test=sig_test, correction=correction,
                  debias=debias if debias != "ipw" or "debias" in st.query_params else None,
                  by=by_col if by_col != "(none)" or "by" in st.query_params else None,
                  clip=float(clip) if clip_on else 0.0, snips=bool(snips),
                  theta=typed if theta_from == TYPED else None)

# ---------------------------------------------------------------- compute
res = None
theta = None
if ui.mapping_stops(log, "rankers", "Comparing rankers"):
    st.stop()
if debias == "affine" and learner != "gbdt":
    st.error("The affine correction is implemented for gradient boosting: pick it as the "
             "learner, or IPW as the bias correction.")
    st.stop()
if by_col != "(none)" and (debias == "affine" or not theta_from.startswith(METHOD_PREFIX)):
    st.error("θ by segment is estimated from the log: pick an estimator as where θ comes from, "
             "and IPW as the bias correction.")
    st.stop()
affine = by = None
try:
    with ui.cancellable() as stop, st.spinner("Estimating θ and training both rankers…"):
        if debias == "affine":
            theta, *affine = theta_sources.trust_em(info.content_hash, info.name, seed, _should_stop=stop)
            affine = tuple(affine)
        elif theta_from == TRUE:
            theta = tuple(float(t) for t in true_theta)
        elif theta_from == TYPED:
            theta = _parse_theta(typed or "")
        elif by_col != "(none)":
            by = (by_col, theta_sources.segment_theta(info.content_hash, info.name,
                                         theta_from[len(METHOD_PREFIX):], by_col, seed,
                                         _should_stop=stop))
            theta = by[1][0][1]  # drawn per segment below; the first segment's for the caption
        else:
            theta = tuple(float(t) for t in theta_sources.estimated_theta(
                info.content_hash, info.name, theta_from[len(METHOD_PREFIX):], seed,
                _should_stop=stop))
        res = _compare(info.content_hash, info.name, theta, learner,
                       float(clip) if clip_on else None, bool(snips), seed, int(n_bootstrap),
                       sig_test, correction,
                       theta_from[len(METHOD_PREFIX):] if theta_from.startswith(METHOD_PREFIX)
                       else None, affine, by, _should_stop=stop)
except NeedsRandomizedRows:
    ui.dead_end("θ cannot be estimated by randomization: this log has no rows marked as "
                "shown in random order. If every list was, declare it once in the Data "
                "page's mapping; otherwise choose where θ comes from above.",
                label="Declare it in the Data page's mapping")
except NeedsFeatures:
    ui.dead_end("Cannot compare: training a ranker needs numeric feature columns, and this "
                "log has none mapped. Pick them as features in the Data page's mapping.",
                label="Map features in the Data page's mapping")
except TooFewQueries as exc:
    ui.dead_end(f"Cannot compare: {ui.literal(exc)}",
                label="Change the query key in the Data page's mapping")
except UlrError as exc:
    st.error(f"Cannot compare: {ui.literal(exc)}")

if res is not None:
    m = res["metrics"]
    ui.show_verdict(res["verdict"], key="rankers")  # the misfit caveat is in its reasons
    pt = res["paired"].set_index("metric") if len(res["paired"]) else None
    noise = res["noise"]
    caveats = []
    for kind, text in res["caveats"]:  # the sentences the audit and the report give
        caveats.append(text)
        if kind == "info":
            st.info(text)
        elif kind == "warning":
            st.warning(text)
    evidence = res["evidence"]
    st.caption(f"Evidence: {res['evidence_line']}. θ used: "
               + ("; ".join(f"{by[0]} = {v}: " + ", ".join(plain(t) for t in th)
                            for v, th in by[1]) if by else ", ".join(plain(t) for t in theta))
               + ("" if affine is None else " (trust-em's α relative to position 1; α: "
                  + ", ".join(plain(a) for a in affine[0]) + "; β: "
                  + ", ".join(plain(b) for b in affine[1]) + ")"))

    settings = {"dataset": info.name, "theta_from": theta_from, "learner": learner,
                "theta": list(theta), "clip": float(clip) if clip_on else None,
                "self-normalized": bool(snips), "seed": seed, "bootstrap": int(n_bootstrap),
                **({} if affine is None else {"bias_correction": "affine (trust-em)"}),
                **({} if by is None else {"theta_by": by[0]})}
    if res["multi"]:
        settings.update(test=sig_test, correction=correction)
        several.section(res, settings, evidence, caveats, info=info, chart=_chart,
                        test_label=TEST_LABELS[sig_test],
                        correction_label=CORRECTION_LABELS[correction],
                        report_key=REPORT_KEY)
        st.stop()

    cols = st.columns(3)
    tb = res["table"].set_index(["ranker", "metric"])
    for col, key, label in zip(cols, ["arp", "ndcg@10", "auc"],
                               ["ARP (lower is better)", "nDCG@10", "AUC"]):
        if m["ipw"][key] is None or ("ipw", key) not in tb.index:
            col.metric(f"{CORR} {label}", "—")
            continue
        r = tb.loc[("ipw", key)]
        if res["identical"]:
            delta = "rank identically: no difference"
        elif res["same"].get(key):
            delta = "the same on every test query"
        elif pt is not None and key in pt.index:
            p = pt.loc[key]
            delta = (fmt_interval(p["delta"], p["lower"], p["upper"], sign=True) + " vs naive"
                     + (" (cannot be told apart)" if key in noise else ""))
        else:
            delta = None
        flat = key in noise or res["identical"] or res["same"].get(key, False)
        col.metric(f"{CORR} {label}", fmt_interval(r["value"], r["lower"], r["upper"]),
                   delta=delta, delta_color="off" if flat else
                   "inverse" if key in rankers.LOWER_IS_BETTER else "normal",
                   delta_arrow="off" if flat else "auto",
                   help="value [95% bootstrap interval over queries], rounded to its "
                        "standard error")

    fig = _chart(res)

    table = res["side_by_side"]
    if CORR != "IPW":  # the corrected ranker's columns by its name
        table = table.rename(columns={c: c.replace("ipw", CORR) for c in table.columns})
        table = table.assign(better=table["better"].replace({"ipw": CORR}))
    st.subheader("Paired comparison per metric")
    ui.dataframe(theme.styled(table, groups=[(r, f"{r} lower", f"{r} upper")  # as the cards
                                             for r in ("naive", "ipw" if CORR == "IPW"
                                                       else CORR, "delta")]),
                 hide_index=True, width="stretch",
                 column_config={"p_value": st.column_config.NumberColumn("p-value",
                                                                         format="%.4f")})
    st.caption(f"delta = {CORR} − naive over the same queries, with a paired bootstrap "
               "interval; the p-value is a two-sided paired randomization (sign-flip) test of "
               f"no difference. For ARP a negative delta favours {CORR}.")
    ui.download_csv(pd.DataFrame(table), f"compare_rankers_{info.name}.csv",
                    "Download comparison (CSV)", key="cr_csv")
    ui.add_to_report(f"Naive vs {CORR} ranker", fig=fig, table=table, settings=settings,
                     evidence=evidence, caveats=caveats, key=REPORT_KEY,
                     verdict=res["verdict"])
