"""The Bandit lab's replay evaluation (Li et al., WSDM 2011) on the selected dataset."""

import streamlit as st

from pages import _ui as ui
from ulr.bandits.policies import ALGORITHMS
from ulr.bandits.replay import replay
from ulr.errors import NeedsRandomizedRows, NeedsSessions, UlrError
from ulr.quantity import Quantity, rate_of
from ulr.verdict import fmt_interval

S = st.session_state
REPLAY = ui.keys.BANDIT_REPLAY


def _replay_result(rr) -> None:
    """Replay figures with their evidence; thin evidence is said first."""
    verdict = rr.verdict
    ui.show_verdict(verdict, key="replay")
    lo, hi = rr.ci_lower, rr.ci_upper
    within = rr.accepted > 0 and lo <= rr.random_ctr <= hi
    thin = rr.thin()
    for c in rr.caveats():
        st.warning(ui.literal(c))
    c1, c2, c3 = st.columns(3)
    e = verdict.estimate
    c1.metric(f"Estimated CTR of {rr.algorithm} (top {rr.k})",
              "n/a" if rr.accepted == 0 else fmt_interval(rr.ctr, lo, hi, level=rr.level,
                                                          pct=True),
              None if rr.accepted == 0 or "lower" not in e else
              Quantity("points", e["delta"], e["lower"], e["upper"], level=rr.level).text()
              + " vs random order"
              + (" (cannot be told apart)" if verdict.level == "inconclusive" else ""),
              delta_color="off" if within or thin else "normal",
              help=f"{rr.level:.0%} Wilson interval over {rr.accepted:,} accepted sessions")
    c2.metric("Sessions behind it", f"{rr.accepted:,} accepted, {rr.clicks:,} clicks")
    c3.metric("Acceptance rate", "n/a" if not rr.events else rate_of(rr.acceptance_rate, rr.events).text(),
              f"{rr.accepted:,} of {rr.events:,} events", delta_color="off")
    st.caption(f"Evidence: {rr.events:,} replayable sessions over {rr.items:,} items, "
               f"{rr.accepted:,} accepted, {rr.clicks:,} clicks in the accepted events.")


def replay_section() -> None:
    """The replay expander: pick an algorithm, replay the selected dataset's randomized
    sessions, show the estimate with its evidence (or the dead end that stops it)."""
    with st.expander("Replay evaluation on the selected dataset (Li et al., WSDM 2011)"):
        st.caption("Steps through the dataset's randomized sessions and keeps those where the "
                   "algorithm's top-k list equals the logged one: an unbiased estimate of the CTR "
                   "the algorithm would have had online, if the logged order is uniformly random.")
        log = ui.current_log()
        declared = bool(log.info.facts.randomized)
        if declared:
            st.caption("Declared on the Data page: the whole log was shown in random order, so every "
                       "session is replayed.")
        stopped = ui.mapping_stops(log, "replay", "Replay")
        if stopped:
            S.pop(REPLAY, None)
        with st.form("bl_replay_form"):
            c1, c2, c3 = st.columns(3)
            r_algo = c1.selectbox("Algorithm", ALGORITHMS, index=ALGORITHMS.index("cascade-klucb"),
                                  key="bl_r_algo")
            r_k = int(c2.number_input("Top k", 1, 5, 1, key="bl_r_k"))
            r_seed = int(c3.number_input("Seed", 0, 10**6, 0, key="bl_r_seed"))
            r_assume = declared or st.checkbox(
                "Treat every row as randomized (for this replay only)", key="bl_r_assume",
                help="To declare it once for every page, set it in the Data page's mapping.")
            go = st.form_submit_button("Run replay", disabled=stopped)
        if go:
            S.pop(REPLAY, None)
            try:
                with st.spinner("Replaying the randomized sessions…"):
                    S[REPLAY] = replay(log, r_algo, positions=r_k, seed=r_seed,
                                       assume_randomized=bool(r_assume),
                                       mapping=ui.mapping_warnings(log))
            except UlrError as exc:
                if isinstance(exc, NeedsRandomizedRows):
                    ui.dead_end("Cannot replay: no row of this log is marked as shown in random "
                                "order. If every list was, tick “Treat every row as randomized” "
                                "above, or declare it once in the Data page's mapping.",
                                label="Declare it in the Data page's mapping")
                elif isinstance(exc, NeedsSessions):
                    ui.dead_end("Cannot replay: this log has no session column, so it cannot tell "
                                "which rows were shown together as one list. Map the column that "
                                "groups the items shown together as the session in the Data page's "
                                "mapping.",
                                label="Map the session in the Data page's mapping")
                else:
                    st.error(f"Cannot replay: {ui.literal(exc)}")
        rr = S.get(REPLAY)
        if rr is not None:
            _replay_result(rr)
