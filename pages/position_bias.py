"""Position bias: theta per position estimated several ways, with intervals and the truth.

For a registered source (a lake or Spark table, :mod:`ulr.engines.sources`) the
methods that need only (query, doc, position) counts run on its stored statistics;
the others say in one sentence that they need rows.
"""

import numpy as np
import streamlit as st

from pages import _ui as ui
from pages._position import interval as interval_control
from pages._position import segments
from pages._ui.identification import show_identification
from ulr import propensity
from ulr.data import catalog
from ulr.data.summary import summary, summary_and_ctr, true_theta
from ulr.errors import NeedsRandomizedRows, UlrError
from ulr.propensity import plots
from ulr.propensity.result import N_BOOTSTRAP
from ulr.quantity import show
from ulr.text import words

st.title("Position bias")
st.caption(
    "How strongly does examination fall with position? Each method estimates θ_k, the chance "
    "that a result at position k is looked at, relative to the top position. Error bars are "
    "95% intervals (em's from its Fisher information, the other methods' from bootstrap "
    "replicates over sessions); where the log records the true θ (simulated logs), it is "
    "drawn as a dashed line.")

SOURCE_METHODS = propensity.CELL_METHODS  # a registered source keeps cell statistics only


@ui.cache_data(show_spinner=False, max_entries=64)
def _max_position(content_hash: str, name: str) -> int:
    return summary(catalog.open_dataset(name, cur=catalog.cursor()))["positions"]


@ui.cache_data(show_spinner=False, max_entries=64)
def _true_theta(content_hash: str, name: str):
    return true_theta(catalog.open_dataset(name, cur=catalog.cursor()))


@ui.cache_data(show_spinner=False, max_entries=128)
def _estimate(content_hash: str, name: str, method: str, positions: int, bootstrap: int,
              seed: int, assume_randomized: bool, interval: str | None, _should_stop=None):
    """("ok", PropensityResult) or ("error", sentence); keyed by content hash + settings.

    ``_should_stop`` (not part of the key) ends the work with the script run.
    """
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    try:
        return "ok", propensity.estimate(lg, method=method, positions=positions,
                                         n_bootstrap=bootstrap, seed=seed,
                                         assume_randomized=assume_randomized,
                                         interval=interval, should_stop=_should_stop,
                                         mapping=ui.mapping_warnings(lg))
    except UlrError as exc:
        return "error", exc


@ui.cache_data(show_spinner=False, max_entries=32)
def _source_evidence(version: str, name: str):
    from ulr.engines import sources
    return (sources.summary(name), sources.ctr_by_position_result(name),
            sources.mapping_warnings(name))


@ui.cache_data(show_spinner=False, max_entries=128)
def _source_estimate(version: str, name: str, method: str, positions: int, bootstrap: int,
                     seed: int, mapping: tuple, interval: str | None, _should_stop=None):
    """As :func:`_estimate`, on a registered source's stored statistics."""
    from ulr.engines import sources
    try:
        return "ok", propensity.estimate(sources.scan(name), method=method, positions=positions,
                                         n_bootstrap=bootstrap, seed=seed, interval=interval,
                                         should_stop=_should_stop, mapping=mapping)
    except UlrError as exc:
        return "error", exc


def _source_page(name: str) -> None:
    """The page for a registered source: em and intervention harvesting from its statistics."""
    from ulr.engines import sources
    meta = sources.get(name)
    version = sources.version(name)
    summ, ctr, mapping = _source_evidence(version, name)  # mapping: read once per version
    shown = ui.shown(name)
    st.caption(f"“{shown}” is a registered source ({meta['engine']}, {meta['partitions']} "
               f"partitions, refreshed {meta['refreshed_at']} UTC): the estimates below come "
               "from its stored click statistics; the rows stay where they live.")
    if summ["positions"] < 2:
        st.error(f"The source “{shown}” shows results at a single position, so there is no "
                 "position bias to estimate. Pick another dataset in the sidebar.")
        st.stop()
    wanted = ui.url_options("propensity", propensity.METHODS, ["em"], cap="ULR_MAX_METHODS",
                            what="methods")
    methods, positions, bootstrap, seed, interval = _settings(
        summ["positions"], [m for m in wanted if m in SOURCE_METHODS] or ["em"], assume=None)
    for method in [m for m in methods if m not in SOURCE_METHODS]:
        needs = propensity.REGISTRY[method].rows
        ui.dead_end(f"**{method}** needs {needs}, and “{shown}” keeps "
                    "only click counts per query, document and position: pick a dataset in "
                    "the sidebar, or upload a sample of the log on the Data page.",
                    label="Upload a sample on the Data page")
    methods = [m for m in methods if m in SOURCE_METHODS]
    if not methods:
        st.stop()
    results, failures = ui.run_methods(name, methods, lambda m, stop: _source_estimate(
        version, name, m, positions, bootstrap, seed, mapping,
        interval_control.chosen(m, interval),
        _should_stop=stop),
        running="Estimating position bias")
    _show_failures(failures)
    _show(results, None, ctr, label=name, settings={
        "source": name, "methods": methods, "positions": positions, "bootstrap": bootstrap,
        "seed": seed, **({"interval": interval} if interval else {})})


def _settings(max_pos: int, default: list[str], *, assume):
    """The method, positions, bootstrap, seed and interval controls (and the URL they write).

    ``assume``: None hides the randomization checkbox (a source has no rows to treat),
    True says it was declared on the Data page, False offers it.
    """
    methods = st.multiselect("Methods", list(propensity.METHODS), default=default,
                             key="pb_methods", max_selections=ui.limit("ULR_MAX_METHODS"),
                             help="  \n".join(f"**{m}**: {spec.help}"
                                               for m, spec in propensity.REGISTRY.items()))
    c1, c2, c3, c4 = st.columns([1, 1, 1, 1.4])
    positions = c1.number_input("Positions", min_value=2, max_value=max_pos,
                                value=ui.url_number("positions", min(max_pos, 10), 2, max_pos),
                                key="pb_positions", help="Estimate positions 1..K.")
    max_boot = min(1000, ui.limit("ULR_MAX_BOOTSTRAP"))
    bootstrap = c2.number_input("Bootstrap replicates", min_value=0, max_value=max_boot,
                                value=ui.url_number("bootstrap", N_BOOTSTRAP, 0, 1000,
                                                    cap="ULR_MAX_BOOTSTRAP",
                                                    what="bootstrap replicates"), step=10,
                                key="pb_boot",
                                help="Resampled sessions for the error bars (0: none). Cheap "
                                     "for randomization and em (which draws them only for a "
                                     "bootstrap interval); each replicate refits "
                                     "regression-em and dla, which takes a while.")
    seed = c3.number_input("Seed", min_value=0, max_value=2**31 - 1,
                           value=ui.url_number("seed", 0, 0, 2**31 - 1), key="pb_seed")
    if assume is True:  # declared once on the Data page; not asked again
        c4.caption("Declared on the Data page: the whole log was shown in random order.")
    elif assume is False:
        assume = c4.checkbox("Treat every row as randomized", key="pb_assume",
                             value=ui.url_param("assume", False, kind=bool),
                             help="randomization only: use every row, for logs shown entirely "
                                  "in random order that have no randomized column. To declare "
                                  "it once for every page, set it in the Data page's mapping.")
    interval = interval_control.control(methods)  # em: its Fisher information, or bootstrap
    if bootstrap == 1:
        st.warning("One bootstrap replicate cannot make an interval; using none.")
        bootstrap = 0
    ui.set_url_params(propensity=methods, positions=int(positions), bootstrap=int(bootstrap),
                      seed=int(seed), assume=None if assume is None else bool(assume),
                      interval=interval)
    if not methods:
        st.info("Pick one or more methods to estimate position bias.")
        st.stop()
    out = (methods, int(positions), int(bootstrap), int(seed), interval)
    return out if assume is None else out + (bool(assume),)


def _show_failures(failures: dict) -> None:
    for method, why in failures.items():
        if isinstance(why, NeedsRandomizedRows):
            ui.dead_end(f"**{method}** cannot run on this log: it has no rows marked as shown "
                        "in random order. If every list was, tick “Treat every row as "
                        "randomized” above, or declare it once in the Data page's mapping.",
                        label="Declare it in the Data page's mapping")
        else:
            st.warning(f"**{method}** cannot run on this log: {ui.literal(why)}")


@ui.cache_data(show_spinner=False, max_entries=64)
def _evidence(content_hash: str, name: str):
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    return summary_and_ctr(lg, mapping=ui.mapping_warnings(lg))[1]


def _show(results, truth, ctr, *, label: str, settings: dict) -> None:
    """The verdict, chart, convergence, notes, table, download and report item; ``ctr``
    (a :class:`ulr.data.summary.CtrByPosition`) gives the click counts and the evidence."""
    if not results:
        st.stop()
    # every method assumes the position-based model: a better-fitting user model is a
    # caveat, read from the dataset's facts by every result (the same for each method)
    misfit = next((r.misfit for r in results if r.misfit is not None), None)
    evidence = ctr.evidence
    clicks_k = ctr.table["clicks"].to_numpy()
    impr_k = ctr.table["impressions"].to_numpy()
    table = plots.results_table(results, truth, clicks=clicks_k, impressions=impr_k)
    verdict = results[0].verdict  # the first method picked heads the page and the report item
    for r in results:
        if len(results) > 1:
            st.markdown(f"**{r.method}**")
        ui.show_verdict(r.verdict, key=f"position_bias_{r.method}")
    caveats = [n for n in [plots.thin_note(table, clicks=evidence["clicks"]),
                           misfit and misfit.message] if n]
    for c in caveats:
        st.warning(ui.literal(c))
    st.caption(f"Evidence: {evidence['rows']:,} impressions, {evidence['clicks']:,} clicks, "
               f"{evidence['queries']:,} queries"
               + ("" if evidence["sessions"] is None else f", {evidence['sessions']:,} sessions")
               + ". Each method's interval is named in the notes; where it has none, the "
                 "interval is the delta method's from the click counts.")
    fig = ui.figure(plots.theta_figure, results, truth, table=table)
    st.plotly_chart(fig, width="stretch", key="pb_theta_chart")
    left, right = st.columns([3, 2])
    with left, (conv := st.expander("Convergence", key="pb_convergence_open", on_change="rerun")):
        fig_c = ui.figure(plots.convergence_figure, results) if conv.open else None  # when opened
        if fig_c is not None:
            st.plotly_chart(fig_c, width="stretch", key="pb_convergence_chart")
        elif conv.open:
            st.caption("Convergence is shown for the iterative methods (em, regression-em).")
    with right:
        _notes(results, truth)
    ui.dataframe(table, hide_index=True, width="stretch", key="pb_table",
                 column_config={**{c: st.column_config.NumberColumn(words(c), format="%.4f")
                                   for c in ("theta", "lower", "upper", "true_theta", "error")
                                   if c in table},
                                "relative_half_width": st.column_config.NumberColumn(
                                    "± relative to θ", format="percent",
                                    help="Half the interval's width relative to θ: the "
                                         "verdict's 'least precise position' is the largest")})
    for r in results:
        trust = plots.trust_table(r)
        if trust is not None:
            st.markdown("**Trust bias (trust-em)**: α is how much more often a relevant result "
                        "is clicked than an irrelevant one at each position, β how often an "
                        "irrelevant one is clicked; θ above is α relative to position 1.")
            ui.dataframe(trust, hide_index=True, width="stretch", key="pb_trust_table",
                         column_config={c: st.column_config.NumberColumn(
                             words(c).replace("alpha", "α").replace("beta", "β"),
                             format="%.4f") for c in trust.columns if c != "position"})
    c1, c2 = st.columns([1, 4])
    with c1:
        ui.download_csv(table, f"position_bias_{label}.csv", "Download CSV", key="pb_download")
    with c2:
        ui.add_to_report("Position bias", fig=fig, table=table, key="position_bias",
                         settings=settings, caveats=caveats, evidence=evidence,
                         verdict=verdict)


def _notes(results, truth) -> None:
    st.markdown("**Notes**")
    for r in results:
        extra = (f", {r.iterations} iteration{'' if r.iterations == 1 else 's'}"
                 if r.iterations else "")
        st.caption(f"**{r.method}**: {r.rows_used:,} rows{extra}, {show('duration', r.seconds)}"
                   + ("" if r.lower is None else f", {r.interval_text}"))
        for note in r.notes:
            st.caption(f"– {note.replace(' (assume_randomized)', '')}")
    if truth is not None:
        for r in results:
            k = min(r.positions, len(truth))
            err = np.abs(r.theta[:k] - truth[:k] / truth[0])
            if np.isfinite(err).any():
                st.caption(f"**{r.method}**: max |θ − true θ| = {show('number', np.nanmax(err))}")


# ---------------------------------------------------------------- settings
src = ui.current_source()
if src is not None:
    with ui.user_errors():
        _source_page(src)
    st.stop()
log = ui.current_log()
info = log.info
max_pos = _max_position(info.content_hash, info.name)
if max_pos < 2:
    st.error(f"The dataset '{ui.shown(info.name)}' shows results at a single position, so "
             "there is no position bias to estimate. Pick another dataset in the sidebar.")
    st.stop()

# opened from the menu: the methods this dataset supports (the audit's answerability)
methods_default = ui.url_options("propensity", propensity.METHODS, ui.page_methods(log),
                                 cap="ULR_MAX_METHODS", what="methods")
methods, positions, bootstrap, seed, interval, assume = _settings(
    max_pos, methods_default, assume=True if info.facts.randomized else False)
show_identification(info, positions=positions, method=methods[0], key="pb")
results, failures = ui.run_methods(info.name, methods, lambda m, stop: _estimate(
    info.content_hash, info.name, m, positions, bootstrap, seed, assume and propensity.REGISTRY[m].randomized,
    interval_control.chosen(m, interval), _should_stop=stop), running="Estimating position bias")
_show_failures(failures)
_show(results, _true_theta(info.content_hash, info.name),
      _evidence(info.content_hash, info.name), label=info.name, settings={"dataset": info.name, "methods": methods, "positions": positions,
                                 "bootstrap": bootstrap, "seed": seed,
                                 "assume_randomized": assume,
                                 **({"interval": interval} if interval else {})})
segments.section(info, methods[0], positions, bootstrap, seed,
                 interval_control.chosen(methods[0], interval))
