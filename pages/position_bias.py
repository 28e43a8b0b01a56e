"""Position bias: theta per position estimated several ways, with intervals and the truth."""

import time

import numpy as np
import streamlit as st

from pages import _ui as ui
from ulr import propensity, store
from ulr.errors import UlrError
from ulr.propensity import plots

st.title("Position bias")
st.caption(
    "How strongly does examination fall with position? Each method estimates θ_k, the chance "
    "that a result at position k is looked at, relative to the top position. Error bars are "
    "bootstrap intervals over sessions; where the log records the true θ (simulated logs), it "
    "is drawn as a dashed line.")

log = ui.current_log()
info = log.info

HELP = {
    "randomization": "CTR ratios of rows shown in random order (RandTopN), and click ratios of "
                     "swapped pairs (RandPair). Needs randomized rows.",
    "em": "EM on the position-based click model over (query, doc, position) counts. Needs "
          "query-doc pairs shown at several positions.",
    "regression-em": "EM whose relevance side is one gradient-boosted model of the features "
                     "(Wang et al. 2018). Needs feature_* columns; works with pairs seen once.",
    "dla": "Dual Learning Algorithm (Ai et al. 2018): a ranking network and position logits "
           "trained together. Needs features and session_id; sensitive to initialization.",
    "intervention-harvesting": "Pairs of positions at which different rankers showed the same "
                               "query-doc pair (Agarwal et al. 2019). No randomization needed.",
}


@st.cache_data(show_spinner=False, max_entries=64)
def _max_position(content_hash: str, name: str) -> int:
    return store.summary(store.open_dataset(name, cur=store.cursor()))["positions"]


@st.cache_data(show_spinner=False, max_entries=64)
def _true_theta(content_hash: str, name: str):
    return store.open_dataset(name, cur=store.cursor()).true_theta()


@st.cache_data(show_spinner=False, max_entries=128)
def _estimate(content_hash: str, name: str, method: str, positions: int, bootstrap: int,
              seed: int, assume_randomized: bool):
    """("ok", PropensityResult) or ("error", sentence); keyed by content hash + settings."""
    lg = store.open_dataset(name, cur=store.cursor())
    try:
        return "ok", propensity.estimate(lg, method=method, positions=positions,
                                         bootstrap=bootstrap, seed=seed,
                                         assume_randomized=assume_randomized)
    except UlrError as exc:
        return "error", str(exc)


# ---------------------------------------------------------------- settings
max_pos = _max_position(info.content_hash, info.name)
if max_pos < 2:
    st.error(f"The dataset {info.name!r} shows results at a single position, so there is no "
             "position bias to estimate. Pick another dataset in the sidebar.")
    st.stop()

methods_default = ui.url_options("methods", propensity.METHODS, ["randomization", "em"])
methods = st.multiselect("Methods", list(propensity.METHODS), default=methods_default,
                         key="pb_methods",
                         help="  \n".join(f"**{m}**: {h}" for m, h in HELP.items()))
c1, c2, c3, c4 = st.columns([1, 1, 1, 1.4])
positions = c1.number_input("Positions", min_value=2, max_value=max_pos,
                            value=ui.url_number("positions", min(max_pos, 10), 2, max_pos),
                            key="pb_positions", help="Estimate positions 1..K.")
bootstrap = c2.number_input("Bootstrap replicates", min_value=0, max_value=1000,
                            value=ui.url_number("boot", 50, 0, 1000), step=10,
                            key="pb_boot",
                            help="Resampled sessions for the error bars (0: none). Cheap for "
                                 "randomization and em; each replicate refits regression-em "
                                 "and dla, which takes a while.")
seed = c3.number_input("Seed", min_value=0, max_value=2**31 - 1,
                       value=ui.url_number("seed", 0, 0, 2**31 - 1), key="pb_seed")
facts = info.facts
if facts.randomized:  # declared once on the Data page; not asked again
    assume = True
    c4.caption("Declared on the Data page: the whole log was shown in random order.")
else:
    assume = c4.checkbox("Treat every row as randomized", key="pb_assume",
                         value=ui.url_param("assume", False, kind=bool),
                         help="randomization only: use every row, for logs shown entirely in "
                              "random order that have no randomized column. To declare it once "
                              "for every page, set it in the Data page's mapping.")
if bootstrap == 1:
    st.warning("One bootstrap replicate cannot make an interval; using none.")
    bootstrap = 0
ui.set_url_params(methods=methods, positions=int(positions), boot=int(bootstrap),
                  seed=int(seed), assume=bool(assume))

if not methods:
    st.info("Pick one or more methods to estimate position bias.")
    st.stop()

# ---------------------------------------------------------------- run
results, failures = [], {}
with st.status(f"Estimating position bias on {info.name!r}…", expanded=False) as status:
    bar = st.progress(0.0)
    for i, method in enumerate(methods):
        bar.progress(i / len(methods), text=f"{method} ({i + 1} of {len(methods)})")
        t0 = time.perf_counter()
        kind, value = _estimate(info.content_hash, info.name, method, int(positions),
                                int(bootstrap), int(seed),
                                bool(assume) and method == "randomization")
        took = time.perf_counter() - t0
        if kind == "ok":
            results.append(value)
            st.write(f"**{method}**: done in {value.seconds:.2f} s"
                     + (" (cached)" if took < 0.5 * value.seconds else ""))
        else:
            failures[method] = value
            st.write(f"**{method}**: cannot run on this log")
    bar.progress(1.0, text="done")
    status.update(label=f"Estimated {len(results)} of {len(methods)} methods on "
                        f"{info.name!r}", state="error" if not results else "complete")

for method, why in failures.items():
    if "assume_randomized" in why:
        ui.dead_end(f"**{method}** cannot run on this log: it has no rows marked as shown in "
                    "random order. If every list was, tick “Treat every row as randomized” "
                    "above, or declare it once in the Data page's mapping.",
                    label="Declare it in the Data page's mapping")
    else:
        st.warning(f"**{method}** cannot run on this log: {why}")
if not results:
    st.stop()


@st.cache_data(show_spinner=False, max_entries=64)
def _evidence(content_hash: str, name: str):
    lg = store.open_dataset(name, cur=store.cursor())
    return store.summary(lg), store.ctr_by_position(lg)


summ, by_pos = _evidence(info.content_hash, info.name)
clicks_k = by_pos["clicks"].to_numpy()
impr_k = by_pos["impressions"].to_numpy()
evidence = {"rows": summ["rows"], "clicks": int(clicks_k.sum()), "queries": summ["queries"],
            "sessions": summ["sessions"]}
table = plots.results_table(results, _true_theta(info.content_hash, info.name),
                            clicks=clicks_k, impressions=impr_k)
caveats = []
thin = table[table["thin"] & (table["position"] > 1)]
if len(thin):
    caveats.append(
        f"Thin evidence: {len(thin)} of {int((table['position'] > 1).sum())} estimates rest on "
        f"too few clicks ({evidence['clicks']:,} in all): their 95% interval is wider than "
        f"±{plots.THIN_RELATIVE_HALF_WIDTH:.0%} of the estimate, so they are drawn hollow with "
        "their full interval. Treat them as unknown, not as flat.")
    st.warning(caveats[-1])
st.caption(f"Evidence: {evidence['rows']:,} impressions, {evidence['clicks']:,} clicks, "
           f"{evidence['queries']:,} queries"
           + ("" if evidence["sessions"] is None else f", {evidence['sessions']:,} sessions")
           + ". Intervals are bootstrap intervals where replicates were drawn, else "
             "delta-method intervals from the click counts.")

truth = _true_theta(info.content_hash, info.name)
fig = plots.theta_figure(results, truth, table=table)
st.plotly_chart(fig, width="stretch", key="pb_theta_chart")

left, right = st.columns([3, 2])
with left:
    conv = plots.convergence_figure(results)
    if conv is not None:
        st.plotly_chart(conv, width="stretch", key="pb_convergence_chart")
    else:
        st.caption("Convergence is shown for the iterative methods (em, regression-em).")
with right:
    st.markdown("**Notes**")
    for r in results:
        extra = f", {r.iterations} iterations" if r.iterations else ""
        st.caption(f"**{r.method}**: {r.rows_used:,} rows{extra}, {r.seconds:.2f} s"
                   + ("" if r.lower is None else
                      f", {int((1 - r.alpha) * 100)}% interval from {r.bootstrap} replicates"))
        for note in r.notes:
            st.caption(f"– {note.replace(' (assume_randomized)', '')}")
    if truth is not None:
        for r in results:
            k = min(r.positions, len(truth))
            err = np.abs(r.theta[:k] - truth[:k] / truth[0])
            if np.isfinite(err).any():
                st.caption(f"**{r.method}**: max |θ − true θ| = {np.nanmax(err):.3f}")

shown = table.copy()
st.dataframe(shown, hide_index=True, width="stretch", key="pb_table",
             column_config={c: st.column_config.NumberColumn(format="%.4f")
                            for c in ("theta", "lower", "upper", "true_theta", "error",
                                      "relative_half_width")
                            if c in shown})
c1, c2 = st.columns([1, 4])
with c1:
    ui.download_csv(table, f"position_bias_{info.name}.csv", "Download CSV", key="pb_download")
with c2:
    ui.add_to_report("Position bias", fig=fig, table=table, key="position_bias",
                     settings={"dataset": info.name, "methods": methods,
                               "positions": int(positions), "bootstrap": int(bootstrap),
                               "seed": int(seed), "assume_randomized": bool(assume)},
                     caveats=caveats, evidence=evidence,
                     takeaway=("Too few clicks to say how examination falls with position."
                               if len(thin) else "Examination by position, with intervals."))
