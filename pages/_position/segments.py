"""Position bias by segment (pages/position_bias.py's "By segment" section): θ per value of
a low-cardinality column, one curve each, and whether the segments differ."""

import streamlit as st

from pages import _ui as ui
from ulr.data import catalog
from ulr.errors import UlrError
from ulr.propensity import plots
from ulr.quantity import show
from ulr.text import words


@ui.cache_data(show_spinner=False, max_entries=64)
def _segment_columns(content_hash: str, name: str) -> dict:
    from ulr.propensity.segments import segment_columns
    return segment_columns(catalog.open_dataset(name, cur=catalog.cursor()))


@ui.cache_data(show_spinner=False, max_entries=64)
def _by_segment(content_hash: str, name: str, method: str, column: str, positions: int,
                bootstrap: int, seed: int, interval: str | None = None, _should_stop=None):
    """("ok", SegmentResult) or ("error", sentence)."""
    from ulr.propensity.segments import by_segment
    lg = catalog.open_dataset(name, cur=catalog.cursor())
    try:
        return "ok", by_segment(lg, method=method, column=column, positions=positions,
                                n_bootstrap=bootstrap, seed=seed, interval=interval,
                                should_stop=_should_stop,
                                mapping=ui.mapping_warnings(lg))
    except UlrError as exc:
        return "error", exc


def section(info, method: str, positions: int, bootstrap: int, seed: int,
            interval: str | None = None) -> None:
    """The "by" control: theta per segment of a low-cardinality column, one curve each."""
    cols = _segment_columns(info.content_hash, info.name)
    st.subheader("By segment")
    if not cols:
        st.caption("Is position bias the same on mobile as on desktop? This log has no column "
                   "with 2 to 12 values (such as a device or a query type) to split it by; "
                   "keep one when you load the log on the Data page.")
        return
    options = ["(none)"] + list(cols)
    chosen = ui.url_param("by", "(none)")
    by = st.selectbox("Split by", options, index=options.index(chosen) if chosen in options
                      else 0, key="pb_by",
                      format_func=lambda c: c if c == "(none)" else f"{c} ({cols[c]} values)",
                      help="Estimate θ separately for each value of a column, with the first "
                           "method picked, and test whether the segments differ at any "
                           "position (corrected for testing every position).")
    ui.set_url_params(by=None if by == "(none)" else by)
    if by == "(none)":
        if "by" in st.query_params:  # the link no longer splits
            del st.query_params["by"]
        return
    with st.spinner(f"Estimating position bias by {by}…"):
        kind, seg = _by_segment(info.content_hash, info.name, method, by, positions, bootstrap,
                                seed, interval)
    if kind == "error":
        st.warning(f"Position bias by {by} cannot be estimated: {seg}")
        return
    ui.show_verdict(seg.verdict, key="position_bias_segments")
    fig = ui.figure(plots.segment_figure, seg)
    st.plotly_chart(fig, width="stretch", key="pb_segment_chart")
    table = plots.segments_table(seg)
    ui.dataframe(table, hide_index=True, width="stretch", key="pb_segment_table",
                 column_config={c: st.column_config.NumberColumn(
                     "p (Holm)" if c == "p_holm" else words(c), format="%.4f")
                     for c in table.columns if c not in ("segment", "position")})
    st.caption(f"Differences are each segment's θ minus the other segments' (weighted by "
               f"precision), with simultaneous {show('rate', seg.level)} intervals over the "
               f"{seg.tests} comparisons.")
    for note in seg.notes:
        st.caption(f"– {note}")
    ui.add_to_report("Position bias by segment", fig=fig, table=table, key="position_bias_by",
                     settings={"dataset": info.name, "method": method, "by": by,
                               "positions": positions, "bootstrap": bootstrap, "seed": seed,
                               **({"interval": interval} if interval else {})},
                     verdict=seg.verdict)
