"""Compare rankers with several learners (pages/compare_rankers.py): the significance
table, every pair, Tukey's HSD and the chart, all computed and worded in ulr
(:meth:`ulr.rankers.SystemsComparison.view`)."""

import streamlit as st

from pages import _ui as ui


def section(res, settings, evidence, caveats, *, info, chart, test_label: str,
            correction_label: str, report_key: str) -> None:
    """Several learners: the significance table, every pair, Tukey's HSD, the chart."""
    st.subheader("Significance table")
    ui.dataframe(res["significance"], hide_index=True, width="stretch")
    st.caption(f"Each ranker is lettered (a, b, ...); a value's superscript letters name the "
               f"rankers it is significantly better than ({test_label}, "
               f"{correction_label} correction over the pairs of each metric, "
               "5% level). Values are rounded to their standard error; ARP: lower is better.")
    ui.download_csv(res["significance"], f"significance_{info.name}.csv",
                    "Download significance table (CSV)", key="cr_sig_csv")
    st.subheader("Every pair of rankers")
    ui.dataframe(res["pairs"], hide_index=True, width="stretch", column_config={
        c: st.column_config.NumberColumn(c.replace("_", " "), format="%.4f")
        for c in ("p_value", "p_adjusted")})
    st.caption("delta = b − a over the same queries with its 95% interval (before "
               "correction); a pair counts as different when its corrected p-value is below "
               "0.05 and its interval excludes 0.")
    if res["tukey"] is not None:
        with st.expander("Tukey's HSD (all pairs at once, queries as blocks)"):
            ui.dataframe(res["tukey"], hide_index=True, width="stretch")
    fig = chart(res)
    ui.add_to_report("Rankers compared", fig=fig, table=res["significance"],
                     settings=settings, evidence=evidence, caveats=caveats,
                     key=report_key, verdict=res["verdict"])
